//! What a recording varies and keeps fixed: the budgets as shares of each program's peak RSS,
//! the folio and pool page sizes, the tier's compressor and policy, the deadline.

use std::path::PathBuf;
use std::time::Duration;

/// The tier's smallest budget.
pub const MIN_BUDGET: u64 = 64 * 1024;

/// A budget as a share of the program's peak RSS, as the user wrote it (`1/3`, `0.25`), kept
/// as an exact fraction so that a budget is the same on every machine.
#[derive(Debug, Clone, PartialEq)]
pub struct Share {
    pub text: String,
    numerator: u64,
    denominator: u64,
}

impl Share {
    /// `N/M` (0 < N <= M) or a decimal in (0, 1] of at most 9 decimals.
    pub fn parse(s: &str) -> Result<Share, String> {
        let bad =
            || format!("{s:?}: a share is N/M or a decimal, above 0 and at most 1 (1/3, 0.25)");
        let digits = |t: &str| -> Result<u64, String> {
            if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            t.parse().map_err(|_| bad())
        };
        let t = s.trim();
        let (numerator, denominator) = match (t.split_once('/'), t.split_once('.')) {
            (Some((n, m)), _) => (digits(n.trim())?, digits(m.trim())?),
            (None, Some((whole, frac))) if frac.len() <= 9 => {
                let den = 10u64.pow(frac.len() as u32);
                let whole = if whole.is_empty() { 0 } else { digits(whole)? };
                let frac = if frac.is_empty() { 0 } else { digits(frac)? };
                (whole.checked_mul(den).and_then(|w| w.checked_add(frac)).ok_or_else(bad)?, den)
            }
            (None, None) => (digits(t)?, 1),
            _ => return Err(bad()),
        };
        if numerator == 0 || numerator > denominator {
            return Err(bad());
        }
        Ok(Share { text: t.to_string(), numerator, denominator })
    }

    /// The share in a file name: `1of3`, `0.25`.
    pub fn slug(&self) -> String {
        self.text.replace('/', "of")
    }

    /// The budget for a program of peak RSS `rss`: the share rounded down to a `page` multiple,
    /// at least the tier's least.
    pub fn budget(&self, rss: u64, page: u64) -> u64 {
        let b =
            (u128::from(rss) * u128::from(self.numerator) / u128::from(self.denominator)) as u64;
        (b / page * page).max(MIN_BUDGET)
    }
}

#[cfg(test)]
mod tests {
    use super::Share;

    #[test]
    fn shares_are_exact_fractions() {
        let third = Share::parse("1/3").unwrap();
        assert_eq!(third.budget(3 * 4096 * 100, 4096), 4096 * 100);
        assert_eq!(third.budget(3 * 4096 * 100 - 1, 4096), 4096 * 99);
        assert_eq!(third.budget(4096, 4096), 64 * 1024);
        assert_eq!(Share::parse("0.25").unwrap().budget(1 << 30, 4096), 1 << 28);
        assert_eq!(Share::parse("1").unwrap().budget(1 << 20, 4096), 1 << 20);
        assert_eq!(Share::parse("0.5").unwrap().slug(), "0.5");
        assert_eq!(third.slug(), "1of3");
        for bad in ["0", "0/3", "4/3", "1.5", "x", "1/0", "-1/3", ".", "1/", "0.0000000001"] {
            assert!(Share::parse(bad).is_err(), "{bad}");
        }
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
    if bytes.is_multiple_of(1024) {
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
