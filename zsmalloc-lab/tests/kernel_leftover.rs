//! A run's device goes away however the run ends: SIGINT and SIGTERM remove it at once; after a
//! SIGKILL (which nothing can catch), or a SIGTERM while another process holds the device open
//! (its removal refused as busy), the device keeps its record under /run, and the next start
//! checks the device is the one the ended process made and removes it. Skipped, with the reason
//! printed, without root or zram control. Only devices these tests made are looked at, and a
//! failing test still removes them (`Cleanup`).

mod kernel_support;

use std::fs::File;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kernel_support::*;
use zsmalloc_lab::kernel::device::record::{record_path, Record};
use zsmalloc_lab::kernel::device::{Device, DeviceSpec};

/// Starts a long check (a large built-in corpus) and waits until it is writing to its device;
/// the child and its device go into `cleanup` at once, so they are removed however the test
/// ends. Returns the child's index in `cleanup.children` and the device. Its stderr goes to
/// the scratch file `fill.stderr`.
fn start_long_fill(cleanup: &mut Cleanup) -> (usize, Made) {
    let child = zsmalloc()
        .args(["kernel", "check", "--synthetic-pages", "50000", "--compressor", "lz4"])
        .stdout(Stdio::null())
        .stderr(File::create(scratch("fill.stderr")).unwrap())
        .spawn()
        .unwrap();
    let pid = child.id();
    cleanup.children.push(child);
    let index = cleanup.children.len() - 1;
    let start = Instant::now();
    loop {
        assert!(start.elapsed() < Duration::from_secs(60), "the run never started its fill");
        if let Some(m) = made_by(pid).first().copied() {
            if !cleanup.made.contains(&m) {
                cleanup.made.push(m);
            }
            let mm = std::fs::read_to_string(format!("/sys/block/zram{}/mm_stat", m.id))
                .unwrap_or_default();
            let orig: u64 = mm.split_whitespace().next().and_then(|s| s.parse().ok()).unwrap_or(0);
            if orig > 0 && m.exists() {
                return (index, m);
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn signal(child: &Child, sig: libc::c_int) {
    // SAFETY: kill has no memory-safety preconditions; the pid is our own child's, not reaped.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, sig) }, 0);
}

/// Another process holds `m` open (as udev's probe does for a moment): `sleep` with the device
/// as its stdin, the last of `cleanup.children`. The test's own descriptor is closed with the
/// command.
fn hold_open(cleanup: &mut Cleanup, m: Made) {
    let holder = {
        let dev = File::open(format!("/dev/zram{}", m.id)).unwrap();
        let mut cmd = Command::new("sleep");
        cmd.arg("600").stdin(Stdio::from(dev)).stdout(Stdio::null());
        cmd.spawn().unwrap()
    };
    cleanup.children.push(holder);
}

/// Lets go of `m` (`hold_open`).
fn release(cleanup: &mut Cleanup) {
    let holder = cleanup.children.last_mut().unwrap();
    holder.kill().unwrap();
    holder.wait().unwrap();
}

/// The record of `m`, if there is one and it names `m`.
fn record_of(m: Made) -> Option<Record> {
    let rec = Record::parse(&std::fs::read_to_string(record_path(m.id)).ok()?)?;
    (rec.diskseq == m.diskseq).then_some(rec)
}

/// The next start (any kernel command) removes `m`, left by process `pid`, and its record.
fn next_start_removes(m: Made, pid: u32) {
    let out = run(&["kernel", "check", "--synthetic-pages", "64", "--compressor", "lz4"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains(&format!("removed zram{} left by an ended run", m.id)), "{err}");
    assert!(!m.exists(), "zram{} removed", m.id);
    assert!(record_of(m).is_none(), "its record deleted");
    assert_left_nothing(pid, &[m], "the ended run");
}

#[test]
fn sigkill_mid_fill_leaves_a_device_the_next_start_removes() {
    let Some(_g) = kernel_or_skip("sigkill_mid_fill_leaves_a_device_the_next_start_removes") else {
        return;
    };
    let mut cleanup = Cleanup::default();
    let (i, m) = start_long_fill(&mut cleanup);
    let child = &mut cleanup.children[i];
    let pid = child.id();
    signal(child, libc::SIGKILL);
    assert!(!child.wait().unwrap().success());
    assert!(m.exists(), "a SIGKILL leaves zram{} (nothing can catch it)", m.id);
    assert_eq!(record_of(m).map(|r| r.pid), Some(pid), "with its record");
    next_start_removes(m, pid);
}

#[test]
fn sigint_and_sigterm_remove_the_device_at_once() {
    let Some(_g) = kernel_or_skip("sigint_and_sigterm_remove_the_device_at_once") else {
        return;
    };
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let mut cleanup = Cleanup::default();
        let (i, m) = start_long_fill(&mut cleanup);
        let child = &mut cleanup.children[i];
        signal(child, sig);
        let status = child.wait().unwrap();
        assert_eq!(status.signal(), Some(sig), "ends as the signal would have");
        assert_left_nothing(child.id(), &[m], "the handler");
    }
}

#[test]
fn a_device_held_open_at_sigterm_keeps_its_record_and_the_next_start_removes_it() {
    let Some(_g) = kernel_or_skip("a_device_held_open_at_sigterm_keeps_its_record") else {
        return;
    };
    let mut cleanup = Cleanup::default();
    let (i, m) = start_long_fill(&mut cleanup);
    hold_open(&mut cleanup, m);
    let child = &mut cleanup.children[i];
    let pid = child.id();
    signal(child, libc::SIGTERM);
    let t = Instant::now();
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGTERM), "ends as the signal would have");
    assert!(
        t.elapsed() >= Duration::from_millis(1500),
        "the handler tried for about two seconds, not {:?}",
        t.elapsed()
    );
    assert!(m.exists(), "zram{} stays: busy in the holder", m.id);
    let err = std::fs::read_to_string(scratch("fill.stderr")).unwrap();
    assert!(err.contains(&format!("zram{} could not be removed", m.id)), "{err}");
    let rec = record_of(m).expect("the busy device keeps its record");
    assert_eq!(rec.pid, pid);
    // The holder lets go; the next start removes the device.
    release(&mut cleanup);
    next_start_removes(m, pid);
}

#[test]
fn a_device_held_open_at_the_normal_end_keeps_its_record_and_the_next_start_removes_it() {
    let Some(_g) = kernel_or_skip("a_device_held_open_at_the_normal_end_keeps_its_record") else {
        return;
    };
    let mut cleanup = Cleanup::default();
    let (i, m) = start_long_fill(&mut cleanup);
    hold_open(&mut cleanup, m);
    let child = &mut cleanup.children[i];
    let pid = child.id();
    let status = child.wait().unwrap();
    let err = std::fs::read_to_string(scratch("fill.stderr")).unwrap();
    assert_eq!(status.code(), Some(1), "the run reports the device it could not remove: {err}");
    assert!(err.contains(&format!("zram{} could not be removed", m.id)), "{err}");
    assert!(err.contains("busy after 20 tries"), "{err}");
    assert!(m.exists(), "zram{} stays: busy in the holder", m.id);
    assert_eq!(record_of(m).map(|r| r.pid), Some(pid), "the busy device keeps its record");
    release(&mut cleanup);
    next_start_removes(m, pid);
}

#[test]
fn a_record_that_does_not_match_its_device_removes_nothing() {
    let Some(_g) = kernel_or_skip("a_record_that_does_not_match_its_device_removes_nothing") else {
        return;
    };
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
    let real = Record::parse(&std::fs::read_to_string(record_path(id)).unwrap()).unwrap();
    assert_eq!(real.pid, std::process::id());
    let m = Made { id, diskseq: real.diskseq };
    let stale = Record { pid: u32::MAX - 1, diskseq: real.diskseq + 1_000_000, ..real };
    std::fs::write(record_path(id), stale.to_text()).unwrap();
    let out = run(&["kernel", "check", "--synthetic-pages", "16"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(m.exists(), "zram{id} untouched: it is not the recorded device");
    assert!(!record_path(id).exists(), "the stale record is deleted");
    dev.remove().unwrap();
    assert!(!m.exists());
    assert_left_nothing(std::process::id(), &[m], "this process");
}

#[test]
fn devices_made_from_several_threads_are_each_recorded_and_removed() {
    let Some(_g) = kernel_or_skip("devices_made_from_several_threads") else {
        return;
    };
    let spec = DeviceSpec {
        compressor: None,
        level: None,
        pages: 16,
        page_size: zsmalloc_lab::kernel::host::page_size(),
    };
    let made: Vec<Made> = std::thread::scope(|s| {
        let threads: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    let mut dev = Device::create(&spec).unwrap();
                    let id = dev.id();
                    let rec = Record::parse(&std::fs::read_to_string(record_path(id)).unwrap())
                        .expect("recorded before it is used");
                    assert_eq!(rec.pid, std::process::id());
                    let page = vec![7u8; spec.page_size];
                    dev.write_page(0, &page).unwrap();
                    assert_eq!(dev.read_page(0).unwrap(), &page[..]);
                    let m = Made { id, diskseq: rec.diskseq };
                    dev.remove().unwrap();
                    m
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    });
    assert!(made.iter().all(|m| !m.exists()));
    assert_left_nothing(std::process::id(), &made, "this process");
}
