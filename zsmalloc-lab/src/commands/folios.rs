//! `zsmalloc folios`: large folios compressed whole, one object each, against 4K pages (the
//! study itself is [`crate::folios`]).

use std::path::PathBuf;

use clap::Args;
use zsmalloc_codec::{Compressor, DEFAULT_ZSTD_LEVEL};

use super::output::emit;
use crate::atomic_file::CreatedDir;
use crate::config::assemble::assemble_one;
use crate::config::flags::ConfigFlags;
use crate::cost::corpus::Source;
use crate::cost::corpus::MAX_SYNTHETIC_PAGES;
use crate::error::{LabError, LabResult};
use crate::flag_values;
use crate::folios::options::{self as opt, FoliosOptions};
use crate::progress::ProgressSink;
use crate::report::{Format, Render};
use crate::{folios, plot, report};

/// The command's help after the flags.
pub const HELP: &str = "Each folio size gets a pool of its own with the multi-page band at that \
size (a folio of one page: the band off). Every folio of the corpus is tested for same-filled \
(8-byte words over the whole folio; kept outside the pool), else compressed whole and stored as \
one object, raw when the compressed length reaches the band's huge class size. Then a seeded \
--churn-share of the folios is swapped in (freed) and as many folios drawn from the corpus are \
stored (--refill-share of as many: 0 leaves the holes for compaction), and the pool is compacted. Swap-in is timed three ways on a sample: large_folio (one \
decompression into the large folio), order0_fallback (no large folio: each 4K fault decompresses \
the whole object), batch_fallback (the RFC's v3 4/4: each decompression fills four small \
folios); mixed_* weigh them by --fallback-share. Swap-out is timed per folio and per 4K page.

Compressors: lz4 and zstd (liblz4, libzstd) and lzo (liblzo2's LZO1X-1, the kernel's lzo). \
lzo-rle exists only in the kernel, which compresses 4K pages with it, never a large folio: it \
has no figures here.

Examples:
  zsmalloc folios                                       # built-in corpus, 4K,16K,64K, lz4,lzo,zstd
  zsmalloc folios /usr/lib/x86_64-linux-gnu --max-pages 51200 --format json
  zsmalloc folios --pid 1234 --folio-sizes 4K,16K --compressor lz4,zstd
  zsmalloc folios --fallback-share 0.3 --plot folios.svg

See docs/LAB.md (folios) and docs/STUDY.md (Objects of several pages).";

#[derive(Args, Debug)]
pub struct FoliosArgs {
    /// Files or directories to take pages from (walked recursively) [default: the built-in corpus]
    pub paths: Vec<PathBuf>,
    /// Take pages from the anonymous memory of a live process (resident or swapped pages only)
    #[arg(long, value_name = "PID", conflicts_with = "paths", value_parser = flag_values::whole::<u32>(1, u64::from(u32::MAX)))]
    pub pid: Option<u32>,
    /// Folio sizes, comma-separated: the page size shifted left by 0..=4, at most 64K
    /// [default: 4K,16K,64K]
    #[arg(long, value_name = "LIST", value_parser = opt::folio_size_list)]
    pub folio_sizes: Option<String>,
    /// lz4, lzo, zstd, comma-separated [default: lz4,lzo,zstd]
    #[arg(long, value_name = "LIST")]
    pub compressor: Option<String>,
    /// zstd level, 1..=22 (lz4 and lzo take none) [default: 3, zram's]
    #[arg(long, value_name = "N", value_parser = flag_values::signed(1, 22))]
    pub level: Option<i32>,
    /// Share of the folios swapped in and replaced, 0..=1 [default: 0.5]
    #[arg(long, value_name = "SHARE", value_parser = flag_values::share)]
    pub churn_share: Option<f64>,
    /// Folios stored anew after the swap-ins, as a share of them, 0..=1 [default: 1, as many]
    #[arg(long, value_name = "SHARE", value_parser = flag_values::share)]
    pub refill_share: Option<f64>,
    /// Share of swap-ins that find no large folio, for the mixed figures, 0..=1 [default: 0.1,
    /// an assumption]
    #[arg(long, value_name = "SHARE", value_parser = flag_values::share)]
    pub fallback_share: Option<f64>,
    /// Timed rounds, interleaved; times are min/median/max over them [default: 3]
    #[arg(long, value_name = "N", value_parser = flag_values::whole::<usize>(1, 1000))]
    pub repeat: Option<usize>,
    /// Folio bytes timed per round and path, MiB (a seeded sample) [default: 16]
    #[arg(long, value_name = "MIB", value_parser = flag_values::whole::<u64>(1, u64::MAX))]
    pub sample_mib: Option<u64>,
    /// Seed of the built-in corpus, the churn and the sample [default: 1]
    #[arg(long, value_name = "N", value_parser = flag_values::any_whole::<u64>())]
    pub seed: Option<u64>,
    /// Pages of the built-in corpus [default: 16384]
    #[arg(long, value_name = "N", value_parser = flag_values::whole::<usize>(1, MAX_SYNTHETIC_PAGES as u64))]
    pub synthetic_pages: Option<usize>,
    /// Input pages read at most from files or a process [default: 16384]
    #[arg(long, value_name = "N", value_parser = flag_values::whole::<usize>(1, u64::MAX))]
    pub max_pages: Option<usize>,
    /// Refuse to run when the memory plan needs more, e.g. 6G [default: what the machine has
    /// available]
    #[arg(long, value_name = "BYTES", value_parser = crate::memory::parse_memory)]
    pub max_memory: Option<u64>,
    #[command(flatten)]
    pub pool: ConfigFlags,
    /// Output format: table, json or csv
    #[arg(long, value_name = "FORMAT", help_heading = "Output", value_enum, default_value_t = Format::Table, hide_possible_values = true)]
    pub format: Format,
    /// Draw an SVG: pages and swap-in CPU against the folio size, per compressor
    #[arg(long, value_name = "FILE.svg", help_heading = "Output")]
    pub plot: Option<PathBuf>,
    /// Write each row's stores, swap-ins, compaction and a final read of every folio as a
    /// trace, DIR/<compressor>-<folio>K.trace (DIR is created if missing), for `replay` and
    /// `optimize trace` (with the row's --multi-page)
    #[arg(long, value_name = "DIR", help_heading = "Output")]
    pub trace_dir: Option<PathBuf>,
}

fn options(a: &FoliosArgs) -> LabResult<FoliosOptions> {
    let spec = assemble_one(&a.pool, "folios")?;
    if !spec.is_zsmalloc() || spec.config.class_table.is_some() {
        return Err(LabError::usage(
            "folios runs zsmalloc with computed classes: no --backend other than zsmalloc, no \
             --class-table",
        ));
    }
    let config = spec.config;
    let seed = a.seed.unwrap_or(1);
    let pages = a.synthetic_pages.unwrap_or(opt::DEFAULT_PAGES);
    let source = Source::from_flags(a.pid, &a.paths, pages, seed);
    let compressors = Compressor::parse_list(
        a.compressor.as_deref().unwrap_or(opt::DEFAULT_COMPRESSORS),
        Compressor::ALL,
    )?;
    let zstd_level = match a.level {
        None => DEFAULT_ZSTD_LEVEL,
        Some(_) if !compressors.contains(&Compressor::Zstd) => {
            return Err(LabError::usage("--level is zstd's: lz4 and lzo take none"));
        }
        Some(l) if !(1..=22).contains(&l) => {
            return Err(LabError::usage(format!("invalid --level {l}: 1..=22")));
        }
        Some(l) => l,
    };
    let sample_bytes = a.sample_mib.unwrap_or(opt::DEFAULT_SAMPLE_MIB).saturating_mul(1 << 20);
    Ok(FoliosOptions {
        source,
        max_pages: a.max_pages.unwrap_or(opt::DEFAULT_PAGES),
        folio_sizes: opt::parse_folio_sizes(
            a.folio_sizes.as_deref().unwrap_or(opt::DEFAULT_FOLIO_SIZES),
            config.page_size,
        )?,
        config,
        compressors,
        zstd_level,
        churn_share: opt::parse_share(
            "--churn-share",
            a.churn_share.unwrap_or(opt::DEFAULT_CHURN_SHARE),
        )?,
        refill_share: opt::parse_share("--refill-share", a.refill_share.unwrap_or(1.0))?,
        fallback_share: opt::parse_share(
            "--fallback-share",
            a.fallback_share.unwrap_or(opt::DEFAULT_FALLBACK_SHARE),
        )?,
        repeat: a.repeat.unwrap_or(3),
        seed,
        sample_bytes,
        max_memory: a.max_memory,
        trace_dir: a.trace_dir.clone(),
    })
}

pub fn run(a: FoliosArgs) -> LabResult<()> {
    let format = a.format.offered_by::<crate::folios::FoliosReport>()?;
    let opts = options(&a)?;
    if let Some(p) = &a.plot {
        report::check_writable("--plot", p)?;
    }
    // Made for the traces, it goes again if the run fails or is interrupted.
    let made_dir = match &a.trace_dir {
        Some(dir) => Some(CreatedDir::create(dir).map_err(|e| {
            LabError::usage(format!("--trace-dir: {}", LabError::io("create", dir, &e)))
        })?),
        None => None,
    };
    let sink = ProgressSink::auto();
    let r = folios::run(&opts, &sink)?;
    sink.clear();
    if let Some(p) = &a.plot {
        plot::folios(p, &r)?;
    }
    if let Some(d) = made_dir {
        d.keep();
    }
    emit(&r.render(format)?)
}
