//! The optimizer's benchmark (run by `scripts/bench-optimize.sh`): the exact chain frontier of a
//! fixed layout on a workload of about a million objects, timed, against the naive sweep (one
//! run per class and chain) on the same machine in the same run.
//!
//! The naive sweep needs well over a thousand runs of the whole workload; running them all
//! would take the better part of an hour, so a sample of its candidates (spread over the
//! classes) is run and timed, and the whole is their mean time per run times the candidates.
//! The sampled runs' options are also checked against the chain sweep's: the same figures.
//!
//! Usage: `bench_optimize [OBJECTS_PER_SIZE] [NAIVE_SAMPLE] [JOBS]` (defaults 3937, 64, every
//! core): kernel-test 32..=4080 step 16, so 254 sizes x 3937 = 999,998 objects.

use std::time::Instant;

use zsmalloc_core::PoolConfig;
use zsmalloc_lab::optimize::evaluate::evaluate_all;
use zsmalloc_lab::optimize::frontier::frontier;
use zsmalloc_lab::optimize::layout::Layout;
use zsmalloc_lab::optimize::naive::{candidate_spec, candidates, measured_option};
use zsmalloc_lab::optimize::sweep::run_sweep;
use zsmalloc_lab::progress::ProgressSink;
use zsmalloc_lab::workload::kernel_test::KernelTest;
use zsmalloc_lab::workload::Workload;

/// CPU seconds of this process so far, every thread, user and system: on a shared machine the
/// wall clock also counts other programs' time.
fn cpu_s() -> f64 {
    let mut u = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes one rusage into the pointer it is given.
    let r = unsafe { libc::getrusage(libc::RUSAGE_SELF, u.as_mut_ptr()) };
    if r != 0 {
        return 0.0;
    }
    // SAFETY: getrusage succeeded and filled the struct.
    let u = unsafe { u.assume_init() };
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    s(u.ru_utime) + s(u.ru_stime)
}

fn arg(i: usize, default: usize) -> usize {
    std::env::args().nth(i).and_then(|a| a.parse().ok()).unwrap_or(default)
}

fn main() {
    let n = arg(1, 3937);
    let sample = arg(2, 64).max(1);
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let jobs = arg(3, cores).max(1);
    let w = Workload::KernelTest(KernelTest { lo: 32, hi: 4080, step: 16, n, seed: 1 });
    let base = PoolConfig::default();
    let layout = Layout::of_config(&base).expect("mainline's layout");
    let sink = ProgressSink::silent();
    let objects = ((4080 - 32) / 16 + 1) * n;
    println!(
        "workload: kernel-test n={n} ({objects} objects), page 4096, {jobs} jobs on {cores} cores"
    );

    let (t, c0) = (Instant::now(), cpu_s());
    let sweep = run_sweep(&w, &layout, &base, jobs, &sink).expect("the chain sweep");
    let sweep_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let points = frontier(&sweep.options);
    let merge_s = t.elapsed().as_secs_f64();
    let exact_s = sweep_s + merge_s;
    let exact_cpu = cpu_s() - c0;
    println!(
        "exact chain frontier: {} points over {} classes ({} searched): sweep 16 runs {sweep_s:.1} s, merge {merge_s:.3} s, total {exact_s:.1} s wall, {exact_cpu:.1} s CPU",
        points.len(),
        layout.sizes().len(),
        layout.searched()
    );

    let all = candidates(&layout);
    let step = (all.len() / sample).max(1);
    let picked: Vec<_> = all.iter().copied().step_by(step).take(sample).collect();
    let specs: Vec<_> = picked
        .iter()
        .map(|&c| candidate_spec(&layout, &base, c).expect("a candidate's table"))
        .collect();
    let (t, c0) = (Instant::now(), cpu_s());
    let runs = evaluate_all(&w, &specs, jobs, &sink, "naive").expect("the naive sample");
    let sample_s = t.elapsed().as_secs_f64();
    let sample_cpu = cpu_s() - c0;
    for ((c, run), k) in picked.iter().zip(&runs).zip(0..) {
        let class = c.class.unwrap_or(k % layout.sizes().len());
        let o = measured_option(*c, run, class).expect("an option");
        assert!(
            sweep.options[class].contains(&o),
            "the naive run {k} measured {o:?} for class {}, the sweep did not",
            layout.sizes()[class]
        );
    }
    let per_run = sample_s / picked.len() as f64;
    let naive_s = per_run * all.len() as f64;
    let naive_cpu = sample_cpu / picked.len() as f64 * all.len() as f64;
    println!(
        "naive sweep: {} runs (one per class and chain); {} of them run in {sample_s:.1} s wall, {sample_cpu:.1} s CPU ({per_run:.2} s wall per run at {jobs} at a time); all: {naive_s:.0} s wall, {naive_cpu:.0} s CPU",
        all.len(),
        picked.len()
    );
    println!(
        "speed-up of the exact frontier over the naive sweep: {:.0}x wall, {:.0}x CPU",
        naive_s / exact_s,
        naive_cpu / exact_cpu
    );
}
