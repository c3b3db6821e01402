//! The configuration flags every command shares (`--page-size`, `--backend`, ...) and the
//! configuration list of `compare` and `cost` (`--config`, `--sweep`), as clap argument groups.
//! The ZSMALLOC_* environment is not read: a lab run is described by its flags alone.

use clap::Args;

use super::{parse_backend, ConfigSpec};
use crate::error::LabResult;
use crate::flag_values;
use zsmalloc_core::BackendKind;

/// Configuration flags, kept as given and parsed once into a [`ConfigSpec`] (so that every
/// error names the flag the way `--config` specs do).
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Configuration")]
pub struct ConfigFlags {
    /// Simulated page size: a power of two in 4096..=65536 (4K, 16K, 64K accepted) [default: 4096]
    #[arg(long, global = true, value_name = "BYTES", value_parser = flag_values::checked(flag_values::bytes::<u32>(4096, 65536)))]
    pub page_size: Option<String>,
    /// Maximum pages per zspage, 1..=16 [default: 8; 10 for the default `compare`]
    #[arg(long, global = true, value_name = "N", value_parser = flag_values::checked(flag_values::whole::<u32>(1, 16)))]
    pub chain_size: Option<String>,
    /// Class spacing: 0 = page_size >> 8 (mainline), else a multiple of 8 [default: 0]
    #[arg(long, global = true, value_name = "BYTES")]
    pub class_delta: Option<String>,
    /// classic, heuristic or fixed-N [default: classic]
    #[arg(long, global = true, value_name = "POLICY")]
    pub chain_policy: Option<String>,
    /// How spanning objects are read: copy, map or contiguous (`cost`: the read modes to
    /// measure, sg too) [default: copy]
    #[arg(long, global = true, value_name = "MODE")]
    pub read_mode: Option<String>,
    /// Cap on the pool's pages; 0 = none [default: 0]
    #[arg(long, global = true, value_name = "PAGES", value_parser = flag_values::checked(flag_values::any_whole::<u64>()))]
    pub mem_limit_pages: Option<String>,
    /// Class merging, on (mainline since 2014) or off [default: on]
    #[arg(long, global = true, value_name = "on|off")]
    pub merge: Option<String>,
    /// A preset applied before the other flags: 2012 = chain 4, delta 16, no merging (the
    /// zsmalloc of the 2012 thread "zsmalloc limitations and related topics")
    #[arg(long, global = true, value_name = "NAME")]
    pub profile: Option<String>,
    /// An explicit class table: a file in the class-table format (docs/DESIGN.md, Class tables;
    /// `zsmalloc classes --export` writes one). Its page size becomes the pool's
    #[arg(long, global = true, value_name = "FILE")]
    pub class_table: Option<String>,
    /// The multi-page band: objects up to this size, large folios compressed whole (the 2024
    /// RFC "mTHP-friendly compression in zsmalloc and zram based on multi-pages"; docs/DESIGN.md,
    /// Objects of several pages): 0 (off) or the page size shifted left by 1..=4, at most 64K
    /// [default: 0]
    #[arg(long = "multi-page", global = true, value_name = "SIZE")]
    pub multi_page: Option<String>,
    /// The allocator: zsmalloc, zblock or malloc (`compare` and `cost` take a list: one
    /// configuration per backend, side by side) [default: zsmalloc]
    #[arg(long, global = true, value_name = "NAME")]
    pub backend: Option<String>,
}

impl ConfigFlags {
    /// `--backend a,b,...`: the backends named, each its own configuration. `Ok(None)` when
    /// `--backend` is absent or one name (then it is part of the base configuration).
    pub fn backend_list(&self) -> LabResult<Option<Vec<BackendKind>>> {
        let Some(list) = self.backend.as_deref().filter(|b| b.contains(',')) else {
            return Ok(None);
        };
        let names = list.split(',').map(str::trim).filter(|b| !b.is_empty());
        names.map(parse_backend).collect::<LabResult<Vec<_>>>().map(Some)
    }

    /// The configuration of the flags, the profile first, labelled by
    /// [`ConfigSpec::default_label`]. A backend list is left out (the base is zsmalloc's);
    /// nothing is validated yet.
    pub fn base(&self) -> LabResult<ConfigSpec> {
        let backend = self.backend.as_ref().filter(|b| !b.contains(','));
        let flags = [
            ("profile", &self.profile),
            ("class-table", &self.class_table),
            ("page-size", &self.page_size),
            ("chain-size", &self.chain_size),
            ("class-delta", &self.class_delta),
            ("chain-policy", &self.chain_policy),
            ("read-mode", &self.read_mode),
            ("mem-limit-pages", &self.mem_limit_pages),
            ("merge", &self.merge),
            ("multi-page", &self.multi_page),
            ("backend", &backend.cloned()),
        ];
        let mut s = ConfigSpec::default();
        for (key, v) in flags {
            if let Some(v) = v {
                s.set(key, v)?;
            }
        }
        s.label = s.default_label();
        Ok(s)
    }
}

/// The configurations `compare` and `cost` run, beyond the flags.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Configurations")]
pub struct ConfigList {
    /// A configuration: overrides of the configuration flags, e.g. `heuristic` or
    /// `chain-size=4,chain-policy=heuristic,label=short`. Repeat for each configuration.
    #[arg(long = "config", global = true, value_name = "SPEC")]
    pub configs: Vec<String>,
    /// Configurations varying one key: `chain-size=4..16`, `class-delta=8,16,32,64`,
    /// `chain-size=2..16:2`. Several sweeps multiply.
    #[arg(long, global = true, value_name = "KEY=VALUES")]
    pub sweep: Vec<String>,
}
