//! Filling a pool with the compressed corpus, stored as zram stores it, each object read back,
//! verified and classified (kind, spanning, class), then the rows' visiting orders.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use zsmalloc_core::{AnyPool, Backend, Error, ReadMode, HDR};

use super::compressed::Compressed;
use super::model::{Kind, PoolFacts};
use super::options::Mode;
use crate::config::ConfigSpec;
use crate::error::{LabError, LabResult};

/// Why a pool of a configuration in a read mode could not be made.
#[derive(Debug, Clone)]
pub enum PoolRefusal {
    /// The configuration refuses the read mode (the lab's wording of the setting).
    Config(LabError),
    /// The core could not create the pool.
    Create(Error),
}

impl PoolRefusal {
    /// The error as a study mode reports it.
    pub fn for_mode(&self, mode: Mode) -> LabError {
        match self {
            PoolRefusal::Config(e) => e.clone(),
            PoolRefusal::Create(e) => LabError::runtime(format!("mode {}: {e}", mode.name())),
        }
    }
}

/// A pool of `spec` in the pool read mode `mode`.
pub fn make_pool(spec: &ConfigSpec, mode: ReadMode) -> Result<AnyPool, PoolRefusal> {
    let mut s = spec.clone();
    s.config.read_mode = mode;
    let cfg = s.pool_config().map_err(PoolRefusal::Config)?;
    AnyPool::with_name(&spec.label, cfg).map_err(PoolRefusal::Create)
}

/// What the fill learned about one object.
#[derive(Debug, Clone, Copy)]
pub struct Placed {
    pub kind: Kind,
    /// Its bytes lie across two pages (only regular objects of zsmalloc span).
    pub spanning: bool,
    /// The page stored raw: read back by a copy, not decompressed.
    pub raw: bool,
    /// Stored length.
    pub len: u32,
    /// Size of the class (zsmalloc) or block type (zblock) that holds it; its length for malloc.
    pub class_size: u32,
}

/// The objects of one row, in visiting order.
pub struct Group {
    pub kind: Kind,
    pub spanning: bool,
    pub order: Vec<u32>,
    pub mean_len: f64,
}

/// Regular objects per copy of the corpus: the scarcer of the two splits decides how many
/// copies give a row a batch of distinct objects.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RegularCounts {
    pub spanning: u64,
    pub in_place: u64,
}

impl RegularCounts {
    /// Copies of the corpus that give each non-empty regular row `batch` objects, when
    /// `replicas` copies hold these counts.
    pub fn replicas_for_batch(self, batch: usize, replicas: u64) -> u64 {
        let r = replicas.max(1);
        [self.spanning, self.in_place]
            .into_iter()
            .filter(|&c| c > 0)
            .map(|c| (batch as u64 * r).div_ceil(c))
            .max()
            .unwrap_or(r)
    }
}

/// One filled pool (one configuration, compressor and pool read mode).
pub struct Filled<'c> {
    pub pool: AnyPool,
    /// One handle word per object, at stable addresses (a boxed slice never moves).
    pub words: Box<[AtomicUsize]>,
    /// Per object, in the order stored (the index of its word).
    pub placed: Vec<Placed>,
    pub groups: Vec<Group>,
    pub corpus: &'c Compressed,
    pub facts: PoolFacts,
}

impl Drop for Filled<'_> {
    fn drop(&mut self) {
        for w in self.words.iter() {
            if w.load(Ordering::Relaxed) != 0 {
                // SAFETY: `w` is one of this pool's handle words, at a stable address (the
                // boxed slice), with no section open.
                let _ = unsafe { self.pool.free_raw(w) };
            }
        }
    }
}

impl<'c> Filled<'c> {
    /// `pool`, empty, with handle words for `capacity` copies of `corpus`.
    pub fn new(
        spec: &ConfigSpec,
        pool: AnyPool,
        corpus: &'c Compressed,
        capacity: u64,
    ) -> LabResult<Self> {
        if corpus.objects() == 0 {
            return Err(LabError::usage(
                "the corpus has no page to store (every page is same-filled)".to_string(),
            ));
        }
        let n = corpus.objects() * capacity as usize;
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
        Ok(Filled { pool, words, placed: Vec::with_capacity(n), groups: Vec::new(), corpus, facts })
    }

    /// Stores the corpus again until it is in the pool `replicas` times (at most the capacity),
    /// in the order one fill from empty takes (placement does not depend on how it was
    /// reached), verifying and classifying each new object.
    pub fn extend_to(&mut self, replicas: u64) -> LabResult<()> {
        let corpus = self.corpus;
        let huge = self.pool.huge_class_size();
        let mut buf = vec![0u8; corpus.page];
        let table = self.pool.as_zsmalloc().map(|z| z.class_table());
        // The other backends' rows: zblock's block types (by `lookup_class_index`), none for
        // malloc (its objects are reported at their own length).
        let rows = if table.is_none() { self.pool.class_stats() } else { Vec::new() };
        let n = (corpus.objects() * replicas as usize).min(self.words.len());
        for i in self.placed.len()..n {
            let stored = corpus.stored(i % corpus.objects(), huge);
            let (data, raw) = (stored.bytes, stored.raw);
            let w = &self.words[i];
            let len = data.len();
            let placed = |kind, spanning, class_size| Placed {
                kind,
                spanning,
                raw,
                len: len as u32,
                class_size,
            };
            // SAFETY: `w` is 0 and stays at this address (boxed slice) until freed in `Drop`.
            match unsafe { self.pool.store_raw(w, data) } {
                Ok(()) => {}
                Err(Error::TooLarge { .. }) if table.is_none() => {
                    self.placed.push(placed(Kind::Refused, false, 0));
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
                self.placed.push(placed(kind, false, size));
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
            self.placed.push(placed(kind, spans, class.size));
        }
        self.facts.replicas = (self.placed.len() / corpus.objects()) as u64;
        Ok(())
    }

    /// Regular objects of each split, over every copy stored.
    pub fn regular_counts(&self) -> RegularCounts {
        let count = |span: bool| {
            self.placed.iter().filter(|p| p.kind == Kind::Regular && p.spanning == span).count()
                as u64
        };
        RegularCounts { spanning: count(true), in_place: count(false) }
    }

    /// The rows' visiting orders (seeded) and the pool's facts.
    pub fn finish(&mut self, seed: u64) {
        let placed = &self.placed;
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5eed_c057);
        self.groups.clear();
        for (kind, span) in [
            (Kind::Regular, true),
            (Kind::Regular, false),
            (Kind::Huge, false),
            (Kind::Incompressible, false),
        ] {
            let mut order: Vec<u32> = (0..placed.len() as u32)
                .filter(|&i| placed[i as usize].kind == kind && placed[i as usize].spanning == span)
                .collect();
            if order.is_empty() {
                continue;
            }
            order.shuffle(&mut rng);
            let mean_len = order.iter().map(|&i| f64::from(placed[i as usize].len)).sum::<f64>()
                / order.len() as f64;
            self.groups.push(Group { kind, spanning: span, order, mean_len });
        }
        let mut per_class: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
        for p in placed.iter().filter(|p| p.kind != Kind::Refused) {
            let c = per_class.entry(p.class_size).or_default();
            c.0 += 1;
            c.1 += u64::from(p.spanning);
        }
        let count = |f: &dyn Fn(&Placed) -> bool| placed.iter().filter(|p| f(p)).count() as u64;
        let st = self.pool.stats();
        let f = &mut self.facts;
        f.pages = self.pool.total_pages();
        f.refused_objects = count(&|p| p.kind == Kind::Refused);
        f.objects = placed.len() as u64 - f.refused_objects;
        f.bytes_stored = st.bytes_stored;
        f.spanning_objects = count(&|p| p.spanning);
        f.huge_objects = count(&|p| p.kind == Kind::Huge);
        f.incompressible_objects = count(&|p| p.kind == Kind::Incompressible);
        f.classes = per_class.into_iter().map(|(s, (a, b))| (s, a, b)).collect();
    }

    /// Objects of the first copy the pool stores (the corpus in order), for the write rounds.
    pub fn stored_entries(&self) -> Vec<u32> {
        (0..self.corpus.objects().min(self.placed.len()) as u32)
            .filter(|&e| self.placed[e as usize].kind != Kind::Refused)
            .collect()
    }
}

/// Bytes the lab keeps per object of a filled pool, outside the pool: its handle word, its
/// [`Placed`] record and its place in a visiting order.
pub const LAB_BYTES_PER_OBJECT: u64 =
    (std::mem::size_of::<AtomicUsize>() + std::mem::size_of::<Placed>() + 4) as u64;
