//! The record of each device this program made, under [`RECORD_DIR`]: which process made it and
//! which device it is, so that a device whose run ended without removing it (SIGKILL, a crash, a
//! removal refused because another process had it open) is removed at a later start — and
//! nothing else is.
//!
//! A record is one file of `key=value` lines: `device` (`zram<id>`), `pid` and `start` (the
//! owner, for the whole boot), `boot` (the boot id) and `diskseq` (the block layer's number of
//! the disk, never reused within a boot: a device removed and whose id another program's
//! `hot_add` got again has another one). Its names:
//!
//! - `zram<id>`: the record of device `id`;
//! - `zram<id>.<pid>-<start>.new`: being written by that process, renamed to `zram<id>` once
//!   whole (a reader sees all of a record or none);
//! - `zram<id>.<pid>-<start>.removing`: taken by that process to remove the device (see
//!   `removal`): deleted once the device is gone, put back as `zram<id>` otherwise.
//!
//! A copy whose process has ended is a record again for the sweep.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::cpath::CPath;
use super::identity::{self, Identity, Process};
use crate::atomic_file::AtomicFile;
use crate::error::{LabError, LabResult};

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

impl Record {
    /// The record of device `id`, made by `owner`.
    pub(super) fn new(id: u32, owner: &Identity, diskseq: u64) -> Record {
        let Process { pid, start } = owner.process;
        Record { id, pid, start, boot: owner.boot.clone(), diskseq }
    }

    /// The process that made the device.
    pub(super) fn owner(&self) -> Process {
        Process { pid: self.pid, start: self.start }
    }

    /// Whether the process that made the device still runs.
    pub fn owner_alive(&self) -> bool {
        identity::boot_id().as_deref() == Some(self.boot.as_str()) && self.owner().alive()
    }

    pub fn to_text(&self) -> String {
        format!(
            "device=zram{}\npid={}\nstart={}\nboot={}\ndiskseq={}\n",
            self.id, self.pid, self.start, self.boot, self.diskseq
        )
    }

    /// A record's text, `None` unless every key is there and well-formed.
    pub fn parse(text: &str) -> Option<Record> {
        let get = |key: &str| {
            text.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix('=')).map(str::trim)
        };
        let boot = get("boot")?;
        if boot.is_empty() {
            return None;
        }
        Some(Record {
            id: crate::zram_name::device_id(get("device")?)?,
            pid: get("pid")?.parse().ok()?,
            start: get("start")?.parse().ok()?,
            boot: boot.to_string(),
            diskseq: get("diskseq")?.parse().ok()?,
        })
    }

    /// The record in file `path`, when it is one and names device `id`.
    pub(super) fn read(path: &Path, id: u32) -> Option<Record> {
        let rec = Record::parse(&std::fs::read_to_string(path).ok()?)?;
        (rec.id == id).then_some(rec)
    }

    /// Writes the record as `zram<id>`, through its `.new` copy: the shared output sink with
    /// this module's name for the copy, which a later start reads if a SIGKILL leaves it (so
    /// the signal handler does not unlink it: the device's removal deletes the record).
    pub(super) fn write(&self) -> LabResult<()> {
        let copy = cpath_to_path(&copy_cpath(self.id, self.owner(), Tag::New));
        let path = record_path(self.id);
        let mut f =
            AtomicFile::with_copy(&path, &copy).map_err(|e| LabError::io("write", &copy, &e))?;
        f.write_all(self.to_text().as_bytes()).map_err(|e| LabError::io("write", &copy, &e))?;
        f.commit_io().map_err(|e| LabError::io("write", &path, &e))
    }
}

/// What a working copy is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tag {
    New,
    Removing,
}

impl Tag {
    fn suffix(self) -> &'static [u8] {
        match self {
            Tag::New => b"new",
            Tag::Removing => b"removing",
        }
    }
}

/// A file name under [`RECORD_DIR`], read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Name {
    /// `zram<id>`.
    Record(u32),
    /// `zram<id>.<pid>-<start>.<tag>`: a copy held by that process.
    Copy(u32, Process, Tag),
}

impl Name {
    pub(super) fn parse(name: &str) -> Option<Name> {
        let rest = name.strip_prefix("zram")?;
        let (id, copy) = match rest.split_once('.') {
            None => (rest, None),
            Some((id, copy)) => (id, Some(copy)),
        };
        let id = strict_number(id)?;
        let Some(copy) = copy else { return Some(Name::Record(u32::try_from(id).ok()?)) };
        let (holder, tag) = copy.split_once('.')?;
        let (pid, start) = holder.split_once('-')?;
        let tag = match tag {
            "new" => Tag::New,
            "removing" => Tag::Removing,
            _ => return None,
        };
        let holder =
            Process { pid: u32::try_from(strict_number(pid)?).ok()?, start: strict_number(start)? };
        Some(Name::Copy(u32::try_from(id).ok()?, holder, tag))
    }

    pub(super) fn id(self) -> u32 {
        match self {
            Name::Record(id) | Name::Copy(id, ..) => id,
        }
    }
}

/// Digits only (no sign, no spaces), as this module writes them.
fn strict_number(s: &str) -> Option<u64> {
    crate::zram_name::decimal(s)
}

/// `RECORD_DIR/zram<id>`.
pub fn record_path(id: u32) -> PathBuf {
    cpath_to_path(&record_cpath(id))
}

/// `RECORD_DIR/zram<id>`, built without allocating.
pub(super) fn record_cpath(id: u32) -> CPath {
    CPath::new().push(RECORD_DIR.as_bytes()).push(b"/zram").num(u64::from(id))
}

/// `RECORD_DIR/zram<id>.<pid>-<start>.<tag>`, built without allocating.
pub(super) fn copy_cpath(id: u32, holder: Process, tag: Tag) -> CPath {
    record_cpath(id)
        .push(b".")
        .num(u64::from(holder.pid))
        .push(b"-")
        .num(holder.start)
        .push(b".")
        .push(tag.suffix())
}

pub(super) fn cpath_to_path(p: &CPath) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(std::ffi::OsStr::from_bytes(p.as_bytes()))
}

/// Makes [`RECORD_DIR`] and checks a file can be written there, before any device is made: a
/// device whose record cannot be written is not made.
pub(super) fn prepare_dir() -> LabResult<()> {
    let dir = Path::new(RECORD_DIR);
    std::fs::create_dir_all(dir).map_err(|e| refuse(dir, &e))?;
    // A temporary made and removed: nothing is left there, even on a signal.
    let probe = dir.join("probe");
    crate::atomic_file::check(&probe).map_err(|e| refuse(dir, &e))
}

fn refuse(path: &Path, e: &std::io::Error) -> LabError {
    LabError::runtime(format!(
        "no zram device made: its record cannot be written ('{}': {})",
        path.display(),
        zsmalloc_core::text_input::io_reason(e)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: Process = Process { pid: 42, start: 9 };

    #[test]
    fn records_round_trip() {
        let r = Record { id: 3, pid: 42, start: 9, boot: "b-1".into(), diskseq: 77 };
        assert_eq!(Record::parse(&r.to_text()), Some(r.clone()));
        let owner = Identity { process: ME, boot: "b-1".into() };
        assert_eq!(Record::new(3, &owner, 77), r);
        assert_eq!(r.owner(), ME);
    }

    #[test]
    fn incomplete_or_foreign_records_do_not_parse() {
        assert_eq!(Record::parse("device=zram3\npid=1\n"), None);
        assert_eq!(Record::parse("device=sda\npid=1\nstart=1\nboot=x\ndiskseq=1\n"), None);
        assert_eq!(Record::parse("device=zram3\npid=1\nstart=\nboot=x\ndiskseq=1\n"), None);
        assert_eq!(Record::parse("device=zram3\npid=1\nstart=1\nboot=\ndiskseq=1\n"), None);
        assert_eq!(Record::parse("device=zram3\npid=-1\nstart=1\nboot=x\ndiskseq=1\n"), None);
    }

    #[test]
    fn paths_are_formatted_without_allocating() {
        assert_eq!(record_cpath(17).as_bytes(), format!("{RECORD_DIR}/zram17").as_bytes());
        assert_eq!(record_path(17), Path::new(RECORD_DIR).join("zram17"));
        let copy = copy_cpath(17, ME, Tag::Removing);
        assert_eq!(copy.as_bytes(), format!("{RECORD_DIR}/zram17.42-9.removing").as_bytes());
        assert!(copy_cpath(u32::MAX, Process { pid: u32::MAX, start: u64::MAX }, Tag::Removing)
            .as_ptr()
            .is_some());
    }

    #[test]
    fn names_are_read_back() {
        assert_eq!(Name::parse("zram17"), Some(Name::Record(17)));
        assert_eq!(Name::parse("zram17.42-9.new"), Some(Name::Copy(17, ME, Tag::New)));
        assert_eq!(Name::parse("zram17.42-9.removing"), Some(Name::Copy(17, ME, Tag::Removing)));
        for other in [
            "zram",
            "zram-1",
            "zram1x",
            "zram01",
            "zram00",
            "zram+1",
            "zram1.042-9.new",
            "zram1.42-9",
            "zram1.42.new",
            "zram1.4-9.old",
        ] {
            assert_eq!(Name::parse(other), None, "{other}");
        }
        assert_eq!(Name::parse(".probe.42"), None);
        for id in [0, 5, u32::MAX] {
            let p = cpath_to_path(&copy_cpath(id, ME, Tag::New));
            let name = p.file_name().unwrap().to_str().unwrap();
            assert_eq!(Name::parse(name).map(Name::id), Some(id));
        }
    }
}
