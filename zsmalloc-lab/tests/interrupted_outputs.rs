//! An output is whole or not there: a command interrupted by SIGINT, SIGTERM or SIGHUP, refused,
//! or failing while it writes leaves no partial file and no temporary, and an existing output
//! byte for byte as it was; the process ends as the signal would have ended it (a shell sees
//! 128 + the signal). Every test runs the real binary, under a timeout that kills it.

mod kernel_support;

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use kernel_support::{assert_left_nothing, kernel_or_skip, made_by, Cleanup};

/// Long enough to be interrupted well before its end (several seconds here).
const BIG_RUN: [&str; 4] = ["run", "dist", "--objects", "1000000"];
const TIMEOUT: Duration = Duration::from_secs(120);

/// A fresh, empty directory for one test (in this process's scratch directory, removed when
/// the process exits).
fn fresh(name: &str) -> PathBuf {
    let d = kernel_support::scratch(&format!("int-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The names in `dir`, hidden ones included, sorted (none when there is no `dir`).
fn names(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut v: Vec<String> =
        entries.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

/// A child process, killed and reaped if the test ends before it did.
struct Running(Option<Child>);

impl Running {
    /// Starts `cmd`, its stdout discarded (stderr as `cmd` says).
    fn spawn(cmd: &mut Command) -> Running {
        let child = cmd
            .env_remove("ZSMALLOC_CHAIN_SIZE")
            .env_remove("ZSMALLOC_BACKEND")
            .env_remove("ZSMALLOC_CLASS_TABLE")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("start the zsmalloc binary");
        Running(Some(child))
    }

    fn zsmalloc(args: &[&str]) -> Running {
        Running::spawn(
            Command::new(env!("CARGO_BIN_EXE_zsmalloc")).args(args).stderr(Stdio::null()),
        )
    }

    fn pid(&self) -> u32 {
        self.0.as_ref().unwrap().id()
    }

    fn signal(&self, sig: libc::c_int) {
        // SAFETY: kill has no memory-safety preconditions; the pid is our child's, not reaped.
        assert_eq!(unsafe { libc::kill(self.pid() as libc::pid_t, sig) }, 0);
    }

    /// Its exit, within [`TIMEOUT`] (else it is killed and the test fails).
    fn wait(&mut self) -> ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = self.0.as_mut().unwrap().try_wait().unwrap() {
                self.0 = None;
                return status;
            }
            assert!(start.elapsed() < TIMEOUT, "the command did not end within {TIMEOUT:?}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The temporaries of outputs in `dir` (`.<name>.<pid>.<n>.partial`).
fn partials(dir: &Path) -> Vec<PathBuf> {
    names(dir)
        .into_iter()
        .filter(|n| n.starts_with('.') && n.ends_with(".partial"))
        .map(|n| dir.join(n))
        .collect()
}

/// Waits until a temporary in `dir` holds bytes: the command is writing its output.
fn wait_for_writing(dir: &Path, run: &mut Running) -> PathBuf {
    let start = Instant::now();
    loop {
        let found =
            partials(dir).into_iter().find(|p| std::fs::metadata(p).is_ok_and(|m| m.len() > 0));
        if let Some(p) = found {
            return p;
        }
        assert!(
            run.0.as_mut().unwrap().try_wait().unwrap().is_none(),
            "the command ended before it wrote anything"
        );
        assert!(start.elapsed() < TIMEOUT, "no temporary output appeared in {}", dir.display());
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn sigint_sigterm_and_sighup_during_record_leave_nothing() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        let dir = fresh(&format!("record-{sig}"));
        let out = dir.join("OUT.trace");
        let mut run = Running::zsmalloc(&[&BIG_RUN[..], &["--record", s(&out)]].concat());
        let temp = wait_for_writing(&dir, &mut run);
        let name = temp.file_name().unwrap().to_str().unwrap().to_string();
        assert!(name.starts_with(&format!(".OUT.trace.{}.", run.pid())), "{name}");
        run.signal(sig);
        let status = run.wait();
        assert_eq!(
            status.signal(),
            Some(sig),
            "signal {sig}: ends as the signal would ({status:?})"
        );
        assert_eq!(names(&dir), Vec::<String>::new(), "signal {sig}: nothing left");
    }
}

#[test]
fn a_shell_sees_128_plus_the_signal() {
    let dir = fresh("shell");
    let out = dir.join("OUT.trace");
    let status_file = fresh("shell-status").join("status");
    // The shell waits for the command and writes the status it saw.
    let script = format!(
        "\"$0\" {} --record '{}'; echo $? > '{}'",
        BIG_RUN.join(" "),
        s(&out),
        s(&status_file)
    );
    let mut shell = Running::spawn(
        Command::new("sh").arg("-c").arg(script).arg(env!("CARGO_BIN_EXE_zsmalloc")),
    );
    let temp = wait_for_writing(&dir, &mut shell);
    // The command's pid is in its temporary's name: `.OUT.trace.<pid>.<n>.partial`.
    let name = temp.file_name().unwrap().to_str().unwrap().to_string();
    let pid: libc::pid_t = name.split('.').nth(3).unwrap().parse().unwrap();
    // SAFETY: kill has no memory-safety preconditions; `pid` is the shell's child, which the
    // shell has not reaped while it waits for it.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    assert!(shell.wait().success());
    assert_eq!(std::fs::read_to_string(&status_file).unwrap().trim(), "130");
    assert_eq!(names(&dir), Vec::<String>::new());
}

#[test]
fn an_existing_trace_is_kept_byte_for_byte_when_the_new_run_is_interrupted() {
    let dir = fresh("existing");
    let out = dir.join("OUT.trace");
    let mut small = Running::zsmalloc(&["run", "dist", "--objects", "2000", "--record", s(&out)]);
    assert!(small.wait().success());
    let before = std::fs::read(&out).unwrap();
    assert!(before.len() > 1000);
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let mut run = Running::zsmalloc(&[&BIG_RUN[..], &["--record", s(&out)]].concat());
        wait_for_writing(&dir, &mut run);
        assert_eq!(std::fs::read(&out).unwrap(), before, "untouched while the new one is written");
        run.signal(sig);
        assert_eq!(run.wait().signal(), Some(sig));
        assert_eq!(names(&dir), ["OUT.trace"]);
        assert_eq!(std::fs::read(&out).unwrap(), before, "signal {sig}: the old trace kept");
    }
}

#[test]
fn every_output_of_a_run_is_kept_when_it_is_interrupted() {
    let dir = fresh("all-outputs");
    let (trace, plot, timeline) = (dir.join("r.trace"), dir.join("p.svg"), dir.join("t.csv"));
    for (p, text) in [(&trace, "old trace\n"), (&plot, "<svg/>\n"), (&timeline, "a,b\n1,2\n")] {
        std::fs::write(p, text).unwrap();
    }
    let outputs = ["--record", s(&trace), "--plot", s(&plot), "--timeline", s(&timeline)];
    let mut run = Running::zsmalloc(&[&BIG_RUN[..], &outputs].concat());
    wait_for_writing(&dir, &mut run);
    run.signal(libc::SIGTERM);
    assert_eq!(run.wait().signal(), Some(libc::SIGTERM));
    assert_eq!(names(&dir), ["p.svg", "r.trace", "t.csv"]);
    assert_eq!(std::fs::read_to_string(&trace).unwrap(), "old trace\n");
    assert_eq!(std::fs::read_to_string(&plot).unwrap(), "<svg/>\n");
    assert_eq!(std::fs::read_to_string(&timeline).unwrap(), "a,b\n1,2\n");
}

/// Runs `cmd` to its end (within [`TIMEOUT`]); its exit and stderr.
fn to_the_end(cmd: &mut Command) -> (ExitStatus, String) {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let err = fresh(&format!("stderr-{n}")).join("stderr");
    let mut run = Running::spawn(cmd.stderr(std::fs::File::create(&err).unwrap()));
    let status = run.wait();
    (status, std::fs::read_to_string(&err).unwrap())
}

fn finished(args: &[&str]) -> (ExitStatus, String) {
    to_the_end(Command::new(env!("CARGO_BIN_EXE_zsmalloc")).args(args))
}

#[test]
fn a_refused_command_leaves_no_output() {
    let dir = fresh("refused");
    let (trace, plot, timeline) = (dir.join("r.trace"), dir.join("p.svg"), dir.join("t.csv"));
    let outputs = ["--record", s(&trace), "--plot", s(&plot), "--timeline", s(&timeline)];
    // Refused once the outputs are checked: the memory plan, then a bad flag among them.
    let refusals: [&[&str]; 2] = [&["--max-memory", "1M"], &["--timeline-every", "0"]];
    for extra in refusals {
        let (status, err) = finished(&[&BIG_RUN[..], &outputs, extra].concat());
        assert_eq!(status.code(), Some(2), "{extra:?}: {err}");
        assert_eq!(names(&dir), Vec::<String>::new(), "{extra:?}: {err}");
    }
    // A directory made for the traces goes with a refusal after it was made.
    let trace_dir = dir.join("made/traces");
    let (status, err) = finished(&["folios", "--trace-dir", s(&trace_dir), "--max-memory", "1K"]);
    assert_eq!(status.code(), Some(2), "{err}");
    assert_eq!(names(&dir), Vec::<String>::new(), "{err}");
    std::fs::write(&trace, "kept\n").unwrap();
    let (status, _) = finished(&[&BIG_RUN[..], &outputs, &["--max-memory", "1M"]].concat());
    assert_eq!(status.code(), Some(2));
    assert_eq!(names(&dir), ["r.trace"]);
    assert_eq!(std::fs::read_to_string(&trace).unwrap(), "kept\n");
}

/// Runs `zsmalloc args` with files limited to `blocks` blocks (`ulimit -f`; 512 or 1024 bytes
/// each, enough for the one line of stderr) and SIGXFSZ ignored: a write past the limit fails
/// (EFBIG), as on a full disk.
fn with_file_limit(blocks: u32, args: &[&str]) -> (ExitStatus, String) {
    let quoted: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
    let script = format!("ulimit -f {blocks}; trap '' XFSZ; exec \"$0\" {}", quoted.join(" "));
    to_the_end(Command::new("sh").arg("-c").arg(script).arg(env!("CARGO_BIN_EXE_zsmalloc")))
}

/// One writer failing mid-write: exit 2, the old file as it was, no temporary.
fn fails_and_keeps(name: &str, old: &str, args: impl Fn(&str) -> Vec<String>) {
    let dir = fresh(&format!("fails-{name}"));
    let target = dir.join(name);
    std::fs::write(&target, old).unwrap();
    let args = args(s(&target));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (status, err) = with_file_limit(4, &args);
    assert_eq!(status.code(), Some(2), "{args:?} fails on the full file ({status:?}): {err}");
    assert!(err.contains("file too large"), "{args:?}: {err}");
    assert_eq!(names(&dir), [name], "{args:?}: no temporary");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), old, "{args:?}: the old file kept");
}

#[test]
fn a_writer_failing_mid_write_keeps_the_old_file() {
    let own = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    fails_and_keeps("t.trace", "old trace\n", |p| {
        own(&["run", "dist", "--objects", "20000", "--record", p])
    });
    fails_and_keeps("t.csv", "a,b\n", |p| {
        own(&["run", "dist", "--objects", "20000", "--timeline", p, "--timeline-every", "1"])
    });
    fails_and_keeps("p.svg", "<svg/>\n", |p| own(&["classes", "--plot", p]));
    fails_and_keeps("c.table", "# old\n", |p| {
        own(&["classes", "--page-size", "64K", "--export", p])
    });
}

#[test]
fn an_interrupted_folios_run_leaves_no_trace_and_not_the_directory_it_made() {
    let dir = fresh("folios");
    let traces = dir.join("made/traces");
    let args = ["folios", "--compressor", "lz4", "--synthetic-pages", "65536", "--trace-dir"];
    let mut run = Running::zsmalloc(&[&args[..], &[s(&traces)]].concat());
    wait_for_writing(&traces, &mut run);
    run.signal(libc::SIGTERM);
    assert_eq!(run.wait().signal(), Some(libc::SIGTERM));
    assert_eq!(names(&dir), Vec::<String>::new(), "no trace, no directory left");
    // A directory that was there stays, and so do its files.
    std::fs::create_dir_all(&traces).unwrap();
    std::fs::write(traces.join("mine"), "x").unwrap();
    let mut run = Running::zsmalloc(&[&args[..], &[s(&traces)]].concat());
    wait_for_writing(&traces, &mut run);
    run.signal(libc::SIGINT);
    assert_eq!(run.wait().signal(), Some(libc::SIGINT));
    assert_eq!(names(&traces), ["mine"]);
}

#[test]
fn a_refused_export_leaves_the_old_table() {
    let dir = fresh("export");
    let table = dir.join("c.table");
    std::fs::write(&table, "# old\n").unwrap();
    let (status, err) = finished(&["classes", "--backend", "zblock", "--export", s(&table)]);
    assert_eq!(status.code(), Some(2), "{err}");
    assert_eq!(names(&dir), ["c.table"]);
    assert_eq!(std::fs::read_to_string(&table).unwrap(), "# old\n");
    let (status, err) = finished(&["classes", "--export", s(&table)]);
    assert!(status.success(), "{err}");
    assert_ne!(std::fs::read_to_string(&table).unwrap(), "# old\n");
    assert_eq!(names(&dir), ["c.table"]);
}

#[test]
fn an_interrupted_kernel_capture_leaves_no_trace_and_no_device() {
    let Some(_g) = kernel_or_skip("an_interrupted_kernel_capture_leaves_no_trace_and_no_device")
    else {
        return;
    };
    let dir = fresh("capture");
    let out = dir.join("k.trace");
    std::fs::write(&out, "old\n").unwrap();
    let mut cleanup = Cleanup::default();
    let mut run = Running::zsmalloc(&[
        "kernel",
        "capture",
        "--synthetic-pages",
        "50000",
        "--compressor",
        "lz4",
        "-o",
        s(&out),
    ]);
    let pid = run.pid();
    let start = Instant::now();
    let made = loop {
        assert!(start.elapsed() < TIMEOUT, "the capture never made its device");
        assert!(run.0.as_mut().unwrap().try_wait().unwrap().is_none(), "the capture ended early");
        if let Some(m) = made_by(pid).first().copied() {
            cleanup.made.push(m);
            break m;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    run.signal(libc::SIGINT);
    assert_eq!(run.wait().signal(), Some(libc::SIGINT));
    assert_left_nothing(pid, &[made], "the handler");
    assert_eq!(names(&dir), ["k.trace"]);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "old\n");
}
