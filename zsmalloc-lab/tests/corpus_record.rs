//! `zsmalloc corpus record`: a small corpus recorded from a program list file (the tier's test
//! program twice, one with an input made by `zsmalloc corpus input`, and a program this machine
//! lacks), its manifest checked against the files (sizes, SHA-256, operations as `trace info`
//! counts them, budgets against the RSS). Needs root, userfaultfd and a C compiler; skips with
//! the reason printed otherwise. The list's refusals need none of them.

mod tier_support;

use std::ffi::OsStr;
use std::path::Path;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use tier_support::*;

fn sha256(path: &Path) -> String {
    let bytes = std::fs::read(path).expect("read the trace");
    Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect()
}

fn run(args: &[&str]) -> (i32, String, String) {
    let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    zsmalloc(&args)
}

#[test]
fn a_small_corpus_matches_its_manifest() {
    let test = "a_small_corpus_matches_its_manifest";
    let Some(check) = program(test) else { return };
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        skip(test, "corpus record needs root");
        return;
    }
    let check = check.to_str().unwrap();
    let list = tempfile("programs.json");
    let programs = json!([
        {"name": "fill", "what": "24 MiB written and read back twice", "argv": [check, "fill", "24"]},
        {"name": "hotcold", "input": "zsmalloc corpus input text --size 64K -o t.txt && test -s t.txt",
         "argv": [check, "hotcold", "256", "24"]},
        {"name": "absent", "argv": ["zsmalloc-corpus-test-no-such-program"]},
    ]);
    std::fs::write(&list, programs.to_string()).unwrap();
    // The corpus named relative to the current directory, as a user would (the runs happen
    // in directories of their own).
    let dir = tempfile("corpus");
    let (parent, name) = (dir.parent().unwrap(), dir.file_name().unwrap());
    let args: [&OsStr; 6] = [
        "corpus".as_ref(),
        "record".as_ref(),
        "--programs".as_ref(),
        list.as_ref(),
        "-o".as_ref(),
        name,
    ];
    let exe = Path::new(env!("CARGO_BIN_EXE_zsmalloc"));
    let (code, stdout, stderr) = zsmalloc_from(exe, Some(parent), None, &args, |_| {});
    assert_eq!(code, 0, "stdout: {stdout}\nstderr: {stderr}");
    // A line per program on stderr; the one missing is skipped, and said to be.
    assert_eq!(stderr.lines().filter(|l| l.starts_with("corpus record: [")).count(), 3, "{stderr}");
    assert!(stdout.contains("skipped absent: not on this machine"), "{stdout}");

    let m: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap())
            .expect("the manifest is JSON");
    assert_eq!(m["format"], "zsmalloc-corpus");
    assert_eq!(m["version"], 1);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    assert_eq!(m["machine"]["kernel"], kernel.trim());
    assert!(m["machine"]["cores"].as_u64().unwrap() >= 1);
    let traces = m["traces"].as_array().unwrap();
    let names: Vec<&str> = traces.iter().map(|t| t["program"].as_str().unwrap()).collect();
    assert_eq!(names, ["fill", "hotcold"], "{m}");
    for t in traces {
        let file = dir.join(t["file"].as_str().unwrap());
        let len = std::fs::metadata(&file).expect("the trace is there").len();
        assert_eq!(t["trace_bytes"].as_u64(), Some(len), "{t}");
        assert_eq!(t["sha256"].as_str(), Some(sha256(&file).as_str()), "{t}");
        let (code, info, err) = run(&["trace", "info", file.to_str().unwrap(), "--format", "json"]);
        assert_eq!(code, 0, "{err}");
        let info: Value = serde_json::from_str(&info).unwrap();
        assert_eq!(info["format"], "binary");
        assert_eq!(info["zstd"], true);
        assert_eq!(info["operations"]["total"], t["ops"], "{t}");
        assert!(info["operations"]["store"].as_u64().unwrap() > 0, "{info}");
        // The budget is a third of the untiered peak, a page multiple.
        let (rss, budget) = (t["rss_bytes"].as_u64().unwrap(), t["budget_bytes"].as_u64().unwrap());
        assert!(rss > 24 << 20, "{t}");
        assert_eq!(budget, rss / 3 / PAGE * PAGE, "{t}");
        assert_eq!(t["budget_share"], "1/3");
        assert_eq!(
            (t["folio_size"].as_u64(), t["pool_page_size"].as_u64()),
            (Some(4096), Some(4096))
        );
        assert_eq!((t["policy"].as_str(), t["compressor"].as_str()), (Some("fifo"), Some("lz4")));
        assert_eq!(t["exit_status"], 0);
        assert!(t["faults"].as_u64().unwrap() > 0, "{t}");
        assert_eq!(t["argv"][0].as_str(), Some(check));
    }
    assert_eq!(traces[1]["input"], programs[1]["input"]);
    // Nothing but the traces and the manifest: the runs' directories are gone.
    let mut left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["fill-1of3-4K.trace", "hotcold-1of3-4K.trace", "manifest.json"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_list_or_flag_is_refused_in_one_line() {
    let bad = tempfile("bad.json");
    let dir = tempfile("never");
    let d = dir.to_str().unwrap();
    for (text, says) in [
        ("{", "not a program list"),
        ("[]", "the list names no program"),
        (r#"[{"name": "a b", "argv": ["true"]}]"#, "is not letters"),
        (r#"[{"name": "a", "argv": []}]"#, "argv names no command"),
        (r#"[{"name": "a", "argv": ["true"], "nice": 1}]"#, "unknown field"),
        (r#"[{"name": "a", "argv": ["true"]}, {"name": "a", "argv": ["true"]}]"#, "named twice"),
    ] {
        std::fs::write(&bad, text).unwrap();
        let (code, _, err) =
            run(&["corpus", "record", "--programs", bad.to_str().unwrap(), "-o", d]);
        assert_eq!((code, err.lines().count()), (2, 1), "{text}: {err}");
        assert!(err.contains(says), "{text}: {err}");
    }
    for (args, says) in [
        (&["--budgets", "3/2"][..], "a share is N/M"),
        (&["--folio-sizes", "8K"], "4K, 16K or 64K"),
        (&["--page-sizes", "3K"], "power of two"),
        (&["--only", "nonesuch"], "no program \"nonesuch\""),
        (&["--compressor", "gzip"], "--compressor"),
    ] {
        let all = [&["corpus", "record", "-o", d][..], args].concat();
        let (code, _, err) = run(&all);
        assert_eq!((code, err.lines().count()), (2, 1), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    assert!(!dir.exists(), "a refusal makes no directory");
}
