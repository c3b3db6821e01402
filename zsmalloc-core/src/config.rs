//! Pool configuration and the one place `ZSMALLOC_*` environment variables are read.

use crate::chain_policy::PolicyRef;
use crate::class_spec::ClassTableSpec;
use crate::error::{Error, Result};
use crate::text_input::escape;

pub use crate::limits::{MAX_CHAIN_SIZE, MAX_PAGE_SIZE, MIN_PAGE_SIZE};
/// Mainline's default `CONFIG_ZSMALLOC_CHAIN_SIZE`.
pub const DEFAULT_CHAIN_SIZE: u32 = 8;

/// How reads of objects spanning two pages are served (docs/DESIGN.md, Reads).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReadMode {
    /// Mainline: a spanning object is copied into the caller's buffer.
    #[default]
    Copy,
    /// The `vm_map_ram` analogue: a spanning object's two pages are mapped side by side into one
    /// of the calling thread's two-page map slots (pages live in a memfd arena).
    Map,
    /// Every zspage's pages are adjacent in memory, so no read ever copies.
    Contiguous,
}

/// The read modes' names, as `ReadMode::parse` accepts them.
pub const READ_MODES: &str = "copy, map, contiguous";

/// An unknown name refused, quoted escaped (an environment value may hold a newline).
fn unknown(setting: &'static str, name: &str, accepted: &str) -> Error {
    Error::config(setting, format!("'{}' is unknown; accepted: {accepted}", escape(name)))
}

impl ReadMode {
    pub fn name(self) -> &'static str {
        match self {
            ReadMode::Copy => "copy",
            ReadMode::Map => "map",
            ReadMode::Contiguous => "contiguous",
        }
    }

    /// Parses a read-mode name; an unknown one is an error listing the accepted ones.
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "copy" => Ok(ReadMode::Copy),
            "map" => Ok(ReadMode::Map),
            "contiguous" => Ok(ReadMode::Contiguous),
            _ => Err(unknown("read_mode", name, READ_MODES)),
        }
    }
}

/// What the pool's pages are made of. `map` always runs on a memfd (it maps pages a second
/// time); the setting chooses the backing of `copy` and `contiguous`, so that every mode can be
/// measured on the same memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Backing {
    /// Private anonymous memory; released pages go back with `MADV_DONTNEED`.
    #[default]
    Anonymous,
    /// A memfd (shared memory) mapped once; released pages are hole-punched.
    Memfd,
}

/// The backings' names, as `Backing::parse` accepts them.
pub const BACKINGS: &str = "anonymous, memfd";

impl Backing {
    pub fn name(self) -> &'static str {
        match self {
            Backing::Anonymous => "anonymous",
            Backing::Memfd => "memfd",
        }
    }

    /// Parses a backing name; an unknown one is an error listing the accepted ones.
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "anonymous" => Ok(Backing::Anonymous),
            "memfd" => Ok(Backing::Memfd),
            _ => Err(unknown("backing", name, BACKINGS)),
        }
    }
}

/// Which allocator a pool is (docs/DESIGN.md, Backends): zsmalloc itself, the zblock allocator
/// proposed for mm in 2025, or each object its own system allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BackendKind {
    #[default]
    Zsmalloc,
    /// Fixed-size slots in blocks of 1..=8 virtually contiguous pages, one block table.
    Zblock,
    /// Each object its own `malloc`; pages are the allocations' usable sizes summed.
    Malloc,
}

/// The backends' names, as `BackendKind::parse` accepts them.
pub const BACKENDS: &str = "zsmalloc, zblock, malloc";

impl BackendKind {
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Zsmalloc => "zsmalloc",
            BackendKind::Zblock => "zblock",
            BackendKind::Malloc => "malloc",
        }
    }

    /// Parses a backend name; an unknown one is an error listing the accepted ones.
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "zsmalloc" => Ok(BackendKind::Zsmalloc),
            "zblock" => Ok(BackendKind::Zblock),
            "malloc" => Ok(BackendKind::Malloc),
            _ => Err(unknown("backend", name, BACKENDS)),
        }
    }
}

/// A byte count as the command line takes it: `16384`, `16K`, `16k`, `16KiB`, `16kb`; `M`,
/// `G` and `T` likewise (powers of 1024). `None` for anything else or a count past `u64`.
pub fn parse_bytes(text: &str) -> Option<u64> {
    let lower = text.trim().to_ascii_lowercase();
    let unit = lower.strip_suffix("ib").or_else(|| lower.strip_suffix('b')).unwrap_or(&lower);
    let (digits, shift) = match unit.chars().last() {
        Some('k') => (&unit[..unit.len() - 1], 10),
        Some('m') => (&unit[..unit.len() - 1], 20),
        Some('g') => (&unit[..unit.len() - 1], 30),
        Some('t') => (&unit[..unit.len() - 1], 40),
        _ if unit.len() == lower.len() => (lower.as_str(), 0),
        // "16b" or "16ib": a suffix without a unit.
        _ => return None,
    };
    digits.trim().parse::<u64>().ok().and_then(|n| n.checked_mul(1 << shift))
}

/// The host's page size in bytes (0 if unknown).
pub fn host_page_size() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(p).unwrap_or(0)
}

/// Every knob of a pool. `Default` is mainline zsmalloc on 4K pages.
#[derive(Debug, Clone)]
pub struct PoolConfig {
    /// Simulated page size: a power of two in 4096..=65536, independent of the host's.
    pub page_size: u32,
    /// Maximum pages per zspage (`CONFIG_ZSMALLOC_CHAIN_SIZE`), 1..=16.
    pub chain_size: u32,
    /// Class spacing in bytes; 0 means `page_size >> 8` (mainline), otherwise a multiple of 8.
    pub class_delta: u32,
    /// Chooses pages per zspage for each class.
    pub chain_policy: PolicyRef,
    pub read_mode: ReadMode,
    /// Cap on pages held by the pool; 0 means no limit.
    pub mem_limit_pages: u64,
    /// What the pages are made of (`map` always uses a memfd).
    pub backing: Backing,
    /// Merge a class into the next larger one when both have the same pages and objects per
    /// zspage (mainline since 2014). `false` models older kernels: every index its own class.
    pub merge_classes: bool,
    /// Which allocator the pool is. zblock and malloc refuse the zsmalloc-only settings
    /// (chain size, delta, chain policy, class merging, `map`) when set to anything but the
    /// default.
    pub backend: BackendKind,
    /// An explicit class table (docs/DESIGN.md, Class tables) instead of the computed one; its
    /// page size must be `page_size`, and the settings it replaces (chain size, delta, chain
    /// policy, merging) stay at their defaults. `None`: mainline's computed table.
    pub class_table: Option<ClassTableSpec>,
    /// The multi-page size (docs/DESIGN.md, Objects of several pages): 0 (the default) keeps
    /// mainline's classes; `page_size << K` (K in 1..=4, at most 65536) adds the band of classes
    /// from a page to it, made of order-K units, and objects up to that size.
    pub multi_page_size: u32,
    /// Whether objects' bytes are kept (the default). `false`: placement only (`payload.rs`):
    /// lengths and order decide every figure but reads of bytes are refused; not for malloc.
    pub payload: bool,
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            page_size: MIN_PAGE_SIZE,
            chain_size: DEFAULT_CHAIN_SIZE,
            class_delta: 0,
            chain_policy: PolicyRef::new(crate::chain_policy::Classic),
            read_mode: ReadMode::Copy,
            mem_limit_pages: 0,
            backing: Backing::Anonymous,
            merge_classes: true,
            backend: BackendKind::Zsmalloc,
            class_table: None,
            multi_page_size: 0,
            payload: true,
        }
    }
}

impl PoolConfig {
    /// The class delta actually used (`page_size >> 8` when unset).
    pub fn effective_delta(&self) -> u32 {
        if self.class_delta == 0 {
            self.page_size >> 8
        } else {
            self.class_delta
        }
    }

    /// Mainline's defaults around an explicit table: its page size and its multi-page size.
    pub fn for_table(table: ClassTableSpec) -> Self {
        PoolConfig {
            page_size: table.page_size(),
            multi_page_size: table.multi_page_size(),
            class_table: Some(table),
            ..PoolConfig::default()
        }
    }

    /// The longest object a pool of this configuration stores: the multi-page size, else a page.
    pub fn max_object_size(&self) -> u32 {
        self.multi_page_size.max(self.page_size)
    }

    /// The backing actually used: a memfd for `map`, else the configured one.
    pub fn effective_backing(&self) -> Backing {
        if self.read_mode == ReadMode::Map {
            Backing::Memfd
        } else {
            self.backing
        }
    }

    /// Checks every setting; the error names the setting and the accepted range.
    pub fn validate(&self) -> Result<()> {
        if !(MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&self.page_size)
            || !self.page_size.is_power_of_two()
        {
            return Err(Error::config(
                "page_size",
                format!("{} is not a power of two in 4096..=65536", self.page_size),
            ));
        }
        if !(1..=MAX_CHAIN_SIZE).contains(&self.chain_size) {
            return Err(Error::config(
                "chain_size",
                format!("{} is outside 1..=16", self.chain_size),
            ));
        }
        let d = self.class_delta;
        if d != 0 && (!d.is_multiple_of(8) || d >= self.page_size) {
            return Err(Error::config(
                "class_delta",
                format!(
                    "{d} is not 0 (page_size >> 8) or a multiple of 8 below the page size ({})",
                    self.page_size
                ),
            ));
        }
        crate::band::order_of(self.page_size, self.multi_page_size)
            .map_err(|m| Error::config("multi_page_size", m))?;
        self.validate_backend()?;
        self.validate_class_table()?;
        let host = host_page_size();
        if self.read_mode == ReadMode::Map && host > self.page_size as usize {
            return Err(Error::config(
                "read_mode",
                format!(
                    "'map' needs simulated pages at least the host's: page size {} is smaller \
                     than the host page of {host} bytes",
                    self.page_size
                ),
            ));
        }
        Ok(())
    }

    /// zblock and malloc have no chains, classes or second mapping: a zsmalloc-only setting left
    /// at anything but its default is refused, naming the setting and the backend, rather than
    /// silently meaning nothing. Both read every object in place whatever the read mode, so
    /// `copy` (the default) and `contiguous` are accepted and `map` is refused.
    fn validate_backend(&self) -> Result<()> {
        let backend = self.backend;
        if backend == BackendKind::Zsmalloc {
            return Ok(());
        }
        let refuse = |setting: &'static str, value: String| {
            Err(Error::config(
                setting,
                format!(
                    "{value} means nothing to the {} backend; leave it at its default",
                    backend.name()
                ),
            ))
        };
        if self.chain_size != DEFAULT_CHAIN_SIZE {
            return refuse("chain_size", format!("chain size {}", self.chain_size));
        }
        if self.class_delta != 0 {
            return refuse("class_delta", format!("class delta {}", self.class_delta));
        }
        let policy = self.chain_policy.name();
        if policy != "classic" {
            return refuse("chain_policy", format!("chain policy '{policy}'"));
        }
        if !self.merge_classes {
            return refuse("merge_classes", "unmerged classes".to_string());
        }
        if self.read_mode == ReadMode::Map {
            return refuse("read_mode", "read mode 'map'".to_string());
        }
        if self.multi_page_size != 0 {
            return refuse("multi_page_size", format!("multi-page size {}", self.multi_page_size));
        }
        if backend == BackendKind::Malloc && !self.payload {
            return refuse("payload", "placement only".to_string());
        }
        if backend == BackendKind::Malloc && self.backing != Backing::Anonymous {
            return refuse("backing", format!("backing '{}'", self.backing.name()));
        }
        if backend == BackendKind::Zblock && self.page_size == 8192 {
            return Err(Error::config(
                "page_size",
                "zblock does not build with 8192-byte pages (its block table exceeds \
                 MAX_TABLE_SIZE there); use 4096, 16384, 32768 or 65536",
            ));
        }
        Ok(())
    }

    /// Defaults overridden by `ZSMALLOC_*` variables. A bad value is an error naming the variable.
    /// A `ZSMALLOC_*` variable this library does not read (a misspelling, say) is warned about
    /// on stderr, by name, once per process.
    pub fn from_env() -> Result<Self> {
        let names = std::env::vars_os().filter_map(|(k, _)| k.into_string().ok());
        for name in unknown_env_vars(names) {
            print_once(&format!(
                "zsmalloc: warning: ignoring unknown environment variable {name} (known: {})",
                ENV_VARS.join(", ")
            ));
        }
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// `from_env` over any variable source (tests use a map).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let mut cfg = PoolConfig::default();
        let env_err = |var: &'static str, value: &str, accepted: &str| Error::Config {
            setting: var,
            message: format!("'{}' is not accepted; expected {accepted}", escape(value)),
        };
        let number = |var: &'static str, accepted: &str| -> Result<Option<u64>> {
            match lookup(var) {
                None => Ok(None),
                Some(v) => {
                    v.trim().parse::<u64>().map(Some).map_err(|_| env_err(var, &v, accepted))
                }
            }
        };
        let bytes = |var: &'static str, accepted: &str| -> Result<Option<u64>> {
            let Some(v) = lookup(var) else { return Ok(None) };
            parse_bytes(&v).map(Some).ok_or_else(|| env_err(var, &v, accepted))
        };
        let to_u32 = |var: &'static str, v: u64, accepted: &str| {
            u32::try_from(v).map_err(|_| env_err(var, &v.to_string(), accepted))
        };
        const PAGE: &str = "a power of two in 4096..=65536 (or 4K..=64K)";
        const CHAIN: &str = "an integer in 1..=16";
        const DELTA: &str = "0 or a multiple of 8 below the page size";
        if let Some(v) = bytes("ZSMALLOC_PAGE_SIZE", PAGE)? {
            cfg.page_size = to_u32("ZSMALLOC_PAGE_SIZE", v, PAGE)?;
        }
        if let Some(v) = number("ZSMALLOC_CHAIN_SIZE", CHAIN)? {
            cfg.chain_size = to_u32("ZSMALLOC_CHAIN_SIZE", v, CHAIN)?;
        }
        if let Some(v) = number("ZSMALLOC_CLASS_DELTA", DELTA)? {
            cfg.class_delta = to_u32("ZSMALLOC_CLASS_DELTA", v, DELTA)?;
        }
        if let Some(v) = lookup("ZSMALLOC_CHAIN_POLICY") {
            cfg.chain_policy = PolicyRef::by_name(v.trim()).ok_or_else(|| {
                env_err("ZSMALLOC_CHAIN_POLICY", &v, "classic, heuristic or fixed-N (N in 1..=16)")
            })?;
        }
        // A named value's error names the variable rather than the setting.
        let named = |var: &'static str| {
            move |e| match e {
                Error::Config { message, .. } => Error::Config { setting: var, message },
                other => other,
            }
        };
        if let Some(v) = lookup("ZSMALLOC_READ_MODE") {
            cfg.read_mode = ReadMode::parse(v.trim()).map_err(named("ZSMALLOC_READ_MODE"))?;
        }
        if let Some(v) = lookup("ZSMALLOC_BACKING") {
            cfg.backing = Backing::parse(v.trim()).map_err(named("ZSMALLOC_BACKING"))?;
        }
        if let Some(v) = lookup("ZSMALLOC_BACKEND") {
            cfg.backend = BackendKind::parse(v.trim()).map_err(named("ZSMALLOC_BACKEND"))?;
        }
        const MULTI: &str = "0 or the page size shifted left by 1..=4 (8K..=64K on 4K pages)";
        if let Some(v) = bytes("ZSMALLOC_MULTI_PAGE_SIZE", MULTI)? {
            cfg.multi_page_size = to_u32("ZSMALLOC_MULTI_PAGE_SIZE", v, MULTI)?;
        }
        if let Some(v) = number("ZSMALLOC_PLACEMENT_ONLY", "0 (keep every byte) or 1")? {
            cfg.payload = match v {
                0 => true,
                1 => false,
                _ => return Err(env_err("ZSMALLOC_PLACEMENT_ONLY", &v.to_string(), "0 or 1")),
            };
        }
        if let Some(v) = number("ZSMALLOC_MEM_LIMIT_PAGES", "a page count (0 = no limit)")? {
            cfg.mem_limit_pages = v;
        }
        if let Some(path) = lookup("ZSMALLOC_CLASS_TABLE") {
            let table =
                ClassTableSpec::load(path.as_ref()).map_err(named("ZSMALLOC_CLASS_TABLE"))?;
            // The file names its page size and its band; ZSMALLOC_PAGE_SIZE and
            // ZSMALLOC_MULTI_PAGE_SIZE, when set, must agree with them.
            if lookup("ZSMALLOC_PAGE_SIZE").is_none() {
                cfg.page_size = table.page_size();
            }
            if lookup("ZSMALLOC_MULTI_PAGE_SIZE").is_none() {
                cfg.multi_page_size = table.multi_page_size();
            }
            cfg.class_table = Some(table);
        }
        // Name the variable, not the field, when a parsed value is out of range.
        cfg.validate().map_err(|e| match e {
            Error::Config { setting, message } => Error::Config {
                setting: match setting {
                    "page_size" => "ZSMALLOC_PAGE_SIZE",
                    "chain_size" => "ZSMALLOC_CHAIN_SIZE",
                    "class_delta" => "ZSMALLOC_CLASS_DELTA",
                    "class_table" => "ZSMALLOC_CLASS_TABLE",
                    "multi_page_size" => "ZSMALLOC_MULTI_PAGE_SIZE",
                    other => other,
                },
                message,
            },
            other => other,
        })?;
        Ok(cfg)
    }
}

/// The `ZSMALLOC_*` environment variables this library reads.
pub const ENV_VARS: [&str; 11] = [
    "ZSMALLOC_PAGE_SIZE",
    "ZSMALLOC_CHAIN_SIZE",
    "ZSMALLOC_CLASS_DELTA",
    "ZSMALLOC_CHAIN_POLICY",
    "ZSMALLOC_READ_MODE",
    "ZSMALLOC_MEM_LIMIT_PAGES",
    "ZSMALLOC_BACKING",
    "ZSMALLOC_BACKEND",
    "ZSMALLOC_CLASS_TABLE",
    "ZSMALLOC_MULTI_PAGE_SIZE",
    "ZSMALLOC_PLACEMENT_ONLY",
];

/// `ZSMALLOC_*` variables of the project's own scripts and of the Python package (the lab's
/// command), not warned about.
const NOT_OURS: [&str; 4] =
    ["ZSMALLOC_VENV", "ZSMALLOC_BIN", "ZSMALLOC_CLI_BOUND", "ZSMALLOC_CLI_CASES"];
/// The tier's variables (`ZSMALLOC_TIER_*`), which its own library reads.
const TIER_PREFIX: &str = "ZSMALLOC_TIER_";

/// The names among `names` that look like this library's variables (`ZSMALLOC_*`) but are not
/// among [`ENV_VARS`] (nor the scripts' own), sorted.
pub fn unknown_env_vars(names: impl Iterator<Item = String>) -> Vec<String> {
    let mut unknown: Vec<String> = names
        .filter(|n| n.starts_with("ZSMALLOC_"))
        .filter(|n| !ENV_VARS.contains(&n.as_str()) && !NOT_OURS.contains(&n.as_str()))
        .filter(|n| !n.starts_with(TIER_PREFIX))
        .collect();
    unknown.sort();
    unknown
}

/// Prints `msg` on stderr unless this process printed it already (a program creating many pools
/// from a bad environment hears about it once).
pub fn print_once(msg: &str) {
    static PRINTED: std::sync::Mutex<std::collections::BTreeSet<String>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    let mut printed = PRINTED.lock().unwrap_or_else(|e| e.into_inner());
    if printed.insert(msg.to_string()) {
        eprintln!("{msg}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn from(vars: &[(&str, &str)]) -> Result<PoolConfig> {
        let map: HashMap<String, String> =
            vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        PoolConfig::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn env_overrides_defaults() {
        let cfg = from(&[
            ("ZSMALLOC_PAGE_SIZE", "16384"),
            ("ZSMALLOC_CHAIN_SIZE", "10"),
            ("ZSMALLOC_CLASS_DELTA", "16"),
            ("ZSMALLOC_CHAIN_POLICY", "heuristic"),
            ("ZSMALLOC_MEM_LIMIT_PAGES", "100"),
        ])
        .unwrap();
        assert_eq!((cfg.page_size, cfg.chain_size, cfg.class_delta), (16384, 10, 16));
        assert_eq!(cfg.chain_policy.name(), "heuristic");
        assert_eq!(cfg.mem_limit_pages, 100);
        let cfg =
            from(&[("ZSMALLOC_READ_MODE", "contiguous"), ("ZSMALLOC_BACKING", "memfd")]).unwrap();
        assert_eq!((cfg.read_mode, cfg.backing), (ReadMode::Contiguous, Backing::Memfd));
        assert_eq!(
            from(&[("ZSMALLOC_READ_MODE", "map")]).unwrap().effective_backing(),
            Backing::Memfd
        );
    }

    #[test]
    fn unknown_modes_list_the_accepted_ones() {
        let err = ReadMode::parse("mmap").unwrap_err().to_string();
        assert!(err.contains("copy, map, contiguous"), "{err}");
        let err = Backing::parse("hugetlb").unwrap_err().to_string();
        assert!(err.contains("anonymous, memfd"), "{err}");
        for m in [ReadMode::Copy, ReadMode::Map, ReadMode::Contiguous] {
            assert_eq!(ReadMode::parse(m.name()), Ok(m));
        }
    }

    #[test]
    fn page_size_takes_a_byte_count_and_unknown_variables_are_named() {
        for (v, want) in [("16K", 16384), ("16k", 16384), ("64KiB", 65536), (" 4096 ", 4096)] {
            assert_eq!(from(&[("ZSMALLOC_PAGE_SIZE", v)]).unwrap().page_size, want, "{v}");
        }
        for v in ["16M", "K", "3K"] {
            let err = from(&[("ZSMALLOC_PAGE_SIZE", v)]).unwrap_err();
            assert!(err.to_string().contains("ZSMALLOC_PAGE_SIZE"), "{err}");
        }
        let tier = ["ZSMALLOC_BIN", "ZSMALLOC_TIER_BUDGET", "ZSMALLOC_TIERBUDGET"];
        let names = ["ZSMALLOC_CHAIN_SIZ", "ZSMALLOC_CHAIN_SIZE", "HOME", "ZSMALLOC_VENV"];
        let names = names.iter().chain(&tier);
        let unknown = unknown_env_vars(names.map(|s| s.to_string()));
        assert_eq!(unknown, ["ZSMALLOC_CHAIN_SIZ", "ZSMALLOC_TIERBUDGET"]);
    }

    #[test]
    fn bad_env_values_name_the_variable() {
        for (var, value) in [
            ("ZSMALLOC_PAGE_SIZE", "5000"),
            ("ZSMALLOC_PAGE_SIZE", "lots"),
            ("ZSMALLOC_CHAIN_SIZE", "17"),
            ("ZSMALLOC_CLASS_DELTA", "12"),
            ("ZSMALLOC_CHAIN_POLICY", "greedy"),
            ("ZSMALLOC_READ_MODE", "mmap"),
            ("ZSMALLOC_BACKING", "hugetlb"),
            ("ZSMALLOC_MEM_LIMIT_PAGES", "-1"),
        ] {
            let err = from(&[(var, value)]).unwrap_err();
            assert!(err.to_string().contains(var), "{err}");
        }
    }

    #[test]
    fn validate_rejects_out_of_range() {
        let bad = [
            PoolConfig { page_size: 2048, ..Default::default() },
            PoolConfig { page_size: 131072, ..Default::default() },
            PoolConfig { chain_size: 0, ..Default::default() },
            PoolConfig { class_delta: 20, ..Default::default() },
        ];
        for cfg in bad {
            assert!(matches!(cfg.validate(), Err(Error::Config { .. })), "{cfg:?}");
        }
        assert!(PoolConfig::default().validate().is_ok());
    }

    #[test]
    fn every_variable_read_is_one_that_is_not_warned_about() {
        let asked = std::cell::RefCell::new(Vec::new());
        PoolConfig::from_lookup(|name| {
            asked.borrow_mut().push(name.to_string());
            None
        })
        .unwrap();
        let asked = asked.into_inner();
        assert!(!asked.is_empty());
        for name in &asked {
            assert!(ENV_VARS.contains(&name.as_str()), "{name} is read but missing from ENV_VARS");
        }
        assert_eq!(asked.len(), ENV_VARS.len(), "ENV_VARS lists a variable that is never read");
    }
}
