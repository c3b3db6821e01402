//! Real pages: files or directories split into pages (the last one zero-padded), each
//! compressed with liblz4 or libzstd ([`crate::page_compressors`], as in the cost study) and stored as zram
//! does ([`crate::zram_page`]: same-filled pages kept outside the pool, or stored small here on
//! request; pages whose compressed size reaches `huge_class_size` stored raw) — then
//! every page read back, decompressed and checked against the original.
//! With no path, a seeded synthetic corpus of mixed page types is used. Files are streamed
//! ([`super::files`]): each file read once however many links lead to it, symlink loops not
//! followed around, memory bounded by the pool, not by the corpus.

use std::hash::Hasher;
use std::path::PathBuf;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::json;
use zsmalloc_core::Backend;

use super::files::{self, FilePages, Walk};
use super::{corpus, Extra, SameFilled, WorkloadKind};
pub use zsmalloc_codec::Compressor;
use zsmalloc_codec::{fill_word, is_word_fill, Codec, DEFAULT_ZSTD_LEVEL};

use crate::driver::{Driver, RunPhase};
use crate::error::{LabError, LabResult};
use crate::flag_values;
use crate::memory::{Limit, Plan};
use crate::page_compressors::{LZ4_TAKES_NO_LEVEL, PAGE_COMPRESSORS};
use crate::result::CorpusFacts;
use crate::timing::{Clock, CpuTimer};
use crate::zram_page::ZramPage;

/// The parameters, as `zsmalloc run pages` takes them.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct Pages {
    /// Files or directories, walked recursively in name order [default: the synthetic corpus]
    pub paths: Vec<PathBuf>,
    /// lz4 or zstd
    #[arg(long, value_name = "NAME", default_value = "lz4", value_parser = parse_compressor)]
    pub compressor: Compressor,
    /// zstd level, 1..=22 (refused with lz4, which takes none) [default: 3, zram's]
    #[arg(long, value_name = "N", value_parser = flag_values::signed(1, 22))]
    pub level: Option<i32>,
    /// Pages of the synthetic corpus (without a path)
    #[arg(long, value_name = "N", default_value_t = 16384, value_parser = flag_values::whole::<usize>(1, MAX_PAGES as u64))]
    pub synthetic_pages: usize,
    /// Stop after this many pages
    #[arg(long, value_name = "N", value_parser = flag_values::whole::<usize>(1, u64::MAX))]
    pub max_pages: Option<usize>,
    /// skip (kept outside the pool, as modern zram does) or store (at --same-size bytes)
    #[arg(long, value_name = "MODE", value_enum, hide_possible_values = true, default_value_t = SameFilled::Skip)]
    pub same_filled: SameFilled,
    /// Bytes a same-filled page takes in the pool with `--same-filled store`
    #[arg(long, value_name = "BYTES", default_value_t = 28, value_parser = flag_values::whole::<usize>(1, u64::from(zsmalloc_core::band::MAX_OBJECT)))]
    pub same_size: usize,
    /// Seeds the synthetic corpus (`--seed`).
    #[arg(skip = 1u64)]
    pub seed: u64,
}

impl Default for Pages {
    fn default() -> Self {
        super::defaults()
    }
}

/// `--compressor`; clap's message names the value and the flag, this adds what is accepted.
fn parse_compressor(name: &str) -> Result<Compressor, String> {
    Compressor::parse(name, PAGE_COMPRESSORS)
        .map_err(|_| format!("accepted: {}", Compressor::names(PAGE_COMPRESSORS)))
}

/// Most pages of the synthetic corpus.
const MAX_PAGES: usize = 200_000_000;

/// How a page was stored, and the hash of its original bytes.
#[derive(Clone, Copy)]
enum Stored {
    Same(u64),
    Raw(u64),
    Compressed(u64),
    Failed,
}

fn page_hash(data: &[u8]) -> u64 {
    // Deterministic within a build, which is all an in-run check needs.
    let mut h = std::collections::hash_map::DefaultHasher::new();
    h.write(data);
    h.finish()
}

/// Where pages come from.
enum Source {
    Files(Box<FilePages>),
    Synthetic { rng: Box<ChaCha8Rng>, left: usize },
}

impl Source {
    /// Fills `buf` with the next page; `Ok(false)` at the end.
    fn next_page(&mut self, buf: &mut [u8]) -> LabResult<bool> {
        match self {
            Source::Synthetic { rng, left } => {
                if *left == 0 {
                    return Ok(false);
                }
                *left -= 1;
                corpus::synth_page(rng, buf);
                Ok(true)
            }
            Source::Files(files) => files.next_page(buf),
        }
    }
}

impl Pages {
    fn source(&self) -> LabResult<Source> {
        Ok(if self.paths.is_empty() {
            Source::Synthetic {
                rng: Box::new(ChaCha8Rng::seed_from_u64(self.seed)),
                left: self.synthetic_pages,
            }
        } else {
            Source::Files(Box::new(FilePages::new(&self.paths)))
        })
    }

    fn source_name(&self) -> String {
        if self.paths.is_empty() {
            format!("synthetic ({} pages, seed {})", self.synthetic_pages, self.seed)
        } else {
            self.paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" ")
        }
    }

    fn zstd_level(&self) -> i32 {
        self.level.unwrap_or(DEFAULT_ZSTD_LEVEL)
    }
}

impl WorkloadKind for Pages {
    fn params(&self) -> (serde_json::Value, String) {
        let paths: Vec<String> = self.paths.iter().map(|p| p.display().to_string()).collect();
        let params = json!({
            "paths": paths, "compressor": self.compressor.name(),
            "level": (self.compressor == Compressor::Zstd).then_some(self.zstd_level()),
            "synthetic_pages": self.paths.is_empty().then_some(self.synthetic_pages),
            "max_pages": self.max_pages, "same_filled": self.same_filled.name(),
            "same_size": self.same_size, "seed": self.seed,
        });
        let mut s = format!("pages {} {}", self.source_name(), self.compressor.name());
        if self.compressor == Compressor::Zstd {
            s += &format!(" level={}", self.zstd_level());
        }
        if let Some(m) = self.max_pages {
            s += &format!(" max-pages={m}");
        }
        s += &format!(" same-filled={}", self.same_filled.name());
        (params, s)
    }

    fn check(&self, page: usize) -> LabResult<()> {
        let bad = |m: String| Err(LabError::usage(format!("pages: {m}")));
        match (self.compressor, self.level) {
            (Compressor::Lz4, Some(_)) => return bad(LZ4_TAKES_NO_LEVEL.into()),
            (Compressor::Zstd, Some(l)) if !(1..=22).contains(&l) => {
                return bad(format!("--level {l} is outside 1..=22"))
            }
            _ => {}
        }
        if self.same_size == 0 || self.same_size > page {
            return bad(format!("--same-size {} is outside 1..={page}", self.same_size));
        }
        if self.paths.is_empty() && !(1..=MAX_PAGES).contains(&self.synthetic_pages) {
            return bad(format!(
                "--synthetic-pages {} is outside 1..={MAX_PAGES}",
                self.synthetic_pages
            ));
        }
        if self.max_pages == Some(0) {
            return bad("--max-pages must be at least 1".into());
        }
        Walk::check(&self.paths)
    }

    fn estimated_ops(&self) -> u64 {
        let max = self.max_pages.map(|m| m as u64);
        let pages = if self.paths.is_empty() {
            max.map_or(self.synthetic_pages as u64, |m| m.min(self.synthetic_pages as u64))
        } else {
            // Only for the progress bar: a walk of the metadata, each file once.
            files::estimated_pages(&self.paths, 4096, max)
        };
        2 * pages
    }

    fn memory_plan(&self, page: usize, payload: bool, _limit: &Limit) -> LabResult<Plan> {
        // Each page at most whole in the pool (a compressed page is smaller, a raw one is a page),
        // and the workload's record of it.
        let max = self.max_pages.map(|m| m as u64);
        let (pages, from) = if self.paths.is_empty() {
            let n = max.map_or(self.synthetic_pages as u64, |m| m.min(self.synthetic_pages as u64));
            (n, format!("--synthetic-pages {}", self.synthetic_pages))
        } else {
            let n = files::estimated_pages(&self.paths, page as u64, max);
            (n, format!("{n} pages of input (--max-pages)"))
        };
        let per_page = std::mem::size_of::<Stored>() as u64;
        let bytes = super::pool_plan_bytes(pages, pages.saturating_mul(page as u64), payload)
            .saturating_add(pages.saturating_mul(per_page));
        Ok(Plan::new(bytes, from))
    }

    fn seed(&self) -> u64 {
        self.seed
    }

    fn set_seed(&mut self, seed: u64) {
        self.seed = seed;
    }

    fn run(&self, d: &mut Driver<'_>, timing: bool) -> LabResult<Extra> {
        let page = d.page_size();
        let huge = d.pool().huge_class_size();
        let mut codec = Codec::new(self.compressor, self.zstd_level(), page)?;
        let mut src = self.source()?;
        let mut buf = vec![0u8; page];
        let mut out = vec![0u8; zsmalloc_codec::bound(page)];
        let mut stored: Vec<Stored> = Vec::new();
        let mut facts = CorpusFacts {
            source: self.source_name(),
            compressor: self.compressor.name().into(),
            ..Default::default()
        };
        let mut compress_cpu = CpuTimer::new();
        d.phase(RunPhase::Write)?;
        while self.max_pages.is_none_or(|m| stored.len() < m) && src.next_page(&mut buf)? {
            let slot = d.new_slot()?;
            facts.input_pages += 1;
            let decision =
                ZramPage::of(&buf, huge, |p| compress_cpu.time(|| codec.compress(p, &mut out)))?;
            let (ok, kind) = match decision {
                ZramPage::Same(value) => {
                    facts.same_filled_pages += 1;
                    match self.same_filled {
                        SameFilled::Skip => d.keep_same(slot)?,
                        SameFilled::Store => {
                            d.note_same_stored();
                            let mut small = vec![0u8; self.same_size];
                            fill_word(&mut small, value);
                            if !d.store_bytes(slot, &small)? {
                                stored.push(Stored::Failed);
                                continue;
                            }
                        }
                    }
                    stored.push(Stored::Same(value));
                    continue;
                }
                ZramPage::Raw => {
                    facts.incompressible_pages += 1;
                    (d.store_bytes(slot, &buf)?, Stored::Raw(page_hash(&buf)))
                }
                ZramPage::Compressed(clen) => {
                    facts.compressed_pages += 1;
                    (d.store_bytes(slot, &out[..clen])?, Stored::Compressed(page_hash(&buf)))
                }
            };
            stored.push(if ok { kind } else { Stored::Failed });
        }
        if facts.input_pages == 0 {
            // Empty files or directories: there is nothing to measure, and ratios of nothing
            // would print as figures.
            return Err(LabError::usage(format!(
                "pages: no input: no page to read in {}",
                self.source_name()
            )));
        }
        d.phase(RunPhase::Read)?;
        let mut read_cpu = CpuTimer::new();
        let t = Clock::now_ns();
        let slots: Vec<usize> = stored
            .iter()
            .enumerate()
            .filter(|&(slot, s)| match s {
                Stored::Failed => false,
                Stored::Same(_) => !d.is_same(slot),
                _ => true,
            })
            .map(|(slot, _)| slot)
            .collect();
        d.read_each(&slots, |slot, data| match stored[slot] {
            Stored::Failed => Ok(()),
            Stored::Same(v) => {
                if is_word_fill(data, v) {
                    Ok(())
                } else {
                    Err(LabError::Verify(format!("same-filled page {slot} changed")))
                }
            }
            Stored::Raw(h) => {
                if page_hash(data) == h {
                    Ok(())
                } else {
                    Err(LabError::Verify(format!("raw page {slot} does not read back")))
                }
            }
            Stored::Compressed(h) => match codec.decompress(data, &mut buf) {
                Ok(n) if n == buf.len() && page_hash(&buf) == h => Ok(()),
                Ok(_) => Err(LabError::Verify(format!(
                    "page {slot} does not decompress to the original"
                ))),
                Err(_) => Err(LabError::Verify(format!("page {slot}: corrupt compressed data"))),
            },
        })?;
        read_cpu.add_ns(Clock::now_ns().saturating_sub(t));
        d.sync()?;
        let pool_pages = d.pool().total_pages();
        facts.effective_compression_ratio = (pool_pages > 0).then(|| {
            let r = facts.input_pages as f64 / pool_pages as f64;
            (r * 1000.0).round() / 1000.0
        });
        let stored_bytes = d.live_bytes();
        facts.compression_ratio = if stored_bytes == 0 {
            0.0
        } else {
            let r = (facts.input_pages * page as u64) as f64 / stored_bytes as f64;
            (r * 1000.0).round() / 1000.0
        };
        if timing {
            facts.compress_time_s = Some((compress_cpu.seconds() * 1e6).round() / 1e6);
            facts.read_time_s = Some((read_cpu.seconds() * 1e6).round() / 1e6);
        }
        Ok(Extra { corpus: Some(facts), ..Extra::default() })
    }
}

/// The shortest liblz4 output of a page of `page` bytes that is not same-filled, over the
/// synthetic corpus (`pages` pages, seed 1) and pages that differ from a zero page in one byte;
/// returns (over the corpus, over the one-byte pages).
pub fn shortest_lz4(page: usize, pages: usize) -> LabResult<(usize, usize)> {
    let mut buf = vec![0u8; page];
    let mut out = vec![0u8; zsmalloc_codec::bound(page)];
    let mut lz4 = Codec::new(Compressor::Lz4, DEFAULT_ZSTD_LEVEL, page)?;
    let mut len = |buf: &[u8]| lz4.compress(buf, &mut out).unwrap_or(page);
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut corpus_min = usize::MAX;
    for _ in 0..pages {
        corpus::synth_page(&mut rng, &mut buf);
        if buf.iter().any(|&b| b != buf[0]) {
            corpus_min = corpus_min.min(len(&buf));
        }
    }
    let mut one_byte_min = usize::MAX;
    for at in [0, 1, 7, 64, page / 2, page - 13, page - 1] {
        buf.fill(0);
        buf[at] = 0x5a;
        one_byte_min = one_byte_min.min(len(&buf));
    }
    Ok((corpus_min, one_byte_min))
}
