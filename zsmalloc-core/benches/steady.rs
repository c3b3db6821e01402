//! Criterion benchmarks of the steady-state store+free step and the read section, each
//! against its `malloc` baseline on the identical precomputed sequence.
//!
//! Groups (results in `target/criterion/<group>/<function>/<N>/new/estimates.json`):
//! - `steady/{pool_safe,pool_raw,malloc}/N`: one step = free a random victim + store a new object
//!   (safe layer: drop the `Handle`, `pool.store`; raw layer: `free_raw` + `store_raw`; baseline:
//!   `free` + `malloc` + `memcpy`).
//! - `steady/malloc_locked/N`: the baseline step plus the locked instructions any step needs
//!   (class lock pairs, header and handle-word CAS): the floor of a step (`LockedModel`).
//! - `read/{pool_safe,pool_raw,pool_read_into,malloc}/N`: one non-spanning object, random order,
//!   read section + copying its bytes out vs. `memcpy` out of a `malloc`'d block of that size.
//! - `read/{spanning_pool_safe,spanning_malloc}/N`: the same for spanning objects (information).
//!
//! Times are this thread's CPU time by default (the machine is shared; time other processes take
//! from the benchmark thread is not counted); `ZS_BENCH_CLOCK=wall` measures wall time instead.
//! `ZS_BENCH_N=10000,100000` restricts the N (default 10^4, 10^5, 10^6). Run through
//! `scripts/bench.sh`, which also prints the ratio table.

mod common;

use std::cell::OnceCell;
use std::time::{Duration, Instant};

use common::{LockedModel, MallocModel, Model, RawModel, RegisteredModel, SafeModel, Workload};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use zsmalloc_core::Pool;

fn ns() -> Vec<usize> {
    match std::env::var("ZS_BENCH_N") {
        Ok(v) if !v.trim().is_empty() => {
            v.split(',').map(|s| s.trim().parse().expect("ZS_BENCH_N: comma-separated N")).collect()
        }
        _ => common::NS.to_vec(),
    }
}

/// The clock of every measurement: this thread's CPU time (`ZS_BENCH_CLOCK=cpu`, the default),
/// so that time the machine's other users take from this thread is not counted, or wall time
/// (`ZS_BENCH_CLOCK=wall`). Pool and baseline are always timed with the same clock.
#[derive(Clone, Copy)]
enum Clock {
    Cpu,
    Wall(Instant),
}

impl Clock {
    fn start() -> (Clock, Duration) {
        match std::env::var("ZS_BENCH_CLOCK").as_deref() {
            Ok("wall") => (Clock::Wall(Instant::now()), Duration::ZERO),
            _ => (Clock::Cpu, thread_cpu_time()),
        }
    }

    fn elapsed(self, cpu_start: Duration) -> Duration {
        match self {
            Clock::Wall(t) => t.elapsed(),
            Clock::Cpu => thread_cpu_time().saturating_sub(cpu_start),
        }
    }
}

fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_THREAD_CPUTIME_ID needs nothing else.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Times `f` with the chosen clock.
fn timed(f: impl FnOnce()) -> Duration {
    let (clock, start) = Clock::start();
    f();
    clock.elapsed(start)
}

/// Times `iters` steps of a model, continuing its sequence across calls (the live set stays N).
fn time_steps(m: &mut impl Model, w: &Workload, at: &mut usize, iters: u64) -> Duration {
    timed(|| m.run(w, at, iters))
}

fn steady(c: &mut Criterion) {
    let mut g = c.benchmark_group("steady");
    g.throughput(Throughput::Elements(1));
    for n in ns() {
        let w = Workload::new(n, common::STEPS);
        {
            let pool: OnceCell<Pool> = OnceCell::new();
            let mut model: Option<SafeModel<'_>> = None;
            let mut at = 0;
            g.bench_function(BenchmarkId::new("pool_safe", n), |b| {
                let m = model.get_or_insert_with(|| {
                    let m = SafeModel::fill(pool.get_or_init(common::pool), &w);
                    common::verify_safe(&m, &w, 1000);
                    m
                });
                b.iter_custom(|iters| time_steps(m, &w, &mut at, iters));
            });
            if let Some(m) = &model {
                common::verify_safe(m, &w, 1000);
            }
            drop(model);
        }
        {
            let pool: OnceCell<Pool> = OnceCell::new();
            let mut model: Option<RawModel<'_>> = None;
            let mut at = 0;
            g.bench_function(BenchmarkId::new("pool_raw", n), |b| {
                let m =
                    model.get_or_insert_with(|| RawModel::fill(pool.get_or_init(common::pool), &w));
                b.iter_custom(|iters| time_steps(m, &w, &mut at, iters));
            });
            drop(model);
        }
        {
            let mut model: Option<MallocModel> = None;
            let mut at = 0;
            g.bench_function(BenchmarkId::new("malloc", n), |b| {
                let m = model.get_or_insert_with(|| MallocModel::fill(&w));
                b.iter_custom(|iters| time_steps(m, &w, &mut at, iters));
            });
            drop(model);
        }
        {
            let mut model: Option<LockedModel> = None;
            let mut at = 0;
            g.bench_function(BenchmarkId::new("malloc_locked", n), |b| {
                let m = model.get_or_insert_with(|| LockedModel::fill(&w));
                b.iter_custom(|iters| time_steps(m, &w, &mut at, iters));
            });
            drop(model);
        }
    }
    g.finish();
}

/// Read orders of one N: non-spanning and spanning objects, each in a random order. Placement is
/// deterministic, so a pool filled from the same workload has the same spanning objects.
struct Orders {
    plain: Vec<u32>,
    spanning: Vec<u32>,
}

impl Orders {
    fn of(m: &SafeModel<'_>, w: &Workload) -> Self {
        let flags = common::spanning_flags(m);
        Orders { plain: w.read_order(|i| !flags[i]), spanning: w.read_order(|i| flags[i]) }
    }
}

fn read(c: &mut Criterion) {
    let mut g = c.benchmark_group("read");
    g.throughput(Throughput::Elements(1));
    let (mut local, mut out) = common::read_buffers();
    for n in ns() {
        let w = Workload::new(n, 0);
        let orders: OnceCell<Orders> = OnceCell::new();
        {
            let pool: OnceCell<Pool> = OnceCell::new();
            let safe: OnceCell<SafeModel<'_>> = OnceCell::new();
            let model = || {
                safe.get_or_init(|| {
                    let m = SafeModel::fill(pool.get_or_init(common::pool), &w);
                    common::verify_safe(&m, &w, 1000);
                    orders.get_or_init(|| Orders::of(&m, &w));
                    m
                })
            };
            let mut at = 0;
            g.bench_function(BenchmarkId::new("pool_safe", n), |b| {
                let m = model();
                let order = &orders.get().expect("orders").plain;
                b.iter_custom(|iters| {
                    timed(|| common::read_safe(m, order, &mut at, iters, &mut local, &mut out))
                });
            });
            let mut at = 0;
            g.bench_function(BenchmarkId::new("pool_read_into", n), |b| {
                let m = model();
                let order = &orders.get().expect("orders").plain;
                b.iter_custom(|iters| {
                    timed(|| common::read_into(m, order, &mut at, iters, &mut out))
                });
            });
            let mut at = 0;
            g.bench_function(BenchmarkId::new("spanning_pool_safe", n), |b| {
                let m = model();
                let order = &orders.get().expect("orders").spanning;
                b.iter_custom(|iters| {
                    timed(|| common::read_safe(m, order, &mut at, iters, &mut local, &mut out))
                });
            });
            drop(safe);
        }
        // Orders for the raw layer and the baseline, if no safe-layer benchmark made them.
        let orders = || {
            orders.get_or_init(|| {
                let pool = common::pool();
                let m = SafeModel::fill(&pool, &w);
                Orders::of(&m, &w)
            })
        };
        {
            let pool: OnceCell<Pool> = OnceCell::new();
            let mut model: Option<RawModel<'_>> = None;
            let mut at = 0;
            g.bench_function(BenchmarkId::new("pool_raw", n), |b| {
                let order = &orders().plain;
                let m =
                    model.get_or_insert_with(|| RawModel::fill(pool.get_or_init(common::pool), &w));
                b.iter_custom(|iters| {
                    timed(|| common::read_raw(m, order, &mut at, iters, &mut local, &mut out))
                });
            });
            drop(model);
        }
        {
            let base: OnceCell<MallocModel> = OnceCell::new();
            let mut at = 0;
            g.bench_function(BenchmarkId::new("malloc", n), |b| {
                let order = &orders().plain;
                let m = base.get_or_init(|| MallocModel::fill(&w));
                b.iter_custom(|iters| {
                    timed(|| common::read_malloc(m, order, &mut at, iters, &mut out))
                });
            });
            let mut at = 0;
            let floor: OnceCell<RegisteredModel> = OnceCell::new();
            g.bench_function(BenchmarkId::new("malloc_registered", n), |b| {
                let order = &orders().plain;
                let m = floor.get_or_init(|| RegisteredModel::fill(&w));
                b.iter_custom(|iters| {
                    timed(|| common::read_registered(m, order, &mut at, iters, &mut out))
                });
            });
            drop(floor);
            let mut at = 0;
            g.bench_function(BenchmarkId::new("spanning_malloc", n), |b| {
                let order = &orders().spanning;
                let m = base.get_or_init(|| MallocModel::fill(&w));
                b.iter_custom(|iters| {
                    timed(|| common::read_malloc(m, order, &mut at, iters, &mut out))
                });
            });
        }
    }
    g.finish();
}

criterion_group!(benches, steady, read);
criterion_main!(benches);
