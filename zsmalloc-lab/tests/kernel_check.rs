//! `zsmalloc kernel check` and `capture` against the running kernel: the project's pool agrees
//! with the kernel's after every write, discard and the compaction, with two of the kernel's
//! compressors on real pages; a capture replays to the kernel's pages; refusals are one line
//! with exit 2. Skipped, with the reason printed, without root or zram control. Every run is
//! checked to leave none of its devices behind (`kernel_support::run`).

mod kernel_support;

use std::os::unix::process::CommandExt;

use kernel_support::*;

/// Two compressors this kernel's zram offers (lzo-rle is zram's default, lz4 the common other).
fn two_compressors() -> Vec<String> {
    let wanted = ["lz4", "lzo-rle", "lzo", "zstd"];
    // Asked of a device of our own: an unknown name is refused with the list.
    let out = run(&["kernel", "check", "--compressor", "none-such", "--synthetic-pages", "1"]);
    assert_eq!(out.status.code(), Some(2));
    let msg = String::from_utf8_lossy(&out.stderr);
    let list = msg.split("offers ").nth(1).and_then(|s| s.split(';').next()).unwrap_or("");
    let offered: Vec<&str> = list.split(", ").map(str::trim).collect();
    wanted.iter().filter(|w| offered.contains(w)).take(2).map(|s| s.to_string()).collect()
}

#[test]
fn check_agrees_at_every_step_with_two_compressors_on_real_pages() {
    let Some(_g) = kernel_or_skip("check_agrees_at_every_step_with_two_compressors") else {
        return;
    };
    let algs = two_compressors();
    assert_eq!(algs.len(), 2, "the kernel offers two of lz4, lzo-rle, lzo, zstd");
    for (alg, seed) in algs.iter().zip(["3", "11"]) {
        let mut args = vec!["kernel", "check"];
        args.extend(REAL);
        args.extend(["--max-pages", "20000", "--compressor", alg, "--seed", seed]);
        args.extend(["--free-share", "0.4", "--format", "json"]);
        let r = json(&args);
        assert_eq!(r["agree"], true, "{alg}: {r:#}");
        assert!(r["first_disagreement"].is_null());
        assert_eq!(r["kernel"]["compressor"], alg.as_str());
        assert_eq!(r["kernel"]["page_size"], host_page());
        assert!(r["kernel"]["release"].as_str().is_some_and(|s| !s.is_empty()));
        let phases = r["phases"].as_array().unwrap();
        let names: Vec<&str> = phases.iter().map(|p| p["phase"].as_str().unwrap()).collect();
        assert_eq!(names, ["fill", "free", "compact"]);
        for p in phases {
            assert_eq!(p["steps"], p["agreeing"], "{alg}: {p}");
            assert_eq!(p["kernel_pages"], p["project_pages"], "{alg}: {p}");
        }
        assert_eq!(phases[0]["steps"], 20000, "{alg}: 20000 real pages written");
        assert_eq!(phases[1]["steps"], 8000);
        let stored = &r["stored"];
        assert!(stored["compressed"].as_u64().unwrap() > 10000, "{alg}: {stored}");
        eprintln!(
            "{alg}: fill {} pages, free {}, compact {} (pages_compacted {})",
            phases[0]["kernel_pages"],
            phases[1]["kernel_pages"],
            phases[2]["kernel_pages"],
            phases[2]["pages_compacted"]
        );
    }
}

fn host_page() -> u64 {
    zsmalloc_lab::kernel::host::page_size() as u64
}

#[test]
fn a_capture_replays_to_the_kernels_pages() {
    let Some(_g) = kernel_or_skip("a_capture_replays_to_the_kernels_pages") else { return };
    let trace = scratch("kernel.trace");
    let t = trace.to_str().unwrap();
    let mut args = vec!["kernel", "capture"];
    args.extend(REAL);
    args.extend(["--max-pages", "8000", "--compressor", "lz4", "-o", t, "--format", "json"]);
    let cap = json(&args);
    let kernel_pages = cap["kernel_pages_after_fill"].as_u64().unwrap();
    assert!(kernel_pages > 0);
    let page = host_page().to_string();
    let line = ok(&["replay", t, "--page-size", &page, "--chain-size", "8", "--format", "mm_stat"]);
    let mem_used: u64 = line.split_whitespace().nth(2).unwrap().parse().unwrap();
    assert_eq!(mem_used / host_page(), kernel_pages, "replayed pool pages = the kernel's");
    let huge: u64 = line.split_whitespace().nth(7).unwrap().parse().unwrap();
    assert_eq!(huge, cap["stored"]["huge"].as_u64().unwrap(), "huge pages as the kernel's");
    // With discards and the compaction: the end pages too.
    let cap = json(&[
        "kernel",
        "capture",
        "--synthetic-pages",
        "3000",
        "--free-share",
        "0.5",
        "-o",
        t,
        "--format",
        "json",
    ]);
    let line = ok(&["replay", t, "--page-size", &page, "--format", "mm_stat"]);
    let mem_used: u64 = line.split_whitespace().nth(2).unwrap().parse().unwrap();
    assert_eq!(mem_used / host_page(), cap["kernel_pages_at_end"].as_u64().unwrap());
    let _ = std::fs::remove_file(&trace);
}

#[test]
fn refusals_are_one_line_with_exit_2() {
    let Some(_g) = kernel_or_skip("refusals_are_one_line_with_exit_2") else { return };
    let one_line = |args: &[&str], needle: &str| {
        let out = run(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    };
    one_line(&["kernel", "check", "--compressor", "none-such", "--synthetic-pages", "4"], "offers");
    one_line(&["kernel", "check", "--max-pages", "0"], "a whole number from 1 up");
    one_line(&["kernel", "check", "--chain-size", "17", "--synthetic-pages", "4"], "chain");
    one_line(&["kernel", "check", "--format", "csv"], "--format");
    one_line(&["kernel", "check", "--synthetic-pages", "4", "--free-share", "2"], "free-share");
    one_line(&["kernel", "check", "--synthetic-pages", "200000000"], "available");
    one_line(&["kernel", "check", "/nonexistent/corpus"], "no such file");
    // Not root: refused before anything is made (run as nobody, from a copy it can reach).
    match staged_for_nobody() {
        Ok((dir, bin)) => {
            let out = std::process::Command::new(&bin)
                .args(["kernel", "check", "--synthetic-pages", "4"])
                .env_remove("ZSMALLOC_CHAIN_SIZE")
                .current_dir("/")
                .uid(NOBODY)
                .gid(NOBODY)
                .output()
                .unwrap();
            std::fs::remove_dir_all(dir).unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{err}");
            assert!(err.contains("need root") && err.trim().lines().count() == 1, "{err}");
        }
        Err(why) => eprintln!("SKIP the not-root refusal: {why}"),
    }
}

/// The uid and gid of `nobody`.
const NOBODY: u32 = 65534;

/// A copy of the `zsmalloc` binary that `nobody` can run: the build's own may sit under a
/// directory only root can enter (a checkout in `/root` or in a `0700` `mktemp -d`). Returns
/// the copy's directory (to remove) and path, or why there is none.
fn staged_for_nobody() -> Result<(std::path::PathBuf, std::path::PathBuf), String> {
    use std::os::unix::fs::PermissionsExt;
    let base = std::path::Path::new("/tmp");
    // Every directory from the root down must let others search it.
    for dir in base.ancestors() {
        let mode = std::fs::metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        if mode.permissions().mode() & 0o001 == 0 {
            return Err(format!("{} is not searchable by others", dir.display()));
        }
    }
    let dir = base.join(format!("zsmalloc-nobody-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let bin = dir.join("zsmalloc");
    let staged = std::fs::copy(env!("CARGO_BIN_EXE_zsmalloc"), &bin)
        .and_then(|_| std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)))
        .and_then(|_| std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)));
    match staged {
        Ok(()) => Ok((dir, bin)),
        Err(e) => {
            let _ = std::fs::remove_dir_all(&dir);
            Err(format!("cannot stage the binary in {}: {e}", dir.display()))
        }
    }
}
