//! SIGINT, SIGTERM and SIGHUP remove the process's live devices before it ends: this is the
//! device part of the one handler every command shares ([`crate::interrupt`], which owns the
//! `sigaction`, cleans up its other outputs first, and then calls [`remove_on_signal`]).
//!
//! The handler knows the devices through a fixed table of lock-free slots, and makes only
//! async-signal-safe calls: for each live device it moves the device's descriptor out of the way
//! (`dup2` of `/dev/null` over it: the number stays taken, so no later `open` reuses it under
//! another thread's feet), then removes the device as every path does
//! ([`removal::remove_recorded`]: the record is deleted only if the device is gone). Then
//! [`crate::interrupt`] re-raises the signal with its default action, so the process ends as it
//! would have (a shell sees "interrupted"). A device still open in another process after every
//! try keeps its record, and the handler says so on stderr: a later start removes it once it is
//! closed. A SIGKILL cannot be caught: the record covers it too. In a child this process forked
//! and that has not yet run `exec`, the handler touches nothing: the table there is its parent's.
//!
//! A slot is FREE, RESERVED (a thread is making a device for it), LIVE (a device with its record
//! written, open as `fd`) or REMOVING (one party is removing it). Invariants:
//!
//! 1. RESERVED and REMOVING slots belong to a thread that has the three signals blocked
//!    ([`Blocked`](crate::interrupt::Blocked)) until it stores FREE or LIVE: the handler never
//!    runs on top of a half-made or half-removed device on the same thread.
//! 2. A slot's `id`, `diskseq` and `fd` are written only while it is RESERVED, before the
//!    SeqCst store of LIVE; the handler reads them only after its own SeqCst change of LIVE:
//!    it never sees a half-registered slot.
//! 3. LIVE becomes REMOVING by compare-and-swap, so exactly one of the handler and the device's
//!    normal end owns the removal, the descriptor included; the other touches neither.
//! 4. The handler, on another thread than the one holding a RESERVED or REMOVING slot, waits
//!    for that slot to settle (at most [`WAIT_ROUNDS`] pauses) and then acts on what it finds:
//!    a device made meanwhile is removed too; one still held when the wait ends keeps its
//!    record for the next start.
//! 5. The first handler sets DYING before it scans; [`reserve`] stores RESERVED before it reads
//!    DYING (all SeqCst). So either `reserve` sees DYING and makes nothing, or the scan sees the
//!    slot RESERVED and waits for it: no device is made behind an ending process's back.

use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicU8};
use std::sync::Once;

use super::control::{self, PAUSE_NS};
use super::cpath::CPath;
use super::identity::Process;
use super::removal;

/// Devices one process may hold at once.
const SLOTS: usize = 16;

const FREE: u8 = 0;
const RESERVED: u8 = 1;
const LIVE: u8 = 2;
const REMOVING: u8 = 3;

/// Pauses ([`PAUSE_NS`] each: three seconds) the handler waits for slots other threads hold
/// RESERVED or REMOVING; longer than a normal removal's tries.
const WAIT_ROUNDS: u32 = 30;

struct Slot {
    state: AtomicU8,
    id: AtomicU32,
    diskseq: AtomicU64,
    /// The open block device, or -1.
    fd: AtomicI32,
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Slot = Slot {
    state: AtomicU8::new(FREE),
    id: AtomicU32::new(0),
    diskseq: AtomicU64::new(0),
    fd: AtomicI32::new(-1),
};
static TABLE: [Slot; SLOTS] = [EMPTY; SLOTS];
/// Set by the handler before it scans (invariant 5).
static DYING: AtomicBool = AtomicBool::new(false);
/// The process that owns the devices (their records name it), for the handler's copies.
static OWNER_PID: AtomicU32 = AtomicU32::new(0);
static OWNER_START: AtomicU64 = AtomicU64::new(0);
static INSTALL: Once = Once::new();

/// Names `owner`, this process, as the devices' owner and installs the shared handler (once;
/// before any slot is taken).
pub(super) fn install(owner: Process) {
    INSTALL.call_once(|| {
        OWNER_PID.store(owner.pid, SeqCst);
        OWNER_START.store(owner.start, SeqCst);
    });
    crate::interrupt::on_signal_also(remove_on_signal);
}

/// Takes a FREE slot RESERVED for a device about to be made. Refused when every slot is taken,
/// or when the process is ending (invariant 5). The caller holds a
/// [`Blocked`](crate::interrupt::Blocked) until it calls [`publish`] or [`release`] (invariant 1).
pub(super) fn reserve() -> Result<usize, &'static str> {
    let slot = (0..SLOTS)
        .find(|&i| TABLE[i].state.compare_exchange(FREE, RESERVED, SeqCst, SeqCst).is_ok())
        .ok_or("too many zram devices in one process")?;
    // ORDERING: RESERVED (the swap above) before this load of DYING (invariant 5).
    if DYING.load(SeqCst) {
        TABLE[slot].state.store(FREE, SeqCst);
        return Err("the process is ending on a signal");
    }
    Ok(slot)
}

/// Makes `slot`, RESERVED by the caller, LIVE: device `id` (`diskseq`), recorded, open as `fd`.
pub(super) fn publish(slot: usize, id: u32, diskseq: u64, fd: i32) {
    let s = &TABLE[slot];
    debug_assert_eq!(s.state.load(SeqCst), RESERVED);
    s.id.store(id, SeqCst);
    s.diskseq.store(diskseq, SeqCst);
    s.fd.store(fd, SeqCst);
    // ORDERING: the fields before LIVE (invariant 2).
    s.state.store(LIVE, SeqCst);
}

/// Takes LIVE `slot` to REMOVING for the device's normal end: `true` when the caller now owns
/// the removal and the descriptor; `false` when a handler took it first (invariant 3: the
/// caller must then neither close the descriptor nor remove the device).
pub(super) fn take(slot: usize) -> bool {
    let s = &TABLE[slot];
    if s.state.compare_exchange(LIVE, REMOVING, SeqCst, SeqCst).is_err() {
        return false;
    }
    s.fd.store(-1, SeqCst);
    true
}

/// Gives back `slot`, RESERVED or REMOVING by the caller.
pub(super) fn release(slot: usize) {
    let s = &TABLE[slot];
    s.fd.store(-1, SeqCst);
    s.state.store(FREE, SeqCst);
}

/// Removes the device of `s`, which this handler has taken from LIVE (invariant 3).
fn remove_slot(s: &Slot, owner: Process) {
    let fd = s.fd.swap(-1, SeqCst);
    if fd >= 0 {
        // SAFETY: open, dup2 and close are async-signal-safe; the path is a NUL-terminated
        // static. `fd` is this process's open block device (invariant 2), which no other party
        // closes (invariant 3); dup2 makes the number /dev/null instead of closing it, so a
        // thread still using it reaches /dev/null, never a file opened later under that number.
        unsafe {
            let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
            if null >= 0 {
                libc::dup2(null, fd);
                libc::close(null);
            } else {
                libc::close(fd);
            }
        }
    }
    let id = s.id.load(SeqCst);
    if !removal::remove_recorded(id, s.diskseq.load(SeqCst), owner).done() {
        let msg = CPath::new()
            .push(b"zsmalloc: warning: zram")
            .num(u64::from(id))
            .push(b" could not be removed; its record stays for the next start\n");
        let text = msg.as_bytes();
        // SAFETY: write is async-signal-safe; it reads `text.len()` bytes of `msg`, on this
        // stack for the call.
        unsafe { libc::write(libc::STDERR_FILENO, text.as_ptr().cast(), text.len()) };
    }
}

/// Removes every live device: the device part of [`crate::interrupt`]'s handler, run once, by
/// the first handler, on the thread that took the signal. Async-signal-safe.
fn remove_on_signal() {
    // SAFETY: getpid is async-signal-safe and has no preconditions.
    let pid = unsafe { libc::getpid() } as u32;
    // No device made yet (or a forked child's copy of the table): nothing of this process's.
    if pid != OWNER_PID.load(SeqCst) || DYING.swap(true, SeqCst) {
        return;
    }
    remove_all();
}

/// Removes every live device, after waiting for those other threads are making or removing
/// (invariant 4). Only once, after DYING is set (invariant 5).
fn remove_all() {
    let owner = Process { pid: OWNER_PID.load(SeqCst), start: OWNER_START.load(SeqCst) };
    for round in 0..=WAIT_ROUNDS {
        let mut waiting = false;
        for s in &TABLE {
            match s.state.compare_exchange(LIVE, REMOVING, SeqCst, SeqCst) {
                Ok(_) => {
                    remove_slot(s, owner);
                    s.state.store(FREE, SeqCst);
                }
                Err(RESERVED | REMOVING) => waiting = true,
                Err(_) => {}
            }
        }
        if !waiting || round == WAIT_ROUNDS {
            break;
        }
        control::pause(PAUSE_NS);
    }
}
