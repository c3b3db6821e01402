//! What an ended `--vs-kernel` run could not take down (it was killed with SIGKILL, or crashed):
//! removed at the next `--vs-kernel` start, before its checks. Only what such a run made:
//!
//! - a swap on `/dev/zramN` whose device has a lifetime record (`kernel::device`'s) naming an
//!   owner that has ended, the same device (`diskseq`): taken off, then the device removed by
//!   the device sweep ([`sweep_ids`]). The `kernel` commands never swap a device on, so a
//!   recorded device in /proc/swaps is one of these runs';
//! - a memory cgroup named `zsmalloc-vs-kernel-<pid>` whose process has ended and that holds no
//!   process: removed.

use crate::kernel::device::diskseq;
use crate::kernel::device::record::{record_path, Record};
use crate::kernel::device::sweep::{sweep_ids, SweepOutcome};

use super::{cgroup, swap};

const CGROUP_PREFIX: &str = "zsmalloc-vs-kernel-";

fn alive(pid: i32) -> bool {
    // SAFETY: kill with signal 0 sends nothing; it only asks whether `pid` exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Removes an ended run's swap, device and cgroup; says on stderr what it did.
pub fn remove() {
    for path in swap::active() {
        let Some(id) = path.strip_prefix("/dev/zram").and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Some(rec) =
            std::fs::read_to_string(record_path(id)).ok().and_then(|t| Record::parse(&t))
        else {
            continue;
        };
        if rec.id != id || rec.owner_alive() || diskseq(id) != Some(rec.diskseq) {
            continue;
        }
        let c = std::ffi::CString::new(path.clone()).expect("no NUL");
        // SAFETY: swapoff reads the NUL-terminated path, alive for the call.
        if unsafe { libc::swapoff(c.as_ptr()) } != 0 {
            let e = std::io::Error::last_os_error();
            eprintln!("zsmalloc tier: warning: swapoff {path} left by process {}: {e}", rec.pid);
            continue;
        }
        eprintln!("zsmalloc tier: took off the swap on {path} left by process {}", rec.pid);
        for (_, outcome) in sweep_ids(&[id]) {
            match outcome {
                SweepOutcome::Removed => eprintln!("zsmalloc tier: removed zram{id}"),
                SweepOutcome::Failed(e) => {
                    eprintln!("zsmalloc tier: warning: zram{id} could not be removed: {e}")
                }
                _ => {}
            }
        }
    }
    let Ok((_, root)) = cgroup::hierarchy() else { return };
    let Ok(dir) = std::fs::read_dir(&root) else { return };
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix(CGROUP_PREFIX).and_then(|p| p.parse::<i32>().ok()) else {
            continue;
        };
        let procs = std::fs::read_to_string(e.path().join("cgroup.procs")).unwrap_or_default();
        if pid <= 0 || alive(pid) || !procs.trim().is_empty() {
            continue;
        }
        if std::fs::remove_dir(e.path()).is_ok() {
            eprintln!(
                "zsmalloc tier: removed the memory cgroup {} left by an ended run",
                e.path().display()
            );
        }
    }
}
