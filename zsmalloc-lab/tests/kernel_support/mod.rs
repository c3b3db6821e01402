//! What the kernel tests share: the reason to skip, the `zsmalloc` binary, one device-making
//! test at a time, and the check that no test leaves a device behind.

#![allow(dead_code)]

use std::io::Write;
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};

use zsmalloc_lab::kernel::host;

/// Tests that make devices run one at a time (so `/sys/block` before and after is theirs).
static DEVICES: Mutex<()> = Mutex::new(());

/// `Some(guard)` when the kernel commands can run here; otherwise prints why the test skips.
pub fn kernel_or_skip(test: &str) -> Option<MutexGuard<'static, ()>> {
    if let Some(why) = host::unavailable() {
        // Straight to the process's stderr: the test harness does not capture it, so the skip
        // shows in every run, not only with --nocapture.
        let _ = writeln!(std::io::stderr(), "SKIP {test}: {why}");
        return None;
    }
    Some(DEVICES.lock().unwrap_or_else(|p| p.into_inner()))
}

/// `ls /sys/block`.
pub fn block_devices() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/sys/block")
        .expect("read /sys/block")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

pub fn zsmalloc() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_zsmalloc"));
    c.env_remove("ZSMALLOC_CHAIN_SIZE");
    c
}

pub fn run(args: &[&str]) -> Output {
    zsmalloc().args(args).output().expect("run the zsmalloc binary")
}

/// Runs and expects success; returns stdout.
pub fn ok(args: &[&str]) -> String {
    let out = run(args);
    assert!(
        out.status.success(),
        "zsmalloc {args:?} failed ({:?}): {}{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

pub fn json(args: &[&str]) -> serde_json::Value {
    let text = ok(args);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("bad JSON from {args:?}: {e}\n{text}"))
}

/// Real pages: system files, at least tens of thousands of pages on any distribution.
pub const REAL: [&str; 2] = ["/usr/lib", "/usr/share"];

/// A scratch path for this test process.
pub fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("zsmalloc-kernel-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}
