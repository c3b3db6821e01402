//! What the tier asks of the system without passing through the calls it interposes: mappings
//! by system call (the library's own `mmap` would serve them from the tier's regions), glibc's
//! own allocator for the tier's memory, a lock that forks can release, and which thread is
//! the handler.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use libc::{c_int, c_void, size_t};

extern "C" {
    // glibc's allocator under its own names: the program's calls come to the tier, these
    // never do.
    pub fn __libc_malloc(n: size_t) -> *mut c_void;
    pub fn __libc_calloc(n: size_t, m: size_t) -> *mut c_void;
    pub fn __libc_realloc(p: *mut c_void, n: size_t) -> *mut c_void;
    pub fn __libc_free(p: *mut c_void);
    pub fn __libc_memalign(align: size_t, n: size_t) -> *mut c_void;
}

pub const PAGE: usize = 4096;

/// `mmap` by system call: -1 cast to a pointer (`MAP_FAILED`) with `errno` set on failure.
///
/// # Safety
/// As `mmap(2)`: `MAP_FIXED` replaces whatever is at `addr`.
pub unsafe fn mmap(
    addr: usize,
    len: usize,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: i64,
) -> *mut c_void {
    // SAFETY: forwarded contract; glibc's syscall() sets errno and returns -1 on failure.
    unsafe { libc::syscall(libc::SYS_mmap, addr, len, prot, flags, fd, off) as *mut c_void }
}

/// # Safety
/// As `munmap(2)`.
pub unsafe fn munmap(addr: usize, len: usize) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { libc::syscall(libc::SYS_munmap, addr, len) as c_int }
}

/// # Safety
/// As `madvise(2)`: `MADV_DONTNEED` empties the pages.
pub unsafe fn madvise(addr: usize, len: usize, advice: c_int) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { libc::syscall(libc::SYS_madvise, addr, len, advice) as c_int }
}

/// # Safety
/// As `mremap(2)`.
pub unsafe fn mremap(addr: usize, old: usize, new: usize, flags: c_int, to: usize) -> *mut c_void {
    // SAFETY: forwarded contract.
    unsafe { libc::syscall(libc::SYS_mremap, addr, old, new, flags, to) as *mut c_void }
}

/// # Safety
/// As `mprotect(2)` (and `pkey_mprotect(2)` with a key other than -1): what the pages allow
/// changes for every thread.
pub unsafe fn mprotect(addr: usize, len: usize, prot: c_int, pkey: c_int) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        if pkey == -1 {
            libc::syscall(libc::SYS_mprotect, addr, len, prot) as c_int
        } else {
            libc::syscall(libc::SYS_pkey_mprotect, addr, len, prot, pkey) as c_int
        }
    }
}

/// `mlock2(2)` (`flags` 0: `mlock(2)`), or `munlock(2)` when `lock` is false.
///
/// # Safety
/// As those calls: locking populates the pages (faults on holes are served as any).
pub unsafe fn mlock(addr: usize, len: usize, lock: bool, flags: c_int) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        if lock {
            libc::syscall(libc::SYS_mlock2, addr, len, flags) as c_int
        } else {
            libc::syscall(libc::SYS_munlock, addr, len) as c_int
        }
    }
}

pub fn set_errno(e: c_int) {
    // SAFETY: errno is this thread's own variable.
    unsafe { *libc::__errno_location() = e };
}

/// Fresh private anonymous memory for the tier's own bookkeeping (never registered).
pub fn own_memory(len: usize) -> Option<usize> {
    // SAFETY: a new mapping at an address the kernel picks; it aliases nothing.
    let p = unsafe {
        mmap(
            0,
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    (p != libc::MAP_FAILED).then_some(p as usize)
}

/// The handler thread, once it runs (its `pthread_self`); 0 before.
static HANDLER: AtomicUsize = AtomicUsize::new(0);
/// The thread starting the tier, while it does (0 otherwise).
static SETUP: AtomicUsize = AtomicUsize::new(0);

fn me() -> usize {
    // SAFETY: pthread_self has no preconditions.
    unsafe { libc::pthread_self() as usize }
}

pub fn mark_handler() {
    HANDLER.store(me(), Ordering::Release);
}

/// In a forked child: the parent's handler thread is not there (a new thread may even get
/// its identity), until the child's own marks itself.
pub fn unmark_handler() {
    HANDLER.store(0, Ordering::Release);
}

/// Runs `f` with the calling thread's allocations and mappings the tier's own: starting the
/// handler thread allocates what that thread reads on its own (glibc's TLS vector), which
/// must never be evicted; the pool's per-thread data is allocated where the heap's lock may
/// be held. One thread at a time: the start, or a holder of the tier's state lock.
pub fn as_tier<R>(f: impl FnOnce() -> R) -> R {
    SETUP.store(me(), Ordering::Release);
    let r = f();
    SETUP.store(0, Ordering::Release);
    r
}

/// Whether the calling thread is the tier's handler (or the one starting it), whose
/// allocations and mappings are the tier's own and go to glibc and the kernel directly.
#[inline]
pub fn on_handler() -> bool {
    let (h, s) = (HANDLER.load(Ordering::Relaxed), SETUP.load(Ordering::Relaxed));
    if h == 0 && s == 0 {
        return false;
    }
    let me = me();
    me == h || me == s
}

/// A futex lock taken and released by calls (not guards), so that fork's prepare handler can
/// take it and the child release it. Three states: free, taken, taken with waiters.
pub struct RawLock(AtomicU32);

impl RawLock {
    pub const fn new() -> RawLock {
        RawLock(AtomicU32::new(0))
    }

    pub fn lock(&self) {
        if self.0.compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed).is_ok() {
            return;
        }
        while self.0.swap(2, Ordering::Acquire) != 0 {
            // SAFETY: FUTEX_WAIT reads the live word and sleeps while it holds 2.
            unsafe {
                libc::syscall(
                    libc::SYS_futex,
                    self.0.as_ptr(),
                    libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                    2u32,
                    std::ptr::null::<libc::timespec>(),
                )
            };
        }
    }

    pub fn unlock(&self) {
        if self.0.fetch_sub(1, Ordering::Release) != 1 {
            self.0.store(0, Ordering::Release);
            // SAFETY: FUTEX_WAKE of one waiter on the live word.
            unsafe {
                libc::syscall(
                    libc::SYS_futex,
                    self.0.as_ptr(),
                    libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
                    1,
                )
            };
        }
    }

    /// In a forked child, whose only thread is the one that forked: free again.
    pub fn reset(&self) {
        self.0.store(0, Ordering::Release);
    }
}

/// Data reached only with its [`RawLock`] held.
pub struct Locked<T> {
    pub lock: RawLock,
    data: UnsafeCell<T>,
}

// SAFETY: the data is reached only through `with` or between `lock` and `unlock`, one thread
// at a time.
unsafe impl<T: Send> Sync for Locked<T> {}

impl<T> Locked<T> {
    pub const fn new(data: T) -> Locked<T> {
        Locked { lock: RawLock::new(), data: UnsafeCell::new(data) }
    }

    pub fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        self.lock.lock();
        // SAFETY: the lock is held until `f` returns, so this is the only reference.
        let r = f(unsafe { &mut *self.data.get() });
        self.lock.unlock();
        r
    }

    /// The data while the caller holds the lock (fork's handlers).
    ///
    /// # Safety
    /// The caller holds `self.lock` and makes no other reference meanwhile.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn held(&self) -> &mut T {
        // SAFETY: forwarded contract.
        unsafe { &mut *self.data.get() }
    }
}

/// Blocks every signal of the calling thread (but SIGKILL and SIGSTOP, which cannot be); the
/// mask it had, for [`restore_signals`].
pub fn block_signals() -> libc::sigset_t {
    // SAFETY: sigset_t values are plain data, filled by sigfillset and by the kernel.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        old
    }
}

/// Gives the calling thread back the mask [`block_signals`] returned.
pub fn restore_signals(old: &libc::sigset_t) {
    // SAFETY: a mask pthread_sigmask filled.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, old, std::ptr::null_mut()) };
}

/// Runs `f` with the calling thread's signals blocked. A program thread holding the tier's
/// lock must not run one of the program's signal handlers: it may touch tiered memory and
/// wait on a fault that the handler thread can serve only with that lock.
pub fn signals_blocked<R>(f: impl FnOnce() -> R) -> R {
    let old = block_signals();
    let r = f();
    restore_signals(&old);
    r
}
