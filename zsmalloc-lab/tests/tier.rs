//! `zsmalloc tier` on real programs: a C program (zsmalloc-tier/tests/programs/tier_check.c)
//! filling 64 MiB of malloc blocks and mappings under a 4 MiB budget and reading every word
//! back, writer threads racing the evictor, a fork whose child checks every word, posix_spawn,
//! munmap and mremap, a signal handler touching evicted memory, Python, the pages compressed with
//! each compressor; the exit statuses and refusals. They need root (or access to
//! /dev/userfaultfd) and a C compiler, and skip with the reason printed otherwise. Every run has
//! a deadline, after which its process group is killed and the test fails.

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
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zsmalloc"));
    cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
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
    let report = tempfile("report.json");
    let mut all: Vec<&std::ffi::OsStr> =
        vec!["tier".as_ref(), "--report".as_ref(), report.as_ref()];
    all.extend(args.iter().map(|a| std::ffi::OsStr::new(*a)));
    let (code, stdout, stderr) = zsmalloc(&all);
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
/// slack: the evictions deferred while faults are pending, and the pages one fault brings in,
/// served before the evictions they cause; a first touch brings up to 16).
fn assert_tiered(r: &Run, budget: u64, passes: &[&str]) {
    assert_ran(r, budget, passes);
    let slack = zsmalloc_tier::slack::slack_pages(budget / PAGE) * PAGE;
    assert!(figure(r, "peak_resident_bytes") <= budget + slack, "{:?}", r.report);
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
fn a_signal_handler_touching_evicted_memory_during_free_is_served() {
    // A timer's handler reads evicted words and writes its own buffer while the program frees
    // and unmaps blocks (the tier's lock held by the interrupted thread, signals blocked).
    let Some(p) = program("a_signal_handler_touching_evicted_memory_during_free_is_served") else {
        return;
    };
    let r = tier(&["--budget", "4M", "--", p.to_str().unwrap(), "signals", "32"]);
    assert_tiered(&r, 4 << 20, &["signals"]);
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
    let slack = zsmalloc_tier::slack::slack_pages((4 << 20) / PAGE) * PAGE;
    assert!(figure(&r, "resident_bytes") <= (4 << 20) + slack, "{:?}", r.report);
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

/// `tier_check ARGS` under `budget` with `--folio-size folio`: every check passed, groups
/// evicted, and a fault bringing back more than one page on the average.
fn folio_run(p: &Path, folio: &str, budget: &str, args: &[&str], passes: &[&str]) -> Run {
    let all = [&["--budget", budget, "--folio-size", folio, "--", p.to_str().unwrap()], args];
    let r = tier(&all.concat());
    let budget = zsmalloc_core::config::parse_bytes(budget).unwrap();
    assert_tiered(&r, budget, passes);
    let pages: u64 = if folio == "16K" { 4 } else { 16 };
    assert_eq!(figure(&r, "folio_size"), pages * PAGE, "{:?}", r.report);
    assert!(figure(&r, "group_evictions") > 0, "{:?}", r.report);
    // Each group eviction moves out up to a folio's pages.
    assert!(figure(&r, "evictions") <= figure(&r, "group_evictions") * pages, "{:?}", r.report);
    assert!(r.stderr.contains(&format!("folios                {folio}: ")), "{}", r.stderr);
    r
}

#[test]
fn folios_of_16k_and_64k_read_back_every_word() {
    let Some(p) = program("folios_of_16k_and_64k_read_back_every_word") else { return };
    let single = tier(&["--budget", "4M", "--", p.to_str().unwrap(), "fill", "64"]);
    assert_eq!(figure(&single, "folio_size"), PAGE);
    assert_eq!(figure(&single, "group_evictions"), 0);
    let per_fault = |r: &Run| r.report.as_ref().unwrap()["decompressed_bytes_per_fault"].as_f64();
    assert!(per_fault(&single).unwrap() <= PAGE as f64, "{:?}", single.report);
    for (folio, pages) in [("16K", 4), ("64K", 16)] {
        let r = folio_run(p, folio, "4M", &["fill", "64"], &["first pass", "second pass"]);
        // A fault brings its group back: fewer faults, each decompressing several pages.
        assert!(figure(&r, "faults") * 2 < figure(&single, "faults"), "{:?}", r.report);
        let per = per_fault(&r).unwrap();
        assert!(per > (pages / 2 * PAGE) as f64 && per <= (pages * PAGE) as f64, "{per}");
        assert!(figure(&r, "decompressed_bytes") > 0);
    }
}

#[test]
fn folio_writers_racing_the_evictor_and_a_fork_lose_nothing() {
    let Some(p) = program("folio_writers_racing_the_evictor_and_a_fork_lose_nothing") else {
        return;
    };
    for folio in ["16K", "64K"] {
        folio_run(p, folio, "4M", &["race", "4", "32"], &["race"]);
        let p = p.to_str().unwrap();
        let r = tier(&["--budget", "4M", "--folio-size", folio, "--", p, "fork", "32"]);
        assert_ran(&r, 4 << 20, &["child", "parent", "parent again"]);
        assert_eq!(figure(&r, "forks"), 1);
        assert!(figure(&r, "group_evictions") > 0, "{:?}", r.report);
    }
}

#[test]
fn parts_of_a_folio_emptied_read_zeros_and_the_rest_keeps_its_bytes() {
    let Some(p) = program("parts_of_a_folio_emptied_read_zeros") else { return };
    for folio in ["16K", "64K"] {
        folio_run(p, folio, "2M", &["partial", "8"], &["partial"]);
        folio_run(p, folio, "256K", &["remap"], &["remap"]);
        // Groups whose other pages were first touched while one was out leave whole again.
        let r = folio_run(p, folio, "2M", &["sparse", "8"], &["sparse"]);
        assert_eq!(figure(&r, "pool_full_stops"), 0, "{:?}", r.report);
    }
}

#[test]
fn readahead_hits_on_a_sequential_reread() {
    let Some(p) = program("readahead_hits_on_a_sequential_reread") else { return };
    let p = p.to_str().unwrap();
    let r = tier(&["--budget", "4M", "--readahead", "3", "--", p, "fill", "16"]);
    assert_tiered(&r, 4 << 20, &["first pass", "second pass"]);
    let (read, hits) = (figure(&r, "readahead_pages"), figure(&r, "readahead_hits"));
    // The passes read every block in order: most of a cluster read ahead is used.
    assert!(hits > 0 && hits <= read && hits * 2 > read, "{hits} of {read}: {:?}", r.report);
    assert!(hits < figure(&r, "faults"), "a hit is a fault served from the cache");
    assert_eq!(figure(&r, "readahead"), 3);
    assert!(r.stderr.contains("page-cluster 3 (8 pages)"), "{}", r.stderr);
    // The readahead's reads are in the trace, its objects freed at the hits.
    let trace = tempfile("readahead.trace");
    let t = trace.to_str().unwrap();
    let r = tier(&["--budget", "4M", "--readahead", "3", "--record", t, "--", p, "fill", "16"]);
    assert_tiered(&r, 4 << 20, &["first pass", "second pass"]);
    let args = [trace.as_os_str(), "--no-time".as_ref(), "--format".as_ref(), "json".as_ref()];
    let (code, out, err) = zsmalloc(&[&["replay".as_ref()][..], &args].concat());
    assert_eq!(code, 0, "{err}");
    let replay: Value = serde_json::from_str(&out).expect("replay's JSON");
    assert_eq!(replay["pages_peak"].as_u64(), Some(figure(&r, "max_pool_pages")), "{replay}");
    assert_eq!(replay["op_errors"].as_u64(), Some(0), "{replay}");
    let none = tier(&["--budget", "4M", "--", p, "fill", "16"]);
    assert_eq!((figure(&none, "readahead_pages"), figure(&none, "readahead_hits")), (0, 0));
    let r = tier(&["--budget", "4M", "--readahead", "4", "--", p, "fork", "32"]);
    assert_ran(&r, 4 << 20, &["child", "parent", "parent again"]);
}

#[test]
fn folio_and_readahead_refusals_are_one_line_and_exit_2() {
    for (args, says) in [
        (&["--folio-size", "8K"][..], "4K, 16K or 64K is accepted"),
        (&["--readahead", "5"], "a whole number in 0..=4 is accepted"),
        (&["--readahead", "3", "--folio-size", "16K"], "brings its whole group already"),
        (&["--folio-size", "64K", "--multi-page", "16K"], "holds objects up to 16384 bytes"),
        (&["--folio-size", "16K", "--backend", "zblock"], "cannot store a folio as one object"),
    ] {
        let r = tier(&[args, &["--", "true"]].concat());
        assert_eq!((r.code, r.stderr.lines().count()), (2, 1), "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
    }
}

#[test]
fn a_folio_trace_replays_to_the_same_pool_pages() {
    let Some(p) = program("a_folio_trace_replays_to_the_same_pool_pages") else { return };
    let trace = tempfile("folio.trace");
    let t = trace.to_str().unwrap();
    let args = ["--budget", "4M", "--folio-size", "64K", "--record", t, "--"];
    let r = tier(&[&args[..], &[p.to_str().unwrap(), "fill", "16"]].concat());
    assert_tiered(&r, 4 << 20, &["first pass", "second pass"]);
    let text = std::fs::read_to_string(&trace).expect("the trace");
    assert!(text.contains("multi_page_size 65536 (replay with --multi-page 65536)"), "header");
    let len = |l: &str| l.split_whitespace().nth(2).and_then(|n| n.parse::<u64>().ok());
    let stores: Vec<u64> =
        text.lines().filter(|l| l.starts_with("store ")).filter_map(len).collect();
    assert!(stores.iter().any(|&n| n > PAGE), "objects of several pages are stored");
    assert!(stores.iter().all(|&n| n <= 16 * PAGE));
    let replay = |extra: &[&str]| {
        let mut a: Vec<&std::ffi::OsStr> = vec!["replay".as_ref(), trace.as_os_str()];
        a.extend(extra.iter().map(std::ffi::OsStr::new));
        a.extend(["--no-time", "--format", "json"].map(std::ffi::OsStr::new));
        let (code, out, err) = zsmalloc(&a);
        assert_eq!(code, 0, "{err}");
        serde_json::from_str::<Value>(&out).expect("replay's JSON")
    };
    let band = replay(&["--multi-page", "64K"]);
    assert_eq!(band["pages_peak"].as_u64(), Some(figure(&r, "max_pool_pages")), "{band}");
    assert_eq!(band["stores"].as_u64(), Some(stores.len() as u64), "{band}");
    assert_eq!(band["op_errors"].as_u64(), Some(0), "{band}");
    // Without the band the pool refuses the objects above a page.
    assert!(replay(&[])["op_errors"].as_u64() > Some(0));
}
/// The resident bytes of a process's userfaultfd-registered memory (the tier's reserve and its
/// staging area: the mappings whose flags in /proc/PID/smaps carry `um`), as the kernel counts
/// them; `None` once the process is gone.
fn registered_rss(pid: u32) -> Option<u64> {
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

/// `zsmalloc tier ARGS` (with `--report`), the program's registered memory sampled from
/// /proc every millisecond while it runs: the run, the largest sample and the samples taken
/// with pages resident.
fn tier_sampled(args: &[&str]) -> (Run, u64, usize) {
    let report = tempfile("report.json");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zsmalloc"));
    cmd.arg("tier").arg("--report").arg(&report).args(args);
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    let mut child = cmd.spawn().expect("run zsmalloc");
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let readers = [
        std::thread::spawn(move || std::io::read_to_string(&mut out).unwrap_or_default()),
        std::thread::spawn(move || std::io::read_to_string(&mut err).unwrap_or_default()),
    ];
    let children = format!("/proc/{0}/task/{0}/children", child.id());
    let (mut most, mut samples) = (0u64, 0usize);
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if t0.elapsed() > DEADLINE {
            // SAFETY: kill(2) of the process group this test made (the child leads it).
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            panic!("zsmalloc tier {args:?} did not end within {DEADLINE:?}");
        }
        let program = std::fs::read_to_string(&children).ok();
        if let Some(rss) = program
            .as_deref()
            .and_then(|c| c.split_whitespace().next()?.parse().ok())
            .and_then(registered_rss)
        {
            most = most.max(rss);
            samples += usize::from(rss > 0);
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    let [stdout, stderr] = readers.map(|r| r.join().expect("reader"));
    let report = std::fs::read_to_string(&report)
        .ok()
        .map(|t| serde_json::from_str(&t).expect("JSON report"));
    (Run { code: status.code().expect("zsmalloc exits"), stdout, stderr, report }, most, samples)
}

/// Under budgets of 4, 16 and 64 MiB, a program filling four times as much (32 MiB at least)
/// never has more resident than the budget and its documented slack: by the tier's count (the
/// report's peak), and by the kernel's (its registered memory's resident pages, sampled while
/// it runs; the staging pages not yet dropped, which the budget does not count, on top).
#[test]
fn resident_memory_stays_within_the_budget_and_its_slack() {
    let Some(p) = program("resident_memory_stays_within_the_budget_and_its_slack") else {
        return;
    };
    for mib in [4u64, 16, 64] {
        let budget = mib << 20;
        let fill = (4 * mib).max(32).to_string();
        let (r, most, samples) = tier_sampled(&[
            "--budget",
            &format!("{mib}M"),
            "--",
            p.to_str().unwrap(),
            "fill",
            &fill,
        ]);
        assert_ran(&r, budget, &["first pass", "second pass"]);
        let slack = zsmalloc_tier::slack::slack_pages(budget / PAGE) * PAGE;
        assert_eq!(figure(&r, "slack_bytes"), slack, "the report says the slack");
        let peak = figure(&r, "peak_resident_bytes");
        assert!(peak > budget && peak <= budget + slack, "{mib}M: peak {peak}, slack {slack}");
        let staging = 64 * PAGE;
        assert!(samples >= 5, "{mib}M: only {samples} samples of the program's memory");
        assert!(
            most <= budget + slack + staging,
            "{mib}M: {most} bytes resident in the registered memory (budget {budget}, slack \
             {slack}, staging {staging})"
        );
        assert!(most > budget / 2, "{mib}M: the samples saw {most} bytes resident at most");
        eprintln!(
            "{mib}M: peak {peak} by the tier's count, {most} by the kernel's ({samples} samples)"
        );
    }
}
