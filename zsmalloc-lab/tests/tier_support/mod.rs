//! What the tier's tests share: the C test program (zsmalloc-tier/tests/programs/tier_check.c)
//! built once per test binary, `zsmalloc tier` run with a deadline after which its process
//! group is killed and the test fails (as another user, or with the program's memory sampled
//! meanwhile), and the checks of its report. A test skips, with the reason printed, where the
//! tier cannot run (no root or userfaultfd, no C compiler); a test program that does not build
//! fails it.

// Each test binary uses some of these.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;
use zsmalloc_tier::uffd::{Features, Uffd, UffdError, Wait};

pub mod reachable;

pub const DEADLINE: Duration = Duration::from_secs(180);
pub const PAGE: u64 = 4096;

pub fn skip(test: &str, why: &str) {
    let _ = writeln!(std::io::stderr(), "{test}: skipped: {why}");
}

/// Whether this process may use userfaultfd (else why not).
pub fn userfaultfd() -> Result<(), String> {
    match Uffd::open(Wait::NonBlocking, Features::MOVE) {
        Ok(_) => Ok(()),
        Err(e @ (UffdError::NoPermission | UffdError::Unsupported)) => Err(e.to_string()),
        Err(e @ UffdError::FeaturesUnavailable { .. }) => Err(e.to_string()),
        Err(e) => panic!("userfaultfd: {e}"),
    }
}

/// The test program built as `name` (a path under the test's temporary directory) with `extra`
/// flags: `Ok(None)` (and why) without a C
/// compiler; an error with the compiler's message when it does not build.
pub fn compile(name: &str, extra: &[&str]) -> Result<Result<PathBuf, String>, String> {
    let src =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../zsmalloc-tier/tests/programs/tier_check.c");
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let built = match Command::new("cc")
        .args(["-O2", "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-pthread", "-o"])
        .arg(&out)
        .arg(&src)
        .args(extra)
        .output()
    {
        Ok(built) => built,
        Err(e) => return Ok(Err(format!("no C compiler (cc): {e}"))),
    };
    if !built.status.success() {
        return Err(format!("cc {extra:?} failed:\n{}", String::from_utf8_lossy(&built.stderr)));
    }
    Ok(Ok(out))
}

/// The test program, built once; `None` (and why, printed) where the tier cannot run here.
pub fn program(test: &str) -> Option<&'static Path> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let built = BUILT.get_or_init(|| {
        userfaultfd()?;
        // One per test binary (they may run at once), under the program's own name.
        let name = format!("{}/tier_check", env!("CARGO_CRATE_NAME"));
        compile(&name, &[]).unwrap_or_else(|failed| panic!("the test program: {failed}"))
    });
    match built {
        Ok(p) => Some(p.as_path()),
        Err(why) => {
            skip(test, why);
            None
        }
    }
}

/// The test program linked statically, where the tier can run here and a static libc is
/// installed (`None`, and why printed, otherwise).
pub fn static_program(test: &str) -> Option<PathBuf> {
    if let Err(why) = userfaultfd() {
        skip(test, &why);
        return None;
    }
    match compile("tier_check_static", &["-static"]) {
        Ok(Ok(p)) => Some(p),
        Ok(Err(why)) => {
            skip(test, &why);
            None
        }
        // Debian's libc6-dev has the static library; a system without it cannot link one.
        Err(why) => {
            skip(test, &format!("no static build here: {why}"));
            None
        }
    }
}

/// The test program where `policy` can run here (`clock` needs `UFFD_FEATURE_WP_ASYNC`), else
/// `None` and why, printed.
pub fn program_under(test: &str, policy: &str) -> Option<&'static Path> {
    let p = program(test)?;
    if policy == "clock" {
        match Uffd::open(Wait::NonBlocking, Features::MOVE | Features::WP_ASYNC) {
            Ok(_) => {}
            Err(e @ UffdError::FeaturesUnavailable { .. }) => {
                skip(test, &e.to_string());
                return None;
            }
            Err(e) => panic!("userfaultfd: {e}"),
        }
    }
    Some(p)
}

/// The test program run with `args` under `budget` and `policy` (`None`, and why printed, where
/// that cannot run here).
pub fn check_under(test: &str, policy: &str, budget: &str, args: &[&str]) -> Option<Run> {
    let p = program_under(test, policy)?;
    let head = ["--budget", budget, "--policy", policy, "--", p.to_str().unwrap()];
    Some(tier(&[&head[..], args].concat()))
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub report: Option<Value>,
}

/// `zsmalloc ARGS`, killed with its group past the deadline, `watch` called with its pid every
/// millisecond while it runs: its exit code, stdout, stderr.
pub fn zsmalloc_watched(args: &[&OsStr], watch: impl FnMut(u32)) -> (i32, String, String) {
    zsmalloc_from(Path::new(env!("CARGO_BIN_EXE_zsmalloc")), None, None, args, watch)
}

/// `zsmalloc ARGS` as `zsmalloc_watched` runs it, from the command at `exe` (its library beside
/// it), in directory `dir` and as user and group `uid` when given.
pub fn zsmalloc_from(
    exe: &Path,
    dir: Option<&Path>,
    uid: Option<u32>,
    args: &[&OsStr],
    mut watch: impl FnMut(u32),
) -> (i32, String, String) {
    let mut cmd = Command::new(exe);
    cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    if let Some(dir) = dir {
        cmd.current_dir(dir);
    }
    if let Some(id) = uid {
        // Run as root, std drops the supplementary groups with the ids.
        cmd.uid(id).gid(id);
    }
    let mut child = cmd.spawn().expect("run zsmalloc");
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let readers = [
        std::thread::spawn(move || std::io::read_to_string(&mut out).unwrap_or_default()),
        std::thread::spawn(move || std::io::read_to_string(&mut err).unwrap_or_default()),
    ];
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if t0.elapsed() > DEADLINE {
            // SAFETY: kill(2) of the process group this test made (the child leads it).
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            panic!("zsmalloc {args:?} did not end within {DEADLINE:?}");
        }
        watch(child.id());
        std::thread::sleep(Duration::from_millis(1));
    };
    let [stdout, stderr] = readers.map(|r| r.join().expect("reader"));
    (status.code().expect("zsmalloc exits"), stdout, stderr)
}

/// `zsmalloc ARGS`, killed with its group past the deadline: its exit code, stdout, stderr.
pub fn zsmalloc(args: &[&OsStr]) -> (i32, String, String) {
    zsmalloc_watched(args, |_| {})
}

/// `zsmalloc tier ARGS` (with `--report` added).
pub fn tier(args: &[&str]) -> Run {
    tier_watched(args, |_| {})
}

/// `zsmalloc tier ARGS`, `watch` called with the command's pid while it runs. (Another user
/// runs it from a copy it can reach: [`reachable::Reachable`].)
pub fn tier_watched(args: &[&str], watch: impl FnMut(u32)) -> Run {
    let report = tempfile("report.json");
    let mut all: Vec<&OsStr> = vec!["tier".as_ref(), "--report".as_ref(), report.as_ref()];
    all.extend(args.iter().map(OsStr::new));
    let (code, stdout, stderr) = zsmalloc_watched(&all, watch);
    let report = std::fs::read_to_string(&report)
        .ok()
        .map(|t| serde_json::from_str(&t).expect("JSON report"));
    Run { code, stdout, stderr, report }
}

pub fn tempfile(name: &str) -> PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("tier-{}-{n}-{name}", std::process::id()))
}

pub fn figure(r: &Run, key: &str) -> u64 {
    let report = r.report.as_ref().unwrap_or_else(|| panic!("no report; stderr: {}", r.stderr));
    report[key].as_u64().unwrap_or_else(|| panic!("{key} in {report}"))
}

/// The slack over the budget the tier documents (`slack_bytes`).
pub fn slack(budget: u64) -> u64 {
    zsmalloc_tier::slack::slack_pages(budget / PAGE) * PAGE
}

/// Exit 0, every check passed, evictions and faults both happened, the budget held (with its
/// slack: the evictions deferred while faults are pending, and the pages one fault brings in,
/// served before the evictions they cause).
pub fn assert_tiered(r: &Run, budget: u64, passes: &[&str]) {
    assert_ran(r, budget, passes);
    assert!(figure(r, "peak_resident_bytes") <= budget + slack(budget), "{:?}", r.report);
}

pub fn assert_ran(r: &Run, budget: u64, passes: &[&str]) {
    assert_eq!(r.code, 0, "stdout: {}\nstderr: {}", r.stdout, r.stderr);
    for p in passes {
        assert!(r.stdout.contains(&format!("{p}: ok")), "{p}: stdout: {}", r.stdout);
    }
    let report = r.report.as_ref().expect("a report");
    assert_eq!(report["state"], "tiering", "{report}");
    assert_eq!(figure(r, "budget_bytes"), budget);
    assert!(figure(r, "evictions") > 0 && figure(r, "faults") > 0, "{report}");
    assert!(r.stderr.contains("zsmalloc tier:") && r.stderr.contains("evictions"), "{}", r.stderr);
}

/// The resident bytes of a process's userfaultfd-registered memory (the tier's reserve and its
/// staging area: the mappings whose flags in /proc/PID/smaps carry `um`), as the kernel counts
/// them; `None` once the process is gone.
pub fn registered_rss(pid: u32) -> Option<u64> {
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).ok()?;
    let (mut rss, mut total) = (0u64, 0u64);
    for line in smaps.lines() {
        if let Some(kb) = line.strip_prefix("Rss:") {
            rss = kb.trim().trim_end_matches("kB").trim().parse::<u64>().ok()? * 1024;
        } else if let Some(flags) = line.strip_prefix("VmFlags:") {
            if flags.split_whitespace().any(|f| f == "um") {
                total += rss;
            }
        }
    }
    Some(total)
}

/// The trace `r` recorded holds its operations, and replays to the pool pages it had.
/// Returns the replay's JSON report.
pub fn assert_replays(r: &Run, trace: &Path) -> Value {
    let report = r.report.as_ref().unwrap();
    let text = std::fs::read_to_string(trace).expect("the trace");
    assert!(text.starts_with("# zsmalloc trace v1"), "{}", &text[..200.min(text.len())]);
    let ops: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(ops.len() as u64, figure(r, "recorded_operations"));
    let stores = ops.iter().filter(|l| l.starts_with("store ")).count() as u64;
    let reads = ops.iter().filter(|l| l.starts_with("read ")).count() as u64;
    // Every store an eviction; the evictions of same-filled pages are not in the pool.
    assert!(stores > 0 && stores <= figure(r, "evictions"), "{stores} stores: {report}");
    assert!(reads > 0 && reads <= figure(r, "faults"), "{reads} reads: {report}");

    let (code, out, err) = zsmalloc(&[
        "replay".as_ref(),
        trace.as_os_str(),
        "--no-time".as_ref(),
        "--format".as_ref(),
        "json".as_ref(),
    ]);
    assert_eq!(code, 0, "{err}");
    let replay: Value = serde_json::from_str(&out).expect("replay's JSON");
    assert_eq!(replay["pages_peak"].as_u64(), Some(figure(r, "max_pool_pages")), "{replay}");
    assert_eq!(replay["stores"].as_u64(), Some(stores), "{replay}");
    assert_eq!(replay["op_errors"].as_u64(), Some(0), "{replay}");
    replay
}

/// An ELF python3 (a launcher script such as pyenv's shim is not one), if there is one.
pub fn elf_python() -> Option<&'static str> {
    ["/usr/bin/python3", "/usr/local/bin/python3"]
        .into_iter()
        .find(|p| std::fs::read(p).is_ok_and(|b| b.starts_with(b"\x7fELF")))
}
