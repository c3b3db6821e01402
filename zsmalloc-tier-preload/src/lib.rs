//! The tier's preloaded library (`libzsmalloc_tier_preload.so`), which `zsmalloc tier` puts
//! under a program with `LD_PRELOAD`: the program's malloc family and anonymous private
//! mappings come from one reserve the tier registers with userfaultfd; pages above the
//! budget (`ZSMALLOC_TIER_BUDGET`, in pages) are evicted as the policy chooses them
//! (`ZSMALLOC_TIER_POLICY`: fifo, oldest first, when unset; clock; or lru, through an
//! inactive list: `inactive.rs`), compressed
//! (`ZSMALLOC_TIER_COMPRESSOR`: lz4, lzo or zstd; lz4 when unset) into a zsmalloc pool
//! (configured by the `ZSMALLOC_*` variables the core reads) and brought back on the next
//! touch. Its figures go to the file `ZSMALLOC_TIER_STATS` names. Loaded without a budget, it
//! is an allocator and nothing more. The process the command started stays tiered through
//! the programs it executes (`lineage.rs`); `ZSMALLOC_TIER_FOLLOW_CHILDREN=1` tiers its
//! forked children and their programs too (`children.rs`); `ZSMALLOC_TIER_USER_FAULTS_ONLY=1`
//! opens the userfaultfd for user-mode faults only (`user_faults.rs`).
//!
//! The tier's own memory never comes from the reserve: Rust's allocations here go to glibc's
//! allocator under its own names, and the handler thread's calls of the interposed functions
//! go to glibc and the kernel.

#![deny(clippy::undocumented_unsafe_blocks)]

mod batch;
mod children;
mod defer;
mod doorbell;
mod evict;
mod figures;
mod first_touch;
mod folio;
mod fork;
mod group_table;
mod handler;
mod handler_cpu;
mod heap;
mod inactive;
mod inactive_list;
mod interpose;
mod interpose_protection;
mod lineage;
mod modes;
mod own_fds;
mod page_codec;
mod page_table;
mod policy;
mod protection;
mod readahead;
mod readahead_cache;
mod record;
mod reserve;
mod serve;
mod spans;
mod start;
mod steps;
mod sys;
mod tier;
mod user_faults;
mod wakeup;

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::Ordering;

use zsmalloc_core::PoolConfig;
use zsmalloc_tier::folio::{FOLIO_VAR, MAX_READAHEAD, READAHEAD_VAR};
use zsmalloc_tier::launch::{
    BREAKDOWN_VAR, BUDGET_VAR, COMPRESSOR_VAR, FOLLOW_VAR, POLICY_VAR, RECORD_VAR, STATS_VAR,
    USER_FAULTS_VAR,
};
use zsmalloc_tier::policy::PolicyName;
use zsmalloc_tier::stats::State as TierState;

struct GlibcAlloc;

// SAFETY: glibc's allocator meets GlobalAlloc's contract: blocks of at least the size asked,
// aligned as asked (memalign above malloc's 16 bytes), freed by free.
unsafe impl GlobalAlloc for GlibcAlloc {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: as above.
        unsafe {
            if l.align() <= 16 {
                sys::__libc_malloc(l.size()).cast()
            } else {
                sys::__libc_memalign(l.align(), l.size()).cast()
            }
        }
    }
    unsafe fn dealloc(&self, p: *mut u8, _: Layout) {
        // SAFETY: a block of glibc's, from `alloc`.
        unsafe { sys::__libc_free(p.cast()) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, size: usize) -> *mut u8 {
        if l.align() <= 16 {
            // SAFETY: a block of glibc's, from `alloc`.
            return unsafe { sys::__libc_realloc(p.cast(), size).cast() };
        }
        // SAFETY: the default: a new block, the old bytes copied, the old freed.
        unsafe {
            let q = self.alloc(Layout::from_size_align_unchecked(size, l.align()));
            if !q.is_null() {
                std::ptr::copy_nonoverlapping(p, q, l.size().min(size));
                self.dealloc(p, l);
            }
            q
        }
    }
}

#[global_allocator]
static GLOBAL: GlibcAlloc = GlibcAlloc;

extern "C" fn start() {
    let budget = std::env::var(BUDGET_VAR).ok();
    let compressor = std::env::var(COMPRESSOR_VAR).ok();
    let stats = std::env::var(STATS_VAR).ok();
    let record = std::env::var(RECORD_VAR).ok();
    let folio = std::env::var(FOLIO_VAR).ok();
    let readahead = std::env::var(READAHEAD_VAR).ok();
    steps::init(std::env::var(BREAKDOWN_VAR).ok().as_deref());
    let policy = std::env::var(POLICY_VAR).ok();
    let set = |var| std::env::var(var).is_ok_and(|v| v == "1");
    modes::FOLLOW.store(set(FOLLOW_VAR), Ordering::Relaxed);
    modes::USER_FAULTS_ONLY.store(set(USER_FAULTS_VAR), Ordering::Relaxed);
    let Some(budget) = budget else {
        // Loaded by hand, without the command: an allocator, kept out of the programs below.
        if !modes::following() {
            lineage::strip_environment();
        }
        return;
    };
    // The started process (and the programs it executes) is tiered; another process only
    // with --follow-children, and it records nothing.
    let started = lineage::is_started_process();
    if !started && !modes::following() {
        if let Some(path) = &stats {
            figures::count_child_program(path);
        }
        lineage::strip_environment();
        return;
    }
    let record = record.filter(|_| started);
    // A process beyond the stats file's blocks runs untiered: the report names every tiered
    // one (and counts those).
    if stats.is_some_and(|path| !tier::map_stats(&path)) {
        return;
    }
    let refuse = |why: String| tier::stats().set_state(TierState::SteppedAside, &why);
    let Some(pages) = budget.trim().parse::<u64>().ok().filter(|&p| p > 0) else {
        return refuse(format!("{BUDGET_VAR} '{budget}' is not a page count above 0"));
    };
    let compressor = match page_codec::compressor(compressor.as_deref()) {
        Ok(c) => c,
        Err(why) => return refuse(why),
    };
    let Some(unit) = unit(folio.as_deref(), readahead.as_deref()) else {
        return refuse(format!(
            "{FOLIO_VAR} (1, 4 or 16) or {READAHEAD_VAR} (0..={MAX_READAHEAD}, 0 with folios) \
             is not accepted"
        ));
    };
    // Unset: the default, as for a library loaded without the command.
    let policy = match policy.as_deref().map(PolicyName::parse).transpose() {
        Ok(p) => p.unwrap_or_default(),
        Err(why) => return refuse(format!("{POLICY_VAR}: {why}")),
    };
    let config = match PoolConfig::from_lookup(|name| std::env::var(name).ok()) {
        Ok(c) => c,
        Err(e) => return refuse(format!("the pool's configuration: {e}")),
    };
    // The command sets the band a folio needs; a variable set by hand may not have.
    if unit.folio_pages * sys::PAGE > config.max_object_size() as usize {
        return refuse(format!(
            "{FOLIO_VAR} {} needs a pool that stores objects of {} bytes (ZSMALLOC_MULTI_PAGE_SIZE)",
            unit.folio_pages,
            unit.folio_pages * sys::PAGE
        ));
    }
    let mut record = record.map(|path| start::open_record(&path, &config));
    // A record that could not begin is reported; the program is tiered all the same.
    tier::record(&mut record, |_| {});
    // The reserve exists before the handler registers it (the first malloc usually made it).
    if heap::HEAP.with(|h| h.alloc(1, 16)).map(|(p, _)| heap::HEAP.with(|h| h.free(p))).is_none() {
        return refuse("the reserve of address space could not be made".into());
    }
    fork::install();
    if let Err(why) = sys::as_tier(|| start::start(pages, config, compressor, policy, record, unit))
    {
        refuse(why);
    }
}

/// The eviction unit and readahead the variables name (unset: a page, none), if accepted.
fn unit(folio: Option<&str>, readahead: Option<&str>) -> Option<start::Unit> {
    let folio_pages = folio.map_or(Some(1), |v| v.trim().parse::<usize>().ok())?;
    let readahead = readahead.map_or(Some(0), |v| v.trim().parse::<u32>().ok())?;
    let fits = matches!(folio_pages, 1 | 4 | 16)
        && readahead <= MAX_READAHEAD
        && (readahead == 0 || folio_pages == 1);
    fits.then_some(start::Unit { folio_pages, readahead })
}

#[used]
#[link_section = ".init_array"]
static START: extern "C" fn() = start;

/// At the program's exit (`exit`, or the end of `main`): the record's last lines written, the
/// handler's time and the program's name stored.
extern "C" fn finish() {
    figures::at_exit();
    handler_cpu::at_exit();
    if let Some(t) = tier::TIER.get().filter(|_| !tier::IN_CHILD.load(Ordering::Relaxed)) {
        t.with_state(|st| tier::record(&mut st.record, record::Recorder::at_exit));
    }
}

#[used]
#[link_section = ".fini_array"]
static FINISH: extern "C" fn() = finish;
