//! `inspect --snapshot zramN`: a device's stored pages, read back (`O_DIRECT`, read-only), each
//! stored again by a private device with the same compressor to get the kernel's exact length
//! (the delta of the private device's `compr_data_size`, as `kernel check` reads it), then
//! discarded there at once: the private device never holds more than one page.
//!
//! Which slots hold data: with debugfs mounted, `/sys/kernel/debug/zram/zramN/block_state`
//! lists the allocated slots and their flags (`s` same-filled, `w` written back, `r`
//! recompressed); only those are read.
//! Without it every slot is read, and a page that reads back as zeros is not stored again: it
//! is either a slot never written or a zero page zram keeps as same-filled — neither takes pool
//! memory, so the pool is the same either way (the report says how many there were).
//!
//! The inspected device is opened read-only and never written, reset or compacted; reading
//! marks its slots accessed (idle-age writeback and recompression then skip them).

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::PathBuf;

use serde::Serialize;
use zsmalloc_core::text_input::{Limits, TextLines};

use crate::error::{LabError, LabResult};
use crate::kernel::device::{Device, DeviceSpec};
use crate::kernel::mm_stat::MmStat;
use crate::kernel::steps::{classify, Stored};

/// A stored page of the inspected device, as the kernel stores it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    pub slot: u64,
    pub stored: Stored,
    /// The `zs_malloc` length (the page size for a huge page; 0 same-filled).
    pub len: u32,
}

/// How the slots to read were found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SlotSource {
    /// debugfs `block_state`: only allocated slots read.
    BlockState,
    /// Every slot read; zero pages not stored again (unused or same-filled).
    EverySlot,
}

/// What reading the device gave.
#[derive(Debug, Clone)]
pub struct Reading {
    pub slots: u64,
    pub slots_read: u64,
    pub source: SlotSource,
    /// Pages read back as zeros (every-slot reading): unused slots or zero pages kept
    /// same-filled.
    pub zero_pages: u64,
    /// Slots `block_state` flags same-filled (not read) or written back to the backing device
    /// (not in the pool, not read).
    pub flagged_same: u64,
    pub written_back: u64,
    /// Slots `block_state` flags recompressed with a secondary algorithm (their live length
    /// is not the main compressor's).
    pub recompressed: u64,
    /// Stored pages in slot order.
    pub pages: Vec<Page>,
    /// Every slot was read (no `--max-pages` cut).
    pub complete: bool,
    /// The inspected device's `mm_stat` before and after the reading.
    pub before: MmStat,
    pub after: MmStat,
}

/// `zram3`, `/dev/zram3` or `3` as a device id: the number as the kernel writes it (digits,
/// no sign, no leading zero), so that no other spelling reaches a device, zram0 least of all.
pub fn device_id(name: &str) -> LabResult<u32> {
    crate::zram_name::user_device_id(name).ok_or_else(|| {
        LabError::usage(format!(
            "--snapshot '{name}': a zram device is expected: zramN, /dev/zramN or N, N written \
             without sign or leading zeros (zram1)"
        ))
    })
}

/// The allocated slots of `block_state` with their flags (`s` same-filled, `w` written back).
pub fn parse_block_state(text: &str) -> Vec<(u64, String)> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let slot = f.next()?.parse().ok()?;
            let flags = f.nth(1).unwrap_or("").to_string();
            Some((slot, flags))
        })
        .collect()
}

/// debugfs `block_state`, streamed (a large device has a line per allocated slot), at most
/// `slots` lines: `None` when it cannot be read or is not what the kernel writes.
fn read_block_state(path: &std::path::Path, slots: u64) -> Option<Vec<(u64, String)>> {
    let mut lines = TextLines::open(path, Limits::STREAM).ok()?;
    let mut out = Vec::new();
    while let Some((no, line)) = lines.next_line().ok()? {
        if no > slots {
            return None;
        }
        out.extend(parse_block_state(line));
    }
    Some(out)
}

fn mm_stat_of(id: u32) -> LabResult<MmStat> {
    let path = PathBuf::from(format!("/sys/block/zram{id}/mm_stat"));
    let text = std::fs::read_to_string(&path).map_err(|e| LabError::io("read", &path, &e))?;
    MmStat::parse(&text)
}

/// `/dev/zram<id>`, read-only with `O_DIRECT`, after checking the node is that device.
fn open_read_only(id: u32) -> LabResult<File> {
    let path = PathBuf::from(format!("/dev/zram{id}"));
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(&path)
        .map_err(|e| LabError::io("open", &path, &e))?;
    let rdev = file.metadata().map_err(|e| LabError::io("open", &path, &e))?.rdev();
    let want = std::fs::read_to_string(format!("/sys/block/zram{id}/dev")).unwrap_or_default();
    let got = format!("{}:{}", libc::major(rdev), libc::minor(rdev));
    if want.trim() != got {
        return Err(LabError::runtime(format!(
            "{} is device {got}, not zram{id} ({})",
            path.display(),
            want.trim()
        )));
    }
    Ok(file)
}

/// What to read and how to store it again.
#[derive(Debug, Clone)]
pub struct ReadPlan {
    pub id: u32,
    pub page_size: usize,
    /// The inspected device's slots (`disksize / page`).
    pub slots: u64,
    pub compressor: String,
    pub level: Option<i32>,
    /// Stop after this many stored pages.
    pub max_pages: Option<u64>,
}

/// Reads device `plan.id`'s stored pages (module documentation).
pub fn read(plan: &ReadPlan) -> LabResult<Reading> {
    let page = plan.page_size;
    let block_state = format!("/sys/kernel/debug/zram/zram{}/block_state", plan.id);
    let listed = read_block_state(std::path::Path::new(&block_state), plan.slots);
    let source = if listed.is_some() { SlotSource::BlockState } else { SlotSource::EverySlot };
    let slots: Box<dyn Iterator<Item = (u64, String)>> = match listed {
        Some(l) => Box::new(l.into_iter()),
        None => Box::new((0..plan.slots).map(|s| (s, String::new()))),
    };
    let before = mm_stat_of(plan.id)?;
    let dev = open_read_only(plan.id)?;
    let mut private = Device::create(&DeviceSpec {
        compressor: Some(plan.compressor.clone()),
        level: plan.level,
        pages: 1,
        page_size: page,
    })?;
    let mut buf = vec![0u8; 2 * page];
    let off = buf.as_ptr().align_offset(page);
    let mut r = Reading {
        slots: plan.slots,
        slots_read: 0,
        source,
        zero_pages: 0,
        flagged_same: 0,
        written_back: 0,
        recompressed: 0,
        pages: Vec::new(),
        complete: true,
        before,
        after: before,
    };
    let mut base = private.mm_stat()?;
    for (slot, flags) in slots {
        if plan.max_pages.is_some_and(|m| r.pages.len() as u64 >= m) {
            r.complete = false;
            break;
        }
        if flags.contains('s') {
            r.flagged_same += 1;
            continue;
        }
        if flags.contains('w') {
            r.written_back += 1;
            continue;
        }
        if flags.contains('r') {
            r.recompressed += 1;
        }
        let data = &mut buf[off..off + page];
        dev.read_exact_at(data, slot * page as u64).map_err(|e| {
            LabError::runtime(format!(
                "zram{}: read of slot {slot}: {}",
                plan.id,
                zsmalloc_core::text_input::io_reason(&e)
            ))
        })?;
        r.slots_read += 1;
        if source == SlotSource::EverySlot && data.iter().all(|&b| b == 0) {
            r.zero_pages += 1;
            continue;
        }
        private.write_page(0, data)?;
        let after = private.mm_stat()?;
        let (stored, len) = classify(slot as usize, page, &base, &after)?;
        private.discard_page(0)?;
        base = private.mm_stat()?;
        r.pages.push(Page { slot, stored, len });
    }
    private.remove()?;
    r.after = mm_stat_of(plan.id)?;
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_names_and_block_state_parse() {
        assert_eq!(device_id("zram3").unwrap(), 3);
        assert_eq!(device_id("/dev/zram12").unwrap(), 12);
        assert_eq!(device_id("0").unwrap(), 0);
        assert_eq!(device_id("10").unwrap(), 10);
        for bad in [
            "sda",
            "zramzram1",
            "+1",
            "00",
            "zram00",
            "zram01",
            "/dev/zram+1",
            "-1",
            "zram",
            "",
            " 1",
            "1 ",
            "zram1x",
            "/dev//zram1",
            "dev/zram1",
            "/dev/zram/1",
            "4294967296",
        ] {
            let e = device_id(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}");
            assert!(e.to_string().contains("zramN"), "{bad}: {e}");
        }
        let listed = parse_block_state(
            "           0    11.123456 ..h...\n           5    11.200000 s.....\n",
        );
        assert_eq!(listed, [(0, "..h...".to_string()), (5, "s.....".to_string())]);
    }
}
