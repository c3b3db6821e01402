//! SIGINT, SIGTERM and SIGHUP remove the live devices before the process dies.
//!
//! The handler uses only async-signal-safe calls (`close`, `open`, `write`, `unlink`, `signal`,
//! `raise`) on what it finds in fixed, lock-free slots: each live device's id and open file
//! descriptor. It closes the descriptor, writes the id to `hot_remove`, unlinks the leftover
//! record, then re-raises the signal with its default action, so the process ends as it would
//! have (a shell sees "interrupted"). A device is put in a slot before anything is written to
//! it and taken out before it is removed normally, so the handler never removes an id that is
//! no longer this process's. A SIGKILL cannot be caught: the leftover record covers it.

use std::sync::atomic::{AtomicI32, AtomicI64, Ordering};
use std::sync::Once;

use super::leftover::RECORD_DIR;

/// Devices one process may hold at once.
const SLOTS: usize = 16;

struct Slot {
    /// The device id, or -1.
    id: AtomicI64,
    /// Its open block device, or -1.
    fd: AtomicI32,
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Slot = Slot { id: AtomicI64::new(-1), fd: AtomicI32::new(-1) };
static LIVE: [Slot; SLOTS] = [EMPTY; SLOTS];
static INSTALL: Once = Once::new();

const HOT_REMOVE: &[u8] = b"/sys/class/zram-control/hot_remove\0";

/// Takes a slot for device `id`; `None` when every slot is taken.
pub(super) fn register(id: u32) -> Option<usize> {
    install();
    // A free slot's fd is already -1 (`unregister` clears it first).
    (0..SLOTS).find(|&i| {
        LIVE[i].id.compare_exchange(-1, i64::from(id), Ordering::SeqCst, Ordering::SeqCst).is_ok()
    })
}

/// The device of `slot` is open as `fd`.
pub(super) fn set_fd(slot: usize, fd: i32) {
    LIVE[slot].fd.store(fd, Ordering::SeqCst);
}

/// Gives `slot` back: the device is about to be removed by the normal path.
pub(super) fn unregister(slot: usize) {
    LIVE[slot].fd.store(-1, Ordering::SeqCst);
    LIVE[slot].id.store(-1, Ordering::SeqCst);
}

/// Blocks SIGINT, SIGTERM and SIGHUP while the returned guard lives (the few calls between
/// `hot_add` and the device's slot), then delivers what arrived meanwhile.
pub(super) struct Blocked {
    old: libc::sigset_t,
}

impl Blocked {
    pub(super) fn new() -> Blocked {
        // SAFETY: sigset_t is plain data, initialised by sigemptyset before use; the calls only
        // write the sets passed by pointer.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                libc::sigaddset(&mut set, s);
            }
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
            Blocked { old }
        }
    }
}

impl Drop for Blocked {
    fn drop(&mut self) {
        // SAFETY: restores the mask saved by `new` on this thread.
        unsafe {
            libc::pthread_sigmask(libc::SIG_SETMASK, &self.old, std::ptr::null_mut());
        }
    }
}

fn install() {
    INSTALL.call_once(|| {
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            // SAFETY: `on_signal` is an `extern "C" fn(c_int)` that only makes
            // async-signal-safe calls; sigaction copies the struct.
            unsafe {
                let mut act: libc::sigaction = std::mem::zeroed();
                act.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
                libc::sigemptyset(&mut act.sa_mask);
                libc::sigaction(s, &act, std::ptr::null_mut());
            }
        }
    });
}

/// Writes `n` in decimal into `buf`; returns the digits' length.
fn decimal(mut n: u64, buf: &mut [u8; 20]) -> usize {
    let mut tmp = [0u8; 20];
    let mut len = 0;
    loop {
        tmp[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for i in 0..len {
        buf[i] = tmp[len - 1 - i];
    }
    len
}

/// `RECORD_DIR/zram<id>` as a NUL-terminated path in `out`; returns false if it does not fit.
fn record_path(id: u64, out: &mut [u8; 128]) -> bool {
    let mut digits = [0u8; 20];
    let n = decimal(id, &mut digits);
    let parts: [&[u8]; 4] = [RECORD_DIR.as_bytes(), b"/zram", &digits[..n], b"\0"];
    let mut at = 0;
    for p in parts {
        if at + p.len() > out.len() {
            return false;
        }
        out[at..at + p.len()].copy_from_slice(p);
        at += p.len();
    }
    true
}

extern "C" fn on_signal(sig: libc::c_int) {
    for slot in &LIVE {
        let id = slot.id.swap(-1, Ordering::SeqCst);
        if id < 0 {
            continue;
        }
        let fd = slot.fd.swap(-1, Ordering::SeqCst);
        let mut digits = [0u8; 20];
        let n = decimal(id as u64, &mut digits);
        let mut path = [0u8; 128];
        // SAFETY: close, open, write and unlink are async-signal-safe; every pointer is to a
        // NUL-terminated buffer on this stack or a static, alive for the calls.
        unsafe {
            if fd >= 0 {
                libc::close(fd);
            }
            let ctl = libc::open(HOT_REMOVE.as_ptr().cast(), libc::O_WRONLY);
            if ctl >= 0 {
                libc::write(ctl, digits.as_ptr().cast(), n);
                libc::close(ctl);
            }
            if record_path(id as u64, &mut path) {
                libc::unlink(path.as_ptr().cast());
            }
        }
    }
    // SAFETY: signal and raise are async-signal-safe; the default action ends the process as
    // the signal would have.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_formatted_without_allocating() {
        let mut d = [0u8; 20];
        let n = decimal(0, &mut d);
        assert_eq!(&d[..n], b"0");
        let n = decimal(u64::MAX, &mut d);
        assert_eq!(&d[..n], u64::MAX.to_string().as_bytes());
        let mut p = [0u8; 128];
        assert!(record_path(17, &mut p));
        let end = p.iter().position(|&b| b == 0).unwrap();
        assert_eq!(std::str::from_utf8(&p[..end]).unwrap(), format!("{RECORD_DIR}/zram17"));
    }
}
