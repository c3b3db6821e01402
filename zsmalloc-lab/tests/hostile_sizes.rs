//! Sizes a user can type that no machine holds: every command plans its memory from its
//! arguments and refuses with exit 2 and one line, before it allocates — also under a 4 GiB
//! address-space limit (`ulimit -v`), where an allocation that was not planned would abort.

use std::os::unix::process::CommandExt;
use std::process::Command;

/// The address-space limit the commands run under.
const LIMIT_BYTES: u64 = 4 << 30;

/// Resident memory a refusal may take at most.
const MAX_RSS_BYTES: u64 = 300 << 20;

/// Runs `zsmalloc args` under [`LIMIT_BYTES`] of address space; returns its exit code and
/// standard error.
fn limited(args: &[&str]) -> (Option<i32>, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zsmalloc"));
    cmd.args(args).env_remove("ZSMALLOC_CHAIN_SIZE");
    // SAFETY: the closure runs in the child between fork and exec and only calls setrlimit,
    // which is async-signal-safe, on a value on its stack.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit { rlim_cur: LIMIT_BYTES, rlim_max: LIMIT_BYTES };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().expect("run the zsmalloc binary");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The largest resident set of the children waited for so far, in bytes.
fn children_max_rss() -> u64 {
    // SAFETY: getrusage writes one rusage through a pointer to a zeroed local.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; RUSAGE_CHILDREN is a valid `who`.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    usage.ru_maxrss as u64 * 1024
}

#[test]
fn absurd_sizes_are_refused_in_one_line_before_anything_is_allocated() {
    // (arguments, what the line must name)
    let cases: &[(&[&str], &str)] = &[
        (
            &[
                "cost",
                "--pool-mib",
                "1000000",
                "--repeat",
                "1",
                "--compressor",
                "lz4",
                "--modes",
                "copy",
            ],
            "--pool-mib",
        ),
        (&["cost", "--pool-mib", "100000000"], "--pool-mib"),
        (&["cost", "--pool-mib", "0"], "'0' for '--pool-mib <MIB>': a whole number from 1 up"),
        (&["cost", "--synthetic-pages", "99999999999"], "--synthetic-pages"),
        (&["cost", "--synthetic-pages", "2000000", "--repeat", "1"], "--synthetic-pages"),
        (&["run", "dist", "--objects", "200000000"], "--objects 200000000"),
        (&["run", "dist", "--objects", "10000000"], "--objects 10000000"),
        (&["run", "kernel-test", "-n", "100000"], "-n 100000"),
        (&["run", "pages", "--synthetic-pages", "100000000"], "--synthetic-pages"),
        (&["compare", "dist", "--objects", "200000000"], "--objects"),
        (&["compare", "--no-time", "--jobs", "8", "dist", "--objects", "4000000"], "runs at once"),
        (&["optimize", "dist", "--objects", "200000000"], "--objects"),
        (&["run", "--max-memory", "64M", "kernel-test"], "--max-memory 64 MiB"),
        (&["kernel", "check", "--synthetic-pages", "2000000"], "--synthetic-pages"),
        (
            &["kernel", "capture", "--synthetic-pages", "2000000", "-o", "/dev/null"],
            "--synthetic-pages",
        ),
        (&["run", "dist", "--objects", "-1"], "'-1' for '--objects <N>': a whole number in 1.."),
    ];
    for (args, needle) in cases {
        let (code, err) = limited(args);
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        // Without root the kernel commands stop at their first check, which is a refusal too.
        let needle = if args[0] == "kernel" && !root { "root" } else { needle };
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: one line: {err}");
        assert!(err.contains(needle), "{args:?}: names {needle}: {err}");
    }
    let rss = children_max_rss();
    assert!(rss < MAX_RSS_BYTES, "a refusal took {rss} B of resident memory");
}

#[test]
fn an_empty_trace_is_refused_as_no_input() {
    let path = std::env::temp_dir().join(format!("zsmalloc-empty-{}.trace", std::process::id()));
    std::fs::write(&path, "# zsmalloc trace v1\n").unwrap();
    for sub in [&["replay"][..], &["run", "trace"][..]] {
        let mut args = sub.to_vec();
        args.push(path.to_str().unwrap());
        let (code, err) = limited(&args);
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains("no input") && err.trim().lines().count() == 1, "{err}");
    }
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn an_empty_size_range_is_refused_with_the_range_named() {
    let (code, err) = limited(&["classes", "--min-size", "100", "--max-size", "50"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--min-size 100") && err.contains("--max-size 50"), "{err}");
    let (code, err) = limited(&["classes", "--min-size", "5000"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("no logical size"), "{err}");
}

#[test]
fn zblocks_table_is_not_exported_as_a_class_table() {
    let path = std::env::temp_dir().join(format!("zsmalloc-zb-{}.table", std::process::id()));
    let (code, err) =
        limited(&["classes", "--backend", "zblock", "--export", path.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--export") && err.trim().lines().count() == 1, "{err}");
    assert!(!path.exists());
}
