//! What the kernel run set up, taken down the same way on every exit: the program (killed and
//! reaped if it still runs), the swap (`swapoff`), the memory cgroup (`rmdir`); the zram device
//! itself is `kernel::device`'s (its own record and handler), removed after these.
//!
//! The state lives in lock-free statics, so that the shared SIGINT/SIGTERM/SIGHUP handler
//! ([`crate::interrupt`]) can take it down with async-signal-safe calls only (`kill`, `waitpid`,
//! `swapoff`, `rmdir`, `nanosleep`). Each step is owned by whoever swaps its flag first: the
//! normal end (under [`Blocked`](crate::interrupt::Blocked)) or the handler, never both.
//! [`register`] must run before the device is made: the handler's cleanups run in the order
//! they were registered, and the device can only be removed once its swap is off.

use std::ffi::CString;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr};

/// The program of the kernel run while it runs (0: none).
static CHILD: AtomicI32 = AtomicI32::new(0);
/// `/dev/zramN`, NUL-terminated, while it is swapped on (null: no swap of ours).
static SWAP: AtomicPtr<libc::c_char> = AtomicPtr::new(std::ptr::null_mut());
/// The cgroup's directory, NUL-terminated, while it exists (null: none).
static CGROUP: AtomicPtr<libc::c_char> = AtomicPtr::new(std::ptr::null_mut());
static REGISTERED: AtomicBool = AtomicBool::new(false);

/// Has the shared handler take down what this module holds (before the device's removal).
pub fn register() {
    if !REGISTERED.swap(true, SeqCst) {
        crate::interrupt::on_signal_also(on_signal);
    }
}

fn leak(path: &str) -> *mut libc::c_char {
    CString::new(path).expect("a path without NUL").into_raw()
}

/// Names the running program.
pub fn set_child(pid: i32) {
    CHILD.store(pid, SeqCst);
}

/// The program has been reaped: nothing to kill.
pub fn clear_child() {
    CHILD.store(0, SeqCst);
}

/// `path` is swapped on now.
pub fn set_swap(path: &str) {
    SWAP.store(leak(path), SeqCst);
}

/// The cgroup at `dir` exists now.
pub fn set_cgroup(dir: &str) {
    CGROUP.store(leak(dir), SeqCst);
}

/// Takes the swap off, if this process still holds it: `Err` with the reason when it fails.
pub fn swap_off() -> Result<(), std::io::Error> {
    let p = SWAP.swap(std::ptr::null_mut(), SeqCst);
    if p.is_null() {
        return Ok(());
    }
    // SAFETY: `p` came from `CString::into_raw` in `set_swap` and was taken out of the static
    // by this swap, so no one else uses or frees it.
    let path = unsafe { CString::from_raw(p) };
    // SAFETY: swapoff reads the NUL-terminated path, alive for the call.
    if unsafe { libc::swapoff(path.as_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Removes the cgroup, if this process still holds it (a few tries: a process just reaped may
/// leave it busy for a moment).
pub fn remove_cgroup() -> Result<(), std::io::Error> {
    let p = CGROUP.swap(std::ptr::null_mut(), SeqCst);
    if p.is_null() {
        return Ok(());
    }
    // SAFETY: as in `swap_off`, the pointer is ours alone now.
    let path = unsafe { CString::from_raw(p) };
    let mut last = None;
    for _ in 0..50 {
        // SAFETY: rmdir reads the NUL-terminated path, alive for the call.
        if unsafe { libc::rmdir(path.as_ptr()) } == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::ENOENT) {
            return Ok(());
        }
        last = Some(e);
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Err(last.expect("a try failed"))
}

fn say(msg: &[u8]) {
    // SAFETY: write is async-signal-safe; it reads `msg.len()` bytes of `msg`.
    unsafe { libc::write(libc::STDERR_FILENO, msg.as_ptr().cast(), msg.len()) };
}

/// The handler's part: async-signal-safe, run before the device's removal. The pointers are
/// taken, never freed (the process is ending).
fn on_signal() {
    let pid = CHILD.swap(0, SeqCst);
    if pid > 0 {
        // SAFETY: kill and waitpid are async-signal-safe; `pid` is this process's unreaped
        // child (cleared before it is reaped), so the number is not another process's.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            while libc::waitpid(pid, std::ptr::null_mut(), 0) < 0
                && *libc::__errno_location() == libc::EINTR
            {}
        }
    }
    let swap = SWAP.swap(std::ptr::null_mut(), SeqCst);
    // SAFETY: swapoff is a system call (async-signal-safe); the path is a NUL-terminated
    // string leaked by `set_swap`, taken out of the static by this swap.
    if !swap.is_null() && unsafe { libc::swapoff(swap) } != 0 {
        say(b"zsmalloc: warning: the kernel run's swap could not be taken off\n");
    }
    let cg = CGROUP.swap(std::ptr::null_mut(), SeqCst);
    if !cg.is_null() {
        for round in 0..100 {
            // SAFETY: rmdir is async-signal-safe; the path is a NUL-terminated string leaked
            // by `set_cgroup`, taken out of the static by this swap.
            if unsafe { libc::rmdir(cg) } == 0 {
                break;
            }
            if round == 99 {
                say(b"zsmalloc: warning: the kernel run's memory cgroup could not be removed\n");
            }
            crate::interrupt::pause(20_000_000);
        }
    }
}
