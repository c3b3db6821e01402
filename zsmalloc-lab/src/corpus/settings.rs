//! What a recording varies and keeps fixed: the budgets as shares of each program's peak RSS,
//! the folio and pool page sizes, the tier's compressor and policy, the deadline.

use std::path::PathBuf;
use std::time::Duration;

/// The tier's smallest budget.
pub const MIN_BUDGET: u64 = 64 * 1024;

/// A budget as a share of the program's peak RSS, as the user wrote it (`1/3`, `0.25`).
#[derive(Debug, Clone, PartialEq)]
pub struct Share {
    pub text: String,
    pub fraction: f64,
}

impl Share {
    /// `N/M` (0 < N <= M) or a decimal in (0, 1].
    pub fn parse(s: &str) -> Result<Share, String> {
        let bad = || format!("{s:?}: a share is N/M or a decimal, above 0 and at most 1 (1/3, 0.25)");
        let fraction = match s.split_once('/') {
            Some((n, m)) => {
                let n: u64 = n.trim().parse().map_err(|_| bad())?;
                let m: u64 = m.trim().parse().map_err(|_| bad())?;
                if m == 0 {
                    return Err(bad());
                }
                n as f64 / m as f64
            }
            None => s.trim().parse::<f64>().map_err(|_| bad())?,
        };
        if !(fraction > 0.0 && fraction <= 1.0) {
            return Err(bad());
        }
        Ok(Share { text: s.trim().to_string(), fraction })
    }

    /// The share in a file name: `1of3`, `0.25`.
    pub fn slug(&self) -> String {
        self.text.replace('/', "of")
    }

    /// The budget for a program of peak RSS `rss`: a page multiple, at least the tier's least.
    pub fn budget(&self, rss: u64, page: u64) -> u64 {
        let b = (rss as f64 * self.fraction) as u64;
        (b / page * page).max(MIN_BUDGET)
    }
}

/// `--folio-sizes` and `--page-sizes` items: sizes in bytes.
pub fn folio_size(s: &str) -> Result<u64, String> {
    match zsmalloc_core::config::parse_bytes(s) {
        Some(b @ (4096 | 16384 | 65536)) => Ok(b),
        _ => Err(format!("{s:?}: a folio size is 4K, 16K or 64K")),
    }
}

/// A pool page size: a power of two from 4K to 64K.
pub fn page_size(s: &str) -> Result<u64, String> {
    match zsmalloc_core::config::parse_bytes(s) {
        Some(b) if b.is_power_of_two() && (4096..=65536).contains(&b) => Ok(b),
        _ => Err(format!("{s:?}: a pool page size is a power of two from 4K to 64K")),
    }
}

/// A size as the tier takes it: `16K`, `64K`, else bytes.
pub fn size_flag(bytes: u64) -> String {
    if bytes % 1024 == 0 {
        format!("{}K", bytes / 1024)
    } else {
        bytes.to_string()
    }
}

/// Everything a recording keeps fixed, and what it varies.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The corpus's directory.
    pub out: PathBuf,
    pub shares: Vec<Share>,
    pub folio_sizes: Vec<u64>,
    pub page_sizes: Vec<u64>,
    pub compressor: String,
    pub policy: String,
    /// Per run (the input's, the untiered run, each tiered run).
    pub timeout: Duration,
    /// The command line, for the manifest.
    pub command: String,
}
