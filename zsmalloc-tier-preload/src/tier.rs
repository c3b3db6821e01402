//! The tier's state: the page table (`page_table.rs`: what holds each page's bytes, and the
//! counts the budget is judged by), the arrival order of the resident pages, the pool and the
//! buffers, all behind one lock. The handler thread serves
//! faults and evicts with it held; a program thread takes it only to empty pages (free,
//! munmap, madvise) or around a fork, and never touches registered memory while it holds it,
//! so the handler is never waiting on a thread that waits on the handler.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use zsmalloc_codec::Codec;
use zsmalloc_core::{AnyPool, PoolConfig};
use zsmalloc_tier::stats::{Field, State as TierState};
use zsmalloc_tier::uffd::{Features, Uffd, UffdError};

use crate::policy::Policy;
use crate::protection::{self, Prot};
use crate::record::Recorder;
use crate::reserve;
use crate::sys::{self, Locked, PAGE};

pub use crate::figures::{map_stats, stats, use_block, IN_CHILD};
pub use crate::page_table::{
    info, Entry, PageTable, CACHED, EMPTY, GROUP, INACTIVE, RESIDENT, SAME, STORED,
};

pub struct State {
    /// What holds each page's bytes; the resident counts and the budget.
    pub pages: PageTable,
    /// Chooses the victims (module `policy`): told of every arrival (page, arrival number);
    /// an arrival whose number no longer matches the page's is stale.
    pub policy: Box<dyn Policy>,
    pub pool: Option<AnyPool>,
    pub config: Option<PoolConfig>,
    pub zero: Vec<u8>,
    pub page: Vec<u8>,
    pub packed: Vec<u8>,
    /// Compresses evicted pages into `packed` and decompresses them into `page`; made at the
    /// start, it allocates nothing in the handler.
    pub codec: Codec,
    pub staging: usize,
    pub staging_used: usize,
    /// A fork is under way: nothing is evicted until it is done.
    pub paused: bool,
    /// The pool refused a store: nothing is evicted until an object is freed.
    pub pool_full: bool,
    /// The pool's operations written as a trace (`ZSMALLOC_TIER_RECORD`).
    pub record: Option<Recorder>,
    /// Aligned groups evicted as one object, and their table (`folio.rs`).
    pub folio: crate::group_table::Folios,
    /// The readahead's cache of clean copies (`readahead.rs`).
    pub readahead: crate::readahead_cache::Readahead,
    /// The inactive list (`inactive_list.rs`), under a policy that keeps one.
    pub inactive: Option<crate::inactive_list::Inactive>,
}

/// Runs `f` on the recorder, if there is one, and shows what it has written in the stats.
pub fn record(r: &mut Option<Recorder>, f: impl FnOnce(&mut Recorder)) {
    if let Some(r) = r {
        f(r);
        let w = stats();
        w.set(Field::RecordedOps, r.written);
        w.set(Field::RecordErrno, r.errno as u64);
    }
}

pub struct Tier {
    pub uffd: Uffd,
    pub fd: i32,
    pub state: Locked<State>,
    /// Faults are being served (registered, pages seeded); false before, after stepping
    /// aside and in a forked child.
    pub active: AtomicBool,
    /// The policy watches writes: the reserve is registered for write-protect too and pages
    /// come in write-protected.
    pub protect: bool,
    /// The userfaultfd's features (a forked child opens its own with the same).
    pub features: Features,
    /// Wakes the handler from its sleep (`wakeup.rs`).
    pub wakeup: crate::wakeup::Wakeup,
}

pub static TIER: OnceLock<Tier> = OnceLock::new();

impl Tier {
    /// The state, for a program thread: what the pool allocates meanwhile (its per-thread
    /// data) comes from glibc, since the heap's lock may be held by this very thread; its
    /// signals are blocked while it holds the lock (`sys::signals_blocked`).
    pub fn with_state<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        sys::signals_blocked(|| self.state.with(|st| sys::as_tier(|| f(st))))
    }

    pub fn addr(&self, page: usize) -> usize {
        reserve::base() + page * PAGE
    }

    /// A page has come in: resident, last in the arrival order.
    pub fn arrive(&self, st: &mut State, page: usize) {
        let seq = st.pages.arrive(page);
        st.policy.arrived(page as u32, seq);
    }

    /// Fills the holes at `addr` with `data`, write-protected when the policy watches writes;
    /// `wake` wakes the threads waiting on them.
    pub fn copy_in(&self, addr: usize, data: &[u8], wake: bool) -> Result<(), UffdError> {
        if self.protect {
            self.uffd.copy_protected(addr, data, wake)
        } else {
            self.uffd.copy(addr, data, wake)
        }
    }

    /// Forgets what page `page` held (its object freed): it reads zeros from now on.
    fn forget(&self, st: &mut State, page: usize) {
        match st.pages.kind(page) {
            // Not written: a reservation's pages are mostly never touched, and their entries
            // take no memory until written.
            EMPTY => return,
            STORED => self.free_object(st, page),
            SAME => {
                st.pages.entry(page).handle.store(0, Ordering::Relaxed);
                stats().sub(Field::SameFilledPages, 1);
            }
            GROUP => self.leave_group(st, page),
            CACHED => {
                self.uncache(st, page);
                self.free_object(st, page);
            }
            INACTIVE => self.drop_inactive(st, page),
            _ => {}
        }
        st.pages.set(page, EMPTY);
    }

    /// Frees page `page`'s pool object.
    pub fn free_object(&self, st: &mut State, page: usize) {
        let e = st.pages.entry(page);
        if let Some(pool) = &st.pool {
            // SAFETY: the handle word is this entry's, at a fixed address in the tier's
            // memory, written only by the pool; it holds an object (kind STORED).
            let _ = unsafe { zsmalloc_core::Backend::free_raw(pool, &e.handle) };
            record(&mut st.record, |r| r.free(page));
            let w = stats();
            w.sub(Field::StoredPages, 1);
            w.sub(Field::CompressedBytes, e.len() as u64);
            w.set(Field::PoolPages, zsmalloc_core::Backend::total_pages(pool));
        }
        st.pool_full = false;
    }
}

/// Empties `[addr, addr + len)` of the reserve (page-aligned): the tier forgets its pages
/// (their objects freed) and the kernel drops them, so they read zeros.
pub fn drop_range(addr: usize, len: usize) {
    let empty = || {
        // SAFETY: pages of the reserve the program gave back (or asked to be emptied).
        unsafe { sys::madvise(addr, len, libc::MADV_DONTNEED) };
    };
    let Some(t) = TIER.get() else { return empty() };
    if IN_CHILD.load(Ordering::Relaxed) {
        return empty();
    }
    t.with_state(|st| {
        if t.active.load(Ordering::Acquire) {
            let first = (addr - reserve::base()) / PAGE;
            let end = (first + len / PAGE).min(reserve::high_water_pages());
            for page in first..end {
                t.forget(st, page);
            }
        }
        // With the lock held, so that no eviction moves a page between its entry's reset
        // and its drop.
        empty();
    });
}

/// Pages `[first, end)` of the reserve (handed out; the heap's lock held) take protection `f`
/// of theirs, with `kernel` (the system call that changes their areas, which must not fault)
/// made under the tier's lock, so that the handler never sees the two disagree
/// (`protection.rs`). Resident pages that may leave again arrive anew. `kernel`'s answer is
/// returned; on failure nothing is recorded.
pub fn reprotect(
    first: usize,
    end: usize,
    f: impl Fn(Prot) -> Prot,
    kernel: impl FnOnce() -> libc::c_int,
) -> libc::c_int {
    let end = end.min(reserve::reserve_len() / PAGE);
    let Some(t) = TIER.get().filter(|_| !IN_CHILD.load(Ordering::Relaxed)) else {
        let r = kernel();
        if r == 0 {
            protection::update(first, end, f);
        }
        return r;
    };
    let (r, over) = t.with_state(|st| {
        let r = kernel();
        if r != 0 {
            return (r, false);
        }
        if !t.active.load(Ordering::Acquire) {
            protection::update(first, end, f);
            return (0, false);
        }
        let State { pages, policy, .. } = st;
        pages.reprotect(first, end, f, |pages, page| {
            let seq = pages.arrive(page);
            policy.arrived(page as u32, seq);
        });
        (0, pages.over_budget())
    });
    // Pages that may leave again (unlocked, say) can put the budget over without a fault: the
    // handler, perhaps asleep, evicts them.
    if over {
        t.wakeup.ring();
    }
    r
}

/// The program maps something of its own with `MAP_FIXED` over its pages `[first, end)` of the
/// reserve (`kernel` makes the mapping, and answers as `mmap` does): under the tier's lock the
/// pages are forgotten (their objects freed; the kernel drops what was there), the mapping
/// made, and the pages marked foreign, so the handler never fills nor moves them.
pub fn map_foreign(first: usize, end: usize, kernel: impl FnOnce() -> usize) -> usize {
    let foreign = |p: Prot| p.with_foreign(true).with_lock(false);
    let Some(t) = TIER.get().filter(|_| !IN_CHILD.load(Ordering::Relaxed)) else {
        let r = kernel();
        if r != libc::MAP_FAILED as usize {
            protection::update(first, end, foreign);
        }
        return r;
    };
    t.with_state(|st| {
        if t.active.load(Ordering::Acquire) {
            for page in first..end {
                t.forget(st, page);
            }
        }
        let r = kernel();
        if r != libc::MAP_FAILED as usize {
            protection::update(first, end, foreign);
        }
        r
    })
}

/// Pages `[first, end)`, foreign (`map_foreign`), given back by the program: the reserve's own
/// mapping put back over them (fresh, plain) and registered again, under the tier's lock. 0,
/// or -1 with `errno` set.
pub fn give_back_foreign(first: usize, end: usize) -> libc::c_int {
    let (addr, len) = (reserve::base() + first * PAGE, (end - first) * PAGE);
    let remap = || {
        let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED;
        // SAFETY: the program's own mapping over part of the reserve, which it gave back; the
        // reserve's mapping is put back in its place.
        let p = unsafe { sys::mmap(addr, len, libc::PROT_READ | libc::PROT_WRITE, flags, -1, 0) };
        if p == libc::MAP_FAILED {
            return -1;
        }
        // SAFETY: the mapping just made, of the reserve's.
        unsafe { sys::madvise(addr, len, libc::MADV_NOHUGEPAGE) };
        protection::update(first, end, |_| Prot::PLAIN);
        0
    };
    let Some(t) = TIER.get().filter(|_| !IN_CHILD.load(Ordering::Relaxed)) else { return remap() };
    t.with_state(|_| {
        if remap() != 0 {
            return -1;
        }
        if t.active.load(Ordering::Acquire) {
            let modes = if t.protect {
                zsmalloc_tier::uffd::Modes::MISSING_AND_WP
            } else {
                zsmalloc_tier::uffd::Modes::MISSING
            };
            if let Err(e) = t.uffd.register(addr, len, modes) {
                fatal(&format!("part of the reserve given back could not be registered: {e}"));
            }
        }
        0
    })
}

/// Records why the tier stops and ends the program: it cannot give the program its data.
pub fn fatal(why: &str) -> ! {
    stats().set_state(TierState::Failed, why);
    let line = format!("zsmalloc tier: {why}; the program was stopped\n");
    // SAFETY: write(2) of a live buffer to stderr.
    unsafe { libc::write(2, line.as_ptr().cast(), line.len()) };
    // SAFETY: ends the process at once; no handler of the program runs on data it lost.
    unsafe { libc::_exit(2) }
}
