//! The removal of a recorded device, the same for the signal handler, the normal end and the
//! sweep of an ended run's device: take the record, remove the device, then delete the record
//! only if the device is gone — put it back otherwise. Async-signal-safe (`rename`, `link`,
//! `unlink`, and [`control::hot_remove`]).
//!
//! ORDERING: the record is taken (renamed to the remover's `.removing` copy) *before*
//! `hot_remove`, never deleted by its name after it. Once the device is removed its id is free,
//! and the next `hot_add` of any run may get it and write a record `zram<id>` of its own; a
//! deletion by name after the removal could delete that one, leaving a live device no record
//! names. The copy is this removal's alone.

use super::control::{self, Removal};
use super::cpath::CPath;
use super::identity::Process;
use super::record::{self, Tag};

/// Takes the record at `from` (device `id`'s record or a copy) for `holder`: renames it to
/// `zram<id>.<pid>-<start>.removing`. `None` when `from` is not there any more (another
/// process took it first) or a path does not fit.
pub(super) fn claim(from: &CPath, id: u32, holder: Process) -> Option<CPath> {
    let to = record::copy_cpath(id, holder, Tag::Removing);
    let (Some(f), Some(t)) = (from.as_ptr(), to.as_ptr()) else { return None };
    // SAFETY: both are NUL-terminated paths on this stack, alive for the call; rename is
    // async-signal-safe.
    (unsafe { libc::rename(f, t) } == 0).then_some(to)
}

/// Ends a claim after `removal`: deletes the copy when the device is gone, puts it back
/// otherwise.
pub(super) fn settle(claim: &CPath, id: u32, removal: Removal) {
    if removal.done() {
        unlink(claim);
    } else {
        put_back(claim, id);
    }
}

/// Puts a claimed copy back as `zram<id>` with `link`, which never replaces a record written
/// meanwhile (then the copy stays: once its holder has ended, the sweep takes it for the
/// record).
pub(super) fn put_back(claim: &CPath, id: u32) {
    let rec = record::record_cpath(id);
    let (Some(c), Some(r)) = (claim.as_ptr(), rec.as_ptr()) else { return };
    // SAFETY: both are NUL-terminated paths on this stack, alive for the call; link is
    // async-signal-safe.
    if unsafe { libc::link(c, r) } == 0 {
        unlink(claim);
    }
}

fn unlink(path: &CPath) {
    let Some(p) = path.as_ptr() else { return };
    // SAFETY: a NUL-terminated path on the caller's stack, alive for the call; unlink is
    // async-signal-safe.
    unsafe { libc::unlink(p) };
}

/// Removes device `id` (`diskseq`), recorded as `zram<id>`, for `holder`, the process that made
/// it: claim, [`control::hot_remove`], settle. A missing record (deleted by hand) does not stop
/// the removal.
pub(super) fn remove_recorded(id: u32, diskseq: u64, holder: Process) -> Removal {
    let claimed = claim(&record::record_cpath(id), id, holder);
    let removal = control::hot_remove(id, Some(diskseq));
    if let Some(c) = claimed {
        settle(&c, id, removal);
    }
    removal
}
