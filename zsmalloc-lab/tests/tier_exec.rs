//! `zsmalloc tier` follows the exec of the process it started: a launcher script that executes
//! Python, `env python3`, `sh -c 'exec ...'` are tiered in the program they execute, while a
//! program run in a child process is not (without `--follow-children`); a static program
//! reached by exec is named as run untiered; a trace recorded is the final program's. They
//! need root (or access to /dev/userfaultfd) and a C compiler or python3, and skip with the
//! reason printed otherwise (tier_support).

mod tier_support;

use std::process::Command;

use tier_support::*;

/// A list of 300,000 strings built and summed: some 30 MiB of Python objects.
const SCRIPT: &str =
    "x = [str(i) * 7 for i in range(300000)]\nprint(len(x), sum(map(len, x)), x[123456])";

/// The ELF python3 and what it prints untiered, where the tier can run here.
fn python(test: &str) -> Option<(&'static str, String)> {
    if let Err(why) = userfaultfd() {
        skip(test, &why);
        return None;
    }
    let Some(python) = elf_python() else {
        skip(test, "no python3 executable in /usr/bin or /usr/local/bin");
        return None;
    };
    let plain = Command::new(python).args(["-c", SCRIPT]).output().expect("python3");
    assert!(plain.status.success());
    Some((python, String::from_utf8_lossy(&plain.stdout).into_owned()))
}

/// Python ran tiered in the process the command started, after `execs` programs before it:
/// its output as untiered, pages evicted and faulted back, the state "tiering".
fn assert_python_tiered(r: &Run, plain: &str, execs: u64) {
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, plain);
    let report = r.report.as_ref().expect("a report");
    assert_eq!(report["state"], "tiering", "{report}");
    assert_eq!(report["untiered_program"], "", "{report}");
    assert!(figure(r, "evictions") > 0 && figure(r, "faults") > 0, "{report}");
    assert_eq!(figure(r, "execs"), execs, "{report}");
    assert!(r.stderr.contains("executed in the same process, tiered"), "{}", r.stderr);
}

#[test]
fn a_launcher_script_that_executes_python_is_tiered_in_python() {
    let test = "a_launcher_script_that_executes_python_is_tiered_in_python";
    let Some((python, plain)) = python(test) else { return };
    // As pyenv's shim: a shell script that executes the interpreter.
    let launcher = tempfile("python-launcher");
    std::fs::write(&launcher, format!("#!/bin/sh\nexec {python} \"$@\"\n")).expect("launcher");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&launcher, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let r = tier(&["--budget", "2M", "--", launcher.to_str().unwrap(), "-c", SCRIPT]);
    let _ = std::fs::remove_file(&launcher);
    assert_python_tiered(&r, &plain, 1);
}

#[test]
fn env_and_sh_exec_are_tiered_in_the_program_they_execute() {
    let test = "env_and_sh_exec_are_tiered_in_the_program_they_execute";
    let Some((python, plain)) = python(test) else { return };
    let r = tier(&["--budget", "2M", "--", "env", python, "-c", SCRIPT]);
    assert_python_tiered(&r, &plain, 1);
    let line = format!("exec {python} -c '{SCRIPT}'");
    let r = tier(&["--budget", "2M", "--", "sh", "-c", &line]);
    assert_python_tiered(&r, &plain, 1);
}

/// A program a shell runs in a child process is not the started process: without
/// `--follow-children` it runs untiered, strips the tier from its environment (so its own
/// children run untiered too), and the report says so.
#[test]
fn a_program_run_in_a_child_process_is_untiered_and_named_in_the_note() {
    let test = "a_program_run_in_a_child_process_is_untiered_and_named_in_the_note";
    let Some((python, plain)) = python(test) else { return };
    // `; true`: the shell forks for python rather than executing it.
    let line = format!("{python} -c '{SCRIPT}'; true");
    let r = tier(&["--budget", "2M", "--", "sh", "-c", &line]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, plain);
    let report = r.report.as_ref().expect("a report");
    assert_eq!(figure(&r, "evictions"), 0, "python untiered: {report}");
    assert_eq!(figure(&r, "child_programs"), 1, "{report}");
    let note = report["note"].as_str().unwrap();
    assert!(note.starts_with("nothing was evicted"), "{note}");
    assert!(note.contains("1 program in a child process, untiered (--follow-children"), "{note}");
    assert!(r.stderr.contains(note), "{}", r.stderr);

    // The child's environment: no library, no variable of the tier; the started process's
    // (a program it executes) keeps both and the token naming it.
    let r = tier(&["--budget", "2M", "--", "sh", "-c", "env; echo ---; exec env"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let (child, executed) = r.stdout.split_once("---\n").expect("both lists");
    assert!(child.contains("PATH=") && executed.contains("PATH="), "{}", r.stdout);
    assert!(!child.contains("ZSMALLOC_TIER_"), "{child}");
    assert!(!child.contains("libzsmalloc_tier_preload"), "{child}");
    assert!(executed.contains("ZSMALLOC_TIER_BUDGET=512\n"), "{executed}");
    assert!(executed.contains("ZSMALLOC_TIER_PROCESS="), "{executed}");
    assert!(executed.contains("libzsmalloc_tier_preload"), "{executed}");
}

#[test]
fn a_static_program_reached_by_exec_is_named_as_untiered() {
    let test = "a_static_program_reached_by_exec_is_named_as_untiered";
    let Some(p) = static_program(test) else { return };
    let line = format!("exec {} fill 4", p.display());
    let r = tier(&["--budget", "1M", "--", "sh", "-c", &line]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("second pass: ok"), "{}", r.stdout);
    let report = r.report.as_ref().expect("a report");
    // The kernel's name of the program: its file's, cut to 15 bytes.
    assert_eq!(report["untiered_program"], "tier_check_stat", "{report}");
    assert_eq!(report["state"], "untiered after exec", "{report}");
    assert_eq!(
        report["message"],
        "tier_check_stat ran untiered from its exec on (static, setuid or setgid, or its \
         environment cleared)"
    );
    assert!(r.stderr.contains("(untiered after an exec)"), "{}", r.stderr);
    assert!(!r.stderr.contains("tiered to the end"), "{}", r.stderr);
    // The same program executed with its environment cleared is named the same way; a
    // dynamic one executed with the tier's environment is tiered.
    let Some(dynamic) = program(test) else { return };
    let line = format!("exec env -i {} fill 4", dynamic.display());
    let r = tier(&["--budget", "1M", "--", "sh", "-c", &line]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.report.as_ref().unwrap()["untiered_program"], "tier_check", "{:?}", r.report);
    let line = format!("exec {} fill 8", dynamic.display());
    let r = tier(&["--budget", "1M", "--", "sh", "-c", &line]);
    assert_tiered(&r, 1 << 20, &["first pass", "second pass"]);
    assert_eq!(figure(&r, "execs"), 1, "{:?}", r.report);
}

/// The trace is the final program's: the program executed opens it anew, and it replays to
/// the pool pages the report gives.
#[test]
fn a_recorded_trace_is_the_executed_programs() {
    let Some(p) = program("a_recorded_trace_is_the_executed_programs") else { return };
    let trace = tempfile("exec.trace");
    let t = trace.to_str().unwrap();
    let line = format!("exec {} fill 16", p.display());
    let r = tier(&["--budget", "4M", "--record", t, "--", "sh", "-c", &line]);
    assert_tiered(&r, 4 << 20, &["first pass", "second pass"]);
    let text = std::fs::read_to_string(&trace).expect("the trace");
    let workload = text.lines().find(|l| l.starts_with("# workload:")).expect("a header");
    assert!(workload.ends_with("tier_check fill 16"), "{workload}");
    assert_eq!(text.matches("# workload:").count(), 1, "one header: {workload}");
    assert_replays(&r, &trace);
}
