//! One `zsmalloc optimize`, its flags already read: the memory it plans, the search, the
//! `--test` workload, the exported table. What it reports is printed and plotted by the
//! command ([`crate::commands::optimize`]).

use std::path::{Path, PathBuf};

use super::generalize::test_on;
use super::report::{ExportDesc, OptimizeReport};
use super::search::{search, SearchOptions};
use crate::error::{LabError, LabResult};
use crate::progress::ProgressSink;
use crate::workload::Workload;

/// What one optimize run is asked.
#[derive(Debug, Clone)]
pub struct OptimizeOptions {
    pub search: SearchOptions,
    /// Refuse to run when the memory of `search.jobs` runs at once is planned above this many
    /// bytes (else above what the machine has available).
    pub max_memory: Option<u64>,
    /// Where to write a point's table in the class-table file format.
    pub export_table: Option<PathBuf>,
    /// The frontier point to export; the default point when none.
    pub export_point: Option<usize>,
}

impl OptimizeOptions {
    pub fn new(search: SearchOptions) -> Self {
        OptimizeOptions { search, max_memory: None, export_table: None, export_point: None }
    }
}

/// Searches `workload`, runs the chosen tables on `test` if given, and exports a table if
/// asked; the report says what was done.
pub fn run(
    opts: &OptimizeOptions,
    workload: &Workload,
    test: Option<&Workload>,
    sink: &ProgressSink,
) -> LabResult<OptimizeReport> {
    let search_opts = &opts.search;
    // Planned before anything runs: the search runs --jobs configurations at once.
    let page = search_opts.base.page_size as usize;
    for w in std::iter::once(workload).chain(test) {
        w.check(page)?;
        let limit = crate::memory::Limit::new(opts.max_memory);
        // The search's pools keep no bytes (its figures are placement's).
        let command = format!("optimize {}", w.name());
        crate::runner::check_runs(w, page, false, &limit, &command, search_opts.jobs)?;
    }
    let mut report = search(workload, search_opts, sink)?;
    if let Some(t) = test {
        report.test = Some(test_on(t, &report, search_opts, sink)?);
    }
    sink.clear();
    if let Some(path) = &opts.export_table {
        report.export = Some(export(&report, opts.export_point, path)?);
    }
    Ok(report)
}

/// Writes point `point` (else the default point) of the report to `path`.
pub fn export(report: &OptimizeReport, point: Option<usize>, path: &Path) -> LabResult<ExportDesc> {
    let k = point.or(report.default_point).ok_or_else(|| {
        LabError::usage(
            "no frontier point uses no more pages than classic (the layout is not classic's): \
             name one with --point",
        )
    })?;
    let p =
        report.point(k).ok_or_else(|| LabError::runtime(format!("point {k} was not reported")))?;
    crate::atomic_file::write(path, report.file_text(p)?.as_bytes())?;
    Ok(ExportDesc { point: k, file: path.display().to_string() })
}
