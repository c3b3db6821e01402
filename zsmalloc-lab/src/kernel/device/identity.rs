//! Who owns a device: a process, named for the whole boot by its pid and start time (a reused
//! pid has another start time), and the boot itself. A device is made only when all of it can be
//! read: a record with a guessed part could make a live owner look dead to another run's sweep.

use crate::error::{LabError, LabResult};

/// A process, for the whole boot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Process {
    pub pid: u32,
    /// Clock ticks since boot (field 22 of `/proc/PID/stat`).
    pub start: u64,
}

impl Process {
    /// Whether this process still runs (in this boot: callers compare boots first).
    pub fn alive(&self) -> bool {
        process_start(self.pid) == Some(self.start)
    }
}

/// A device owner's identity, as its record holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub process: Process,
    pub boot: String,
}

impl Identity {
    /// This process's identity, or why it cannot be recorded (then no device is made).
    pub fn this_process() -> LabResult<Identity> {
        let pid = std::process::id();
        Identity::from_parts(pid, process_start(pid), boot_id())
    }

    /// The identity from its parts as read; refuses when one could not be read.
    pub(super) fn from_parts(
        pid: u32,
        start: Option<u64>,
        boot: Option<String>,
    ) -> LabResult<Identity> {
        let refuse = |what: &str| {
            LabError::runtime(format!(
                "no zram device made: its owner cannot be recorded ({what} is unreadable)"
            ))
        };
        let start = start.ok_or_else(|| refuse(&format!("the start time in /proc/{pid}/stat")))?;
        let boot = boot.ok_or_else(|| refuse(BOOT_ID))?;
        Ok(Identity { process: Process { pid, start }, boot })
    }
}

const BOOT_ID: &str = "/proc/sys/kernel/random/boot_id";

/// The boot's id, `None` when unreadable: a record from another boot names no device of this one.
pub fn boot_id() -> Option<String> {
    let id = std::fs::read_to_string(BOOT_ID).ok()?.trim().to_string();
    (!id.is_empty()).then_some(id)
}

/// When process `pid` started (clock ticks since boot, field 22 of `/proc/PID/stat`), or `None`
/// when there is no such process: with the pid it names one process for the whole boot.
pub fn process_start(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: fields resume after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_an_identity_and_runs() {
        let me = Identity::this_process().unwrap();
        assert_eq!(me.process.pid, std::process::id());
        assert!(me.process.alive());
        let reused = Process { start: me.process.start + 1, ..me.process };
        assert!(!reused.alive(), "a reused pid is not the owner");
    }

    #[test]
    fn an_identity_with_a_part_missing_is_refused() {
        let boot = Some("b".to_string());
        assert!(Identity::from_parts(7, Some(1), boot.clone()).is_ok());
        let e = Identity::from_parts(7, None, boot).unwrap_err();
        assert!(matches!(e, LabError::Runtime(_)));
        assert!(e.to_string().contains("/proc/7/stat"), "{e}");
        let e = Identity::from_parts(7, Some(1), None).unwrap_err();
        assert!(e.to_string().contains("boot_id"), "{e}");
        assert_eq!(e.to_string().lines().count(), 1);
    }
}
