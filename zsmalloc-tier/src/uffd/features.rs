//! The `UFFD_FEATURE_*` bits a userfaultfd is opened with, by the kernel's names (6.18's
//! `include/uapi/linux/userfaultfd.h`; the newer bits are absent from older headers).

use std::fmt;

/// A set of userfaultfd features.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Features(pub u64);

impl Features {
    pub const NONE: Features = Features(0);
    /// Write-protect faults are reported (`UFFD_FEATURE_PAGEFAULT_FLAG_WP`).
    pub const PAGEFAULT_FLAG_WP: Features = Features(1 << 0);
    pub const EVENT_FORK: Features = Features(1 << 1);
    pub const EVENT_REMAP: Features = Features(1 << 2);
    pub const EVENT_REMOVE: Features = Features(1 << 3);
    pub const MISSING_HUGETLBFS: Features = Features(1 << 4);
    pub const MISSING_SHMEM: Features = Features(1 << 5);
    pub const EVENT_UNMAP: Features = Features(1 << 6);
    pub const SIGBUS: Features = Features(1 << 7);
    /// Page-fault messages carry the faulting thread's id.
    pub const THREAD_ID: Features = Features(1 << 8);
    pub const MINOR_HUGETLBFS: Features = Features(1 << 9);
    pub const MINOR_SHMEM: Features = Features(1 << 10);
    pub const EXACT_ADDRESS: Features = Features(1 << 11);
    pub const WP_HUGETLBFS_SHMEM: Features = Features(1 << 12);
    pub const WP_UNPOPULATED: Features = Features(1 << 13);
    pub const POISON: Features = Features(1 << 14);
    pub const WP_ASYNC: Features = Features(1 << 15);
    /// `UFFDIO_MOVE` (Linux 6.8).
    pub const MOVE: Features = Features(1 << 16);

    const NAMES: [(Features, &'static str); 17] = [
        (Features::PAGEFAULT_FLAG_WP, "PAGEFAULT_FLAG_WP"),
        (Features::EVENT_FORK, "EVENT_FORK"),
        (Features::EVENT_REMAP, "EVENT_REMAP"),
        (Features::EVENT_REMOVE, "EVENT_REMOVE"),
        (Features::MISSING_HUGETLBFS, "MISSING_HUGETLBFS"),
        (Features::MISSING_SHMEM, "MISSING_SHMEM"),
        (Features::EVENT_UNMAP, "EVENT_UNMAP"),
        (Features::SIGBUS, "SIGBUS"),
        (Features::THREAD_ID, "THREAD_ID"),
        (Features::MINOR_HUGETLBFS, "MINOR_HUGETLBFS"),
        (Features::MINOR_SHMEM, "MINOR_SHMEM"),
        (Features::EXACT_ADDRESS, "EXACT_ADDRESS"),
        (Features::WP_HUGETLBFS_SHMEM, "WP_HUGETLBFS_SHMEM"),
        (Features::WP_UNPOPULATED, "WP_UNPOPULATED"),
        (Features::POISON, "POISON"),
        (Features::WP_ASYNC, "WP_ASYNC"),
        (Features::MOVE, "MOVE"),
    ];

    pub fn contains(self, other: Features) -> bool {
        self.0 & other.0 == other.0
    }

    /// The features of `self` that `other` lacks.
    pub fn without(self, other: Features) -> Features {
        Features(self.0 & !other.0)
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl std::ops::BitOr for Features {
    type Output = Features;
    fn bitor(self, rhs: Features) -> Features {
        Features(self.0 | rhs.0)
    }
}

/// `MOVE|THREAD_ID`, and bits without a name as `bit 40`.
impl fmt::Display for Features {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<String> = Features::NAMES
            .iter()
            .filter(|(bit, _)| self.contains(*bit))
            .map(|(_, name)| format!("UFFD_FEATURE_{name}"))
            .collect();
        let named = Features::NAMES.iter().fold(0, |acc, (bit, _)| acc | bit.0);
        parts.extend(
            (0..64).filter(|b| self.0 & !named & (1 << b) != 0).map(|b| format!("bit {b}")),
        );
        if parts.is_empty() {
            return f.write_str("none");
        }
        f.write_str(&parts.join("|"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_sets() {
        let f = Features::MOVE | Features::THREAD_ID;
        assert!(f.contains(Features::MOVE) && !f.contains(Features::WP_ASYNC));
        assert_eq!(f.to_string(), "UFFD_FEATURE_THREAD_ID|UFFD_FEATURE_MOVE");
        assert_eq!(f.without(Features::THREAD_ID), Features::MOVE);
        assert_eq!(Features(1 << 40).to_string(), "bit 40");
        assert_eq!(Features::NONE.to_string(), "none");
    }
}
