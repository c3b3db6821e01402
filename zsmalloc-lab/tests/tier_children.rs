//! `zsmalloc tier --follow-children` and `--user-faults-only` on real programs: a program a
//! shell executes and a child the C program (zsmalloc-tier/tests/programs/tier_check.c) forks,
//! each tiered under a line of its own in the report; the report's 256 blocks running out;
//! the C program as nobody under `--user-faults-only`, every byte read back, and the caveat:
//! a write(2) of an evicted page fails with EFAULT. They need root (or access to
//! /dev/userfaultfd; root to drop to nobody) and a C compiler, and skip with the reason printed
//! otherwise. Every run has a deadline, after which its process group is killed and the test
//! fails.

mod tier_support;

use serde_json::Value;
use tier_support::reachable::Reachable;
use tier_support::*;

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
    let slack = slack(4 << 20);
    assert!(child["peak_resident_bytes"].as_u64() <= Some((4 << 20) + slack), "{child}");
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

/// A thread that forks (its glibc TLS vector evicted before) has its pages brought back by the
/// handler, and the child is tiered on its own.
#[test]
fn a_child_forked_by_a_thread_is_tiered_with_follow_children() {
    let test = "a_child_forked_by_a_thread_is_tiered_with_follow_children";
    let Some(p) = program(test) else { return };
    let args = ["--budget", "4M", "--follow-children", "--", p.to_str().unwrap()];
    let r = tier(&[&args[..], &["threadfork", "32"]].concat());
    assert_ran(&r, 4 << 20, &["child", "parent"]);
    let procs = processes(&r);
    assert_eq!(procs.len(), 2, "{procs:?}");
    assert_eq!(procs[1]["state"], "tiering", "{procs:?}");
    assert!(procs[1]["evictions"].as_u64() > Some(0), "{procs:?}");
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

/// The uid the unprivileged runs drop to.
const NOBODY_UID: u32 = 65534;

/// The command, its library and the test program copied where `nobody` can reach them (a
/// checkout under a 0700 directory is out of its reach), or `None` and why, printed.
fn as_nobody(test: &str) -> Option<Reachable> {
    // SAFETY: getuid has no preconditions.
    if unsafe { libc::getuid() } != 0 {
        skip(test, "needs root, to run the tier as nobody");
        return None;
    }
    let p = program(test)?;
    match Reachable::copy_for(NOBODY_UID, p) {
        Ok(kit) => Some(kit),
        Err(why) => {
            skip(test, &format!("no copy nobody can run: {why}"));
            None
        }
    }
}

#[test]
fn user_faults_only_as_nobody_reads_every_byte_back() {
    let Some(kit) = as_nobody("user_faults_only_as_nobody_reads_every_byte_back") else { return };
    let p = kit.program.to_str().unwrap();
    let r = kit.tier(NOBODY_UID, &["--budget", "4M", "--", p, "fill", "16"]);
    assert_eq!((r.code, r.stderr.lines().count()), (2, 1), "{}", r.stderr);
    assert!(
        r.stderr.contains("needs root or access to /dev/userfaultfd, or --user-faults-only"),
        "{}",
        r.stderr
    );
    let args = ["--budget", "4M", "--user-faults-only", "--", p, "fill", "16"];
    let r = kit.tier(NOBODY_UID, &args);
    assert_tiered(&r, 4 << 20, &["first pass", "second pass"]);
    assert_eq!(r.report.as_ref().unwrap()["user_faults_only"], true);
    assert!(r.stderr.contains("fails with EFAULT"), "{}", r.stderr);
}

#[test]
fn a_system_call_on_an_evicted_page_fails_with_efault_under_user_faults_only() {
    let test = "a_system_call_on_an_evicted_page_fails_with_efault_under_user_faults_only";
    let Some(kit) = as_nobody(test) else { return };
    let p = kit.program.to_str().unwrap();
    let args = ["--budget", "4M", "--user-faults-only", "--", p, "syscalls", "16"];
    let r = kit.tier(NOBODY_UID, &args);
    // The documented caveat: the kernel's read of an evicted page fails; fresh memory (lent
    // as zero pages) and pages the program brought back take system calls as ever.
    assert_tiered(&r, 4 << 20, &["syscalls"]);
    for line in ["evicted write: EFAULT", "resident write: ok", "fresh read: ok"] {
        assert!(r.stdout.contains(line), "{line}: {}", r.stdout);
    }
    // With every fault taken (root) the same write waits for the page and succeeds.
    let r = tier(&["--budget", "4M", "--", p, "syscalls", "16"]);
    assert_tiered(&r, 4 << 20, &["syscalls"]);
    assert!(r.stdout.contains("evicted write: ok"), "{}", r.stdout);
    assert_eq!(r.report.as_ref().unwrap()["user_faults_only"], false);
}

#[test]
fn under_user_faults_only_executed_programs_follow_and_forked_children_do_not() {
    let test = "under_user_faults_only_executed_programs_follow_and_forked_children_do_not";
    let Some(kit) = as_nobody(test) else { return };
    let p = kit.program.to_str().unwrap();
    let flags = ["--budget", "4M", "--user-faults-only", "--follow-children", "--"];
    let r = kit.tier(NOBODY_UID, &[&flags[..], &[p, "fork", "8"]].concat());
    assert_ran(&r, 4 << 20, &["child", "child again", "parent", "parent again"]);
    assert_eq!(processes(&r).len(), 1, "the forked child untiered: {:?}", processes(&r));
    // A fork by a thread: the pages come back through the doorbell as for eviction.
    let r = kit.tier(NOBODY_UID, &[&flags[..], &[p, "threadfork", "16"]].concat());
    assert_ran(&r, 4 << 20, &["child", "parent"]);
    let script = format!("{p} fill 8; echo shell done");
    let r = kit.tier(NOBODY_UID, &[&flags[..], &["sh", "-c", &script]].concat());
    assert_ran(&r, 4 << 20, &["first pass", "second pass"]);
    let child = line_of(&processes(&r), "tier_check").clone();
    assert!(child["evictions"].as_u64() > Some(0), "{child}");
}
