//! Running a program under the tier: the refusals first (each one line), then the program
//! with the tier's library preloaded, its budget and a fresh stats file in its environment;
//! its exit status as a shell gives it, and the report from the stats file.

use std::ffi::OsString;
use std::fs::OpenOptions;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use zsmalloc_codec::{Codec, Compressor, DEFAULT_ZSTD_LEVEL};
use zsmalloc_core::text_input::io_reason;
use zsmalloc_core::PoolConfig;

use crate::folio::{FOLIO_VAR, READAHEAD_VAR};
use crate::policy::PolicyName;
use crate::program::{self, Unfit};
use crate::report::Report;
use crate::stats::{Snapshot, BYTES, FILE_BYTES};
use crate::uffd::{Faults, Features, Uffd, UffdError, Wait};

/// The library's file name, as cargo builds it and `make install` installs it.
pub const LIBRARY: &str = "libzsmalloc_tier_preload.so";
/// Names the library to use instead of the one found beside the command.
pub const LIBRARY_VAR: &str = "ZSMALLOC_TIER_LIBRARY";
/// The resident pages the program's tiered memory may take, for the library.
pub const BUDGET_VAR: &str = "ZSMALLOC_TIER_BUDGET";
/// The compressor's name ([`Compressor::name`]), for the library.
pub const COMPRESSOR_VAR: &str = "ZSMALLOC_TIER_COMPRESSOR";
/// The stats file the library writes its figures to.
pub const STATS_VAR: &str = "ZSMALLOC_TIER_STATS";
/// The file the library writes the pool's operations to, as a lab trace.
pub const RECORD_VAR: &str = "ZSMALLOC_TIER_RECORD";
/// Set (to anything but "0"), the library times each step of a fault's service
/// ([`crate::stats::Step`]); unset, it reads no clock for them.
pub const BREAKDOWN_VAR: &str = "ZSMALLOC_TIER_BREAKDOWN";
/// The eviction policy's name ([`PolicyName::name`]), for the library.
pub const POLICY_VAR: &str = "ZSMALLOC_TIER_POLICY";
/// Set (to 1): the library stays in the environment of the programs the program executes,
/// and a forked child is tiered on its own (`--follow-children`).
pub const FOLLOW_VAR: &str = "ZSMALLOC_TIER_FOLLOW_CHILDREN";
/// Set (to 1): the userfaultfd takes user-mode faults only (`--user-faults-only`).
pub const USER_FAULTS_VAR: &str = "ZSMALLOC_TIER_USER_FAULTS_ONLY";
/// The process the tier's variables are for (`<pid>:<start time>`), set by the library where
/// it first starts: the started process and the programs it executes are tiered, another
/// process only with `--follow-children`. The command never passes one on.
pub const PROCESS_VAR: &str = "ZSMALLOC_TIER_PROCESS";
/// The compressor when none is named: lz4, the fastest of the three (zram's own default,
/// lzo-rle, exists only in the kernel).
pub const DEFAULT_COMPRESSOR: Compressor = Compressor::Lz4;
/// The compressors the tier offers: every one the workspace has.
pub const COMPRESSORS: &[Compressor] = Compressor::ALL;
const PAGE: u64 = 4096;
/// The smallest budget: an instruction touches a few pages at most (a string move spanning
/// two pages on each side), and they must all fit, or it would fault forever.
pub const MIN_BUDGET: u64 = 16 * PAGE;

/// A run to make.
#[derive(Debug, Clone)]
pub struct Launch {
    pub budget_bytes: u64,
    /// Evicted pages are compressed with it (zstd at [`DEFAULT_ZSTD_LEVEL`]).
    pub compressor: Compressor,
    pub command: Vec<OsString>,
    /// The `ZSMALLOC_*` variables of the pool's configuration, set for the program.
    pub pool_env: Vec<(String, String)>,
    pub library: PathBuf,
    /// The file the library writes the pool's operations to (a trace), if any.
    pub record: Option<PathBuf>,
    /// Pages evicted as one object (`--folio-size`: 1, 4 or 16).
    pub folio_pages: u32,
    /// The readahead's page-cluster (`--readahead`: 0, none, to 4, 16 pages).
    pub readahead: u32,
    /// Chooses the pages to evict.
    pub policy: PolicyName,
    /// The programs it executes and the children it forks are tiered too, each on its own.
    pub follow_children: bool,
    /// The userfaultfd takes only the faults of the program's own instructions: a system call
    /// on a page that is not there fails with `EFAULT`.
    pub user_faults_only: bool,
}

impl Launch {
    /// The faults the tier's userfaultfd takes.
    pub fn faults(&self) -> Faults {
        if self.user_faults_only {
            Faults::UserModeOnly
        } else {
            Faults::All
        }
    }
}

/// Why a run was not made: the exit status to give and the line to print.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub exit_code: i32,
    pub message: String,
}

fn refuse(message: impl Into<String>) -> Refusal {
    Refusal { exit_code: 2, message: message.into() }
}

impl From<Unfit> for Refusal {
    fn from(u: Unfit) -> Refusal {
        Refusal { exit_code: u.exit_code(), message: u.to_string() }
    }
}

/// The machine's memory (`MemTotal`), in bytes.
pub fn mem_total() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The tier's library: `ZSMALLOC_TIER_LIBRARY`, else beside `exe`, else in `../lib` from it
/// (an installed command).
pub fn find_library(exe: &Path) -> Result<PathBuf, Refusal> {
    if let Some(p) = std::env::var_os(LIBRARY_VAR) {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(refuse(format!("{LIBRARY_VAR}={}: no such file", p.display())))
        };
    }
    let dir = exe.parent().unwrap_or(Path::new("."));
    let candidates = [dir.join(LIBRARY), dir.join("../lib").join(LIBRARY)];
    candidates.iter().find(|p| p.is_file()).cloned().ok_or_else(|| {
        refuse(format!(
            "the tier's library {LIBRARY} is not beside {} nor in ../lib; build it (cargo build \
             --release -p zsmalloc-tier-preload) or name it with {LIBRARY_VAR}",
            exe.display()
        ))
    })
}

/// The refusals that need no program: the budget, the pool's configuration, userfaultfd.
pub fn check(launch: &Launch) -> Result<(), Refusal> {
    if launch.budget_bytes < MIN_BUDGET {
        return Err(refuse(format!(
            "--budget {}: the budget must be at least 64K (16 pages: one instruction may need \
             several pages resident at once)",
            launch.budget_bytes
        )));
    }
    if let Some(total) = mem_total().filter(|&t| launch.budget_bytes > t) {
        return Err(refuse(format!(
            "--budget {} is above this machine's memory ({total} bytes): a budget is a share \
             of memory",
            launch.budget_bytes
        )));
    }
    crate::folio::check_readahead(launch.readahead, launch.folio_pages).map_err(refuse)?;
    pool_config(launch)?;
    // Made once here so that a compressor the machine lacks (liblzo2) is refused before the
    // program runs rather than by the library inside it.
    Codec::new(launch.compressor, DEFAULT_ZSTD_LEVEL, PAGE as usize)
        .map_err(|e| refuse(format!("--compressor {}: {e}", launch.compressor.name())))?;
    // With the policy's features, so that a kernel without them refuses it here, by name.
    let features = Features::MOVE | launch.policy.features();
    match Uffd::open_for(Wait::NonBlocking, features, launch.faults()) {
        Ok(_) => Ok(()),
        Err(e @ UffdError::FeaturesUnavailable { .. }) if !launch.policy.features().is_empty() => {
            Err(refuse(format!("--policy {}: {e}", launch.policy.name())))
        }
        Err(UffdError::NoPermission) => Err(refuse(
            "userfaultfd: permission denied: needs root or access to /dev/userfaultfd, or \
             --user-faults-only (a system call on evicted memory then fails with EFAULT); it \
             never changes vm.unprivileged_userfaultfd itself",
        )),
        Err(e) => Err(refuse(e.to_string())),
    }
}

/// The pool's configuration the program's library will make (from the flags, else the
/// environment).
fn pool_config(launch: &Launch) -> Result<PoolConfig, Refusal> {
    let env = pool_env(launch)?;
    let lookup = |name: &str| {
        env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()).or(std::env::var(name).ok())
    };
    PoolConfig::from_lookup(lookup).map_err(|e| refuse(format!("the pool's configuration: {e}")))
}

/// The pool's variables for the program: the given ones, with the multi-page band a folio
/// above a page needs.
fn pool_env(launch: &Launch) -> Result<Vec<(String, String)>, Refusal> {
    let given = &launch.pool_env;
    let lookup = |name: &str| {
        given.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()).or(std::env::var(name).ok())
    };
    crate::folio::pool_env(launch.folio_pages, given, lookup).map_err(refuse)
}

/// A fresh stats file of the right length, in the temporary directory.
fn stats_file() -> Result<PathBuf, Refusal> {
    remove_stale_stats(&std::env::temp_dir());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let path =
        std::env::temp_dir().join(format!("zsmalloc-tier-{}-{nanos}.stats", std::process::id()));
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .and_then(|f| f.set_len(FILE_BYTES as u64).map(|_| f));
    match f {
        Ok(_) => Ok(path),
        Err(e) => Err(refuse(format!("cannot make '{}': {}", path.display(), io_reason(&e)))),
    }
}

/// Removes the stats files in `dir` that a `zsmalloc tier` killed before it could remove its
/// own left there: this user's, named for a process that no longer exists.
pub fn remove_stale_stats(dir: &Path) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("zsmalloc-tier-"))
            .filter(|n| n.ends_with(".stats"))
            .and_then(|n| n.split('-').next())
            .and_then(|p| p.parse::<libc::pid_t>().ok())
            .filter(|&p| p > 0)
        else {
            continue;
        };
        let mine = entry.metadata().is_ok_and(|m| m.is_file() && m.uid() == me);
        // SAFETY: kill with signal 0 sends nothing; it only asks whether `pid` exists.
        let gone = unsafe { libc::kill(pid, 0) } != 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if mine && gone {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// The stats file's blocks up to the first that no process claimed (blocks are claimed in
/// order), so that a run of one process reads one block, not the whole file.
fn claimed_blocks(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    let mut block = vec![0u8; BYTES];
    while bytes.len() < FILE_BYTES && file.read_exact(&mut block).is_ok() {
        if Snapshot::from_bytes(&block).is_none() {
            break;
        }
        bytes.extend_from_slice(&block);
    }
    Ok(bytes)
}

/// Runs the program under the tier and waits for it: its exit status and the report. While
/// it runs, the terminal's SIGINT and SIGQUIT are left to it (as `time` does), so the report
/// is printed however it ends.
pub fn run(launch: &Launch) -> Result<Report, Refusal> {
    check(launch)?;
    let pool_page_bytes = u64::from(pool_config(launch)?.page_size);
    let name = launch.command.first().ok_or_else(|| refuse("no command to run"))?;
    let path = program::resolve(name)?;
    program::check_preloadable(&path)?;
    let stats = stats_file()?;
    let mut preload = launch.library.clone().into_os_string();
    if let Some(old) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
        preload.push(":");
        preload.push(old);
    }
    let mut cmd = Command::new(&path);
    cmd.arg0(name)
        .args(&launch.command[1..])
        .env("LD_PRELOAD", preload)
        .env_remove(PROCESS_VAR)
        .env(BUDGET_VAR, (launch.budget_bytes / PAGE).to_string())
        .env(COMPRESSOR_VAR, launch.compressor.name())
        .env(STATS_VAR, &stats)
        .env(POLICY_VAR, launch.policy.name())
        .envs(launch.record.iter().map(|p| (RECORD_VAR, p)))
        .envs(pool_env(launch)?)
        .envs((launch.folio_pages > 1).then(|| (FOLIO_VAR, launch.folio_pages.to_string())))
        .envs((launch.readahead > 0).then(|| (READAHEAD_VAR, launch.readahead.to_string())))
        .envs(launch.follow_children.then_some((FOLLOW_VAR, "1")))
        .envs(launch.user_faults_only.then_some((USER_FAULTS_VAR, "1")));
    let ignore = |sig| {
        // SAFETY: setting a signal's disposition to ignore or default touches no memory.
        unsafe { libc::signal(sig, libc::SIG_IGN) }
    };
    let t0 = std::time::Instant::now();
    let spawned = cmd.spawn();
    let old = [ignore(libc::SIGINT), ignore(libc::SIGQUIT)];
    let ended = spawned.and_then(|child| crate::ending::wait(child.id()));
    let elapsed = t0.elapsed();
    for (sig, was) in [libc::SIGINT, libc::SIGQUIT].into_iter().zip(old) {
        // SAFETY: as above, restoring the disposition that was.
        unsafe { libc::signal(sig, was) };
    }
    let bytes = claimed_blocks(&stats);
    let _ = std::fs::remove_file(&stats);
    let shown = name.to_string_lossy().into_owned();
    let ended = match ended {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Unfit::NotFound(shown).into())
        }
        Err(e) => {
            return Err(Refusal { exit_code: 126, message: format!("{shown}: {}", io_reason(&e)) })
        }
    };
    let processes = bytes.map(|b| Snapshot::processes(&b)).unwrap_or_default();
    let untiered_program = processes
        .first()
        .map(Snapshot::command)
        .filter(|tiered| !ended.command.is_empty() && *tiered != ended.command)
        .map(|_| ended.command.clone());
    Ok(Report {
        command: shown,
        budget_bytes: launch.budget_bytes,
        compressor: launch.compressor,
        policy: launch.policy,
        exit_status: ended.status,
        record: None,
        folio_pages: launch.folio_pages,
        readahead: launch.readahead,
        figures: Snapshot::total(&processes),
        processes: if launch.follow_children { processes } else { Vec::new() },
        user_faults_only: launch.user_faults_only,
        run: crate::ending::Ran {
            elapsed,
            usage: ended.usage,
            untiered_program,
            follow_children: launch.follow_children,
            pool_page_bytes,
        },
    })
}
