//! Every report the lab prints, in one place: one module per report kind, each implementing
//! [`Render`] (a table for people, JSON and CSV for tools).
//!
//! - [`runs`]: a run or a comparison of runs (also zram's `mm_stat` line and the kernel's
//!   debugfs `classes` table);
//! - [`classes`]: zsmalloc class tables (`zsmalloc classes`);
//! - [`block_table`]: zblock's block table (`zsmalloc classes --backend zblock`);
//! - [`cost`]: the cost study (`zsmalloc cost`);
//! - [`kernel`]: `zsmalloc kernel check`, `capture`, `cost` and `import`;
//! - [`folios`]: large folios as one object (`zsmalloc folios`);
//! - [`optimize`]: the best class tables for a workload (`zsmalloc optimize`).
//!
//! A report's JSON is its data structures serialised; its CSV columns are read out of that
//! JSON by key ([`csv::Column`]), so a CSV header is the JSON key it comes from and cannot
//! drift from it; its text table is laid out by [`grid`] (or fixed widths where the layout is
//! a published one, like the RFC's class table).

pub mod block_table;
pub mod classes;
pub mod cost;
pub mod csv;
pub mod folios;
pub mod grid;
pub mod kernel;
pub mod optimize;
pub mod runs;

use std::path::Path;

use serde::Serialize;

use crate::error::{LabError, LabResult};

/// An output format: the one `--format` of every command (clap parses it; each report says
/// which it has, [`Render::FORMATS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Format {
    /// A table for people
    #[default]
    Table,
    /// The report's data, for tools
    Json,
    /// One row per line, columns named by their JSON keys
    Csv,
    /// zram's `mm_stat` line (runs)
    #[value(name = "mm_stat", alias = "mm-stat")]
    MmStat,
    /// The kernel's debugfs `classes` table (runs)
    Debugfs,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Table => "table",
            Format::Json => "json",
            Format::Csv => "csv",
            Format::MmStat => "mm_stat",
            Format::Debugfs => "debugfs",
        }
    }

    /// `self`, if a report of type `R` has it: checked before a command runs, so a format
    /// the report does not have costs no run.
    pub fn offered_by<R: Render + ?Sized>(self) -> LabResult<Format> {
        if R::FORMATS.contains(&self) {
            return Ok(self);
        }
        let names: Vec<&str> = R::FORMATS.iter().map(|f| f.name()).collect();
        Err(LabError::usage(format!(
            "{} prints --format {}",
            R::COMMAND,
            match names.split_last() {
                Some((last, [])) => last.to_string(),
                Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
                None => String::new(),
            }
        )))
    }
}

/// A report in every format it has.
pub trait Render {
    /// The command printing it, to word the refusal of a format it does not have.
    const COMMAND: &'static str;
    /// The formats it has.
    const FORMATS: &'static [Format] = &[Format::Table, Format::Json, Format::Csv];

    fn table(&self) -> String;
    fn json(&self) -> LabResult<String>;
    /// Its CSV, when [`Self::FORMATS`] has it.
    fn csv(&self) -> String {
        String::new()
    }

    /// zram's `mm_stat` and the kernel's debugfs table: runs only.
    fn kernel_format(&self, _format: Format) -> Option<String> {
        None
    }

    /// The report in `format`.
    fn render(&self, format: Format) -> LabResult<String> {
        match format.offered_by::<Self>()? {
            Format::Table => Ok(self.table()),
            Format::Json => self.json(),
            Format::Csv => Ok(self.csv()),
            Format::MmStat | Format::Debugfs => self.kernel_format(format).ok_or_else(|| {
                LabError::usage(format!("{} has no {}", Self::COMMAND, format.name()))
            }),
        }
    }
}

/// `value` as pretty JSON with a final newline: the one JSON writer of every report.
pub fn json<T: Serialize + ?Sized>(value: &T) -> LabResult<String> {
    serde_json::to_string_pretty(value)
        .map(|s| s + "\n")
        .map_err(|e| LabError::runtime(format!("json: {e}")))
}

/// Fails now, naming `flag`, if `path` cannot be written: outputs (`--plot`, `--timeline`,
/// `--record`) are written after a run, which a bad path must not waste. Neither creates nor
/// changes `path`: the output's temporary is made beside it and removed again
/// ([`crate::atomic_file::check`]), so a refused or interrupted command leaves nothing.
pub fn check_writable(flag: &str, path: &Path) -> LabResult<()> {
    crate::atomic_file::check(path)
        .map_err(|e| LabError::usage(format!("{flag}: {}", LabError::io("write", path, &e))))
}
