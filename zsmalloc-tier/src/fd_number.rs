//! Descriptors moved to high numbers. A preloaded library's descriptors are opened first and
//! get the lowest free numbers, 3 and up, which are the ones programs name themselves: a shell's
//! `exec 3>file` (`dup2(fd, 3)`) would close what stood there. Moved near the top of the
//! descriptor limit, they stay out of the way of numbers programs pick.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// The number descriptors are moved to or above: 64 below the soft limit of open descriptors,
/// at most 1000 (a table grown to a number costs the kernel memory) and at least 10.
pub fn high_floor() -> i32 {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one `struct rlimit` into `lim`, a live one.
    let soft = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0 {
        lim.rlim_cur
    } else {
        1024
    };
    soft.saturating_sub(64).clamp(10, 1000) as i32
}

/// `fd` under the lowest free number at or above `floor`, close-on-exec (the old number closed).
pub fn raise(fd: OwnedFd, floor: i32) -> io::Result<OwnedFd> {
    copy_above(fd.as_fd(), floor)
}

/// A copy of `fd` under the lowest free number at or above `floor`, close-on-exec; `fd` stays
/// open (for a caller that closes it only once the copy is made).
pub fn copy_above(fd: BorrowedFd<'_>, floor: i32) -> io::Result<OwnedFd> {
    // SAFETY: fcntl(F_DUPFD_CLOEXEC) on a live descriptor; the new number is returned to us
    // alone.
    let n = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, floor) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `n` was just made by F_DUPFD_CLOEXEC and is owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(n) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raised_descriptor_is_at_or_above_the_floor_and_the_old_number_is_free() {
        let f: OwnedFd = std::fs::File::open("/dev/null").unwrap().into();
        let old = f.as_raw_fd();
        let floor = high_floor();
        let raised = raise(f, floor).unwrap();
        assert!(raised.as_raw_fd() >= floor && floor >= 10);
        // SAFETY: fcntl(F_GETFD) only asks about the number.
        assert_eq!(unsafe { libc::fcntl(old, libc::F_GETFD) }, -1, "the old number closed");
        // SAFETY: as above.
        let flags = unsafe { libc::fcntl(raised.as_raw_fd(), libc::F_GETFD) };
        assert_eq!(flags & libc::FD_CLOEXEC, libc::FD_CLOEXEC);
    }
}
