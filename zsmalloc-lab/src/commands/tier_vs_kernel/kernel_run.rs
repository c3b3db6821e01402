//! The program's second run, under the kernel's own zram swap: a private device made as
//! `kernel check` makes it ([`Device`]), swapped on ([`super::swap`]), the program started
//! inside a memory cgroup of its own ([`super::cgroup`]) limited to the budget plus its memory
//! outside tiered memory, `mm_stat` read every 20 ms while it runs, then everything taken down
//! ([`super::teardown`]): on success, on failure, and (through the shared handler) on a signal.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::cgroup::Cgroup;
use super::{preflight, swap, teardown};
use crate::error::{LabError, LabResult};
use crate::kernel::device::{Device, DeviceSpec};
use crate::kernel::mm_stat::MmStat;
use zsmalloc_tier::ending::{self, Usage};

/// What to run and how.
pub struct Plan {
    pub command: Vec<OsString>,
    /// The kernel's name of the compressor (lz4, lzo, zstd).
    pub compressor: String,
    pub disksize: u64,
    pub limit: u64,
    pub page_size: usize,
    /// The program is killed past it.
    pub timeout: Duration,
}

/// What the kernel run measured.
#[derive(Debug, Clone, Default)]
pub struct Measured {
    pub device: String,
    pub compressor: String,
    pub cgroup_version: &'static str,
    pub elapsed: Duration,
    pub usage: Usage,
    pub exit_status: i32,
    pub timed_out: bool,
    /// The last `mm_stat` read while the program still had its memory.
    pub last: MmStat,
    /// `mm_stat` after the program's end (`mem_used_max`: the peak).
    pub after: MmStat,
    /// /proc/vmstat deltas over the run (machine-wide).
    pub machine: BTreeMap<String, u64>,
    /// The cgroup's `memory.stat` at the end.
    pub cgroup_stat: BTreeMap<String, u64>,
    pub oom_kills: Option<u64>,
    pub cgroup_peak: Option<u64>,
}

/// Whether `pid` still has its memory (`/proc/PID/statm` nonzero): a reading of `mm_stat`
/// taken before this holds the program's swap, not what its exit left.
fn has_memory(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/statm"))
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|n| n.parse::<u64>().ok()))
        .is_some_and(|n| n > 0)
}

fn read_mm(id: u32) -> Option<MmStat> {
    let text = std::fs::read_to_string(format!("/sys/block/zram{id}/mm_stat")).ok()?;
    MmStat::parse(&text).ok()
}

fn delta(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    ["pswpin", "pswpout", "workingset_refault_anon", "pgmajfault"]
        .into_iter()
        .filter_map(|k| {
            Some((k.to_string(), after.get(k)?.saturating_sub(*before.get(k).unwrap_or(&0))))
        })
        .collect()
}

/// Runs the plan (module documentation). The cgroup, device and swap exist only inside.
pub fn run(plan: &Plan) -> LabResult<Measured> {
    teardown::register();
    let cg = Cgroup::create(plan.limit)?;
    let result = on_device(plan, &cg);
    let removed = teardown::remove_cgroup();
    let mut m = result?;
    removed.map_err(|e| {
        LabError::runtime(format!("the memory cgroup {} stays: {e}", cg.dir.display()))
    })?;
    m.cgroup_version = cg.version_name();
    Ok(m)
}

fn on_device(plan: &Plan, cg: &Cgroup) -> LabResult<Measured> {
    let pages = plan.disksize / plan.page_size as u64;
    let spec = DeviceSpec {
        compressor: Some(plan.compressor.clone()),
        level: None,
        pages,
        page_size: plan.page_size,
    };
    let mut dev = Device::create(&spec)?;
    let id = dev.id();
    let ran = swap::on(&mut dev, pages, plan.page_size).and_then(|path| {
        let mut m = program(plan, cg, id)?;
        m.device = path;
        m.compressor = dev.compressor().to_string();
        m.after = dev.mm_stat()?;
        Ok(m)
    });
    let off = teardown::swap_off();
    let removed = dev.remove();
    let m = ran?;
    off.map_err(|e| LabError::runtime(format!("swapoff /dev/zram{id}: {e}")))?;
    removed?;
    Ok(m)
}

/// Where standard input stood when the tier's run began (`None`: not a file that can be read
/// again, such as a pipe or a terminal).
static STDIN_AT: std::sync::OnceLock<Option<libc::off_t>> = std::sync::OnceLock::new();

/// Notes where standard input stands, before the tier's run reads it, so that the kernel's run
/// reads the same input.
pub fn remember_stdin() {
    // SAFETY: lseek of this process's standard input, moving nothing (SEEK_CUR by 0); on a pipe
    // or a terminal it fails with ESPIPE.
    let at = unsafe { libc::lseek(0, 0, libc::SEEK_CUR) };
    let _ = STDIN_AT.set((at >= 0).then_some(at));
}

/// Standard input back where the tier's run found it.
fn rewind_stdin() {
    if let Some(Some(at)) = STDIN_AT.get() {
        // SAFETY: lseek of this process's standard input, a file that could be sought before.
        unsafe { libc::lseek(0, *at, libc::SEEK_SET) };
    }
}

/// Starts the program in the cgroup, samples the device while it runs, waits for it.
fn program(plan: &Plan, cg: &Cgroup, id: u32) -> LabResult<Measured> {
    let name = plan.command.first().ok_or_else(|| LabError::usage("no command to run"))?;
    let procs = cg.procs()?;
    let fd = procs.as_raw_fd();
    let mut cmd = Command::new(name);
    cmd.args(&plan.command[1..]);
    // SAFETY: the hook runs in the forked child before exec and makes only write(2), which is
    // async-signal-safe, on `fd` (cgroup.procs, open in the parent until spawn returns):
    // "0" moves the writing process into the cgroup, so the program starts inside it.
    unsafe {
        cmd.pre_exec(move || {
            if libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    rewind_stdin();
    let vm_before = preflight::vmstat();
    let t0 = Instant::now();
    let child = {
        let _blocked = crate::interrupt::Blocked::new();
        let child = cmd
            .spawn()
            .map_err(|e| LabError::runtime(format!("{}: {e}", name.to_string_lossy())))?;
        teardown::set_child(child.id() as i32);
        child
    };
    drop(procs);
    let pid = child.id();
    let done = Arc::new(AtomicBool::new(false));
    let last = Arc::new(Mutex::new(MmStat::default()));
    let timed_out = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (done, last, timed_out) = (done.clone(), last.clone(), timed_out.clone());
        let timeout = plan.timeout;
        // SAFETY: pidfd_open of our own child, not yet reaped: the descriptor names it even
        // after it ends, so a signal through it never reaches another process.
        let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) } as i32;
        std::thread::spawn(move || {
            while !done.load(SeqCst) {
                if let Some(s) = read_mm(id) {
                    if has_memory(pid) {
                        *last.lock().unwrap() = s;
                    }
                }
                if t0.elapsed() > timeout && pidfd >= 0 && !timed_out.swap(true, SeqCst) {
                    // SAFETY: a signal through the pidfd above (our child's); no memory passed.
                    unsafe {
                        libc::syscall(libc::SYS_pidfd_send_signal, pidfd, libc::SIGKILL, 0, 0)
                    };
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            if pidfd >= 0 {
                // SAFETY: the pidfd is this thread's own, closed once.
                unsafe { libc::close(pidfd) };
            }
        })
    };
    // Wait without reaping, forget the pid (nothing to kill), then reap for the usage.
    // SAFETY: an all-zero siginfo_t is valid for waitid to fill.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: waitid of our own child into `info`; WNOWAIT leaves it to reap.
    while unsafe { libc::waitid(libc::P_PID, pid, &mut info, libc::WEXITED | libc::WNOWAIT) } != 0
        && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
    {}
    teardown::clear_child();
    let ended = ending::wait(pid).map_err(|e| LabError::runtime(format!("wait: {e}")));
    let elapsed = t0.elapsed();
    done.store(true, SeqCst);
    let _ = sampler.join();
    let ended = ended?;
    let vm_after = preflight::vmstat();
    let last = *last.lock().unwrap();
    Ok(Measured {
        elapsed,
        usage: ended.usage,
        exit_status: ended.status,
        timed_out: timed_out.load(SeqCst),
        last,
        machine: delta(&vm_before, &vm_after),
        cgroup_stat: cg.stat(),
        oom_kills: cg.oom_kills(),
        cgroup_peak: cg.peak(),
        ..Measured::default()
    })
}
