//! The corpus flags the kernel commands share, as `pages` and `cost` take them: files or
//! directories, `--pid`, or the built-in synthetic corpus — loaded through the cost study's
//! [`Source`], in pages of the host's size.

use std::path::PathBuf;

use serde::Serialize;

use super::host;
use crate::cost::corpus::Source;
use crate::error::{LabError, LabResult};
use crate::flag_values;

/// Pages of the built-in corpus by default.
pub const DEFAULT_SYNTHETIC_PAGES: usize = 16384;
/// Pages read at most from files or a process by default.
pub const DEFAULT_MAX_PAGES: usize = 65536;

#[derive(clap::Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct CorpusArgs {
    /// Files or directories to take pages from (walked recursively) [default: the built-in
    /// corpus]
    pub paths: Vec<PathBuf>,
    /// Take pages from the anonymous memory of a live process (resident or swapped pages)
    #[arg(long, value_name = "PID", conflicts_with = "paths", value_parser = flag_values::whole::<u32>(1, u64::from(u32::MAX)))]
    pub pid: Option<u32>,
    /// Pages of the built-in corpus [default: 16384]
    #[arg(long, value_name = "N", value_parser = flag_values::whole::<usize>(1, crate::cost::corpus::MAX_SYNTHETIC_PAGES as u64))]
    pub synthetic_pages: Option<usize>,
    /// Pages read at most (from files or a process: 65536 unless given)
    #[arg(long, value_name = "N", value_parser = flag_values::whole::<usize>(1, u64::MAX))]
    pub max_pages: Option<usize>,
}

/// The lowest level a kernel compressor takes (zstd's fastest, `ZSTD_minCLevel`); the
/// highest is zstd's 22. Each compressor's own range is the kernel's to check.
const ZSTD_MIN_LEVEL: i64 = -(1 << 17);

/// The compressor flags of every kernel subcommand that fills a device.
#[derive(clap::Args, Debug, Clone)]
pub struct CompressorArgs {
    /// A compressor of the kernel's zram (its comp_algorithm) [default: the one zram selects]
    #[arg(long, value_name = "ALG")]
    pub compressor: Option<String>,
    /// Compression level, through algorithm_params
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = flag_values::signed(ZSTD_MIN_LEVEL, 22))]
    pub level: Option<i32>,
}

/// What the corpus was.
#[derive(Debug, Clone, Serialize)]
pub struct CorpusFacts {
    pub source: String,
    pub pages: u64,
}

impl CorpusArgs {
    pub fn source(&self, seed: u64) -> Source {
        let pages = self.synthetic_pages.unwrap_or(DEFAULT_SYNTHETIC_PAGES);
        Source::from_flags(self.pid, &self.paths, pages, seed)
    }

    /// Pages at most (before reading anything).
    pub fn page_bound(&self) -> usize {
        match (self.pid, self.paths.is_empty()) {
            (None, true) => self
                .synthetic_pages
                .unwrap_or(DEFAULT_SYNTHETIC_PAGES)
                .min(self.max_pages.unwrap_or(usize::MAX)),
            _ => self.max_pages.unwrap_or(DEFAULT_MAX_PAGES),
        }
    }

    /// The opening every command that fills a device shares: the devices left by ended runs
    /// removed (their records swept), then the corpus read in the host's pages.
    pub fn open(&self, host: &host::Host, seed: u64) -> LabResult<(Vec<u8>, CorpusFacts)> {
        super::device::sweep::sweep_and_report();
        self.load(seed, host.page_size)
    }

    /// Checks the flags and that the corpus, the device and a pool of the same pages fit in
    /// memory; then reads the corpus in pages of `page` bytes.
    pub fn load(&self, seed: u64, page: usize) -> LabResult<(Vec<u8>, CorpusFacts)> {
        if self.max_pages == Some(0) || self.synthetic_pages == Some(0) {
            return Err(LabError::usage("--max-pages and --synthetic-pages must be at least 1"));
        }
        let src = self.source(seed);
        src.check()?;
        // The corpus, the device and the project's pool, each at worst a page per page.
        let flag = match (self.pid, self.paths.is_empty(), self.max_pages) {
            (None, true, None) => format!("--synthetic-pages {}", self.page_bound()),
            _ => format!("--max-pages {}", self.page_bound()),
        };
        let need = (self.page_bound() as u64).saturating_mul(page as u64).saturating_mul(3);
        host::check_memory(need, &format!("the corpus of {flag}"))?;
        let data = src.load(page, self.page_bound())?;
        if data.is_empty() {
            return Err(LabError::usage(format!("{}: no page to write", src.describe())));
        }
        let pages = (data.len() / page) as u64;
        Ok((data, CorpusFacts { source: src.describe(), pages }))
    }
}
