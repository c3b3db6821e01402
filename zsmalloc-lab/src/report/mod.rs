//! Output formats: `table` (for people), `json` and `csv` (for tools), `mm_stat` (zram's line)
//! and `debugfs` (the kernel's `classes` file).

pub mod csv;
pub mod debugfs;
pub mod json;
pub mod mm_stat;
pub mod table;

use std::path::Path;

use crate::compare::Comparison;
use crate::error::{LabError, LabResult};
use crate::result::RunResult;

/// An output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Table,
    Json,
    Csv,
    MmStat,
    Debugfs,
}

impl Format {
    pub const NAMES: [&'static str; 5] = ["table", "json", "csv", "mm_stat", "debugfs"];

    pub fn parse(s: &str) -> LabResult<Self> {
        match s {
            "table" => Ok(Format::Table),
            "json" => Ok(Format::Json),
            "csv" => Ok(Format::Csv),
            "mm_stat" | "mm-stat" => Ok(Format::MmStat),
            "debugfs" => Ok(Format::Debugfs),
            _ => Err(LabError::usage(format!(
                "invalid --format '{s}' (accepted: {})",
                Format::NAMES.join(", ")
            ))),
        }
    }
}

/// Fails now, naming `flag`, if `path` cannot be written: outputs (`--plot`, `--timeline`,
/// `--record`) are written after a run, which a bad path must not waste. A file that does not
/// exist yet is created and removed again; an existing one is opened for appending, untouched.
pub fn check_writable(flag: &str, path: &Path) -> LabResult<()> {
    let existed = path.exists();
    match std::fs::OpenOptions::new().append(true).create(true).open(path) {
        Ok(_) => {
            if !existed {
                let _ = std::fs::remove_file(path);
            }
            Ok(())
        }
        Err(e) => Err(LabError::usage(format!("{flag}: {}", LabError::io("write", path, &e)))),
    }
}

/// One run in `format`.
pub fn render_run(r: &RunResult, format: Format) -> LabResult<String> {
    Ok(match format {
        Format::Table => table::run(r),
        Format::Json => json::run(r)?,
        Format::Csv => {
            if r.classes.is_some() {
                csv::class_rows(std::slice::from_ref(r))
            } else {
                csv::runs(std::slice::from_ref(r), None)
            }
        }
        Format::MmStat => mm_stat::line(r) + "\n",
        Format::Debugfs => debugfs::table(r),
    })
}

/// A comparison in `format`.
pub fn render_comparison(c: &Comparison, format: Format) -> LabResult<String> {
    Ok(match format {
        Format::Table => table::comparison(c),
        Format::Json => json::comparison(c)?,
        Format::Csv => {
            if c.runs.iter().any(|r| r.classes.is_some()) {
                csv::class_rows(&c.runs)
            } else {
                csv::runs(&c.runs, c.runs.first())
            }
        }
        Format::MmStat => {
            let mut s = String::new();
            for r in &c.runs {
                s += &format!("# {}\n{}\n", r.label, mm_stat::line(r));
            }
            s
        }
        Format::Debugfs => {
            let mut s = String::new();
            for (i, r) in c.runs.iter().enumerate() {
                if i > 0 {
                    s += "\n";
                }
                s += &format!("# {}\n{}", r.label, debugfs::table(r));
            }
            s
        }
    })
}
