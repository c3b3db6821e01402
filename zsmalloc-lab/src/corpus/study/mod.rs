//! `zsmalloc corpus study DIR`: the corpus questions of docs/STUDY.md §8, answered on every
//! trace of a corpus, one module per question:
//!
//! - [`chains`]: pages, peak pages, spanning reads and bytes copied under classic, the
//!   heuristic, chains 4..16 and 16K pages at delta 16 and 64;
//! - [`leave_one_out`]: the optimizer's table learnt on every other trace, tested on this one;
//! - [`folios`]: the corpus's 16K and 64K folio traces beside the 4K one of the same program;
//! - [`backends`]: zblock against zsmalloc, and density against the 2012 figures;
//! - [`frees`]: how often consecutive frees fall in the same class, read from the traces;
//! - [`free_cost`]: what a free costs in the pool, by the parts the code can time apart.
//!
//! Every replay goes through [`replay`]; [`render`] prints the report.

pub mod backends;
pub mod chains;
pub mod folios;
pub mod free_cost;
pub mod frees;
pub mod leave_one_out;
pub mod render;
pub mod replay;

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use super::manifest::{Manifest, TraceEntry};
use crate::error::{LabError, LabResult};

/// The eviction unit of the traces most questions read (one page).
pub const PAGE_FOLIO: u64 = 4096;

/// What a study is asked.
#[derive(Debug, Clone)]
pub struct StudyOptions {
    /// Replays at a time.
    pub jobs: usize,
    /// Frees timed per measurement of [`free_cost`] (0: that table is not measured).
    pub free_ops: usize,
    /// Progress lines on stderr.
    pub progress: bool,
}

impl Default for StudyOptions {
    fn default() -> Self {
        let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
        StudyOptions { jobs, free_ops: free_cost::DEFAULT_OPS, progress: false }
    }
}

/// A corpus read from its directory: the manifest, each trace checked to exist.
#[derive(Debug, Clone)]
pub struct Corpus {
    pub dir: PathBuf,
    pub manifest: Manifest,
}

impl Corpus {
    /// The corpus in `dir`; a missing trace file is refused before anything runs.
    pub fn open(dir: &Path) -> LabResult<Corpus> {
        if !dir.is_dir() {
            return Err(LabError::usage(format!("{}: not a corpus directory", dir.display())));
        }
        let manifest = Manifest::read(dir)?;
        if manifest.traces.is_empty() {
            return Err(LabError::usage(format!("{}: the corpus has no trace", dir.display())));
        }
        for (t, path) in manifest.trace_paths(dir) {
            if !path.is_file() {
                return Err(LabError::usage(format!(
                    "{}: the trace of {} is missing",
                    path.display(),
                    t.program
                )));
            }
        }
        Ok(Corpus { dir: dir.to_path_buf(), manifest })
    }

    /// The traces with operations (a program whose memory the tier never evicted leaves an
    /// empty trace: nothing to replay).
    pub fn traces(&self) -> Vec<(&TraceEntry, PathBuf)> {
        self.manifest.trace_paths(&self.dir).filter(|(t, _)| t.ops > 0).collect()
    }

    /// The traces of one-page folios, the programs' own pages: the traces most questions read.
    pub fn page_traces(&self) -> Vec<(&TraceEntry, PathBuf)> {
        self.traces().into_iter().filter(|(t, _)| t.folio_size == PAGE_FOLIO).collect()
    }

    /// A trace's name in the tables: its program, with its folio size and compressor when they
    /// are not the corpus's usual 4K and lz4.
    pub fn name(t: &TraceEntry) -> String {
        let mut name = t.program.clone();
        if t.folio_size != PAGE_FOLIO {
            name += &format!(" {}K", t.folio_size >> 10);
        }
        if t.compressor != "lz4" {
            name += &format!(" {}", t.compressor);
        }
        name
    }
}

/// One trace of the corpus, as the report names it.
#[derive(Debug, Clone, Serialize)]
pub struct TraceRow {
    pub trace: String,
    pub file: String,
    pub folio_size: u64,
    pub compressor: String,
    pub ops: u64,
    pub rss_bytes: u64,
    pub budget_bytes: u64,
    /// Whether the questions read it (a trace without operations is left out).
    pub studied: bool,
}

/// Everything the study measured.
#[derive(Debug, Clone, Serialize)]
pub struct StudyReport {
    /// The corpus directory, as given.
    pub corpus: String,
    pub traces: Vec<TraceRow>,
    pub chains: Vec<chains::ChainRow>,
    pub leave_one_out: leave_one_out::LeaveOneOut,
    pub folios: folios::Folios,
    pub backends: Vec<backends::BackendRow>,
    pub frees: Vec<frees::FreeRow>,
    pub free_cost: free_cost::FreeCost,
    /// The study's wall time in seconds.
    pub wall_s: f64,
}

/// Progress lines on stderr: the step, the trace, the time so far.
pub struct Progress {
    start: Instant,
    on: bool,
}

impl Progress {
    pub fn new(on: bool) -> Self {
        Progress { start: Instant::now(), on }
    }

    pub fn step(&self, what: &str) {
        if self.on {
            eprintln!("corpus study: [{:6.1}s] {what}", self.start.elapsed().as_secs_f64());
        }
    }

    pub fn seconds(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }
}

/// Studies the corpus in `dir`.
pub fn study(dir: &Path, opts: &StudyOptions) -> LabResult<StudyReport> {
    let corpus = Corpus::open(dir)?;
    let progress = Progress::new(opts.progress);
    let traces = corpus
        .manifest
        .traces
        .iter()
        .map(|t| TraceRow {
            trace: Corpus::name(t),
            file: t.file.clone(),
            folio_size: t.folio_size,
            compressor: t.compressor.clone(),
            ops: t.ops,
            rss_bytes: t.rss_bytes,
            budget_bytes: t.budget_bytes,
            studied: t.ops > 0,
        })
        .collect();
    let chains = chains::study(&corpus, opts, &progress)?;
    let leave_one_out = leave_one_out::study(&corpus, opts, &progress)?;
    let folios = folios::study(&corpus, &progress)?;
    let backends = backends::study(&corpus, opts, &progress)?;
    let frees = frees::study(&corpus, &progress)?;
    let free_cost = free_cost::study(opts, &progress)?;
    progress.step("done");
    Ok(StudyReport {
        corpus: dir.display().to_string(),
        traces,
        chains,
        leave_one_out,
        folios,
        backends,
        frees,
        free_cost,
        wall_s: (progress.seconds() * 10.0).round() / 10.0,
    })
}
