//! The cost report's data: its rows and facts, as JSON shows them (rendered by [`super::report`]).

use serde::Serialize;

use super::hw;
use super::report::Summary;
use crate::timing::Samples;

/// What kind of object a row is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A compressed object in a class with several objects per zspage.
    Regular,
    /// A compressed object in a huge class (one object per one-page zspage).
    Huge,
    /// A page stored raw (it did not compress below `huge_class_size`).
    Incompressible,
    /// An object the backend refused (never in a row).
    Refused,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Regular => "regular",
            Kind::Huge => "huge",
            Kind::Incompressible => "incompressible",
            Kind::Refused => "refused",
        }
    }
}

/// One row of `reads`.
#[derive(Debug, Clone, Serialize)]
pub struct ReadRow {
    pub label: String,
    pub compressor: String,
    pub mode: String,
    pub kind: Kind,
    pub spanning: bool,
    /// Objects of this row in the pool (each batch visits them in a seeded random order).
    pub objects: u64,
    /// Reads timed per round.
    pub reads: u64,
    pub ns_per_section: Samples,
    pub ns_per_decompress: Samples,
    /// Section + decompress, the zram consumer: decompress from the returned pointer.
    pub ns_per_read: Samples,
    /// The zswap consumer: as zram, but an object at a virtually mapped address (spanning
    /// objects in `map`, every object in `contiguous`) is copied into its buffer first.
    pub ns_per_read_zswap: Samples,
    pub zswap_copies: bool,
    pub instructions_per_section: Option<u64>,
    pub instructions_per_read: Option<u64>,
    pub instructions_scope: Option<&'static str>,
    /// Minor page faults per read section (median over rounds).
    pub minor_faults_per_section: f64,
    /// Mean stored length of the row's objects, bytes.
    pub mean_len: f64,
}

/// One row of `writes`.
#[derive(Debug, Clone, Serialize)]
pub struct WriteRow {
    pub label: String,
    pub compressor: String,
    /// `store` (`zs_store`) or `malloc_write` (`zs_malloc` + `zs_obj_write`).
    pub path: &'static str,
    pub writes: u64,
    pub ns_per_write: Samples,
    pub instructions_per_write: Option<u64>,
    pub instructions_scope: Option<&'static str>,
    pub minor_faults_per_write: f64,
}

/// A mode the core refused (or whose pool could not be made), with the reason.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Skipped {
    pub mode: String,
    pub label: String,
    pub reason: String,
}

/// One configuration's pool facts, per compressor.
#[derive(Debug, Clone, Serialize)]
pub struct PoolFacts {
    pub label: String,
    pub compressor: String,
    pub config: crate::config::ConfigDesc,
    pub pages: u64,
    pub objects: u64,
    pub bytes_stored: u64,
    pub spanning_objects: u64,
    pub huge_objects: u64,
    pub incompressible_objects: u64,
    /// Objects the backend does not store (zblock: lengths from its last slot size up, so the
    /// raw pages of incompressible data), left out of every row.
    pub refused_objects: u64,
    pub huge_class_size: u64,
    /// Times the corpus was stored to fill the pool beyond the last-level cache.
    pub replicas: u64,
    /// Per class: (class size, objects, spanning objects).
    #[serde(skip)]
    pub classes: Vec<(u32, u64, u64)>,
}

/// The corpus as the study saw it, per page size and compressor.
#[derive(Debug, Clone, Serialize)]
pub struct CorpusFacts {
    pub source: String,
    pub page_size: u32,
    pub compressor: String,
    pub level: Option<i32>,
    pub input_pages: u64,
    pub same_filled_pages: u64,
    pub compressed_bytes: u64,
}

/// Handle memory: a caller's embedded word against a pool-owned slot.
#[derive(Debug, Clone, Serialize)]
pub struct HandleMemory {
    /// The word lives in the caller's own record (`zs_store`): 8 bytes there, none in the pool.
    pub embedded_bytes_per_object: u64,
    /// A pool-owned slot (`zs_malloc`'s handle): heap bytes of the slot arena per object.
    pub pool_slot_bytes_per_object: f64,
    pub objects: u64,
}

/// The machine and method the figures were taken under.
#[derive(Debug, Clone, Serialize)]
pub struct Environment {
    pub backing: &'static str,
    pub transparent_hugepage: hw::Thp,
    pub last_level_cache_bytes: Option<u64>,
    /// The size each pool is filled to at least (`--pool-mib`, or the default).
    pub pool_bytes_target: u64,
    /// The smallest and the largest pool as filled (pages × page size): above the target when
    /// a row needed more objects for a batch of distinct ones.
    pub pool_bytes_held: [u64; 2],
    /// The target was asked for (`--pool-mib`) and kept: a row with fewer objects than a batch
    /// read some of them again within it.
    pub pool_bytes_fixed: bool,
    /// The buffer written before every timed pass to push the pools out of the caches.
    pub evict_bytes: u64,
    /// Groups of pools filled, measured and freed one after another (one per corpus, or per
    /// corpus and pool read mode when `modes_apart`); rounds are interleaved within a group.
    pub phases: usize,
    /// Each pool read mode was measured in a phase of its own (every mode's pools at once
    /// needed more memory than the run could take).
    pub modes_apart: bool,
    /// The memory plan's peak, announced before the run.
    pub memory_estimate_bytes: u64,
    /// The process's measured peak resident memory (`VmHWM`, shared pages included).
    pub peak_rss_bytes: Option<u64>,
    pub load_average_before: Option<f64>,
    pub load_average_after: Option<f64>,
    pub batch: usize,
    pub rounds: usize,
    pub seed: u64,
    pub instruction_counter: &'static str,
}

impl Environment {
    /// The pools as the report's method line states them: what they held, against the target.
    pub fn pools_held(&self) -> String {
        let mib = |b: u64| (b as f64 / f64::from(1 << 20)).round() as u64;
        let [lo, hi] = self.pool_bytes_held.map(mib);
        let held = if lo == hi { format!("{lo} MiB") } else { format!("{lo}-{hi} MiB") };
        let stored = if self.pool_bytes_fixed {
            format!(
                "objects stored to the {} MiB of --pool-mib and no further: a row with fewer than {} \
                 objects reads some again within a batch, from the cache when the pools fit in it",
                mib(self.pool_bytes_target),
                self.batch
            )
        } else {
            format!(
                "objects stored to at least {} MiB, and to a batch of {} distinct objects per row",
                mib(self.pool_bytes_target),
                self.batch
            )
        };
        format!(
            "pools of {held} ({stored}), caches flushed before each pass by a {} MiB buffer \
             (twice the last-level cache of {}, at most 512 MiB, whatever the pools' size)",
            mib(self.evict_bytes),
            self.last_level_cache_bytes
                .map_or("unknown size".into(), |b| format!("{} MiB", mib(b)))
        )
    }
}

/// A whole cost run.
#[derive(Debug, Clone, Serialize)]
pub struct CostReport {
    pub corpus: Vec<CorpusFacts>,
    pub environment: Environment,
    /// Empty-batch cost per clock read pair (the batch loop with no operation), subtracted
    /// from every figure; `{min, median, max}` over rounds, nanoseconds per batch.
    pub timer_overhead_ns: Samples,
    pub pools: Vec<PoolFacts>,
    pub reads: Vec<ReadRow>,
    pub writes: Vec<WriteRow>,
    pub skipped: Vec<Skipped>,
    pub handle_memory: Option<HandleMemory>,
    pub summary: Summary,
}
