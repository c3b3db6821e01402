//! A run's device goes away however the run ends: SIGINT removes it at once; after a SIGKILL
//! (which nothing can catch) the next start finds the record under /run, checks the device is
//! the one the dead process made, and removes it. Skipped, with the reason printed, without
//! root or zram control.

mod kernel_support;

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use kernel_support::*;
use zsmalloc_lab::kernel::device::record::{Record, RECORD_DIR};
use zsmalloc_lab::kernel::device::{Device, DeviceSpec};

/// Starts a long check (a large built-in corpus) and waits until it is writing to its device;
/// returns the child and the device id.
// The child is waited for on the timeout path here, and by the caller otherwise.
#[allow(clippy::zombie_processes)]
fn start_long_fill() -> (Child, u32) {
    let mut child = zsmalloc()
        .args(["kernel", "check", "--synthetic-pages", "50000", "--compressor", "lz4"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let start = Instant::now();
    loop {
        if start.elapsed() > Duration::from_secs(60) {
            // SIGINT: the run removes whatever device it made.
            signal(&child, libc::SIGINT);
            let _ = child.wait();
            panic!("the run never started its fill");
        }
        let rec = std::fs::read_dir(RECORD_DIR).ok().into_iter().flatten().find_map(|e| {
            let r = Record::parse(&std::fs::read_to_string(e.ok()?.path()).ok()?)?;
            (r.pid == pid).then_some(r)
        });
        if let Some(r) = rec {
            let mm = std::fs::read_to_string(format!("/sys/block/zram{}/mm_stat", r.id))
                .unwrap_or_default();
            let orig: u64 = mm.split_whitespace().next().and_then(|s| s.parse().ok()).unwrap_or(0);
            if orig > 0 {
                return (child, r.id);
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn exists(id: u32) -> bool {
    Path::new(&format!("/sys/block/zram{id}")).exists()
}

fn record(id: u32) -> PathBuf {
    Path::new(RECORD_DIR).join(format!("zram{id}"))
}

fn signal(child: &Child, sig: libc::c_int) {
    // SAFETY: kill has no memory-safety preconditions; the pid is our own child's, not reaped.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, sig) }, 0);
}

#[test]
fn sigkill_mid_fill_leaves_a_device_the_next_start_removes() {
    let Some(_g) = kernel_or_skip("sigkill_mid_fill_leaves_a_device_the_next_start_removes") else {
        return;
    };
    let before = block_devices();
    let (mut child, id) = start_long_fill();
    signal(&child, libc::SIGKILL);
    let status = child.wait().unwrap();
    assert!(!status.success());
    assert!(exists(id), "a SIGKILL leaves zram{id} (nothing can catch it)");
    assert!(record(id).exists(), "with its record");
    // The next start: any kernel command.
    let out = run(&["kernel", "check", "--synthetic-pages", "64", "--compressor", "lz4"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains(&format!("removed zram{id} left by an ended run")), "{err}");
    assert!(!record(id).exists(), "record deleted");
    assert_eq!(block_devices(), before, "no device left behind");
}

#[test]
fn sigint_and_sigterm_remove_the_device_at_once() {
    let Some(_g) = kernel_or_skip("sigint_and_sigterm_remove_the_device_at_once") else {
        return;
    };
    let before = block_devices();
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let (mut child, id) = start_long_fill();
        signal(&child, sig);
        let status = child.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(sig), "ends as the signal would have");
        assert!(!exists(id), "zram{id} removed by the handler");
        assert!(!record(id).exists(), "and its record");
    }
    assert_eq!(block_devices(), before, "no device left behind");
}

#[test]
fn a_record_that_does_not_match_its_device_removes_nothing() {
    let Some(_g) = kernel_or_skip("a_record_that_does_not_match_its_device_removes_nothing") else {
        return;
    };
    let before = block_devices();
    // A device of this process, whose record is replaced by a dead owner's naming the same id
    // with another diskseq: as if the recorded device had gone and its id been given again.
    let spec = DeviceSpec {
        compressor: None,
        level: None,
        pages: 16,
        page_size: zsmalloc_lab::kernel::host::page_size(),
    };
    let dev = Device::create(&spec).unwrap();
    let id = dev.id();
    let real = Record::parse(&std::fs::read_to_string(record(id)).unwrap()).unwrap();
    assert_eq!(real.pid, std::process::id());
    let stale = Record { pid: u32::MAX - 1, diskseq: real.diskseq + 1_000_000, ..real };
    std::fs::write(record(id), stale.to_text()).unwrap();
    let out = run(&["kernel", "check", "--synthetic-pages", "16"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(exists(id), "zram{id} untouched: it is not the recorded device");
    assert!(!record(id).exists(), "the stale record is deleted");
    dev.remove().unwrap();
    assert!(!exists(id));
    assert_eq!(block_devices(), before, "no device left behind");
}
