//! Traces from anywhere a user points the lab: a pipe, a FIFO, standard input, endless devices
//! and files that are not text. Each is read once, within bounded memory and time.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{s, scratch, usage_error};

/// The report of a replay, without its `workload` line (which names the input).
fn report_without_input_name(stdout: &[u8]) -> String {
    let text = String::from_utf8_lossy(stdout);
    text.lines().filter(|l| !l.starts_with("workload")).collect::<Vec<_>>().join("\n")
}

fn recorded_trace(name: &str, objects: &str) -> std::path::PathBuf {
    let trace = scratch(name);
    common::ok(&["run", "dist", "--objects", objects, "--no-time", "--record", s(&trace)]);
    trace
}

/// Runs the command to its end and returns its exit code, stderr and peak resident memory (the
/// kernel's `ru_maxrss` of that one child, in bytes); fails when it used more than `cpu` of
/// CPU time (a bound other processes' load does not move) or hung.
fn run_measured(cmd: &mut Command, stdin: Option<&[u8]>, cpu: Duration) -> (i32, String, u64) {
    let m = common::measured(cmd, stdin);
    assert!(m.cpu <= cpu, "{cmd:?} used {:?} of CPU, more than {cpu:?}", m.cpu);
    (m.code, m.stderr, m.peak_bytes)
}

fn zsmalloc_cmd(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_zsmalloc"));
    c.args(args);
    c
}

/// Runs the command with `bytes` written to its standard input through a pipe.
fn with_stdin(args: &[&str], bytes: &[u8]) -> std::process::Output {
    let mut child =
        zsmalloc_cmd(args).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(bytes).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn a_trace_from_a_pipe_stdin_or_fifo_replays_as_from_its_file() {
    let trace = recorded_trace("piped.trace", "3000");
    let from_file = common::zsmalloc(&["replay", s(&trace), "--no-time"]);
    assert!(from_file.status.success());
    let want = report_without_input_name(&from_file.stdout);
    let bytes = std::fs::read(&trace).unwrap();
    for arg in ["-", "/dev/stdin"] {
        let out = with_stdin(&["replay", arg, "--no-time"], &bytes);
        assert!(out.status.success(), "replay {arg}");
        assert_eq!(report_without_input_name(&out.stdout), want, "replay {arg}");
    }
    let fifo = scratch("replay.fifo");
    let _ = std::fs::remove_file(&fifo);
    let c = std::ffi::CString::new(s(&fifo)).unwrap();
    // SAFETY: mkfifo reads the NUL-terminated path, which outlives the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let writer = {
        let (fifo, bytes) = (fifo.clone(), bytes.clone());
        std::thread::spawn(move || std::fs::write(fifo, bytes).unwrap())
    };
    let mut cmd = zsmalloc_cmd(&["replay", s(&fifo), "--no-time"]);
    let out = cmd.stdout(Stdio::piped()).spawn().unwrap().wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(out.status.success(), "replay of a FIFO");
    assert_eq!(report_without_input_name(&out.stdout), want, "replay of a FIFO");
    // Several configurations read a piped trace from its one copy.
    let out =
        with_stdin(&["compare", "--no-time", "--sweep", "chain-size=4,8", "trace", "-"], &bytes);
    assert!(out.status.success(), "compare over a piped trace");
}

#[test]
fn endless_and_binary_inputs_are_refused_in_bounded_memory_and_time() {
    let long_line = scratch("long-line.trace");
    let mut text = b"store 1 100\n".to_vec();
    text.extend(std::iter::repeat_n(b'7', 2 << 20));
    std::fs::write(&long_line, &text).unwrap();
    let nul = scratch("nul.trace");
    std::fs::write(&nul, b"store 1 100\nstore 2\0 100\n").unwrap();
    let cases = [
        ("/dev/zero", "/dev/zero:1: the line is longer than 64 KiB"),
        ("/dev/urandom", "/dev/urandom:"),
        (s(&long_line), ":2: the line is longer than 64 KiB"),
        (s(&nul), ":2: a NUL byte at column 8: not a text file"),
    ];
    for (input, want) in cases {
        let err = usage_error(&["replay", input]);
        assert!(err.contains(want), "{input}: {err}");
        // Under a 4 GiB address-space limit, as a user's `ulimit -v` would set it.
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "ulimit -v 4194304 && exec \"$0\" replay \"$1\""])
            .args([env!("CARGO_BIN_EXE_zsmalloc"), input]);
        let (code, err, peak) = run_measured(&mut cmd, None, Duration::from_secs(10));
        assert_eq!(code, 2, "{input}: {err}");
        assert!(peak < 300 << 20, "{input}: peak {peak} bytes");
    }
    // Standard input that never ends a line.
    let (code, err, peak) = run_measured(
        &mut zsmalloc_cmd(&["replay", "-"]),
        Some(&vec![b'x'; 1 << 20]),
        Duration::from_secs(10),
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("standard input:1: the line is longer than 64 KiB"), "{err}");
    assert!(peak < 300 << 20, "peak {peak}");
    // Control characters of a line are escaped in the message.
    let esc = scratch("escape.trace");
    std::fs::write(&esc, b"store 1 10\nfree \x1b[2J\n").unwrap();
    let err = usage_error(&["replay", s(&esc)]);
    assert!(err.contains(r"'\u{1b}[2J' is not a handle id"), "{err}");
    let empty = scratch("empty.trace");
    std::fs::write(&empty, b"# nothing\n").unwrap();
    assert!(usage_error(&["replay", s(&empty)]).contains("has no operation"));
}

#[test]
fn a_trace_with_no_operation_is_refused_alike_by_every_command() {
    let out = scratch("from-empty.bin");
    for (name, bytes) in [("empty0.trace", &b""[..]), ("comments.trace", b"# nothing\n")] {
        let path = scratch(name);
        std::fs::write(&path, bytes).unwrap();
        let want = format!("zsmalloc: trace: no input: {} has no operation\n", s(&path));
        assert_eq!(usage_error(&["replay", s(&path), "--no-time"]), want);
        assert_eq!(usage_error(&["trace", "info", s(&path)]), want);
        assert_eq!(usage_error(&["trace", "info", s(&path), "--format", "json"]), want);
        assert_eq!(usage_error(&["trace", "convert", s(&path), s(&out)]), want);
        assert!(!out.exists(), "nothing written for {name}");
    }
}

#[test]
fn a_trace_is_not_converted_onto_itself() {
    let trace = recorded_trace("self.trace", "200");
    let before = std::fs::read(&trace).unwrap();
    let link = scratch("self-link.trace");
    let hard = scratch("self-hard.trace");
    let _ = std::fs::remove_file(&link);
    let _ = std::fs::remove_file(&hard);
    std::os::unix::fs::symlink(&trace, &link).unwrap();
    std::fs::hard_link(&trace, &hard).unwrap();
    for out in [&trace, &link, &hard] {
        let err = usage_error(&["trace", "convert", s(&trace), s(out)]);
        assert!(err.contains("is the input") && err.contains(s(out)), "{err}");
    }
    // Standard input read from the very file named as OUT.
    let piped = Command::new(env!("CARGO_BIN_EXE_zsmalloc"))
        .args(["trace", "convert", "-", s(&trace)])
        .stdin(std::fs::File::open(&trace).unwrap())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&piped.stderr);
    assert_eq!(piped.status.code(), Some(2), "{err}");
    assert!(err.contains("is the input standard input itself"), "{err}");
    assert_eq!(std::fs::read(&trace).unwrap(), before, "the trace is untouched");
    // Another name: converted, and the command says what it wrote.
    let bin = scratch("self.bin");
    let said = common::ok(&["trace", "convert", s(&trace), s(&bin)]);
    let ops = String::from_utf8_lossy(&before).lines().filter(|l| !l.starts_with('#')).count();
    let size = std::fs::metadata(&bin).unwrap().len();
    assert_eq!(
        said,
        format!(
            "wrote {}: binary trace, {ops} operations, {size} bytes, from the text trace {}\n",
            s(&bin),
            s(&trace)
        )
    );
}

/// `count` stores of 1000 bytes, never freed, as a file.
fn long_trace(name: &str, count: u64) -> std::path::PathBuf {
    let path = scratch(name);
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    for id in 0..count {
        writeln!(out, "store {id} 1000").unwrap();
    }
    out.flush().unwrap();
    path
}

#[test]
fn a_long_trace_refused_by_the_plan_costs_what_a_short_one_does() {
    let short = long_trace("short.trace", 1_000);
    let long = long_trace("long.trace", 10_000_000);
    let limit = Duration::from_secs(60);
    let (code, err, short_peak) =
        run_measured(&mut zsmalloc_cmd(&["replay", s(&short), "--no-time"]), None, limit);
    assert_eq!(code, 0, "{err}");
    let (code, err, long_peak) = run_measured(
        &mut zsmalloc_cmd(&["replay", s(&long), "--no-time", "--max-memory", "384M"]),
        None,
        limit,
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("more than --max-memory") && err.contains("where the reading stopped"),
        "{err}"
    );
    // The reader's buffers and the map of the objects live where the plan stopped.
    assert!(
        long_peak <= short_peak + (16 << 20),
        "refused at {long_peak} B, short run {short_peak} B"
    );
    // The same from a pipe: the copy stops where the plan did. The bytes come from another
    // process, so this one (whose memory a child shares until it runs) never holds them.
    let mut head = Command::new("head")
        .args(["-c", "40000000", s(&long)])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut cmd = zsmalloc_cmd(&["replay", "-", "--no-time", "--max-memory", "384M"]);
    cmd.stdin(head.stdout.take().unwrap());
    let (code, err, pipe_peak) = run_measured(&mut cmd, None, limit);
    let _ = head.kill();
    let _ = head.wait();
    assert_eq!(code, 2, "{err}");
    assert!(pipe_peak <= short_peak + (16 << 20), "piped refusal at {pipe_peak} B");
    std::fs::remove_file(&long).unwrap();
}
