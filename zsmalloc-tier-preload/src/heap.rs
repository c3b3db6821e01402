//! The program's memory: one reserve of address space (registered with the tier's userfaultfd
//! once it starts), small blocks from size classes carved out of 64 KiB slabs, larger blocks
//! and anonymous mappings as page-granular spans. Its bookkeeping (a word per page, the free
//! spans) lives in the tier's own memory, never in the reserve.
//!
//! Freed small blocks keep a free-list link in their first word, so the allocator writes the
//! program's memory with its lock held: the handler thread therefore never takes this lock.

use libc::c_int;

use crate::protection::{self, Prot};
use crate::reserve;
use crate::spans::Spans;
use crate::sys::{self, Locked, PAGE};
use crate::tier;

/// The reserve's size: address space only (`MAP_NORESERVE`), pages exist once touched.
const RESERVE: usize = 64 << 30;
const SLAB: usize = 64 << 10;
/// The largest alignment a small block has: its power-of-two class, within a page.
const SMALL_ALIGN_MAX: usize = PAGE;

/// Block sizes: by 16 to 128, then four per power of two to 8 KiB.
const CLASSES: [usize; 32] = [
    16, 32, 48, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384, 448, 512, 640, 768, 896, 1024,
    1280, 1536, 1792, 2048, 2560, 3072, 3584, 4096, 5120, 6144, 7168, 8192,
];
const SMALL_MAX: usize = CLASSES[CLASSES.len() - 1];

// A page's word: its kind in the top four bits, a value below.
const KIND: u32 = 0xf << 28;
const VALUE: u32 = !KIND;
const K_SLAB: u32 = 1 << 28;
const K_BIG: u32 = 2 << 28;
const K_BODY: u32 = 3 << 28;
const K_MAP: u32 = 4 << 28;

#[derive(Clone, Copy)]
struct Class {
    free: usize,
    cursor: usize,
    end: usize,
}

pub struct Heap {
    meta: usize,
    spans: Spans,
    classes: [Class; CLASSES.len()],
    failed: bool,
}

pub static HEAP: Locked<Heap> = Locked::new(Heap {
    meta: 0,
    spans: Spans::new(),
    classes: [Class { free: 0, cursor: 0, end: 0 }; CLASSES.len()],
    failed: false,
});

pub use crate::reserve::{base, reserve_len};

fn class_of(size: usize) -> usize {
    CLASSES.partition_point(|&c| c < size)
}

impl Heap {
    /// Reserves the address space on the first call; false when it cannot be had (the calls
    /// then go to glibc).
    fn ready(&mut self) -> bool {
        if self.meta != 0 {
            return true;
        }
        if self.failed {
            return false;
        }
        // SAFETY: a new mapping at an address the kernel picks; it aliases nothing.
        let p = unsafe {
            sys::mmap(
                0,
                RESERVE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        let pages = RESERVE / PAGE;
        let meta = sys::own_memory(pages * 4);
        if p == libc::MAP_FAILED || meta.is_none() || !protection::make(pages) {
            self.failed = true;
            return false;
        }
        // SAFETY: the reserve just made; huge pages would fault (and be evicted) 2 MiB at a
        // time, the tier works in pages.
        unsafe { sys::madvise(p as usize, RESERVE, libc::MADV_NOHUGEPAGE) };
        self.meta = meta.expect("checked");
        self.spans.set_limit(pages as u32);
        reserve::made(p as usize, RESERVE);
        true
    }

    fn word(&self, page: usize) -> u32 {
        // SAFETY: `meta` holds a word per page of the reserve and `page` is inside it.
        unsafe { *(self.meta as *const u32).add(page) }
    }

    fn set_word(&mut self, page: usize, w: u32) {
        // SAFETY: as in `word`; the heap's lock is held (`&mut self`).
        unsafe { *(self.meta as *mut u32).add(page) = w };
    }

    /// `pages` pages aligned to `align_pages`, of protection `prot` (`PROT_*`); `None` when
    /// the reserve is full or the protection could not be set.
    fn span(&mut self, pages: usize, align_pages: usize, prot: c_int) -> Option<usize> {
        let n = u32::try_from(pages).ok()?;
        let at = self.spans.alloc(n, u32::try_from(align_pages).ok()?)? as usize;
        reserve::handed_out(self.spans.top as usize);
        if Prot::from_prot(prot) != Prot::PLAIN
            && apply(at, at + pages, Change::Access { prot, pkey: -1 }) != 0
        {
            apply(at, at + pages, Change::Reset);
            self.spans.free(at as u32, n);
            return None;
        }
        crate::user_faults::lend(at, at + pages);
        Some(at)
    }

    /// Empties pages `[first, first + n)` (their pool objects freed), makes them plain again
    /// (a protection or lock the program set is the reserve's no longer) and gives them back.
    fn release(&mut self, first: usize, n: usize) {
        let changed = unlock_for_drop(first, first + n);
        for p in first..first + n {
            self.set_word(p, 0);
        }
        tier::drop_range(base() + first * PAGE, n * PAGE);
        if changed {
            apply(first, first + n, Change::Reset);
        }
        self.spans.free(first as u32, n as u32);
    }

    /// A block of `size` bytes aligned to `align`: its address and whether it may hold old
    /// bytes (a reused small block).
    pub fn alloc(&mut self, size: usize, align: usize) -> Option<(usize, bool)> {
        if !self.ready() {
            return None;
        }
        let size = size.max(1);
        let ci = if align <= 16 {
            class_of(size)
        } else if align <= SMALL_ALIGN_MAX {
            CLASSES
                .iter()
                .position(|&c| c >= size.max(align) && c.is_power_of_two() && c <= SMALL_ALIGN_MAX)
                .unwrap_or(CLASSES.len())
        } else {
            CLASSES.len()
        };
        if ci == CLASSES.len() {
            let pages = size.checked_add(PAGE - 1)? / PAGE;
            let first = self.span(pages, (align / PAGE).max(1), RW)?;
            self.set_word(first, K_BIG | pages as u32);
            for p in first + 1..first + pages {
                self.set_word(p, K_BODY);
            }
            return Some((base() + first * PAGE, false));
        }
        let csize = CLASSES[ci];
        let c = self.classes[ci];
        if c.free != 0 {
            // SAFETY: a freed block of this class holds the next free block's address in its
            // first word (written by `free`); the block is in the reserve, mapped.
            let next = unsafe { (c.free as *const usize).read() };
            self.classes[ci].free = next;
            return Some((c.free, true));
        }
        if c.cursor == 0 || c.cursor + csize > c.end {
            let first = self.span(SLAB / PAGE, 1, RW)?;
            for p in first..first + SLAB / PAGE {
                self.set_word(p, K_SLAB | ci as u32);
            }
            let start = base() + first * PAGE;
            self.classes[ci].cursor = start;
            self.classes[ci].end = start + SLAB;
        }
        let p = self.classes[ci].cursor;
        self.classes[ci].cursor += csize;
        Some((p, false))
    }

    /// The usable size of the block at `p` (in the reserve), 0 if it is not one.
    pub fn usable(&self, p: usize) -> usize {
        let page = (p - base()) / PAGE;
        let w = self.word(page);
        match w & KIND {
            K_SLAB => CLASSES[(w & VALUE) as usize],
            K_BIG if p.is_multiple_of(PAGE) => (w & VALUE) as usize * PAGE,
            _ => 0,
        }
    }

    /// Frees the block at `p` (in the reserve); anything else is ignored.
    pub fn free(&mut self, p: usize) {
        let page = (p - base()) / PAGE;
        let w = self.word(page);
        match w & KIND {
            K_SLAB => {
                let ci = (w & VALUE) as usize;
                // SAFETY: `p` is a block of this class, the program's no longer; its first
                // word keeps the free list's link (the block is at least 16 bytes).
                unsafe { (p as *mut usize).write(self.classes[ci].free) };
                self.classes[ci].free = p;
            }
            K_BIG if p.is_multiple_of(PAGE) => self.release(page, (w & VALUE) as usize),
            _ => {}
        }
    }

    /// Resizes the block at `p` where it is, if it can be: true when done.
    pub fn resize_in_place(&mut self, p: usize, size: usize) -> bool {
        let page = (p - base()) / PAGE;
        let w = self.word(page);
        match w & KIND {
            K_SLAB => size <= CLASSES[(w & VALUE) as usize],
            K_BIG if p.is_multiple_of(PAGE) && size > SMALL_MAX => {
                let old = (w & VALUE) as usize;
                let Some(new) = size.checked_add(PAGE - 1).map(|s| s / PAGE) else { return false };
                if new <= old {
                    self.release(page + new, old - new);
                } else if self.spans.take_at((page + old) as u32, (new - old) as u32) {
                    reserve::handed_out(self.spans.top as usize);
                    crate::user_faults::lend(page + old, page + new);
                    for q in page + old..page + new {
                        self.set_word(q, K_BODY);
                    }
                } else {
                    return false;
                }
                self.set_word(page, K_BIG | new as u32);
                true
            }
            _ => false,
        }
    }

    /// An anonymous private mapping of `len` bytes and protection `prot`: fresh pages,
    /// reading zeros.
    pub fn map(&mut self, len: usize, prot: c_int) -> Option<usize> {
        if !self.ready() {
            return None;
        }
        let pages = len.checked_add(PAGE - 1)? / PAGE;
        let first = self.span(pages, 1, prot)?;
        for p in first..first + pages {
            self.set_word(p, K_MAP);
        }
        Some(base() + first * PAGE)
    }

    /// Unmaps the mapped pages of `[addr, addr + len)` (in the reserve); others are left.
    pub fn unmap(&mut self, addr: usize, len: usize) {
        let first = (addr - base()) / PAGE;
        let end = (first + len.div_ceil(PAGE)).min(reserve_len() / PAGE);
        let mut p = first;
        while p < end {
            if self.word(p) != K_MAP {
                p += 1;
                continue;
            }
            let run = p;
            while p < end && self.word(p) == K_MAP {
                p += 1;
            }
            self.release(run, p - run);
        }
    }

    /// Grows the mapping `[addr, addr + old)` to `new` bytes where it is: true when done.
    pub fn grow_map(&mut self, addr: usize, old: usize, new: usize) -> bool {
        let first = (addr - base()) / PAGE;
        let (old_pages, new_pages) = (old.div_ceil(PAGE), new.div_ceil(PAGE));
        if (first..first + old_pages).any(|p| self.word(p) != K_MAP) {
            return false;
        }
        let extra = (new_pages - old_pages) as u32;
        if !self.spans.take_at((first + old_pages) as u32, extra) {
            return false;
        }
        reserve::handed_out(self.spans.top as usize);
        for p in first + old_pages..first + new_pages {
            self.set_word(p, K_MAP);
        }
        // The grown part is the same area to the kernel: its protection and lock.
        let last = protection::of(first + old_pages - 1);
        if last != Prot::PLAIN {
            apply(
                first + old_pages,
                first + new_pages,
                Change::Access { prot: last.prot(), pkey: -1 },
            );
            if last.locked() {
                apply(first + old_pages, first + new_pages, Change::Lock { flags: 0 });
            }
        }
        crate::user_faults::lend(first + old_pages, first + new_pages);
        true
    }

    /// The program's protection or lock change `c` of `[addr, addr + len)` (page-aligned, in
    /// the reserve): -1 with `ENOMEM`, as the kernel answers for pages not mapped, when a page
    /// of it is not the program's.
    pub fn change(&mut self, addr: usize, len: usize, c: Change) -> c_int {
        let first = (addr - base()) / PAGE;
        let end = first + len.div_ceil(PAGE);
        if end > reserve_len() / PAGE || (first..end).any(|p| self.word(p) == 0) {
            sys::set_errno(libc::ENOMEM);
            return -1;
        }
        apply(first, end, c)
    }

    /// The program's own mapping (a file, or shared) made by `kernel` with `MAP_FIXED` over its
    /// mapped pages `[addr, addr + len)`: its answer, the pages foreign to the tier until given
    /// back (`protection.rs`).
    pub fn map_foreign(
        &mut self,
        addr: usize,
        len: usize,
        kernel: impl FnOnce() -> usize,
    ) -> usize {
        let first = (addr - base()) / PAGE;
        let end = first + len.div_ceil(PAGE);
        unlock_for_drop(first, end);
        tier::map_foreign(first, end, kernel)
    }

    /// Pages `[addr, addr + len)`, the program's, take protection `prot` (its access and
    /// lock): a mapping moved by `mremap` keeps what it had.
    pub fn take_protection(&mut self, addr: usize, len: usize, prot: Prot) {
        let first = (addr - base()) / PAGE;
        let end = first + len / PAGE;
        apply(first, end, Change::Access { prot: prot.prot(), pkey: -1 });
        if prot.locked() {
            apply(first, end, Change::Lock { flags: 0 });
        }
    }

    /// A fresh anonymous mapping of protection `prot` over the program's mapped pages
    /// `[addr, addr + len)` (`mmap` with `MAP_FIXED`): the same pages, unlocked, given
    /// `prot`, emptied (they read zeros, as a new mapping does).
    pub fn map_over(&mut self, addr: usize, len: usize, prot: c_int) -> c_int {
        let first = (addr - base()) / PAGE;
        let end = first + len / PAGE;
        let changed = unlock_for_drop(first, end);
        tier::drop_range(addr, len);
        if changed && apply(first, end, Change::Reset) != 0 {
            return -1;
        }
        if Prot::from_prot(prot) != Prot::PLAIN
            && apply(first, end, Change::Access { prot, pkey: -1 }) != 0
        {
            return -1;
        }
        crate::user_faults::lend_range(addr, len);
        0
    }

    /// Whether every page of `[addr, addr + len)` is mapped (by [`Heap::map`]).
    pub fn is_mapped(&self, addr: usize, len: usize) -> bool {
        let first = (addr - base()) / PAGE;
        let end = first + len.div_ceil(PAGE);
        end <= reserve_len() / PAGE && (first..end).all(|p| self.word(p) == K_MAP)
    }
}

const RW: c_int = libc::PROT_READ | libc::PROT_WRITE;

/// A change of the protection or lock of pages, as the program asks it or the heap needs it.
#[derive(Clone, Copy)]
pub enum Change {
    /// `mprotect`, or `pkey_mprotect` with a key other than -1.
    Access { prot: c_int, pkey: c_int },
    /// `mlock2` (`mlock`: flags 0).
    Lock { flags: c_int },
    /// `munlock`.
    Unlock,
    /// Back to the reserve's own: readable, writable, unlocked.
    Reset,
}

/// Before pages `[first, end)` are emptied: the kernel's lock taken off them, if the program
/// locked any (`MADV_DONTNEED` refuses locked pages); whether any page is not plain, to be
/// made so once emptied (then no page is made evictable only to be dropped).
fn unlock_for_drop(first: usize, end: usize) -> bool {
    if !protection::any_changed(first, end) {
        return false;
    }
    if (first..end).any(|p| protection::of(p).locked()) {
        // SAFETY: pages of the reserve about to be emptied; unlocking does not fault.
        unsafe { sys::mlock(base() + first * PAGE, (end - first) * PAGE, false, 0) };
    }
    true
}

/// Makes change `c` to pages `[first, end)` of the reserve, the kernel's areas and the tier's
/// map alike (`protection.rs`): 0, or -1 with `errno` set. A lock marks the pages first and
/// locks them after, without the tier's lock (locking populates: holes fault, served by the
/// handler), so no page being locked is evicted; an unlock is the reverse.
fn apply(first: usize, end: usize, c: Change) -> c_int {
    let (addr, len) = (base() + first * PAGE, (end - first) * PAGE);
    match c {
        Change::Access { prot, pkey } => {
            let r = tier::reprotect(
                first,
                end,
                |p| p.with_access(prot).with_key(pkey != -1),
                // SAFETY: pages of the reserve the program asked to protect so.
                || unsafe { sys::mprotect(addr, len, prot, pkey) },
            );
            if r == 0 && Prot::from_prot(prot) == Prot::PLAIN {
                // Opened for reading and writing: lent now (a reservation committed).
                crate::user_faults::lend(first, end);
            }
            r
        }
        Change::Lock { flags } => {
            tier::reprotect(first, end, |p| p.with_lock(true), || 0);
            // SAFETY: pages of the reserve the program asked to lock.
            let r = unsafe { sys::mlock(addr, len, true, flags) };
            if r != 0 {
                let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::ENOMEM);
                tier::reprotect(first, end, |p| p.with_lock(false), || 0);
                sys::set_errno(e);
            }
            r
        }
        Change::Unlock => {
            // SAFETY: pages of the reserve the program asked to unlock.
            let r = unsafe { sys::mlock(addr, len, false, 0) };
            if r == 0 {
                tier::reprotect(first, end, |p| p.with_lock(false), || 0);
            }
            r
        }
        Change::Reset => {
            // Runs the program had mapped over with its own: the reserve's mapping back first.
            let mut p = first;
            while p < end {
                if !protection::of(p).foreign() {
                    p += 1;
                    continue;
                }
                let run = p;
                while p < end && protection::of(p).foreign() {
                    p += 1;
                }
                if tier::give_back_foreign(run, p) != 0 {
                    return -1;
                }
            }
            let locked = (first..end).any(|p| protection::of(p).locked());
            tier::reprotect(
                first,
                end,
                |_| Prot::PLAIN,
                // SAFETY: pages of the reserve given back to it; neither call faults.
                || unsafe {
                    if locked {
                        sys::mlock(addr, len, false, 0);
                    }
                    sys::mprotect(addr, len, RW, -1)
                },
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_rise_and_aligned_ones_are_powers_of_two() {
        assert!(CLASSES.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(CLASSES[class_of(1)], 16);
        assert_eq!(CLASSES[class_of(129)], 160);
        assert_eq!(class_of(SMALL_MAX + 1), CLASSES.len());
        assert!(SLAB.is_multiple_of(SMALL_MAX));
    }
}
