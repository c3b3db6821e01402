//! `zsmalloc cost`: what a read of a spanning object costs in CPU time, once decompression is
//! counted, per configuration and per read mode — the question of the thread "zsmalloc:
//! chain-length configuration should consider other metrics" (January 2026).
//!
//! Pages of a corpus ([`corpus::Source`]) are compressed with the reference libraries
//! ([`codec`]) and stored as zram stores them: same-filled pages kept outside the pool, pages
//! that do not compress below `huge_class_size` stored raw. The corpus is stored over and over
//! until the pool is larger than the last-level cache (a swap-in is cold). Then, per
//! configuration, compressor and mode, objects are read in a seeded random order in timed
//! batches of at least 10^4 operations per clock read:
//!
//! - the read section alone (begin + end), split into spanning and in-place objects, huge and
//!   incompressible objects in rows of their own;
//! - the section plus decompressing the object into a page beside it (the zram consumer:
//!   decompress from the returned pointer) — the headline, since a copy warms the payload for
//!   the decompressor; `ns_per_decompress` is the difference of the two;
//! - the zswap consumer where it differs: zswap cannot put a virtually mapped address in a
//!   scatter list and copies such an object into its buffer first (modes `map`, `contiguous`);
//! - the two write paths, `store` (`zs_store`) and `malloc_write` (`zs_malloc` +
//!   `zs_obj_write`), each batch freed untimed.
//!
//! The empty batch's cost is measured the same way, subtracted and reported
//! (`timer_overhead_ns`). Rounds are interleaved (A B A B) with [`crate::timing::interleave`]
//! and reported as `{min, median, max}`. Nothing in a timed batch allocates, formats or locks.
//!
//! Modes are data: `copy`, `map` and `contiguous` are the pool's read modes, accepted or refused
//! by `ReadMode::parse` (a refused mode is reported as skipped, with the core's reason); `sg` is
//! a scatter-gather read whose two segments the consumer linearises, as the crypto layer's scomp
//! fallback does.

pub use crate::codec;
pub mod corpus;
pub mod hw;
pub mod instructions;
pub mod report;

use std::cell::RefCell;
use std::hint::black_box;
use std::sync::atomic::AtomicUsize;

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use zsmalloc_core::{AnyPool, Backend, Error, ReadMode, HDR};

use crate::config::ConfigSpec;
use crate::error::{LabError, LabResult};
use crate::progress::{Progress, ProgressSink};
use crate::timing::{interleave, Clock, Samples};

use codec::{Algo, Codec};
use corpus::Source;
use hw::InstructionCounter;

/// Every mode the study knows, in report order.
pub const MODES: [&str; 4] = ["copy", "map", "contiguous", "sg"];

/// Smallest batch: operations per pair of clock reads.
pub const MIN_BATCH: usize = 10_000;

/// Input pages read from files or a process unless `--max-pages` says otherwise.
pub const DEFAULT_MAX_PAGES: usize = 16_384;

/// Pages of the built-in corpus.
pub const DEFAULT_SYNTHETIC_PAGES: usize = 4096;

/// Pool size when the last-level cache cannot be read.
pub const FALLBACK_POOL_BYTES: u64 = 64 << 20;

/// Where instruction counts come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InstructionSource {
    /// A hardware counter (`perf_event_open`) when the kernel offers one, else none.
    Hardware,
    /// Collected by callgrind around every pass (the `--instructions` child).
    Callgrind,
}

/// Everything a cost run needs.
#[derive(Debug, Clone)]
pub struct CostOptions {
    pub source: Source,
    pub compressors: Vec<Algo>,
    pub level: i32,
    /// Mode names, each one of [`MODES`].
    pub modes: Vec<String>,
    pub specs: Vec<ConfigSpec>,
    pub repeat: usize,
    pub seed: u64,
    pub max_pages: usize,
    /// Bytes each pool is filled to (at least the corpus once).
    pub pool_bytes: u64,
    pub batch: usize,
    pub instructions: InstructionSource,
}

impl CostOptions {
    /// The defaults of `zsmalloc cost` with no flags, for `specs`.
    pub fn new(specs: Vec<ConfigSpec>) -> CostOptions {
        CostOptions {
            source: Source::Builtin { pages: DEFAULT_SYNTHETIC_PAGES, seed: 1 },
            compressors: vec![Algo::Lz4, Algo::Zstd],
            level: codec::DEFAULT_ZSTD_LEVEL,
            modes: MODES.iter().map(|m| m.to_string()).collect(),
            specs,
            repeat: 3,
            seed: 1,
            max_pages: DEFAULT_MAX_PAGES,
            pool_bytes: default_pool_bytes(),
            batch: MIN_BATCH,
            instructions: InstructionSource::Hardware,
        }
    }

    /// Checks flags and inputs before anything runs.
    pub fn check(&self) -> LabResult<()> {
        if self.specs.is_empty() {
            return Err(LabError::usage("no configuration to measure"));
        }
        for s in &self.specs {
            s.validate()?;
        }
        if self.batch < MIN_BATCH {
            return Err(LabError::usage(format!(
                "--batch {} is below {MIN_BATCH}: the clock costs too much for smaller batches",
                self.batch
            )));
        }
        if !(1..=1000).contains(&self.repeat) {
            return Err(LabError::usage(format!("invalid --repeat {}: 1..=1000", self.repeat)));
        }
        if self.compressors.contains(&Algo::Zstd) && !(1..=22).contains(&self.level) {
            return Err(LabError::usage(format!("--level {} is outside 1..=22", self.level)));
        }
        if self.max_pages == 0 {
            return Err(LabError::usage("--max-pages must be at least 1"));
        }
        parse_modes(&self.modes.join(","))?;
        self.source.check()
    }
}

/// Twice the last-level cache, so every read is cold.
pub fn default_pool_bytes() -> u64 {
    hw::last_level_cache_bytes().map_or(FALLBACK_POOL_BYTES, |b| 2 * b)
}

/// `copy,sg` -> the modes, each once; an unknown name is an error listing [`MODES`].
pub fn parse_modes(s: &str) -> LabResult<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for m in s.split(',').map(str::trim).filter(|m| !m.is_empty()) {
        if !MODES.contains(&m) {
            return Err(LabError::usage(format!(
                "invalid mode '{m}' (accepted: {})",
                MODES.join(", ")
            )));
        }
        if !out.iter().any(|o| o == m) {
            out.push(m.to_string());
        }
    }
    if out.is_empty() {
        return Err(LabError::usage(format!("no mode given (accepted: {})", MODES.join(", "))));
    }
    Ok(out)
}

/// The pool read mode a study mode runs on (`sg` reads a `copy` pool).
fn pool_mode(mode: &str) -> &str {
    if mode == "sg" {
        "copy"
    } else {
        mode
    }
}

/// The default configurations on `base`: classic, heuristic, and classic with a class delta of
/// 16 when the base's delta is another (at 16K pages mainline's delta is 64).
pub fn default_specs(base: &ConfigSpec) -> LabResult<Vec<ConfigSpec>> {
    let mut out = Vec::new();
    for (label, spec) in
        [("classic", "chain-policy=classic"), ("heuristic", "chain-policy=heuristic")]
    {
        let mut c = ConfigSpec::with_overrides(base, spec)?;
        c.label = label.into();
        out.push(c);
    }
    if base.effective_delta() != 16 {
        let mut c = ConfigSpec::with_overrides(base, "chain-policy=classic,class-delta=16")?;
        c.label = "delta-16".into();
        out.push(c);
    }
    Ok(out)
}

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
    pub pool_bytes_target: u64,
    pub load_average_before: Option<f64>,
    pub load_average_after: Option<f64>,
    pub batch: usize,
    pub rounds: usize,
    pub seed: u64,
    pub instruction_counter: &'static str,
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
    pub summary: report::Summary,
}

/// The compressed corpus for one page size and compressor.
struct Compressed {
    page: usize,
    /// The corpus pages, concatenated.
    raw: Vec<u8>,
    /// Compressed bytes, concatenated.
    comp: Vec<u8>,
    /// Per page that is not same-filled: (page index, offset in `comp`, compressed length).
    entries: Vec<(u32, usize, u32)>,
    facts: CorpusFacts,
}

impl Compressed {
    fn build(raw: Vec<u8>, page: usize, algo: Algo, level: i32, source: &str) -> LabResult<Self> {
        let mut codec = Codec::new(algo, level)?;
        let mut out = vec![0u8; Codec::bound(page)];
        let mut comp = Vec::new();
        let mut entries = Vec::new();
        let mut same = 0u64;
        for (i, p) in raw.chunks(page).enumerate() {
            if p.iter().all(|&b| b == p[0]) {
                same += 1;
                continue;
            }
            let n = codec.compress(p, &mut out)?;
            entries.push((i as u32, comp.len(), n as u32));
            comp.extend_from_slice(&out[..n]);
        }
        let facts = CorpusFacts {
            source: source.to_string(),
            page_size: page as u32,
            compressor: algo.name().into(),
            level: (algo == Algo::Zstd).then_some(level),
            input_pages: (raw.len() / page) as u64,
            same_filled_pages: same,
            compressed_bytes: comp.len() as u64,
        };
        Ok(Compressed { page, raw, comp, entries, facts })
    }

    /// The bytes zram stores for entry `e`: the compressed bytes, or the page when they do not
    /// fit below `huge`.
    fn stored(&self, e: usize, huge: usize) -> (&[u8], bool) {
        let (pi, off, len) = self.entries[e];
        if len as usize >= huge {
            let at = pi as usize * self.page;
            (&self.raw[at..at + self.page], true)
        } else {
            (&self.comp[off..off + len as usize], false)
        }
    }
}

/// One object in a pool.
#[derive(Clone, Copy)]
struct Obj {
    len: u32,
    raw: bool,
}

/// The objects of one row, in visiting order.
struct Group {
    kind: Kind,
    spanning: bool,
    order: Vec<u32>,
    mean_len: f64,
}

/// One filled pool (one configuration, compressor and pool read mode).
struct Filled<'c> {
    pool: AnyPool,
    words: Box<[AtomicUsize]>,
    objs: Vec<Obj>,
    groups: Vec<Group>,
    corpus: &'c Compressed,
    facts: PoolFacts,
    keyed: Vec<Keyed>,
}

impl Drop for Filled<'_> {
    fn drop(&mut self) {
        for w in self.words.iter() {
            if w.load(std::sync::atomic::Ordering::Relaxed) != 0 {
                // SAFETY: `w` is one of this pool's handle words, at a stable address (the
                // boxed slice), with no section open.
                let _ = unsafe { self.pool.free_raw(w) };
            }
        }
    }
}

/// A pool of `spec` in the pool read mode of `mode`; the error says why the core refused it.
fn make_pool(spec: &ConfigSpec, mode: &str) -> LabResult<AnyPool> {
    let mut s = spec.clone();
    s.config.read_mode = zsmalloc_core::ReadMode::parse(pool_mode(mode))?;
    let cfg = s.pool_config()?;
    AnyPool::with_name(&spec.label, cfg).map_err(|e| LabError::runtime(format!("mode {mode}: {e}")))
}

/// Most times the corpus is stored to give every row a batch of distinct objects, relative to
/// the count the target size asks for.
const MAX_REPLICA_FACTOR: u64 = 16;

/// Times the corpus is stored to reach `target` bytes in a pool whose huge objects start at
/// `huge`.
fn replicas_for(corpus: &Compressed, huge: usize, target: u64) -> u64 {
    let once: u64 = (0..corpus.entries.len()).map(|e| corpus.stored(e, huge).0.len() as u64).sum();
    target.div_ceil(once.max(1)).max(1)
}

/// Per object: its kind, whether it spans, its length and its class size.
type Keyed = (Kind, bool, u32, u32);

impl<'c> Filled<'c> {
    /// An empty pool with handle words for `cap` replicas of the corpus.
    fn new(spec: &ConfigSpec, pool: AnyPool, corpus: &'c Compressed, cap: u64) -> LabResult<Self> {
        if corpus.entries.is_empty() {
            return Err(LabError::usage(
                "the corpus has no page to store (every page is same-filled)".to_string(),
            ));
        }
        let n = corpus.entries.len() * cap as usize;
        let words: Box<[AtomicUsize]> = (0..n).map(|_| AtomicUsize::new(0)).collect();
        let facts = PoolFacts {
            label: spec.label.clone(),
            compressor: corpus.facts.compressor.clone(),
            config: spec.into(),
            pages: 0,
            objects: 0,
            bytes_stored: 0,
            spanning_objects: 0,
            huge_objects: 0,
            incompressible_objects: 0,
            refused_objects: 0,
            huge_class_size: pool.huge_class_size() as u64,
            replicas: 0,
            classes: Vec::new(),
        };
        Ok(Filled {
            pool,
            words,
            objs: Vec::new(),
            groups: Vec::new(),
            corpus,
            facts,
            keyed: Vec::new(),
        })
    }

    /// Stores the corpus again until it is in the pool `replicas` times (stores in the same
    /// order as one fill from empty would: placement does not depend on how it was reached),
    /// verifying and classifying each new object.
    fn extend_to(&mut self, replicas: u64) -> LabResult<()> {
        let corpus = self.corpus;
        let huge = self.pool.huge_class_size();
        let n = (corpus.entries.len() * replicas as usize).min(self.words.len());
        let mut buf = vec![0u8; corpus.page];
        let table = self.pool.as_zsmalloc().map(|z| z.class_table());
        // The other backends' rows: zblock's block types (by `lookup_class_index`), none for
        // malloc (its objects are reported at their own length).
        let rows = if table.is_none() { self.pool.class_stats() } else { Vec::new() };
        for i in self.objs.len()..n {
            let e = i % corpus.entries.len();
            let (data, raw) = corpus.stored(e, huge);
            let w = &self.words[i];
            self.objs.push(Obj { len: data.len() as u32, raw });
            let len = data.len();
            // SAFETY: `w` is 0 and stays at this address (boxed slice) until freed in `Drop`.
            match unsafe { self.pool.store_raw(w, data) } {
                Ok(()) => {}
                Err(Error::TooLarge { .. }) if table.is_none() => {
                    self.keyed.push((Kind::Refused, false, len as u32, 0));
                    continue;
                }
                Err(e) => return Err(LabError::runtime(format!("store failed: {e}"))),
            }
            // SAFETY: the word holds a live object of `len` bytes; the section is ended at once.
            let (_, segs) = unsafe { self.pool.read_sg_begin_raw(w, len) }
                .map_err(|e| LabError::runtime(format!("read failed: {e}")))?;
            // SAFETY: ends the section just begun on the same word.
            unsafe { self.pool.read_end_raw(w, Some(len)) }
                .map_err(|e| LabError::runtime(format!("read end failed: {e}")))?;
            // SAFETY: as above; `buf` holds a page, which every object fits.
            let got = unsafe { self.pool.read_into_raw(w, &mut buf) }
                .map_err(|e| LabError::runtime(format!("read failed: {e}")))?;
            if buf[..got] != *data {
                return Err(LabError::Verify(format!("object {i} does not read back as stored")));
            }
            let Some((table, z)) = table.zip(self.pool.as_zsmalloc()) else {
                // zblock and malloc: nothing spans, nothing is huge.
                let kind = if raw { Kind::Incompressible } else { Kind::Regular };
                let index = self.pool.lookup_class_index(len) as usize;
                let size = rows.get(index).map_or(len as u32, |r| r.size);
                self.keyed.push((kind, false, len as u32, size));
                continue;
            };
            let class = &table.classes()[table.position(len + HDR as usize)];
            let kind = if raw {
                Kind::Incompressible
            } else if class.huge {
                Kind::Huge
            } else {
                Kind::Regular
            };
            // The kernel's rule, whatever the read mode does with it: a non-huge object spans
            // when offset + HDR + len > page (placement is the same in every mode).
            // SAFETY: as above.
            let index = unsafe { z.location_raw(w) }
                .map_err(|e| LabError::runtime(format!("location failed: {e}")))?
                .index as usize;
            let offset = index * class.size as usize % corpus.page;
            let spans = kind == Kind::Regular && offset + HDR as usize + len > corpus.page;
            // In a copy pool the scatter-gather segments say the same.
            if self.pool.config().read_mode == ReadMode::Copy
                && kind == Kind::Regular
                && spans != (segs == 2)
            {
                return Err(LabError::runtime(format!(
                    "object {i}: the spanning rule and the segments disagree (index {index}, class {}, len {len}, segments {segs})", class.size
                )));
            }
            self.keyed.push((kind, spans, len as u32, class.size));
        }
        self.facts.replicas = replicas;
        Ok(())
    }

    /// Replicas that give each regular row `batch` objects (estimated from the rows so far).
    fn replicas_needed(&self, batch: usize) -> u64 {
        let r = self.facts.replicas.max(1);
        let count = |span: bool| {
            self.keyed.iter().filter(|k| k.0 == Kind::Regular && k.1 == span).count() as u64
        };
        [count(true), count(false)]
            .into_iter()
            .filter(|&c| c > 0)
            .map(|c| (batch as u64 * r).div_ceil(c))
            .max()
            .unwrap_or(r)
    }

    /// The rows' visiting orders (seeded) and the pool's facts.
    fn finish(&mut self, seed: u64) {
        let keyed = &self.keyed;
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5eed_c057);
        self.groups.clear();
        for (kind, span) in [
            (Kind::Regular, true),
            (Kind::Regular, false),
            (Kind::Huge, false),
            (Kind::Incompressible, false),
        ] {
            let mut order: Vec<u32> = (0..keyed.len() as u32)
                .filter(|&i| keyed[i as usize].0 == kind && keyed[i as usize].1 == span)
                .collect();
            if order.is_empty() {
                continue;
            }
            order.shuffle(&mut rng);
            let mean_len = order.iter().map(|&i| f64::from(keyed[i as usize].2)).sum::<f64>()
                / order.len() as f64;
            self.groups.push(Group { kind, spanning: span, order, mean_len });
        }
        let mut per_class: std::collections::BTreeMap<u32, (u64, u64)> = Default::default();
        for k in keyed.iter().filter(|k| k.0 != Kind::Refused) {
            let c = per_class.entry(k.3).or_default();
            c.0 += 1;
            c.1 += u64::from(k.1);
        }
        let st = self.pool.stats();
        let f = &mut self.facts;
        f.pages = self.pool.total_pages();
        f.refused_objects = keyed.iter().filter(|k| k.0 == Kind::Refused).count() as u64;
        f.objects = keyed.len() as u64 - f.refused_objects;
        f.bytes_stored = st.bytes_stored;
        f.spanning_objects = keyed.iter().filter(|k| k.1).count() as u64;
        f.huge_objects = keyed.iter().filter(|k| k.0 == Kind::Huge).count() as u64;
        f.incompressible_objects =
            keyed.iter().filter(|k| k.0 == Kind::Incompressible).count() as u64;
        f.classes = per_class.into_iter().map(|(s, (a, b))| (s, a, b)).collect();
    }
}

/// The raw figures of one timed pass: totals over its batches.
#[derive(Debug, Clone, Copy, Default)]
pub struct Pass {
    pub ns: u64,
    pub batches: u64,
    pub ops: u64,
    pub faults: u64,
    pub instructions: Option<u64>,
}

impl Pass {
    /// Per operation, with the empty batch's cost (`overhead` per batch) taken off.
    fn per_op(&self, overhead_ns: f64) -> f64 {
        ((self.ns as f64 - overhead_ns * self.batches as f64) / self.ops.max(1) as f64).max(0.0)
    }

    fn instructions_per_op(&self, empty: Option<u64>) -> Option<f64> {
        let i = self.instructions? as f64 - empty? as f64 * self.batches as f64;
        Some((i / self.ops.max(1) as f64).max(0.0))
    }
}

/// Runs `op` on the first `batch` objects of `order` (cycled when it is shorter), one timed
/// batch; `op` answers whether the operation succeeded.
#[inline(never)]
pub fn timed_pass<F: FnMut(u32) -> bool>(
    order: &[u32],
    batch: usize,
    counter: Option<&InstructionCounter>,
    mut op: F,
) -> Option<Pass> {
    if order.is_empty() {
        return None;
    }
    let batches = 1;
    let mut p = Pass { instructions: counter.map(|_| 0), ..Default::default() };
    let mut pos = 0usize;
    for _ in 0..batches {
        let f0 = hw::minor_faults();
        let i0 = counter.and_then(|c| c.read());
        let t0 = Clock::now_ns();
        let mut ok = true;
        for _ in 0..batch {
            // `pos` stays below `order.len()`: no bounds failure in the timed loop.
            ok &= op(order[pos]);
            pos += 1;
            if pos == order.len() {
                pos = 0;
            }
        }
        let t1 = Clock::now_ns();
        let i1 = counter.and_then(|c| c.read());
        p.faults += hw::minor_faults().saturating_sub(f0);
        if !ok {
            return None;
        }
        p.ns += t1.saturating_sub(t0);
        p.batches += 1;
        p.ops += batch as u64;
        p.instructions = match (p.instructions, i0, i1) {
            (Some(acc), Some(a), Some(b)) => Some(acc + b.saturating_sub(a)),
            _ => None,
        };
    }
    Some(p)
}

/// How passes are run: operations per batch, the hardware counter, callgrind collection.
#[derive(Clone, Copy)]
struct PassCtx<'a> {
    batch: usize,
    counter: Option<&'a InstructionCounter>,
    cg: bool,
}

/// Per-round results of one read job (a filled pool and a mode): per group, the section pass,
/// the section + decompress pass, and the zswap pass (when it differs).
type ReadRound = Vec<(Pass, Pass, Option<Pass>)>;

/// Buffers a read job owns (allocated before any timed batch).
struct ReadBuffers {
    local: Vec<u8>,
    lin: Vec<u8>,
    dst: Vec<u8>,
    codec: Codec,
}

/// The begin of a section in `mode`: the object's address (a linear view: for `sg`, two
/// segments are linearised into `lin`). `None` on error.
///
/// # Safety
/// `w` holds a live object of `len` bytes; the section must be ended with `read_end_raw`.
#[inline(always)]
unsafe fn begin(
    pool: &AnyPool,
    sg: bool,
    w: &AtomicUsize,
    len: usize,
    local: *mut u8,
    lin: *mut u8,
) -> Option<*const u8> {
    if sg {
        // SAFETY: the caller's contract.
        let (segs, n) = unsafe { pool.read_sg_begin_raw(w, len) }.ok()?;
        if n == 2 {
            // SAFETY: the segments are valid for their lengths until the end; `lin` holds a
            // page, and the two lengths sum to `len` <= page; the regions do not overlap.
            unsafe {
                std::ptr::copy_nonoverlapping(segs[0].0, lin, segs[0].1);
                std::ptr::copy_nonoverlapping(segs[1].0, lin.add(segs[0].1), segs[1].1);
            }
            Some(lin as *const u8)
        } else {
            Some(segs[0].0)
        }
    } else {
        // SAFETY: the caller's contract; `local` holds a page + 8 bytes.
        unsafe { pool.read_begin_raw(w, len, local) }.ok()
    }
}

impl Filled<'_> {
    fn read_round(
        &self,
        mode: &str,
        bufs: &mut ReadBuffers,
        ctx: PassCtx<'_>,
        key: &str,
        evict: &mut dyn FnMut(),
    ) -> LabResult<ReadRound> {
        let PassCtx { batch, counter, cg } = ctx;
        let sg = mode == "sg";
        // zswap copies an object whose address is not in the linear map: in `map` the
        // spanning objects (mapped side by side), in `contiguous` every object (a vmalloc'd
        // zspage); `copy` and `sg` hand it page or buffer addresses.
        let zswap_copies = |g: &Group| mode == "contiguous" || (mode == "map" && g.spanning);
        let page = self.corpus.page;
        let pool = &self.pool;
        let words = &self.words;
        let objs = &self.objs;
        let mut out = Vec::new();
        let fail = |what: &str| LabError::runtime(format!("a {what} read failed in mode {mode}"));
        for g in &self.groups {
            let gk = |what: &str| format!("read|{key}|{}|{}|{what}", g.kind.name(), g.spanning);
            let ReadBuffers { local, lin, dst, codec } = &mut *bufs;
            let (local, lin) = (local.as_mut_ptr(), lin.as_mut_ptr());
            let section = |i: u32| {
                let (w, len) = (&words[i as usize], objs[i as usize].len as usize);
                // SAFETY: `w` holds a live object of `len` bytes; ended right after.
                match unsafe { begin(pool, sg, w, len, local, lin) } {
                    Some(p) => {
                        black_box(p);
                        // SAFETY: ends the section just begun on `w`.
                        unsafe { pool.read_end_raw(w, Some(len)) }.is_ok()
                    }
                    None => false,
                }
            };
            evict();
            let s = instructions::pass(
                cg,
                || gk("section"),
                || timed_pass(&g.order, batch, counter, section),
            )
            .ok_or_else(|| fail("section"))?;
            let mut read = |i: u32, copy_first: bool| {
                let o = objs[i as usize];
                let (w, len) = (&words[i as usize], o.len as usize);
                // SAFETY: `w` holds a live object of `len` bytes; ended below.
                let Some(mut p) = (unsafe { begin(pool, sg, w, len, local, lin) }) else {
                    return false;
                };
                if copy_first {
                    // SAFETY: `p` is valid for `len` bytes until the end; `lin` holds a page
                    // and is not the object's address in these modes.
                    unsafe { std::ptr::copy_nonoverlapping(p, lin, len) };
                    p = lin;
                }
                // SAFETY: `p` is valid for `len` bytes until the section ends.
                let src = unsafe { std::slice::from_raw_parts(p, len) };
                let n = if o.raw {
                    dst.copy_from_slice(src);
                    page
                } else {
                    codec.decompress(src, dst).unwrap_or(0)
                };
                // SAFETY: ends the section just begun on `w`.
                let ended = unsafe { pool.read_end_raw(w, Some(len)) }.is_ok();
                ended && n == page
            };
            evict();
            let r = instructions::pass(
                cg,
                || gk("read"),
                || timed_pass(&g.order, batch, counter, |i| read(i, false)),
            )
            .ok_or_else(|| fail("decompressing"))?;
            let z = if zswap_copies(g) {
                evict();
                Some(
                    instructions::pass(
                        cg,
                        || gk("zswap"),
                        || timed_pass(&g.order, batch, counter, |i| read(i, true)),
                    )
                    .ok_or_else(|| fail("zswap"))?,
                )
            } else {
                None
            };
            out.push((s, r, z));
        }
        Ok(out)
    }

    /// One round of writes: per path, `batches` batches of stores into `scratch`, each freed
    /// untimed.
    fn write_round(
        &self,
        scratch: &[AtomicUsize],
        picks: &[u32],
        ctx: PassCtx<'_>,
        key: &str,
        evict: &mut dyn FnMut(),
    ) -> LabResult<[Pass; 2]> {
        let PassCtx { counter, cg, .. } = ctx;
        let huge = self.pool.huge_class_size();
        let pool = &self.pool;
        let mut res = [Pass::default(), Pass::default()];
        for (pi, res) in res.iter_mut().enumerate() {
            let mut at = 0usize;
            let op = |e: u32| {
                let (data, _) = self.corpus.stored(e as usize, huge);
                let w = &scratch[at];
                at += 1;
                // SAFETY: `w` is 0 (freed after each batch) and stays at its address until
                // freed below.
                unsafe {
                    if pi == 0 {
                        pool.store_raw(w, data).is_ok()
                    } else {
                        pool.malloc_raw(w, data.len()).is_ok() && pool.write_raw(w, data).is_ok()
                    }
                }
            };
            let path = if pi == 0 { "store" } else { "malloc_write" };
            evict();
            let k = || format!("write|{key}|{path}");
            let p = instructions::pass(cg, k, || timed_pass(picks, scratch.len(), counter, op))
                .ok_or_else(|| LabError::runtime("a timed store failed"))?;
            for w in scratch {
                // SAFETY: each word holds the object just stored (or 0, refused harmlessly).
                let _ = unsafe { pool.free_raw(w) };
            }
            *res = p;
        }
        Ok(res)
    }
}

/// What one job of a round returns.
enum JobOut {
    Empty(Pass),
    Read(ReadRound),
    Write([Pass; 2]),
}

type Job<'a> = Box<dyn FnMut(usize) -> LabResult<JobOut> + 'a>;

fn median(v: &[f64]) -> f64 {
    Samples::of(v).map_or(0.0, |s| s.median)
}

fn samples(v: &[f64]) -> Samples {
    Samples::of(v).unwrap_or(Samples { min: 0.0, median: 0.0, max: 0.0, n: 0 }).rounded(2)
}

/// Runs the study.
pub fn run(opts: &CostOptions, sink: &ProgressSink) -> LabResult<CostReport> {
    opts.check()?;
    let cg = opts.instructions == InstructionSource::Callgrind;
    let counter = if cg { None } else { InstructionCounter::open() };
    let scope = if cg || counter.is_some() { Some("user") } else { None };
    let load_before = hw::load_average();
    let progress = RefCell::new(Progress::new(sink, "cost"));

    // Which modes the core accepts (the mode list is data; `ReadMode::parse` decides).
    let mut skipped = Vec::new();
    let mut modes = Vec::new();
    for m in &opts.modes {
        match ReadMode::parse(pool_mode(m)) {
            Ok(_) => modes.push(m.clone()),
            Err(e) => skipped.push(Skipped {
                mode: m.clone(),
                label: "*".into(),
                reason: match e {
                    zsmalloc_core::Error::Config { message, .. } => message,
                    other => other.to_string(),
                },
            }),
        }
    }
    if modes.is_empty() {
        let why: Vec<String> =
            skipped.iter().map(|s| format!("{}: {}", s.mode, s.reason)).collect();
        return Err(LabError::usage(format!("no mode can run: {}", why.join("; "))));
    }

    // Corpora: one per page size, compressed per compressor.
    let mut page_sizes: Vec<u32> = opts.specs.iter().map(|s| s.config.page_size).collect();
    page_sizes.sort_unstable();
    page_sizes.dedup();
    let source = opts.source.describe();
    let mut corpora: Vec<((u32, Algo), Compressed)> = Vec::new();
    for &ps in &page_sizes {
        let raw = opts.source.load(ps as usize, opts.max_pages)?;
        if raw.is_empty() {
            return Err(LabError::usage(format!("{source}: no pages to read")));
        }
        for &a in &opts.compressors {
            let c = Compressed::build(raw.clone(), ps as usize, a, opts.level, &source)?;
            corpora.push(((ps, a), c));
        }
    }

    // Pools: per configuration, compressor and pool read mode (`copy` and `sg` share one).
    // Every pool of one corpus holds it the same number of times (so pages compare): enough
    // for the target size and for a batch of distinct objects in every regular row.
    let mut filled: Vec<Filled<'_>> = Vec::new();
    let mut read_jobs: Vec<(usize, String)> = Vec::new();
    let mut write_jobs: Vec<usize> = Vec::new();
    for ((ps, _), corpus) in &corpora {
        let first = filled.len();
        for spec in opts.specs.iter().filter(|s| s.config.page_size == *ps) {
            let mut by_pool_mode: Vec<(&str, usize)> = Vec::new();
            for m in &modes {
                let pm = pool_mode(m);
                let idx = match by_pool_mode.iter().find(|(p, _)| *p == pm) {
                    Some(&(_, i)) => i,
                    None => {
                        // A pool the core refuses skips the mode (unless it is the only one).
                        let pool = match make_pool(spec, m) {
                            Ok(p) => p,
                            Err(e) if opts.modes.len() > 1 => {
                                skipped.push(Skipped {
                                    mode: m.clone(),
                                    label: spec.label.clone(),
                                    reason: e.to_string(),
                                });
                                continue;
                            }
                            Err(e) => return Err(e),
                        };
                        let r0 = replicas_for(corpus, pool.huge_class_size(), opts.pool_bytes);
                        let mut f = Filled::new(spec, pool, corpus, r0 * MAX_REPLICA_FACTOR)?;
                        f.extend_to(r0)?;
                        filled.push(f);
                        by_pool_mode.push((pm, filled.len() - 1));
                        filled.len() - 1
                    }
                };
                read_jobs.push((idx, m.clone()));
            }
            if let Some(&(_, i)) = by_pool_mode.first() {
                write_jobs.push(i);
            }
        }
        let want = filled[first..]
            .iter()
            .map(|f| f.replicas_needed(opts.batch).max(f.facts.replicas))
            .max()
            .unwrap_or(1);
        let cap = filled[first..]
            .iter()
            .map(|f| (f.words.len() / corpus.entries.len()) as u64)
            .min()
            .unwrap_or(1);
        for f in &mut filled[first..] {
            f.extend_to(want.min(cap))?;
            f.finish(opts.seed);
        }
    }
    let handle_memory = handle_memory(opts, &corpora)?;

    // The rounds: the empty batch, every read job, every write job, round by round.
    let batch = opts.batch;
    let counter = counter.as_ref();
    let filled_ref = &filled;
    // Under callgrind the caches do not matter (and the buffer would cost minutes).
    let evictor =
        RefCell::new(hw::Evictor::new(if cg { 0 } else { default_pool_bytes() as usize }));
    let evictor = &evictor;
    let mut jobs: Vec<Job<'_>> = Vec::new();
    let empty_order: Vec<u32> = (0..batch as u32).collect();
    {
        let order = empty_order.clone();
        let progress = &progress;
        jobs.push(Box::new(move |_| {
            let p = instructions::pass(
                cg,
                || "empty".to_string(),
                || timed_pass(&order, batch, counter, |i| black_box(i) != u32::MAX),
            )
            .ok_or_else(|| LabError::runtime("the empty batch failed"))?;
            progress.borrow_mut().tick(1);
            Ok(JobOut::Empty(p))
        }));
    }
    for (fi, mode) in &read_jobs {
        let f = &filled_ref[*fi];
        let page = f.corpus.page;
        let mut bufs = ReadBuffers {
            local: vec![0u8; page + 64],
            lin: vec![0u8; page + 64],
            dst: vec![0u8; page],
            codec: Codec::new(
                if f.corpus.facts.compressor == "zstd" { Algo::Zstd } else { Algo::Lz4 },
                opts.level,
            )?,
        };
        let mode = mode.clone();
        let progress = &progress;
        let key = format!("{}|{}|{}", f.facts.label, f.facts.compressor, mode);
        jobs.push(Box::new(move |_| {
            let mut evict = || evictor.borrow_mut().run();
            let r =
                f.read_round(&mode, &mut bufs, PassCtx { batch, counter, cg }, &key, &mut evict)?;
            progress.borrow_mut().tick(1);
            Ok(JobOut::Read(r))
        }));
    }
    for &fi in &write_jobs {
        let f = &filled_ref[fi];
        let scratch: Box<[AtomicUsize]> = (0..batch).map(|_| AtomicUsize::new(0)).collect();
        let mut rng = ChaCha8Rng::seed_from_u64(opts.seed ^ 0x3717e5);
        // Entries the pool stores (the first replica's objects are the corpus in order).
        let stored: Vec<u32> = (0..f.corpus.entries.len().min(f.keyed.len()) as u32)
            .filter(|&e| f.keyed[e as usize].0 != Kind::Refused)
            .collect();
        if stored.is_empty() {
            return Err(LabError::runtime(format!(
                "{}: the pool refused every object of the corpus",
                f.facts.label
            )));
        }
        let picks: Vec<u32> = (0..batch).map(|_| stored[rng.gen_range(0..stored.len())]).collect();
        let progress = &progress;
        let key = format!("{}|{}", f.facts.label, f.facts.compressor);
        jobs.push(Box::new(move |_| {
            let mut evict = || evictor.borrow_mut().run();
            let r =
                f.write_round(&scratch, &picks, PassCtx { batch, counter, cg }, &key, &mut evict)?;
            progress.borrow_mut().tick(1);
            Ok(JobOut::Write(r))
        }));
    }
    progress.borrow_mut().set_total((jobs.len() * opts.repeat) as u64);
    let results = interleave(opts.repeat, &mut jobs)?;
    drop(jobs);
    progress.borrow_mut().finish();

    // Figures.
    let empties: Vec<Pass> = results[0]
        .iter()
        .filter_map(|o| if let JobOut::Empty(p) = o { Some(*p) } else { None })
        .collect();
    let per_batch: Vec<f64> =
        empties.iter().map(|p| p.ns as f64 / p.batches.max(1) as f64).collect();
    let overhead = median(&per_batch);
    let empty_instr: Option<u64> = {
        let v: Vec<f64> = empties
            .iter()
            .filter_map(|p| p.instructions.map(|i| i as f64 / p.batches.max(1) as f64))
            .collect();
        (!v.is_empty()).then(|| median(&v).round() as u64)
    };
    let instr = |ps: &[Pass]| -> Option<u64> {
        let v: Vec<f64> = ps.iter().filter_map(|p| p.instructions_per_op(empty_instr)).collect();
        (v.len() == ps.len() && !v.is_empty()).then(|| median(&v).round() as u64)
    };
    let mut reads = Vec::new();
    for (ji, (fi, mode)) in read_jobs.iter().enumerate() {
        let f = &filled[*fi];
        let rounds: Vec<&ReadRound> = results[1 + ji]
            .iter()
            .filter_map(|o| if let JobOut::Read(r) = o { Some(r) } else { None })
            .collect();
        for (gi, g) in f.groups.iter().enumerate() {
            let s: Vec<Pass> = rounds.iter().map(|r| r[gi].0).collect();
            let r: Vec<Pass> = rounds.iter().map(|r| r[gi].1).collect();
            let z: Vec<Pass> = rounds.iter().map(|r| r[gi].2.unwrap_or(r[gi].1)).collect();
            let sv: Vec<f64> = s.iter().map(|p| p.per_op(overhead)).collect();
            let rv: Vec<f64> = r.iter().map(|p| p.per_op(overhead)).collect();
            let dv: Vec<f64> = sv.iter().zip(&rv).map(|(a, b)| (b - a).max(0.0)).collect();
            let zv: Vec<f64> = z.iter().map(|p| p.per_op(overhead)).collect();
            let faults: Vec<f64> =
                s.iter().map(|p| p.faults as f64 / p.ops.max(1) as f64).collect();
            reads.push(ReadRow {
                label: f.facts.label.clone(),
                compressor: f.facts.compressor.clone(),
                mode: mode.clone(),
                kind: g.kind,
                spanning: g.spanning,
                objects: g.order.len() as u64,
                reads: s.first().map_or(0, |p| p.ops),
                ns_per_section: samples(&sv),
                ns_per_decompress: samples(&dv),
                ns_per_read: samples(&rv),
                ns_per_read_zswap: samples(&zv),
                zswap_copies: rounds.first().is_some_and(|r| r[gi].2.is_some()),
                instructions_per_section: instr(&s),
                instructions_per_read: instr(&r),
                instructions_scope: scope,
                minor_faults_per_section: (median(&faults) * 1e4).round() / 1e4,
                mean_len: (g.mean_len * 10.0).round() / 10.0,
            });
        }
    }
    let mut writes = Vec::new();
    for (ji, &fi) in write_jobs.iter().enumerate() {
        let f = &filled[fi];
        let rounds: Vec<[Pass; 2]> = results[1 + read_jobs.len() + ji]
            .iter()
            .filter_map(|o| if let JobOut::Write(r) = o { Some(*r) } else { None })
            .collect();
        for (pi, path) in ["store", "malloc_write"].into_iter().enumerate() {
            let ps: Vec<Pass> = rounds.iter().map(|r| r[pi]).collect();
            let v: Vec<f64> = ps.iter().map(|p| p.per_op(overhead)).collect();
            let faults: Vec<f64> =
                ps.iter().map(|p| p.faults as f64 / p.ops.max(1) as f64).collect();
            writes.push(WriteRow {
                label: f.facts.label.clone(),
                compressor: f.facts.compressor.clone(),
                path,
                writes: ps.first().map_or(0, |p| p.ops),
                ns_per_write: samples(&v),
                instructions_per_write: instr(&ps),
                instructions_scope: scope,
                minor_faults_per_write: (median(&faults) * 1e4).round() / 1e4,
            });
        }
    }
    let pools: Vec<PoolFacts> = write_jobs.iter().map(|&i| filled[i].facts.clone()).collect();
    let environment = Environment {
        backing: "anonymous",
        transparent_hugepage: hw::thp(),
        last_level_cache_bytes: hw::last_level_cache_bytes(),
        pool_bytes_target: opts.pool_bytes,
        load_average_before: load_before,
        load_average_after: hw::load_average(),
        batch,
        rounds: opts.repeat,
        seed: opts.seed,
        instruction_counter: if cg {
            "callgrind"
        } else if counter.is_some() {
            "perf_event_open"
        } else {
            "none"
        },
    };
    let summary = report::summarize(&pools, &reads);
    let corpus = corpora.iter().map(|(_, c)| c.facts.clone()).collect();
    drop(filled);
    Ok(CostReport {
        corpus,
        environment,
        timer_overhead_ns: samples(&per_batch),
        pools,
        reads,
        writes,
        skipped,
        handle_memory,
        summary,
    })
}

/// Heap bytes of pool-owned handle slots per object, measured on a safe-layer pool of the
/// first zsmalloc configuration (the other backends have no safe layer).
fn handle_memory(
    opts: &CostOptions,
    corpora: &[((u32, Algo), Compressed)],
) -> LabResult<Option<HandleMemory>> {
    let Some(spec) = opts.specs.iter().find(|s| s.is_zsmalloc()) else { return Ok(None) };
    let Some((_, corpus)) = corpora.iter().find(|(k, _)| k.0 == spec.config.page_size) else {
        return Ok(None);
    };
    let any = make_pool(spec, "copy")?;
    let Some(pool) = any.as_zsmalloc() else { return Ok(None) };
    let huge = pool.huge_class_size();
    let before = pool.metadata_bytes().1;
    let n = corpus.entries.len().min(65_536);
    let mut handles = Vec::with_capacity(n);
    for e in 0..n {
        handles.push(pool.store(corpus.stored(e, huge).0)?);
    }
    let after = pool.metadata_bytes().1;
    drop(handles);
    Ok(Some(HandleMemory {
        embedded_bytes_per_object: std::mem::size_of::<AtomicUsize>() as u64,
        pool_slot_bytes_per_object: ((after.saturating_sub(before)) as f64 / n.max(1) as f64
            * 100.0)
            .round()
            / 100.0,
        objects: n as u64,
    }))
}
