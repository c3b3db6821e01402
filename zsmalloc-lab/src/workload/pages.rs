//! Real pages: files or directories split into pages (the last one zero-padded), each
//! compressed with lz4 or zstd and stored as zram does — same-filled pages kept outside the pool
//! (or stored small), pages whose compressed size reaches `huge_class_size` stored raw — then
//! every page read back, decompressed and checked against the original.
//! With no path, a seeded synthetic corpus of mixed page types is used.

use std::fs::File;
use std::hash::Hasher;
use std::io::Read;
use std::path::{Path, PathBuf};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::json;
use zsmalloc_core::Backend;

use super::{corpus, Extra, SameFilled};
use crate::driver::Driver;
use crate::error::{LabError, LabResult};
use crate::result::CorpusFacts;
use crate::timing::{Clock, CpuTimer};

/// Compression algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compressor {
    #[default]
    Lz4,
    Zstd,
}

impl Compressor {
    pub fn parse(s: &str) -> LabResult<Self> {
        match s {
            "lz4" => Ok(Compressor::Lz4),
            "zstd" => Ok(Compressor::Zstd),
            _ => Err(LabError::usage(format!("invalid compressor '{s}' (accepted: lz4, zstd)"))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Compressor::Lz4 => "lz4",
            Compressor::Zstd => "zstd",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pages {
    /// Files or directories (walked recursively in name order); empty: the synthetic corpus.
    pub paths: Vec<PathBuf>,
    pub compressor: Compressor,
    /// zstd level (1..=22).
    pub level: i32,
    /// Pages of the synthetic corpus.
    pub synthetic_pages: usize,
    /// Stop after this many pages.
    pub max_pages: Option<usize>,
    pub same_filled: SameFilled,
    pub same_size: usize,
    /// Seeds the synthetic corpus.
    pub seed: u64,
}

impl Default for Pages {
    fn default() -> Self {
        Pages {
            paths: Vec::new(),
            compressor: Compressor::Lz4,
            level: 3,
            synthetic_pages: 16384,
            max_pages: None,
            same_filled: SameFilled::Skip,
            same_size: 28,
            seed: 1,
        }
    }
}

/// How a page was stored, and the hash of its original bytes.
#[derive(Clone, Copy)]
enum Stored {
    Same(u8),
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
    Files { files: Vec<PathBuf>, next: usize, open: Option<(File, PathBuf)> },
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
            Source::Files { files, next, open } => loop {
                if open.is_none() {
                    let Some(path) = files.get(*next) else { return Ok(false) };
                    *next += 1;
                    let f = File::open(path).map_err(|e| LabError::io("read", path, &e))?;
                    *open = Some((f, path.clone()));
                }
                let Some((file, path)) = open.as_mut() else { continue };
                let mut filled = 0;
                while filled < buf.len() {
                    match file.read(&mut buf[filled..]) {
                        Ok(0) => break,
                        Ok(n) => filled += n,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(LabError::io("read", path, &e)),
                    }
                }
                if filled < buf.len() {
                    *open = None;
                }
                if filled > 0 {
                    buf[filled..].fill(0);
                    return Ok(true);
                }
            },
        }
    }
}

/// Regular files under `paths`, directories walked recursively in name order.
pub(crate) fn expand(paths: &[PathBuf]) -> LabResult<Vec<PathBuf>> {
    fn walk(p: &Path, out: &mut Vec<PathBuf>, depth: usize) -> LabResult<()> {
        let meta = std::fs::metadata(p).map_err(|e| LabError::io("read", p, &e))?;
        if meta.is_dir() {
            if depth > 64 {
                return Ok(());
            }
            let mut entries: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|e| LabError::io("read", p, &e))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .collect();
            entries.sort();
            for e in entries {
                // Unreadable entries inside a directory are skipped, not fatal.
                if std::fs::metadata(&e).is_ok() {
                    walk(&e, out, depth + 1)?;
                }
            }
        } else if meta.is_file() && (depth == 0 || File::open(p).is_ok()) {
            // Inside a directory, files that cannot be opened are skipped.
            out.push(p.to_path_buf());
        }
        Ok(())
    }
    let mut out = Vec::new();
    for p in paths {
        walk(p, &mut out, 0)?;
    }
    Ok(out)
}

struct Codec {
    kind: Compressor,
    zc: Option<zstd::bulk::Compressor<'static>>,
    zd: Option<zstd::bulk::Decompressor<'static>>,
}

impl Codec {
    fn new(kind: Compressor, level: i32) -> LabResult<Self> {
        let err = |e: std::io::Error| LabError::runtime(format!("zstd: {e}"));
        Ok(match kind {
            Compressor::Lz4 => Codec { kind, zc: None, zd: None },
            Compressor::Zstd => Codec {
                kind,
                zc: Some(zstd::bulk::Compressor::new(level).map_err(err)?),
                zd: Some(zstd::bulk::Decompressor::new().map_err(err)?),
            },
        })
    }

    fn bound(page: usize) -> usize {
        lz4_flex::block::get_maximum_output_size(page).max(zstd::zstd_safe::compress_bound(page))
    }

    fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> LabResult<usize> {
        match (self.kind, self.zc.as_mut()) {
            (Compressor::Zstd, Some(c)) => c
                .compress_to_buffer(src, dst)
                .map_err(|e| LabError::runtime(format!("zstd compression failed: {e}"))),
            _ => lz4_flex::block::compress_into(src, dst)
                .map_err(|e| LabError::runtime(format!("lz4 compression failed: {e}"))),
        }
    }

    fn decompress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, String> {
        match (self.kind, self.zd.as_mut()) {
            (Compressor::Zstd, Some(d)) => {
                d.decompress_to_buffer(src, dst).map_err(|e| e.to_string())
            }
            _ => lz4_flex::block::decompress_into(src, dst).map_err(|e| e.to_string()),
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
            Source::Files { files: expand(&self.paths)?, next: 0, open: None }
        })
    }

    fn source_name(&self) -> String {
        if self.paths.is_empty() {
            format!("synthetic ({} pages, seed {})", self.synthetic_pages, self.seed)
        } else {
            self.paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" ")
        }
    }

    pub fn params(&self) -> (serde_json::Value, String) {
        let paths: Vec<String> = self.paths.iter().map(|p| p.display().to_string()).collect();
        let params = json!({
            "paths": paths, "compressor": self.compressor.name(),
            "level": (self.compressor == Compressor::Zstd).then_some(self.level),
            "synthetic_pages": self.paths.is_empty().then_some(self.synthetic_pages),
            "max_pages": self.max_pages, "same_filled": self.same_filled.name(),
            "same_size": self.same_size, "seed": self.seed,
        });
        let mut s = format!("pages {} {}", self.source_name(), self.compressor.name());
        if self.compressor == Compressor::Zstd {
            s += &format!(" level={}", self.level);
        }
        if let Some(m) = self.max_pages {
            s += &format!(" max-pages={m}");
        }
        s += &format!(" same-filled={}", self.same_filled.name());
        (params, s)
    }

    pub fn check(&self, page: usize) -> LabResult<()> {
        if self.compressor == Compressor::Zstd && !(1..=22).contains(&self.level) {
            return Err(LabError::usage(format!(
                "pages: --level {} is outside 1..=22",
                self.level
            )));
        }
        if self.same_size == 0 || self.same_size > page {
            return Err(LabError::usage(format!(
                "pages: --same-size {} is outside 1..={page}",
                self.same_size
            )));
        }
        for p in &self.paths {
            let meta = std::fs::metadata(p).map_err(|e| LabError::io("read", p, &e))?;
            if meta.is_file() {
                File::open(p).map_err(|e| LabError::io("read", p, &e))?;
            } else if meta.is_dir() {
                std::fs::read_dir(p).map_err(|e| LabError::io("read", p, &e))?;
            } else {
                return Err(LabError::usage(format!(
                    "cannot read '{}': not a regular file or directory",
                    p.display()
                )));
            }
        }
        Ok(())
    }

    pub fn estimated_ops(&self) -> u64 {
        let pages = if self.paths.is_empty() {
            self.synthetic_pages as u64
        } else {
            // Bytes on disk / 4K: only for the progress bar.
            expand(&self.paths)
                .map(|v| {
                    v.iter().filter_map(|p| p.metadata().ok()).map(|m| m.len() / 4096 + 1).sum()
                })
                .unwrap_or(0)
        };
        let pages = self.max_pages.map_or(pages, |m| pages.min(m as u64));
        2 * pages
    }

    pub fn run(&self, d: &mut Driver<'_>, timing: bool) -> LabResult<Extra> {
        let page = d.page_size();
        let huge = d.pool().huge_class_size();
        let mut codec = Codec::new(self.compressor, self.level)?;
        let mut src = self.source()?;
        let mut buf = vec![0u8; page];
        let mut out = vec![0u8; Codec::bound(page)];
        let mut stored: Vec<Stored> = Vec::new();
        let mut facts = CorpusFacts {
            source: self.source_name(),
            compressor: self.compressor.name().into(),
            ..Default::default()
        };
        let mut compress_cpu = CpuTimer::new();
        d.phase("write")?;
        while self.max_pages.is_none_or(|m| stored.len() < m) && src.next_page(&mut buf)? {
            let slot = d.new_slot();
            facts.input_pages += 1;
            let first = buf[0];
            if buf.iter().all(|&b| b == first) {
                facts.same_filled_pages += 1;
                match self.same_filled {
                    SameFilled::Skip => d.keep_same(slot)?,
                    SameFilled::Store => {
                        d.note_same_stored();
                        let small = vec![first; self.same_size];
                        if !d.store_bytes(slot, &small)? {
                            stored.push(Stored::Failed);
                            continue;
                        }
                    }
                }
                stored.push(Stored::Same(first));
                continue;
            }
            let clen = compress_cpu.time(|| codec.compress(&buf, &mut out))?;
            let hash = page_hash(&buf);
            // zram: a page that does not compress below huge_class_size is stored as is.
            let (ok, kind) = if clen >= huge {
                facts.incompressible_pages += 1;
                (d.store_bytes(slot, &buf)?, Stored::Raw(hash))
            } else {
                facts.compressed_pages += 1;
                (d.store_bytes(slot, &out[..clen])?, Stored::Compressed(hash))
            };
            stored.push(if ok { kind } else { Stored::Failed });
        }
        d.phase("read")?;
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
                if data.iter().all(|&b| b == v) {
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
                Err(e) => Err(LabError::Verify(format!("page {slot}: {e}"))),
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

/// The shortest lz4 output of a page of `page` bytes that is not same-filled, over the
/// synthetic corpus (`pages` pages, seed 1) and pages that differ from a zero page in one byte;
/// returns (over the corpus, over the one-byte pages).
pub fn shortest_lz4(page: usize, pages: usize) -> (usize, usize) {
    let mut buf = vec![0u8; page];
    let mut out = vec![0u8; lz4_flex::block::get_maximum_output_size(page)];
    let mut len = |buf: &[u8]| lz4_flex::block::compress_into(buf, &mut out).unwrap_or(page);
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
    (corpus_min, one_byte_min)
}
