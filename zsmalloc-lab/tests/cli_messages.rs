//! What the refusals of flags and names say: the accepted range, clap's suggestion for a
//! misspelled flag, a sweep's syntax, the unit of a size, one wording per OS error, control
//! characters escaped; all one line with exit 2.

mod common;

use common::{s, scratch, usage_error};

#[test]
fn zero_and_out_of_range_values_are_refused_while_parsing() {
    for (args, needle) in [
        (&["folios", "--folio-sizes", "0"][..], "'0' for '--folio-sizes <LIST>'"),
        (&["folios", "--folio-sizes", "4K,0"], "0 is not a power of two from 4096 to 65536"),
        (
            &["inspect", "--watch", "0.1", "--count", "0"],
            "'0' for '--count <N>': a whole number from 1 up",
        ),
        (
            &["inspect", "--watch", "0.05"],
            "'0.05' for '--watch <SECONDS>': a number in 0.1..=86400",
        ),
        (&["inspect", "--watch", "NaN"], "a number in 0.1..=86400"),
        (&["run", "--repeat", "0"], "'0' for '--repeat <N>': a whole number in 1..=1000"),
        (&["run", "--timeline-every", "0", "--timeline", "t.csv"], "from 1 up"),
        (&["compare", "--jobs", "0"], "'0' for '--jobs <N>'"),
        (&["run", "kernel-test", "--step", "0"], "'0' for '--step <BYTES>'"),
        (&["run", "dist", "--same-share", "1.5"], "a number in 0..=1"),
        (&["cost", "--batch", "10"], "a whole number from 10000 up"),
        (&["optimize", "--export-table", "t", "--point", "0"], "'0' for '--point <K>'"),
        (&["kernel", "cost", "--rounds", "0"], "a whole number in 1..=100"),
        (&["run", "--seed", "-1"], "a whole number from 0 up"),
        (&["folios", "--level", "+3"], "a whole number in 1..=22"),
    ] {
        let err = usage_error(args);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn a_page_limit_folios_cannot_honour_is_a_refusal_of_the_flag() {
    let err = usage_error(&["folios", "--mem-limit-pages", "200"]);
    assert!(err.contains("--mem-limit-pages"), "{err}");
}

#[test]
fn a_misspelled_flag_gets_clap_s_suggestion_on_the_same_line() {
    let err = usage_error(&["run", "--chian-size", "10"]);
    assert!(err.contains("unexpected argument '--chian-size' found"), "{err}");
    assert!(err.contains("a similar argument exists: '--chain-size'"), "{err}");
}

#[test]
fn a_tier_budget_that_is_not_a_size_is_refused_in_one_line_naming_the_minimum() {
    let err = usage_error(&["tier", "--budget", "32Q", "--", "true"]);
    assert!(err.contains("'32Q' for '--budget <BYTES>'"), "{err}");
    assert!(err.contains("a size of at least 64K (64K, 32M, 1G) is accepted"), "{err}");
    assert!(!err.contains("18446744073709551615"), "no range that contradicts 64K: {err}");
    // A negative budget is a value of the flag, not the program after `--`.
    let err = usage_error(&["tier", "--budget", "-5M", "--", "true"]);
    assert!(err.contains("'-5M' for '--budget <BYTES>': a budget is not negative"), "{err}");
    assert!(!err.contains("-- -5"), "no advice to make -5 the program: {err}");
}

#[test]
fn a_sweep_s_values_are_refused_naming_the_syntax() {
    let err = usage_error(&["compare", "--sweep", "chain-size=4-16"]);
    assert!(err.contains("'4-16' is not a whole number"), "{err}");
    for form in ["chain-size=4..16", "chain-size=4..16:2", "chain-size=4,8,16"] {
        assert!(err.contains(form), "{form}: {err}");
    }
}

#[test]
fn a_memory_size_without_a_unit_below_a_mebibyte_is_refused_naming_the_units() {
    let err = usage_error(&["run", "--max-memory", "6", "dist"]);
    assert!(err.contains("'6' for '--max-memory <BYTES>'") && err.contains("6G"), "{err}");
    // With a unit it is meant, and the plan above it is refused in that unit.
    let err = usage_error(&["run", "--max-memory", "6M", "dist"]);
    assert!(err.contains("more than --max-memory 6 MiB (6291456 B)"), "{err}");
    let err = usage_error(&["run", "--max-memory", "512K", "dist"]);
    assert!(err.contains("--max-memory 512 KiB"), "{err}");
}

#[test]
fn an_os_error_has_one_wording_everywhere() {
    let dir = scratch("a-directory");
    std::fs::create_dir_all(&dir).unwrap();
    let file = scratch("a-file");
    std::fs::write(&file, "x").unwrap();
    let under_file = file.join("x");
    let is_dir = format!("'{}': is a directory", s(&dir));
    for args in [
        vec!["run", "--plot", s(&dir), "kernel-test", "-n", "1"],
        vec!["run", "--timeline", s(&dir), "kernel-test", "-n", "1"],
        vec!["replay", s(&dir)],
        vec!["run", "trace", s(&dir)],
    ] {
        let err = usage_error(&args);
        assert!(err.contains(&is_dir), "{args:?}: {err}");
        assert!(!err.contains("os error") && !err.contains("Is a"), "{args:?}: {err}");
    }
    let args = ["folios", "--trace-dir", s(&under_file), "--synthetic-pages", "64"];
    let err = usage_error(&args);
    assert!(err.ends_with(&format!("'{}': not a directory\n", s(&under_file))), "{err}");
}

#[test]
fn control_characters_of_values_and_names_are_escaped() {
    for (args, shown) in [
        (&["compare", "--config", "chain-size=\u{1b}[2J"][..], "'\\u{1b}[2J'"),
        (&["run", "--seed", "1\n2"], "'1\\n2'"),
        (&["run", "--bogus\tflag"], "'--bogus\\tflag'"),
        (&["inspect", "--snapshot", "zram\u{7}"], "'zram\\u{7}'"),
        (&["optimize", "--objective", "x\u{1b}"], "'x\\u{1b}'"),
        (&["folios", "--folio-sizes", "4K,\u{1b}"], "'\\u{1b}'"),
        (&["run", "--plot", "/nonexistent/\u{1}.svg", "kernel-test"], "/nonexistent/\\u{1}.svg"),
    ] {
        let err = usage_error(args);
        assert!(err.contains(shown), "{args:?}: {err}");
        assert!(!err.trim_end().chars().any(char::is_control), "{args:?}: {err:?}");
    }
}

#[test]
fn zram_names_are_read_strictly() {
    for name in ["zramzram1", "+1", "00", "zram01", "/dev/zram00", "zram", "1x"] {
        let err = usage_error(&["inspect", "--snapshot", name]);
        assert!(err.contains("zramN, /dev/zramN or N"), "{name}: {err}");
    }
}

#[test]
fn a_multi_page_size_is_refused_naming_the_limit_hit() {
    let err = usage_error(&["classes", "--multi-page", "128K", "--page-size", "16K"]);
    assert!(err.contains("invalid multi-page: 131072 is above 65536 bytes"), "{err}");
    assert!(err.contains("with 16384-byte pages: 0 (off), 32768 or 65536"), "{err}");
    assert!(!err.contains("262144"), "{err}");
}
