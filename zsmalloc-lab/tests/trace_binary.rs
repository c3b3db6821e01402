//! The binary trace beside the text one: conversions both ways keep every operation, a
//! binary trace replays as its text form does (from a file or a pipe, zstd-framed or not),
//! `trace info` gives a trace's known figures, and a cut, corrupt or absurd binary trace is
//! refused in one line naming the byte.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{ok, s, scratch, usage_error};
use zsmalloc_lab::trace_format::{TraceOp, TraceReader};

/// Every operation kind, hexadecimal and decimal ids, a move, an id at u64::MAX.
const EVERY_KIND: &str = "# every kind
store 0x7ffd1000 100
store 5 0
malloc 0x10 3000
write 0x10 3000
read 0x7ffd1000 100
read_sg 0x10 3000
move 0x10 0x20
free 5
compact
store 18446744073709551615 70000
free 0x7ffd1000
";

fn ops_of(path: &Path) -> Vec<TraceOp> {
    let mut r = TraceReader::open(path).unwrap();
    let mut ops = Vec::new();
    while let Some(op) = r.next_op().unwrap() {
        ops.push(op);
    }
    ops
}

/// The trace of every kind, written once: the tests run in parallel, and one rewriting the
/// file while another read it made the other read it empty.
fn every_kind() -> PathBuf {
    static WRITTEN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    WRITTEN
        .get_or_init(|| {
            let p = scratch("every.trace");
            std::fs::write(&p, EVERY_KIND).unwrap();
            p
        })
        .clone()
}

fn recorded(name: &str, extra: &[&str]) -> PathBuf {
    let p = scratch(name);
    let mut args = vec!["run", "dist", "--objects", "3000", "--churn", "2000", "--no-time"];
    args.extend_from_slice(&["--record", s(&p)]);
    args.extend_from_slice(extra);
    ok(&args);
    p
}

fn convert(from: &Path, to: &str, extra: &[&str]) -> PathBuf {
    let out = scratch(to);
    let mut args = vec!["trace", "convert", s(from), s(&out)];
    args.extend_from_slice(extra);
    ok(&args);
    out
}

fn magic(p: &Path) -> bool {
    std::fs::read(p).unwrap().starts_with(b"\x89ZSTRACE")
}

/// The report of a replay without its `workload` line (which names the input).
fn report(args: &[&str], stdin: Option<&[u8]>) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zsmalloc"));
    cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    if stdin.is_some() {
        cmd.stdin(Stdio::piped());
    }
    let mut child = cmd.spawn().unwrap();
    if let Some(bytes) = stdin {
        child.stdin.take().unwrap().write_all(bytes).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines().filter(|l| !l.starts_with("workload")).collect::<Vec<_>>().join("\n")
}

#[test]
fn text_to_binary_to_text_keeps_every_operation() {
    for (name, text) in [("every", every_kind()), ("recorded", recorded("rec.trace", &[]))] {
        let want = ops_of(&text);
        assert!(want.len() > 10, "{name}");
        let bin = convert(&text, &format!("{name}.bin"), &[]);
        assert!(magic(&bin), "{name}: the default form of a text trace's conversion is binary");
        assert!(ops_of(&bin) == want, "{name}: binary");
        let back = convert(&bin, &format!("{name}.back.trace"), &[]);
        assert!(!magic(&back), "{name}: a binary trace converts to text by default");
        assert!(ops_of(&back) == want, "{name}: text again");
        let zst = convert(&text, &format!("{name}.zst"), &["--zstd"]);
        assert!(ops_of(&zst) == want, "{name}: zstd");
        let zst_back = convert(&zst, &format!("{name}.zst.trace"), &["--to", "text"]);
        assert_eq!(
            std::fs::read_to_string(&zst_back)
                .unwrap()
                .lines()
                .filter(|l| !l.starts_with('#'))
                .count(),
            want.len()
        );
        let same = convert(&bin, &format!("{name}.bin2"), &["--to", "binary"]);
        assert!(ops_of(&same) == want, "{name}: binary to binary");
    }
    assert!(ops_of(&every_kind()).contains(&TraceOp::Move { from: 0x10, to: 0x20 }));
}

#[test]
fn a_binary_trace_replays_as_its_text_form_from_a_file_and_a_pipe() {
    let text = recorded("replay.trace", &[]);
    let want = report(&["replay", s(&text), "--no-time"], None);
    let bin = convert(&text, "replay.bin", &[]);
    let zst = convert(&text, "replay.zst", &["--zstd"]);
    let recorded_bin = recorded("replay.rec.bin", &["--trace-format", "binary"]);
    assert!(magic(&recorded_bin));
    let (a, b) = (ops_of(&recorded_bin), ops_of(&text));
    assert!(a == b, "--record --trace-format binary: {} and {} operations", a.len(), b.len());
    for p in [&bin, &zst, &recorded_bin] {
        assert_eq!(report(&["replay", s(p), "--no-time"], None), want, "{}", p.display());
        let bytes = std::fs::read(p).unwrap();
        assert_eq!(
            report(&["replay", "-", "--no-time"], Some(&bytes)),
            want,
            "{} piped",
            p.display()
        );
        assert_eq!(report(&["run", "trace", "-", "--no-time"], Some(&bytes)), want);
    }
    // Several configurations read a piped binary trace from its one copy.
    let bytes = std::fs::read(&bin).unwrap();
    let piped =
        report(&["compare", "--no-time", "--sweep", "chain-size=4,8", "trace", "-"], Some(&bytes));
    let filed =
        report(&["compare", "--no-time", "--sweep", "chain-size=4,8", "trace", s(&bin)], None);
    assert_eq!(piped, filed);
    // A replay records its operations again in either form, the same operations.
    let (again_text, again_bin) = (scratch("again.trace"), scratch("again.bin"));
    ok(&["replay", s(&bin), "--no-time", "--record", s(&again_text)]);
    ok(&["replay", s(&text), "--no-time", "--record", s(&again_bin), "--trace-format", "binary"]);
    assert!(magic(&again_bin) && !magic(&again_text));
    let (a, b) = (ops_of(&again_text), ops_of(&again_bin));
    assert!(a.len() > 1000 && a == b, "replay --record: {} and {} operations", a.len(), b.len());
}

/// A binary trace with empty header strings (18 bytes) followed by `ops`.
fn hand_made(name: &str, version: u8, flags: u8, ops: &[u8]) -> PathBuf {
    let mut b = b"\x89ZSTRACE".to_vec();
    b.extend_from_slice(&[version, flags, 0, 16, 0, 0, 0, 0, 0, 0]);
    b.extend_from_slice(ops);
    let p = scratch(name);
    std::fs::write(&p, b).unwrap();
    p
}

#[test]
fn cut_corrupt_and_absurd_binary_traces_are_refused_naming_the_byte() {
    // store 0 100, then the end record counting 1.
    let good = hand_made("good.bin", 1, 0, &[1, 0, 100, 0, 1]);
    assert_eq!(ops_of(&good), vec![TraceOp::Store { id: 0, len: 100 }]);
    let mut absurd = vec![1, 0, 100, 2];
    absurd.extend_from_slice(&[0xff; 11]);
    let cases: Vec<(PathBuf, &str)> = vec![
        (
            hand_made("cut-ops.bin", 1, 0, &[1, 0, 100]),
            "byte 21: the operations end without their end record",
        ),
        (hand_made("cut-varint.bin", 1, 0, &[1, 0x80]), "byte 19: the input ends inside a handle"),
        (hand_made("absurd.bin", 1, 0, &absurd), "byte 22: a handle is not a varint of 64 bits"),
        (
            hand_made(
                "absurd-len.bin",
                1,
                0,
                &[1, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f],
            ),
            "byte 20: a length is not a varint",
        ),
        (hand_made("opcode.bin", 1, 0, &[1, 0, 100, 9]), "byte 21: unknown op code 0x09"),
        (
            hand_made("count.bin", 1, 0, &[1, 0, 100, 0, 5]),
            "byte 21: the end record counts 5 operations, 1 were read",
        ),
        (
            hand_made("trailing.bin", 1, 0, &[1, 0, 100, 0, 1, 7]),
            "byte 23: bytes follow the end record",
        ),
        (hand_made("version.bin", 2, 0, &[0, 0]), "byte 8: binary trace version 2"),
        (hand_made("flags.bin", 1, 0x80, &[0, 0]), "byte 9: unknown flags 0x80"),
        (
            hand_made("zstd-garbage.bin", 1, 1, b"not zstd at all"),
            "of the decompressed operations: zstd:",
        ),
    ];
    let mut long = b"\x89ZSTRACE\x01\x00\x00\x10\x00\x00".to_vec();
    long.extend_from_slice(&[0xff, 0xff]);
    let long_path = scratch("long-header.bin");
    std::fs::write(&long_path, long).unwrap();
    let short_path = scratch("short-header.bin");
    std::fs::write(&short_path, b"\x89ZSTRACE\x01\x00\x00").unwrap();
    let cases = cases.into_iter().chain([
        (long_path, "byte 14: the command line is 65535 bytes (at most 4096)"),
        (short_path, "byte 11: the header ends inside its fixed part"),
    ]);
    for (path, want) in cases {
        for cmd in [
            &["replay", s(&path), "--no-time"][..],
            &["trace", "info", s(&path)],
            &["trace", "convert", s(&path), s(&scratch("out.trace"))],
        ] {
            let err = usage_error(cmd);
            assert!(
                err.contains(&format!("{}: byte", path.display())) || err.contains(s(&path)),
                "{cmd:?}: {err}"
            );
            assert!(err.contains(want), "{cmd:?}: want {want:?}, got {err}");
        }
        let bytes = std::fs::read(&path).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_zsmalloc"))
            .args(["replay", "-", "--no-time"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(&bytes).unwrap();
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.starts_with("zsmalloc: standard input: byte") && err.contains(want), "{err}");
        assert_eq!(err.lines().count(), 1);
    }
    // A zstd stream damaged in its middle: refused, one line.
    let zst = convert(&recorded("damaged.trace", &[]), "damaged.zst", &["--zstd"]);
    let mut bytes = std::fs::read(&zst).unwrap();
    let mid = bytes.len() / 2;
    for b in &mut bytes[mid..mid + 64] {
        *b ^= 0x5a;
    }
    let damaged = scratch("damaged2.zst");
    std::fs::write(&damaged, bytes).unwrap();
    assert!(usage_error(&["replay", s(&damaged), "--no-time"]).contains("byte"));
    // Not binary: /dev/zero fails the magic, and the text reader's line limit refuses it.
    assert!(usage_error(&["replay", "/dev/zero"])
        .contains("/dev/zero:1: the line is longer than 64 KiB"));
    assert!(
        usage_error(&["trace", "info", "/dev/zero"]).contains("/dev/zero:1: the line is longer")
    );
}

#[test]
fn trace_info_gives_the_figures_of_a_known_trace_in_either_form() {
    let text = every_kind();
    let bin = convert(&text, "info.bin", &[]);
    let zst = convert(&text, "info.zst", &["--zstd"]);
    for (p, form) in [(&text, "text"), (&bin, "binary"), (&zst, "binary")] {
        let v = common::json(&["trace", "info", s(p), "--format", "json"]);
        assert_eq!(v["format"], form);
        assert_eq!(v["zstd"], p == &zst);
        let ops = &v["operations"];
        assert_eq!(ops["total"], 11);
        for (kind, n) in [
            ("store", 3),
            ("free", 2),
            ("read", 1),
            ("compact", 1),
            ("malloc", 1),
            ("write", 1),
            ("read_sg", 1),
            ("move", 1),
        ] {
            assert_eq!(ops[kind], n, "{kind}");
        }
        // 0x7ffd1000, 5, 0x10, 0x20 and u64::MAX.
        assert_eq!(v["handles"], 5);
        // After the last store: 0x7ffd1000 (100), 0x20 (3000, moved from 0x10), u64::MAX (70000).
        assert_eq!(v["peak_live_objects"], 3);
        assert_eq!(v["peak_live_bytes"], 73100);
        let hist: Vec<(u64, u64, u64)> = v["lengths"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| {
                (
                    b["from"].as_u64().unwrap(),
                    b["to"].as_u64().unwrap(),
                    b["count"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(hist, vec![(0, 0, 1), (64, 127, 1), (2048, 4095, 1), (65536, 131071, 1)]);
    }
    let table = ok(&["trace", "info", s(&bin)]);
    assert!(table.contains("peak live bytes     73100"), "{table}");
    assert!(table.contains("2048-4095"), "{table}");
    // A recorded trace: its text and binary recordings have the same figures; its operations
    // are the text's lines.
    let rec = recorded("info-rec.bin", &["--trace-format", "binary"]);
    let rec_text = recorded("info-rec.trace", &[]);
    let v = common::json(&["trace", "info", s(&rec), "--format", "json"]);
    let t = common::json(&["trace", "info", s(&rec_text), "--format", "json"]);
    assert_eq!(v["page_size"], 4096);
    assert!(v["command"].as_str().unwrap().contains("--trace-format binary"));
    for key in ["operations", "handles", "peak_live_objects", "peak_live_bytes", "lengths"] {
        assert_eq!(v[key], t[key], "{key}");
    }
    let lines = std::fs::read_to_string(&rec_text).unwrap();
    let ops = lines.lines().filter(|l| !l.starts_with('#')).count();
    assert_eq!(v["operations"]["total"], ops);
    let peak = v["peak_live_objects"].as_u64().unwrap();
    assert!(peak > 2000 && peak <= 3000, "{peak}");
}

#[test]
fn trace_flags_are_refused_where_they_mean_nothing() {
    let text = every_kind();
    let err = usage_error(&[
        "trace",
        "convert",
        s(&text),
        s(&scratch("x.trace")),
        "--to",
        "text",
        "--zstd",
    ]);
    assert!(err.contains("--zstd"), "{err}");
    let err = usage_error(&["run", "dist", "--objects", "10", "--trace-format", "binary"]);
    assert!(err.contains("--trace-format"), "{err}");
    let err = usage_error(&["trace", "info", "/nonexistent/t.bin"]);
    assert!(err.contains("no such file or directory"), "{err}");
}

#[test]
fn a_binary_trace_over_the_budget_is_refused_naming_the_operation_where_the_plan_stopped() {
    // 2 million stores of 1000 bytes, ids 0, 1, 2, ...: far over a 256 MiB plan.
    let mut ops = Vec::with_capacity(8 << 20);
    for i in 0..2_000_000u32 {
        ops.extend_from_slice(&[1, if i == 0 { 0 } else { 2 }, 0xe8, 0x07]);
    }
    ops.push(0);
    let mut n = 2_000_000u64;
    while n >= 0x80 {
        ops.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    ops.push(n as u8);
    let path = hand_made("long.bin", 1, 0, &ops);
    for input in [s(&path), "-"] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_zsmalloc"));
        cmd.args(["replay", input, "--no-time", "--max-memory", "256M"]);
        let bytes = std::fs::read(&path).unwrap();
        let out = if input == "-" {
            let mut child = cmd
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            // The replay stops reading where the plan does: a broken pipe is expected.
            let _ = child.stdin.take().unwrap().write_all(&bytes);
            child.wait_with_output().unwrap()
        } else {
            cmd.output().unwrap()
        };
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains("by its operation") && err.contains("where the reading stopped"),
            "{err}"
        );
    }
    std::fs::remove_file(&path).unwrap();
}
