//! `zsmalloc tier` on real programs: a C program (zsmalloc-tier/tests/programs/tier_check.c)
//! filling 64 MiB of malloc blocks and mappings under a 4 MiB budget and reading every word
//! back, writer threads racing the evictor, a fork whose child checks every word, posix_spawn,
//! munmap and mremap, Python, the pages compressed with each compressor; the exit statuses and
//! refusals. They need root (or access to /dev/userfaultfd) and a C compiler, and skip with the
//! reason printed otherwise. Every run has a deadline, after which its process group is killed
//! and the test fails.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;
use zsmalloc_tier::uffd::{Features, Uffd, UffdError, Wait};

const DEADLINE: Duration = Duration::from_secs(180);
const PAGE: u64 = 4096;

fn skip(test: &str, why: &str) {
    let _ = writeln!(std::io::stderr(), "{test}: skipped: {why}");
}

/// Whether this process may use userfaultfd (else why not).
fn userfaultfd() -> Result<(), String> {
    match Uffd::open(Wait::NonBlocking, Features::MOVE) {
        Ok(_) => Ok(()),
        Err(e @ (UffdError::NoPermission | UffdError::Unsupported)) => Err(e.to_string()),
        Err(e @ UffdError::FeaturesUnavailable { .. }) => Err(e.to_string()),
        Err(e) => panic!("userfaultfd: {e}"),
    }
}

fn compile(name: &str, extra: &[&str]) -> Result<PathBuf, String> {
    let src =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../zsmalloc-tier/tests/programs/tier_check.c");
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let status = Command::new("cc")
        .args(["-O2", "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-pthread", "-o"])
        .arg(&out)
        .arg(&src)
        .args(extra)
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("no C compiler (cc): {e}"))?;
    if !status.success() {
        return Err(format!("cc {extra:?} failed"));
    }
    Ok(out)
}

/// The test program, built once; `None` (and why, printed) where the tier cannot run here.
fn program(test: &str) -> Option<&'static Path> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let built = BUILT.get_or_init(|| {
        userfaultfd()?;
        compile("tier_check", &[])
    });
    match built {
        Ok(p) => Some(p.as_path()),
        Err(why) => {
            skip(test, why);
            None
        }
    }
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
    report: Option<Value>,
}

/// `zsmalloc ARGS`, killed with its group past the deadline: its exit code, stdout, stderr.
fn zsmalloc(args: &[&std::ffi::OsStr]) -> (i32, String, String) {
    zsmalloc_as(None, args)
}

/// `zsmalloc ARGS` as user and group `uid` (when given), as [`zsmalloc`] runs it.
fn zsmalloc_as(uid: Option<u32>, args: &[&std::ffi::OsStr]) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zsmalloc"));
    cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
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
        std::thread::sleep(Duration::from_millis(20));
    };
    let [stdout, stderr] = readers.map(|r| r.join().expect("reader"));
    (status.code().expect("zsmalloc exits"), stdout, stderr)
}

/// `zsmalloc tier ARGS` (with `--report` added).
fn tier(args: &[&str]) -> Run {
    tier_as(None, args)
}

/// `zsmalloc tier ARGS` as user `uid` (when given), its report in a directory it may write.
fn tier_as(uid: Option<u32>, args: &[&str]) -> Run {
    let report = match uid {
        None => tempfile("report.json"),
        Some(_) => {
            use std::os::unix::fs::PermissionsExt;
            let dir = tempfile("anyone");
            std::fs::create_dir_all(&dir).expect("a directory for the report");
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).expect("chmod");
            dir.join("report.json")
        }
    };
    let mut all: Vec<&std::ffi::OsStr> =
        vec!["tier".as_ref(), "--report".as_ref(), report.as_ref()];
    all.extend(args.iter().map(|a| std::ffi::OsStr::new(*a)));
    let (code, stdout, stderr) = zsmalloc_as(uid, &all);
    let report = std::fs::read_to_string(&report)
        .ok()
        .map(|t| serde_json::from_str(&t).expect("JSON report"));
    Run { code, stdout, stderr, report }
}

fn tempfile(name: &str) -> PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("tier-{}-{n}-{name}", std::process::id()))
}

fn figure(r: &Run, key: &str) -> u64 {
    let report = r.report.as_ref().unwrap_or_else(|| panic!("no report; stderr: {}", r.stderr));
    report[key].as_u64().unwrap_or_else(|| panic!("{key} in {report}"))
}

/// Exit 0, every check passed, evictions and faults both happened, the budget held (with its
/// slack: the pages one fault brings in, served before the evictions they cause; a first touch
/// brings up to 16).
fn assert_tiered(r: &Run, budget: u64, passes: &[&str]) {
    assert_ran(r, budget, passes);
    assert!(figure(r, "peak_resident_bytes") <= budget + 16 * PAGE, "{:?}", r.report);
}

fn assert_ran(r: &Run, budget: u64, passes: &[&str]) {
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

#[test]
fn sixty_four_mib_read_back_under_four() {
    let Some(p) = program("sixty_four_mib_read_back_under_four") else { return };
    let r = tier(&["--budget", "4M", "--", p.to_str().unwrap(), "fill", "64"]);
    assert_tiered(&r, 4 << 20, &["first pass", "second pass"]);
    assert!(figure(&r, "evictions") >= (60 << 20) / PAGE, "{:?}", r.report);
    assert_eq!(figure(&r, "pool_full_stops"), 0, "no limit: every store taken");
    assert!(figure(&r, "stored_pages") > 0);
    let (stored, packed) = (figure(&r, "stored_bytes"), figure(&r, "compressed_bytes"));
    assert!(packed > 0 && packed < stored, "{stored} stored in {packed}");
    assert!(figure(&r, "max_pool_pages") >= figure(&r, "pool_pages"));
    let report = r.report.as_ref().unwrap();
    for key in [
        "budget_bytes",
        "peak_resident_bytes",
        "evictions",
        "faults",
        "same_filled_pages",
        "stored_bytes",
        "compressed_bytes",
        "pool_pages",
        "max_pool_pages",
        "exit_status",
    ] {
        assert!(report[key].is_u64(), "{key} in {report}");
    }
    assert_eq!(report["policy"], "fifo");
    assert_eq!(report["compressor"], "lz4", "zram's default when none is named");
    assert!(report["evict_ns"]["p50"].is_u64() && report["evict_ns"]["p99"].is_u64());
    let f = &report["fault_ns"];
    assert!(f["p50"].as_u64() <= f["p99"].as_u64() && f["p99"].as_u64() <= f["max"].as_u64());
}

/// The C program's 16 MiB filled and read back twice under 4 MiB with `compressor`: every
/// word back, pages evicted and faulted, and the report naming the compressor.
fn read_back_with(test: &str, compressor: &str) {
    let Some(p) = program(test) else { return };
    let args = ["--budget", "4M", "--compressor", compressor, "--", p.to_str().unwrap()];
    let r = tier(&[&args[..], &["fill", "16"]].concat());
    if r.code == 2 && r.stderr.contains("needs liblzo2") {
        return skip(test, r.stderr.trim());
    }
    assert_tiered(&r, 4 << 20, &["first pass", "second pass"]);
    assert_eq!(r.report.as_ref().unwrap()["compressor"], compressor);
    assert!(r.stderr.contains(&format!("compressor            {compressor}")), "{}", r.stderr);
    let (stored, packed) = (figure(&r, "stored_bytes"), figure(&r, "compressed_bytes"));
    assert!(packed > 0 && packed < stored, "{stored} stored in {packed}");
}

#[test]
fn zstd_pages_read_back() {
    read_back_with("zstd_pages_read_back", "zstd");
}

#[test]
fn lzo_pages_read_back() {
    read_back_with("lzo_pages_read_back", "lzo");
}

#[test]
fn writers_racing_the_evictor_lose_no_write() {
    let Some(p) = program("writers_racing_the_evictor_lose_no_write") else { return };
    let r = tier(&["--budget", "4M", "--", p.to_str().unwrap(), "race", "4", "32"]);
    assert_tiered(&r, 4 << 20, &["race"]);
}

#[test]
fn a_forked_child_sees_every_word() {
    let Some(p) = program("a_forked_child_sees_every_word") else { return };
    let r = tier(&["--budget", "4M", "--", p.to_str().unwrap(), "fork", "32"]);
    // Before the fork every page came back (the peak is the whole 32 MiB); once the child
    // ended, eviction went on down to the budget.
    assert_ran(&r, 4 << 20, &["child", "parent", "parent again"]);
    assert_eq!(figure(&r, "forks"), 1);
    assert!(figure(&r, "peak_resident_bytes") >= 32 << 20, "{:?}", r.report);
    assert!(figure(&r, "resident_bytes") <= (4 << 20) + 16 * PAGE, "{:?}", r.report);
}

#[test]
fn a_spawned_program_leaves_every_word() {
    let Some(p) = program("a_spawned_program_leaves_every_word") else { return };
    let r = tier(&["--budget", "4M", "--", p.to_str().unwrap(), "spawn", "32"]);
    assert_tiered(&r, 4 << 20, &["spawn"]);
}

#[test]
fn unmapped_memory_comes_back_as_zeros_and_remapped_keeps_its_bytes() {
    let Some(p) = program("unmapped_memory_comes_back_as_zeros") else { return };
    let r = tier(&["--budget", "256K", "--", p.to_str().unwrap(), "remap"]);
    assert_tiered(&r, 256 << 10, &["remap"]);
}

#[test]
fn exit_statuses_are_the_programs() {
    let Some(p) = program("exit_statuses_are_the_programs") else { return };
    let p = p.to_str().unwrap();
    let r = tier(&["--budget", "4M", "--", p, "exit", "3"]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert_eq!(r.report.as_ref().unwrap()["exit_status"], 3);
    let r = tier(&["--budget", "4M", "--", p, "signal", "15"]);
    assert_eq!(r.code, 143, "killed by SIGTERM: {}", r.stderr);
    assert_eq!(r.report.as_ref().unwrap()["exit_status"], 143);
    let r = tier(&["--budget", "4M", "--", "no-such-command-anywhere"]);
    assert_eq!(r.code, 127, "{}", r.stderr);
    assert_eq!(r.stderr.trim(), "zsmalloc tier: no-such-command-anywhere: command not found");
    assert!(r.report.is_none(), "no report without a run");
}

#[test]
fn refusals_are_one_line_and_exit_2() {
    let r = tier(&["--budget", "0", "--", "true"]);
    assert_eq!(r.code, 2);
    assert_eq!(
        r.stderr.trim(),
        "zsmalloc tier: --budget 0: the budget must be at least 64K (16 pages: one instruction \
         may need several pages resident at once)"
    );
    let r = tier(&["--budget", "32K", "--", "true"]);
    assert_eq!((r.code, r.stderr.lines().count()), (2, 1), "{}", r.stderr);
    let r = tier(&["--compressor", "nope", "--", "true"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_eq!(
        r.stderr.trim(),
        "zsmalloc tier: --compressor: invalid compressor 'nope' (accepted: lz4, lzo, zstd)"
    );
    let r = tier(&["--compressor", "lzo-rle", "--", "true"]);
    assert_eq!((r.code, r.stderr.lines().count()), (2, 1), "{}", r.stderr);
    assert!(r.stderr.contains("only in the kernel"), "{}", r.stderr);
    let r = tier(&["--budget", "1024G", "--", "true"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("above this machine's memory"), "{}", r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    if userfaultfd().is_err() {
        let r = tier(&["--", "true"]);
        assert_eq!(r.code, 2);
        assert!(r.stderr.contains("root or access to /dev/userfaultfd"), "{}", r.stderr);
        return;
    }
    let r = tier(&["--chain-size", "99", "--", "true"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("--chain-size") && r.stderr.lines().count() == 1, "{}", r.stderr);
}

#[test]
fn a_static_program_is_named_and_refused() {
    let test = "a_static_program_is_named_and_refused";
    if let Err(why) = userfaultfd() {
        return skip(test, &why);
    }
    let p = match compile("tier_check_static", &["-static"]) {
        Ok(p) => p,
        Err(why) => return skip(test, &format!("no static build here: {why}")),
    };
    let r = tier(&["--", p.to_str().unwrap(), "exit", "0"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("is statically linked"), "{}", r.stderr);
}

#[test]
fn a_setuid_program_is_named_and_refused() {
    let Some(p) = program("a_setuid_program_is_named_and_refused") else { return };
    let copy = tempfile("setuid_check");
    std::fs::copy(p, &copy).expect("copy the test program");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o4755)).expect("chmod");
    let r = tier(&["--", copy.to_str().unwrap(), "exit", "0"]);
    let _ = std::fs::remove_file(&copy);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("is setuid or setgid") && r.stderr.lines().count() == 1,
        "{}",
        r.stderr
    );
}

#[test]
fn python_prints_the_same_under_a_small_budget() {
    let test = "python_prints_the_same_under_a_small_budget";
    if let Err(why) = userfaultfd() {
        return skip(test, &why);
    }
    // An ELF python: a launcher script (pyenv's) would be tiered, the python it runs not.
    let Some(python) = ["/usr/bin/python3", "/usr/local/bin/python3"]
        .into_iter()
        .find(|p| std::fs::read(p).is_ok_and(|b| b.starts_with(b"\x7fELF")))
    else {
        return skip(test, "no python3 executable in /usr/bin or /usr/local/bin");
    };
    let script =
        "x = [str(i) * 7 for i in range(400000)]\nprint(len(x), sum(map(len, x)), x[123456])";
    let plain = Command::new(python).args(["-c", script]).output().expect("python3");
    assert!(plain.status.success());
    let r = tier(&["--budget", "2M", "--", python, "-c", script]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, String::from_utf8_lossy(&plain.stdout));
    assert!(figure(&r, "evictions") > 0 && figure(&r, "faults") > 0, "{:?}", r.report);
}

#[test]
fn a_recorded_trace_replays_to_the_same_pool_pages() {
    let Some(p) = program("a_recorded_trace_replays_to_the_same_pool_pages") else { return };
    let trace = tempfile("t.trace");
    let t = trace.to_str().unwrap();
    let r = tier(&["--budget", "4M", "--record", t, "--", p.to_str().unwrap(), "fill", "16"]);
    assert_tiered(&r, 4 << 20, &["first pass", "second pass"]);
    let report = r.report.as_ref().unwrap();
    assert_eq!(report["record"], t, "{report}");
    assert_eq!(report["record_error"], "", "{report}");
    let text = std::fs::read_to_string(&trace).expect("the trace");
    assert!(text.starts_with("# zsmalloc trace v1"), "{}", &text[..200.min(text.len())]);
    let ops: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(ops.len() as u64, figure(&r, "recorded_operations"));
    let stores = ops.iter().filter(|l| l.starts_with("store ")).count() as u64;
    let reads = ops.iter().filter(|l| l.starts_with("read ")).count() as u64;
    // Every store an eviction; the evictions of same-filled pages are not in the pool.
    assert!(stores > 0 && stores <= figure(&r, "evictions"), "{stores} stores: {report}");
    assert!(reads > 0 && reads <= figure(&r, "faults"), "{reads} reads: {report}");

    let (code, out, err) = zsmalloc(&[
        "replay".as_ref(),
        trace.as_os_str(),
        "--no-time".as_ref(),
        "--format".as_ref(),
        "json".as_ref(),
    ]);
    assert_eq!(code, 0, "{err}");
    let replay: Value = serde_json::from_str(&out).expect("replay's JSON");
    assert_eq!(replay["pages_peak"].as_u64(), Some(figure(&r, "max_pool_pages")), "{replay}");
    assert_eq!(replay["stores"].as_u64(), Some(stores), "{replay}");
    assert_eq!(replay["op_errors"].as_u64(), Some(0), "{replay}");
    let (code, out, err) =
        zsmalloc(&["compare".as_ref(), "trace".as_ref(), trace.as_os_str(), "--no-time".as_ref()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("heuristic"), "{out}");

    // A record that cannot be written stops; the program is tiered to its end all the same.
    let r =
        tier(&["--budget", "4M", "--record", "/dev/full", "--", p.to_str().unwrap(), "fill", "4"]);
    assert_tiered(&r, 4 << 20, &["first pass", "second pass"]);
    let report = r.report.as_ref().unwrap();
    assert_eq!(report["record_error"], "the record stopped: no space left on device", "{report}");
    assert_eq!(figure(&r, "recorded_operations"), 0);
    assert!(r.stderr.contains("the record stopped"), "{}", r.stderr);
}

#[test]
fn an_unwritable_record_is_refused_before_the_program_runs() {
    let r = tier(&["--record", "/nonexistent/x", "--", "true"]);
    assert_eq!((r.code, r.stderr.lines().count()), (2, 1), "{}", r.stderr);
    assert!(r.stderr.contains("/nonexistent/x"), "{}", r.stderr);
    assert!(r.report.is_none(), "no report: the program did not run");
}

/// The process lines of a `--follow-children` report.
fn processes(r: &Run) -> Vec<Value> {
    let report = r.report.as_ref().unwrap_or_else(|| panic!("no report; stderr: {}", r.stderr));
    report["processes"].as_array().unwrap_or_else(|| panic!("processes in {report}")).clone()
}

fn line_of<'a>(procs: &'a [Value], command: &str) -> &'a Value {
    procs.iter().find(|p| p["command"] == command).unwrap_or_else(|| panic!("{command}: {procs:?}"))
}

#[test]
fn an_executed_program_is_tiered_with_follow_children_only() {
    let Some(p) = program("an_executed_program_is_tiered_with_follow_children_only") else {
        return;
    };
    let script = format!("{} fill 16; echo shell done", p.display());
    let r = tier(&["--budget", "4M", "--follow-children", "--", "sh", "-c", &script]);
    assert_ran(&r, 4 << 20, &["first pass", "second pass"]);
    assert!(r.stdout.contains("shell done"), "{}", r.stdout);
    let procs = processes(&r);
    assert_eq!(procs[0]["command"], "sh", "the started program first: {procs:?}");
    let child = line_of(&procs, "tier_check");
    assert!(child["evictions"].as_u64() > Some(0) && child["faults"].as_u64() > Some(0));
    assert_eq!(child["state"], "tiering", "{child}");
    assert!(child["peak_resident_bytes"].as_u64() <= Some((4 << 20) + 16 * PAGE), "{child}");
    let total: u64 = procs.iter().map(|p| p["evictions"].as_u64().unwrap()).sum();
    assert_eq!(figure(&r, "evictions"), total, "the figures are the processes' sum");
    assert!(r.stderr.contains("processes") && r.stderr.contains("tier_check"), "{}", r.stderr);

    // Without the flag the shell is tiered and the program it runs is not.
    let r = tier(&["--budget", "4M", "--", "sh", "-c", &script]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("second pass: ok"), "{}", r.stdout);
    assert_eq!(figure(&r, "evictions"), 0, "{:?}", r.report);
    assert!(r.report.as_ref().unwrap().get("processes").is_none(), "{:?}", r.report);
}

#[test]
fn a_forked_child_is_tiered_with_follow_children() {
    let Some(p) = program("a_forked_child_is_tiered_with_follow_children") else { return };
    let r = tier(&["--budget", "4M", "--follow-children", "--", p.to_str().unwrap(), "fork", "32"]);
    assert_ran(&r, 4 << 20, &["child", "child again", "parent", "parent again"]);
    let procs = processes(&r);
    assert_eq!(procs.len(), 2, "{procs:?}");
    let (parent, child) = (&procs[0], &procs[1]);
    assert_ne!(parent["pid"], child["pid"]);
    assert_eq!(parent["forks"], 1, "{parent}");
    // The child inherited every page (32 MiB resident), evicted down to its own budget and
    // faulted the pages back for its second check.
    assert!(child["peak_resident_bytes"].as_u64() >= Some(32 << 20), "{child}");
    assert!(child["evictions"].as_u64() >= Some((24 << 20) / PAGE), "{child}");
    assert!(child["faults"].as_u64() > Some(0), "{child}");
    assert_eq!(child["state"], "tiering", "{child}");
}

#[test]
fn processes_beyond_the_slots_run_untiered_and_are_counted() {
    let Some(_) = program("processes_beyond_the_slots_run_untiered_and_are_counted") else {
        return;
    };
    let script = "i=0; while [ $i -lt 300 ]; do /bin/true; i=$((i+1)); done";
    let r = tier(&["--budget", "1M", "--follow-children", "--", "sh", "-c", script]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(processes(&r).len(), 256, "every slot taken");
    // The shell takes one slot and each command one (a fork that executes stays one process).
    assert!(figure(&r, "processes_without_slot") >= 300 - 255, "{:?}", r.report);
    assert!(r.stderr.contains("ran untiered: every one of the report's 256 slots"), "{}", r.stderr);
}

/// Whether the tests may run the tier as `nobody` (root drops to it), else why not.
fn as_nobody(test: &str) -> Option<&'static Path> {
    // SAFETY: getuid has no preconditions.
    if unsafe { libc::getuid() } != 0 {
        skip(test, "needs root, to run the tier as nobody");
        return None;
    }
    program(test)
}

const NOBODY: Option<u32> = Some(65534);

#[test]
fn user_faults_only_as_nobody_reads_every_byte_back() {
    let Some(p) = as_nobody("user_faults_only_as_nobody_reads_every_byte_back") else { return };
    let r = tier_as(NOBODY, &["--budget", "4M", "--", p.to_str().unwrap(), "fill", "16"]);
    assert_eq!((r.code, r.stderr.lines().count()), (2, 1), "{}", r.stderr);
    assert!(
        r.stderr.contains("needs root or access to /dev/userfaultfd, or --user-faults-only"),
        "{}",
        r.stderr
    );
    let args = ["--budget", "4M", "--user-faults-only", "--", p.to_str().unwrap(), "fill", "16"];
    let r = tier_as(NOBODY, &args);
    assert_tiered(&r, 4 << 20, &["first pass", "second pass"]);
    assert_eq!(r.report.as_ref().unwrap()["user_faults_only"], true);
    assert!(r.stderr.contains("fails with EFAULT"), "{}", r.stderr);
}

#[test]
fn a_system_call_on_an_evicted_page_fails_with_efault_under_user_faults_only() {
    let test = "a_system_call_on_an_evicted_page_fails_with_efault_under_user_faults_only";
    let Some(p) = as_nobody(test) else { return };
    let args =
        ["--budget", "4M", "--user-faults-only", "--", p.to_str().unwrap(), "syscalls", "16"];
    let r = tier_as(NOBODY, &args);
    // The documented caveat: the kernel's read of an evicted page fails; fresh memory (lent
    // as zero pages) and pages the program brought back take system calls as ever.
    assert_tiered(&r, 4 << 20, &["syscalls"]);
    for line in ["evicted write: EFAULT", "resident write: ok", "fresh read: ok"] {
        assert!(r.stdout.contains(line), "{line}: {}", r.stdout);
    }
    // With every fault taken (root) the same write waits for the page and succeeds.
    let r = tier(&["--budget", "4M", "--", p.to_str().unwrap(), "syscalls", "16"]);
    assert_tiered(&r, 4 << 20, &["syscalls"]);
    assert!(r.stdout.contains("evicted write: ok"), "{}", r.stdout);
    assert_eq!(r.report.as_ref().unwrap()["user_faults_only"], false);
}

#[test]
fn under_user_faults_only_executed_programs_follow_and_forked_children_do_not() {
    let test = "under_user_faults_only_executed_programs_follow_and_forked_children_do_not";
    let Some(p) = as_nobody(test) else { return };
    let flags = ["--budget", "4M", "--user-faults-only", "--follow-children", "--"];
    let r = tier_as(NOBODY, &[&flags[..], &[p.to_str().unwrap(), "fork", "8"]].concat());
    assert_ran(&r, 4 << 20, &["child", "child again", "parent", "parent again"]);
    assert_eq!(processes(&r).len(), 1, "the forked child untiered: {:?}", processes(&r));
    let script = format!("{} fill 8; echo shell done", p.display());
    let r = tier_as(NOBODY, &[&flags[..], &["sh", "-c", &script]].concat());
    assert_ran(&r, 4 << 20, &["first pass", "second pass"]);
    let child = line_of(&processes(&r), "tier_check").clone();
    assert!(child["evictions"].as_u64() > Some(0), "{child}");
}
