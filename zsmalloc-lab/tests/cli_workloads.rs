//! The `zsmalloc` command's workloads, run as a user runs them: dist and pages reproducible
//! and verified, traces recorded and replayed, a handwritten trace with every operation.

mod common;

use common::{json, ok, s, scratch};
use serde_json::Value;

#[test]
fn dist_is_reproducible_byte_for_byte() {
    let args = |seed: &str| {
        vec![
            "run",
            "--no-time",
            "--format",
            "json",
            "--seed",
            seed,
            "dist",
            "--objects",
            "6000",
            "--churn",
            "4000",
            "--compact-every",
            "1500",
            "--compact",
        ]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>()
    };
    let run = |seed: &str| {
        let a = args(seed);
        ok(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let (a, b, c) = (run("7"), run("7"), run("8"));
    assert_eq!(a, b, "same seed, same output");
    assert_ne!(a, c, "another seed, other figures");
    let v: Value = serde_json::from_str(&a).unwrap();
    assert_eq!(v["workload"]["name"], "dist");
    assert!(v["same_pages"].as_u64().unwrap() > 300, "about 11% same-filled pages skipped");
    assert!(v["objects"].as_u64().unwrap() + v["same_pages"].as_u64().unwrap() <= 6000);
    assert_eq!(v["reads"], v["objects"], "every live object read back");
    // Same-filled pages stored at 28 bytes instead (2012 zram).
    let stored = json(&[
        "run",
        "--no-time",
        "--format",
        "json",
        "dist",
        "--objects",
        "3000",
        "--same-filled",
        "store",
    ]);
    assert_eq!(stored["same_pages"], 0);
    assert_eq!(stored["objects"], 3000);
}

#[test]
fn pages_are_reproducible_and_verified() {
    for comp in ["lz4", "zstd"] {
        let args = [
            "run",
            "--no-time",
            "--format",
            "json",
            "pages",
            "--synthetic-pages",
            "3000",
            "--compressor",
            comp,
        ];
        let (a, b) = (ok(&args), ok(&args));
        assert_eq!(a, b, "{comp}: same seed, same output");
        let v: Value = serde_json::from_str(&a).unwrap();
        let c = &v["corpus"];
        assert_eq!(c["input_pages"], 3000);
        assert_eq!(
            c["same_filled_pages"].as_u64().unwrap()
                + c["incompressible_pages"].as_u64().unwrap()
                + c["compressed_pages"].as_u64().unwrap(),
            3000
        );
        assert!(c["incompressible_pages"].as_u64().unwrap() > 0, "random pages are stored raw");
        assert!(c["compression_ratio"].as_f64().unwrap() > 1.5);
        assert_eq!(v["reads"], v["objects"], "every stored page read back and verified");
    }
    // Real files: a directory of a text file, a zero file and a random-ish file.
    let dir = scratch("corpus");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("a.txt"), "zsmalloc stores compressed pages\n".repeat(700)).unwrap();
    std::fs::write(dir.join("sub/zero.bin"), vec![0u8; 3 * 4096]).unwrap();
    let noise: Vec<u8> =
        (0..5 * 4096u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    std::fs::write(dir.join("sub/noise.bin"), noise).unwrap();
    let v = json(&["run", "--format", "json", "pages", s(&dir), "--compressor", "zstd"]);
    let c = &v["corpus"];
    assert_eq!(c["input_pages"], 6 + 3 + 5);
    assert_eq!(c["same_filled_pages"], 3);
    assert_eq!(v["same_pages"], 3);
}

#[test]
fn a_recorded_trace_replays_to_identical_figures() {
    let trace = scratch("dist.trace");
    let recorded = json(&[
        "run",
        "--no-time",
        "--format",
        "json",
        "--record",
        s(&trace),
        "--chain-size",
        "6",
        "dist",
        "--objects",
        "5000",
        "--churn",
        "5000",
        "--compact-every",
        "2000",
        "--compact",
    ]);
    let text = std::fs::read_to_string(&trace).unwrap();
    assert!(text.lines().any(|l| l.starts_with("store ")));
    assert!(text.lines().any(|l| l.starts_with("free ")));
    assert!(text.lines().any(|l| l.starts_with("read ")));
    assert!(text.lines().any(|l| l == "compact"));
    let replayed =
        json(&["replay", s(&trace), "--no-time", "--format", "json", "--chain-size", "6"]);
    for k in [
        "objects",
        "bytes_stored",
        "pages",
        "pages_peak",
        "utilization_pct",
        "reads",
        "reads_spanning",
        "read_copy_bytes",
        "writes_spanning",
        "pages_compacted",
        "objs_moved",
        "stores",
        "frees",
    ] {
        assert_eq!(recorded[k], replayed[k], "{k}");
    }
    assert_eq!(replayed["op_errors"], 0);
    assert_eq!(replayed["workload"]["name"], "trace");
    // `run trace FILE` is the same as `replay FILE`.
    let again =
        json(&["run", "--no-time", "--format", "json", "--chain-size", "6", "trace", s(&trace)]);
    assert_eq!(again["pages"], replayed["pages"]);
}

#[test]
fn handwritten_trace_with_every_operation() {
    let trace = scratch("hand.trace");
    std::fs::write(
        &trace,
        "# a C shim writes handle addresses\n\
         store 0x7ffd0010 100\n\
         store 0x7ffd0018 4000\n\
         malloc 5 300\n\
         write 5 300\n\
         read 0x7ffd0010 100\n\
         read_sg 5 300\n\
         read 5 299\n\
         move 5 6\n\
         read 6 300\n\
         free 0x7ffd0018\n\
         free 0x7ffd0018\n\
         compact\n\
         store 9 0\n\
         \n",
    )
    .unwrap();
    let v = json(&["replay", s(&trace), "--format", "json"]);
    assert_eq!(v["objects"], 2);
    assert_eq!(v["bytes_stored"], 400);
    assert_eq!(v["reads"], 3);
    assert_eq!(v["op_errors"], 1, "the read of the wrong length is refused and counted");
    assert_eq!(v["store_failures"], 1, "a zero-length store is refused");
    assert_eq!(v["frees"], 1, "freeing an empty handle is a no-op");
}
