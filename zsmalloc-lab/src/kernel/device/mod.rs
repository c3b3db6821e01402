//! A private zram device, safe by construction: the only way to get a [`Device`] is
//! [`Device::create`], which makes a new device through `hot_add`; every method acts on that
//! device only, and dropping it (normal end, error, panic) removes it through `hot_remove`.
//! SIGINT/SIGTERM/SIGHUP remove it too (`signals`); a SIGKILL leaves a record under
//! `/run` that the next start acts on ([`leftover`]). No other device (zram0 included)
//! is ever opened, reset or removed, and nothing is swapped on.
//!
//! Pages are written and read one per call with `O_DIRECT` (no page cache between the program
//! and zram), each at its own page-aligned offset; a page is discarded with `BLKDISCARD`.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use self::leftover::Record;
use crate::error::{LabError, LabResult};
use crate::kernel::host::ZRAM_CONTROL;
use crate::kernel::mm_stat::MmStat;

pub mod leftover;
mod signals;

/// The compressor flags of every kernel subcommand that fills a device.
#[derive(clap::Args, Debug, Clone)]
pub struct CompressorArgs {
    /// A compressor of the kernel's zram (its comp_algorithm) [default: the one zram selects]
    #[arg(long, value_name = "ALG")]
    pub compressor: Option<String>,
    /// Compression level, through algorithm_params
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub level: Option<i32>,
}

/// `BLKDISCARD`: `_IO(0x12, 119)` (linux/fs.h), not in the libc crate.
const BLKDISCARD: libc::c_ulong = 0x1277;

/// How long `hot_remove` is retried while the device is busy (udev may probe a new disk).
const BUSY_WAIT: Duration = Duration::from_secs(5);

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
    id: u32,
    slot: usize,
    sys: PathBuf,
    page: usize,
    dev: Option<File>,
    mm_stat: File,
    /// Two pages, one of them page-aligned: `O_DIRECT` needs an aligned buffer.
    buf: Vec<u8>,
    offered: Vec<String>,
    compressor: String,
    removed: bool,
}

fn sys_dir(id: u32) -> PathBuf {
    PathBuf::from(format!("/sys/block/zram{id}"))
}

/// The `diskseq` of device `id`, `None` when there is no such device.
pub fn diskseq(id: u32) -> Option<u64> {
    std::fs::read_to_string(sys_dir(id).join("diskseq")).ok()?.trim().parse().ok()
}

/// Removes device `id` through `hot_remove`, waiting while it is busy. Only for ids this
/// program created (a [`Device`], or a record whose identity was checked).
pub(super) fn hot_remove(id: u32) -> LabResult<()> {
    let ctl = Path::new(ZRAM_CONTROL).join("hot_remove");
    let start = Instant::now();
    loop {
        match std::fs::write(&ctl, id.to_string()) {
            Ok(()) => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && start.elapsed() < BUSY_WAIT => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) if e.raw_os_error() == Some(libc::ENODEV) => return Ok(()),
            Err(e) => {
                return Err(LabError::runtime(format!("cannot remove zram{id}: {e}")));
            }
        }
    }
}

fn write_attr(path: &Path, value: &str) -> std::io::Result<()> {
    std::fs::write(path, value)
}

impl Device {
    /// Makes a new device with `spec`'s compressor, level and size. Refuses (usage error) a
    /// compressor the kernel does not offer, naming those it does, and a level where the kernel
    /// has no `algorithm_params`. The device is removed again on any failure.
    pub fn create(spec: &DeviceSpec) -> LabResult<Device> {
        let (id, slot) = {
            // No signal between hot_add and the slot: the handler would not know the device.
            let _blocked = signals::Blocked::new();
            let add = Path::new(ZRAM_CONTROL).join("hot_add");
            let text = std::fs::read_to_string(&add).map_err(|e| LabError::io("read", &add, &e))?;
            let id: u32 = text.trim().parse().map_err(|_| {
                LabError::runtime(format!("{}: unexpected answer '{}'", add.display(), text.trim()))
            })?;
            let undo = |e: LabError| {
                let _ = hot_remove(id);
                e
            };
            let seq = diskseq(id)
                .ok_or_else(|| undo(LabError::runtime(format!("zram{id} has no diskseq"))))?;
            let slot = signals::register(id)
                .ok_or_else(|| undo(LabError::runtime("too many zram devices in one process")))?;
            if let Err(e) = Record::mine(id, seq).write() {
                signals::unregister(slot);
                return Err(undo(e));
            }
            (id, slot)
        };
        let sys = sys_dir(id);
        let mm_path = sys.join("mm_stat");
        let mm_stat = match File::open(&mm_path) {
            Ok(f) => f,
            Err(e) => {
                signals::unregister(slot);
                let _ = hot_remove(id);
                leftover::forget(id);
                return Err(LabError::io("read", &mm_path, &e));
            }
        };
        let mut d = Device {
            id,
            slot,
            sys,
            page: spec.page_size,
            dev: None,
            mm_stat,
            buf: vec![0; 2 * spec.page_size],
            offered: Vec::new(),
            compressor: String::new(),
            removed: false,
        };
        d.configure(spec)?;
        Ok(d)
    }

    fn configure(&mut self, spec: &DeviceSpec) -> LabResult<()> {
        let alg = self.sys.join("comp_algorithm");
        let list = std::fs::read_to_string(&alg).map_err(|e| LabError::io("read", &alg, &e))?;
        self.offered = list
            .split_whitespace()
            .map(|s| s.trim_matches(|c| c == '[' || c == ']').to_string())
            .collect();
        let selected = list.split_whitespace().find(|s| s.starts_with('['));
        self.compressor = match (&spec.compressor, selected) {
            (Some(c), _) => c.clone(),
            (None, Some(s)) => s.trim_matches(|c| c == '[' || c == ']').to_string(),
            (None, None) => self.offered.first().cloned().unwrap_or_default(),
        };
        if !self.offered.contains(&self.compressor) {
            return Err(LabError::usage(format!(
                "this kernel's zram offers {}; --compressor {} is not among them",
                self.offered.join(", "),
                self.compressor
            )));
        }
        write_attr(&alg, &self.compressor).map_err(|e| LabError::io("write", &alg, &e))?;
        if let Some(level) = spec.level {
            let params = self.sys.join("algorithm_params");
            if !params.exists() {
                return Err(LabError::usage(
                    "this kernel's zram has no algorithm_params: it takes no --level",
                ));
            }
            write_attr(&params, &format!("algo={} level={level}", self.compressor)).map_err(
                |e| {
                    LabError::usage(format!(
                        "zram refuses level {level} for {}: {e}",
                        self.compressor
                    ))
                },
            )?;
        }
        let size = self.sys.join("disksize");
        write_attr(&size, &(spec.pages.max(1) * spec.page_size as u64).to_string())
            .map_err(|e| LabError::runtime(format!("cannot size zram{}: {e}", self.id)))?;
        let dev = self.open_block_device()?;
        signals::set_fd(self.slot, dev.as_raw_fd());
        self.dev = Some(dev);
        Ok(())
    }

    /// Opens `/dev/zram<id>` with `O_DIRECT`, after checking that the node is this device
    /// (its device number is the one sysfs gives).
    fn open_block_device(&self) -> LabResult<File> {
        let path = PathBuf::from(format!("/dev/zram{}", self.id));
        let devno = std::fs::read_to_string(self.sys.join("dev")).unwrap_or_default();
        let start = Instant::now();
        let file = loop {
            match OpenOptions::new().read(true).write(true).custom_flags(libc::O_DIRECT).open(&path)
            {
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
                "{} is device {major}:{minor}, not zram{} ({})",
                path.display(),
                self.id,
                devno.trim()
            )));
        }
        Ok(file)
    }

    /// The device id (`zram<id>`).
    pub fn id(&self) -> u32 {
        self.id
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
        // `configure` opens it before `create` returns a device.
        self.dev.as_ref().expect("a created device is open")
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
        self.dev()
            .write_all_at(&self.buf[off..off + page], index * page as u64)
            .map_err(|e| LabError::runtime(format!("zram{}: write of page {index}: {e}", self.id)))
    }

    /// Reads page `index`.
    pub fn read_page(&mut self, index: u64) -> LabResult<&[u8]> {
        let page = self.page;
        let off = self.buf.as_ptr().align_offset(page);
        let dev = self.dev.as_ref().expect("a created device is open");
        dev.read_exact_at(&mut self.buf[off..off + page], index * page as u64).map_err(|e| {
            LabError::runtime(format!("zram{}: read of page {index}: {e}", self.id))
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
                "zram{}: discard of page {index}: {e}",
                self.id
            )));
        }
        Ok(())
    }

    /// Compacts the device's pool (`zs_compact`).
    pub fn compact(&self) -> LabResult<()> {
        write_attr(&self.sys.join("compact"), "1")
            .map_err(|e| LabError::runtime(format!("zram{}: compact: {e}", self.id)))
    }

    /// Reads `mm_stat` now.
    pub fn mm_stat(&self) -> LabResult<MmStat> {
        let mut buf = [0u8; 256];
        let n = self
            .mm_stat
            .read_at(&mut buf, 0)
            .map_err(|e| LabError::runtime(format!("zram{}: mm_stat: {e}", self.id)))?;
        MmStat::parse(&String::from_utf8_lossy(&buf[..n]))
    }

    /// Removes the device now, reporting a failure (dropping removes it too, warning instead).
    pub fn remove(mut self) -> LabResult<()> {
        self.remove_now()
    }

    fn remove_now(&mut self) -> LabResult<()> {
        if self.removed {
            return Ok(());
        }
        self.removed = true;
        // Out of the handler's reach first: from here the normal path owns the removal.
        signals::unregister(self.slot);
        self.dev = None;
        hot_remove(self.id)?;
        leftover::forget(self.id);
        Ok(())
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        if let Err(e) = self.remove_now() {
            eprintln!("zsmalloc: warning: {e} (its record under /run stays for the next start)");
        }
    }
}
