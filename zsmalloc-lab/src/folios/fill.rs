//! The RFC's store, then swap's churn: the corpus compressed in folio-sized blocks, one object
//! per folio (same-filled folios kept outside the pool, a compressed length at or above the
//! huge size stored raw), a seeded share swapped in (freed) and as many new folios stored,
//! then `compact`; optionally written down as a trace (`--trace-dir`) that ends with a read of
//! every folio still out, for `replay` and `optimize trace` to run again.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use zsmalloc_codec::{same_filled, Codec};
use zsmalloc_core::{Handle, Pool, HDR};

use super::row::{ClassPadding, Compaction};
use crate::error::{LabError, LabResult};
use crate::timing::CpuTimer;
use crate::trace_format::{TraceOp, TraceWriter};
use crate::zram_page::ZramPage;

/// How one folio of the corpus is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kept {
    /// Same-filled by this word: nothing in the pool.
    Same(u64),
    /// Compressed: `len` bytes at `at` of the compressed copy.
    Compressed { at: u64, len: u32 },
    /// Raw: the folio itself.
    Raw,
}

/// The corpus compressed in folios of `folio` bytes.
pub struct Compressed {
    pub folio: usize,
    pub kept: Vec<Kept>,
    /// The compressed folios, end to end.
    pub bytes: Vec<u8>,
    /// The compressor's output over every folio that is not same-filled.
    pub compressed_bytes: u64,
    pub seconds: f64,
}

impl Compressed {
    /// Compresses every folio of `corpus` (a whole number of folios); `huge` decides raw.
    pub fn of(corpus: &[u8], folio: usize, huge: usize, codec: &mut Codec) -> LabResult<Self> {
        let n = corpus.len() / folio;
        let mut kept = crate::memory::try_vec(n, "--max-pages")?;
        let mut bytes = crate::memory::try_vec(corpus.len() / 2, "--max-pages")?;
        let mut out = vec![0u8; zsmalloc_codec::bound(folio)];
        let mut compressed_bytes = 0u64;
        let mut timer = CpuTimer::new();
        timer.time(|| -> LabResult<()> {
            for f in corpus.chunks_exact(folio) {
                if let Some(w) = same_filled(f) {
                    kept.push(Kept::Same(w));
                    continue;
                }
                let len = codec.compress(f, &mut out)?;
                compressed_bytes += len as u64;
                kept.push(match ZramPage::for_length(len, huge) {
                    ZramPage::Compressed(len) => {
                        let at = bytes.len() as u64;
                        bytes.try_reserve(len).map_err(|_| {
                            LabError::usage("cannot hold the compressed corpus: lower --max-pages")
                        })?;
                        bytes.extend_from_slice(&out[..len]);
                        Kept::Compressed { at, len: len as u32 }
                    }
                    _ => Kept::Raw,
                });
            }
            Ok(())
        })?;
        Ok(Compressed { folio, kept, bytes, compressed_bytes, seconds: timer.seconds() })
    }

    /// What the pool is given for folio `i` (`None`: same-filled).
    pub fn object<'a>(&'a self, corpus: &'a [u8], i: usize) -> Option<&'a [u8]> {
        match self.kept[i] {
            Kept::Same(_) => None,
            Kept::Raw => Some(&corpus[i * self.folio..(i + 1) * self.folio]),
            Kept::Compressed { at, len } => Some(&self.bytes[at as usize..][..len as usize]),
        }
    }
}

/// The pool after the fill and the churn.
pub struct Filled<'p> {
    /// One slot per folio of the corpus: the folio it holds now ([`FREED`]: none) and its
    /// object.
    pub slots: Vec<(u32, Option<Handle<&'p Pool>>)>,
    pub objects: u64,
    pub pages_used: u64,
    pub padding_bytes: u64,
    pub unused_bytes: u64,
    pub padding_classes: Vec<ClassPadding>,
    pub churned: u64,
    pub refilled: u64,
    pub max_pages_used: u64,
    pub pages_after_compaction: u64,
    pub compaction: Compaction,
}

/// A slot whose folio was swapped in and not replaced.
pub const FREED: u32 = u32::MAX;

/// Swap's churn: `share` of the folios swapped in, `refill` of that many stored anew.
#[derive(Debug, Clone, Copy)]
pub struct Churn {
    pub share: f64,
    pub refill: f64,
    pub seed: u64,
}

/// Fills `pool` with every folio, churns (seeded), compacts; `trace` (ids: the slots) gets
/// each operation, then a read of every object left.
pub fn fill_and_churn<'p>(
    pool: &'p Pool,
    corpus: &[u8],
    c: &Compressed,
    churn: Churn,
    mut trace: Option<&mut TraceWriter>,
) -> LabResult<Filled<'p>> {
    let mut record = |op: TraceOp| trace.as_mut().map_or(Ok(()), |t| t.op(&op));
    let n = c.kept.len();
    let mut slots = crate::memory::try_vec(n, "--max-pages")?;
    for i in 0..n {
        let h = c.object(corpus, i).map(|o| pool.store(o)).transpose()?;
        if let Some(h) = &h {
            record(TraceOp::Store { id: i as u64, len: h.len() })?;
        }
        slots.push((i as u32, h));
    }
    let stats = pool.stats();
    let (padding_bytes, class_bytes, padding_classes) = padding(pool, &slots);
    let (objects, pages_used) = (stats.objs_inuse, stats.pages_allocated);
    let unused_bytes =
        (pages_used * u64::from(pool.config().page_size)).saturating_sub(class_bytes);
    // Swap-in of a seeded share (a partial Fisher-Yates draw), then as many swap-outs of
    // folios drawn from the corpus.
    let mut rng = ChaCha8Rng::seed_from_u64(churn.seed);
    let churned = ((n as f64) * churn.share).round() as usize;
    let refilled = ((churned as f64) * churn.refill).round() as usize;
    let mut order: Vec<u32> = (0..n as u32).collect();
    for k in 0..churned {
        let j = rng.gen_range(k..n);
        order.swap(k, j);
        let slot = &mut slots[order[k] as usize];
        slot.0 = FREED;
        if let Some(h) = slot.1.take() {
            h.free()?;
            record(TraceOp::Free { id: u64::from(order[k]) })?;
        }
    }
    for &slot in &order[..refilled] {
        let src = rng.gen_range(0..n);
        let h = c.object(corpus, src).map(|o| pool.store(o)).transpose()?;
        if let Some(h) = &h {
            record(TraceOp::Store { id: u64::from(slot), len: h.len() })?;
        }
        slots[slot as usize] = (src as u32, h);
    }
    let before = pool.stats();
    pool.compact();
    record(TraceOp::Compact)?;
    for (i, h) in slots.iter().enumerate() {
        if let Some(h) = &h.1 {
            record(TraceOp::Read { id: i as u64, len: h.len() })?;
        }
    }
    let after = pool.stats();
    Ok(Filled {
        slots,
        objects,
        pages_used,
        padding_bytes,
        unused_bytes,
        padding_classes,
        churned: churned as u64,
        refilled: refilled as u64,
        max_pages_used: after.pages_peak,
        pages_after_compaction: after.pages_allocated,
        compaction: Compaction {
            objects_moved: after.objs_moved - before.objs_moved,
            bytes_moved: after.bytes_moved - before.bytes_moved,
        },
    })
}

/// Class size less length and header, summed over the stored objects; the class sizes summed;
/// the five classes with the most padding.
fn padding(pool: &Pool, slots: &[(u32, Option<Handle<&Pool>>)]) -> (u64, u64, Vec<ClassPadding>) {
    let table = pool.class_table();
    let classes = table.classes();
    let mut per = vec![(0u64, 0u64); classes.len()];
    for h in slots.iter().filter_map(|s| s.1.as_ref()) {
        let pos = table.position(h.len() + HDR as usize);
        let c = &classes[pos];
        let used = if c.huge { h.len() } else { h.len() + HDR as usize };
        per[pos].0 += 1;
        per[pos].1 += (c.size as usize).saturating_sub(used) as u64;
    }
    let total = per.iter().map(|p| p.1).sum();
    let class_bytes = per.iter().zip(classes).map(|(p, c)| p.0 * u64::from(c.size)).sum();
    let mut rows: Vec<ClassPadding> = per
        .iter()
        .enumerate()
        .filter(|(_, p)| p.0 > 0)
        .map(|(pos, &(objects, padding_bytes))| {
            let c = &classes[pos];
            let previous = pos
                .checked_sub(1)
                .map(|q| &classes[q])
                .filter(|p| (p.size > table.page_size()) == (c.size > table.page_size()))
                .map_or(0, |p| p.size);
            ClassPadding {
                class_size: c.size,
                previous_class_size: previous,
                objects,
                padding_bytes,
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        b.padding_bytes.cmp(&a.padding_bytes).then(a.class_size.cmp(&b.class_size))
    });
    rows.truncate(5);
    (total, class_bytes, rows)
}
