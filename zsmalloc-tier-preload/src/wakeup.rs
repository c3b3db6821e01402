//! The handler's wake-up: an eventfd it polls beside the userfaultfd. Within the budget the
//! handler sleeps until a fault comes; a program thread that puts the resident pages over the
//! budget without a fault (a fork brings every page back) rings it, so that the handler
//! evicts again (every 50 ms while pages the fork left shared cannot move) instead of sleeping
//! on until the program's next fault, which may never come.

use std::os::fd::BorrowedFd;

/// The eventfd's number: kept for the life of the process (a forked child puts its own
/// under the same number, see `renew`).
pub struct Wakeup(i32);

impl Wakeup {
    pub fn new() -> Result<Self, String> {
        // SAFETY: eventfd takes no pointer; the descriptor it returns is the tier's own.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(format!("eventfd: {}", std::io::Error::last_os_error()));
        }
        // SAFETY: `fd` was just made and is owned by nothing else.
        let owned = unsafe { std::os::fd::FromRawFd::from_raw_fd(fd) };
        let raised = zsmalloc_tier::fd_number::raise(owned, zsmalloc_tier::fd_number::high_floor())
            .map_err(|e| format!("eventfd: fcntl: {e}"))?;
        Ok(Self(std::os::fd::IntoRawFd::into_raw_fd(raised)))
    }

    /// In a forked child: an eventfd of its own under the same number, so that the child's
    /// handler and the parent's never take each other's rings.
    pub fn renew(&self) -> Result<(), String> {
        let fresh = Self::new()?;
        // SAFETY: dup3 of two live descriptors of this process, both the tier's own; the
        // inherited one is closed by it, and `fresh`'s number is closed after.
        let r = unsafe { libc::dup3(fresh.0, self.0, libc::O_CLOEXEC) };
        let err = std::io::Error::last_os_error();
        // SAFETY: `fresh`'s number, the tier's own, used by nothing else.
        unsafe { libc::close(fresh.0) };
        if r < 0 {
            return Err(format!("dup3: {err}"));
        }
        Ok(())
    }

    /// Wakes the handler (a write the handler has not yet read counts once); nothing once the
    /// descriptor is no longer the tier's (`own_fds.rs`).
    pub fn ring(&self) {
        if !crate::own_fds::is_own(self.0) {
            return;
        }
        let one = 1u64;
        // SAFETY: an eight-byte write from a live u64, as an eventfd takes. It cannot block
        // (non-blocking, and the counter never nears its limit: the handler drains it).
        unsafe { libc::write(self.0, (&raw const one).cast(), 8) };
    }

    /// The rings so far taken (the handler, once woken).
    pub fn drain(&self) {
        let mut n = 0u64;
        // SAFETY: an eight-byte read into a live u64; non-blocking, so it returns at once.
        unsafe { libc::read(self.0, (&raw mut n).cast(), 8) };
    }

    pub fn raw(&self) -> i32 {
        self.0
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        // SAFETY: the number is open for the life of the process (never closed, only
        // replaced in place by `renew`).
        unsafe { BorrowedFd::borrow_raw(self.0) }
    }
}
