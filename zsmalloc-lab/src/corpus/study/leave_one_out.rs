//! The optimizer's table learnt on every other trace and tested on this one (leave-one-out),
//! against mainline.
//!
//! A tiered program frees its pages as it exits, so a trace ends with an almost empty pool and
//! its end pages say nothing: the optimizer learns on each trace up to its peak of live bytes
//! (a prefix written to a temporary file), where the pool is at its fullest and the per-class
//! pages add up exactly, as the optimizer's sums need. The quick setting: the chain sweep over
//! mainline's class sizes (16 runs a trace), no boundary search. The learnt table is the
//! frontier's cheapest in spanning reads within mainline's pages on the other traces; it is
//! then run on the held-out trace, its prefix and the whole of it, beside mainline.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::replay::replay;
use super::{Corpus, Progress, StudyOptions};
use crate::config::ConfigSpec;
use crate::error::{LabError, LabResult};
use crate::optimize::evaluate::{with_table, Evaluation};
use crate::optimize::frontier::{frontier, ClassOption};
use crate::optimize::layout::Layout;
use crate::optimize::sweep::{option_matrix, predict, sweep_specs};
use crate::result::{delta_tenths_u64, delta_value};
use crate::trace_format::TraceOp;
use crate::trace_format::TraceReader;
use zsmalloc_core::PoolConfig;

/// One held-out trace.
#[derive(Debug, Clone, Serialize)]
pub struct LooRow {
    pub trace: String,
    /// Traces the table was learnt on.
    pub trained_on: usize,
    /// Classes whose chain the learnt table changes from mainline's.
    pub classes_changed: usize,
    /// At the trace's peak of live bytes (the prefix): mainline's pages and the learnt table's.
    pub classic_pages: u64,
    pub learnt_pages: u64,
    pub pages_vs_classic_pct: Option<f64>,
    /// Over the whole trace: the most pages the pool held.
    pub classic_pages_peak: u64,
    pub learnt_pages_peak: u64,
    pub peak_vs_classic_pct: Option<f64>,
    /// Spanning reads over the whole trace.
    pub classic_reads_spanning: u64,
    pub learnt_reads_spanning: u64,
    pub spanning_vs_classic_pct: Option<f64>,
    /// The fewest spanning reads of the prefix a table learnt on this trace itself gets within
    /// mainline's pages (in-sample: what leave-one-out gives up).
    pub own_best_reads_spanning_prefix: u64,
    pub learnt_reads_spanning_prefix: u64,
    /// Whether the learnt table measured on the prefix what the held-out trace's per-class
    /// figures predicted.
    pub predicted_exactly: bool,
}

#[derive(Debug, Clone, Serialize, Default)]
pub struct LeaveOneOut {
    pub rows: Vec<LooRow>,
    /// Why there are no rows, when there are none.
    pub note: Option<String>,
}

/// A trace's sweep: its prefix file and the options of every class.
struct Swept {
    name: String,
    prefix: PathBuf,
    whole: PathBuf,
    options: Vec<Vec<ClassOption>>,
}

pub fn study(corpus: &Corpus, opts: &StudyOptions, p: &Progress) -> LabResult<LeaveOneOut> {
    let traces = corpus.page_traces();
    if traces.len() < 2 {
        return Ok(LeaveOneOut {
            rows: Vec::new(),
            note: Some("leave-one-out needs at least two page traces".into()),
        });
    }
    let base = PoolConfig::default();
    let layout = Layout::of_config(&base)?;
    let specs = sweep_specs(&layout, &base)?;
    let mut swept = Vec::new();
    let result = (|| {
        for (t, path) in &traces {
            p.step(&format!("leave-one-out: sweep of {} (16 chains)", t.program));
            let prefix = peak_prefix(path, swept.len())?;
            swept.push(Swept {
                name: Corpus::name(t),
                prefix: prefix.clone(),
                whole: path.clone(),
                options: Vec::new(),
            });
            let runs = replay(&prefix, &specs, opts.jobs, true)?;
            let evals: Vec<Evaluation> = runs
                .iter()
                .zip(&specs)
                .map(|(r, s)| Evaluation::from_run(r, &s.config))
                .collect::<LabResult<_>>()?;
            swept.last_mut().expect("pushed").options = option_matrix(&layout, &evals)?;
        }
        let mut rows = Vec::new();
        for i in 0..swept.len() {
            p.step(&format!("leave-one-out: {} held out", swept[i].name));
            rows.push(held_out(&swept, i, &layout, &base, opts)?);
        }
        Ok(LeaveOneOut { rows, note: None })
    })();
    for s in &swept {
        let _ = std::fs::remove_file(&s.prefix);
    }
    result
}

/// Trace `i` tested on the table learnt on the others.
fn held_out(
    swept: &[Swept],
    i: usize,
    layout: &Layout,
    base: &PoolConfig,
    opts: &StudyOptions,
) -> LabResult<LooRow> {
    let others: Vec<&Swept> =
        swept.iter().enumerate().filter(|(j, _)| *j != i).map(|x| x.1).collect();
    let summed = sum_options(others.iter().map(|s| s.options.as_slice()))?;
    let chains = cheapest_within_classic(&summed, layout.base_chains());
    let own = cheapest_within_classic(&swept[i].options, layout.base_chains());
    let own_spanning = predict(&swept[i].options, &own).map_or(0, |x| x.1);
    let predicted = predict(&swept[i].options, &chains);
    let learnt =
        ConfigSpec { label: "learnt".into(), config: with_table(base, layout.table(&chains)?) };
    let classic = ConfigSpec { label: "classic".into(), config: base.clone() };
    let specs = [classic, learnt];
    let prefix = replay(&swept[i].prefix, &specs, opts.jobs, false)?;
    let whole = replay(&swept[i].whole, &specs, opts.jobs, false)?;
    let (c, l) = (&prefix[0], &prefix[1]);
    let (cw, lw) = (&whole[0], &whole[1]);
    let pct = |a: u64, b: u64| delta_value(delta_tenths_u64(a, b));
    Ok(LooRow {
        trace: swept[i].name.clone(),
        trained_on: others.len(),
        classes_changed: chains.iter().zip(layout.base_chains()).filter(|(a, b)| a != b).count(),
        classic_pages: c.pages,
        learnt_pages: l.pages,
        pages_vs_classic_pct: pct(c.pages, l.pages),
        classic_pages_peak: cw.pages_peak,
        learnt_pages_peak: lw.pages_peak,
        peak_vs_classic_pct: pct(cw.pages_peak, lw.pages_peak),
        classic_reads_spanning: cw.reads_spanning,
        learnt_reads_spanning: lw.reads_spanning,
        spanning_vs_classic_pct: pct(cw.reads_spanning, lw.reads_spanning),
        own_best_reads_spanning_prefix: own_spanning,
        learnt_reads_spanning_prefix: l.reads_spanning,
        predicted_exactly: predicted == Some((l.pages, l.reads_spanning)),
    })
}

/// The options of several traces of one layout, added class by class and chain by chain.
fn sum_options<'a>(
    all: impl Iterator<Item = &'a [Vec<ClassOption>]>,
) -> LabResult<Vec<Vec<ClassOption>>> {
    let mut sum: Option<Vec<Vec<ClassOption>>> = None;
    for options in all {
        match &mut sum {
            None => sum = Some(options.to_vec()),
            Some(s) => {
                for (acc, add) in s.iter_mut().zip(options) {
                    for (a, b) in acc.iter_mut().zip(add) {
                        if a.chain != b.chain {
                            return Err(LabError::runtime("internal: sweeps of different layouts"));
                        }
                        a.pages += b.pages;
                        a.spanning += b.spanning;
                    }
                }
            }
        }
    }
    sum.ok_or_else(|| LabError::runtime("internal: nothing to learn from"))
}

/// The frontier's chains with the fewest spanning reads within the base chains' pages (the base
/// chains themselves when no point is: then nothing beats mainline).
fn cheapest_within_classic(options: &[Vec<ClassOption>], base: &[u32]) -> Vec<u32> {
    let Some((cap, _)) = predict(options, base) else { return base.to_vec() };
    frontier(options)
        .into_iter()
        .filter(|f| f.pages <= cap)
        .min_by_key(|f| (f.spanning, f.pages))
        .map_or_else(|| base.to_vec(), |f| f.chains)
}

/// The operations of `trace` up to its peak of live bytes, written to a temporary file (the
/// study removes it).
fn peak_prefix(trace: &Path, n: usize) -> LabResult<PathBuf> {
    let mut reader = TraceReader::open(trace)?;
    let mut live = std::collections::HashMap::<u64, u64>::new();
    let (mut bytes, mut best, mut best_at, mut at) = (0u64, 0u64, 0u64, 0u64);
    while let Some(op) = reader.next_op()? {
        at += 1;
        match op {
            TraceOp::Store { id, len } | TraceOp::Malloc { id, len } => {
                bytes += len as u64;
                if let Some(old) = live.insert(id, len as u64) {
                    bytes -= old;
                }
            }
            TraceOp::Free { id } => bytes -= live.remove(&id).unwrap_or(0),
            TraceOp::Move { from, to } => {
                if let Some(len) = live.remove(&from) {
                    live.insert(to, len);
                }
            }
            _ => {}
        }
        if bytes > best {
            (best, best_at) = (bytes, at);
        }
    }
    let path =
        std::env::temp_dir().join(format!("zsmalloc-study-{}-{n}-peak.trace", std::process::id()));
    let file = std::fs::File::create(&path).map_err(|e| LabError::io("create", &path, &e))?;
    let mut out = std::io::BufWriter::new(file);
    let mut reader = TraceReader::open(trace)?;
    let write = |out: &mut std::io::BufWriter<std::fs::File>, s: &str| {
        writeln!(out, "{s}").map_err(|e| LabError::io("write", &path, &e))
    };
    write(&mut out, "# zsmalloc trace v1: the study's prefix of a trace, up to its peak")?;
    for _ in 0..best_at {
        match reader.next_op()? {
            Some(op) => write(&mut out, &op.to_line())?,
            None => break,
        }
    }
    out.flush().map_err(|e| LabError::io("write", &path, &e))?;
    Ok(path)
}
