//! The record of each live device under [`RECORD_DIR`]: which process made it and which device
//! it is, so that a device left by a killed run (SIGKILL, a crash, a power cut of the terminal)
//! is removed at the next start — and nothing else is.
//!
//! One file per device, `RECORD_DIR/zram<id>`, of `key=value` lines: `pid`, `start` (the
//! process's start time, so a reused pid is not taken for the owner), `boot` (the boot id) and
//! `diskseq` (the block layer's sequence number of the disk, never reused within a boot: a device
//! that was removed and whose id another program's `hot_add` got again has another one). At the
//! next start a record is acted on only when its process is gone: its device is removed when
//! the boot and `diskseq` match, the record deleted in every case.

use std::path::{Path, PathBuf};

use crate::error::{LabError, LabResult};
use crate::kernel::host;

/// Where records live (a tmpfs: gone with the boot, as the devices are).
pub const RECORD_DIR: &str = "/run/zsmalloc-lab";

/// Who made a device, and which one it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub id: u32,
    pub pid: u32,
    pub start: u64,
    pub boot: String,
    pub diskseq: u64,
}

/// What [`sweep`] did with one record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The owner runs: left alone.
    Owned,
    /// The device was removed.
    Removed,
    /// The device is gone or is another one now: only the record was deleted.
    Stale,
    /// The device could not be removed (its message); the record stays for the next start.
    Failed(String),
}

pub fn record_path(id: u32) -> PathBuf {
    Path::new(RECORD_DIR).join(format!("zram{id}"))
}

impl Record {
    /// This process's record for device `id` (`diskseq` read by the caller).
    pub fn mine(id: u32, diskseq: u64) -> Record {
        let pid = std::process::id();
        Record {
            id,
            pid,
            start: host::process_start(pid).unwrap_or(0),
            boot: host::boot_id(),
            diskseq,
        }
    }

    pub fn to_text(&self) -> String {
        format!(
            "device=zram{}\npid={}\nstart={}\nboot={}\ndiskseq={}\n",
            self.id, self.pid, self.start, self.boot, self.diskseq
        )
    }

    pub fn parse(text: &str) -> Option<Record> {
        let get = |key: &str| {
            text.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix('=')).map(str::trim)
        };
        Some(Record {
            id: get("device")?.strip_prefix("zram")?.parse().ok()?,
            pid: get("pid")?.parse().ok()?,
            start: get("start")?.parse().ok()?,
            boot: get("boot")?.to_string(),
            diskseq: get("diskseq")?.parse().ok()?,
        })
    }

    /// Writes the record (atomically: a reader sees all of it or none).
    pub fn write(&self) -> LabResult<()> {
        std::fs::create_dir_all(RECORD_DIR)
            .map_err(|e| LabError::io("create", Path::new(RECORD_DIR), &e))?;
        let path = record_path(self.id);
        let tmp = path.with_extension(format!("tmp{}", self.pid));
        std::fs::write(&tmp, self.to_text()).map_err(|e| LabError::io("write", &tmp, &e))?;
        std::fs::rename(&tmp, &path).map_err(|e| LabError::io("write", &path, &e))
    }

    /// Whether the process that wrote the record still runs.
    fn owner_alive(&self) -> bool {
        self.boot == host::boot_id() && host::process_start(self.pid) == Some(self.start)
    }
}

/// Deletes device `id`'s record (a missing one is fine).
pub fn forget(id: u32) {
    let _ = std::fs::remove_file(record_path(id));
}

/// Handles every record whose process is gone (module documentation); returns what was done
/// per record, for the caller to report.
pub fn sweep() -> Vec<(Record, Outcome)> {
    let Ok(dir) = std::fs::read_dir(RECORD_DIR) else { return Vec::new() };
    let mut out = Vec::new();
    let mut names: Vec<PathBuf> = dir.filter_map(|e| e.ok().map(|e| e.path())).collect();
    names.sort();
    for path in names {
        let Some(rec) = std::fs::read_to_string(&path).ok().and_then(|t| Record::parse(&t)) else {
            // A half-written temporary of a live process is renamed in a moment; others are
            // not records.
            continue;
        };
        if path != record_path(rec.id) {
            continue;
        }
        let outcome = if rec.owner_alive() {
            Outcome::Owned
        } else if rec.boot == host::boot_id() && super::diskseq(rec.id) == Some(rec.diskseq) {
            match super::hot_remove(rec.id) {
                Ok(()) => Outcome::Removed,
                Err(e) => Outcome::Failed(e.to_string()),
            }
        } else {
            Outcome::Stale
        };
        if matches!(outcome, Outcome::Removed | Outcome::Stale) {
            let _ = std::fs::remove_file(&path);
        }
        out.push((rec, outcome));
    }
    out
}

/// Runs [`sweep`] and says on stderr what it removed or could not.
pub fn sweep_and_report() {
    for (rec, outcome) in sweep() {
        match outcome {
            Outcome::Removed => eprintln!(
                "zsmalloc: removed zram{} left by an ended run (process {})",
                rec.id, rec.pid
            ),
            Outcome::Failed(e) => eprintln!(
                "zsmalloc: warning: zram{} left by process {} could not be removed: {e}",
                rec.id, rec.pid
            ),
            Outcome::Owned | Outcome::Stale => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        let r = Record { id: 3, pid: 42, start: 9, boot: "b-1".into(), diskseq: 77 };
        assert_eq!(Record::parse(&r.to_text()), Some(r));
        assert_eq!(Record::parse("device=zram3\npid=1\n"), None);
        assert_eq!(Record::parse("device=sda\npid=1\nstart=1\nboot=x\ndiskseq=1\n"), None);
    }

    #[test]
    fn this_process_owns_its_record() {
        let r = Record::mine(5, 1);
        assert!(r.owner_alive());
        let gone = Record { start: r.start + 1, ..r };
        assert!(!gone.owner_alive(), "a reused pid is not the owner");
    }
}
