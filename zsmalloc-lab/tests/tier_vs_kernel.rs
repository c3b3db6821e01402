//! `zsmalloc tier --vs-kernel`: the program run a second time under the kernel's zram swap, side
//! by side with the tier's run, and nothing of it left afterwards — no swap of its device in
//! /proc/swaps, no zram device it made, no memory cgroup — whether the run ends, or is sent
//! SIGTERM or SIGINT in the middle of the kernel run (its process group, or the command alone);
//! what a SIGKILL leaves is removed by the next start.
//!
//! These swap on a zram device, which is machine-wide while they run: they run only with
//! `ZSMALLOC_TEST_SWAPON=1` (never set by `make test`), as root, with zram and userfaultfd, and
//! skip with the reason printed otherwise. The refusal without root needs no swap and always
//! runs (as `nobody`, from a copy it can reach, when the tests run as root).

mod tier_support;

use std::collections::BTreeSet;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tier_support::*;

/// One test at a time makes a device and a swap: each compares the machine before and after.
static MACHINE: Mutex<()> = Mutex::new(());

const PROGRAM: &str = "import time; l = [str(i) * 4 for i in range(10**6)]; time.sleep(2); \
                       print(len(l))";

/// Why the swapon tests cannot run here, or `None`.
fn unavailable() -> Option<String> {
    if std::env::var("ZSMALLOC_TEST_SWAPON").as_deref() != Ok("1") {
        return Some(
            "set ZSMALLOC_TEST_SWAPON=1 to run it (it swaps on a zram device, machine-wide, \
             while it runs; root, zram and a memory cgroup needed)"
                .into(),
        );
    }
    if let Some(why) = zsmalloc_lab::kernel::host::unavailable() {
        return Some(why);
    }
    if let Err(why) = userfaultfd() {
        return Some(why);
    }
    elf_python().is_none().then(|| "no python3 ELF binary".into())
}

/// What the command may leave behind: zram devices, swaps, memory cgroups of its name.
#[derive(Debug, PartialEq, Eq)]
struct Machine {
    zram: BTreeSet<String>,
    swaps: BTreeSet<String>,
    cgroups: BTreeSet<String>,
}

fn names(dir: &str, prefix: &str) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(prefix))
                .collect()
        })
        .unwrap_or_default()
}

fn swaps() -> BTreeSet<String> {
    std::fs::read_to_string("/proc/swaps")
        .unwrap_or_default()
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .collect()
}

fn machine() -> Machine {
    let mut cgroups = names("/sys/fs/cgroup", "zsmalloc-vs-kernel-");
    cgroups.extend(names("/sys/fs/cgroup/memory", "zsmalloc-vs-kernel-"));
    Machine { zram: names("/sys/block", "zram"), swaps: swaps(), cgroups }
}

fn args(report: &std::path::Path) -> Vec<String> {
    let python = elf_python().expect("checked");
    [
        "tier",
        "--budget",
        "16M",
        "--vs-kernel",
        "--yes",
        "--report",
        &report.display().to_string(),
        "--",
        python,
        "-c",
        PROGRAM,
    ]
    .map(String::from)
    .to_vec()
}

#[test]
fn both_runs_side_by_side_and_nothing_left() {
    let test = "both_runs_side_by_side_and_nothing_left";
    if let Some(why) = unavailable() {
        return skip(test, &why);
    }
    let _one = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let before = machine();
    let report = tempfile("vs-kernel.json");
    let args = args(&report);
    let (code, _, stderr) = zsmalloc(&args.iter().map(AsRef::as_ref).collect::<Vec<_>>());
    assert_eq!(machine(), before, "left behind; stderr: {stderr}");
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("is machine-wide while the kernel run lasts"), "{stderr}");
    let row = stderr.lines().find(|l| l.trim_start().starts_with("pool at the peak"));
    let row = row.unwrap_or_else(|| panic!("no side-by-side rows: {stderr}"));
    assert!(row.contains("mem_used_max"), "{row}");
    for heading in
        ["wall", "cpu (user+sys)", "faults / swap-ins", "evictions / swap-outs", "killed"]
    {
        assert!(stderr.lines().any(|l| l.trim_start().starts_with(heading)), "{heading}: {stderr}");
    }
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).expect("report")).expect("JSON");
    let k = &v["kernel"];
    assert_eq!(k["exit_status"], 0, "{k}");
    assert!(k["swap_outs"].as_u64().unwrap() > 0, "the kernel run swapped nothing: {k}");
    assert!(k["mem_used_max"].as_u64().unwrap() > 0, "{k}");
    assert!(k["elapsed_s"].as_f64().unwrap() > 0.0, "{k}");
    assert_eq!(k["budget_bytes"], v["budget_bytes"]);
    assert_eq!(
        k["memory_limit_bytes"].as_u64().unwrap(),
        k["budget_bytes"].as_u64().unwrap() + k["untiered_bytes"].as_u64().unwrap()
    );
    assert!(v["evictions"].as_u64().unwrap() > 0);
    let _ = std::fs::remove_file(&report);
}

/// `sig` once the kernel run's swap is on: to the command's process group, or to the command
/// alone (whose handler then ends the program itself). A SIGKILL leaves the swap, the device
/// and the cgroup; the next `--vs-kernel` start removes them, first of all (`--yes`: the
/// pressure the killed run caused may still show in /proc/pressure/memory). With SIGTERM to the
/// group, a second run started first, while the swap is on, refuses without `--yes`.
fn terminated_mid_run(test: &str, group: bool, sig: libc::c_int) {
    if let Some(why) = unavailable() {
        return skip(test, &why);
    }
    let _one = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let before = machine();
    let report = tempfile("vs-kernel-term.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_zsmalloc"))
        .args(args(&report))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("run zsmalloc");
    let pid = child.id() as i32;
    let t0 = Instant::now();
    let mut sent = false;
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if !sent && swaps().difference(&before.swaps).next().is_some() {
            if sig == libc::SIGTERM && group {
                // A second run, without --yes, refuses a machine that swaps, and leaves the
                // running one's swap, device and cgroup alone.
                let during = machine();
                let args = ["tier", "--budget", "16M", "--vs-kernel", "--", "/bin/true"];
                let (code, _, err) = zsmalloc(&args.map(AsRef::as_ref));
                assert_eq!(code, 2, "{err}");
                assert_eq!(err.lines().count(), 1, "{err}");
                assert!(err.contains("the machine already swaps (/dev/zram"), "{err}");
                assert_eq!(machine(), during, "{err}");
            }
            std::thread::sleep(Duration::from_millis(500));
            // SAFETY: kill(2) of the command (or its group, which it leads), a child of this
            // test, not yet reaped.
            unsafe { libc::kill(if group { -pid } else { pid }, sig) };
            sent = true;
        }
        if t0.elapsed() > DEADLINE {
            // SAFETY: as above.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            let _ = child.wait();
            panic!("zsmalloc did not end within {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let stderr = std::io::read_to_string(child.stderr.take().unwrap()).unwrap_or_default();
    assert!(sent, "the kernel run's swap never appeared: {status:?} {stderr}");
    assert_eq!(status.signal(), Some(sig), "{status:?}: {stderr}");
    assert!(!report.exists(), "an interrupted run writes no report");
    if sig == libc::SIGKILL {
        assert_ne!(machine(), before, "a SIGKILL leaves the swap: nothing to check");
        let args = ["tier", "--budget", "16M", "--vs-kernel", "--yes", "--", "/bin/true"];
        let (code, _, err) = zsmalloc(&args.map(AsRef::as_ref));
        assert_eq!(code, 0, "{err}");
        assert!(err.contains("took off the swap on /dev/zram"), "{err}");
        assert!(err.contains("left by an ended run"), "{err}");
    }
    assert_eq!(machine(), before, "left behind after signal {sig}; stderr: {stderr}");
}

#[test]
fn sigterm_to_the_group_mid_run_leaves_nothing() {
    terminated_mid_run("sigterm_to_the_group_mid_run_leaves_nothing", true, libc::SIGTERM);
}

#[test]
fn sigkill_leftovers_removed_by_the_next_run() {
    terminated_mid_run("sigkill_leftovers_removed_by_the_next_run", true, libc::SIGKILL);
}

#[test]
fn sigint_to_the_command_mid_run_leaves_nothing() {
    terminated_mid_run("sigint_to_the_command_mid_run_leaves_nothing", false, libc::SIGINT);
}

#[test]
fn sigterm_to_the_command_mid_run_leaves_nothing() {
    terminated_mid_run("sigterm_to_the_command_mid_run_leaves_nothing", false, libc::SIGTERM);
}

/// Without root: one line, exit 2, before anything runs.
#[test]
fn refused_without_root() {
    let test = "refused_without_root";
    let args = ["--budget", "16M", "--vs-kernel", "--yes", "--", "/bin/true"];
    // SAFETY: geteuid has no preconditions.
    let r = if unsafe { libc::geteuid() } == 0 {
        let kit = match reachable::Reachable::copy_for(65534, std::path::Path::new("/bin/true")) {
            Ok(k) => k,
            Err(why) => return skip(test, &why),
        };
        kit.tier(65534, &args)
    } else {
        tier(&args)
    };
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("--vs-kernel needs root"), "{}", r.stderr);
    assert!(r.report.is_none());
}
