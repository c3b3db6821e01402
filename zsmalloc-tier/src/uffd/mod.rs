//! A safe handle on a userfaultfd: open it, agree on features with the kernel, register ranges
//! of this process's memory, read the faults on them and serve each one (`UFFDIO_COPY`,
//! `UFFDIO_ZEROPAGE`), move populated pages out atomically (`UFFDIO_MOVE`), write-protect and
//! wake. Only this process's own memory can be named: the kernel resolves every address in the
//! address space of the process that opened the descriptor.

mod abi;
mod error;
mod event;
mod features;

use std::fs::OpenOptions;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::time::Duration;

pub use error::UffdError;
pub use event::Event;
pub use features::Features;

/// The page size every range here is aligned to.
pub fn page_size() -> usize {
    // SAFETY: sysconf reads a constant of the running system and touches no memory of ours.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n).unwrap_or(4096)
}

/// How `read` waits for an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// `read` sleeps until an event arrives.
    Blocking,
    /// `read` returns at once, `None` when there is nothing (for poll or spin loops).
    NonBlocking,
}

/// What faults a registered range reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Modes {
    /// Touching a page that is not there.
    pub missing: bool,
    /// Writing a page that is write-protected (`UFFDIO_WRITEPROTECT`).
    pub write_protect: bool,
}

/// Which faults the descriptor takes: every one, or only those the program's own instructions
/// take (`UFFD_USER_MODE_ONLY`, which an unprivileged process may ask for whatever
/// `vm.unprivileged_userfaultfd` says). Under the latter a fault the kernel takes on the
/// program's behalf (a system call reading or writing a missing page) is not reported: the
/// system call fails with `EFAULT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Faults {
    #[default]
    All,
    UserModeOnly,
}

impl Modes {
    pub const MISSING: Modes = Modes { missing: true, write_protect: false };
    pub const MISSING_AND_WP: Modes = Modes { missing: true, write_protect: true };
}

/// An open userfaultfd, its features agreed with the kernel.
#[derive(Debug)]
pub struct Uffd {
    fd: OwnedFd,
    features: Features,
}

/// A userfaultfd descriptor before `UFFDIO_API`: from `/dev/userfaultfd` (whose permissions
/// decide who may use it), else from the system call (which `vm.unprivileged_userfaultfd`
/// decides).
fn open_raw(wait: Wait, faults: Faults) -> Result<OwnedFd, UffdError> {
    let mut flags = libc::O_CLOEXEC;
    if wait == Wait::NonBlocking {
        flags |= libc::O_NONBLOCK;
    }
    if faults == Faults::UserModeOnly {
        flags |= abi::UFFD_USER_MODE_ONLY;
    }
    let device = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_CLOEXEC)
        .open("/dev/userfaultfd");
    let device_err = match device {
        Ok(dev) => {
            // SAFETY: USERFAULTFD_IOC_NEW takes its flags by value and returns a new
            // descriptor or -1; `dev` is a live descriptor of /dev/userfaultfd.
            let fd = unsafe {
                libc::ioctl(dev.as_raw_fd(), abi::USERFAULTFD_IOC_NEW as libc::c_ulong, flags)
            };
            if fd >= 0 {
                // SAFETY: the kernel just returned this new descriptor; nothing else owns it.
                return Ok(unsafe { OwnedFd::from_raw_fd(fd) });
            }
            io::Error::last_os_error()
        }
        Err(e) => e,
    };
    // SAFETY: the userfaultfd system call takes its flags by value and returns a new
    // descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_userfaultfd, flags) };
    if fd >= 0 {
        // SAFETY: the kernel just returned this new descriptor; nothing else owns it.
        return Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) });
    }
    let syscall_err = io::Error::last_os_error();
    let denied = |e: &io::Error| matches!(e.raw_os_error(), Some(libc::EPERM | libc::EACCES));
    if denied(&syscall_err) || denied(&device_err) {
        return Err(UffdError::NoPermission);
    }
    if syscall_err.raw_os_error() == Some(libc::ENOSYS) {
        return Err(UffdError::Unsupported);
    }
    Err(UffdError::Os { op: "userfaultfd", err: syscall_err })
}

/// `UFFDIO_API` on `fd` asking for `features`: the kernel's answer.
fn handshake(fd: &OwnedFd, features: Features) -> Result<abi::UffdioApi, UffdError> {
    let mut api = abi::UffdioApi { api: abi::UFFD_API, features: features.0, ioctls: 0 };
    // SAFETY: UFFDIO_API reads and writes one `struct uffdio_api`, which `api` is (its size is
    // checked at compile time in `abi`); `fd` is a live userfaultfd.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), abi::UFFDIO_API as libc::c_ulong, &mut api) };
    if r < 0 {
        return Err(UffdError::Os { op: "UFFDIO_API", err: io::Error::last_os_error() });
    }
    Ok(api)
}

impl Uffd {
    /// Every feature this kernel offers (asking for none answers with all of them, on a
    /// descriptor opened for the question: the handshake happens once per descriptor).
    pub fn offered() -> Result<Features, UffdError> {
        Uffd::offered_for(Faults::All)
    }

    /// Every feature this kernel offers to a descriptor taking `faults`.
    pub fn offered_for(faults: Faults) -> Result<Features, UffdError> {
        let probe = open_raw(Wait::NonBlocking, faults)?;
        Ok(Features(handshake(&probe, Features::NONE)?.features))
    }

    /// A userfaultfd with `features`, refused with their names when the kernel lacks any.
    pub fn open(wait: Wait, features: Features) -> Result<Uffd, UffdError> {
        Uffd::open_for(wait, features, Faults::All)
    }

    /// A userfaultfd with `features` taking `faults` ([`Faults::UserModeOnly`]: those of the
    /// program's own instructions only).
    pub fn open_for(wait: Wait, features: Features, faults: Faults) -> Result<Uffd, UffdError> {
        if !features.is_empty() {
            let missing = features.without(Uffd::offered_for(faults)?);
            if !missing.is_empty() {
                return Err(UffdError::FeaturesUnavailable { missing });
            }
        }
        let fd = open_raw(wait, faults)?;
        let api = handshake(&fd, features)?;
        for (nr, name) in [
            (abi::NR_API, "UFFDIO_API"),
            (abi::NR_REGISTER, "UFFDIO_REGISTER"),
            (abi::NR_UNREGISTER, "UFFDIO_UNREGISTER"),
        ] {
            if api.ioctls & (1 << nr) == 0 {
                return Err(UffdError::IoctlUnavailable { ioctl: name, answer: "UFFDIO_API" });
            }
        }
        Ok(Uffd { fd, features: Features(api.features) })
    }

    /// The same userfaultfd under the lowest free number at or above `floor`
    /// (`fd_number::raise`).
    pub fn raised(self, floor: i32) -> Result<Uffd, UffdError> {
        let fd = crate::fd_number::raise(self.fd, floor)
            .map_err(|err| UffdError::Os { op: "fcntl(F_DUPFD_CLOEXEC)", err })?;
        Ok(Uffd { fd, features: self.features })
    }

    /// The features in force (those asked for, as the kernel confirmed them).
    pub fn features(&self) -> Features {
        self.features
    }

    fn check_range(op: &'static str, start: usize, len: usize) -> Result<(), UffdError> {
        let page = page_size();
        if len == 0 || !start.is_multiple_of(page) || !len.is_multiple_of(page) {
            return Err(UffdError::Unaligned { op, start, len });
        }
        Ok(())
    }

    /// Reports faults on `[start, start + len)` of this process's memory from now on. The
    /// kernel's answer is checked for every ioctl that serving these faults needs.
    pub fn register(&self, start: usize, len: usize, modes: Modes) -> Result<(), UffdError> {
        Uffd::check_range("UFFDIO_REGISTER", start, len)?;
        let mut mode = 0;
        if modes.missing {
            mode |= abi::UFFDIO_REGISTER_MODE_MISSING;
        }
        if modes.write_protect {
            mode |= abi::UFFDIO_REGISTER_MODE_WP;
        }
        let mut reg = abi::UffdioRegister {
            range: abi::UffdioRange { start: start as u64, len: len as u64 },
            mode,
            ioctls: 0,
        };
        // SAFETY: UFFDIO_REGISTER reads and writes one `struct uffdio_register`, which `reg`
        // is. Registering changes how faults on the range are served, never its contents.
        let r = unsafe {
            libc::ioctl(self.fd.as_raw_fd(), abi::UFFDIO_REGISTER as libc::c_ulong, &mut reg)
        };
        if r < 0 {
            return Err(UffdError::from_op("UFFDIO_REGISTER", start, io::Error::last_os_error()));
        }
        let mut needed = vec![(abi::NR_WAKE, "UFFDIO_WAKE")];
        if modes.missing {
            needed.extend([(abi::NR_COPY, "UFFDIO_COPY"), (abi::NR_ZEROPAGE, "UFFDIO_ZEROPAGE")]);
            if self.features.contains(Features::MOVE) {
                needed.push((abi::NR_MOVE, "UFFDIO_MOVE"));
            }
        }
        if modes.write_protect {
            needed.push((abi::NR_WRITEPROTECT, "UFFDIO_WRITEPROTECT"));
        }
        if let Some(&(_, ioctl)) = needed.iter().find(|(nr, _)| reg.ioctls & (1 << nr) == 0) {
            let _ = self.unregister(start, len);
            return Err(UffdError::IoctlUnavailable { ioctl, answer: "UFFDIO_REGISTER" });
        }
        Ok(())
    }

    /// Stops reporting faults on the range; threads waiting on it are woken and fault as usual.
    pub fn unregister(&self, start: usize, len: usize) -> Result<(), UffdError> {
        Uffd::check_range("UFFDIO_UNREGISTER", start, len)?;
        let mut range = abi::UffdioRange { start: start as u64, len: len as u64 };
        // SAFETY: UFFDIO_UNREGISTER reads one `struct uffdio_range`, which `range` is.
        let r = unsafe {
            libc::ioctl(self.fd.as_raw_fd(), abi::UFFDIO_UNREGISTER as libc::c_ulong, &mut range)
        };
        if r < 0 {
            return Err(UffdError::from_op("UFFDIO_UNREGISTER", start, io::Error::last_os_error()));
        }
        Ok(())
    }

    /// Fills the missing pages at `dst` with `src` (whole pages) and, unless `wake` is false,
    /// wakes the threads waiting on them. Only holes of a registered range are filled: a page
    /// already there is [`UffdError::AlreadyMapped`], never overwritten.
    pub fn copy(&self, dst: usize, src: &[u8], wake: bool) -> Result<(), UffdError> {
        self.copy_mode(dst, src, wake, false)
    }

    /// As [`Uffd::copy`], the pages coming in write-protected (`UFFDIO_COPY_MODE_WP`; the
    /// range registered with [`Modes::write_protect`]). Under [`Features::WP_ASYNC`] the
    /// kernel lifts the protection at the first write without a message, and `PAGEMAP_SCAN`
    /// reports the page written ([`crate::pagemap`]).
    pub fn copy_protected(&self, dst: usize, src: &[u8], wake: bool) -> Result<(), UffdError> {
        self.copy_mode(dst, src, wake, true)
    }

    fn copy_mode(&self, dst: usize, src: &[u8], wake: bool, wp: bool) -> Result<(), UffdError> {
        Uffd::check_range("UFFDIO_COPY", dst, src.len())?;
        let mut mode = if wake { 0 } else { abi::UFFDIO_COPY_MODE_DONTWAKE };
        if wp {
            mode |= abi::UFFDIO_COPY_MODE_WP;
        }
        let mut copy = abi::UffdioCopy {
            dst: dst as u64,
            src: src.as_ptr() as u64,
            len: src.len() as u64,
            mode,
            copy: 0,
        };
        // SAFETY: UFFDIO_COPY reads and writes one `struct uffdio_copy`; the kernel reads
        // `src.len()` bytes of the live slice `src` and writes only pages that were missing in
        // a range registered with this descriptor (anything else is refused), so no memory
        // this program has observed changes.
        let r = unsafe {
            libc::ioctl(self.fd.as_raw_fd(), abi::UFFDIO_COPY as libc::c_ulong, &mut copy)
        };
        if r < 0 {
            return Err(UffdError::from_op("UFFDIO_COPY", dst, io::Error::last_os_error()));
        }
        Ok(())
    }

    /// Maps the zero page at the missing pages `[dst, dst + len)` and wakes their waiters.
    pub fn zeropage(&self, dst: usize, len: usize) -> Result<(), UffdError> {
        Uffd::check_range("UFFDIO_ZEROPAGE", dst, len)?;
        let mut zp = abi::UffdioZeropage {
            range: abi::UffdioRange { start: dst as u64, len: len as u64 },
            mode: 0,
            zeropage: 0,
        };
        // SAFETY: UFFDIO_ZEROPAGE reads and writes one `struct uffdio_zeropage`; like COPY it
        // only fills holes of a range registered with this descriptor.
        let r = unsafe {
            libc::ioctl(self.fd.as_raw_fd(), abi::UFFDIO_ZEROPAGE as libc::c_ulong, &mut zp)
        };
        if r < 0 {
            return Err(UffdError::from_op("UFFDIO_ZEROPAGE", dst, io::Error::last_os_error()));
        }
        Ok(())
    }

    /// Moves the pages at `src` to the missing pages at `dst` (registered with this
    /// descriptor) in one step: from then on `src` is a hole, so a thread touching it faults
    /// and waits instead of writing into a page on its way out. Needs [`Features::MOVE`].
    ///
    /// # Safety
    ///
    /// No reference into `[src, src + len)` may be live: its bytes vanish (and read as whatever
    /// serves the next fault), which Rust code holding a reference to them would not expect.
    /// The range should be memory that only raw pointers reach, as a tier's regions are.
    pub unsafe fn move_pages(&self, dst: usize, src: usize, len: usize) -> Result<(), UffdError> {
        if !self.features.contains(Features::MOVE) {
            return Err(UffdError::FeaturesUnavailable { missing: Features::MOVE });
        }
        Uffd::check_range("UFFDIO_MOVE", dst, len)?;
        Uffd::check_range("UFFDIO_MOVE", src, len)?;
        let mut mv = abi::UffdioMove {
            dst: dst as u64,
            src: src as u64,
            len: len as u64,
            mode: abi::UFFDIO_MOVE_MODE_DONTWAKE,
            moved: 0,
        };
        // SAFETY: UFFDIO_MOVE reads and writes one `struct uffdio_move`; the caller vouches that
        // nothing references the source pages, and the kernel fills only holes at `dst`.
        let r =
            unsafe { libc::ioctl(self.fd.as_raw_fd(), abi::UFFDIO_MOVE as libc::c_ulong, &mut mv) };
        if r < 0 {
            return Err(UffdError::from_op("UFFDIO_MOVE", src, io::Error::last_os_error()));
        }
        Ok(())
    }

    /// Write-protects (`protect`) or releases `[start, start + len)` of a range registered
    /// with [`Modes::write_protect`]; releasing wakes the writers waiting on it.
    pub fn write_protect(&self, start: usize, len: usize, protect: bool) -> Result<(), UffdError> {
        Uffd::check_range("UFFDIO_WRITEPROTECT", start, len)?;
        let mut wp = abi::UffdioWriteprotect {
            range: abi::UffdioRange { start: start as u64, len: len as u64 },
            mode: if protect { abi::UFFDIO_WRITEPROTECT_MODE_WP } else { 0 },
        };
        // SAFETY: UFFDIO_WRITEPROTECT reads one `struct uffdio_writeprotect`; it changes the
        // pages' permissions, never their contents.
        let r = unsafe {
            libc::ioctl(self.fd.as_raw_fd(), abi::UFFDIO_WRITEPROTECT as libc::c_ulong, &mut wp)
        };
        if r < 0 {
            return Err(UffdError::from_op(
                "UFFDIO_WRITEPROTECT",
                start,
                io::Error::last_os_error(),
            ));
        }
        Ok(())
    }

    /// Wakes the threads waiting on `[start, start + len)` (after serving with `wake: false`).
    pub fn wake(&self, start: usize, len: usize) -> Result<(), UffdError> {
        Uffd::check_range("UFFDIO_WAKE", start, len)?;
        let mut range = abi::UffdioRange { start: start as u64, len: len as u64 };
        // SAFETY: UFFDIO_WAKE reads one `struct uffdio_range`, which `range` is.
        let r = unsafe {
            libc::ioctl(self.fd.as_raw_fd(), abi::UFFDIO_WAKE as libc::c_ulong, &mut range)
        };
        if r < 0 {
            return Err(UffdError::from_op("UFFDIO_WAKE", start, io::Error::last_os_error()));
        }
        Ok(())
    }

    /// The next event: `None` when the descriptor is non-blocking and none is pending.
    pub fn read_event(&self) -> Result<Option<Event>, UffdError> {
        let mut msg = abi::UffdMsg::ZERO;
        let size = std::mem::size_of::<abi::UffdMsg>();
        loop {
            // SAFETY: `msg` is a live, writable `struct uffd_msg` of `size` bytes, and the
            // kernel writes whole messages only.
            let n = unsafe {
                libc::read(self.fd.as_raw_fd(), (&raw mut msg).cast::<libc::c_void>(), size)
            };
            if n == size as isize {
                return Ok(Some(Event::from_msg(&msg)));
            }
            let err = io::Error::last_os_error();
            match err.raw_os_error() {
                Some(libc::EINTR) if n < 0 => continue,
                Some(libc::EAGAIN) if n < 0 => return Ok(None),
                _ if n >= 0 => {
                    let short = io::Error::new(io::ErrorKind::UnexpectedEof, "short message");
                    return Err(UffdError::Os { op: "read", err: short });
                }
                _ => return Err(UffdError::Os { op: "read", err }),
            }
        }
    }

    /// Waits up to `timeout` for an event to be readable: false when none came in time.
    pub fn poll(&self, timeout: Duration) -> Result<bool, UffdError> {
        self.poll_with(None, timeout)
    }

    /// Waits up to `timeout` for an event to be readable, or for `also` (another descriptor,
    /// e.g. an eventfd that wakes the waiter) to be: false when neither was in time.
    pub fn poll_with(
        &self,
        also: Option<BorrowedFd<'_>>,
        timeout: Duration,
    ) -> Result<bool, UffdError> {
        let ms = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
        let watch = |fd: i32| libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        let mut pfd = [watch(self.fd.as_raw_fd()), watch(also.map_or(-1, |fd| fd.as_raw_fd()))];
        loop {
            // SAFETY: `pfd` is two live `struct pollfd`s, the count passed (an entry whose
            // descriptor is -1 is ignored by the kernel).
            let r = unsafe { libc::poll(pfd.as_mut_ptr(), 2, ms) };
            if r >= 0 {
                if pfd[0].revents & (libc::POLLERR | libc::POLLHUP) != 0 {
                    let err = io::Error::other("the descriptor reports an error");
                    return Err(UffdError::Os { op: "poll", err });
                }
                return Ok(r > 0);
            }
            let err = io::Error::last_os_error();
            if err.raw_os_error() != Some(libc::EINTR) {
                return Err(UffdError::Os { op: "poll", err });
            }
        }
    }
}

impl AsFd for Uffd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}
