//! zram's control files: `hot_add` makes a device, [`hot_remove`] — the program's one writer of
//! `hot_remove` — removes one. [`hot_remove`] and [`read_diskseq`] are async-signal-safe (only
//! `open`, `read`, `write`, `close` and `nanosleep`, on stack buffers), so the signal handler,
//! the normal end of a device and the sweep of an ended run's device all remove through them.

use std::path::Path;

use super::cpath::{self, CPath};
use crate::error::{LabError, LabResult};
use crate::kernel::host::ZRAM_CONTROL;

/// `hot_remove` as a C string (a unit test checks it is under [`ZRAM_CONTROL`]).
const HOT_REMOVE: &std::ffi::CStr = c"/sys/class/zram-control/hot_remove";

/// Tries of `hot_remove` while the device is busy: another process has it open (udev's probe
/// of a new disk does, for a moment). Tries are [`PAUSE_NS`] apart: two seconds in all.
pub(super) const TRIES: u32 = 20;
/// The pause between two tries, in nanoseconds.
pub(super) const PAUSE_NS: i64 = 100_000_000;

/// How a removal ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removal {
    /// `hot_remove` took the device.
    Removed,
    /// There is no such device, or the id names another device now (its `diskseq` differs):
    /// nothing was written.
    Gone,
    /// Still open elsewhere after every try.
    Busy,
    /// Another error (its errno).
    Failed(i32),
}

impl Removal {
    /// Whether the device of the record is gone (so its record may go).
    pub fn done(self) -> bool {
        matches!(self, Removal::Removed | Removal::Gone)
    }

    /// Why the device could not be removed, for a message.
    pub fn reason(self) -> String {
        match self {
            Removal::Removed | Removal::Gone => "removed".into(),
            Removal::Busy => format!(
                "it is open in another process (busy after {TRIES} tries over {} s)",
                u64::from(TRIES) * PAUSE_NS as u64 / 1_000_000_000
            ),
            Removal::Failed(e) => {
                zsmalloc_core::text_input::io_reason(&std::io::Error::from_raw_os_error(e))
            }
        }
    }
}

/// Makes a new device; returns its id.
pub(super) fn hot_add() -> LabResult<u32> {
    let add = Path::new(ZRAM_CONTROL).join("hot_add");
    let text = std::fs::read_to_string(&add).map_err(|e| LabError::io("read", &add, &e))?;
    text.trim().parse().map_err(|_| {
        LabError::runtime(format!("{}: unexpected answer '{}'", add.display(), text.trim()))
    })
}

/// Whether a kernel `release` gives block devices a `diskseq` (Linux 5.15 and later); a release
/// that does not parse is given the benefit of the doubt (the device's own file decides).
pub(super) fn has_diskseq(release: &str) -> bool {
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    let (Some(Ok(major)), Some(Ok(minor))) =
        (parts.next().map(str::parse::<u32>), parts.next().map(str::parse::<u32>))
    else {
        return true;
    };
    (major, minor) >= (5, 15)
}

fn diskseq_path(id: u32) -> CPath {
    CPath::new().push(b"/sys/block/zram").num(u64::from(id)).push(b"/diskseq")
}

/// The last errno of this thread.
fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

/// Device `id`'s `diskseq` (the block layer's number of the disk, never reused within a boot),
/// or the errno: `ENOENT` when there is no such device. Async-signal-safe.
pub(super) fn read_diskseq(id: u32) -> Result<u64, i32> {
    let path = diskseq_path(id);
    let Some(p) = path.as_ptr() else { return Err(libc::ENAMETOOLONG) };
    let mut buf = [0u8; 32];
    // SAFETY: `p` is a NUL-terminated path on this stack; `read` writes at most `buf.len()` bytes
    // into `buf`, alive for the call; the descriptor is closed on every path. open, read and
    // close are async-signal-safe.
    let n = unsafe {
        let fd = libc::open(p, libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(errno());
        }
        let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
        let e = errno();
        libc::close(fd);
        if n < 0 {
            return Err(e);
        }
        n as usize
    };
    cpath::parse_decimal(&buf[..n]).ok_or(libc::EINVAL)
}

/// Writes `id` to `hot_remove` once; the errno on failure. Async-signal-safe.
fn write_hot_remove(id: u32) -> Result<(), i32> {
    let mut digits = [0u8; 20];
    let len = cpath::decimal(u64::from(id), &mut digits);
    // SAFETY: HOT_REMOVE is a NUL-terminated static; `write` reads `len` bytes of `digits`, alive
    // for the call; the descriptor is closed on every path. open, write and close are
    // async-signal-safe.
    unsafe {
        let fd = libc::open(HOT_REMOVE.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(errno());
        }
        let n = libc::write(fd, digits.as_ptr().cast(), len);
        let e = errno();
        libc::close(fd);
        match n {
            n if n == len as isize => Ok(()),
            n if n < 0 => Err(e),
            _ => Err(libc::EIO),
        }
    }
}

/// Sleeps `ns` nanoseconds, through interruptions. Async-signal-safe.
pub(super) fn pause(ns: i64) {
    let mut want = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    want.tv_sec = (ns / 1_000_000_000) as libc::time_t;
    want.tv_nsec = (ns % 1_000_000_000) as _;
    let mut left = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: both pointers are to timespecs on this stack, alive for the call; nanosleep is
    // async-signal-safe.
    while unsafe { libc::nanosleep(&want, &mut left) } != 0 && errno() == libc::EINTR {
        want = left;
    }
}

/// Removes device `id` through `hot_remove`, trying [`TRIES`] times [`PAUSE_NS`] apart while it
/// is busy. With `diskseq`, each try first checks that the id still names that device, and
/// writes nothing when it does not ([`Removal::Gone`]); without it (only for a device this
/// process has just made and not recorded yet) the id alone decides. Async-signal-safe.
///
/// Only for devices this program made: a `lifetime::Lease`'s, or a record's whose owner is gone.
pub(super) fn hot_remove(id: u32, diskseq: Option<u64>) -> Removal {
    for attempt in 0..TRIES {
        if attempt > 0 {
            pause(PAUSE_NS);
        }
        if let Some(seq) = diskseq {
            match read_diskseq(id) {
                Ok(now) if now == seq => {}
                Ok(_) | Err(libc::ENOENT) => return Removal::Gone,
                Err(e) => return Removal::Failed(e),
            }
        }
        // THE ONE RACE LEFT: between the `diskseq` read above and the write below, another
        // program could remove device `id` and `hot_add` a new one, which gets the same id (zram
        // gives the lowest free one); the write would then remove that program's device. No
        // interface closes it: `hot_remove` takes an id, not a disk. The window is a few system
        // calls wide, and needs a second program that removes a device it did not make. Written
        // down in docs/LAB.md ("The real kernel").
        match write_hot_remove(id) {
            Ok(()) => return Removal::Removed,
            Err(libc::EBUSY) => {}
            Err(libc::ENODEV) => return Removal::Gone,
            Err(e) => return Removal::Failed(e),
        }
    }
    Removal::Busy
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_control_file_is_under_zram_control() {
        let p = HOT_REMOVE.to_str().unwrap();
        assert_eq!(p, format!("{ZRAM_CONTROL}/hot_remove"));
        assert_eq!(diskseq_path(12).as_bytes(), b"/sys/block/zram12/diskseq");
    }

    #[test]
    fn diskseq_came_with_linux_5_15() {
        assert!(has_diskseq("6.18.0-1-amd64"));
        assert!(has_diskseq("5.15.0"));
        assert!(!has_diskseq("5.14.21-150500.55-default"));
        assert!(!has_diskseq("4.19.0"));
        assert!(has_diskseq("unknown"), "the device's file decides");
    }

    #[test]
    fn a_missing_device_has_no_diskseq() {
        // No zram has this id (ids are small).
        assert_eq!(read_diskseq(u32::MAX - 3), Err(libc::ENOENT));
    }

    #[test]
    fn removals_say_whether_the_record_may_go() {
        assert!(Removal::Removed.done() && Removal::Gone.done());
        assert!(!Removal::Busy.done() && !Removal::Failed(libc::EIO).done());
        assert!(Removal::Busy.reason().contains("2 s"), "{}", Removal::Busy.reason());
    }
}
