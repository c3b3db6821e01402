//! Generated command lines: every command and workload of `zsmalloc` with flags read from its
//! own clap definition and generated values (zeros, negatives, huge numbers, garbage, unit
//! suffixes, control characters). Each run ends in success or a refusal with exit 2 and one
//! line, control characters escaped; never a panic (101), another failure, or a signal.
//!
//! Two properties, both bounded in time:
//! - random command lines (1 to 3 flags): a command that runs a workload gets `--max-memory
//!   1M`, below any plan, so it stops right after its checks and its memory plan;
//!   ZSMALLOC_CLI_CASES sets the number of cases (default 256, a few seconds), and
//!   ZSMALLOC_CLI_BOUND=small runs them for real on the small workloads below;
//! - every flag of every command alone, set to 0, -1 and 2^64, on a small workload under
//!   `--max-memory 64M` that runs for real in milliseconds (`cost`, whose smallest run takes
//!   seconds, stops at its plan): a zero that passes the checks and divides later is found.
//!
//! Inputs are paths that do not exist or a one-line trace (`corpus record` gets a program its
//! list lacks, so it stops at its checks); `inspect --snapshot` only gets names
//! that are no device, and `inspect --watch` may be stopped at the deadline (it reports until
//! --count or Ctrl-C). Every run happens in a scratch directory, where any file a generated
//! flag names lands.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

/// A command and workload as the user types them (`run dist`), with its flags.
#[derive(Debug, Clone)]
struct Leaf {
    path: Vec<String>,
    /// `--name` (or `-n` for a flag with no long name) and whether it takes a value.
    flags: Vec<(String, bool)>,
    /// Inputs: positional paths and a required output.
    inputs: Vec<String>,
    /// Flags of a small real run, each left out when a generated flag has its name.
    small: Vec<(&'static str, &'static str)>,
    /// The command plans its memory before it runs anything (`--max-memory` bounds it).
    planned: bool,
    /// A run may go on past the deadline by design (`inspect --watch`).
    may_outlive: bool,
}

/// Commands that plan their memory before they run anything.
const PLANNED: [&str; 6] = ["run", "compare", "replay", "optimize", "cost", "folios"];

fn leaves(trace: &Path) -> Vec<Leaf> {
    let mut root = zsmalloc_lab::cli::command();
    root.build();
    let mut out = Vec::new();
    walk(&root, &mut Vec::new(), trace, &mut out);
    out
}

fn walk(cmd: &clap::Command, path: &mut Vec<String>, trace: &Path, out: &mut Vec<Leaf>) {
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        path.push(sub.get_name().to_string());
        // A command whose subcommand is optional (`run`: its workload) runs alone too.
        if !sub.is_subcommand_required_set() {
            out.push(leaf(sub, path, trace));
        }
        walk(sub, path, trace, out);
        path.pop();
    }
}

fn leaf(cmd: &clap::Command, path: &[String], trace: &Path) -> Leaf {
    let planned = PLANNED.contains(&path[0].as_str());
    let flags = cmd
        .get_arguments()
        .filter(|a| !a.is_positional() && !a.is_hide_set())
        .filter(|a| !["help", "version"].contains(&a.get_id().as_str()))
        .filter_map(|a| {
            let name = match (a.get_long(), a.get_short()) {
                (Some(l), _) => format!("--{l}"),
                (None, Some(s)) => format!("-{s}"),
                (None, None) => return None,
            };
            Some((name, a.get_action().takes_values()))
        })
        // The bound of the planned commands is the test's to keep.
        .filter(|(name, _)| !(planned && name == "--max-memory"))
        .collect();
    let trace = trace.to_str().unwrap().to_string();
    let name = path.join(" ");
    let inputs: Vec<String> = match name.as_str() {
        "replay" => vec![trace],
        p if p.ends_with(" trace") => vec![trace],
        "kernel check" | "kernel cost" => vec!["/nonexistent/corpus".into()],
        "kernel capture" => vec!["/nonexistent/corpus".into(), "-o".into(), "out.trace".into()],
        "kernel import" => vec!["/nonexistent/input".into(), "-o".into(), "out.trace".into()],
        // A program the list lacks: refused after every flag's check, before anything runs (a
        // whole recording takes minutes).
        "corpus record" => vec!["--only".into(), "no-such-program".into()],
        _ => Vec::new(),
    };
    let mut small: Vec<(&str, &str)> = match path.last().map(String::as_str) {
        Some("kernel-test") => vec![("--lo", "32"), ("--hi", "256"), ("--count", "2")],
        Some("dist") => vec![("--objects", "200")],
        Some("pages") => vec![("--synthetic-pages", "16")],
        _ => Vec::new(),
    };
    if name == "folios" {
        small.extend([
            ("--synthetic-pages", "16"),
            ("--folio-sizes", "4K,16K"),
            ("--compressor", "lz4"),
            ("--repeat", "1"),
            ("--sample-mib", "1"),
        ]);
    }
    if planned {
        small.push(("--max-memory", if name == "cost" { "1M" } else { "64M" }));
    }
    Leaf { path: path.to_vec(), flags, inputs, small, planned, may_outlive: path[0] == "inspect" }
}

/// Values a user might give any flag.
fn value() -> impl Strategy<Value = String> {
    let chosen = [
        "0",
        "-0",
        "1",
        "-1",
        "+1",
        "00",
        "2",
        "8",
        "16",
        "1000",
        "4096",
        "10000",
        "65536",
        "18446744073709551615",
        "18446744073709551616",
        "99999999999999999999999",
        "-9223372036854775808",
        "0.1",
        "0.05",
        "1.5",
        "-0.5",
        "1e308",
        "nan",
        "inf",
        "-inf",
        "4K",
        "16K",
        "64K",
        "128K",
        "1G",
        "6",
        "16b",
        "K",
        "lots",
        "",
        " ",
        "on",
        "auto",
        "json",
        "heuristic",
        "chain-size=4..16",
        "4-16",
        "4..16:2",
        "4,8,16",
        "0,4K",
        "zstd",
        "\u{1b}[2J",
        "a\nb",
        "\t",
        "zram0x",
    ];
    prop_oneof![
        prop::sample::select(chosen.to_vec()).prop_map(String::from),
        any::<u64>().prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        (any::<u16>(), prop::sample::select(vec!["K", "M", "G", "KiB", "b", "k"]))
            .prop_map(|(n, u)| format!("{n}{u}")),
        any::<f64>().prop_map(|v| v.to_string()),
        "[ -~]{0,12}",
    ]
}

/// Names for `--snapshot`: none is a device (zram0 least of all), each is refused.
fn device_name() -> impl Strategy<Value = String> {
    let names = ["zramzram1", "+1", "00", "zram01", "/dev/zram+1", "zram4000000000", "", "\u{7}"];
    prop::sample::select(names.to_vec()).prop_map(String::from)
}

/// How a run is kept short.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Bound {
    /// `--max-memory 1M`: the planned commands stop at their plan.
    Plan,
    /// The leaf's small run.
    Small,
}

/// The command line of `leaf` with `flags` (name, value) under `bound`.
fn command_line(leaf: &Leaf, flags: &[(String, Option<String>)], bound: Bound) -> Vec<String> {
    let mut args = leaf.path.clone();
    args.extend(leaf.inputs.iter().cloned());
    let kept: Vec<(&str, &str)> = match bound {
        Bound::Plan if leaf.planned => vec![("--max-memory", "1M")],
        Bound::Plan => Vec::new(),
        Bound::Small => leaf.small.clone(),
    };
    for (f, v) in kept {
        if !flags.iter().any(|(name, _)| name == f) {
            args.extend([f.to_string(), v.to_string()]);
        }
    }
    for (name, value) in flags {
        args.push(name.clone());
        args.extend(value.iter().cloned());
    }
    args
}

/// The generated flags of a random case.
fn picked(leaf: &Leaf, picks: &[(Index, String, String)]) -> Vec<(String, Option<String>)> {
    if leaf.flags.is_empty() {
        return Vec::new();
    }
    let one = |(which, v, device): &(Index, String, String)| {
        let (name, takes_value) = &leaf.flags[which.index(leaf.flags.len())];
        let value = match (*takes_value, name.as_str()) {
            (false, _) => None,
            (true, "--snapshot") => Some(device.clone()),
            (true, _) => Some(v.clone()),
        };
        (name.clone(), value)
    };
    picks.iter().map(one).collect()
}

/// What a run left: its exit status and its stderr (stdout is not kept).
struct Outcome {
    status: std::process::ExitStatus,
    stderr: Vec<u8>,
}

/// Runs the binary on `args` in `dir`; `None` when it was still running at `deadline` (then
/// it is killed). Stderr is read while it runs, so a full pipe never stalls it.
fn run(args: &[String], dir: &Path, deadline: Duration) -> Option<Outcome> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_zsmalloc"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the zsmalloc binary");
    let mut pipe = child.stderr.take().expect("the child's stderr");
    let reader = std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = std::io::Read::read_to_end(&mut pipe, &mut text);
        text
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the child") {
            break status;
        }
        if start.elapsed() > deadline {
            child.kill().expect("stop the child");
            child.wait().expect("reap the child");
            return None;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    Some(Outcome { status, stderr: reader.join().expect("stderr read") })
}

/// Why the outcome of `args` breaks the property, if it does.
fn judge(leaf: &Leaf, args: &[String], dir: &Path) -> Option<String> {
    let deadline = Duration::from_secs(if leaf.may_outlive { 3 } else { 30 });
    let Some(out) = run(args, dir, deadline) else {
        return (!leaf.may_outlive).then(|| format!("{args:?}: still running after {deadline:?}"));
    };
    let err = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        Some(0) => None,
        // Help on a bare command group (`kernel`) is clap's usage text, not a refusal.
        Some(2) if err.contains("Usage:") => None,
        // The refusal is the last line, and the only one that is not a warning or an
        // announcement (`cost` prints its memory plan before refusing it).
        Some(2) => {
            let lines: Vec<&str> = err.lines().collect();
            let refusal =
                |l: &str| l.starts_with("zsmalloc: ") && !l.starts_with("zsmalloc: warning");
            let refusals = lines.iter().filter(|l| refusal(l)).count();
            let one = refusals == 1 && lines.last().is_some_and(|l| refusal(l));
            let escaped = !lines.iter().any(|l| l.chars().any(char::is_control));
            (!(one && escaped)).then(|| format!("{args:?}: not one clean refusal: {err:?}"))
        }
        code => Some(format!("{args:?}: exit {code:?} (None: a signal): {err}")),
    }
}

fn setup() -> (PathBuf, Vec<Leaf>) {
    let dir = common::scratch("properties");
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("one.trace");
    std::fs::write(&trace, "store 1 10\n").unwrap();
    let leaves = leaves(&trace);
    let names: Vec<String> = leaves.iter().map(|l| l.path.join(" ")).collect();
    for must in ["run dist", "compare", "folios", "inspect", "kernel import", "optimize pages"] {
        assert!(names.iter().any(|n| n == must), "{must} not among {names:?}");
    }
    (dir, leaves)
}

#[test]
fn generated_flags_end_in_success_or_a_one_line_refusal() {
    let (dir, leaves) = setup();
    let cases = std::env::var("ZSMALLOC_CLI_CASES").ok().and_then(|c| c.parse().ok());
    let config =
        Config { cases: cases.unwrap_or(256), failure_persistence: None, ..Config::default() };
    // ZSMALLOC_CLI_BOUND=small: the random lines run for real too, on the small workloads.
    let small = std::env::var("ZSMALLOC_CLI_BOUND").is_ok_and(|b| b == "small");
    let bound = if small { Bound::Small } else { Bound::Plan };
    let picks = prop::collection::vec((any::<Index>(), value(), device_name()), 1..=3);
    let strategy = (0..leaves.len(), picks);
    let mut runner = TestRunner::new(config);
    let result = runner.run(&strategy, |(i, picks)| {
        let leaf = &leaves[i];
        let args = command_line(leaf, &picked(leaf, &picks), bound);
        match judge(leaf, &args, &dir) {
            None => Ok(()),
            Some(why) => Err(TestCaseError::fail(why)),
        }
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

#[test]
fn every_flag_at_zero_minus_one_and_two_to_the_64_on_a_small_run() {
    let (dir, leaves) = setup();
    let mut cases = Vec::new();
    for leaf in &leaves {
        for (name, _) in leaf.flags.iter().filter(|(_, takes_value)| *takes_value) {
            for v in ["0", "-1", "18446744073709551616"] {
                let v = if name == "--snapshot" { "00" } else { v };
                let flag = [(name.clone(), Some(v.to_string()))];
                cases.push((leaf, command_line(leaf, &flag, Bound::Small)));
            }
        }
    }
    // Two at a time: the machine has other work.
    let (a, b) = cases.split_at(cases.len() / 2);
    let failures: Vec<String> = std::thread::scope(|scope| {
        let dir = &dir;
        let workers: Vec<_> = [a, b]
            .into_iter()
            .map(|half| {
                scope.spawn(move || {
                    half.iter()
                        .filter_map(|(leaf, args)| judge(leaf, args, dir))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().unwrap()).collect()
    });
    let n = cases.len();
    assert!(failures.is_empty(), "{} of {n} runs:\n{}", failures.len(), failures.join("\n"));
}
