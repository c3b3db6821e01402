//! `inspect --snapshot zramN`: the refusals, the memory plan, the reading ([`super::snapshot`]),
//! the what-if ([`super::whatif`]) and the report (table, JSON, CSV of the pools).

use std::path::PathBuf;

use serde::Serialize;

use super::snapshot::{self, device_id, ReadPlan, Reading, SlotSource};
use super::table::bytes;
use super::whatif::{self, Alternative, Optimized, KERNEL_CHAIN};
use super::zram;
use crate::error::{LabError, LabResult};
use crate::kernel::host::Host;
use crate::kernel::mm_stat::MmStat;
use crate::kernel::steps::Stored;
use crate::memory::{Limit, Plan, PER_OBJECT_BYTES};
use crate::report::csv::{self, Column, Numbers};
use crate::report::{check_writable, grid, Render};

/// What `--snapshot` is asked.
#[derive(Debug, Clone, Default)]
pub struct SnapshotOptions {
    pub device: String,
    /// Read a device that is active swap.
    pub yes: bool,
    pub max_pages: Option<u64>,
    /// The private device's compressor [default: the inspected device's].
    pub compressor: Option<String>,
    pub level: Option<i32>,
    pub optimize: bool,
    /// Keep the trace here.
    pub trace: Option<PathBuf>,
    pub max_memory: Option<u64>,
    pub jobs: usize,
}

/// How the device's pages were stored, as read back.
#[derive(Debug, Clone, Serialize)]
pub struct PageCounts {
    pub compressed: u64,
    pub huge: u64,
    /// Same-filled pages other than zero pages (found by the private device).
    pub same_filled: u64,
    /// Pages read back as zeros: unused slots or zero pages kept same-filled.
    pub zero: u64,
    /// debugfs `block_state` flags: same-filled, written back, recompressed.
    pub flagged_same_filled: u64,
    pub written_back: u64,
    pub recompressed: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct SnapshotReport {
    pub device: String,
    pub kernel: String,
    pub page_size: usize,
    pub compressor: String,
    pub level: Option<i32>,
    pub swap_priority: Option<i64>,
    pub slots: u64,
    pub slots_read: u64,
    pub slot_source: SlotSource,
    /// Every slot was read (no `--max-pages` cut).
    pub complete: bool,
    /// The device's `mm_stat` moved while it was read (it is in use): figures approximate.
    pub device_changed: bool,
    pub pages: PageCounts,
    /// The kernel's lengths summed (compressed and huge pages).
    pub compressed_bytes: u64,
    /// That sum is the device's `compr_data_size` (a complete, unchanged reading only).
    pub lengths_exact: Option<bool>,
    pub live: MmStat,
    pub live_pages: u64,
    /// The data replayed in slot order at the kernel's configuration.
    pub history_free_pages: u64,
    /// `live_pages − history_free_pages`: what the pool's history holds.
    pub fragmentation_pages: i64,
    pub fragmentation_bytes: i64,
    pub fragmentation_pct: Option<f64>,
    pub alternatives: Vec<Alternative>,
    pub optimized: Option<Optimized>,
    pub trace: Option<String>,
    pub notes: Vec<String>,
}

fn counts(r: &Reading) -> PageCounts {
    let n = |s: Stored| r.pages.iter().filter(|p| p.stored == s).count() as u64;
    PageCounts {
        compressed: n(Stored::Compressed),
        huge: n(Stored::Huge),
        same_filled: n(Stored::Same),
        zero: r.zero_pages,
        flagged_same_filled: r.flagged_same,
        written_back: r.written_back,
        recompressed: r.recompressed,
    }
}

/// Runs the snapshot (module documentation).
pub fn run(o: &SnapshotOptions) -> LabResult<SnapshotReport> {
    let id = device_id(&o.device)?;
    let name = format!("zram{id}");
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Err(LabError::usage(format!(
            "--snapshot {name} needs root (it reads the device and stores its pages again on a \
             private zram device); zsmalloc inspect without it lists every device"
        )));
    }
    let host = Host::probe()?;
    let page = host.page_size;
    let swaps = zram::swaps(&mut Vec::new());
    let dev = zram::read_device(id, page, &swaps)
        .ok_or_else(|| LabError::usage(format!("--snapshot {name}: there is no such device")))?;
    if !dev.initialised {
        return Err(LabError::usage(format!(
            "--snapshot {name}: the device is not initialised (disksize 0): it holds nothing"
        )));
    }
    let mm = dev.mm_stat.ok_or_else(|| LabError::runtime(format!("{name}: mm_stat unreadable")))?;
    let compressor = o.compressor.clone().or(dev.compressor.clone()).ok_or_else(|| {
        LabError::runtime(format!("{name}: comp_algorithm unreadable: name one with --compressor"))
    })?;
    if let (Some(s), false) = (&dev.swap, o.yes) {
        return Err(LabError::usage(format!(
            "{name} is active swap (priority {}): reading its pages marks them accessed, which \
             defeats idle writeback and recompression on it; add --yes to read it anyway",
            s.priority
        )));
    }
    let slots = dev.disksize.unwrap_or(0) / page as u64;
    let stored = (mm.orig_data_size / page as u64).saturating_sub(mm.same_pages);
    let n = o.max_pages.map_or(stored, |m| m.min(stored));
    // The project's pools hold the pages one table at a time: at worst every page whole.
    let plan = Plan::new(
        n.saturating_mul(page as u64 + PER_OBJECT_BYTES),
        format!("--max-pages {n} ({name} stores {stored} pages)"),
    );
    Limit::new(o.max_memory).check("inspect --snapshot", &plan)?;
    if let Some(t) = &o.trace {
        check_writable("--trace", t)?;
    }
    crate::kernel::device::sweep::sweep_and_report();
    eprintln!(
        "zsmalloc: reading {name}'s {slots} slots (read-only): zram marks them accessed, so idle \
         writeback and recompression skip them until they age again"
    );
    let plan = ReadPlan {
        id,
        page_size: page,
        slots,
        compressor: compressor.clone(),
        level: o.level,
        max_pages: o.max_pages,
    };
    let r = snapshot::read(&plan)?;
    finish(o, &host, &name, dev.swap.map(|s| s.priority), compressor, r)
}

/// The replays and the report from a reading.
fn finish(
    o: &SnapshotOptions,
    host: &Host,
    name: &str,
    swap_priority: Option<i64>,
    compressor: String,
    r: Reading,
) -> LabResult<SnapshotReport> {
    let page = host.page_size;
    let history_free = whatif::replay(&r.pages, page, KERNEL_CHAIN, "classic")?;
    let alternatives = whatif::alternatives(&r.pages, page, history_free)?;
    let temp = std::env::temp_dir().join(format!("zsmalloc-inspect-{}.trace", std::process::id()));
    let trace_path = o.trace.clone().or_else(|| o.optimize.then(|| temp.clone()));
    if let Some(path) = &trace_path {
        let header = [
            format!("{name}'s stored pages in slot order, lengths of the kernel's {compressor}"),
            format!("kernel {} (page {page}); replay at --chain-size {KERNEL_CHAIN}", host.release),
        ];
        whatif::write_trace(&r.pages, path, &header)?;
    }
    let optimized = match (&trace_path, o.optimize) {
        (Some(path), true) => {
            let got = whatif::optimize(path, page, history_free, o.jobs, o.max_memory);
            if o.trace.is_none() {
                let _ = std::fs::remove_file(path);
            }
            Some(got?)
        }
        _ => None,
    };
    let live_pages = r.before.pool_pages(page);
    let frag = live_pages as i64 - history_free as i64;
    let pc = counts(&r);
    let compressed_bytes: u64 = r.pages.iter().map(|p| u64::from(p.len)).sum();
    let changed = r.before != r.after;
    let lengths_exact = (r.complete && !changed && pc.written_back == 0)
        .then_some(compressed_bytes == r.before.compr_data_size);
    let mut notes = Vec::new();
    if r.source == SlotSource::EverySlot {
        // zram counts zero pages among its same-filled ones: the rest of the zeros are unused.
        let kept = r.before.same_pages.saturating_sub(pc.same_filled).min(pc.zero);
        let split = if r.complete && !changed {
            format!(" ({kept} zero pages zram keeps, {} unused slots)", pc.zero - kept)
        } else {
            String::new()
        };
        notes.push(format!(
            "no debugfs block_state for {name} (mount debugfs to list allocated slots): every \
             slot was read, and the {} pages that read back as zeros{split} were not stored \
             again — neither an unused slot nor a zero page takes pool memory",
            pc.zero
        ));
    }
    if !r.complete {
        notes.push(format!(
            "--max-pages cut the reading after {} stored pages: the pools are of those pages \
             only, so the live pool is not comparable (fragmentation not measured)",
            r.pages.len()
        ));
    }
    if changed {
        notes.push(format!(
            "{name}'s mm_stat changed while it was read (the device is in use): the figures \
             are of a moving pool"
        ));
    }
    if lengths_exact == Some(false) {
        notes.push(format!(
            "the kernel's lengths sum to {compressed_bytes} B, the device holds {} B: it may use \
             a compression level (--level), a dictionary, or recompression",
            r.before.compr_data_size
        ));
    }
    if pc.written_back > 0 || pc.recompressed > 0 {
        notes.push(format!(
            "{} pages written back to the backing device were left out; {} recompressed pages \
             were stored again with {compressor}",
            pc.written_back, pc.recompressed
        ));
    }
    let measured = r.complete && !changed;
    Ok(SnapshotReport {
        device: name.to_string(),
        kernel: host.release.clone(),
        page_size: page,
        compressor,
        level: o.level,
        swap_priority,
        slots: r.slots,
        slots_read: r.slots_read,
        slot_source: r.source,
        complete: r.complete,
        device_changed: changed,
        pages: pc,
        compressed_bytes,
        lengths_exact,
        live: r.before,
        live_pages,
        history_free_pages: history_free,
        fragmentation_pages: frag,
        fragmentation_bytes: frag * page as i64,
        fragmentation_pct: (measured && live_pages > 0)
            .then(|| (frag as f64 * 1000.0 / live_pages as f64).round() / 10.0),
        alternatives,
        optimized,
        trace: o.trace.as_ref().map(|p| p.display().to_string()),
        notes,
    })
}

fn signed_bytes(b: i64) -> String {
    if b < 0 {
        format!("-{}", bytes(b.unsigned_abs()))
    } else {
        bytes(b as u64)
    }
}

impl SnapshotReport {
    fn pool_rows(&self) -> Vec<Vec<String>> {
        let mut rows = vec![vec![
            "the same data with".to_string(),
            "pages".into(),
            "memory".into(),
            format!("saving vs chain {KERNEL_CHAIN}"),
        ]];
        let opt = self.optimized.as_ref().map(|o| &o.pool);
        for a in self.alternatives.iter().chain(opt) {
            rows.push(vec![
                a.label.clone(),
                a.pages.to_string(),
                bytes(a.bytes),
                format!("{} pages, {}", a.saving_pages, signed_bytes(a.saving_bytes)),
            ]);
        }
        rows
    }
}

impl Render for SnapshotReport {
    const COMMAND: &'static str = "inspect --snapshot";

    fn table(&self) -> String {
        let p = &self.pages;
        let page = self.page_size as u64;
        let mut out = format!(
            "{} ({}, page {} B): {} slots, {} read\n",
            self.device, self.compressor, self.page_size, self.slots, self.slots_read
        );
        out += &format!(
            "pages: {} compressed, {} huge, {} same-filled (not zero), {} zero; lengths: the \
             kernel's {} on a private device{}\n\n",
            p.compressed,
            p.huge,
            p.same_filled + p.flagged_same_filled,
            p.zero,
            self.compressor,
            match self.lengths_exact {
                Some(true) => ", their sum is the device's compr_data_size exactly",
                Some(false) => ", their sum differs from the device's compr_data_size (note)",
                None => "",
            }
        );
        let frag = match self.fragmentation_pct {
            Some(pct) => format!("{pct:.1}% of the live pool"),
            None => "not measured (note)".into(),
        };
        let rows = vec![
            vec!["pool".to_string(), "pages".into(), "memory".into(), String::new()],
            vec![
                "live (mem_used_total)".into(),
                self.live_pages.to_string(),
                bytes(self.live_pages * page),
                String::new(),
            ],
            vec![
                format!("the same data without its history (slot order, chain {KERNEL_CHAIN})"),
                self.history_free_pages.to_string(),
                bytes(self.history_free_pages * page),
                String::new(),
            ],
            vec![
                "held by fragmentation".into(),
                self.fragmentation_pages.to_string(),
                signed_bytes(self.fragmentation_bytes),
                frag,
            ],
        ];
        out += &grid::align(&rows, 1);
        out.push('\n');
        out += &grid::align(&self.pool_rows(), 1);
        if let Some(o) = &self.optimized {
            out += &format!(
                "optimized: {} classes with another chain than the kernel's; spanning reads {} \
                 (kernel's table: {}); --format json has the table\n",
                o.changed.len(),
                o.reads_spanning,
                o.kernel_reads_spanning
            );
        }
        if let Some(t) = &self.trace {
            out += &format!("trace: {t} (zsmalloc replay {t} --chain-size {KERNEL_CHAIN})\n");
        }
        for n in &self.notes {
            out += &format!("note: {n}\n");
        }
        out
    }

    fn json(&self) -> LabResult<String> {
        crate::report::json(self)
    }

    /// The pools, one row each: the live one, without history, the alternatives.
    fn csv(&self) -> String {
        let fixed =
            [("live", self.live_pages), ("history_free", self.history_free_pages)].map(|(l, n)| {
                csv::to_value(&Alternative::new(
                    l.into(),
                    n,
                    self.history_free_pages,
                    self.page_size,
                ))
            });
        let rest: Vec<serde_json::Value> = self
            .alternatives
            .iter()
            .chain(self.optimized.as_ref().map(|o| &o.pool))
            .map(csv::to_value)
            .collect();
        let cols: Vec<Column> = ["label", "pages", "bytes", "saving_pages", "saving_bytes"]
            .iter()
            .map(|k| Column::at(&[k]))
            .collect();
        let rows: Vec<Vec<&serde_json::Value>> =
            fixed.iter().chain(rest.iter()).map(|v| vec![v]).collect();
        csv::table(&cols, &rows, Numbers::AsJson)
    }
}
