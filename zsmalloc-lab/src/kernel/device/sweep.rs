//! Every `zsmalloc kernel` command starts with a sweep of the records under [`RECORD_DIR`]: a
//! record whose owner has ended names a device its run could not remove (SIGKILL, a crash, a
//! removal refused because another process had the device open). The sweep removes that device when
//! it is still the recorded one (same boot, same `diskseq`), and deletes the record once the device
//! is gone; a device still busy keeps its record for the next start. Records of running owners, and
//! copies held by running processes, are left alone.

use std::path::PathBuf;

use super::control::{self, Removal};
use super::cpath::CPath;
use super::identity::{self, Identity};
use super::record::{self, Name, Record, RECORD_DIR};
use super::removal;

/// What [`sweep`] did with one record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SweepOutcome {
    /// The owner runs: left alone.
    Owned,
    /// The device was removed, and its record deleted.
    Removed,
    /// The device is gone or is another one now: only the record was deleted.
    Stale,
    /// The device could not be removed (why); the record stays for the next start.
    Failed(String),
}

/// Acts on every record (module documentation); returns what was done per record, for the
/// caller to report.
pub fn sweep() -> Vec<(Record, SweepOutcome)> {
    sweep_where(|_| true)
}

/// [`sweep`], for the records of devices `ids` only.
pub fn sweep_ids(ids: &[u32]) -> Vec<(Record, SweepOutcome)> {
    sweep_where(|id| ids.contains(&id))
}

fn sweep_where(want: impl Fn(u32) -> bool) -> Vec<(Record, SweepOutcome)> {
    // Without this process's identity its claims could not be told from an ended run's.
    let Ok(me) = Identity::this_process() else { return Vec::new() };
    let Ok(dir) = std::fs::read_dir(RECORD_DIR) else { return Vec::new() };
    let mut names: Vec<(String, Name)> = dir
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            let parsed = Name::parse(&name)?;
            want(parsed.id()).then_some((name, parsed))
        })
        .collect();
    names.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = Vec::new();
    for (name, parsed) in names {
        let path = PathBuf::from(RECORD_DIR).join(&name);
        let id = parsed.id();
        if let Name::Copy(_, holder, _) = parsed {
            if holder == me.process || holder.alive() {
                // Being written or removed by a running process.
                continue;
            }
        }
        let Some(rec) = Record::read(&path, id) else {
            // Not a record: left alone; but a copy cut short by its holder's end is deleted.
            if matches!(parsed, Name::Copy(..)) {
                let _ = std::fs::remove_file(&path);
            }
            continue;
        };
        if rec.owner_alive() {
            out.push((rec, SweepOutcome::Owned));
            continue;
        }
        let from = match parsed {
            Name::Record(_) => record::record_cpath(id),
            Name::Copy(_, holder, tag) => record::copy_cpath(id, holder, tag),
        };
        if let Some(outcome) = take(&rec, &from, &me) {
            out.push((rec, outcome));
        }
    }
    out
}

/// Removes `rec`'s device through `from`, its file; `None` when another process took the file
/// first or it changed since it was read (a new owner's record).
fn take(rec: &Record, from: &CPath, me: &Identity) -> Option<SweepOutcome> {
    let claim = removal::claim(from, rec.id, me.process)?;
    if Record::read(&record::cpath_to_path(&claim), rec.id).as_ref() != Some(rec) {
        removal::put_back(&claim, rec.id);
        return None;
    }
    let removal = if identity::boot_id().as_deref() == Some(rec.boot.as_str()) {
        control::hot_remove(rec.id, Some(rec.diskseq))
    } else {
        // Another boot's record names no device of this one.
        Removal::Gone
    };
    removal::settle(&claim, rec.id, removal);
    Some(match removal {
        Removal::Removed => SweepOutcome::Removed,
        Removal::Gone => SweepOutcome::Stale,
        other => SweepOutcome::Failed(other.reason()),
    })
}

/// Runs [`sweep`] and says on stderr what it removed or could not.
pub fn sweep_and_report() {
    for (rec, outcome) in sweep() {
        match outcome {
            SweepOutcome::Removed => eprintln!(
                "zsmalloc: removed zram{} left by an ended run (process {})",
                rec.id, rec.pid
            ),
            SweepOutcome::Failed(e) => eprintln!(
                "zsmalloc: warning: zram{} left by process {} could not be removed: {e}; its \
                 record stays for the next start",
                rec.id, rec.pid
            ),
            SweepOutcome::Owned | SweepOutcome::Stale => {}
        }
    }
}
