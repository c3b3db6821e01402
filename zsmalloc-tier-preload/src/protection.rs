//! Each page's protection as the program set it: by the protection of its mapping, `mprotect`,
//! `pkey_mprotect`, `mlock` or `mlock2`. One byte per page of the reserve, in the tier's own
//! memory; 0 is the reserve's own state (readable, writable, not locked), so pages never
//! changed cost nothing.
//!
//! The rules, all here:
//!
//! - **How a page may leave** ([`Leave`]). `UFFDIO_MOVE` moves only between writable areas of
//!   the same protection, never a locked one, so a plain page (read and write) is moved out; a
//!   page the program can read but not write is copied out and dropped (`MADV_DONTNEED`): no
//!   write can land on it meanwhile (a write faults with `SIGSEGV`, and the program's own
//!   `mprotect` waits for the tier's lock); a page that is locked, unreadable, writable and
//!   executable, or under a protection key stays resident (pinned).
//! - **A mapping of the program's own over its pages** (`mmap(MAP_FIXED)` of a file, or shared,
//!   over a reservation): the pages are foreign, never filled nor evicted, until the program
//!   unmaps them or maps fresh anonymous memory there, when the reserve's own mapping is put
//!   back and registered again (`tier::give_back_foreign`).
//! - **How a page comes back.** `UFFDIO_COPY` fills a hole whatever the area's protection
//!   (read-only and `PROT_NONE` included, as probed on Linux 6.18), and never across two
//!   areas (`ENOENT`), so a first touch's run stops where the protection changes and a copy
//!   refused for that reason is made page by page (`serve.rs`).
//! - **An access the kernel refuses** (a write to a read-only page, any access to a
//!   `PROT_NONE` one) never reaches the tier: the kernel checks the area before the fault is
//!   handed to userfaultfd, so the program gets its `SIGSEGV` at its address as untiered.
//!
//! Invariant: a page's byte and the kernel's area agree whenever the tier's lock is free. The
//! byte is written, and the kernel's `mprotect`/`mlock` made, by a program thread holding the
//! heap's lock and then the tier's (`heap.rs`, `tier::reprotect`); the handler reads the byte
//! with the tier's lock held, so it never moves a page whose protection is changing.

use std::sync::atomic::{AtomicUsize, Ordering};

use libc::c_int;

use crate::sys;

/// A page's protection, as the bits of its byte.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Prot(u8);

const NO_READ: u8 = 1;
const NO_WRITE: u8 = 2;
const EXEC: u8 = 4;
const LOCKED: u8 = 8;
/// Under a protection key other than the default: what it allows is the program's to say.
const KEYED: u8 = 16;
/// Replaced by a mapping of the program's that is not the reserve's (a file mapped with
/// `MAP_FIXED` over a reservation, as a JVM maps its class-data archive): not the tier's to
/// fill or evict until the program gives it back.
const FOREIGN: u8 = 32;
const ACCESS: u8 = NO_READ | NO_WRITE | EXEC;

/// How an evicted page leaves the program's memory.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Leave {
    /// `UFFDIO_MOVE` into a staging slot.
    Move,
    /// Copied into a staging slot and dropped: read-only to the program.
    CopyOut,
    /// Kept resident.
    Stay,
}

impl Prot {
    /// The reserve's own protection: read and write.
    pub const PLAIN: Prot = Prot(0);

    /// The protection `prot` (`PROT_*`) gives.
    pub fn from_prot(prot: c_int) -> Prot {
        let mut b = 0;
        if prot & libc::PROT_READ == 0 {
            b |= NO_READ;
        }
        if prot & libc::PROT_WRITE == 0 {
            b |= NO_WRITE;
        }
        if prot & libc::PROT_EXEC != 0 {
            b |= EXEC;
        }
        Prot(b)
    }

    /// This protection with `prot`'s access (lock and key kept).
    pub fn with_access(self, prot: c_int) -> Prot {
        Prot(self.0 & !ACCESS | Prot::from_prot(prot).0)
    }

    pub fn with_lock(self, locked: bool) -> Prot {
        Prot(if locked { self.0 | LOCKED } else { self.0 & !LOCKED })
    }

    pub fn with_key(self, keyed: bool) -> Prot {
        Prot(if keyed { self.0 | KEYED } else { self.0 & !KEYED })
    }

    pub fn locked(self) -> bool {
        self.0 & LOCKED != 0
    }

    pub fn with_foreign(self, foreign: bool) -> Prot {
        Prot(if foreign { self.0 | FOREIGN } else { self.0 & !FOREIGN })
    }

    pub fn foreign(self) -> bool {
        self.0 & FOREIGN != 0
    }

    /// The `PROT_*` bits.
    pub fn prot(self) -> c_int {
        let mut p = 0;
        if self.0 & NO_READ == 0 {
            p |= libc::PROT_READ;
        }
        if self.0 & NO_WRITE == 0 {
            p |= libc::PROT_WRITE;
        }
        if self.0 & EXEC != 0 {
            p |= libc::PROT_EXEC;
        }
        p
    }

    /// How a page of this protection leaves (the rules on top).
    pub fn leave(self) -> Leave {
        if self.0 & (LOCKED | KEYED | FOREIGN) != 0 || self.0 & NO_READ != 0 {
            return Leave::Stay;
        }
        match self.0 & ACCESS {
            0 => Leave::Move,
            a if a & NO_WRITE != 0 => Leave::CopyOut,
            // Writable and executable: no staging area of that protection.
            _ => Leave::Stay,
        }
    }

    pub fn evictable(self) -> bool {
        self.leave() != Leave::Stay
    }
}

/// The bytes, a page each (0: not made, every page plain).
static MAP: AtomicUsize = AtomicUsize::new(0);
static PAGES: AtomicUsize = AtomicUsize::new(0);

/// Makes the map for a reserve of `pages` pages (with the reserve, once); false if it cannot
/// be had (the reserve is not made then).
pub fn make(pages: usize) -> bool {
    let Some(at) = sys::own_memory(pages) else { return false };
    PAGES.store(pages, Ordering::Release);
    MAP.store(at, Ordering::Release);
    true
}

/// Page `page`'s protection.
#[inline]
pub fn of(page: usize) -> Prot {
    let at = MAP.load(Ordering::Acquire);
    if at == 0 || page >= PAGES.load(Ordering::Relaxed) {
        return Prot::PLAIN;
    }
    // SAFETY: the map holds a byte per page of the reserve, in the tier's own memory, and
    // `page` is inside it; a byte is read whole.
    Prot(unsafe { *(at as *const u8).add(page) })
}

/// Sets pages `[first, end)` to `f` of their protection. The caller holds the heap's lock, and
/// the tier's while it tiers (the invariant on top).
pub fn update(first: usize, end: usize, f: impl Fn(Prot) -> Prot) {
    let at = MAP.load(Ordering::Acquire);
    let end = end.min(PAGES.load(Ordering::Relaxed));
    for page in first..end {
        let new = f(of(page));
        // SAFETY: as in `of`; writers are serialised by the heap's lock.
        unsafe { *(at as *mut u8).add(page) = new.0 };
    }
}

/// Whether any page of `[first, end)` is not plain.
pub fn any_changed(first: usize, end: usize) -> bool {
    (first..end).any(|p| of(p) != Prot::PLAIN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protections_leave_as_the_kernel_allows() {
        let rw = libc::PROT_READ | libc::PROT_WRITE;
        assert_eq!(Prot::from_prot(rw), Prot::PLAIN);
        assert_eq!(Prot::from_prot(rw).leave(), Leave::Move);
        assert_eq!(Prot::from_prot(libc::PROT_READ).leave(), Leave::CopyOut);
        assert_eq!(Prot::from_prot(libc::PROT_READ | libc::PROT_EXEC).leave(), Leave::CopyOut);
        assert_eq!(Prot::from_prot(libc::PROT_NONE).leave(), Leave::Stay);
        assert_eq!(Prot::from_prot(rw | libc::PROT_EXEC).leave(), Leave::Stay);
        assert_eq!(Prot::PLAIN.with_lock(true).leave(), Leave::Stay);
        assert_eq!(Prot::PLAIN.with_key(true).leave(), Leave::Stay);
        let p = Prot::PLAIN.with_lock(true).with_access(libc::PROT_READ);
        assert!(p.locked() && p.prot() == libc::PROT_READ);
        assert_eq!(p.with_lock(false).with_access(rw), Prot::PLAIN);
        for prot in 0..8 {
            assert_eq!(Prot::from_prot(prot).prot(), prot);
        }
    }
}
