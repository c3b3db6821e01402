//! The temporary output files a signal unlinks, and the directories made for outputs it removes
//! when they are empty: a fixed table of lock-free slots, each holding one path, absolute, as
//! NUL-terminated bytes, written before the file or directory is created.
//!
//! A slot is FREE, CREATING (a thread is storing its path and creating the file), LIVE (the
//! file may exist) or UNLINKING (the handler took it). Invariants:
//!
//! 1. A CREATING slot belongs to a thread that has the three signals blocked
//!    ([`super::Blocked`]) until it stores LIVE or FREE: the handler never runs on top of a
//!    half-stored path on the same thread.
//! 2. A slot's path is written only while it is CREATING (taken from FREE by compare-and-swap)
//!    and read by the handler only after its own compare-and-swap of LIVE to UNLINKING: it
//!    never reads a path being written, and the owner never rewrites a path being read (a slot
//!    the handler took is never FREE again).
//! 3. [`register`] stores CREATING before it reads [`super::ending`]; the handler sets it
//!    before it scans (all SeqCst). So either `register` sees the process ending and creates
//!    nothing, or the scan sees the slot CREATING and waits for it (at most [`WAIT_ROUNDS`]
//!    pauses): no temporary is created behind an ending process's back.
//! 4. The owner removes or renames its file before it frees the slot: a handler that runs in
//!    between finds no file (unlink fails, harmlessly), never a file it was not told about.

use std::cell::UnsafeCell;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::AtomicU8;
use std::sync::atomic::Ordering::SeqCst;

use super::Blocked;

/// Temporary files one process may have open at once.
pub(crate) const SLOTS: usize = 64;
/// The longest path stored, its NUL included (Linux's PATH_MAX).
const CAP: usize = 4096;

const FREE: u8 = 0;
const CREATING: u8 = 1;
const LIVE: u8 = 2;
const UNLINKING: u8 = 3;

/// Pauses of 0.1 s the handler waits for files other threads are creating: an `open` takes far
/// less.
const WAIT_ROUNDS: u32 = 20;
const PAUSE_NS: libc::c_long = 100_000_000;

/// What a slot's path names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A temporary file: unlinked.
    File = 0,
    /// A directory made for outputs: removed if empty, after the files.
    Dir = 1,
}

struct Slot {
    state: AtomicU8,
    /// A [`Kind`], written and read as the path is.
    kind: AtomicU8,
    path: UnsafeCell<[u8; CAP]>,
}

// SAFETY: `path` is written only by the one thread holding the slot CREATING and read only by
// the one handler that moved it from LIVE to UNLINKING (invariant 2); the SeqCst stores and
// swaps of `state` order those accesses.
unsafe impl Sync for Slot {}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Slot = Slot {
    state: AtomicU8::new(FREE),
    kind: AtomicU8::new(Kind::File as u8),
    path: UnsafeCell::new([0; CAP]),
};
static TABLE: [Slot; SLOTS] = [EMPTY; SLOTS];

/// A registered temporary file: the handler unlinks it until [`Registered::release`].
#[derive(Debug)]
pub(crate) struct Registered {
    slot: usize,
}

/// Stores `path` for the handler, then creates the file or directory with `create`
/// (invariants 1 and 3).
pub(crate) fn register<T>(
    path: &Path,
    kind: Kind,
    create: impl FnOnce() -> io::Result<T>,
) -> io::Result<(Registered, T)> {
    super::install();
    let absolute = std::path::absolute(path)?;
    let bytes = absolute.as_os_str().as_bytes();
    if bytes.len() >= CAP || bytes.contains(&0) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "the path is too long"));
    }
    let _blocked = Blocked::new();
    let slot = (0..SLOTS)
        .find(|&i| TABLE[i].state.compare_exchange(FREE, CREATING, SeqCst, SeqCst).is_ok())
        .ok_or_else(|| io::Error::other("too many output files open at once"))?;
    // ORDERING: CREATING (the swap above) before this load (invariant 3).
    if super::ending() {
        TABLE[slot].state.store(FREE, SeqCst);
        return Err(io::Error::new(
            io::ErrorKind::Interrupted,
            "the process is ending on a signal",
        ));
    }
    // SAFETY: this thread holds the slot CREATING (invariant 2): no one else reads or writes
    // the path until it stores LIVE.
    let buf = unsafe { &mut *TABLE[slot].path.get() };
    buf[..bytes.len()].copy_from_slice(bytes);
    buf[bytes.len()] = 0;
    TABLE[slot].kind.store(kind as u8, SeqCst);
    match create() {
        Ok(file) => {
            TABLE[slot].state.store(LIVE, SeqCst);
            Ok((Registered { slot }, file))
        }
        Err(e) => {
            TABLE[slot].state.store(FREE, SeqCst);
            Err(e)
        }
    }
}

impl Registered {
    /// The file is gone (renamed or removed by the caller, invariant 4): the slot is free again.
    /// When a handler took it first, it stays taken: the process is ending.
    pub(crate) fn release(self) {
        let _ = TABLE[self.slot].state.compare_exchange(LIVE, FREE, SeqCst, SeqCst);
    }
}

/// Unlinks every registered file, after waiting for those other threads are creating
/// (invariant 3), then removes the registered directories left empty. Only the first handler,
/// after it has set the process ending.
pub(super) fn unlink_all() {
    for round in 0..=WAIT_ROUNDS {
        let mut waiting = false;
        for s in &TABLE {
            match s.state.compare_exchange(LIVE, UNLINKING, SeqCst, SeqCst) {
                // SAFETY: unlink is async-signal-safe; the path is NUL-terminated (`register`
                // wrote the NUL before LIVE) and no one writes it now (invariant 2).
                Ok(_) if s.kind.load(SeqCst) == Kind::File as u8 => unsafe {
                    libc::unlink(s.path.get().cast());
                },
                Err(CREATING) => waiting = true,
                _ => {}
            }
        }
        if !waiting || round == WAIT_ROUNDS {
            break;
        }
        super::pause(PAUSE_NS);
    }
    // Directories, the files gone: a parent empties once its child is removed, so again until
    // no removal succeeds (each success removes one: this ends). A directory still holding
    // something (a complete output, another's file) stays.
    loop {
        let mut removed = false;
        for s in &TABLE {
            if s.state.load(SeqCst) == UNLINKING && s.kind.load(SeqCst) == Kind::Dir as u8 {
                // SAFETY: rmdir is async-signal-safe; the slot is this handler's (it moved it
                // to UNLINKING above, invariant 2), its path NUL-terminated.
                removed |= unsafe { libc::rmdir(s.path.get().cast()) } == 0;
            }
        }
        if !removed {
            break;
        }
    }
}
