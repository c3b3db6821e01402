//! A private zram device, safe by construction: the only way to get a [`Device`] is
//! [`Device::create`], which makes a new device through `hot_add`; every method acts on that
//! device only, and its end (normal, error, panic, SIGINT/SIGTERM/SIGHUP) removes it through
//! `hot_remove`. No other device (zram0 included) is ever opened, reset or removed, and nothing
//! is swapped on.
//!
//! Its lifetime is this module's alone, in files whose imports all point up this list:
//!
//! 1. `cpath` (paths built without allocating) and `identity` (who owns a device);
//! 2. `control`: `hot_add`, and `hot_remove` (its one writer, async-signal-safe);
//! 3. [`record`]: what is written about a device, and where;
//! 4. `removal`: a recorded device's removal, record included, the same on every path;
//! 5. `signals`: the device part of the SIGINT/SIGTERM/SIGHUP handler ([`crate::interrupt`])
//!    and its table of live devices;
//! 6. `lifetime` (a device from `hot_add` to `hot_remove`) and [`sweep`] (an ended run's device,
//!    at the next start);
//! 7. this file: the device's use (configuration, pages, `mm_stat`) over a `lifetime::Lease`.
//!
//! Pages are written and read one per call with `O_DIRECT` (no page cache between the program
//! and zram), each at its own page-aligned offset; a page is discarded with `BLKDISCARD`.

mod control;
mod cpath;
mod identity;
mod lifetime;
pub mod record;
mod removal;
mod signals;
pub mod sweep;

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use self::lifetime::Lease;
use super::mm_stat::MmStat;
use crate::error::{LabError, LabResult};

/// `BLKDISCARD`: `_IO(0x12, 119)` (linux/fs.h), not in the libc crate.
const BLKDISCARD: libc::c_ulong = 0x1277;

/// What to make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceSpec {
    /// One of the names in the device's `comp_algorithm`; `None`: the one zram selects.
    pub compressor: Option<String>,
    /// Written to `algorithm_params` as `algo=<compressor> level=<n>`.
    pub level: Option<i32>,
    /// Pages the device holds (its `disksize` in host pages).
    pub pages: u64,
    /// The host's page size.
    pub page_size: usize,
}

/// A zram device this process created (module documentation).
pub struct Device {
    lease: Lease,
    sys: PathBuf,
    page: usize,
    mm_stat: File,
    /// Two pages, one of them page-aligned: `O_DIRECT` needs an aligned buffer.
    buf: Vec<u8>,
    offered: Vec<String>,
    compressor: String,
}

/// What `configure` learnt, besides the open device.
struct Configured {
    mm_stat: File,
    offered: Vec<String>,
    compressor: String,
}

fn sys_dir(id: u32) -> PathBuf {
    PathBuf::from(format!("/sys/block/zram{id}"))
}

/// The `diskseq` of device `id`, `None` when there is no such device.
pub fn diskseq(id: u32) -> Option<u64> {
    control::read_diskseq(id).ok()
}

fn write_attr(path: &Path, value: &str) -> std::io::Result<()> {
    std::fs::write(path, value)
}

impl Device {
    /// Makes a new device with `spec`'s compressor, level and size. Refuses (usage error) a
    /// compressor the kernel does not offer, naming those it does, and a level where the kernel
    /// has no `algorithm_params`; refuses (runtime error) to make a device whose owner cannot
    /// be recorded. The device is removed again on any failure.
    pub fn create(spec: &DeviceSpec) -> LabResult<Device> {
        let (lease, c) = Lease::create(|id| configure(id, spec))?;
        Ok(Device {
            sys: sys_dir(lease.id()),
            lease,
            page: spec.page_size,
            mm_stat: c.mm_stat,
            buf: vec![0; 2 * spec.page_size],
            offered: c.offered,
            compressor: c.compressor,
        })
    }

    /// The device id (`zram<id>`).
    pub fn id(&self) -> u32 {
        self.lease.id()
    }

    /// The compressor the device uses.
    pub fn compressor(&self) -> &str {
        &self.compressor
    }

    /// The compressors the kernel's zram offers.
    pub fn offered(&self) -> &[String] {
        &self.offered
    }

    fn dev(&self) -> &File {
        self.lease.file()
    }

    fn aligned(&mut self) -> &mut [u8] {
        let off = self.buf.as_ptr().align_offset(self.page);
        &mut self.buf[off..off + self.page]
    }

    /// Writes `data` (one page) as page `index`.
    pub fn write_page(&mut self, index: u64, data: &[u8]) -> LabResult<()> {
        let page = self.page;
        self.aligned().copy_from_slice(&data[..page]);
        let off = self.buf.as_ptr().align_offset(page);
        self.dev().write_all_at(&self.buf[off..off + page], index * page as u64).map_err(|e| {
            LabError::runtime(format!(
                "zram{}: write of page {index}: {}",
                self.id(),
                zsmalloc_core::text_input::io_reason(&e)
            ))
        })
    }

    /// Reads page `index`.
    pub fn read_page(&mut self, index: u64) -> LabResult<&[u8]> {
        let page = self.page;
        let off = self.buf.as_ptr().align_offset(page);
        let dev = self.lease.file();
        dev.read_exact_at(&mut self.buf[off..off + page], index * page as u64).map_err(|e| {
            LabError::runtime(format!(
                "zram{}: read of page {index}: {}",
                self.id(),
                zsmalloc_core::text_input::io_reason(&e)
            ))
        })?;
        Ok(&self.buf[off..off + page])
    }

    /// Discards page `index`: zram frees what it stored for it.
    pub fn discard_page(&mut self, index: u64) -> LabResult<()> {
        let range: [u64; 2] = [index * self.page as u64, self.page as u64];
        // SAFETY: BLKDISCARD reads a `u64[2]` (start, length) from the pointer, which points to
        // `range`, alive for the call; the descriptor is this device's.
        let r = unsafe { libc::ioctl(self.dev().as_raw_fd(), BLKDISCARD, range.as_ptr()) };
        if r != 0 {
            let e = std::io::Error::last_os_error();
            return Err(LabError::runtime(format!(
                "zram{}: discard of page {index}: {}",
                self.id(),
                zsmalloc_core::text_input::io_reason(&e)
            )));
        }
        Ok(())
    }

    /// Compacts the device's pool (`zs_compact`).
    pub fn compact(&self) -> LabResult<()> {
        write_attr(&self.sys.join("compact"), "1").map_err(|e| {
            LabError::runtime(format!(
                "zram{}: compact: {}",
                self.id(),
                zsmalloc_core::text_input::io_reason(&e)
            ))
        })
    }

    /// Reads `mm_stat` now.
    pub fn mm_stat(&self) -> LabResult<MmStat> {
        let mut buf = [0u8; 256];
        let n = self.mm_stat.read_at(&mut buf, 0).map_err(|e| {
            LabError::runtime(format!(
                "zram{}: mm_stat: {}",
                self.id(),
                zsmalloc_core::text_input::io_reason(&e)
            ))
        })?;
        MmStat::parse(&String::from_utf8_lossy(&buf[..n]))
    }

    /// Removes the device now, reporting a failure (dropping removes it too, warning instead).
    /// A device that could not be removed (still open in another process after every try)
    /// keeps its record: the next start removes it once it is closed.
    pub fn remove(self) -> LabResult<()> {
        self.lease.remove()
    }
}

/// Chooses the compressor, sets the level and the size of device `id`, and opens it.
fn configure(id: u32, spec: &DeviceSpec) -> LabResult<(File, Configured)> {
    let sys = sys_dir(id);
    let mm_path = sys.join("mm_stat");
    let mm_stat = File::open(&mm_path).map_err(|e| LabError::io("read", &mm_path, &e))?;
    let alg = sys.join("comp_algorithm");
    let list = std::fs::read_to_string(&alg).map_err(|e| LabError::io("read", &alg, &e))?;
    let offered: Vec<String> = list
        .split_whitespace()
        .map(|s| s.trim_matches(|c| c == '[' || c == ']').to_string())
        .collect();
    let selected = list.split_whitespace().find(|s| s.starts_with('['));
    let compressor = match (&spec.compressor, selected) {
        (Some(c), _) => c.clone(),
        (None, Some(s)) => s.trim_matches(|c| c == '[' || c == ']').to_string(),
        (None, None) => offered.first().cloned().unwrap_or_default(),
    };
    if !offered.contains(&compressor) {
        return Err(LabError::usage(format!(
            "this kernel's zram offers {}; --compressor {compressor} is not among them",
            offered.join(", "),
        )));
    }
    write_attr(&alg, &compressor).map_err(|e| LabError::io("write", &alg, &e))?;
    if let Some(level) = spec.level {
        let params = sys.join("algorithm_params");
        if !params.exists() {
            return Err(LabError::usage(
                "this kernel's zram has no algorithm_params: it takes no --level",
            ));
        }
        write_attr(&params, &format!("algo={compressor} level={level}")).map_err(|e| {
            LabError::usage(format!(
                "zram refuses level {level} for {compressor}: {}",
                zsmalloc_core::text_input::io_reason(&e)
            ))
        })?;
    }
    let size = sys.join("disksize");
    write_attr(&size, &(spec.pages.max(1) * spec.page_size as u64).to_string()).map_err(|e| {
        LabError::runtime(format!(
            "cannot size zram{id}: {}",
            zsmalloc_core::text_input::io_reason(&e)
        ))
    })?;
    let dev = open_block_device(id, &sys)?;
    Ok((dev, Configured { mm_stat, offered, compressor }))
}

/// Opens `/dev/zram<id>` with `O_DIRECT`, after checking that the node is this device (its
/// device number is the one sysfs gives).
fn open_block_device(id: u32, sys: &Path) -> LabResult<File> {
    let path = PathBuf::from(format!("/dev/zram{id}"));
    let devno = std::fs::read_to_string(sys.join("dev")).unwrap_or_default();
    let start = Instant::now();
    let file = loop {
        match OpenOptions::new().read(true).write(true).custom_flags(libc::O_DIRECT).open(&path) {
            Ok(f) => break f,
            Err(e)
                if e.kind() == std::io::ErrorKind::NotFound
                    && start.elapsed() < Duration::from_secs(2) =>
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Err(LabError::io("open", &path, &e)),
        }
    };
    let rdev = file.metadata().map_err(|e| LabError::io("open", &path, &e))?.rdev();
    let (major, minor) = (libc::major(rdev), libc::minor(rdev));
    if devno.trim() != format!("{major}:{minor}") {
        return Err(LabError::runtime(format!(
            "{} is device {major}:{minor}, not zram{id} ({})",
            path.display(),
            devno.trim()
        )));
    }
    Ok(file)
}
