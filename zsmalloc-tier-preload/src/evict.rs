//! Eviction of the victims the policy (module `policy`) names. A page leaves the program's
//! region in one step (`UFFDIO_MOVE` into a staging slot registered with the same userfaultfd): from then on a
//! thread touching it faults and waits for the handler, which is busy with this eviction, so a
//! write can never land on the copy being compressed. The slot is then kept as a same-filled
//! value or compressed into the pool. Slots are used once; when all are used the staging area
//! is mapped afresh (dropping the pages) and registered again.

use std::time::Instant;

use zsmalloc_codec::same_filled;
use zsmalloc_core::Backend;
use zsmalloc_tier::stats::Field;
use zsmalloc_tier::uffd::{Modes, Uffd, UffdError};

use crate::protection::{self, Leave};
use crate::sys::{self, PAGE};
use crate::tier::{self, State, Tier, SAME, STORED};

/// `MADV_POPULATE_WRITE` (Linux 5.14), which the libc crate may not name.
pub(crate) const MADV_POPULATE_WRITE: libc::c_int = 23;

/// Staging slots: the pages moved out and not yet dropped are at most these (resident beside
/// the budget, which does not count them, and apart from its slack).
pub const SLOTS: usize = 64;

/// Maps (at `at`, replacing what is there, or anywhere) and registers a staging area.
pub fn new_staging(uffd: &Uffd, at: Option<usize>) -> Result<usize, String> {
    new_area(uffd, at, SLOTS * PAGE)
}

/// Maps (at `at`, replacing what is there, or anywhere) and registers `len` bytes of the
/// tier's own into which pages are moved (staging, the inactive list).
pub fn new_area(uffd: &Uffd, at: Option<usize>, len: usize) -> Result<usize, String> {
    let fixed = if at.is_some() { libc::MAP_FIXED } else { 0 };
    // SAFETY: a private anonymous mapping of the tier's own; with MAP_FIXED it replaces the
    // previous area of the same use, whose pages are all stored and no longer needed.
    let p = unsafe {
        sys::mmap(
            at.unwrap_or(0),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | fixed,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error().to_string());
    }
    // SAFETY: the mapping just made.
    unsafe { sys::madvise(p as usize, len, libc::MADV_NOHUGEPAGE) };
    uffd.register(p as usize, len, Modes::MISSING).map_err(|e| e.to_string())?;
    Ok(p as usize)
}

/// Whether a move from `src` into the staging slot `slot` (empty before it) took place: a
/// page in the slot, none at the source.
pub(crate) fn moved_all_the_same(slot: usize, src: usize) -> bool {
    let (mut at_slot, mut at_src) = (0u8, 0u8);
    // SAFETY: mincore of one page of the staging area and one of the reserve into a byte each;
    // it reads the page tables only (no fault, no byte of the pages).
    let known = unsafe {
        libc::mincore(slot as *mut libc::c_void, PAGE, &mut at_slot) == 0
            && libc::mincore(src as *mut libc::c_void, PAGE, &mut at_src) == 0
    };
    known && at_slot & 1 == 1 && at_src & 1 == 0
}

/// What moving one page out gave.
pub(crate) enum Moved {
    Out,
    /// Shared or pinned: it stays.
    Stays,
    /// The kernel had dropped it (MADV_FREE): zeros.
    Gone,
}

pub(crate) enum Outcome {
    Evicted,
    /// The page could not be moved (shared with a forked child, or pinned): it stays.
    Skipped,
    /// The pool refused it: it is back in place and eviction pauses.
    PoolFull,
    /// Not a resident page any more (a stale arrival).
    Stale,
}

impl Tier {
    /// Evicts the policy's victims until the resident pages fit the budget, or until 64
    /// could not be moved in a row.
    pub fn evict_over_budget(&self, st: &mut State) {
        self.evict_down_to(st, st.pages.budget());
    }

    /// Evicts the policy's victims until `target` pages that may leave are resident, or until
    /// 64 could not be moved in a row.
    pub fn evict_down_to(&self, st: &mut State, target: u64) {
        if st.inactive.is_some() {
            return self.evict_through_list(st, target);
        }
        let mut skipped = 0;
        while st.pages.evictable() > target && !st.paused && !st.pool_full && skipped < 64 {
            let State { policy, pages, .. } = &mut *st;
            let Some((page, seq)) = policy.next_victim(&|p, s| pages.is_victim(p, s)) else {
                break;
            };
            let t0 = Instant::now();
            let remaining = st.pages.evictable() - target;
            if self.evict_run(st, page as usize, seq, remaining, t0) {
                continue;
            }
            match self.evict(st, page as usize) {
                Outcome::Evicted => {
                    let w = tier::stats();
                    w.add(Field::Evictions, 1);
                    w.eviction(t0.elapsed().as_nanos() as u64);
                }
                Outcome::Skipped => {
                    skipped += 1;
                    tier::stats().add(Field::SharedSkips, 1);
                    st.policy.kept(page, seq);
                }
                Outcome::PoolFull => {
                    tier::stats().add(Field::PoolFullStops, 1);
                    st.pool_full = true;
                    st.policy.refused(page, seq);
                }
                Outcome::Stale => {}
            }
        }
        let State { policy, pages, .. } = &mut *st;
        policy.compact(pages.resident(), &|p, s| pages.is_victim(p, s));
    }

    fn slot(&self, st: &mut State) -> usize {
        self.slots(st, 1)
    }

    /// `n` consecutive staging slots (a group's: `n` is at most 16, a quarter of them).
    pub(crate) fn slots(&self, st: &mut State, n: usize) -> usize {
        if st.staging_used + n > SLOTS {
            match new_staging(&self.uffd, Some(st.staging)) {
                Ok(at) => st.staging = at,
                Err(e) => tier::fatal(&format!("the staging area could not be renewed: {e}")),
            }
            st.staging_used = 0;
        }
        st.staging_used += n;
        st.staging + (st.staging_used - n) * PAGE
    }

    /// Moves `page` out into the staging slot `slot` (a hole) in one step: a page and a folio
    /// group's pages alike leave this way, each as its protection allows
    /// (`protection.rs`): moved, copied out and dropped, or kept.
    pub(crate) fn move_out(&self, slot: usize, page: usize) -> Moved {
        let addr = self.addr(page);
        match protection::of(page).leave() {
            Leave::Move => {}
            Leave::CopyOut => return self.copy_out(slot, addr),
            Leave::Stay => return Moved::Stays,
        }
        // SAFETY: the page is the program's, reached by the program through raw pointers only
        // (this library holds no reference into it); the slot is a hole of the staging area.
        let mut moved = unsafe { self.uffd.move_pages(slot, addr, PAGE) };
        if let Err(UffdError::Shared { .. }) = moved {
            // Shared since a fork (the child may have ended since: the kernel marks the page
            // the parent's own again only at a write). MADV_POPULATE_WRITE makes the kernel
            // take the write fault without writing a byte: the page becomes the parent's
            // own (copied if the child still maps it), and a write of the program's own
            // meanwhile is kept, as any.
            // SAFETY: the page is resident (its entry says so, under the lock), so no
            // userfault is raised; the advice changes no byte of it.
            if unsafe { sys::madvise(addr, PAGE, MADV_POPULATE_WRITE) } == 0 {
                // SAFETY: as the first move.
                moved = unsafe { self.uffd.move_pages(slot, addr, PAGE) };
            }
        }
        match moved {
            Ok(()) => Moved::Out,
            Err(UffdError::Shared { .. }) => Moved::Stays,
            // Gone already (the kernel reclaimed a page given MADV_FREE): zeros.
            Err(UffdError::Os { err, .. }) if err.raw_os_error() == Some(libc::ENOENT) => {
                Moved::Gone
            }
            // Linux 6.18 can answer EEXIST for a move it made (seen about once in 150 runs of
            // a program under the clock, a page write-protected by the scan just before): the
            // slot, empty before, holds the page, and the source is a hole. The page moved.
            Err(UffdError::AlreadyMapped { .. }) if moved_all_the_same(slot, addr) => {
                tier::stats().add(Field::MovesDespiteEexist, 1);
                Moved::Out
            }
            Err(e) => tier::fatal(&format!("eviction: {e}")),
        }
    }

    /// A page the program may read but not write leaves by a copy into the slot and a drop:
    /// no write can land on it meanwhile (module `protection`).
    fn copy_out(&self, slot: usize, addr: usize) -> Moved {
        // The kernel's copy reads the page: a hole there would fault to this very thread.
        if !present_or_swapped(addr) {
            return Moved::Gone;
        }
        // SAFETY: a page of the program's, present (or swapped: read in as any), readable, and
        // read-only to the program, so it does not change while the kernel copies it.
        let data = unsafe { std::slice::from_raw_parts(addr as *const u8, PAGE) };
        if let Err(e) = self.uffd.copy(slot, data, false) {
            tier::fatal(&format!("eviction of a read-only page: {e}"));
        }
        // SAFETY: the page is copied; dropped, it is a hole whose next touch the handler serves.
        if unsafe { sys::madvise(addr, PAGE, libc::MADV_DONTNEED) } != 0 {
            tier::fatal(&format!(
                "eviction of a read-only page: madvise: {}",
                std::io::Error::last_os_error()
            ));
        }
        Moved::Out
    }

    fn evict(&self, st: &mut State, page: usize) -> Outcome {
        if st.folio.pages > 1 {
            return self.evict_group(st, page);
        }
        let slot = self.slot(st);
        match self.move_out(slot, page) {
            Moved::Out => {}
            Moved::Stays => {
                st.staging_used -= 1;
                return Outcome::Skipped;
            }
            Moved::Gone => {
                st.staging_used -= 1;
                self.forget_gone(st, page);
                return Outcome::Stale;
            }
        }
        self.keep(st, page, slot)
    }

    /// Keeps page `page`, just moved out into `slot`, as a same-filled value or a pool object;
    /// a page the pool refuses is put back in place.
    pub(crate) fn keep(&self, st: &mut State, page: usize, slot: usize) -> Outcome {
        // SAFETY: the slot holds the page just moved there; the tier alone maps it.
        let data = unsafe { std::slice::from_raw_parts(slot as *const u8, PAGE) };
        if self.store(st, page, data) {
            Outcome::Evicted
        } else {
            self.put_back(self.addr(page), data);
            Outcome::PoolFull
        }
    }

    /// Keeps `data`, page `page`'s bytes out of the program's memory, as a same-filled value or
    /// a pool object; false when the pool refuses it (the entry is then unchanged).
    pub(crate) fn store(&self, st: &mut State, page: usize, data: &[u8]) -> bool {
        let w = tier::stats();
        if let Some(v) = same_filled(data) {
            st.pages.entry(page).handle.store(v as usize, std::sync::atomic::Ordering::Relaxed);
            st.pages.set(page, SAME);
            w.add(Field::SameFilledPages, 1);
            return true;
        }
        let State { pool, packed, codec, record, pages, .. } = st;
        let pool = pool.as_ref().expect("the handler made the pool");
        // A page that does not shrink (or that the codec refuses) is stored whole.
        let n = codec.compress(data, packed).ok().filter(|&n| n < PAGE).unwrap_or(PAGE);
        let object: &[u8] = if n == PAGE { data } else { &packed[..n] };
        // SAFETY: the handle word is this entry's, at a fixed address, and empty (the page
        // was resident or on the inactive list).
        if unsafe { pool.store_raw(&pages.entry(page).handle, object) }.is_err() {
            return false;
        }
        pages.set(page, tier::info(STORED, n, 0));
        tier::record(record, |r| r.store(page, n));
        w.add(Field::StoredPages, 1);
        w.add(Field::CompressedBytes, n as u64);
        w.add(Field::StoresTotalPages, 1);
        w.add(Field::StoresTotalBytes, n as u64);
        let total = pool.total_pages();
        w.set(Field::PoolPages, total);
        w.raise(Field::MaxPoolPages, total);
        true
    }

    /// Puts `data`, a page the pool refused, back in place at `addr` (a hole since it moved).
    pub(crate) fn put_back(&self, addr: usize, data: &[u8]) {
        if let Err(err) = self.copy_in(addr, data, true) {
            tier::fatal(&format!("a page the pool refused could not be put back: {err}"));
        }
    }

    pub(crate) fn forget_gone(&self, st: &mut State, page: usize) {
        st.pages.set(page, tier::EMPTY);
    }
}

/// Whether the page at `addr` is present or swapped (`/proc/self/pagemap`, bits 63 and 62): a
/// page the handler may read without a userfault. False if it cannot be told.
fn present_or_swapped(addr: usize) -> bool {
    // SAFETY: open of a NUL-terminated path; the descriptor is closed below.
    let fd =
        unsafe { libc::open(c"/proc/self/pagemap".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return false;
    }
    let mut word = 0u64;
    // SAFETY: pread of 8 bytes into a u64 of this frame.
    let n = unsafe {
        libc::pread(fd, (&mut word as *mut u64).cast(), 8, ((addr / PAGE) * 8) as libc::off_t)
    };
    // SAFETY: the descriptor just opened, closed by the kernel (not the program's `close`).
    unsafe { libc::syscall(libc::SYS_close, fd) };
    n == 8 && word & (3 << 62) != 0
}
