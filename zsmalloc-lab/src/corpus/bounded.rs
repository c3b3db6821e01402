//! A command run to its end or to a deadline, in a process group of its own so that what it
//! started goes with it: past the deadline the group gets SIGTERM, SIGKILL a few seconds later;
//! after the command ends, whatever it left in its group gets SIGKILL. Its peak RSS is wait4's
//! `ru_maxrss`, this process's own left out: the kernel counts the high-water mark of the memory
//! a process had before its exec, so the child is forked and resets its mark (`clear_refs` 5)
//! to the little it holds then (vfork would lend it ours, several MiB, more than gzip's peak). SIGINT and SIGTERM meanwhile stop it the same way (its own group does not get the
//! terminal's Ctrl-C), and the caller is told.

use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::error::{LabError, LabResult};
use crate::interrupt::StopRequests;

/// How long a group has between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(5);
/// How often the command is looked at.
const POLL: Duration = Duration::from_millis(10);

/// How a command ended.
#[derive(Debug, Clone)]
pub struct Ended {
    /// Its exit status: the code, or 128+N after signal N.
    pub status: i32,
    /// The peak RSS of it or of a descendant it waited for, in bytes.
    pub max_rss_bytes: u64,
    pub wall: Duration,
    /// Whether the deadline stopped it.
    pub timed_out: bool,
    /// Whether SIGINT or SIGTERM stopped it.
    pub interrupted: bool,
}

/// Runs `cmd` in a new process group until it ends, `timeout` passes or `stop` is requested.
pub fn run(cmd: &mut Command, timeout: Duration, stop: &StopRequests) -> LabResult<Ended> {
    let program = cmd.get_program().to_string_lossy().into_owned();
    let start = Instant::now();
    // SAFETY: the hook runs in the forked child before its exec and makes only
    // async-signal-safe calls (open, write, close) on a path and a byte of static storage.
    unsafe {
        cmd.pre_exec(|| {
            let fd =
                libc::open(c"/proc/self/clear_refs".as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd >= 0 {
                libc::write(fd, b"5".as_ptr().cast(), 1);
                libc::close(fd);
            }
            Ok(())
        })
    };
    let child = cmd
        .process_group(0)
        .spawn()
        .map_err(|e| LabError::runtime(format!("cannot run {program}: {e}")))?;
    let pid = child.id() as libc::pid_t;
    let mut termed: Option<Instant> = None;
    let mut killed = false;
    while !exited(pid)? {
        let now = Instant::now();
        match termed {
            None if now - start > timeout || stop.requested() => {
                signal_group(pid, libc::SIGTERM);
                termed = Some(now);
            }
            Some(t) if !killed && now - t > GRACE => {
                signal_group(pid, libc::SIGKILL);
                killed = true;
            }
            _ => {}
        }
        std::thread::sleep(POLL);
    }
    let wall = start.elapsed();
    // The command is a zombie, not yet reaped: its group's id cannot be reused meanwhile, so
    // this reaches only what it left behind.
    signal_group(pid, libc::SIGKILL);
    let mut status = 0;
    // SAFETY: rusage is plain old data, filled in by wait4.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: pid is our child, status and usage are valid for writes.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    if r != pid {
        let e = std::io::Error::last_os_error();
        return Err(LabError::runtime(format!("waiting for {program}: {e}")));
    }
    let status = if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        libc::WEXITSTATUS(status)
    };
    Ok(Ended {
        status,
        max_rss_bytes: usage.ru_maxrss.max(0) as u64 * 1024,
        wall,
        timed_out: termed.is_some() && !stop.requested(),
        interrupted: stop.requested(),
    })
}

/// Whether the child `pid` has ended (left unreaped).
fn exited(pid: libc::pid_t) -> LabResult<bool> {
    // SAFETY: siginfo_t is plain old data, filled in by waitid.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
    // SAFETY: info is valid for writes; WNOWAIT leaves the child to be reaped by wait4.
    let r = unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags) };
    if r != 0 {
        let e = std::io::Error::last_os_error();
        return Err(LabError::runtime(format!("waiting for process {pid}: {e}")));
    }
    // SAFETY: waitid filled info; si_pid is 0 while the child runs (WNOHANG).
    Ok(unsafe { info.si_pid() } != 0)
}

fn signal_group(pgid: libc::pid_t, signal: libc::c_int) {
    // SAFETY: kill(2) with a negative pid signals the group we made; no memory is involved.
    unsafe { libc::kill(-pgid, signal) };
}
