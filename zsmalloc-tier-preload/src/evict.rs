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

use crate::sys::{self, PAGE};
use crate::tier::{self, State, Tier, RESIDENT, SAME, STORED};

/// `MADV_POPULATE_WRITE` (Linux 5.14), which the libc crate may not name.
pub(crate) const MADV_POPULATE_WRITE: libc::c_int = 23;

/// Staging slots: the pages moved out and not yet dropped are at most these (resident beside
/// the budget, which does not count them, and apart from its slack).
pub const SLOTS: usize = 64;

/// Maps (at `at`, replacing what is there, or anywhere) and registers a staging area.
pub fn new_staging(uffd: &Uffd, at: Option<usize>) -> Result<usize, String> {
    let len = SLOTS * PAGE;
    let fixed = if at.is_some() { libc::MAP_FIXED } else { 0 };
    // SAFETY: a private anonymous mapping of the tier's own; with MAP_FIXED it replaces the
    // previous staging area, whose pages were all compressed and are no longer needed.
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
fn moved_all_the_same(slot: usize, src: usize) -> bool {
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
        self.evict_down_to(st, st.budget);
    }

    /// Evicts the policy's victims until `target` pages are resident, or until 64 could not be
    /// moved in a row.
    pub fn evict_down_to(&self, st: &mut State, target: u64) {
        let table = st.table;
        let live = move |p: u32, s: u32| {
            // SAFETY: as `Tier::entry`: the table's entries, with the lock held (the caller
            // passes the state).
            let e = unsafe { &*(table as *const tier::Entry).add(p as usize) };
            e.kind() == RESIDENT && e.seq() == s
        };
        let mut skipped = 0;
        while st.resident > target && !st.paused && !st.pool_full && skipped < 64 {
            let Some((page, seq)) = st.policy.next_victim(&live) else { break };
            let t0 = Instant::now();
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
        st.policy.compact(st.resident, &live);
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
    /// group's pages alike leave this way.
    pub(crate) fn move_out(&self, slot: usize, page: usize) -> Moved {
        let addr = self.addr(page);
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

    fn evict(&self, st: &mut State, page: usize) -> Outcome {
        if st.folio.pages > 1 {
            return self.evict_group(st, page);
        }
        let addr = self.addr(page);
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
        // SAFETY: the slot holds the page just moved there; the tier alone maps it.
        let data = unsafe { std::slice::from_raw_parts(slot as *const u8, PAGE) };
        let e = self.entry(st, page);
        let w = tier::stats();
        if let Some(v) = same_filled(data) {
            e.handle.store(v as usize, std::sync::atomic::Ordering::Relaxed);
            e.info = SAME;
            w.add(Field::SameFilledPages, 1);
        } else {
            let State { pool, packed, codec, record, .. } = st;
            let pool = pool.as_ref().expect("the handler made the pool");
            // A page that does not shrink (or that the codec refuses) is stored whole.
            let n = codec.compress(data, packed).ok().filter(|&n| n < PAGE).unwrap_or(PAGE);
            let object: &[u8] = if n == PAGE { data } else { &packed[..n] };
            // SAFETY: the handle word is this entry's, at a fixed address, and empty (the page
            // was resident).
            if unsafe { pool.store_raw(&e.handle, object) }.is_err() {
                if let Err(err) = self.copy_in(addr, data, true) {
                    tier::fatal(&format!("a page the pool refused could not be put back: {err}"));
                }
                return Outcome::PoolFull;
            }
            e.info = STORED | ((n as u64) << 8);
            tier::record(record, |r| r.store(page, n));
            w.add(Field::StoredPages, 1);
            w.add(Field::CompressedBytes, n as u64);
            w.add(Field::StoresTotalPages, 1);
            w.add(Field::StoresTotalBytes, n as u64);
            let pages = pool.total_pages();
            w.set(Field::PoolPages, pages);
            w.raise(Field::MaxPoolPages, pages);
        }
        st.resident -= 1;
        w.set(Field::ResidentPages, st.resident);
        Outcome::Evicted
    }

    pub(crate) fn forget_gone(&self, st: &mut State, page: usize) {
        self.entry(st, page).info = tier::EMPTY;
        st.resident -= 1;
        tier::stats().set(Field::ResidentPages, st.resident);
    }
}
