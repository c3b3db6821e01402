//! `--timeline`: pages and utilization over the operations of a run, as CSV.

use serde::Serialize;
use std::io::Write;
use std::path::Path;

use crate::error::{LabError, LabResult};
use crate::report::csv::field;

/// One sample, taken every N operations and at each phase change.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Sample {
    /// Operations done so far (stores, frees, reads, compactions).
    pub op: u64,
    pub phase: String,
    pub objects: u64,
    pub bytes_stored: u64,
    pub pages: u64,
    /// Truncated to one decimal, as `utilization_pct`, in tenths.
    #[serde(skip)]
    pub utilization_permille: u64,
}

/// Writes the samples of each labelled run as one CSV file.
pub fn write_csv(path: &Path, runs: &[(&str, &[Sample])]) -> LabResult<()> {
    let mut out = String::from("label,op,phase,objects,bytes_stored,pages,utilization_pct\n");
    for (label, samples) in runs {
        for s in samples.iter() {
            out += &format!(
                "{},{},{},{},{},{},{}\n",
                field(label),
                s.op,
                field(&s.phase),
                s.objects,
                s.bytes_stored,
                s.pages,
                crate::result::permille_str(s.utilization_permille)
            );
        }
    }
    std::fs::File::create(path)
        .and_then(|mut f| f.write_all(out.as_bytes()))
        .map_err(|e| LabError::io("write", path, &e))
}
