//! What can go wrong with a userfaultfd, each as one line that says what to do about it.

use std::fmt;
use std::io;

use zsmalloc_core::text_input::io_reason;

use super::features::Features;

/// Why a userfaultfd operation failed.
#[derive(Debug)]
pub enum UffdError {
    /// Neither `/dev/userfaultfd` nor the system call is allowed to this process.
    NoPermission,
    /// The kernel has no userfaultfd at all.
    Unsupported,
    /// The kernel offers userfaultfd but not every feature asked for.
    FeaturesUnavailable { missing: Features },
    /// The kernel's answer lacks an ioctl this layer needs (named as the header names it).
    IoctlUnavailable { ioctl: &'static str, answer: &'static str },
    /// A range or address that the kernel would refuse because it is not page-aligned.
    Unaligned { op: &'static str, start: usize, len: usize },
    /// `UFFDIO_COPY`/`UFFDIO_ZEROPAGE`/`UFFDIO_MOVE` found a page already at the destination
    /// (another thread served it first: the fault is resolved).
    AlreadyMapped { op: &'static str, addr: usize },
    /// The mapping changed under the operation (a fork, mremap or munmap event is pending):
    /// read the pending events, then retry.
    Retry { op: &'static str, addr: usize },
    /// `UFFDIO_MOVE` of a page that is shared (with a forked child, or a KSM or zero page).
    Shared { addr: usize },
    /// Any other refusal of the kernel, with its reason.
    Os { op: &'static str, err: io::Error },
}

impl UffdError {
    /// `op`'s failure `err`, by what it means for this layer.
    pub(crate) fn from_op(op: &'static str, addr: usize, err: io::Error) -> UffdError {
        match err.raw_os_error() {
            Some(libc::EEXIST) => UffdError::AlreadyMapped { op, addr },
            Some(libc::EAGAIN) => UffdError::Retry { op, addr },
            Some(libc::EBUSY) if op == "UFFDIO_MOVE" => UffdError::Shared { addr },
            _ => UffdError::Os { op, err },
        }
    }
}

impl fmt::Display for UffdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UffdError::NoPermission => f.write_str(
                "userfaultfd: permission denied: needs root or access to /dev/userfaultfd; \
                 it never changes vm.unprivileged_userfaultfd itself",
            ),
            UffdError::Unsupported => f.write_str(
                "userfaultfd: this kernel has none (built without CONFIG_USERFAULTFD); \
                 run on a kernel that has it",
            ),
            UffdError::FeaturesUnavailable { missing } => write!(
                f,
                "userfaultfd: the kernel does not offer {missing}; run on a newer kernel \
                 (UFFD_FEATURE_MOVE needs Linux 6.8)"
            ),
            UffdError::IoctlUnavailable { ioctl, answer } => write!(
                f,
                "userfaultfd: the kernel's {answer} answer offers no {ioctl}; run on a kernel \
                 that has it"
            ),
            UffdError::Unaligned { op, start, len } => write!(
                f,
                "userfaultfd: {op} of {len} bytes at {start:#x} is not page-aligned; align \
                 both to the page size"
            ),
            UffdError::AlreadyMapped { op, addr } => write!(
                f,
                "userfaultfd: {op} at {addr:#x}: a page is already there (the fault was \
                 served already)"
            ),
            UffdError::Retry { op, addr } => write!(
                f,
                "userfaultfd: {op} at {addr:#x}: the mapping is changing; read the pending \
                 events, then retry"
            ),
            UffdError::Shared { addr } => write!(
                f,
                "userfaultfd: UFFDIO_MOVE at {addr:#x}: the page is shared (a forked child \
                 maps it too); copy it out instead"
            ),
            UffdError::Os { op, err } => write!(f, "userfaultfd: {op}: {}", io_reason(err)),
        }
    }
}

impl std::error::Error for UffdError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_one_line_and_name_the_remedy() {
        let no = UffdError::NoPermission.to_string();
        assert!(no.contains("root or access to /dev/userfaultfd"), "{no}");
        assert!(no.contains("never changes vm.unprivileged_userfaultfd"), "{no}");
        let os = UffdError::from_op("UFFDIO_COPY", 0, io::Error::from_raw_os_error(libc::ENOENT));
        assert_eq!(os.to_string(), "userfaultfd: UFFDIO_COPY: no such file or directory");
        let busy =
            UffdError::from_op("UFFDIO_MOVE", 0x1000, io::Error::from_raw_os_error(libc::EBUSY));
        assert!(matches!(busy, UffdError::Shared { addr: 0x1000 }));
        let exists =
            UffdError::from_op("UFFDIO_COPY", 0x2000, io::Error::from_raw_os_error(libc::EEXIST));
        assert!(matches!(exists, UffdError::AlreadyMapped { .. }));
        for e in [no, os.to_string(), busy.to_string(), exists.to_string()] {
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
