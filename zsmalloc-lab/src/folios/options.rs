//! What a `zsmalloc folios` run is asked to do, checked and planned before anything is read.

use zsmalloc_codec::Compressor;
use zsmalloc_core::{band, PoolConfig};

use crate::cost::corpus::Source;
use crate::error::{LabError, LabResult};
use crate::memory::{Plan, PER_OBJECT_BYTES};

/// Default `--folio-sizes`.
pub const DEFAULT_FOLIO_SIZES: &str = "4K,16K,64K";
/// Default `--compressor`.
pub const DEFAULT_COMPRESSORS: &str = "lz4,lzo,zstd";
/// Default pages of the built-in corpus and most pages read from files or a process.
pub const DEFAULT_PAGES: usize = 16384;
/// Default `--churn-share`.
pub const DEFAULT_CHURN_SHARE: f64 = 0.5;
/// Default `--fallback-share`: an assumption, not a measurement (the RFC gives none).
pub const DEFAULT_FALLBACK_SHARE: f64 = 0.1;
/// Default `--sample-mib`: folio bytes timed per round and read path.
pub const DEFAULT_SAMPLE_MIB: u64 = 16;

/// A run of the study.
#[derive(Debug, Clone)]
pub struct FoliosOptions {
    pub source: Source,
    /// Most pages read from files or a process.
    pub max_pages: usize,
    /// The pool's settings but the multi-page size, which each folio size sets.
    pub config: PoolConfig,
    pub folio_sizes: Vec<u32>,
    pub compressors: Vec<Compressor>,
    pub zstd_level: i32,
    pub churn_share: f64,
    pub refill_share: f64,
    pub fallback_share: f64,
    pub repeat: usize,
    pub seed: u64,
    pub sample_bytes: u64,
    pub max_memory: Option<u64>,
    /// Where each row's fill, churn and compaction is written as a trace (`--trace-dir`).
    pub trace_dir: Option<std::path::PathBuf>,
}

/// The folio sizes of `--folio-sizes` as clap checks them, whatever the page size: byte
/// counts, each a power of two from 4K to 64K (the page size is checked once it is known).
pub fn folio_size_list(s: &str) -> Result<String, String> {
    let mut any = false;
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let size = folio_size(part)?;
        if !(size.is_power_of_two() && (4096..=band::MAX_OBJECT).contains(&size)) {
            return Err(format!(
                "{size} is not a power of two from 4096 to 65536 (e.g. 4K,16K,64K)"
            ));
        }
        any = true;
    }
    if !any {
        return Err("no size given (e.g. 4K,16K,64K)".into());
    }
    Ok(s.to_string())
}

/// One folio size: a byte count the core's way (`16K`, `16384`).
fn folio_size(part: &str) -> Result<u32, String> {
    let shown = zsmalloc_core::text_input::escape(part);
    let n = zsmalloc_core::config::parse_bytes(part)
        .ok_or_else(|| format!("'{shown}' is not a byte count (e.g. 4K,16K,64K)"))?;
    u32::try_from(n).map_err(|_| format!("'{shown}' is too large (at most 64K)"))
}

/// `4K,16K,64K` -> sizes in bytes, sorted, each once; each the page size shifted left by
/// 0..=4 and at most 64K.
pub fn parse_folio_sizes(s: &str, page: u32) -> LabResult<Vec<u32>> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let shown = zsmalloc_core::text_input::escape(part);
        let bad = |why: String| {
            LabError::usage(format!("invalid --folio-sizes '{shown}': {why} (e.g. 4K,16K,64K)"))
        };
        let size = folio_size(part)
            .map_err(|why| LabError::usage(format!("invalid --folio-sizes: {why}")))?;
        if size == 0 {
            return Err(bad("a folio holds at least one page".into()));
        }
        if size != page {
            band::order_of(page, size).map_err(bad)?;
        }
        if !out.contains(&size) {
            out.push(size);
        }
    }
    if out.is_empty() {
        return Err(LabError::usage("--folio-sizes names no size (e.g. 4K,16K,64K)"));
    }
    out.sort_unstable();
    Ok(out)
}

/// A share in 0..=1 given by `flag`.
pub fn parse_share(flag: &str, v: f64) -> LabResult<f64> {
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(LabError::usage(format!("invalid {flag} {v}: a share from 0 to 1")))
    }
}

impl FoliosOptions {
    /// Checks what can be checked before reading the corpus.
    pub fn check(&self) -> LabResult<()> {
        self.source.check()?;
        if !(1..=1000).contains(&self.repeat) {
            return Err(LabError::usage(format!("invalid --repeat {}: 1..=1000", self.repeat)));
        }
        if self.max_pages == 0 {
            return Err(LabError::usage("--max-pages must be at least 1"));
        }
        if self.sample_bytes == 0 {
            return Err(LabError::usage("--sample-mib must be at least 1"));
        }
        if self.config.mem_limit_pages != 0 {
            return Err(LabError::usage(
                "folios stores every folio of the corpus: no --mem-limit-pages (a full pool \
                 would stop the fill; lower --max-pages or --synthetic-pages instead)",
            ));
        }
        if self.config.multi_page_size != 0 {
            return Err(LabError::usage(
                "folios sets the multi-page size itself, one pool per folio size: give \
                 --folio-sizes, not --multi-page",
            ));
        }
        Ok(())
    }

    /// Pages of the corpus at most (the built-in corpus: exactly).
    pub fn corpus_pages(&self) -> (usize, &'static str) {
        match &self.source {
            Source::Builtin { pages, .. } => (*pages, "--synthetic-pages"),
            Source::Files(_) | Source::Pid(_) => (self.max_pages, "--max-pages"),
        }
    }

    /// The peak: the corpus, then for one row at a time its compressed copy (at most the
    /// corpus: a folio is kept compressed only below the huge size), the pool (the corpus and
    /// half again for class padding and the churn's new zspages) and each folio's records.
    pub fn plan(&self) -> Plan {
        let (pages, flag) = self.corpus_pages();
        let corpus = (pages as u64).saturating_mul(u64::from(self.config.page_size));
        let smallest = u64::from(self.folio_sizes.first().copied().unwrap_or(4096));
        let folios = corpus / smallest.max(1);
        let bytes = corpus
            .saturating_mul(7)
            .div_euclid(2)
            .saturating_add(folios.saturating_mul(PER_OBJECT_BYTES + 48));
        Plan::new(bytes, format!("{flag} {pages}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folio_sizes_parse_and_refuse() {
        assert_eq!(parse_folio_sizes("64K,4K,16k,16384", 4096).unwrap(), [4096, 16384, 65536]);
        assert_eq!(parse_folio_sizes("8K,32K", 4096).unwrap(), [8192, 32768]);
        for bad in ["12K", "128K", "2K", "", "x", "-4K", "0", "0K"] {
            let e = parse_folio_sizes(bad, 4096).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}");
            assert!(folio_size_list(bad).is_err(), "{bad}");
        }
        assert!(folio_size_list("4K, 64K").is_ok());
        assert_eq!(parse_folio_sizes("16K,64K", 16384).unwrap(), [16384, 65536]);
        assert!(parse_share("--churn-share", 1.5).is_err());
    }
}
