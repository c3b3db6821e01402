//! `struct zs_pool_config`: explicit pool configuration, translated to and from
//! [`zsmalloc_core::PoolConfig`]. The environment is parsed only by `PoolConfig::from_env`.

use std::ffi::c_int;
use std::mem::offset_of;
use std::sync::Mutex;

use zsmalloc_core::band::MultiBand;
use zsmalloc_core::class_spec::max_classes;
use zsmalloc_core::config::{MAX_PAGE_SIZE, MIN_PAGE_SIZE};
use zsmalloc_core::{
    BackendKind, Backing, ClassSpec, ClassTableSpec, Error, PolicyRef, PoolConfig, ReadMode, Result,
};

use crate::errors::invalid;
use crate::sized::{fields, fields_cover, read_in, write_out, Field, Plain};
use crate::types::size_t;

/// Chain policy `classic`: mainline's least-waste chain size.
pub const ZS_CHAIN_CLASSIC: u32 = 0;
/// Chain policy `heuristic`: the RFC's waste/spanning trade-off.
pub const ZS_CHAIN_HEURISTIC: u32 = 1;
/// Chain policy `fixed-N`: `ZS_CHAIN_FIXED_BASE + N` (N in 1..=16) gives every class N pages.
pub const ZS_CHAIN_FIXED_BASE: u32 = 256;
/// Read mode `copy` (mainline): spanning objects are copied into the caller's `local_copy`.
pub const ZS_READ_COPY: u32 = 0;
/// Read mode `map`: a spanning object's two pages are mapped side by side into one of the
/// calling thread's map slots (pages live in a memfd); nothing is copied. Needs a page size at
/// least the host's.
pub const ZS_READ_MAP: u32 = 1;
/// Read mode `contiguous`: every zspage's pages are adjacent, so every object is read in place.
pub const ZS_READ_CONTIGUOUS: u32 = 2;
/// Backing `anonymous` (the default): private anonymous memory.
pub const ZS_BACKING_ANONYMOUS: u32 = 0;
/// Backing `memfd`: shared memory of one memfd, released pages hole-punched (`ZS_READ_MAP`
/// always uses it).
pub const ZS_BACKING_MEMFD: u32 = 1;

/// Backend `zsmalloc` (the default).
pub const ZS_BACKEND_ZSMALLOC: u32 = 0;
/// Backend `zblock`: fixed-size slots in blocks of virtually contiguous pages; every read in
/// place, nothing to compact; lengths from the last slot size up are refused (`-ENOSPC`).
pub const ZS_BACKEND_ZBLOCK: u32 = 1;
/// Backend `malloc`: each object its own system allocation.
pub const ZS_BACKEND_MALLOC: u32 = 2;

/// `sizeof(struct zs_pool_config)` in ABI version 1 (the smallest size the `_sized` functions
/// accept).
pub const ZS_POOL_CONFIG_SIZE_VER1: usize = 32;
/// `sizeof(struct zs_pool_config)` in ABI version 3 (`backing` added).
pub const ZS_POOL_CONFIG_SIZE_VER3: usize = 40;
/// `sizeof(struct zs_pool_config)` in ABI version 4 (`backend` added).
pub const ZS_POOL_CONFIG_SIZE_VER4: usize = 48;
/// `sizeof(struct zs_pool_config)` in ABI version 5 (`class_table` and `class_count` added).
pub const ZS_POOL_CONFIG_SIZE_VER5: usize = 64;
/// `sizeof(struct zs_pool_config)` in ABI version 6 (`multi_page_size` added).
pub const ZS_POOL_CONFIG_SIZE_VER6: usize = 72;
const _: () = assert!(std::mem::size_of::<zs_pool_config>() == ZS_POOL_CONFIG_SIZE_VER6);

/// One class of an explicit class table (ABI version 5).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct zs_class_spec {
    /// Class size in bytes, the 8-byte object header included (as the kernel's class sizes):
    /// a multiple of 8 from 32 to the page size, or with `multi_page_size` set (ABI version 6)
    /// to the multi-page size: a class above the page belongs to the multi-page band.
    pub size: u32,
    /// Pages per zspage, 1..=16; in a class above the page, units of `multi_page_size` bytes
    /// (order-K compound pages).
    pub chain: u32,
}

/// Explicit configuration of a pool. Start from `zs_pool_config_init()` (mainline defaults) or
/// `zs_pool_config_from_env()` and change fields.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct zs_pool_config {
    /// Simulated page size: a power of two in 4096..=65536 (independent of the host's page).
    pub page_size: u32,
    /// Maximum pages per zspage (`CONFIG_ZSMALLOC_CHAIN_SIZE`), 1..=16.
    pub max_pages_per_zspage: u32,
    /// Class spacing in bytes: 0 means `page_size >> 8` (mainline), else a multiple of 8.
    pub size_class_delta: u32,
    /// `ZS_CHAIN_CLASSIC`, `ZS_CHAIN_HEURISTIC` or `ZS_CHAIN_FIXED_BASE + N`.
    pub chain_policy: u32,
    /// `ZS_READ_COPY`, `ZS_READ_MAP` or `ZS_READ_CONTIGUOUS`.
    pub read_mode: u32,
    /// Cap on pages held by the pool (0: no limit); beyond it stores fail with `-ENOMEM`.
    pub mem_limit_pages: u64,
    /// `ZS_BACKING_ANONYMOUS` or `ZS_BACKING_MEMFD` (ABI version 3).
    pub backing: u32,
    /// The padding of ABI version 3's struct, kept so that its size (40) still tells the
    /// versions apart; ignored.
    pub reserved: u32,
    /// `ZS_BACKEND_ZSMALLOC`, `ZS_BACKEND_ZBLOCK` or `ZS_BACKEND_MALLOC` (ABI version 4).
    pub backend: u32,
    /// The padding of ABI version 4's struct, kept so that its size (48) still tells the
    /// versions apart; ignored.
    pub reserved2: u32,
    /// An explicit class table of `class_count` classes, ascending by size, the last one
    /// `{page_size, 1}` (ABI version 5; docs/C_API.md, Class tables); with `multi_page_size`
    /// set, classes above the page follow up to `{multi_page_size, 1}`, the multi-page band
    /// (ABI version 6). The library copies it while creating the pool. NULL with `class_count`
    /// 0: mainline's computed table. With a table, `max_pages_per_zspage`, `size_class_delta`
    /// and `chain_policy` stay at their defaults. zs_pool_config_from_env() points it at a table read from
    /// `ZSMALLOC_CLASS_TABLE`, kept by the library for the life of the process.
    pub class_table: *const zs_class_spec,
    /// Entries of `class_table` (ABI version 5).
    pub class_count: size_t,
    /// The multi-page size (ABI version 6; docs/C_API.md, Objects of several pages): 0 (the
    /// default) keeps mainline's classes; `page_size << K` (K in 1..=4, at most 65536) adds
    /// classes of order-K compound pages and objects up to this many bytes. Read only from a
    /// struct of version 6 or later (an older one means 0).
    pub multi_page_size: u32,
    /// 1: the pool keeps lengths and placement only, never the objects' bytes (ABI version 7;
    /// docs/C_API.md, Placement only): reads of bytes fail with `-EOPNOTSUPP`. 0 (the default,
    /// and every version-6 caller's padding) keeps every byte.
    pub placement_only: u32,
}

fn policy_code(policy: &PolicyRef) -> Result<u32> {
    let name = policy.name();
    match name.as_str() {
        "classic" => Ok(ZS_CHAIN_CLASSIC),
        "heuristic" => Ok(ZS_CHAIN_HEURISTIC),
        other => other
            .strip_prefix("fixed-")
            .and_then(|n| n.parse::<u32>().ok())
            .map(|n| ZS_CHAIN_FIXED_BASE + n)
            .ok_or_else(|| invalid(format!("chain policy '{other}' has no C code"))),
    }
}

fn policy_from_code(code: u32) -> Result<PolicyRef> {
    let name = match code {
        ZS_CHAIN_CLASSIC => "classic".to_owned(),
        ZS_CHAIN_HEURISTIC => "heuristic".to_owned(),
        n if n > ZS_CHAIN_FIXED_BASE => format!("fixed-{}", n - ZS_CHAIN_FIXED_BASE),
        _ => String::new(),
    };
    PolicyRef::by_name(&name).ok_or_else(|| Error::Config {
        setting: "chain_policy",
        message: format!(
            "{code} is not ZS_CHAIN_CLASSIC (0), ZS_CHAIN_HEURISTIC (1) or \
             ZS_CHAIN_FIXED_BASE + N (N in 1..=16)"
        ),
    })
}

fn read_mode_code(mode: ReadMode) -> u32 {
    match mode {
        ReadMode::Copy => ZS_READ_COPY,
        ReadMode::Map => ZS_READ_MAP,
        ReadMode::Contiguous => ZS_READ_CONTIGUOUS,
    }
}

fn read_mode_from_code(code: u32) -> Result<ReadMode> {
    match code {
        ZS_READ_COPY => Ok(ReadMode::Copy),
        ZS_READ_MAP => Ok(ReadMode::Map),
        ZS_READ_CONTIGUOUS => Ok(ReadMode::Contiguous),
        _ => Err(Error::Config {
            setting: "read_mode",
            message: format!(
                "{code} is unknown; accepted: ZS_READ_COPY (0), ZS_READ_MAP (1), \
                 ZS_READ_CONTIGUOUS (2)"
            ),
        }),
    }
}

fn backing_code(b: Backing) -> u32 {
    match b {
        Backing::Anonymous => ZS_BACKING_ANONYMOUS,
        Backing::Memfd => ZS_BACKING_MEMFD,
    }
}

fn backend_code(b: BackendKind) -> u32 {
    match b {
        BackendKind::Zsmalloc => ZS_BACKEND_ZSMALLOC,
        BackendKind::Zblock => ZS_BACKEND_ZBLOCK,
        BackendKind::Malloc => ZS_BACKEND_MALLOC,
    }
}

fn backend_from_code(code: u32) -> Result<BackendKind> {
    match code {
        ZS_BACKEND_ZSMALLOC => Ok(BackendKind::Zsmalloc),
        ZS_BACKEND_ZBLOCK => Ok(BackendKind::Zblock),
        ZS_BACKEND_MALLOC => Ok(BackendKind::Malloc),
        _ => Err(Error::Config {
            setting: "backend",
            message: format!(
                "{code} is unknown; accepted: ZS_BACKEND_ZSMALLOC (0), ZS_BACKEND_ZBLOCK (1), \
                 ZS_BACKEND_MALLOC (2)"
            ),
        }),
    }
}

fn backing_from_code(code: u32) -> Result<Backing> {
    match code {
        ZS_BACKING_ANONYMOUS => Ok(Backing::Anonymous),
        ZS_BACKING_MEMFD => Ok(Backing::Memfd),
        _ => Err(Error::Config {
            setting: "backing",
            message: format!(
                "{code} is unknown; accepted: ZS_BACKING_ANONYMOUS (0), ZS_BACKING_MEMFD (1)"
            ),
        }),
    }
}

impl zs_pool_config {
    /// The C view of a core configuration. An explicit table is pointed at in a copy the
    /// library keeps for the life of the process.
    pub(crate) fn from_core(cfg: &PoolConfig) -> Result<Self> {
        let class_table = cfg.class_table.as_ref().map(kept_for_c);
        Ok(zs_pool_config {
            page_size: cfg.page_size,
            max_pages_per_zspage: cfg.chain_size,
            size_class_delta: cfg.class_delta,
            chain_policy: policy_code(&cfg.chain_policy)?,
            read_mode: read_mode_code(cfg.read_mode),
            mem_limit_pages: cfg.mem_limit_pages,
            backing: backing_code(cfg.backing),
            reserved: 0,
            backend: backend_code(cfg.backend),
            reserved2: 0,
            class_table: class_table.map_or(std::ptr::null(), <[_]>::as_ptr),
            class_count: class_table.map_or(0, <[_]>::len),
            multi_page_size: cfg.multi_page_size,
            placement_only: u32::from(!cfg.payload),
        })
    }

    /// The core configuration this describes, validated.
    ///
    /// # Safety
    /// `class_table` is NULL or readable for `class_count` entries.
    pub(crate) unsafe fn to_core(self) -> Result<PoolConfig> {
        // SAFETY: forwarded contract.
        let class_table = unsafe { self.read_class_table() }?;
        let cfg = PoolConfig {
            page_size: self.page_size,
            chain_size: self.max_pages_per_zspage,
            class_delta: self.size_class_delta,
            chain_policy: policy_from_code(self.chain_policy)?,
            read_mode: read_mode_from_code(self.read_mode)?,
            mem_limit_pages: self.mem_limit_pages,
            backing: backing_from_code(self.backing)?,
            backend: backend_from_code(self.backend)?,
            class_table,
            multi_page_size: self.multi_page_size,
            payload: self.placement_only == 0,
            ..PoolConfig::default()
        };
        if self.placement_only > 1 {
            return Err(invalid(format!(
                "struct zs_pool_config's placement_only is {}: 0 (keep every byte) or 1",
                self.placement_only
            )));
        }
        cfg.validate()?;
        Ok(cfg)
    }

    /// The explicit table `class_table`/`class_count` describe, checked; a refusal names the
    /// entry (`class_table[i]`). The count is checked before any entry is read.
    ///
    /// # Safety
    /// As [`Self::to_core`].
    unsafe fn read_class_table(&self) -> Result<Option<ClassTableSpec>> {
        let (table, count, page) = (self.class_table, self.class_count, self.page_size);
        let refuse = |message: String| Err(Error::Config { setting: "class_table", message });
        match (table.is_null(), count) {
            (true, 0) => return Ok(None),
            (true, n) => return refuse(format!("class_table is NULL but class_count is {n}")),
            (false, 0) => return refuse("class_count is 0 but class_table is not NULL".into()),
            (false, _) => {}
        }
        // A bad page size is the page size's error, reported by validation (without reading
        // the table, whose limit depends on it).
        if !(MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&page) || !page.is_power_of_two() {
            return Ok(None);
        }
        // The struct's entries carry no order: a class above the page is of the band's order
        // (a bad multi-page size is its own error, reported by validation).
        let multi = self.multi_page_size;
        let largest = MultiBand::new(page, multi).map_or(page, |b| b.size);
        let limit = max_classes(largest);
        if count > limit {
            return refuse(format!(
                "too many classes (class_count {count}): a table up to {largest} bytes has room \
                 for at most {limit} (one per multiple of 8 from 32 to {largest})"
            ));
        }
        // SAFETY: non-NULL, and readable for `count` entries by the caller's promise; any bits
        // are a valid `zs_class_spec` (two integers). `read_unaligned` copes with any alignment.
        let classes = (0..count)
            .map(|i| unsafe { table.add(i).read_unaligned() })
            .map(|c| ClassSpec {
                size: c.size,
                chain: c.chain,
                order: ClassSpec::order_in(c.size, page, multi),
            })
            .collect();
        ClassTableSpec::new(page, classes).map(Some)
    }
}

/// Tables read from `ZSMALLOC_CLASS_TABLE` and handed to C by zs_pool_config_from_env(): the
/// caller's struct points at them for as long as it likes, so each distinct table is kept for
/// the life of the process (a program reads its environment a bounded number of times).
static ENV_TABLES: Mutex<Vec<&'static [zs_class_spec]>> = Mutex::new(Vec::new());

/// A process-lifetime copy of `spec`'s entries (the same one for the same table).
fn kept_for_c(spec: &ClassTableSpec) -> &'static [zs_class_spec] {
    let entries: Vec<zs_class_spec> =
        spec.classes().iter().map(|c| zs_class_spec { size: c.size, chain: c.chain }).collect();
    let mut kept = ENV_TABLES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&same) = kept.iter().find(|t| ***t == entries[..]) {
        return same;
    }
    let table: &'static [zs_class_spec] = Box::leak(entries.into_boxed_slice());
    kept.push(table);
    table
}

// SAFETY: `#[repr(C)]`, fields of integers and one raw pointer: any bits are a valid value (the
// pointer is only read through by `read_class_table`, under the caller's promise).
unsafe impl Plain for zs_pool_config {
    const SIZE_VER1: usize = ZS_POOL_CONFIG_SIZE_VER1;
    const NAME: &'static str = "zs_pool_config";
    const FIELDS: &'static [Field] = fields!(zs_pool_config {
        page_size,
        max_pages_per_zspage,
        size_class_delta,
        chain_policy,
        read_mode,
        mem_limit_pages,
        backing,
        reserved,
        backend,
        reserved2,
        class_table,
        class_count,
        multi_page_size,
        placement_only,
    });
}
const _: () = assert!(fields_cover::<zs_pool_config>());

/// The defaults (`zs_pool_config_init`).
pub(crate) fn defaults() -> Result<zs_pool_config> {
    zs_pool_config::from_core(&PoolConfig::default())
}

/// Writes the defaults into the caller's struct of `size` bytes.
///
/// # Safety
/// `cfg` is NULL or writable for `size` bytes.
pub(crate) unsafe fn init(cfg: *mut zs_pool_config, size: usize) -> Result<c_int> {
    // SAFETY: forwarded contract.
    unsafe { write_out(cfg, size, &defaults()?) }?;
    Ok(0)
}

/// Writes the defaults overridden by the environment into the caller's struct of `size` bytes;
/// on a bad value writes nothing. A class table from `ZSMALLOC_CLASS_TABLE` needs a struct of
/// ABI version 5 or later: an older one has nowhere to point at it, and is refused rather than
/// given a configuration without the table; so is a multi-page size from
/// `ZSMALLOC_MULTI_PAGE_SIZE` in a struct before version 6.
///
/// # Safety
/// As [`init`].
pub(crate) unsafe fn from_env(cfg: *mut zs_pool_config, size: usize) -> Result<c_int> {
    if cfg.is_null() {
        return Err(invalid("struct zs_pool_config pointer is NULL"));
    }
    let core = PoolConfig::from_env()?;
    // A struct that ends before the field that would carry a setting of the environment is
    // refused rather than given a configuration without it.
    let class_count_end = offset_of!(zs_pool_config, class_count) + size_of::<size_t>();
    let multi_page_end = offset_of!(zs_pool_config, multi_page_size) + size_of::<u32>();
    if core.class_table.is_some() && size < class_count_end {
        return Err(Error::Config {
            setting: "ZSMALLOC_CLASS_TABLE",
            message: format!(
                "a struct zs_pool_config of {size} bytes (before ABI version 5) has no room for \
                 the class table; rebuild against a newer zsmalloc.h or use zs_create_pool()"
            ),
        });
    }
    if core.multi_page_size != 0 && size < multi_page_end {
        return Err(Error::Config {
            setting: "ZSMALLOC_MULTI_PAGE_SIZE",
            message: format!(
                "a struct zs_pool_config of {size} bytes (before ABI version 6) has no room for \
                 the multi-page size; rebuild against a newer zsmalloc.h or use zs_create_pool()"
            ),
        });
    }
    let c = zs_pool_config::from_core(&core)?;
    // SAFETY: forwarded contract.
    unsafe { write_out(cfg, size, &c) }?;
    Ok(0)
}

/// The validated core configuration the caller's struct of `size` bytes describes (fields it
/// does not have take their defaults).
///
/// # Safety
/// `cfg` is NULL or readable for `size` bytes; if those bytes include `class_table`, it is NULL
/// or readable for `class_count` entries.
pub(crate) unsafe fn read(cfg: *const zs_pool_config, size: usize) -> Result<PoolConfig> {
    // SAFETY: forwarded contract (a struct of at least version 5 names a readable table).
    unsafe { read_in(cfg, size, defaults()?)?.to_core() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_struct_sizes_accepted_end_on_its_field_boundaries() {
        assert!(crate::sized::fields_cover::<zs_pool_config>());
        let boundaries = crate::sized::boundaries::<zs_pool_config>();
        assert_eq!(boundaries, [32, 36, 40, 44, 48, 56, 64, 68, 72]);
        let err = crate::sized::check::<zs_pool_config>(false, 66).unwrap_err().to_string();
        assert_eq!(
            err,
            "invalid argument: struct zs_pool_config size 66 ends inside multi_page_size (bytes \
             64..68): the size of a struct of some ABI version ends on a field boundary, one of \
             32, 36, 40, 44, 48, 56, 64, 68, 72, or is a larger multiple of 8 up to 4096"
        );
        let err = crate::sized::check::<zs_pool_config>(false, 77).unwrap_err().to_string();
        assert!(err.contains("size 77 is above 72 and not a multiple of 8"), "{err}");
        assert!(crate::sized::check::<zs_pool_config>(false, 80).is_ok());
    }

    #[test]
    fn codes_round_trip() {
        for code in [ZS_CHAIN_CLASSIC, ZS_CHAIN_HEURISTIC, ZS_CHAIN_FIXED_BASE + 4] {
            assert_eq!(policy_code(&policy_from_code(code).unwrap()).unwrap(), code);
        }
        for bad in [2, ZS_CHAIN_FIXED_BASE, ZS_CHAIN_FIXED_BASE + 17, u32::MAX] {
            assert!(policy_from_code(bad).is_err(), "{bad}");
        }
        for code in [ZS_READ_COPY, ZS_READ_MAP, ZS_READ_CONTIGUOUS] {
            assert_eq!(read_mode_code(read_mode_from_code(code).unwrap()), code);
        }
        let err = read_mode_from_code(3).unwrap_err().to_string();
        assert!(err.contains("ZS_READ_MAP (1)") && err.contains("ZS_READ_CONTIGUOUS (2)"), "{err}");
        for code in [ZS_BACKING_ANONYMOUS, ZS_BACKING_MEMFD] {
            assert_eq!(backing_code(backing_from_code(code).unwrap()), code);
        }
        assert!(backing_from_code(2).is_err());
        for code in [ZS_BACKEND_ZSMALLOC, ZS_BACKEND_ZBLOCK, ZS_BACKEND_MALLOC] {
            assert_eq!(backend_code(backend_from_code(code).unwrap()), code);
        }
        let err = backend_from_code(3).unwrap_err().to_string();
        assert!(err.contains("ZS_BACKEND_MALLOC (2)"), "{err}");
    }
}
