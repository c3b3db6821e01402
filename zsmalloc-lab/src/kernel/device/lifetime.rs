//! A device's life, from `hot_add` to `hot_remove`: a [`Lease`] is the one way to hold a device,
//! and it cannot orphan one.
//!
//! - Nothing is made unless its owner can be recorded: the identity (pid, start time, boot id)
//!   is read and the record directory written to before `hot_add`; a device whose `diskseq` is
//!   unreadable or whose record cannot be written is removed at once and the start refused.
//! - The record is written before the device is used (sized, opened, filled).
//! - The record is deleted only after a removal that succeeded (`removal`); a removal that did
//!   not (the device still open elsewhere after every try) keeps it, and a later start's sweep
//!   removes the device once it is closed.
//! - From `hot_add` until the slot is LIVE, this thread has SIGINT, SIGTERM and SIGHUP blocked
//!   and the slot RESERVED, so a handler on any thread either waits for the device or sees it
//!   LIVE (`signals`, invariants 1, 4 and 5). Only a SIGKILL between `hot_add` and the first
//!   write of the record can leave an unrecorded device: a few system calls wide, and nothing
//!   can catch it.

use std::fs::File;
use std::os::fd::{AsRawFd, IntoRawFd};

use super::control::{self, Removal};
use super::identity::{Identity, Process};
use super::record::{self, Record, RECORD_DIR};
use super::removal;
use super::signals;
use crate::error::{LabError, LabResult};
use crate::interrupt::Blocked;
use crate::kernel::host::{self, ZRAM_CONTROL};

/// A device this process made and holds open, removed when the lease ends.
pub(super) struct Lease {
    id: u32,
    diskseq: u64,
    slot: usize,
    owner: Process,
    /// The open block device; `None` once the lease has ended.
    file: Option<File>,
}

impl Lease {
    /// Makes a device, records it, and runs `setup` on its id (size it, open it: the open block
    /// device and whatever else `setup` returns). On any failure the device is removed again.
    pub(super) fn create<T>(
        setup: impl FnOnce(u32) -> LabResult<(File, T)>,
    ) -> LabResult<(Lease, T)> {
        // Refusals before anything is made.
        let owner = Identity::this_process()?;
        let release = host::release();
        if !control::has_diskseq(&release) {
            return Err(LabError::runtime(format!(
                "no zram device made: kernel {release} gives disks no diskseq (Linux 5.15 and \
                 later do), so a device could not be recorded"
            )));
        }
        record::prepare_dir()?;
        signals::install(owner.process);
        // Invariant 1 of `signals`: blocked from before the slot is RESERVED until it is LIVE
        // or FREE again.
        let _blocked = Blocked::new();
        let slot = signals::reserve()
            .map_err(|why| LabError::runtime(format!("no zram device made: {why}")))?;
        let made = make(&owner, slot, setup);
        if made.is_err() {
            signals::release(slot);
        }
        made
    }

    /// The device id (`zram<id>`).
    pub(super) fn id(&self) -> u32 {
        self.id
    }

    /// The open block device.
    pub(super) fn file(&self) -> &File {
        // `create` opens it; only `end` takes it, and ends the lease.
        self.file.as_ref().expect("a live lease holds its device open")
    }

    /// Removes the device now; an error says why it could not be (its record stays).
    pub(super) fn remove(mut self) -> LabResult<()> {
        self.end()
    }

    fn end(&mut self) -> LabResult<()> {
        let Some(file) = self.file.take() else { return Ok(()) };
        // Blocked while this thread owns the removal (invariant 1 of `signals`).
        let _blocked = Blocked::new();
        if !signals::take(self.slot) {
            // A handler on another thread owns the descriptor and the removal (invariant 3):
            // leave the descriptor to it.
            let _ = file.into_raw_fd();
            return Err(LabError::runtime(format!(
                "zram{}: the process is ending on a signal, whose handler removes the device",
                self.id
            )));
        }
        // Closed before `hot_remove`: a device open here is busy.
        drop(file);
        let removal = removal::remove_recorded(self.id, self.diskseq, self.owner);
        signals::release(self.slot);
        if removal.done() {
            Ok(())
        } else {
            Err(not_removed(self.id, removal))
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Err(e) = self.end() {
            eprintln!("zsmalloc: warning: {e}");
        }
    }
}

fn not_removed(id: u32, removal: Removal) -> LabError {
    LabError::runtime(format!(
        "zram{id} could not be removed: {}; its record stays in {RECORD_DIR}, and the next \
         zsmalloc kernel command removes it once it is closed",
        removal.reason()
    ))
}

/// `hot_add`, record, `setup`, publish; `slot` is RESERVED by the caller, who gives it back on
/// an error.
fn make<T>(
    owner: &Identity,
    slot: usize,
    setup: impl FnOnce(u32) -> LabResult<(File, T)>,
) -> LabResult<(Lease, T)> {
    let id = control::hot_add()?;
    let diskseq = match control::read_diskseq(id) {
        Ok(seq) => seq,
        Err(e) => {
            let why = format!(
                "its diskseq is unreadable: {}",
                zsmalloc_core::text_input::io_reason(&std::io::Error::from_raw_os_error(e))
            );
            return Err(unrecorded(id, &why, control::hot_remove(id, None)));
        }
    };
    let rec = Record::new(id, owner, diskseq);
    if let Err(e) = rec.write() {
        return Err(unrecorded(id, &e.to_string(), control::hot_remove(id, Some(diskseq))));
    }
    // Recorded: from here the device is removed as every recorded device is.
    match setup(id) {
        Ok((file, t)) => {
            signals::publish(slot, id, diskseq, file.as_raw_fd());
            Ok((Lease { id, diskseq, slot, owner: owner.process, file: Some(file) }, t))
        }
        Err(e) => {
            let removal = removal::remove_recorded(id, diskseq, owner.process);
            if !removal.done() {
                eprintln!("zsmalloc: warning: {}", not_removed(id, removal));
            }
            Err(e)
        }
    }
}

/// A device made but not recorded: removed at once, or named for removal by hand.
fn unrecorded(id: u32, why: &str, removal: Removal) -> LabError {
    let mut msg = format!("no zram device made: zram{id} could not be recorded ({why})");
    if !removal.done() {
        msg += &format!(
            " and could not be removed: {}: remove it with 'echo {id} > \
             {ZRAM_CONTROL}/hot_remove' once it is closed",
            removal.reason()
        );
    }
    LabError::runtime(msg)
}
