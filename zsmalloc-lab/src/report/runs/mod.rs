//! A run, or a comparison of runs: a table, JSON, CSV, zram's `mm_stat` line or the kernel's
//! debugfs `classes` table.

pub mod csv;
pub mod debugfs;
pub mod json;
pub mod mm_stat;
pub mod table;

use super::{Format, Render};
use crate::compare::Comparison;
use crate::error::LabResult;
use crate::result::RunResult;

/// Runs have every format, zram's and the kernel's too.
const ALL: [Format; 5] =
    [Format::Table, Format::Json, Format::Csv, Format::MmStat, Format::Debugfs];

impl Render for RunResult {
    const COMMAND: &'static str = "run";
    const FORMATS: &'static [Format] = &ALL;

    fn table(&self) -> String {
        table::run(self)
    }

    fn json(&self) -> LabResult<String> {
        json::run(self)
    }

    fn csv(&self) -> String {
        if self.classes.reported {
            csv::class_rows(std::slice::from_ref(self))
        } else {
            csv::runs(std::slice::from_ref(self), None)
        }
    }

    fn kernel_format(&self, format: Format) -> Option<String> {
        match format {
            Format::MmStat => Some(mm_stat::line(self) + "\n"),
            Format::Debugfs => Some(debugfs::table(self)),
            _ => None,
        }
    }
}

impl Render for Comparison {
    const COMMAND: &'static str = "compare";
    const FORMATS: &'static [Format] = &ALL;

    fn table(&self) -> String {
        table::comparison(self)
    }

    fn json(&self) -> LabResult<String> {
        json::comparison(self)
    }

    fn csv(&self) -> String {
        if self.runs.iter().any(|r| r.classes.reported) {
            csv::class_rows(&self.runs)
        } else {
            csv::runs(&self.runs, self.runs.first())
        }
    }

    fn kernel_format(&self, format: Format) -> Option<String> {
        let mut s = String::new();
        match format {
            Format::MmStat => {
                for r in &self.runs {
                    s += &format!("# {}\n{}\n", r.label, mm_stat::line(r));
                }
            }
            Format::Debugfs => {
                for (i, r) in self.runs.iter().enumerate() {
                    if i > 0 {
                        s += "\n";
                    }
                    s += &format!("# {}\n{}", r.label, debugfs::table(r));
                }
            }
            _ => return None,
        }
        Some(s)
    }
}
