//! The tier on memory the program protects itself: guard pages, read-only data and `PROT_NONE`
//! holes (zsmalloc-tier/tests/programs/tier_protect.c), reservations committed by `mprotect` and
//! by `mmap(MAP_FIXED)`, locked pages, a threaded Rust program (std gives each thread a signal
//! stack with a `PROT_NONE` guard), and, where installed, a JVM and node, whose heaps are
//! reserved `PROT_NONE` and committed later. Each runs under budgets of a quarter and a
//! sixteenth of its memory and reads every byte back. Needs root (or /dev/userfaultfd) and a C
//! compiler; rustc, java and node where their tests need them; each test skips with the reason
//! printed otherwise.

mod tier_support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use tier_support::{assert_ran, assert_tiered, figure, skip, tier, userfaultfd, Run};

const MIB: u64 = 1 << 20;

fn programs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../zsmalloc-tier/tests/programs")
}

/// `command` run to build a test program into the test's temporary directory: its path, or why
/// it cannot be built here (the tool is missing); a build that fails panics.
fn build(name: &str, command: &mut Command) -> Result<PathBuf, String> {
    userfaultfd()?;
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("tier_protect-{name}"));
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let tool = command.get_program().to_string_lossy().into_owned();
    let built = match command.current_dir(&out).output() {
        Ok(b) => b,
        Err(e) => return Err(format!("no {tool}: {e}")),
    };
    assert!(built.status.success(), "{tool}: {}", String::from_utf8_lossy(&built.stderr));
    Ok(out)
}

fn c_program(test: &str) -> Option<PathBuf> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let built = BUILT.get_or_init(|| {
        let src = programs_dir().join("tier_protect.c");
        build(
            "c",
            Command::new("cc")
                .args(["-O2", "-std=gnu11", "-Wall", "-Wextra", "-Werror"])
                .args(["-o", "tier_protect"])
                .arg(src),
        )
        .map(|d| d.join("tier_protect"))
    });
    built.as_ref().map_err(|why| skip(test, why)).ok().cloned()
}

/// `tier_protect COMMAND MIB` under `budget` and `policy`.
fn protect(test: &str, policy: &str, budget: u64, command: &str, mib: u64) -> Option<Run> {
    let p = c_program(test)?;
    let budget = budget.to_string();
    let mib = mib.to_string();
    let p = p.to_str().unwrap();
    Some(tier(&["--budget", &budget, "--policy", policy, "--", p, command, &mib]))
}

fn assert_ok(r: &Run, budget: u64, command: &str) {
    assert_tiered(r, budget, &[]);
    assert!(
        r.stdout.contains(&format!("ok {command}")),
        "stdout: {}\nstderr: {}",
        r.stdout,
        r.stderr
    );
}

#[test]
fn guard_pages_read_only_data_and_holes_read_back_under_a_quarter_and_a_sixteenth() {
    let test = "guard_pages_read_only_data_and_holes_read_back";
    for (policy, budget) in [("fifo", 4 * MIB), ("fifo", MIB), ("clock", MIB), ("lru", MIB)] {
        let Some(r) = protect(test, policy, budget, "guards", 16) else { return };
        assert_ok(&r, budget, "guards");
    }
}

#[test]
fn a_write_to_an_evicted_read_only_page_dies_by_sigsegv() {
    let Some(r) = protect("a_write_to_an_evicted_read_only_page", "fifo", MIB, "rowrite", 4) else {
        return;
    };
    assert_eq!(r.code, 128 + libc::SIGSEGV, "stdout: {}\nstderr: {}", r.stdout, r.stderr);
    assert!(r.stdout.contains("writing a read-only page"), "{}", r.stdout);
    assert!(!r.stdout.contains("did not fault"), "{}", r.stdout);
    assert_eq!(figure(&r, "exit_status"), 128 + libc::SIGSEGV as u64);
    let report = r.report.as_ref().expect("a report");
    assert_eq!(report["state"], "tiering", "the tier did not fail: {report}");
    assert!(figure(&r, "evictions") > 0 && figure(&r, "faults") > 0, "{report}");
}

#[test]
fn reservations_committed_by_mprotect_and_map_fixed_are_tiered() {
    let test = "reservations_committed_by_mprotect_and_map_fixed_are_tiered";
    for budget in [4 * MIB, MIB] {
        let Some(r) = protect(test, "fifo", budget, "reserve", 16) else { return };
        assert_ok(&r, budget, "reserve");
        // 32 MiB filled and read back twice through the budget.
        assert!(figure(&r, "evictions") >= 32 * MIB / 4096 - budget / 4096, "{:?}", r.report);
    }
}

#[test]
fn a_file_mapped_over_a_reservation_is_left_to_it_and_given_back() {
    let test = "a_file_mapped_over_a_reservation_is_left_to_it_and_given_back";
    for budget in [4 * MIB, MIB] {
        let Some(r) = protect(test, "fifo", budget, "filemap", 16) else { return };
        assert_ok(&r, budget, "filemap");
    }
}

#[test]
fn locked_pages_stay_resident_and_the_rest_is_evicted() {
    let Some(r) = protect("locked_pages_stay_resident", "fifo", MIB, "lock", 16) else { return };
    // The locked MiB is resident beside the budget, which it does not count.
    assert_ran(&r, MIB, &[]);
    assert!(r.stdout.contains("ok lock"), "stdout: {}\nstderr: {}", r.stdout, r.stderr);
    let peak = figure(&r, "peak_resident_bytes");
    assert!(peak <= 2 * MIB + tier_support::slack(MIB), "{:?}", r.report);
}

#[test]
fn a_threaded_rust_program_is_tiered() {
    let test = "a_threaded_rust_program_is_tiered";
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let built = BUILT.get_or_init(|| {
        let src = programs_dir().join("tier_threads.rs");
        let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
        build(
            "rust",
            Command::new(rustc).args(["-O", "--edition", "2021", "-o", "tier_threads"]).arg(src),
        )
        .map(|d| d.join("tier_threads"))
    });
    let p = match built {
        Ok(p) => p,
        Err(why) => return skip(test, why),
    };
    let untiered = Command::new(p).args(["4", "32"]).output().expect("run tier_threads");
    assert!(untiered.status.success());
    for budget in [8 * MIB, 2 * MIB] {
        let r = tier(&["--budget", &budget.to_string(), "--", p.to_str().unwrap(), "4", "32"]);
        assert_tiered(&r, budget, &[]);
        assert_eq!(r.stdout.as_bytes(), untiered.stdout, "stderr: {}", r.stderr);
    }
}

/// `program ARGS` untiered and under `budget`: the same output, and pages evicted.
fn same_output_tiered(program: &str, args: &[&str], budget: u64) {
    let untiered = Command::new(program).args(args).output().expect("run untiered");
    assert!(untiered.status.success(), "{}", String::from_utf8_lossy(&untiered.stderr));
    let budget_arg = budget.to_string();
    let r = tier(&[&["--budget", budget_arg.as_str(), "--", program], args].concat());
    assert_ran(&r, budget, &[]);
    assert_eq!(r.stdout, String::from_utf8_lossy(&untiered.stdout), "stderr: {}", r.stderr);
}

fn found(tool: &str) -> bool {
    Command::new(tool).arg("-version").output().is_ok()
        || Command::new(tool).arg("--version").output().is_ok()
}

#[test]
fn a_jvm_heap_reserved_and_committed_later_is_tiered() {
    let test = "a_jvm_heap_reserved_and_committed_later_is_tiered";
    if userfaultfd().map_err(|why| skip(test, &why)).is_err() {
        return;
    }
    if !found("java") || !found("javac") {
        return skip(test, "no java and javac here");
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("tier_protect-java");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("Fill.java"),
        "import java.util.HashMap;\npublic class Fill { public static void main(String[] a) {\n\
         int n = Integer.parseInt(a[0]); HashMap<Integer, String> m = new HashMap<>();\n\
         for (int i = 0; i < n; i++) m.put(i, \"value-\" + i);\n\
         long s = 0; for (int r = 0; r < 2; r++) for (int i = 0; i < n; i++) s += m.get(i).length();\n\
         System.out.println(m.size() + \" \" + s); } }\n",
    )
    .unwrap();
    let javac = Command::new("javac").arg("Fill.java").current_dir(&dir).output().unwrap();
    assert!(javac.status.success(), "{}", String::from_utf8_lossy(&javac.stderr));
    let cp = dir.to_str().unwrap();
    // The default heap (a quarter of the machine's memory): its class-data archive is mapped
    // with MAP_FIXED into a reservation.
    same_output_tiered("java", &["-cp", cp, "Fill", "300000"], 16 * MIB);
}

#[test]
fn a_node_heap_reserved_and_committed_later_is_tiered() {
    let test = "a_node_heap_reserved_and_committed_later_is_tiered";
    if userfaultfd().map_err(|why| skip(test, &why)).is_err() {
        return;
    }
    if !found("node") {
        return skip(test, "no node here");
    }
    let script = "const n = 300000, m = new Map();\n\
                  for (let i = 0; i < n; i++) m.set(i, 'value-' + i);\n\
                  let s = 0; for (let i = 0; i < n; i++) s += m.get(i).length;\n\
                  console.log(m.size, s);";
    same_output_tiered("node", &["-e", script], 16 * MIB);
}
