//! How the started program ended, as the command sees it: its exit status, the resources it
//! used (`wait4`'s `rusage`: its CPU time and its largest resident set), the name it ended
//! under (read while it is a zombie, before it is reaped), and the run's wall time.

use std::io;
use std::time::Duration;

/// What the kernel counted of the process (with its descendants it waited for).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub user_ns: u64,
    pub system_ns: u64,
    /// `ru_maxrss`: the largest resident set of the process (or of a descendant it waited
    /// for, if larger), every program it executed included.
    pub max_rss_bytes: u64,
}

/// The program's end.
#[derive(Debug, Clone)]
pub struct Ended {
    /// As a shell gives it: the code, or 128 + the signal that ended it.
    pub status: i32,
    pub usage: Usage,
    /// `/proc/PID/comm` at its end ("" when it could not be read).
    pub command: String,
}

/// The run's own figures, beside the library's.
#[derive(Debug, Clone, Default)]
pub struct Ran {
    /// From the start of the program to its end.
    pub elapsed: Duration,
    pub usage: Usage,
    /// The program the process ended as, when the library never started in it: it was
    /// executed and the loader did not preload the tier (static, setuid or setgid, or its
    /// environment cleared), so it ran untiered from its exec on.
    pub untiered_program: Option<String>,
    /// `--follow-children` was given.
    pub follow_children: bool,
    /// The pool's page size, in which its pages are counted.
    pub pool_page_bytes: u64,
}

/// Waits for process `pid` (a child of this one) to end; reads its name while it is a zombie
/// (`waitid` with `WNOWAIT` leaves it one), then reaps it with `wait4` for its usage.
pub fn wait(pid: u32) -> io::Result<Ended> {
    let pid = pid as libc::pid_t;
    loop {
        // SAFETY: an all-zero siginfo_t is a valid value for waitid to fill.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waitid of our own child into the siginfo above; WNOWAIT leaves it waitable.
        let r = unsafe {
            libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOWAIT)
        };
        if r == 0 {
            break;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    let command = std::fs::read(format!("/proc/{pid}/comm"))
        .map(|b| String::from_utf8_lossy(b.strip_suffix(b"\n").unwrap_or(&b)).into_owned())
        .unwrap_or_default();
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: wait4 of our own child (a zombie now) into the status and rusage above.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if r == pid {
            break;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    let usage = Usage {
        user_ns: ns(ru.ru_utime),
        system_ns: ns(ru.ru_stime),
        max_rss_bytes: ru.ru_maxrss.max(0) as u64 * 1024,
    };
    Ok(Ended { status: shell_status(status), usage, command })
}

/// The exit status a shell reports: the code, or 128 + the signal that ended it.
fn shell_status(raw: i32) -> i32 {
    if libc::WIFEXITED(raw) {
        libc::WEXITSTATUS(raw)
    } else if libc::WIFSIGNALED(raw) {
        128 + libc::WTERMSIG(raw)
    } else {
        1
    }
}
