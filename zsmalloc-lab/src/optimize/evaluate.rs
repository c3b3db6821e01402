//! Evaluation: one workload on one configuration, reduced to what the optimizer compares —
//! pages at the end and at the peak, spanning reads, and the same per class.

use crate::config::ConfigSpec;
use crate::error::{LabError, LabResult};
use crate::progress::runs::RunsProgress;
use crate::progress::ProgressSink;
use crate::result::RunResult;
use crate::runner::{run_parallel_observed, RunOptions};
use crate::workload::Workload;
use zsmalloc_core::class_spec::ClassTableSpec;
use zsmalloc_core::{ClassTable, PoolConfig};

/// One class of an evaluated table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClassFigures {
    pub size: u32,
    pub chain: u32,
    /// The class's pages at the end of the workload.
    pub pages: u64,
    /// Reads of its objects that spanned two pages.
    pub spanning: u64,
}

/// What one run of a workload on one table measured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evaluation {
    pub label: String,
    /// The table the pool used (a computed table as its explicit equivalent).
    pub table: ClassTableSpec,
    pub pages: u64,
    pub pages_peak: u64,
    pub reads: u64,
    pub reads_spanning: u64,
    /// Per class, in table order.
    pub classes: Vec<ClassFigures>,
}

impl Evaluation {
    /// The figures of a finished run. The per-class pages and spanning reads must add up to
    /// the pool's: the optimizer's sums rest on it.
    /// The multi-page band's first class, which no length reaches, has no figures (the
    /// per-class sums still check that it held nothing).
    pub fn from_run(run: &RunResult, cfg: &PoolConfig) -> LabResult<Self> {
        let created = ClassTable::new(cfg).map_err(LabError::from)?;
        let table = created.spec();
        if run.classes.len() != created.classes().len() {
            return Err(LabError::runtime(format!(
                "{}: {} class rows for a table of {} classes",
                run.label,
                run.classes.len(),
                created.classes().len()
            )));
        }
        let classes: Vec<ClassFigures> = run
            .classes
            .iter()
            .zip(created.classes())
            .filter(|(_, c)| created.stores_objects(c))
            .map(|(row, c)| ClassFigures {
                size: c.size,
                chain: c.pages_per_zspage,
                pages: row.stats.pages_used,
                spanning: row.stats.reads_spanning,
            })
            .collect();
        let pages: u64 = classes.iter().map(|c| c.pages).sum();
        let spanning: u64 = classes.iter().map(|c| c.spanning).sum();
        if (pages, spanning) != (run.pages, run.reads_spanning) {
            return Err(LabError::runtime(format!(
                "{}: the classes hold {pages} pages and {spanning} spanning reads, the pool \
                 {} and {}",
                run.label, run.pages, run.reads_spanning
            )));
        }
        Ok(Evaluation {
            label: run.label.clone(),
            table,
            pages: run.pages,
            pages_peak: run.pages_peak,
            reads: run.reads,
            reads_spanning: run.reads_spanning,
            classes,
        })
    }
}

/// A zsmalloc configuration of `base` (page size, read mode, backing) with an explicit table.
pub fn with_table(base: &PoolConfig, table: ClassTableSpec) -> PoolConfig {
    PoolConfig { read_mode: base.read_mode, backing: base.backing, ..PoolConfig::for_table(table) }
}

/// Runs `workload` once on each configuration, `jobs` at a time (nothing is timed: the counts
/// do not depend on the order or the parallelism); on a terminal, a bar named `label` counts
/// the runs ended and the time left.
pub fn evaluate_all(
    workload: &Workload,
    specs: &[ConfigSpec],
    jobs: usize,
    sink: &ProgressSink,
    label: &str,
) -> LabResult<Vec<Evaluation>> {
    // Placement decides every figure the search compares: its pools keep no bytes.
    let opts = RunOptions { timing: false, placement_only: true, ..RunOptions::default() };
    let bar = RunsProgress::new(sink, label, specs.len());
    let runs = run_parallel_observed(workload, specs, &opts, jobs, sink, &|| bar.run_done())?;
    drop(bar);
    runs.iter().zip(specs).map(|(run, spec)| Evaluation::from_run(run, &spec.config)).collect()
}

/// Runs `workload` on one configuration.
pub fn evaluate(workload: &Workload, spec: &ConfigSpec) -> LabResult<Evaluation> {
    let silent = ProgressSink::silent();
    let mut all = evaluate_all(workload, std::slice::from_ref(spec), 1, &silent, &spec.label)?;
    all.pop().ok_or_else(|| LabError::runtime("the evaluation did not run"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::kernel_test::KernelTest;

    #[test]
    fn per_class_figures_add_up_to_the_pools() {
        let w = Workload::KernelTest(KernelTest { lo: 32, hi: 4096, step: 48, n: 40, seed: 1 });
        let spec = ConfigSpec { label: "classic".into(), config: PoolConfig::default() };
        let e = evaluate(&w, &spec).unwrap();
        assert!(e.pages > 0 && e.reads_spanning > 0);
        assert_eq!(e.classes.iter().map(|c| c.pages).sum::<u64>(), e.pages);
        assert_eq!(e.table, ClassTable::new(&PoolConfig::default()).unwrap().spec());
        // The same table given explicitly measures the same.
        let explicit = ConfigSpec {
            label: "explicit".into(),
            config: with_table(&PoolConfig::default(), e.table.clone()),
        };
        let again = evaluate(&w, &explicit).unwrap();
        assert_eq!(
            (again.pages, again.pages_peak, again.classes),
            (e.pages, e.pages_peak, e.classes)
        );
    }
}
