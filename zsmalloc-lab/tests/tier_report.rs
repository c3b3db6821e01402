//! What `zsmalloc tier`'s report says of a run as a whole: its wall and CPU time with the
//! handler's share, the share of the program's peak RSS that was tiered, the tiered memory's
//! peak, the pool in bytes, and the plain lines: nothing evicted, little tiered, thrashing.
//! They need root (or access to /dev/userfaultfd) and a C compiler or python3, and skip with
//! the reason printed otherwise (tier_support).

mod tier_support;

use tier_support::*;

fn float(r: &Run, key: &str) -> f64 {
    let report = r.report.as_ref().unwrap_or_else(|| panic!("no report; stderr: {}", r.stderr));
    report[key].as_f64().unwrap_or_else(|| panic!("{key} in {report}"))
}

fn text(r: &Run, key: &str) -> String {
    let report = r.report.as_ref().unwrap_or_else(|| panic!("no report; stderr: {}", r.stderr));
    report[key].as_str().unwrap_or_else(|| panic!("{key} in {report}")).to_string()
}

/// 64 MiB read back twice under 4: everything evicted comes back twice, which the report calls
/// thrashing, naming a budget that would have held it all.
#[test]
fn a_run_far_over_its_budget_reports_its_times_share_and_thrashing() {
    let Some(p) = program("a_run_far_over_its_budget_reports_its_times_share_and_thrashing") else {
        return;
    };
    let r = tier(&["--budget", "4M", "--", p.to_str().unwrap(), "fill", "64"]);
    assert_tiered(&r, 4 << 20, &["first pass", "second pass"]);
    let report = r.report.as_ref().unwrap();
    let (user, system, handler) =
        (float(&r, "cpu_user_s"), float(&r, "cpu_system_s"), float(&r, "handler_cpu_s"));
    let elapsed = float(&r, "elapsed_s");
    assert!(elapsed > 0.0 && user + system > 0.0, "{report}");
    // The handler is a thread of the program: its time is part of the program's.
    assert!(handler > 0.0 && handler <= user + system + 0.01, "{report}");
    // Resident tiered pages and the pool are the program's pages: within its peak RSS, and
    // most of it (the rest its code, stacks, the tier's page table and buffers).
    let (rss, peak) = (figure(&r, "peak_rss_bytes"), figure(&r, "peak_resident_bytes"));
    let pool = figure(&r, "max_pool_bytes");
    assert!(rss >= peak + pool && peak > 0 && pool > 0, "{report}");
    let share = float(&r, "tiered_share");
    assert!((share - (peak + pool) as f64 / rss as f64).abs() < 0.001, "{report}");
    assert!(share > 0.5, "{report}");
    // The 64 MiB filled were all held at once, resident or evicted (the program's own
    // blocks besides).
    let held = figure(&r, "peak_held_bytes");
    assert!(((64 << 20)..(72 << 20)).contains(&held), "{report}");
    assert_eq!(figure(&r, "pool_bytes"), figure(&r, "pool_pages") * PAGE);
    assert_eq!(figure(&r, "max_pool_bytes"), figure(&r, "max_pool_pages") * PAGE);
    assert!(figure(&r, "max_pool_bytes") > 0);
    let thrash = text(&r, "thrash");
    assert!(thrash.contains("the budget (4.0 MiB) is far below the working set"), "{thrash}");
    let fits = format!("about fitted in a budget of {}.0 MiB", held.div_ceil(1 << 20));
    assert!(thrash.contains(&fits), "{fits}: {thrash}");
    assert_eq!(text(&r, "note"), "", "{report}");
    for line in ["  time ", "s wall; CPU ", "the tier's handler", "  share tiered ", "  thrashing "]
    {
        assert!(r.stderr.contains(line), "{line}: {}", r.stderr);
    }
    assert!(r.stderr.contains(&thrash), "{}", r.stderr);
    assert!(r.stderr.contains(" MiB) tiered at most") || r.stderr.contains("tiered at most"));
    let pool_line = r.stderr.lines().find(|l| l.starts_with("  pool ")).expect("pool line");
    assert!(pool_line.contains(" pages (") && pool_line.contains(" MiB), "), "{pool_line}");
}

/// A program that fits in its budget evicts nothing, and the report says so in a line;
/// nothing is said of thrashing.
#[test]
fn a_run_within_its_budget_says_nothing_was_evicted() {
    let Some(p) = program("a_run_within_its_budget_says_nothing_was_evicted") else { return };
    let r = tier(&["--budget", "64M", "--", p.to_str().unwrap(), "fill", "4"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(figure(&r, "evictions"), 0, "{:?}", r.report);
    let note = text(&r, "note");
    assert!(note.starts_with("nothing was evicted: the tiered memory peaked at "), "{note}");
    assert!(note.ends_with("within the budget (64.0 MiB)"), "{note}");
    assert_eq!(text(&r, "thrash"), "");
    assert!(r.stderr.contains(&format!("  note                  {note}")), "{}", r.stderr);
    assert!(!r.stderr.contains("thrashing"), "{}", r.stderr);
}

/// A program whose memory is mostly shared (not tiered) has little of its peak RSS tiered,
/// and the report says so.
#[test]
fn a_program_with_mostly_untiered_memory_is_said_to_have_little_tiered() {
    let test = "a_program_with_mostly_untiered_memory_is_said_to_have_little_tiered";
    if let Err(why) = userfaultfd() {
        return skip(test, &why);
    }
    let Some(python) = elf_python() else {
        return skip(test, "no python3 executable in /usr/bin or /usr/local/bin");
    };
    // 96 MiB of shared anonymous memory written (not tiered), and Python's own heap over a
    // budget of 1 MiB.
    let script = "import mmap\nm = mmap.mmap(-1, 96 << 20)\nchunk = b'x' * (1 << 20)\n\
                  for i in range(96): m[i << 20:(i + 1) << 20] = chunk\n\
                  x = [str(i) for i in range(100000)]\nprint(len(x), m[5])";
    let r = tier(&["--budget", "1M", "--", python, "-c", script]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "100000 120\n");
    assert!(figure(&r, "evictions") > 0, "{:?}", r.report);
    let share = float(&r, "tiered_share");
    assert!(share > 0.0 && share < 0.1, "{:?}", r.report);
    let note = text(&r, "note");
    assert!(note.starts_with("little was tiered: "), "{note}");
    assert!(note.contains("% of the program's peak RSS"), "{note}");
}

/// A stream written once and evicted, a few hot pages faulted back now and then: thousands of
/// faults, but few against the memory and the time, so no thrashing is reported.
#[test]
fn a_stream_evicted_once_is_not_thrashing() {
    let Some(p) = program("a_stream_evicted_once_is_not_thrashing") else { return };
    let r = tier(&["--budget", "4M", "--", p.to_str().unwrap(), "hotcold", "256", "256"]);
    assert_tiered(&r, 4 << 20, &["hotcold"]);
    let report = r.report.as_ref().unwrap();
    // 3,700 faults measured: above the floor of 1,000 under which nothing is called thrashing.
    assert!(figure(&r, "faults") >= 1000, "{report}");
    assert!(figure(&r, "decompressed_bytes") * 4 < figure(&r, "peak_held_bytes"), "{report}");
    assert_eq!(text(&r, "thrash"), "", "{report}");
    assert!(!r.stderr.contains("thrashing"), "{}", r.stderr);
}
