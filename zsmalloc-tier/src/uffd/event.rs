//! The messages a userfaultfd delivers (`struct uffd_msg`), by kind.

use std::os::fd::{FromRawFd, OwnedFd};

use super::abi::{self, UffdMsg};

/// One event read from a userfaultfd.
#[derive(Debug)]
pub enum Event {
    /// A thread touched a missing page (or wrote a write-protected one) and waits until the
    /// page is served and the range woken.
    PageFault {
        /// The faulting address, rounded down to the page unless `EXACT_ADDRESS` was asked.
        address: usize,
        /// A write fault (else a read).
        write: bool,
        /// A write-protect fault (registered `WP`), not a missing page.
        write_protect: bool,
        /// A minor fault (page in the page cache, not mapped).
        minor: bool,
        /// The faulting thread, with `UFFD_FEATURE_THREAD_ID` (else 0).
        thread_id: u32,
    },
    /// The process forked: the child's userfaultfd (closed when this is dropped).
    Fork { child_uffd: OwnedFd },
    /// `mremap` moved a registered range.
    Remap { from: usize, to: usize, len: usize },
    /// `madvise(MADV_DONTNEED/MADV_REMOVE)` dropped pages of a registered range.
    Remove { start: usize, end: usize },
    /// `munmap` removed part of a registered range.
    Unmap { start: usize, end: usize },
    /// An event this layer does not know (a newer kernel's).
    Unknown { event: u8 },
}

impl Event {
    /// The event in `msg`. A fork message's descriptor becomes owned here, so it is read once.
    pub(crate) fn from_msg(msg: &UffdMsg) -> Event {
        let addr = |at| msg.u64_at(at) as usize;
        match msg.event {
            abi::UFFD_EVENT_PAGEFAULT => {
                let flags = msg.u64_at(0);
                Event::PageFault {
                    address: addr(8),
                    write: flags & abi::UFFD_PAGEFAULT_FLAG_WRITE != 0,
                    write_protect: flags & abi::UFFD_PAGEFAULT_FLAG_WP != 0,
                    minor: flags & abi::UFFD_PAGEFAULT_FLAG_MINOR != 0,
                    thread_id: msg.u32_at(16),
                }
            }
            abi::UFFD_EVENT_FORK => {
                // SAFETY: the kernel installed this descriptor in our table for this message,
                // and nothing else owns it; the message is read once (it came from `read`).
                let child_uffd = unsafe { OwnedFd::from_raw_fd(msg.u32_at(0) as i32) };
                Event::Fork { child_uffd }
            }
            abi::UFFD_EVENT_REMAP => Event::Remap { from: addr(0), to: addr(8), len: addr(16) },
            abi::UFFD_EVENT_REMOVE => Event::Remove { start: addr(0), end: addr(8) },
            abi::UFFD_EVENT_UNMAP => Event::Unmap { start: addr(0), end: addr(8) },
            event => Event::Unknown { event },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(event: u8, words: [u64; 3]) -> UffdMsg {
        let mut m = UffdMsg::ZERO;
        m.event = event;
        for (i, w) in words.iter().enumerate() {
            m.arg[i * 8..i * 8 + 8].copy_from_slice(&w.to_ne_bytes());
        }
        m
    }

    #[test]
    fn messages_read_by_kind() {
        let m = msg(abi::UFFD_EVENT_PAGEFAULT, [abi::UFFD_PAGEFAULT_FLAG_WRITE, 0x7000, 42]);
        match Event::from_msg(&m) {
            Event::PageFault { address, write, write_protect, minor, thread_id } => {
                assert_eq!(
                    (address, write, write_protect, minor, thread_id),
                    (0x7000, true, false, false, 42)
                );
            }
            other => panic!("{other:?}"),
        }
        let m = msg(abi::UFFD_EVENT_REMAP, [0x1000, 0x9000, 0x2000]);
        assert!(matches!(
            Event::from_msg(&m),
            Event::Remap { from: 0x1000, to: 0x9000, len: 0x2000 }
        ));
        let m = msg(abi::UFFD_EVENT_UNMAP, [0x1000, 0x3000, 0]);
        assert!(matches!(Event::from_msg(&m), Event::Unmap { start: 0x1000, end: 0x3000 }));
        assert!(matches!(Event::from_msg(&msg(0x7f, [0; 3])), Event::Unknown { event: 0x7f }));
    }
}
