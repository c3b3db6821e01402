//! The whole machine at one moment: every zram device, the swap areas, zswap. Reading needs no
//! root (sysfs, procfs and cgroupfs are world-readable where it matters); anything unreadable
//! or gone is noted in the report, never an error.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

use super::read::Unreadable;
use super::zram::{self, SwapUse, ZramDevice};
use super::zswap::{self, Zswap};
use crate::kernel::host;

/// What `zsmalloc inspect` reports.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    /// When it was read, in seconds since the Unix epoch (for a series of reports).
    pub time_unix_s: f64,
    pub kernel: String,
    pub page_size: usize,
    /// `/sys/class/zram-control` exists (zram is loaded).
    pub zram_control: bool,
    pub zram: Vec<ZramDevice>,
    /// Every swap area of `/proc/swaps`.
    pub swaps: Vec<SwapUse>,
    /// Devices named but not there: a zram swap area without its device, a device gone while
    /// it was read.
    pub missing: Vec<String>,
    pub zswap: Zswap,
    /// Machine-wide files that could not be read (a device's own are in its `unreadable`).
    pub unreadable: Unreadable,
}

impl Machine {
    /// Reads everything now.
    pub fn read() -> Machine {
        let mut u = Unreadable::new();
        let page = host::page_size();
        let swaps = zram::swaps(&mut u);
        let mut missing = Vec::new();
        let mut devices = Vec::new();
        for id in zram::device_ids(&mut u) {
            match zram::read_device(id, page, &swaps) {
                Some(d) => devices.push(d),
                None => missing.push(format!("zram{id}: gone while it was read")),
            }
        }
        for s in &swaps {
            let Some(name) = s.path.strip_prefix("/dev/") else { continue };
            if name.starts_with("zram") && !devices.iter().any(|d| d.name == name) {
                missing.push(format!("{name}: swap area {} has no device in /sys/block", s.path));
            }
        }
        let time_unix_s = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| (d.as_secs_f64() * 1000.0).round() / 1000.0);
        Machine {
            time_unix_s,
            kernel: host::release(),
            page_size: page,
            zram_control: std::path::Path::new(host::ZRAM_CONTROL).exists(),
            zram: devices,
            swaps,
            missing,
            zswap: zswap::read_zswap(),
            unreadable: u,
        }
    }

    /// Device `name` (`zram3`), if listed.
    pub fn device(&self, name: &str) -> Option<&ZramDevice> {
        self.zram.iter().find(|d| d.name == name)
    }

    /// Every file that could not be read, the devices' included.
    pub fn all_unreadable(&self) -> Vec<&str> {
        let devices = self.zram.iter().flat_map(|d| d.unreadable.iter());
        self.unreadable
            .iter()
            .chain(devices)
            .chain(self.zswap.unreadable.iter())
            .map(String::as_str)
            .collect()
    }
}
