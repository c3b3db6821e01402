//! What a run measures (the field names of docs/LAB.md) and the arithmetic of its figures.

use serde::Serialize;

use crate::config::ConfigDesc;
use crate::timeline::Sample;
use crate::timing::{Samples, TimeDelta};
use zsmalloc_core::ClassStats;

/// `floor(1000 * bytes / (pages * page))`: utilization in tenths of a percent, truncated like
/// the kernel's test module. 0 when no pages are held.
pub fn utilization_permille(bytes: u64, pages: u64, page: u64) -> u64 {
    let denom = u128::from(pages) * u128::from(page);
    if denom == 0 {
        return 0;
    }
    (1000 * u128::from(bytes) / denom) as u64
}

/// Objects per page frame (the 2012 thread's figure), three decimals; `None` without pages.
pub fn density(objects: u64, pages: u64) -> Option<f64> {
    (pages > 0).then(|| (objects as f64 / pages as f64 * 1000.0).round() / 1000.0)
}

/// A density as text: "5.932", or "n/a" without pages.
pub fn density_str(d: Option<f64>) -> String {
    d.map_or_else(|| "n/a".into(), |d| format!("{d:.3}"))
}

/// Tenths as text: 973 -> "97.3".
pub fn permille_str(tenths: u64) -> String {
    format!("{}.{}", tenths / 10, tenths % 10)
}

/// `(value - base) / base` in tenths of a percent, rounded half away from zero; `None` when
/// `base` is 0.
pub fn delta_tenths(base: f64, value: f64) -> Option<i64> {
    if base == 0.0 || !base.is_finite() || !value.is_finite() {
        return None;
    }
    Some((1000.0 * (value - base) / base).round() as i64)
}

/// Exact integer version of [`delta_tenths`] for counters.
pub fn delta_tenths_u64(base: u64, value: u64) -> Option<i64> {
    if base == 0 {
        return None;
    }
    let num = 1000 * (i128::from(value) - i128::from(base));
    let den = i128::from(base);
    // Round half away from zero.
    let q = (2 * num.abs() + den) / (2 * den);
    Some(if num < 0 { -(q as i64) } else { q as i64 })
}

/// Signed tenths as a percentage: -65 -> "-6.5%", 5 -> "+0.5%", 0 -> "+0.0%".
pub fn delta_str(tenths: Option<i64>) -> String {
    match tenths {
        None => "n/a".into(),
        Some(t) => {
            let sign = if t < 0 { '-' } else { '+' };
            format!("{sign}{}.{}%", t.unsigned_abs() / 10, t.unsigned_abs() % 10)
        }
    }
}

/// A delta as a JSON number (one decimal), `null` when undefined.
pub fn delta_value(tenths: Option<i64>) -> Option<f64> {
    tenths.map(|t| t as f64 / 10.0)
}

/// The workload as reported: its name and parameters.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct WorkloadDesc {
    pub name: String,
    pub params: serde_json::Value,
    /// One line for humans: `kernel-test lo=32 hi=4080 step=16 n=1337 seed=1`.
    #[serde(skip)]
    pub summary: String,
}

/// The `zsmalloc_test` module's figures (kernel-test workload only).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct KernelTestLines {
    pub num_write_objects: u64,
    pub pool_pages_used: u64,
    pub total_allocated_size: u64,
    /// "pool memory utilization" (percent, truncated to one decimal).
    #[serde(rename = "pool_memory_utilization", serialize_with = "tenths_as_number")]
    pub utilization_permille: u64,
    pub num_read_objects: u64,
    pub spanning_objects: u64,
    pub total_memcpy_size: u64,
}

impl KernelTestLines {
    /// The module's five lines, as the RFC prints them.
    pub fn lines(&self) -> Vec<String> {
        vec![
            format!(" zsmalloc_test: num write objects: {}", self.num_write_objects),
            format!(
                " zsmalloc_test: pool pages used {}, total allocated size {}",
                self.pool_pages_used, self.total_allocated_size
            ),
            format!(
                " zsmalloc_test: pool memory utilization: {}",
                permille_str(self.utilization_permille)
            ),
            format!(" zsmalloc_test: num read objects: {}", self.num_read_objects),
            format!(
                " zsmalloc_test: spanning objects: {}, total memcpy size: {}",
                self.spanning_objects, self.total_memcpy_size
            ),
        ]
    }
}

fn tenths_as_number<S: serde::Serializer>(t: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(*t as f64 / 10.0)
}

/// Facts of the `pages` workload's corpus.
#[derive(Debug, Clone, Serialize, PartialEq, Default)]
pub struct CorpusFacts {
    pub source: String,
    pub compressor: String,
    pub input_pages: u64,
    pub same_filled_pages: u64,
    /// Pages stored uncompressed (compressed size reached `huge_class_size`).
    pub incompressible_pages: u64,
    pub compressed_pages: u64,
    /// Input bytes per stored byte (same-filled pages skipped count as input): the codec's
    /// ratio, with same-filled pages.
    pub compression_ratio: f64,
    /// zram's effective ratio: input bytes per byte of pool memory (`pages * page_size`, so
    /// slack, fragmentation and huge objects count); null when the pool holds no pages.
    pub effective_compression_ratio: Option<f64>,
    /// Thread CPU seconds spent compressing, and in the read phase (pool reads, decompression
    /// and verification).
    pub compress_time_s: Option<f64>,
    pub read_time_s: Option<f64>,
}

/// One class's row of a run: the core's figures of the class ([`ClassStats`]: debugfs
/// `classes`, layout facts and read counters, spanning reads among them) and what only the lab
/// knows, from the lengths of the live objects.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClassRow {
    pub stats: ClassStats,
    /// Bytes the live objects of this class lose to merging: for each object, this class's
    /// size minus the size of the class its length would have without merging.
    pub merge_waste: u64,
}

impl Serialize for ClassRow {
    /// The core's fields in the core's order, the lab's `merge_waste` after `bytes_stored`: the
    /// JSON keys and per-class CSV columns (the core's type carries no serde of its own).
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        // Destructured without `..`: a field the core adds must be given a key here.
        let ClassStats {
            index,
            size,
            pages_per_zspage,
            objs_per_zspage,
            huge,
            fullness,
            obj_allocated,
            obj_used,
            pages_used,
            freeable,
            spanning_per_zspage,
            tail_waste,
            worst_merge_waste,
            first_index,
            last_index,
            bytes_stored,
            reads,
            reads_spanning,
            read_copy_bytes,
            // The order of a class of the multi-page band: the lab's rows are of order 0 until
            // it configures the band.
            order: _,
        } = &self.stats;
        let mut row = s.serialize_struct("ClassRow", 20)?;
        row.serialize_field("index", index)?;
        row.serialize_field("size", size)?;
        row.serialize_field("pages_per_zspage", pages_per_zspage)?;
        row.serialize_field("objs_per_zspage", objs_per_zspage)?;
        row.serialize_field("huge", huge)?;
        row.serialize_field("fullness", fullness)?;
        row.serialize_field("obj_allocated", obj_allocated)?;
        row.serialize_field("obj_used", obj_used)?;
        row.serialize_field("pages_used", pages_used)?;
        row.serialize_field("freeable", freeable)?;
        row.serialize_field("spanning_per_zspage", spanning_per_zspage)?;
        row.serialize_field("tail_waste", tail_waste)?;
        row.serialize_field("worst_merge_waste", worst_merge_waste)?;
        row.serialize_field("first_index", first_index)?;
        row.serialize_field("last_index", last_index)?;
        row.serialize_field("bytes_stored", bytes_stored)?;
        row.serialize_field("merge_waste", &self.merge_waste)?;
        row.serialize_field("reads", reads)?;
        row.serialize_field("reads_spanning", reads_spanning)?;
        row.serialize_field("read_copy_bytes", read_copy_bytes)?;
        row.end()
    }
}

/// A run's per-class rows, in the pool's class order (none for malloc). Always measured: the
/// plots, the debugfs table and the optimizer read them; reported (table, JSON `classes`, CSV
/// class rows) with `--per-class`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClassRows {
    pub rows: Vec<ClassRow>,
    pub reported: bool,
}

impl ClassRows {
    /// The rows a report shows: all of them with `--per-class`, else none.
    pub fn reported_rows(&self) -> &[ClassRow] {
        if self.reported {
            &self.rows
        } else {
            &[]
        }
    }

    fn unreported(&self) -> bool {
        !self.reported
    }
}

impl std::ops::Deref for ClassRows {
    type Target = [ClassRow];

    fn deref(&self) -> &[ClassRow] {
        &self.rows
    }
}

impl Serialize for ClassRows {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(&self.rows)
    }
}

/// Everything one run of one workload on one configuration measured.
#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    pub label: String,
    pub config: ConfigDesc,
    pub workload: WorkloadDesc,
    /// Live objects in the pool at the end of the workload.
    pub objects: u64,
    /// Sum of their lengths.
    pub bytes_stored: u64,
    /// Pages held by the pool at the end of the workload.
    pub pages: u64,
    pub pages_peak: u64,
    /// `floor(1000 * bytes_stored / (pages * page_size)) / 10`.
    pub utilization_pct: f64,
    /// `objects / pages`: objects per page frame; null when no pages are held.
    pub density: Option<f64>,
    /// Utilization and density when the pool held the most pages (`pages_peak`).
    pub utilization_pct_peak: f64,
    pub density_peak: Option<f64>,
    pub reads: u64,
    pub reads_spanning: u64,
    pub read_copy_bytes: u64,
    pub writes_spanning: u64,
    pub huge_class_size: u64,
    pub pages_compacted: u64,
    pub objs_moved: u64,
    pub stores: u64,
    pub frees: u64,
    pub store_failures: u64,
    pub op_errors: u64,
    /// Same-filled pages kept outside the pool at the end (zram's `same_pages`).
    pub same_pages: u64,
    /// Live objects in huge classes (one object per zspage; under some chain policies classes
    /// below `huge_class_size` are huge too).
    pub huge_objects: u64,
    /// zram's `huge_pages`: live objects of `huge_class_size` bytes or more, the pages zram
    /// stores whole.
    pub huge_pages: u64,
    /// zram's `huge_pages_since`: stores of objects of `huge_class_size` bytes or more, ever
    /// (so never below `huge_pages`).
    pub huge_stores: u64,
    /// Heap bytes of the allocator's metadata outside its pages at the end (zsmalloc: zspage
    /// records, classes, page roles; zblock: block records and page bookkeeping; malloc: its
    /// handle table), and of the per-object safety records kept beside it (zblock's owner,
    /// length and reader count per slot; zsmalloc's safe-layer handle slots, unused here).
    pub metadata_bytes: u64,
    pub safety_bytes: u64,
    /// Whether the pool kept the objects' bytes; written only when it did not (a
    /// placement-only run: `--placement-only`, `optimize`), whose reads were not verified.
    #[serde(skip_serializing_if = "is_true")]
    pub payload: bool,
    /// Timed runs of this configuration (`--repeat`; omitted with `--no-time`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeat: Option<usize>,
    /// Thread CPU seconds of the pool calls (the timed phase), over the repeats.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_time_s: Option<Samples>,
    /// Wall-clock seconds of the whole workload (lab work included), median over the repeats.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wall_time_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_test: Option<KernelTestLines>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub corpus: Option<CorpusFacts>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dist: Option<DistFacts>,
    /// Per-class rows (in the output with `--per-class`).
    #[serde(skip_serializing_if = "ClassRows::unreported")]
    pub classes: ClassRows,
    #[serde(skip)]
    pub utilization_permille: u64,
    #[serde(skip)]
    pub timeline: Vec<Sample>,
}

impl RunResult {
    /// The fields compared between configurations, with their values.
    pub fn delta_fields(&self) -> [(&'static str, u64); 5] {
        [
            ("objects", self.objects),
            ("pages", self.pages),
            ("pages_peak", self.pages_peak),
            ("reads_spanning", self.reads_spanning),
            ("read_copy_bytes", self.read_copy_bytes),
        ]
    }

    /// Deltas against `base` in tenths of a percent: the counters of `delta_fields`, then
    /// `density` (wall time has none: it is not a measurement the lab stands behind).
    pub fn deltas(&self, base: &RunResult) -> Vec<(&'static str, Option<i64>)> {
        let mut v: Vec<_> = self
            .delta_fields()
            .iter()
            .zip(base.delta_fields())
            .map(|(&(name, x), (_, b))| (name, delta_tenths_u64(b, x)))
            .collect();
        let d = match (base.density, self.density) {
            (Some(b), Some(x)) => delta_tenths(b, x),
            _ => None,
        };
        v.push(("density", d));
        v
    }

    /// The CPU-time difference against `base`, with its spread.
    pub fn cpu_delta(&self, base: &RunResult) -> Option<TimeDelta> {
        TimeDelta::between(base.cpu_time_s.as_ref()?, self.cpu_time_s.as_ref()?)
    }

    /// The counts repeats must agree on.
    pub fn counts(&self) -> [u64; 8] {
        [
            self.objects,
            self.bytes_stored,
            self.pages,
            self.pages_peak,
            self.reads,
            self.reads_spanning,
            self.read_copy_bytes,
            self.pages_compacted,
        ]
    }
}

/// What the size draws did (JSON `dist`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct DistFacts {
    pub min_len: usize,
    /// Sizes drawn (same-filled pages excluded).
    pub draws: u64,
    /// Draws below `min_len` (stored at `min_len`) and above the page (stored at the page).
    pub clipped_min: u64,
    pub clipped_page: u64,
}

/// serde's `skip_serializing_if` for a flag written only when false.
fn is_true(v: &bool) -> bool {
    *v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_round_as_the_rfc_prints_them() {
        assert_eq!(delta_str(delta_tenths_u64(110377, 103256)), "-6.5%");
        assert_eq!(delta_str(delta_tenths_u64(278318624, 265378608)), "-4.6%");
        assert_eq!(delta_str(delta_tenths_u64(175111, 175920)), "+0.5%");
        assert_eq!(delta_str(delta_tenths_u64(10, 10)), "+0.0%");
        assert_eq!(delta_str(delta_tenths_u64(0, 10)), "n/a");
        assert_eq!(delta_tenths_u64(1000, 1001), Some(1));
        assert_eq!(delta_tenths_u64(2000, 1999), Some(-1)); // -0.05% rounds away from zero
    }

    #[test]
    fn utilization_truncates() {
        assert_eq!(permille_str(utilization_permille(698213488, 175111, 4096)), "97.3");
        assert_eq!(permille_str(utilization_permille(698213488, 175920, 4096)), "96.8");
        assert_eq!(utilization_permille(5, 0, 4096), 0);
    }
}
