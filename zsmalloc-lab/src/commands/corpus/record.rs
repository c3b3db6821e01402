//! `zsmalloc corpus record [--programs FILE] [--only NAMES] -o DIR [--budgets SHARES]
//! [--folio-sizes SIZES] [--page-sizes SIZES] [--compressor NAME] [--policy NAME] [--timeout
//! SECS]`: the corpus recorded ([`crate::corpus::recorder`]), its traces listed on stdout.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::super::output::emit;
use crate::corpus::program_list;
use crate::corpus::recorder::{self, Recorded};
use crate::corpus::settings::{folio_size, page_size, Settings, Share};
use crate::error::{LabError, LabResult};
use crate::flag_values;
use crate::report::{Format, Render};
use zsmalloc_codec::Compressor;
use zsmalloc_tier::launch::COMPRESSORS;
use zsmalloc_tier::policy::PolicyName;

pub const HELP: &str = "For each program of the list found on this machine (else a line says it \
is skipped): its input made in a fresh directory by the list's command, one run untiered for its \
peak RSS, then one run per budget share, folio size and page size under `zsmalloc tier --budget \
SHARE*RSS --record`, each in a fresh directory. Each trace is written to DIR in the binary form \
(zstd), with DIR/manifest.json (program, arguments, input command, budget, policy, compressor, \
machine, sizes, SHA-256, operations). A run past --timeout is stopped with everything it \
started, and left out; so is a run that puts nothing in the pool. Progress on stderr, a line \
per program. Needs root and userfaultfd.

Examples:
  zsmalloc corpus record -o corpus                           # the default list, 1/3 of RSS, 4K
  zsmalloc corpus record --only python3,sqlite3 -o small
  zsmalloc corpus record --budgets 1/2,1/4 --folio-sizes 4K,16K,64K -o folios
  zsmalloc corpus record --programs my-programs.json -o mine

See docs/CORPUS.md (the list's format, publishing a corpus).";

#[derive(Args, Debug)]
pub struct RecordArgs {
    /// The program list, JSON (docs/CORPUS.md) [default: the built-in list of 19]
    #[arg(long, value_name = "FILE")]
    pub programs: Option<PathBuf>,
    /// Only these programs of the list (names, comma-separated)
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    pub only: Vec<String>,
    /// The corpus's directory: made, or empty
    #[arg(short = 'o', long = "output", value_name = "DIR", required = true)]
    pub output: PathBuf,
    /// The budgets, as shares of each program's peak RSS untiered (N/M or a decimal)
    #[arg(long, value_name = "SHARES", value_delimiter = ',', default_value = "1/3",
          value_parser = Share::parse)]
    pub budgets: Vec<Share>,
    /// The tier's eviction units (4K, 16K, 64K): a trace per size
    #[arg(long, value_name = "SIZES", value_delimiter = ',', default_value = "4K",
          value_parser = folio_size)]
    pub folio_sizes: Vec<u64>,
    /// The pool's page sizes (4K to 64K) [default: the machine's]
    #[arg(long, value_name = "SIZES", value_delimiter = ',', value_parser = page_size)]
    pub page_sizes: Vec<u64>,
    /// The compressor of evicted pages: lz4, lzo or zstd
    #[arg(long, value_name = "NAME", default_value = "lz4")]
    pub compressor: String,
    /// The eviction policy: fifo, clock or lru (zsmalloc tier --policy)
    #[arg(long, value_name = "NAME", default_value = "fifo")]
    pub policy: String,
    /// Each run's deadline (the input's, the untiered run's, each tiered run's), in seconds
    #[arg(long, value_name = "SECS", default_value = "120",
          value_parser = flag_values::whole::<u64>(1, 86_400))]
    pub timeout: u64,
    /// The list of traces: table, json or csv
    #[arg(long, value_enum, default_value_t, value_name = "FORMAT")]
    pub format: Format,
}

pub fn run(a: RecordArgs) -> LabResult<()> {
    let format = a.format.offered_by::<Recorded>()?;
    Compressor::parse(&a.compressor, COMPRESSORS)
        .map_err(|e| LabError::usage(format!("--compressor: {e}")))?;
    PolicyName::parse(&a.policy).map_err(|e| LabError::usage(format!("--policy: {e}")))?;
    let programs = program_list::only(program_list::load(a.programs.as_deref())?, &a.only)?;
    let mut page_sizes = a.page_sizes;
    if page_sizes.is_empty() {
        page_sizes.push(zsmalloc_tier::uffd::page_size() as u64);
    }
    let command: Vec<String> =
        std::env::args_os().map(|s| s.to_string_lossy().into_owned()).collect();
    // The runs happen in directories of their own: the corpus's path must not depend on the
    // current one.
    let out = std::path::absolute(&a.output).map_err(|e| LabError::io("find", &a.output, &e))?;
    let settings = Settings {
        out,
        shares: dedup(a.budgets),
        folio_sizes: dedup(a.folio_sizes),
        page_sizes: dedup(page_sizes),
        compressor: a.compressor,
        policy: a.policy,
        timeout: Duration::from_secs(a.timeout),
        command: command.join(" "),
    };
    let recorded = recorder::record(&programs, &settings)?;
    emit(&recorded.render(format)?)?;
    if recorded.manifest.traces.is_empty() {
        return Err(LabError::runtime("no trace recorded"));
    }
    Ok(())
}

/// `v` without repeats, in its order.
fn dedup<T: PartialEq>(v: Vec<T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::with_capacity(v.len());
    for x in v {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}
