//! `--timeline`: pages and utilization over the operations of a run (written as CSV by
//! [`crate::report::csv::write_timeline`]).

use serde::Serialize;

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
