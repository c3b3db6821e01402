//! One trace, many pools: the trace is read and decoded once, its handle ids resolved once
//! ([`crate::workload::trace_slots`]), and each operation then drives the pool of every
//! configuration.
//!
//! ```no_run
//! use std::path::Path;
//! use zsmalloc_lab::config::ConfigSpec;
//! use zsmalloc_lab::{progress::ProgressSink, runner::RunOptions, replay_many::replay_many};
//! let base = ConfigSpec::default();
//! let specs: Vec<ConfigSpec> = ["classic", "heuristic", "backend=zblock"]
//!     .iter()
//!     .map(|s| ConfigSpec::with_overrides(&base, s).unwrap())
//!     .collect();
//! let runs = replay_many(Path::new("t.trace"), &specs, &RunOptions::default(),
//!     &ProgressSink::silent()).unwrap();
//! assert_eq!(runs.len(), 3);
//! ```
//!
//! [`replay_many`] returns one [`RunResult`] per configuration, in the order of `specs`, each
//! the one [`crate::runner::run_one`] gives for that configuration alone: the same operations
//! reach each pool in the same order, through a driver of its own (its own handle words,
//! contents, counters, peak and timeline). What it takes:
//!
//! - `trace`: a trace file of either form (docs/TRACE_FORMAT.md); `-` reads standard input;
//! - `specs`: the configurations, at least one;
//! - `opts`: as for `run_one`, untimed (`timing: false`: times are not taken, as the pools take
//!   turns on the threads); `record`, when given, is written by the first configuration's run;
//! - `sink`: where each configuration's progress bar goes ([`ProgressSink::silent`]: nowhere).
//!
//! The pools run on every core ([`replay_many_jobs`] takes a number of threads: 1 runs all the
//! pools on one thread, batch by batch; a pool of the malloc backend always has a thread of its
//! own, see [`lanes`]). The memory plan counts every pool, since they
//! are all alive at once, and refuses before anything is allocated (exit 2).

use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;
use std::time::Duration;

use crate::config::ConfigSpec;
use crate::driver::{Driver, RunPhase};
use crate::error::{LabError, LabResult};
use crate::progress::ProgressSink;
use crate::result::RunResult;
use crate::runner::{check_memory, new_driver, open_pool, result_of, RunOptions};
use crate::workload::trace::Trace;
use crate::workload::trace_slots::{apply, SlotOp, SlotResolver};
use crate::workload::{Extra, Workload};
use zsmalloc_core::{AnyPool, BackendKind};

/// Operations decoded before the pools run them: large enough that a pool's working set is
/// warm over many operations when the pools share a thread, small enough to stay in cache.
const BATCH_OPS: usize = 4096;

/// Batches decoded ahead of the slowest thread.
const BATCHES_AHEAD: usize = 4;

/// Every configuration's run of the trace at `trace`, decoded once, on every core (module doc).
pub fn replay_many(
    trace: &Path,
    specs: &[ConfigSpec],
    opts: &RunOptions,
    sink: &ProgressSink,
) -> LabResult<Vec<RunResult>> {
    let jobs = crate::runner::jobs(None, specs.len());
    replay_many_jobs(&Workload::Trace(Trace::new(trace)), specs, opts, jobs, sink)
}

/// [`replay_many`] of a trace workload (its seed, its input already opened) on `jobs` threads.
pub fn replay_many_jobs(
    workload: &Workload,
    specs: &[ConfigSpec],
    opts: &RunOptions,
    jobs: usize,
    sink: &ProgressSink,
) -> LabResult<Vec<RunResult>> {
    let Workload::Trace(trace) = workload else {
        return Err(LabError::usage("replaying on several pools at once needs a trace"));
    };
    if specs.is_empty() {
        return Err(LabError::usage("a replay needs at least one configuration"));
    }
    if opts.timing {
        return Err(LabError::usage(
            "a replay on several pools at once is not timed: the pools share the threads",
        ));
    }
    for s in specs {
        workload.check(s.pool_config()?.page_size as usize)?;
    }
    // Every pool is alive at once, whatever the threads.
    check_memory(workload, specs, specs.len(), opts)?;
    let input = trace.input()?;
    let mut reader = input.reader()?;
    let mut resolver = SlotResolver::new(&trace.file.display().to_string());
    let mut decode = move || -> LabResult<Option<Vec<SlotOp>>> {
        let mut batch = Vec::with_capacity(BATCH_OPS);
        while batch.len() < BATCH_OPS {
            match reader.next_op()? {
                Some(op) => batch.push(resolver.resolve(op)?),
                None => break,
            }
        }
        Ok((!batch.is_empty()).then_some(batch))
    };
    let lanes = lanes(specs, jobs);
    let run = Run { workload, specs, opts, sink };
    if let [only] = lanes.as_slice() {
        let mut failed = None;
        let batches = std::iter::from_fn(|| match decode() {
            Ok(b) => b,
            Err(e) => {
                failed = Some(e);
                None
            }
        });
        let results = run.lane(only, batches);
        if let Some(e) = failed {
            return Err(e);
        }
        return in_order(results, specs.len());
    }
    let (results, decoded) = std::thread::scope(|scope| {
        let mut senders = Vec::with_capacity(lanes.len());
        let mut threads = Vec::with_capacity(lanes.len());
        for mine in &lanes {
            let (tx, rx) = sync_channel::<Arc<[SlotOp]>>(BATCHES_AHEAD);
            let run = &run;
            threads.push(scope.spawn(move || run.lane(mine, received(rx))));
            senders.push(tx);
        }
        let decoded = loop {
            match decode() {
                Ok(Some(batch)) => {
                    let batch: Arc<[SlotOp]> = Arc::from(batch);
                    // A lane whose runs all failed has hung up: the others go on.
                    senders.retain(|tx| tx.send(Arc::clone(&batch)).is_ok());
                    if senders.is_empty() {
                        break Ok(());
                    }
                }
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            }
        };
        drop(senders);
        let mut results = Vec::with_capacity(specs.len());
        for t in threads {
            match t.join() {
                Ok(r) => results.extend(r),
                Err(_) => return (Err(LabError::runtime("a replay thread panicked")), decoded),
            }
        }
        (Ok(results), decoded)
    });
    decoded?;
    in_order(results?, specs.len())
}

/// The configurations each thread runs (indices into `specs`): the others spread over `jobs`
/// threads, and each configuration of the malloc backend on a thread of its own. Its pages are
/// what the C library's `malloc_usable_size` says of its objects, and that depends on every
/// allocation and free the thread's malloc arena saw before: interleaved with another pool's
/// objects, a few objects get a chunk rounded otherwise than in a replay of their own.
fn lanes(specs: &[ConfigSpec], jobs: usize) -> Vec<Vec<usize>> {
    let alone = |i: &usize| specs[*i].config.backend == BackendKind::Malloc;
    let (mallocs, shared): (Vec<usize>, Vec<usize>) = (0..specs.len()).partition(alone);
    let n = jobs.clamp(1, shared.len().max(1));
    let mut lanes: Vec<Vec<usize>> = (0..n)
        .map(|lane| shared.iter().skip(lane).step_by(n).copied().collect())
        .filter(|l: &Vec<usize>| !l.is_empty())
        .collect();
    lanes.extend(mallocs.into_iter().map(|i| vec![i]));
    lanes
}

/// The batches a lane's thread receives, until the decoder is done.
fn received(rx: Receiver<Arc<[SlotOp]>>) -> impl Iterator<Item = Arc<[SlotOp]>> {
    std::iter::from_fn(move || rx.recv().ok())
}

/// The results in configuration order, or the first configuration's error.
fn in_order(
    mut results: Vec<(usize, LabResult<RunResult>)>,
    n: usize,
) -> LabResult<Vec<RunResult>> {
    results.sort_by_key(|(i, _)| *i);
    if results.len() != n {
        return Err(LabError::runtime("a configuration did not run"));
    }
    results.into_iter().map(|(_, r)| r).collect()
}

/// What every lane shares.
struct Run<'a> {
    workload: &'a Workload,
    specs: &'a [ConfigSpec],
    opts: &'a RunOptions,
    sink: &'a ProgressSink,
}

impl Run<'_> {
    /// The runs of the configurations `mine` (indices into `specs`), fed by `batches`; a run
    /// that fails stops there, the others go on. Pools are made on the lane's own thread.
    fn lane<B>(&self, mine: &[usize], batches: impl Iterator<Item = B>) -> LabResultsOf
    where
        B: std::ops::Deref<Target = [SlotOp]>,
    {
        let pools: Vec<LabResult<AnyPool>> =
            mine.iter().map(|&i| open_pool(self.workload, &self.specs[i], self.opts)).collect();
        let mut drivers: Vec<LabResult<Driver<'_>>> = mine
            .iter()
            .zip(&pools)
            .map(|(&i, pool)| {
                let pool = pool.as_ref().map_err(Clone::clone)?;
                let spec = &self.specs[i];
                let mut d = new_driver(
                    pool,
                    self.workload,
                    spec,
                    self.opts,
                    self.sink,
                    &spec.label,
                    i == 0,
                )?;
                d.phase(RunPhase::Replay)?;
                Ok(d)
            })
            .collect();
        for batch in batches {
            let mut live = 0;
            for d in &mut drivers {
                let Ok(driver) = d else { continue };
                if let Err(e) = batch.iter().try_for_each(|op| apply(driver, op)) {
                    *d = Err(e);
                    continue;
                }
                live += 1;
            }
            if live == 0 {
                break;
            }
        }
        mine.iter()
            .zip(drivers)
            .zip(&pools)
            .map(|((&i, d), pool)| {
                let r = d.and_then(|d| {
                    let pool = pool.as_ref().map_err(Clone::clone)?;
                    let outcome = d.finish()?;
                    let (spec, wall) = (&self.specs[i], Duration::ZERO);
                    result_of(self.workload, spec, self.opts, pool, outcome, Extra::default(), wall)
                });
                (i, r)
            })
            .collect()
    }
}

type LabResultsOf = Vec<(usize, LabResult<RunResult>)>;
