//! What the kernel tests share: the reason to skip, the `zsmalloc` binary, one device-making
//! test at a time, and the check that a run left none of *its* devices behind.
//!
//! A run's devices are known by their records (`/run/zsmalloc-lab`), which name the process
//! that made each device: [`run`] watches the records while its `zsmalloc` runs, and checks
//! afterwards that every device it saw is gone and that no record of that process is left.
//! Other devices on the machine (zram0, another program's, another test run's) are never looked
//! at, so the tests hold on a machine where others use zram too.

#![allow(dead_code)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use zsmalloc_lab::kernel::device::record::{Record, RECORD_DIR};
use zsmalloc_lab::kernel::device::{diskseq, sweep};
use zsmalloc_lab::kernel::host;

/// Tests that make devices run one at a time (each fills a device with up to tens of thousands
/// of pages: two at once could run short of memory on a small machine).
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

/// A device a run made, as its record names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Made {
    pub id: u32,
    pub diskseq: u64,
}

impl Made {
    /// Whether the device is still there (its id names the same disk).
    pub fn exists(&self) -> bool {
        diskseq(self.id) == Some(self.diskseq)
    }
}

/// The files under the record directory that belong to process `pid`: its records, and copies
/// it holds (`zram<id>.<pid>-<start>.<tag>`), with what they record.
pub fn records_of(pid: u32) -> Vec<(PathBuf, Record)> {
    let Ok(dir) = std::fs::read_dir(RECORD_DIR) else { return Vec::new() };
    let held = |name: &str| {
        let holder = name.split('.').nth(1)?;
        holder.split('-').next()?.parse::<u32>().ok()
    };
    dir.filter_map(|e| {
        let path = e.ok()?.path();
        let name = path.file_name()?.to_str()?.to_string();
        if !name.starts_with("zram") {
            return None;
        }
        let rec = Record::parse(&std::fs::read_to_string(&path).ok()?)?;
        (rec.pid == pid || held(&name) == Some(pid)).then_some((path, rec))
    })
    .collect()
}

/// The devices process `pid` has recorded.
pub fn made_by(pid: u32) -> Vec<Made> {
    records_of(pid)
        .into_iter()
        .filter(|(_, r)| r.pid == pid)
        .map(|(_, r)| Made { id: r.id, diskseq: r.diskseq })
        .collect()
}

/// Panics unless every device of `made` is gone and no record of process `pid` is left.
pub fn assert_left_nothing(pid: u32, made: &[Made], what: &str) {
    for m in made {
        assert!(!m.exists(), "{what}: zram{} was left behind", m.id);
    }
    let left = records_of(pid);
    assert!(left.is_empty(), "{what}: records left behind: {left:?}");
}

/// Removes, on drop (a test's end, passing or failing), what a test caused: its child processes
/// are killed, then the devices it knows of are removed through the lab's sweep — only those,
/// and only while they are still the recorded devices — with their records.
#[derive(Default)]
pub struct Cleanup {
    pub children: Vec<Child>,
    pub made: Vec<Made>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        let ids: Vec<u32> = self.made.iter().map(|m| m.id).collect();
        for (rec, outcome) in sweep::sweep_ids(&ids) {
            eprintln!("cleanup: zram{} of process {}: {outcome:?}", rec.id, rec.pid);
        }
    }
}

pub fn zsmalloc() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_zsmalloc"));
    c.env_remove("ZSMALLOC_CHAIN_SIZE");
    c
}

/// Runs `zsmalloc args`, watching the records it writes, and checks it left none of its devices
/// behind (whatever its exit).
pub fn run(args: &[&str]) -> Output {
    let child = zsmalloc()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the zsmalloc binary");
    let pid = child.id();
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let mut seen: Vec<Made> = Vec::new();
            loop {
                let finished = done.load(Ordering::SeqCst);
                for m in made_by(pid) {
                    if !seen.contains(&m) {
                        seen.push(m);
                    }
                }
                if finished {
                    return seen;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    let out = child.wait_with_output().expect("wait for the zsmalloc binary");
    done.store(true, Ordering::SeqCst);
    let made = watcher.join().expect("the record watcher");
    assert_left_nothing(pid, &made, &format!("zsmalloc {args:?}"));
    out
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

fn scratch_dir() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("zsmalloc-kernel-{}", std::process::id()))
}

/// A scratch path for this test process; its directory goes when the process exits, whether
/// the tests passed or not (the harness exits through `exit`, which runs `atexit`).
pub fn scratch(name: &str) -> std::path::PathBuf {
    static REMOVE_AT_EXIT: std::sync::Once = std::sync::Once::new();
    extern "C" fn remove_scratch() {
        let _ = std::fs::remove_dir_all(scratch_dir());
    }
    REMOVE_AT_EXIT.call_once(|| {
        // SAFETY: registers a function that takes nothing and unwinds nothing (errors ignored).
        unsafe { libc::atexit(remove_scratch) };
    });
    let dir = scratch_dir();
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}
