//! What a cost run is asked to do: the corpus, compressors, read modes, configurations, rounds
//! and the memory it may take; checked before anything runs.

use zsmalloc_codec::{Compressor, DEFAULT_ZSTD_LEVEL};
use zsmalloc_core::ReadMode;

use super::corpus::Source;
use super::hw;
use crate::config::ConfigSpec;
use crate::error::{LabError, LabResult};

/// Smallest batch: operations per pair of clock reads.
pub const MIN_BATCH: usize = 10_000;

/// Input pages read from files or a process unless `--max-pages` says otherwise.
pub const DEFAULT_MAX_PAGES: usize = 16_384;

/// Pages of the built-in corpus.
pub const DEFAULT_SYNTHETIC_PAGES: usize = 4096;

/// Pool size when the last-level cache cannot be read.
pub const FALLBACK_POOL_BYTES: u64 = 64 << 20;

/// Largest default pool size, whatever last-level cache the machine reports: some machines
/// report the whole package's cache (hundreds of MiB), and twice that per pool made the
/// default run need more memory than the machine had. Pools still grow past it when a row
/// needs more objects for a batch of distinct ones (see [`super::plan`]).
pub const MAX_DEFAULT_POOL_BYTES: u64 = 256 << 20;

/// Largest cache evictor (see [`hw::Evictor`]), for the same reason.
pub const MAX_EVICT_BYTES: u64 = 512 << 20;

/// A read mode of the study.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// The pool's `copy` read mode: a spanning object is copied into the caller's buffer.
    Copy,
    /// The pool's `map` read mode: a spanning object's pages are mapped side by side.
    Map,
    /// The pool's `contiguous` read mode: a zspage's pages are adjacent.
    Contiguous,
    /// A scatter-gather read of a `copy` pool whose two segments the consumer linearises, as
    /// the crypto layer's scomp fallback does.
    Sg,
}

impl Mode {
    /// Every mode, in report order.
    pub const ALL: [Mode; 4] = [Mode::Copy, Mode::Map, Mode::Contiguous, Mode::Sg];

    pub fn name(self) -> &'static str {
        match self {
            Mode::Copy => "copy",
            Mode::Map => "map",
            Mode::Contiguous => "contiguous",
            Mode::Sg => "sg",
        }
    }

    pub fn parse(s: &str) -> LabResult<Mode> {
        Mode::ALL.into_iter().find(|m| m.name() == s).ok_or_else(|| {
            LabError::usage(format!("invalid mode '{s}' (accepted: {})", accepted_modes()))
        })
    }

    /// The pool read mode this mode reads (`sg` reads a `copy` pool).
    pub fn pool_mode(self) -> ReadMode {
        match self {
            Mode::Copy | Mode::Sg => ReadMode::Copy,
            Mode::Map => ReadMode::Map,
            Mode::Contiguous => ReadMode::Contiguous,
        }
    }

    /// Whether zswap copies an object before decompressing it in this mode: zswap cannot put
    /// an address outside the linear map in a scatter list, so it copies the spanning objects
    /// in `map` (mapped side by side) and every object in `contiguous` (a vmalloc'd zspage);
    /// `copy` and `sg` hand it page or buffer addresses.
    pub fn zswap_copies(self, spanning: bool) -> bool {
        match self {
            Mode::Contiguous => true,
            Mode::Map => spanning,
            Mode::Copy | Mode::Sg => false,
        }
    }
}

fn accepted_modes() -> String {
    Mode::ALL.map(Mode::name).join(", ")
}

/// `copy,sg` -> the modes, each once; an unknown name is an error listing the accepted ones.
pub fn parse_modes(s: &str) -> LabResult<Vec<Mode>> {
    let mut out: Vec<Mode> = Vec::new();
    for m in s.split(',').map(str::trim).filter(|m| !m.is_empty()) {
        let m = Mode::parse(m)?;
        if !out.contains(&m) {
            out.push(m);
        }
    }
    if out.is_empty() {
        return Err(LabError::usage(format!("no mode given (accepted: {})", accepted_modes())));
    }
    Ok(out)
}

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
    pub compressors: Vec<Compressor>,
    pub level: i32,
    pub modes: Vec<Mode>,
    pub specs: Vec<ConfigSpec>,
    pub repeat: usize,
    pub seed: u64,
    pub max_pages: usize,
    /// Bytes each pool is filled to (at least the corpus once, more when a row needs more
    /// objects for a batch of distinct ones).
    pub pool_bytes: u64,
    /// `pool_bytes` was asked for (`--pool-mib`): pools hold the copies it asks for and no
    /// more, and a row with fewer than a batch of distinct objects reads some of them again
    /// within a batch. Otherwise pools grow past it to give each row a batch of distinct
    /// objects (see [`super::plan`]).
    pub pool_bytes_fixed: bool,
    /// Bytes of the buffer written before every timed pass to push the pools out of the caches.
    pub evict_bytes: u64,
    /// Refuse to run when the memory plan's peak is above this (`--max-memory`); the memory
    /// available on the machine is always a limit.
    pub max_memory: Option<u64>,
    pub batch: usize,
    pub instructions: InstructionSource,
}

impl CostOptions {
    /// The defaults of `zsmalloc cost` with no flags, for `specs`.
    pub fn new(specs: Vec<ConfigSpec>) -> CostOptions {
        let llc = hw::last_level_cache_bytes();
        CostOptions {
            source: Source::Builtin { pages: DEFAULT_SYNTHETIC_PAGES, seed: 1 },
            compressors: vec![Compressor::Lz4, Compressor::Zstd],
            level: DEFAULT_ZSTD_LEVEL,
            modes: Mode::ALL.to_vec(),
            specs,
            repeat: 3,
            seed: 1,
            max_pages: DEFAULT_MAX_PAGES,
            pool_bytes: default_pool_bytes_for(llc),
            pool_bytes_fixed: false,
            evict_bytes: evict_bytes_for(llc),
            max_memory: None,
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
        if self.compressors.contains(&Compressor::Zstd) && !(1..=22).contains(&self.level) {
            return Err(LabError::usage(format!("--level {} is outside 1..=22", self.level)));
        }
        if self.max_pages == 0 {
            return Err(LabError::usage("--max-pages must be at least 1"));
        }
        if self.modes.is_empty() {
            return Err(LabError::usage(format!("no mode given (accepted: {})", accepted_modes())));
        }
        self.source.check()
    }
}

/// The default pool size on this machine: see [`default_pool_bytes_for`].
pub fn default_pool_bytes() -> u64 {
    default_pool_bytes_for(hw::last_level_cache_bytes())
}

/// Twice the last-level cache of `llc` bytes, so a pass over a pool does not find it in the
/// cache, at most [`MAX_DEFAULT_POOL_BYTES`]; [`FALLBACK_POOL_BYTES`] when it is unknown.
pub fn default_pool_bytes_for(llc: Option<u64>) -> u64 {
    llc.map_or(FALLBACK_POOL_BYTES, |b| (2 * b).min(MAX_DEFAULT_POOL_BYTES))
}

/// The evictor for a last-level cache of `llc` bytes: twice it, at most [`MAX_EVICT_BYTES`].
pub fn evict_bytes_for(llc: Option<u64>) -> u64 {
    llc.map_or(FALLBACK_POOL_BYTES, |b| (2 * b).min(MAX_EVICT_BYTES))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_once_each_and_name_the_accepted_ones() {
        assert_eq!(parse_modes("sg, copy,sg").unwrap(), [Mode::Sg, Mode::Copy]);
        let e = parse_modes("copy,mmap").unwrap_err().to_string();
        assert!(e.contains("copy, map, contiguous, sg"), "{e}");
        assert!(parse_modes(" , ").is_err());
        assert_eq!(Mode::Sg.pool_mode(), ReadMode::Copy);
        assert!(Mode::Map.zswap_copies(true) && !Mode::Map.zswap_copies(false));
    }

    #[test]
    fn default_sizes_are_bounded_whatever_cache_is_reported() {
        assert_eq!(default_pool_bytes_for(Some(32 << 20)), 64 << 20);
        assert_eq!(default_pool_bytes_for(Some(480 << 20)), MAX_DEFAULT_POOL_BYTES);
        assert_eq!(default_pool_bytes_for(None), FALLBACK_POOL_BYTES);
        assert_eq!(evict_bytes_for(Some(32 << 20)), 64 << 20);
        assert_eq!(evict_bytes_for(Some(4 << 30)), MAX_EVICT_BYTES);
    }
}
