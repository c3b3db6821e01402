//! One zram device as its files describe it (`/sys/block/zramN`: `mm_stat`, `comp_algorithm`,
//! `disksize`, `io_stat`, `bd_stat`; `/proc/swaps`), and what its pool costs: the allocator's
//! overhead is `mem_used_total − compr_data_size`, the pool memory that holds no compressed byte.

use std::path::PathBuf;

use serde::Serialize;

use super::read::{self, Unreadable};
use crate::kernel::mm_stat::MmStat;

/// A swap area of `/proc/swaps`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SwapUse {
    /// `/dev/zram0`.
    pub path: String,
    pub priority: i64,
    pub size_bytes: u64,
    pub used_bytes: u64,
}

/// The swap areas of `/proc/swaps` (an unreadable file: none, noted).
pub fn swaps(unreadable: &mut Unreadable) -> Vec<SwapUse> {
    let Some(text) = read::text(std::path::Path::new("/proc/swaps"), unreadable) else {
        return Vec::new();
    };
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let n = |i: usize| f.get(i)?.parse::<i64>().ok();
            Some(SwapUse {
                path: f.first()?.to_string(),
                size_bytes: n(2)? as u64 * 1024,
                used_bytes: n(3)? as u64 * 1024,
                priority: n(4)?,
            })
        })
        .collect()
}

/// `io_stat`: failed reads and writes, I/O refused as invalid, slots freed by swap's notice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct IoStat {
    pub failed_reads: u64,
    pub failed_writes: u64,
    pub invalid_io: u64,
    pub notify_free: u64,
}

/// `bd_stat` (a device with a backing device): pages on it, read from it, written to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BdStat {
    pub bd_count: u64,
    pub bd_reads: u64,
    pub bd_writes: u64,
}

/// What the pool costs, from `mm_stat`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Figures {
    /// Pages stored (`orig_data_size / PAGE_SIZE`), same-filled ones included.
    pub stored_pages: u64,
    /// `orig_data_size`: the pages' bytes before compression.
    pub data_bytes: u64,
    /// `compr_data_size`: the compressed bytes in the pool.
    pub compressed_bytes: u64,
    /// `mem_used_total`: the memory the pool takes.
    pub pool_bytes: u64,
    /// `mem_used_total − compr_data_size`: pool memory holding no compressed byte.
    pub overhead_bytes: u64,
    /// The overhead as a share of the pool memory, in percent (none for an empty pool).
    pub overhead_pct: Option<f64>,
    /// `orig_data_size / mem_used_total`: bytes of data per byte of pool memory.
    pub ratio: Option<f64>,
    pub same_pages: u64,
    pub huge_pages: u64,
    pub pages_compacted: u64,
    /// `mem_used_max`: the most pool memory held.
    pub peak_bytes: u64,
}

impl Figures {
    pub fn of(m: &MmStat, page: usize) -> Figures {
        let pool = m.mem_used_total;
        let overhead = pool.saturating_sub(m.compr_data_size);
        let share = |a: u64, b: u64| (b > 0).then(|| a as f64 / b as f64);
        Figures {
            stored_pages: m.orig_data_size / page as u64,
            data_bytes: m.orig_data_size,
            compressed_bytes: m.compr_data_size,
            pool_bytes: pool,
            overhead_bytes: overhead,
            overhead_pct: share(overhead, pool).map(|s| (s * 1000.0).round() / 10.0),
            ratio: share(m.orig_data_size, pool).map(|r| (r * 100.0).round() / 100.0),
            same_pages: m.same_pages,
            huge_pages: m.huge_pages,
            pages_compacted: m.pages_compacted,
            peak_bytes: m.mem_used_max,
        }
    }
}

/// One device.
#[derive(Debug, Clone, Serialize)]
pub struct ZramDevice {
    /// `zram0`.
    pub name: String,
    pub id: u32,
    /// `disksize` above 0: the device has been set up.
    pub initialised: bool,
    pub disksize: Option<u64>,
    /// The compressor selected (the bracketed name of `comp_algorithm`).
    pub compressor: Option<String>,
    /// Every compressor `comp_algorithm` offers.
    pub compressors: Vec<String>,
    /// The device's swap area, when it is active swap.
    pub swap: Option<SwapUse>,
    pub mm_stat: Option<MmStat>,
    pub io_stat: Option<IoStat>,
    pub bd_stat: Option<BdStat>,
    /// From `mm_stat`, for an initialised device.
    pub figures: Option<Figures>,
    /// Files of the device that could not be read.
    pub unreadable: Unreadable,
}

/// The ids of the zram devices in `/sys/block`, in order.
pub fn device_ids(unreadable: &mut Unreadable) -> Vec<u32> {
    let mut ids: Vec<u32> = match std::fs::read_dir("/sys/block") {
        Ok(dir) => {
            dir.filter_map(|e| crate::zram_name::device_id(e.ok()?.file_name().to_str()?)).collect()
        }
        Err(e) => {
            unreadable.push(format!("/sys/block: {}", zsmalloc_core::text_input::io_reason(&e)));
            Vec::new()
        }
    };
    ids.sort_unstable();
    ids
}

/// `comp_algorithm`'s list and its bracketed (selected) name.
pub fn compressors(text: &str) -> (Vec<String>, Option<String>) {
    let strip = |s: &str| s.trim_matches(|c| c == '[' || c == ']').to_string();
    let all = text.split_whitespace().map(strip).collect();
    let selected = text.split_whitespace().find(|s| s.starts_with('[')).map(strip);
    (all, selected)
}

/// Device `id` as its files say; `swaps` from [`swaps`]. `None` when the device is gone.
pub fn read_device(id: u32, page: usize, swaps: &[SwapUse]) -> Option<ZramDevice> {
    let dir = PathBuf::from(format!("/sys/block/zram{id}"));
    if !dir.exists() {
        return None;
    }
    let mut u = Unreadable::new();
    let disksize = read::text(&dir.join("disksize"), &mut u).and_then(|t| t.trim().parse().ok());
    let (compressors, compressor) = read::text(&dir.join("comp_algorithm"), &mut u)
        .map_or((Vec::new(), None), |t| compressors(&t));
    let mm_stat = read::text(&dir.join("mm_stat"), &mut u).and_then(|t| match MmStat::parse(&t) {
        Ok(m) => Some(m),
        Err(e) => {
            u.push(format!("{}: {e}", dir.join("mm_stat").display()));
            None
        }
    });
    let io_stat = read::text(&dir.join("io_stat"), &mut u)
        .and_then(|t| read::numbers(&t))
        .filter(|n| n.len() >= 4)
        .map(|n| IoStat {
            failed_reads: n[0],
            failed_writes: n[1],
            invalid_io: n[2],
            notify_free: n[3],
        });
    let bd_stat = read::optional(&dir.join("bd_stat"), &mut u)
        .and_then(|t| read::numbers(&t))
        .filter(|n| n.len() >= 3)
        .map(|n| BdStat { bd_count: n[0], bd_reads: n[1], bd_writes: n[2] });
    let initialised = disksize.is_some_and(|d: u64| d > 0);
    let figures = mm_stat.filter(|_| initialised).map(|m| Figures::of(&m, page));
    let name = format!("zram{id}");
    let swap = swaps.iter().find(|s| s.path == format!("/dev/{name}")).cloned();
    Some(ZramDevice {
        name,
        id,
        initialised,
        disksize,
        compressor,
        compressors,
        swap,
        mm_stat,
        io_stat,
        bd_stat,
        figures,
        unreadable: u,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_overhead_is_pool_memory_beyond_the_compressed_bytes() {
        let m = MmStat::parse("40960 3000 8192 0 12288 2 1 0 0").unwrap();
        let f = Figures::of(&m, 4096);
        assert_eq!((f.stored_pages, f.overhead_bytes, f.peak_bytes), (10, 5192, 12288));
        assert_eq!(f.overhead_pct, Some(63.4));
        assert_eq!(f.ratio, Some(5.0));
        let empty = Figures::of(&MmStat::default(), 4096);
        assert_eq!((empty.overhead_pct, empty.ratio), (None, None));
    }

    #[test]
    fn the_selected_compressor_is_the_bracketed_one() {
        let (all, sel) = compressors("lzo [lz4] zstd\n");
        assert_eq!(all, ["lzo", "lz4", "zstd"]);
        assert_eq!(sel.as_deref(), Some("lz4"));
    }
}
