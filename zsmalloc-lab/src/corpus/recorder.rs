//! `corpus record`'s work: for each program, its input made in a fresh directory, one run
//! untiered for its peak RSS, then one run under `zsmalloc tier --record` per budget share, folio
//! size and pool page size (this same binary), each trace rewritten in the binary form and
//! checksummed, and the manifest written after each trace. A program this machine lacks, one
//! that fails untiered, and a run that ends past the deadline or leaves nothing in the pool are
//! skipped, with a line saying why.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;
use zsmalloc_core::text_input::escape;

use super::bounded::{self, Ended};
use super::manifest::{Manifest, TraceEntry};
use super::program_list::Program;
use super::settings::{size_flag, Settings, Share};
use super::{machine, trace_file};
use crate::error::{LabError, LabResult};
use crate::interrupt::StopRequests;

/// A program or a run left out of the corpus, and why.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Skipped {
    pub program: String,
    pub why: String,
}

/// What a recording made.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Recorded {
    pub manifest: Manifest,
    pub skipped: Vec<Skipped>,
}

/// Why a program's run went no further: skipped (the rest goes on) or interrupted (all stops).
enum Stop {
    Skip(String),
    Interrupted,
    Failed(LabError),
}

impl From<LabError> for Stop {
    fn from(e: LabError) -> Stop {
        Stop::Failed(e)
    }
}

/// Refuses, in one line, where the tier cannot run: it needs root and userfaultfd.
pub fn preflight() -> LabResult<()> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(LabError::usage(
            "corpus record runs programs under the tier, which needs root (userfaultfd for \
             every fault, the kernel's too): run it as root",
        ));
    }
    use zsmalloc_tier::uffd::{Features, Uffd, Wait};
    Uffd::open(Wait::NonBlocking, Features::MOVE).map(drop).map_err(|e| {
        LabError::usage(format!("corpus record needs userfaultfd, which this kernel refuses: {e}"))
    })
}

/// Records `programs` into `s.out` (a new or empty directory).
pub fn record(programs: &[Program], s: &Settings) -> LabResult<Recorded> {
    preflight()?;
    prepare_dir(&s.out)?;
    let exe = std::env::current_exe()
        .map_err(|e| LabError::runtime(format!("cannot find this program's path: {e}")))?;
    let work = s.out.join(".work");
    let stop = StopRequests::new();
    let mut rec = Recorder {
        s,
        exe,
        work,
        stop,
        page: zsmalloc_tier::uffd::page_size() as u64,
        manifest: Manifest::new(s.command.clone(), machine::this_machine()),
        skipped: Vec::new(),
    };
    rec.manifest.write(&s.out)?;
    let n = programs.len();
    let mut result = Ok(());
    for (i, p) in programs.iter().enumerate() {
        eprint!("corpus record: [{}/{n}] {}: ", i + 1, p.name);
        let line = match rec.program(p) {
            Ok(line) => line,
            Err(Stop::Skip(why)) => {
                rec.skip(&p.name, &why);
                format!("skipped: {why}")
            }
            Err(Stop::Interrupted) => {
                eprintln!("interrupted");
                result = Err(LabError::runtime(format!(
                    "interrupted: {} traces recorded, in {}",
                    rec.manifest.traces.len(),
                    escape(&s.out.join(super::manifest::FILE_NAME).display().to_string())
                )));
                break;
            }
            Err(Stop::Failed(e)) => {
                eprintln!("failed");
                result = Err(e);
                break;
            }
        };
        eprintln!("{line}");
    }
    let _ = std::fs::remove_dir_all(&rec.work);
    result?;
    Ok(Recorded { manifest: rec.manifest, skipped: rec.skipped })
}

/// Makes `dir`, or takes it when empty: a corpus is recorded whole, never into another one.
fn prepare_dir(dir: &Path) -> LabResult<()> {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(LabError::usage(format!(
                    "-o {}: the directory is not empty; a corpus goes into a new directory",
                    escape(&dir.display().to_string())
                )));
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir).map_err(|e| LabError::io("create", dir, &e))
        }
        Err(e) => Err(LabError::io("read", dir, &e)),
    }
}

struct Recorder<'a> {
    s: &'a Settings,
    exe: PathBuf,
    work: PathBuf,
    stop: StopRequests,
    page: u64,
    manifest: Manifest,
    skipped: Vec<Skipped>,
}

/// One tiered run's parameters.
struct Point<'a> {
    share: &'a Share,
    folio: u64,
    pool_page: u64,
}

impl Recorder<'_> {
    fn skip(&mut self, program: &str, why: &str) {
        self.skipped.push(Skipped { program: program.to_string(), why: why.to_string() });
    }

    /// Records one program; its progress line.
    fn program(&mut self, p: &Program) -> Result<String, Stop> {
        if let Some(cmd) = p.missing() {
            return Err(Stop::Skip(format!("not on this machine: {}", escape(cmd))));
        }
        let dir = self.fresh_run(p)?;
        let mut cmd = Command::new(&p.argv[0]);
        cmd.args(&p.argv[1..]);
        let log = self.work.join("untiered.log");
        // The child starts with a copy of this process's heap, which its peak counts: the
        // memory freed since (a trace's conversion) goes back to the system first.
        // SAFETY: malloc_trim only returns free heap memory; nothing of ours is touched.
        unsafe { libc::malloc_trim(0) };
        let ended = self.bounded(cmd, &dir, &log)?;
        if ended.timed_out {
            return Err(Stop::Skip(format!("untiered, past --timeout {} s", self.timeout_s())));
        }
        if ended.status != 0 {
            let why = format!("exits with status {} untiered: {}", ended.status, last_line(&log));
            return Err(Stop::Skip(why));
        }
        let rss = ended.max_rss_bytes;
        let mut parts = vec![format!("untiered {}, {:.2} s", mib(rss), ended.wall.as_secs_f64())];
        for share in &self.s.shares {
            for &folio in &self.s.folio_sizes {
                for &pool_page in &self.s.page_sizes {
                    let at = Point { share, folio, pool_page };
                    let what = self.point_name(&at);
                    match self.tiered(p, rss, &at) {
                        Ok(e) => {
                            parts.push(format!("{what}: {} operations, {:.2} s", e.ops, e.wall_s))
                        }
                        Err(Stop::Skip(why)) => {
                            self.skip(&p.name, &format!("{what}: {why}"));
                            parts.push(format!("{what}: skipped: {why}"));
                        }
                        Err(other) => return Err(other),
                    }
                }
            }
        }
        Ok(parts.join("; "))
    }

    /// `1/3 4K` (with the pool's page size when more than one is recorded).
    fn point_name(&self, at: &Point) -> String {
        let mut s = format!("{} {}", at.share.text, size_flag(at.folio));
        if self.s.page_sizes.len() > 1 {
            s += &format!(" page {}", size_flag(at.pool_page));
        }
        s
    }

    fn timeout_s(&self) -> u64 {
        self.s.timeout.as_secs()
    }

    /// A fresh run directory with the program's input made in it.
    fn fresh_run(&self, p: &Program) -> Result<PathBuf, Stop> {
        let dir = self.work.join("run");
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(|e| LabError::io("remove", &dir, &e))?;
        }
        std::fs::create_dir_all(&dir).map_err(|e| LabError::io("create", &dir, &e))?;
        if p.input.is_empty() {
            return Ok(dir);
        }
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(&p.input);
        // `zsmalloc` in an input command is this binary.
        if let Some(bin) = self.exe.parent() {
            let path = std::env::var_os("PATH").unwrap_or_default();
            let dirs = std::iter::once(bin.to_path_buf()).chain(std::env::split_paths(&path));
            if let Ok(joined) = std::env::join_paths(dirs) {
                cmd.env("PATH", joined);
            }
        }
        let log = self.work.join("input.log");
        let ended = self.bounded(cmd, &dir, &log)?;
        if ended.timed_out {
            return Err(Stop::Skip(format!("its input, past --timeout {} s", self.timeout_s())));
        }
        if ended.status != 0 {
            let why = format!("its input failed (status {}): {}", ended.status, last_line(&log));
            return Err(Stop::Skip(why));
        }
        Ok(dir)
    }

    /// Runs `cmd` in `dir` (stdin empty, stdout discarded, stderr to `log`) under the deadline.
    fn bounded(&self, mut cmd: Command, dir: &Path, log: &Path) -> Result<Ended, Stop> {
        let err = File::create(log).map_err(|e| LabError::io("write", log, &e))?;
        cmd.current_dir(dir).stdin(Stdio::null()).stdout(Stdio::null()).stderr(err);
        let ended = bounded::run(&mut cmd, self.s.timeout, &self.stop)?;
        if ended.interrupted {
            return Err(Stop::Interrupted);
        }
        Ok(ended)
    }

    /// One run under the tier with `--record`; its manifest entry, once written.
    fn tiered(&mut self, p: &Program, rss: u64, at: &Point) -> Result<TraceEntry, Stop> {
        let dir = self.fresh_run(p)?;
        let budget = at.share.budget(rss, self.page);
        let text = self.work.join("trace.txt");
        let report = self.work.join("report.json");
        let _ = std::fs::remove_file(&report);
        let mut cmd = Command::new(&self.exe);
        cmd.arg("tier").args(["--budget", &budget.to_string()]);
        cmd.args(["--compressor", &self.s.compressor, "--policy", &self.s.policy]);
        cmd.args(["--folio-size", &size_flag(at.folio)]);
        cmd.args(["--page-size", &at.pool_page.to_string()]);
        cmd.arg("--record").arg(&text).arg("--report").arg(&report).arg("--");
        cmd.args(&p.argv);
        let log = self.work.join("tiered.log");
        let ended = self.bounded(cmd, &dir, &log)?;
        if ended.timed_out {
            return Err(Stop::Skip(format!("past --timeout {} s", self.timeout_s())));
        }
        let Ok(json) = std::fs::read_to_string(&report) else {
            let why = format!("the tier refused (status {}): {}", ended.status, last_line(&log));
            return Err(Stop::Skip(why));
        };
        let r: Value = serde_json::from_str(&json)
            .map_err(|e| LabError::runtime(format!("the tier's report: {e}")))?;
        let record_error = r["record_error"].as_str().unwrap_or_default();
        if !record_error.is_empty() {
            return Err(Stop::Skip(format!("the recording stopped: {}", escape(record_error))));
        }
        let mut file = format!("{}-{}-{}", p.name, at.share.slug(), size_flag(at.folio));
        if at.pool_page != self.page {
            file += &format!("-p{}", size_flag(at.pool_page));
        }
        file += ".trace";
        let out = self.s.out.join(&file);
        let notes = [
            format!("program {}: {}", p.name, p.argv.join(" ")),
            format!(
                "budget {budget} bytes ({} of a peak RSS of {rss}), policy {}, compressor {}, \
                 folio size {}",
                at.share.text, self.s.policy, self.s.compressor, at.folio
            ),
        ];
        let ops = trace_file::to_binary(&text, &out, at.pool_page as u32, &notes)?;
        let _ = std::fs::remove_file(&text);
        if ops == 0 {
            return Err(Stop::Skip(format!(
                "nothing reached the pool at a budget of {}: no trace",
                mib(budget)
            )));
        }
        let trace_bytes = std::fs::metadata(&out).map_err(|e| LabError::io("read", &out, &e))?;
        let entry = TraceEntry {
            file,
            program: p.name.clone(),
            argv: p.argv.clone(),
            input: p.input.clone(),
            rss_bytes: rss,
            budget_bytes: budget,
            budget_share: at.share.text.clone(),
            policy: self.s.policy.clone(),
            compressor: self.s.compressor.clone(),
            folio_size: at.folio,
            pool_page_size: at.pool_page,
            ops,
            trace_bytes: trace_bytes.len(),
            sha256: trace_file::sha256(&out)?,
            wall_s: r["elapsed_s"].as_f64().unwrap_or(ended.wall.as_secs_f64()),
            faults: r["faults"].as_u64().unwrap_or_default(),
            exit_status: ended.status,
        };
        self.manifest.traces.push(entry.clone());
        self.manifest.write(&self.s.out)?;
        Ok(entry)
    }
}

/// The last non-empty line of a log, escaped ("" when none).
fn last_line(log: &Path) -> String {
    let text = std::fs::read(log).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| escape(l.trim()).into_owned())
        .unwrap_or_default()
}

/// Bytes as MiB with one decimal (`62.1M`).
pub fn mib(bytes: u64) -> String {
    format!("{:.1}M", bytes as f64 / (1 << 20) as f64)
}
