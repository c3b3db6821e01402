//! Memory outside the pages: a counting global allocator measures the heap bytes a pool
//! allocates besides its pages, for N = 10^6 objects of the §10 size distribution, as a share of
//! the pool's bytes (total_pages x page_size). Target: at most 2%.
//!
//! Two runs on the identical sequence:
//! - raw layer: handle words are the caller's (allocated before the pool), so the heap delta is
//!   the pool's own metadata (zspage table, classes, arena bookkeeping, counters);
//! - safe layer: the delta also holds the pool-owned handle slots, reported separately (the
//!   caller's `Vec` of `Handle`s is allocated beforehand and not counted).
//!
//! Each is measured after the fill and again after N steady-state steps. `pool.metadata_bytes()`
//! is printed beside the measurement. The `malloc` baseline's own overhead (glibc `mallinfo2`)
//! is printed for context. `ZS_OVERHEAD_N` overrides N. Output ends with machine-readable
//! `overhead:` lines that `scripts/bench.sh` picks up.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use common::{MallocModel, Model, RawModel, SafeModel, Workload};
use zsmalloc_core::Pool;

/// `System` plus counters of live heap bytes and allocations.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static CALLS: AtomicUsize = AtomicUsize::new(0);

/// Allocations of at least `BIG_MIN` bytes, recorded (up to `BIG.len()`) to show where the bytes go.
const BIG_MIN: usize = 1 << 20;
static BIG: [AtomicUsize; 64] = [const { AtomicUsize::new(0) }; 64];
static BIG_COUNT: AtomicUsize = AtomicUsize::new(0);

fn grow(n: usize) {
    let now = LIVE.fetch_add(n, Relaxed) + n;
    PEAK.fetch_max(now, Relaxed);
    CALLS.fetch_add(1, Relaxed);
    if n >= BIG_MIN {
        let i = BIG_COUNT.fetch_add(1, Relaxed);
        if let Some(slot) = BIG.get(i) {
            slot.store(n, Relaxed);
        }
    }
}

/// Sizes of the big allocations recorded since the last call (then forgets them).
fn take_big() -> Vec<usize> {
    let n = BIG_COUNT.swap(0, Relaxed).min(BIG.len());
    BIG[..n].iter().map(|s| s.load(Relaxed)).collect()
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged (so `System`'s
// guarantees are ours) and only updates counters besides.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded contract of `GlobalAlloc::alloc`.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grow(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded contract of `GlobalAlloc::alloc_zeroed`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grow(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded contract of `GlobalAlloc::dealloc`.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded contract of `GlobalAlloc::realloc`.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Relaxed);
            grow(new_size);
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn live() -> usize {
    LIVE.load(Relaxed)
}

fn pct(part: usize, whole: usize) -> f64 {
    100.0 * part as f64 / whole.max(1) as f64
}

fn mib(b: usize) -> f64 {
    b as f64 / (1024.0 * 1024.0)
}

/// One measurement point of a pool.
struct Point {
    heap: usize,
    peak: usize,
    pool_bytes: usize,
    meta: (usize, usize),
    cached_pages: u64,
}

impl Point {
    fn take(pool: &Pool, before: usize) -> Self {
        let s = pool.stats();
        Point {
            heap: live() - before,
            peak: PEAK.load(Relaxed) - before,
            pool_bytes: (pool.total_pages() * u64::from(pool.config().page_size)) as usize,
            meta: pool.metadata_bytes(),
            cached_pages: s.pages_cached,
        }
    }

    fn print(&self, layer: &str, when: &str) {
        println!(
            "  {layer:<4} {when:<12} pool bytes {:>9.1} MiB | heap outside pages {:>10} B = {:>6.3}% \
             (peak {:>10} B = {:.3}%) | metadata_bytes() = ({}, {}) | pages_cached {}",
            mib(self.pool_bytes),
            self.heap,
            pct(self.heap, self.pool_bytes),
            self.peak,
            pct(self.peak, self.pool_bytes),
            self.meta.0,
            self.meta.1,
            self.cached_pages,
        );
    }
}

fn main() {
    let n: usize =
        std::env::var("ZS_OVERHEAD_N").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
    let w = Workload::new(n, n);
    println!(
        "memory outside the pages: N = {n}, sizes normal(694, 474) clipped 1..=4096, {} steps after fill",
        n
    );
    println!("  size_of::<Pool>() = {} B (inline, not heap)", std::mem::size_of::<Pool>());

    // Raw layer: the caller's handle words exist before the pool does.
    let raw = {
        let words_bytes = n * std::mem::size_of::<usize>();
        let before = live();
        PEAK.store(before, Relaxed);
        let pool = common::pool();
        let created = live() - before;
        // The model allocates the caller's words and length copies; count them out.
        take_big();
        let mut m = RawModel::fill(&pool, &w);
        let caller = words_bytes + m.lens.capacity() * 4;
        let fill = Point::take(&pool, before + caller);
        let big_fill = take_big();
        let calls = CALLS.load(Relaxed);
        let mut at = 0;
        m.run(&w, &mut at, n as u64);
        let churn = Point::take(&pool, before + caller);
        let calls = CALLS.load(Relaxed) - calls;
        let big_steps = take_big();
        println!("  raw  at creation: {created} B heap");
        fill.print("raw", "after fill");
        churn.print("raw", "after steps");
        println!(
            "  raw  allocations >= 1 MiB: fill {big_fill:?} (incl. the caller's words and lengths), steps {big_steps:?}; \
             heap allocations during the {n} steps: {calls}"
        );
        drop(m);
        (fill, churn)
    };

    // Safe layer: the caller's Vec<Option<Handle>> and lengths are allocated by `fill` too; count
    // them out exactly as the raw layer's words.
    let safe = {
        let before = live();
        PEAK.store(before, Relaxed);
        let pool = common::pool();
        take_big();
        let mut m = SafeModel::fill(&pool, &w);
        let caller = m.handles.capacity()
            * std::mem::size_of::<Option<zsmalloc_core::Handle<&Pool>>>()
            + m.lens.capacity() * 4;
        let fill = Point::take(&pool, before + caller);
        let big_fill = take_big();
        let mut at = 0;
        m.run(&w, &mut at, n as u64);
        let churn = Point::take(&pool, before + caller);
        let big_steps = take_big();
        fill.print("safe", "after fill");
        churn.print("safe", "after steps");
        println!(
            "  safe allocations >= 1 MiB: fill {big_fill:?} (incl. the caller's handles and lengths), steps {big_steps:?}"
        );
        drop(m);
        (fill, churn)
    };

    // The safe layer's slots: measured (safe - raw heap) and as the pool reports them.
    let slots_fill = safe.0.heap as isize - raw.0.heap as isize;
    let slots_churn = safe.1.heap as isize - raw.1.heap as isize;
    println!(
        "  safe-layer handle slots: measured {} B after fill ({:.3}%), {} B after steps; \
         metadata_bytes().1 = {} B",
        slots_fill,
        pct(slots_fill.max(0) as usize, safe.0.pool_bytes),
        slots_churn,
        safe.0.meta.1
    );

    // Context: what glibc malloc needs for the same objects (baseline of §10).
    let requested: usize = w.initial.iter().map(|&s| s as usize).sum();
    // SAFETY: mallinfo2 only reads glibc's allocator statistics.
    let before = unsafe { libc::mallinfo2() };
    let base = MallocModel::fill(&w);
    // SAFETY: as above.
    let after = unsafe { libc::mallinfo2() };
    let used = (after.uordblks + after.hblkhd).saturating_sub(before.uordblks + before.hblkhd);
    let lists = base.ptrs.capacity() * 8 + base.lens.capacity() * 4;
    let used = used.saturating_sub(lists); // the model's own vectors go through malloc too
    println!(
        "  malloc baseline: {} B requested, {} B in use by glibc ({:.1}% over the payload); \
         pool pages: {} B ({:.1}% over the payload)",
        requested,
        used,
        pct(used - requested.min(used), requested),
        raw.0.pool_bytes,
        pct(raw.0.pool_bytes.saturating_sub(requested), requested)
    );
    drop(base);

    // Machine-readable lines for scripts/bench.sh.
    for (layer, (fill, churn)) in [("raw", &raw), ("safe", &safe)] {
        println!(
            "overhead: layer={layer} n={n} pool_bytes={} heap_fill={} pct_fill={:.3} heap_steps={} pct_steps={:.3} peak={} pct_peak={:.3}",
            fill.pool_bytes,
            fill.heap,
            pct(fill.heap, fill.pool_bytes),
            churn.heap,
            pct(churn.heap, churn.pool_bytes),
            churn.peak,
            pct(churn.peak, churn.pool_bytes),
        );
    }
    println!(
        "overhead: layer=slots n={n} heap_fill={slots_fill} pct_fill={:.3} reported={}",
        pct(slots_fill.max(0) as usize, safe.0.pool_bytes),
        safe.0.meta.1
    );
}
