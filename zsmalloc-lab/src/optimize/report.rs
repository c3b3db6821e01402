//! What `zsmalloc optimize` reports: the figures of each table, typed; the text (table, JSON, CSV,
//! the file format) is made by [`crate::report::optimize`].

use serde::Serialize;

use super::references::{PointKind, References};
use crate::error::{LabError, LabResult};
use crate::result::WorkloadDesc;
use zsmalloc_core::class_spec::ClassTableSpec;
use zsmalloc_core::{ClassTable, PoolConfig};

/// How reads are priced.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Objective {
    /// Read cost = spanning reads.
    Spanning,
    /// Read cost = spanning reads x the extra nanoseconds a spanning read costs over an
    /// in-place one (as `zsmalloc cost` measures it).
    Nanoseconds { spanning_extra_ns: f64 },
}

impl Objective {
    pub fn name(self) -> &'static str {
        match self {
            Objective::Spanning => "spanning",
            Objective::Nanoseconds { .. } => "ns",
        }
    }

    /// The extra nanoseconds priced per spanning read, for `ns`.
    pub fn spanning_extra_ns(self) -> Option<f64> {
        match self {
            Objective::Spanning => None,
            Objective::Nanoseconds { spanning_extra_ns } => Some(spanning_extra_ns),
        }
    }

    /// The read cost of `spanning` spanning reads.
    pub fn read_cost(self, spanning: u64) -> f64 {
        match self {
            Objective::Spanning => spanning as f64,
            Objective::Nanoseconds { spanning_extra_ns } => spanning as f64 * spanning_extra_ns,
        }
    }

    /// `--objective NAME` with `--spanning-extra-ns X` (needed by `ns` only).
    pub fn parse(name: &str, extra_ns: Option<f64>) -> LabResult<Self> {
        match (name, extra_ns) {
            ("spanning", None) => Ok(Objective::Spanning),
            ("spanning", Some(_)) => Err(LabError::usage(
                "--spanning-extra-ns prices reads for --objective ns; spanning counts them",
            )),
            ("ns", Some(x)) if x.is_finite() && x >= 0.0 => {
                Ok(Objective::Nanoseconds { spanning_extra_ns: x })
            }
            ("ns", Some(x)) => Err(LabError::usage(format!(
                "invalid --spanning-extra-ns {x}: a number of nanoseconds, 0 or more"
            ))),
            ("ns", None) => Err(LabError::usage(
                "--objective ns needs --spanning-extra-ns X: the extra nanoseconds of a spanning \
                 read (the `spanning` minus `in place` read section of `zsmalloc cost`)",
            )),
            (other, _) => Err(LabError::usage(format!(
                "invalid --objective '{}' (accepted: spanning, ns)",
                zsmalloc_core::text_input::escape(other)
            ))),
        }
    }
}

/// One class of a reported table.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct ClassEntry {
    pub size: u32,
    /// Units per zspage: pages, or compound pages of the multi-page size above the page.
    pub chain: u32,
    /// 0 up to the page; the band's order above it (not written when 0).
    #[serde(skip_serializing_if = "crate::config::is_zero")]
    pub order: u32,
}

/// A class whose chain differs from the layout's base table.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct ChainChange {
    pub size: u32,
    pub chain: u32,
    pub base_chain: u32,
}

/// One table on the axes: a frontier point or a reference. Its text (the label, the file
/// format) is made where it is printed.
#[derive(Debug, Clone, PartialEq)]
pub struct PointReport {
    pub kind: PointKind,
    /// The table the pool used (a computed table as its explicit equivalent).
    pub table: ClassTableSpec,
    pub pages: u64,
    pub pages_peak: u64,
    pub reads_spanning: u64,
    pub read_cost: f64,
    /// Fewer or as many pages and spanning reads as every reference, and fewer of one than each
    /// (false for the references themselves).
    pub dominates_references: bool,
    /// Classes whose chain differs from the layout's base table; `None` when the table's class
    /// sizes are not the layout's, so that its chains cannot be compared class by class.
    pub changed: Option<Vec<ChainChange>>,
}

impl PointReport {
    /// The table's classes as sizes and chains.
    pub fn classes(&self) -> Vec<ClassEntry> {
        self.table
            .classes()
            .iter()
            .map(|c| ClassEntry { size: c.size, chain: c.chain, order: c.order })
            .collect()
    }
}

/// The fixed class sizes the chains were chosen for.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct LayoutDesc {
    pub source: String,
    pub classes: usize,
    /// Classes whose chain the search chooses.
    pub searched: usize,
    pub huge_class_size: u32,
    /// With the multi-page band: its multi-page size and its `huge_class_size`.
    #[serde(skip_serializing_if = "crate::config::is_zero")]
    pub multi_page_size: u32,
    #[serde(skip_serializing_if = "crate::config::is_zero")]
    pub huge_class_size_multi: u32,
    /// With `--boundaries`: the merges and splits applied to the starting layout, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub boundary_moves: Vec<String>,
}

/// Where a table was exported.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ExportDesc {
    pub point: usize,
    pub file: String,
}

/// The tables of the search run on a second workload (`--test`): a table tuned on one
/// workload is only worth shipping if it holds on another.
#[derive(Debug, Clone, PartialEq)]
pub struct TestReport {
    pub workload: WorkloadDesc,
    pub reads: u64,
    /// The references measured on this workload.
    pub references: References<TestRow>,
    /// The reported points, in the report's order (`dominates_references` against the
    /// references measured here).
    pub points: Vec<TestRow>,
}

/// One table measured on the test workload.
#[derive(Debug, Clone, PartialEq)]
pub struct TestRow {
    pub kind: PointKind,
    pub pages: u64,
    pub pages_peak: u64,
    pub reads_spanning: u64,
    pub read_cost: f64,
    pub dominates_references: bool,
}

/// The report of one `zsmalloc optimize`.
#[derive(Debug, Clone, PartialEq)]
pub struct OptimizeReport {
    pub workload: WorkloadDesc,
    pub page_size: u32,
    pub objective: Objective,
    pub layout: LayoutDesc,
    /// Read sections of the workload (the same for every table).
    pub reads: u64,
    /// Points of the whole frontier; `points` reports a selection of them.
    pub frontier_points: usize,
    /// Runs of the workload the search made (sweep, references, reported points).
    pub runs: usize,
    pub references: References<PointReport>,
    pub points: Vec<PointReport>,
    /// The point `--export-table` would write by default: the cheapest with no more pages than
    /// classic.
    pub default_point: Option<usize>,
    pub export: Option<ExportDesc>,
    /// The same tables on the `--test` workload.
    pub test: Option<TestReport>,
}

impl OptimizeReport {
    /// The reported frontier point numbered `point`.
    pub fn point(&self, point: usize) -> Option<&PointReport> {
        self.points.iter().find(|p| p.kind == PointKind::Frontier(point))
    }

    /// The references, then the points.
    pub fn all_points(&self) -> impl Iterator<Item = &PointReport> {
        self.references.iter().map(|(_, r)| r).chain(&self.points)
    }

    /// `p`'s table in the class-table file format (what `--export-table` writes), titled with
    /// what it is and what it measured.
    pub fn file_text(&self, p: &PointReport) -> LabResult<String> {
        let title = format!(
            "zsmalloc class table: {} on {}\npages {}, pages_peak {}, reads_spanning {}",
            p.kind.describe(),
            self.workload.summary,
            p.pages,
            p.pages_peak,
            p.reads_spanning
        );
        let cfg = PoolConfig::for_table(p.table.clone());
        Ok(ClassTable::new(&cfg).map_err(LabError::from)?.to_file_text(&title))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objectives_price_spanning_reads() {
        assert_eq!(Objective::parse("spanning", None).unwrap().read_cost(7), 7.0);
        let ns = Objective::parse("ns", Some(12.5)).unwrap();
        assert_eq!(ns.read_cost(4), 50.0);
        for (name, x) in [("ns", None), ("spanning", Some(1.0)), ("ns", Some(-1.0)), ("time", None)]
        {
            assert_eq!(Objective::parse(name, x).unwrap_err().exit_code(), 2, "{name} {x:?}");
        }
    }
}
