//! Swap-in and swap-out timed on a seeded sample of the pool's folios, with the real
//! decompressors and compressors, on the thread CPU clock, the paths interleaved round by round.
//!
//! A folio of `n` pages comes back one of three ways (docs/LAB.md, folios):
//! - `large_folio`: the object read once and decompressed once into the faulting large folio;
//! - `order0_fallback`: no large folio could be allocated, each of the `n` 4K faults reads the
//!   object and decompresses all of it to keep its 4K (`n` decompressions);
//! - `batch_fallback`: RFC v3 4/4, each decompression (into zram's per-CPU buffer of the
//!   multi-page size) fills four small folios, an order-2 batch: `n / 4` decompressions, one for
//!   16K folios and four for 64K.
//!
//! At a folio of one page the three are the same work.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use zsmalloc_codec::{fill_word, same_filled, Codec};
use zsmalloc_core::{Handle, Pool};

use super::fill::{Compressed, Kept, FREED};
use super::row::{ReadPath, Reads, Writes};
use crate::error::{LabError, LabResult};
use crate::timing::{Clock, Samples};

/// Pages a batch fills (an order-2 folio's worth).
const BATCH_PAGES: usize = 4;

/// What one row's timing works on.
pub struct Timed<'a, 'p> {
    pub pool: &'p Pool,
    pub corpus: &'a [u8],
    pub compressed: &'a Compressed,
    pub slots: &'a [(u32, Option<Handle<&'p Pool>>)],
    pub page: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Path {
    Large,
    Order0,
    Batch,
}

/// Slots of the sample: the slots holding a folio in a seeded shuffle, as many as
/// `sample_bytes` holds (at least 1).
pub fn sample(
    slots: &[(u32, Option<Handle<&Pool>>)],
    folio: usize,
    bytes: u64,
    seed: u64,
) -> Vec<usize> {
    let mut order: Vec<usize> = (0..slots.len()).filter(|&i| slots[i].0 != FREED).collect();
    order.shuffle(&mut ChaCha8Rng::seed_from_u64(seed ^ 0x5eed_f011));
    order.truncate(((bytes / folio as u64).max(1) as usize).min(order.len()));
    order
}

struct Buffers {
    obj: Vec<u8>,
    scratch: Vec<u8>,
    out: Vec<u8>,
    packed: Vec<u8>,
}

impl Timed<'_, '_> {
    fn folio(&self) -> usize {
        self.compressed.folio
    }

    /// Brings back the folio of `slot` by `path` into `b.out`; the bytes decompressed.
    fn swap_in(
        &self,
        path: Path,
        slot: usize,
        codec: &mut Codec,
        b: &mut Buffers,
    ) -> LabResult<u64> {
        let folio = self.folio();
        let chunk = match path {
            Path::Large => folio,
            Path::Order0 => self.page,
            Path::Batch => (BATCH_PAGES * self.page).min(folio),
        };
        let (src, h) = &self.slots[slot];
        let kept = self.compressed.kept[*src as usize];
        let mut bytes = 0u64;
        for (k, dst) in b.out.chunks_mut(chunk).enumerate() {
            let h = match (kept, h) {
                (Kept::Same(w), _) => {
                    fill_word(dst, w);
                    continue;
                }
                (_, Some(h)) => h,
                (_, None) => return Err(LabError::runtime("folios: a stored folio has no object")),
            };
            if chunk == folio {
                bytes += self.fetch(kept, h, codec, &mut b.obj, dst)?;
            } else {
                bytes += self.fetch(kept, h, codec, &mut b.obj, &mut b.scratch)?;
                dst.copy_from_slice(&b.scratch[k * chunk..][..dst.len()]);
            }
        }
        Ok(bytes)
    }

    /// The whole folio of object `h` into `into` (a folio long): copied if raw, else
    /// decompressed; the bytes decompressed.
    fn fetch(
        &self,
        kept: Kept,
        h: &Handle<&Pool>,
        codec: &mut Codec,
        obj: &mut [u8],
        into: &mut [u8],
    ) -> LabResult<u64> {
        let Kept::Compressed { len, .. } = kept else {
            self.pool.read_into(h, into)?;
            return Ok(0);
        };
        self.pool.read_into(h, obj)?;
        let folio = self.folio();
        match codec.decompress(&obj[..len as usize], into) {
            Ok(n) if n == folio => Ok(n as u64),
            Ok(n) => Err(LabError::runtime(format!(
                "folios: an object decompressed to {n} bytes, not {folio}"
            ))),
            Err(e) => Err(LabError::runtime(format!("folios: an object did not decompress: {e}"))),
        }
    }

    /// Swap-out of the folio of `slot`: whole, or page by page.
    fn swap_out(
        &self,
        slot: usize,
        by_page: bool,
        codec: &mut Codec,
        b: &mut Buffers,
    ) -> LabResult<()> {
        let folio = self.folio();
        let src = self.slots[slot].0 as usize;
        let f = &self.corpus[src * folio..(src + 1) * folio];
        let unit = if by_page { self.page } else { folio };
        for p in f.chunks(unit) {
            if same_filled(p).is_none() {
                std::hint::black_box(codec.compress(p, &mut b.packed)?);
            }
        }
        Ok(())
    }

    /// Every path and both write forms, `repeat` interleaved rounds over `sample`; also the
    /// thread CPU they took.
    pub fn run(
        &self,
        codec: &mut Codec,
        sample: &[usize],
        repeat: usize,
        fallback_share: f64,
    ) -> LabResult<(Reads, Writes, f64)> {
        let folio = self.folio();
        let mut b = Buffers {
            obj: vec![0u8; folio + 64],
            scratch: vec![0u8; folio],
            out: vec![0u8; folio],
            packed: vec![0u8; zsmalloc_codec::bound(folio)],
        };
        // Untimed: every sampled folio reads back as it was written.
        for &s in sample {
            self.swap_in(Path::Large, s, codec, &mut b)?;
            let src = self.slots[s].0 as usize;
            if b.out[..] != self.corpus[src * folio..(src + 1) * folio] {
                return Err(LabError::runtime("folios: a folio did not read back as written"));
            }
        }
        let pages = (sample.len() * (folio / self.page)).max(1) as f64;
        let paths = [Path::Large, Path::Order0, Path::Batch];
        let mut read_ns = vec![Vec::with_capacity(repeat); paths.len()];
        let mut bytes = [0u64; 3];
        let mut write_ns = [Vec::with_capacity(repeat), Vec::with_capacity(repeat)];
        let mut total_ns = 0u64;
        for round in 0..repeat {
            for (i, &path) in paths.iter().enumerate() {
                let t0 = Clock::now_ns();
                let mut n = 0;
                for &s in sample {
                    n += self.swap_in(path, s, codec, &mut b)?;
                }
                let dt = Clock::now_ns().saturating_sub(t0);
                total_ns += dt;
                read_ns[i].push(dt as f64 / pages);
                if round == 0 {
                    bytes[i] = n;
                }
            }
            for (i, by_page) in [false, true].into_iter().enumerate() {
                let t0 = Clock::now_ns();
                for &s in sample {
                    self.swap_out(s, by_page, codec, &mut b)?;
                }
                let dt = Clock::now_ns().saturating_sub(t0);
                total_ns += dt;
                write_ns[i].push(dt as f64 / pages);
            }
        }
        let samples = |v: &[f64]| {
            Samples::of(v)
                .map(|s| s.rounded(1))
                .ok_or_else(|| LabError::runtime("folios: no timed round"))
        };
        let path = |i: usize| -> LabResult<ReadPath> {
            Ok(ReadPath {
                bytes_decompressed_per_4k: (bytes[i] as f64 / pages).round(),
                ns_per_4k: samples(&read_ns[i])?,
            })
        };
        let (large, order0, batch) = (path(0)?, path(1)?, path(2)?);
        let reads = Reads {
            sample_folios: sample.len() as u64,
            mixed_order0: ReadPath::mix(&large, &order0, fallback_share),
            mixed_batch: ReadPath::mix(&large, &batch, fallback_share),
            large_folio: large,
            order0_fallback: order0,
            batch_fallback: batch,
        };
        let writes =
            Writes { ns_per_4k: samples(&write_ns[0])?, ns_per_4k_by_page: samples(&write_ns[1])? };
        Ok((reads, writes, total_ns as f64 / 1e9))
    }
}
