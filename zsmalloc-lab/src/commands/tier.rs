//! `zsmalloc tier [--budget BYTES] [--compressor NAME] [--policy fifo|clock|lru] [--folio-size
//! SIZE] [--readahead N] [--report FILE] [--record FILE] [--follow-children]
//! [--user-faults-only] [POOL FLAGS] -- COMMAND [ARGS...]`: runs
//! COMMAND with its memory under a budget, the rest in a zsmalloc pool (the tier: crate
//! `zsmalloc-tier`, its library preloaded into the program). This module parses the flags,
//! finds the library, runs, prints the report and gives the program's exit status.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;

use crate::atomic_file;
use crate::flag_values;
use zsmalloc_codec::Compressor;
use zsmalloc_core::text_input::escape;
use zsmalloc_tier::folio::MAX_READAHEAD;
use zsmalloc_tier::launch::{self, Launch, COMPRESSORS};
use zsmalloc_tier::policy::PolicyName;

/// `--folio-size`: 4K, 16K or 64K, as pages.
fn folio_pages(s: &str) -> Result<u32, String> {
    match zsmalloc_core::config::parse_bytes(s) {
        Some(4096) => Ok(1),
        Some(16384) => Ok(4),
        Some(65536) => Ok(16),
        _ => Err("4K, 16K or 64K is accepted".into()),
    }
}

/// `--budget`: a size, in one line whatever is wrong with it (clap's own range and its advice
/// to write `-- -5` would contradict the 64K minimum and make the value the program).
fn budget(s: &str) -> Result<u64, String> {
    let accepted = "a size of at least 64K (64K, 32M, 1G) is accepted";
    if s.starts_with('-') {
        return Err(format!("a budget is not negative; {accepted}"));
    }
    zsmalloc_core::config::parse_bytes(s).ok_or_else(|| accepted.to_string())
}

pub const HELP: &str = "The program's malloc blocks and anonymous private mappings above a page \
come from memory the tier registers with userfaultfd; above the budget the oldest pages (by \
arrival; with --policy clock, those not written lately; with lru, those not touched on the \
inactive list they first leave for) are compressed (--compressor: lz4, \
lzo or zstd at level 3) into the pool and brought back on their next touch. Needs root \
or access to /dev/userfaultfd (else --user-faults-only). The programs the started process \
executes stay tiered (a launcher such as pyenv's shim, env, sh -c 'exec ...'); children it \
forks or spawns, and what they execute, run untiered unless --follow-children. The report: \
wall and CPU time, the share of the peak RSS tiered, a line when little was tiered or the run \
thrashed. Exit status: the program's (128+N after signal N, 127 when not found, 126 when it \
cannot be executed); 2 when the tier refuses.

Examples:
  zsmalloc tier --budget 32M -- python3 -c 'print(len([str(i) for i in range(10**6)]))'
  zsmalloc tier --budget 64M --chain-size 8 --report r.json -- ./my-program
  zsmalloc tier --budget 32M --compressor zstd -- ./my-program
  zsmalloc tier --budget 32M --policy clock -- ./my-program
  zsmalloc tier --budget 32M --record t.trace -- ./my-program && zsmalloc replay t.trace
  zsmalloc tier --budget 32M --folio-size 64K -- ./my-program
  zsmalloc tier --budget 32M --readahead 3 -- ./my-program
  zsmalloc tier --budget 16M --follow-children -- sh -c './prepare && ./my-program'
  zsmalloc tier --budget 32M --user-faults-only -- ./my-program    # without root
  zsmalloc tier --budget 32M --vs-kernel -- ./my-program    # root: again under zram swap, side by side

See docs/TIER.md.";

#[derive(Args, Debug)]
pub struct TierArgs {
    /// Resident memory the program's tiered pages may take (64K, 32M, 1G): at least 64K, at
    /// most the machine's memory
    #[arg(long, value_name = "BYTES", default_value = "64M", allow_hyphen_values = true,
          value_parser = budget)]
    pub budget: u64,
    /// The compressor of evicted pages: lz4 (the fastest), lzo (liblzo2's LZO1X-1, needs
    /// liblzo2) or zstd (level 3)
    #[arg(long, value_name = "NAME", default_value = "lz4")]
    pub compressor: String,
    /// The eviction policy: fifo (oldest arrival first), clock (second chance for pages
    /// written since the last round, seen through async write-protect and PAGEMAP_SCAN) or lru
    /// (the kernel's active and inactive lists: the oldest pages leave uncompressed first, and
    /// a touch brings them back at once; 4K folios only)
    #[arg(long, value_name = "NAME", default_value = "fifo")]
    pub policy: String,
    /// Write the report as JSON to FILE as well
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Write the pool's operations to FILE as a trace (for replay, compare trace, optimize
    /// trace); same-filled pages are not in the pool and not recorded
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// The eviction unit: 4K (a page), or 16K or 64K, an aligned group of pages of the tier's
    /// reserve evicted as one object in the pool's multi-page band and brought back whole by a
    /// fault on any of its pages (the multi-page RFC's large folios)
    #[arg(long, value_name = "SIZE", default_value = "4K", value_parser = folio_pages)]
    pub folio_size: u32,
    /// Swap's page-cluster: a fault on an evicted page also decompresses the other evicted pages
    /// of its aligned cluster of 2^N pages into a cache, from which their faults are served
    /// without a pool read (0: none; 4K folios only)
    #[arg(long, value_name = "N", default_value = "0",
          value_parser = flag_values::whole::<u32>(0, u64::from(MAX_READAHEAD)))]
    pub readahead: u32,
    /// Tier the children it forks (fork, vfork, posix_spawn, system, a shell's commands) and
    /// the programs they execute, down the generations (the programs the started process
    /// executes are tiered without it): each process has its own handler, pool and budget (the
    /// budget is per process, not shared); the report adds them up and gives a line per process
    /// (at most 256)
    #[arg(long)]
    pub follow_children: bool,
    /// Without root or access to /dev/userfaultfd: take only the faults of the program's own
    /// instructions (UFFD_USER_MODE_ONLY). Caveat: a system call that reads or writes tiered
    /// memory that is not resident fails with EFAULT, so the program sees an error from
    /// read(2), write(2), open(2) of a path...; fresh memory is mapped as zero pages when handed
    /// out, so only evicted pages fail, the likelier the smaller the budget (a buffer larger
    /// than the budget filled by one read always fails: sort's). Forked children then stay
    /// untiered; see docs/TIER.md, Without root
    #[arg(long)]
    pub user_faults_only: bool,
    /// The pool's page size
    #[arg(long, value_name = "BYTES", help_heading = "Pool")]
    pub page_size: Option<String>,
    /// The pool's zspage chain size (1..=16)
    #[arg(long, value_name = "N", help_heading = "Pool")]
    pub chain_size: Option<String>,
    /// The pool's class delta
    #[arg(long, value_name = "BYTES", help_heading = "Pool")]
    pub class_delta: Option<String>,
    /// classic, heuristic or fixed-N
    #[arg(long, value_name = "POLICY", help_heading = "Pool")]
    pub chain_policy: Option<String>,
    /// A class table file (docs/DESIGN.md, Class tables)
    #[arg(long, value_name = "FILE", help_heading = "Pool")]
    pub class_table: Option<String>,
    /// zsmalloc, zblock or malloc
    #[arg(long, value_name = "NAME", help_heading = "Pool")]
    pub backend: Option<String>,
    /// The pool's multi-page band: objects up to SIZE (docs/DESIGN.md, Objects of several
    /// pages); --folio-size sets it to the folio's size when unset
    #[arg(long, value_name = "SIZE", help_heading = "Pool")]
    pub multi_page: Option<String>,
    /// The pool's limit in pages (0: none); when it is reached, eviction pauses
    #[arg(long, value_name = "PAGES", help_heading = "Pool")]
    pub pool_limit: Option<String>,
    /// Root only: run the program a second time under the kernel's own zram swap (a private
    /// device swapped on at the highest priority, machine-wide while it runs, and a memory
    /// cgroup limited to the budget plus the program's untiered memory), and print both runs
    /// side by side; everything is taken down after (docs/TIER.md, Beside the kernel)
    #[arg(long)]
    pub vs_kernel: bool,
    /// With --vs-kernel: run even on a machine under memory pressure, already swapping, or
    /// with less than twice the program's peak available
    #[arg(long, requires = "vs_kernel")]
    pub yes: bool,
    /// With --vs-kernel: the zram device's size (default 4x the program's peak, at least 64M)
    #[arg(long, value_name = "BYTES", requires = "vs_kernel", value_parser = budget)]
    pub kernel_disksize: Option<u64>,
    /// The program to run and its arguments (after --)
    #[arg(required = true, last = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

impl TierArgs {
    /// The pool flags given, as the variables the core reads, each with its flag's name.
    fn pool_env(&self) -> Vec<(&'static str, &'static str, String)> {
        [
            ("--page-size", "ZSMALLOC_PAGE_SIZE", &self.page_size),
            ("--chain-size", "ZSMALLOC_CHAIN_SIZE", &self.chain_size),
            ("--class-delta", "ZSMALLOC_CLASS_DELTA", &self.class_delta),
            ("--chain-policy", "ZSMALLOC_CHAIN_POLICY", &self.chain_policy),
            ("--class-table", "ZSMALLOC_CLASS_TABLE", &self.class_table),
            ("--backend", "ZSMALLOC_BACKEND", &self.backend),
            ("--pool-limit", "ZSMALLOC_MEM_LIMIT_PAGES", &self.pool_limit),
            ("--multi-page", "ZSMALLOC_MULTI_PAGE_SIZE", &self.multi_page),
        ]
        .into_iter()
        .filter_map(|(flag, var, v)| v.clone().map(|v| (flag, var, v)))
        .collect()
    }
}

/// Runs the command; the exit status to give (the program's, or 2 for a refusal).
pub fn run(a: TierArgs) -> i32 {
    let refused = |msg: &str, code| {
        eprintln!("zsmalloc tier: {}", escape(msg));
        code
    };
    let compressor = match Compressor::parse(&a.compressor, COMPRESSORS) {
        Ok(c) => c,
        Err(e) => return refused(&format!("--compressor: {e}"), 2),
    };
    let policy = match PolicyName::parse(&a.policy) {
        Ok(p) => p,
        Err(e) => return refused(&format!("--policy: {e}"), 2),
    };
    if policy == PolicyName::Lru && a.folio_size > 1 {
        return refused(
            "--policy lru moves single pages to its inactive list: it takes --folio-size 4K only",
            2,
        );
    }
    if a.vs_kernel {
        if let Err(msg) = super::tier_vs_kernel::preflight::check(a.yes) {
            return refused(&msg, 2);
        }
        super::tier_vs_kernel::kernel_run::remember_stdin();
    }
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("zsmalloc"));
    let library = match launch::find_library(&exe) {
        Ok(l) => l,
        Err(r) => return refused(&r.message, r.exit_code),
    };
    let named = a.pool_env();
    let mut launch = Launch {
        budget_bytes: a.budget,
        compressor,
        command: a.command.clone(),
        pool_env: named.iter().map(|(_, var, v)| (var.to_string(), v.clone())).collect(),
        library,
        record: None,
        folio_pages: a.folio_size,
        readahead: a.readahead,
        policy,
        follow_children: a.follow_children,
        user_faults_only: a.user_faults_only,
    };
    if let Some(path) = &a.report {
        if let Err(e) = atomic_file::check(path) {
            let e = crate::error::LabError::io("write", path, &e);
            return refused(&e.to_string(), 2);
        }
    }
    // The program writes the trace's temporary; it becomes the file once the program is done,
    // and a refusal or an interruption leaves nothing.
    let record = match a.record.as_deref().map(atomic_file::AtomicFile::create).transpose() {
        Ok(r) => r,
        Err(e) => return refused(&e.to_string(), 2),
    };
    launch.record = record.as_ref().map(|f| f.writing_path().to_path_buf());
    let mut report = match launch::run(&launch) {
        Ok(r) => r,
        Err(r) => {
            // A pool variable set by a flag is named by its flag.
            let mut msg = r.message;
            for (flag, var, _) in &named {
                msg = msg.replace(var, flag);
            }
            return refused(&msg, r.exit_code);
        }
    };
    if let Some(file) = record {
        report.record = Some(file.target().display().to_string());
        if let Err(e) = file.commit() {
            eprint!("{}", report.to_text());
            eprintln!("zsmalloc tier: {e}");
            return if report.exit_status == 0 { 2 } else { report.exit_status };
        }
    }
    eprint!("{}", report.to_text());
    let mut json = report.to_json();
    let mut status = report.exit_status;
    if a.vs_kernel {
        let req = super::tier_vs_kernel::Request {
            command: &a.command,
            budget: a.budget,
            compressor: compressor.name(),
            disksize: a.kernel_disksize,
            yes: a.yes,
        };
        match super::tier_vs_kernel::run(&req, &json) {
            Ok(k) => {
                eprint!("{}", k.to_text(&json));
                json["kernel"] = k.to_json();
            }
            Err(f) => {
                eprintln!("zsmalloc tier: {}", escape(&f.message));
                if status == 0 {
                    status = f.exit_code;
                }
            }
        }
    }
    if let Some(path) = &a.report {
        let text = serde_json::to_string_pretty(&json).expect("JSON of plain values");
        if let Err(e) = atomic_file::write(path, format!("{text}\n").as_bytes()) {
            eprintln!("zsmalloc tier: {e}");
            return if status == 0 { 2 } else { status };
        }
    }
    status
}
