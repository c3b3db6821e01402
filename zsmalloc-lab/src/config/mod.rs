//! Pool configurations as the lab names them: flags (`--page-size 16K`), `--config` specs
//! (`chain-policy=heuristic,chain-size=10`) and sweep points. Each is parsed once into the
//! core's [`PoolConfig`] (typed: backend, read mode and chain policy are the core's own types),
//! and validated by the core.
//!
//! - [`flags`]: the configuration flags every command shares, and `--config`/`--sweep`;
//! - [`assemble`]: the one place that turns those flags into the configurations a command runs.

pub mod assemble;
pub mod flags;
pub mod sweep;

use crate::error::{LabError, LabResult};
use serde::{Serialize, Serializer};
use zsmalloc_core::class_spec::ClassTableSpec;
use zsmalloc_core::{BackendKind, PolicyRef, PoolConfig, ReadMode};

/// One configuration to run, with the label it is reported under.
#[derive(Debug, Clone)]
pub struct ConfigSpec {
    pub label: String,
    /// Every setting, as the core takes it (`class_delta` as given: 0 means `page_size >> 8`).
    pub config: PoolConfig,
}

/// The configuration keys, as flags (`--page-size`) and as spec keys (`page-size=`).
pub const KEYS: [&str; 11] = [
    "class-table",
    "page-size",
    "chain-size",
    "class-delta",
    "chain-policy",
    "read-mode",
    "mem-limit-pages",
    "merge",
    "multi-page",
    "profile",
    "backend",
];

/// `profile=2012`: the zsmalloc of the 2012 thread "zsmalloc limitations and related topics" —
/// at most 4 pages per zspage, classes 16 bytes apart, no class merging (it came in 2014). What it
/// cannot model: that allocator had no in-object handle header (it came with 2015's compaction
/// work) and 4 fullness groups, not 12.
pub const PROFILES: &str = "2012";

impl Default for ConfigSpec {
    /// Mainline zsmalloc on 4K pages (the core's defaults), unlabelled.
    fn default() -> Self {
        ConfigSpec { label: String::new(), config: PoolConfig::default() }
    }
}

/// Parses a byte count the core's way ([`zsmalloc_core::config::parse_bytes`]: `4096`, `16K`,
/// `16k`, `64KiB`), refused in the lab's words.
pub fn parse_bytes(key: &str, value: &str) -> LabResult<u64> {
    zsmalloc_core::config::parse_bytes(value)
        .ok_or_else(|| LabError::usage(format!("invalid {key}: '{value}' is not a byte count")))
}

/// Parses a non-negative integer.
pub fn parse_uint(key: &str, value: &str) -> LabResult<u64> {
    value
        .trim()
        .parse::<u64>()
        .map_err(|_| LabError::usage(format!("invalid {key}: '{value}' is not a whole number")))
}

fn to_u32(key: &str, v: u64) -> LabResult<u32> {
    u32::try_from(v).map_err(|_| LabError::usage(format!("invalid {key}: {v} is too large")))
}

/// A configuration error of the core, worded with the lab's key (`read-mode`, not
/// `read_mode`).
fn config_error(e: zsmalloc_core::Error) -> LabError {
    match e {
        zsmalloc_core::Error::Config { setting, message } => {
            // The lab's key for the core's `multi_page_size` is `multi-page` (`--multi-page`).
            let key = match setting {
                "multi_page_size" => "multi-page".to_string(),
                other => other.replace('_', "-"),
            };
            LabError::usage(format!("invalid {key}: {message}"))
        }
        other => LabError::from(other),
    }
}

/// Parses a backend name (`zsmalloc`, `zblock`, `malloc`).
pub fn parse_backend(name: &str) -> LabResult<BackendKind> {
    BackendKind::parse(name.trim()).map_err(config_error)
}

impl ConfigSpec {
    /// The class delta in effect (`page_size >> 8` when unset).
    pub fn effective_delta(&self) -> u32 {
        self.config.effective_delta()
    }

    /// Whether this is a zsmalloc pool (the other backends have no classes or chains).
    pub fn is_zsmalloc(&self) -> bool {
        self.config.backend == BackendKind::Zsmalloc
    }

    /// The label a configuration given by flags alone is reported under: `table` with an
    /// explicit class table, its chain policy for zsmalloc, else the backend's name.
    pub fn default_label(&self) -> String {
        if self.config.class_table.is_some() {
            "table".to_string()
        } else if self.is_zsmalloc() {
            self.config.chain_policy.name()
        } else {
            self.config.backend.name().to_string()
        }
    }

    /// Sets one key (`class-table` (a file: the table, its page size and its multi-page size),
    /// `page-size`, `chain-size`, `class-delta`, `chain-policy`, `read-mode`,
    /// `mem-limit-pages`, `merge`, `profile`, `backend`, `label`; `_` may replace `-`;
    /// `policy`, `chain`, `delta`, `page` are short forms).
    pub fn set(&mut self, key: &str, value: &str) -> LabResult<()> {
        let k = key.trim().replace('_', "-");
        let c = &mut self.config;
        match k.as_str() {
            "class-table" | "table" => {
                let table = ClassTableSpec::load(std::path::Path::new(value.trim()))
                    .map_err(config_error)?;
                c.page_size = table.page_size();
                c.multi_page_size = table.multi_page_size();
                c.class_table = Some(table);
            }
            "page-size" | "page" => {
                c.page_size = to_u32("page-size", parse_bytes("page-size", value)?)?
            }
            "chain-size" | "chain" => {
                c.chain_size = to_u32("chain-size", parse_uint("chain-size", value)?)?
            }
            "class-delta" | "delta" => {
                c.class_delta = to_u32("class-delta", parse_bytes("class-delta", value)?)?
            }
            "chain-policy" | "policy" => {
                let v = value.trim();
                c.chain_policy = PolicyRef::by_name(v).ok_or_else(|| {
                    LabError::usage(format!(
                        "invalid chain-policy: '{v}' (accepted: classic, heuristic, fixed-N with N in 1..=16)"
                    ))
                })?;
            }
            "read-mode" => c.read_mode = ReadMode::parse(value.trim()).map_err(config_error)?,
            "mem-limit-pages" | "mem-limit" => {
                c.mem_limit_pages = parse_uint("mem-limit-pages", value)?
            }
            "merge" => {
                c.merge_classes = match value.trim() {
                    "on" | "true" | "yes" | "1" => true,
                    "off" | "false" | "no" | "0" => false,
                    v => {
                        return Err(LabError::usage(format!(
                            "invalid merge: '{v}' (accepted: on, off)"
                        )))
                    }
                }
            }
            "profile" => match value.trim() {
                "2012" => {
                    c.chain_size = 4;
                    c.class_delta = 16;
                    c.merge_classes = false;
                }
                v => {
                    return Err(LabError::usage(format!(
                        "invalid profile: '{v}' (accepted: {PROFILES})"
                    )))
                }
            },
            "multi-page" | "multi-page-size" => {
                c.multi_page_size = to_u32("multi-page", parse_bytes("multi-page", value)?)?
            }
            "backend" => c.backend = parse_backend(value)?,
            "label" | "name" => self.label = value.trim().to_string(),
            _ => {
                return Err(LabError::usage(format!(
                    "unknown configuration key '{key}' (accepted: {}, label)",
                    KEYS.join(", ")
                )))
            }
        }
        Ok(())
    }

    /// `base` with the overrides of a spec: `key=value[,key=value...]`, or a bare policy name
    /// (`heuristic`). The label is the spec itself unless `label=` is given.
    pub fn with_overrides(base: &ConfigSpec, spec: &str) -> LabResult<ConfigSpec> {
        let mut c = base.clone();
        c.label = spec.trim().to_string();
        let mut any = false;
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            any = true;
            match part.split_once('=') {
                Some((k, v)) => c.set(k, v)?,
                None => c.set("chain-policy", part)?,
            }
        }
        if !any {
            return Err(LabError::usage("empty configuration spec"));
        }
        c.validate()?;
        Ok(c)
    }

    /// The core's configuration, validated; errors name the setting.
    pub fn pool_config(&self) -> LabResult<PoolConfig> {
        self.validate()?;
        Ok(self.config.clone())
    }

    /// Checks every setting (the core's rules); errors name the setting.
    pub fn validate(&self) -> LabResult<()> {
        self.config.validate().map_err(config_error)
    }

    /// The configuration in one line: [`ConfigDesc::summary`].
    pub fn describe(&self) -> String {
        ConfigDesc::from(self).summary()
    }

    /// The value of a key as text (for sweep plots and CSV).
    pub fn get(&self, key: &str) -> Option<String> {
        let c = &self.config;
        Some(match key.replace('_', "-").as_str() {
            "page-size" | "page" => c.page_size.to_string(),
            "chain-size" | "chain" => c.chain_size.to_string(),
            "class-delta" | "delta" => c.effective_delta().to_string(),
            "chain-policy" | "policy" => c.chain_policy.name(),
            "read-mode" => c.read_mode.name().to_string(),
            "mem-limit-pages" | "mem-limit" => c.mem_limit_pages.to_string(),
            "merge" => if c.merge_classes { "on" } else { "off" }.to_string(),
            "backend" => c.backend.name().to_string(),
            "multi-page" | "multi-page-size" => c.multi_page_size.to_string(),
            "class-table" | "table" => match &c.class_table {
                Some(t) => format!("{} classes", t.classes().len()),
                None => "computed".to_string(),
            },
            _ => return None,
        })
    }
}

/// The configuration as reported (JSON `config` object): the class delta in effect, the
/// policy by name; backend and read mode serialize as their names.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ConfigDesc {
    pub page_size: u32,
    pub chain_size: u32,
    pub class_delta: u32,
    pub chain_policy: String,
    #[serde(serialize_with = "read_mode_name")]
    pub read_mode: ReadMode,
    pub mem_limit_pages: u64,
    pub merge: bool,
    #[serde(serialize_with = "backend_name")]
    pub backend: BackendKind,
    /// The multi-page band's size (absent when off).
    #[serde(skip_serializing_if = "is_zero")]
    pub multi_page_size: u32,
    /// An explicit class table's classes, `size chain` pairs as in the file format, comma
    /// separated (absent for a computed table, whose settings are the fields above).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class_table: Option<String>,
}

impl ConfigDesc {
    /// The one line that names a configuration: `page 4096, chain 10, delta 16, classic` for
    /// mainline's computed table, `page 4096, class table of 119 classes` for an explicit one,
    /// `zblock, page 4096` for another backend; then every other setting that is not
    /// mainline's (read mode, memory limit, no merging, the multi-page band), so two
    /// configurations that run differently never print the same line.
    pub fn summary(&self) -> String {
        let mut s = match (&self.class_table, self.backend) {
            (_, b) if b != BackendKind::Zsmalloc => {
                format!("{}, page {}", b.name(), self.page_size)
            }
            (Some(t), _) => {
                format!("page {}, class table of {} classes", self.page_size, t.split(',').count())
            }
            (None, _) => format!(
                "page {}, chain {}, delta {}, {}",
                self.page_size, self.chain_size, self.class_delta, self.chain_policy
            ),
        };
        if self.read_mode != ReadMode::Copy {
            s += &format!(", read {}", self.read_mode.name());
        }
        if self.mem_limit_pages != 0 {
            s += &format!(", limit {} pages", self.mem_limit_pages);
        }
        // Merging is a property of a computed zsmalloc table; a given table lists its classes.
        if !self.merge && self.backend == BackendKind::Zsmalloc && self.class_table.is_none() {
            s += ", no merging";
        }
        if self.multi_page_size != 0 {
            s += &format!(", multi-page {}", self.multi_page_size);
        }
        s
    }
}

/// serde's `skip_serializing_if` for a field that is only written when set (non-zero).
pub(crate) fn is_zero(v: &u32) -> bool {
    *v == 0
}

fn read_mode_name<S: Serializer>(m: &ReadMode, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(m.name())
}

fn backend_name<S: Serializer>(b: &BackendKind, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(b.name())
}

impl From<&ConfigSpec> for ConfigDesc {
    fn from(spec: &ConfigSpec) -> Self {
        let c = &spec.config;
        ConfigDesc {
            page_size: c.page_size,
            chain_size: c.chain_size,
            class_delta: c.effective_delta(),
            chain_policy: c.chain_policy.name(),
            read_mode: c.read_mode,
            mem_limit_pages: c.mem_limit_pages,
            merge: c.merge_classes,
            backend: c.backend,
            multi_page_size: c.multi_page_size,
            class_table: c.class_table.as_ref().map(|t| {
                let pairs: Vec<String> =
                    t.classes().iter().map(|k| format!("{} {}", k.size, k.chain)).collect();
                pairs.join(", ")
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_override_the_base() {
        let mut base = ConfigSpec::default();
        base.config.page_size = 16384;
        let c = ConfigSpec::with_overrides(&base, "heuristic").unwrap();
        assert_eq!(
            (c.config.page_size, c.config.chain_policy.name().as_str(), c.label.as_str()),
            (16384, "heuristic", "heuristic")
        );
        let c =
            ConfigSpec::with_overrides(&base, "class-delta=16, chain_size=4,label=d16").unwrap();
        assert_eq!((c.effective_delta(), c.config.chain_size, c.label.as_str()), (16, 4, "d16"));
        let c = ConfigSpec::with_overrides(&base, "page-size=64K").unwrap();
        assert_eq!(c.config.page_size, 65536);
        let c = ConfigSpec::with_overrides(&base, "read-mode=contiguous,backend=zblock").unwrap();
        assert_eq!(
            (c.config.read_mode, c.config.backend),
            (ReadMode::Contiguous, BackendKind::Zblock)
        );
        assert_eq!(c.get("backend").as_deref(), Some("zblock"));
    }

    #[test]
    fn bad_specs_are_usage_errors() {
        let base = ConfigSpec::default();
        for bad in [
            "greedy",
            "page-size=5000",
            "chain-size=0",
            "class-delta=12",
            "colour=red",
            ",",
            "read-mode=mmap",
            "chain-size=x",
            "backend=slab",
        ] {
            let e = ConfigSpec::with_overrides(&base, bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}: {e}");
        }
        let e = ConfigSpec::with_overrides(&base, "read-mode=sg").unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid read-mode: 'sg' is unknown; accepted: copy, map, contiguous"
        );
    }

    #[test]
    fn the_report_names_backend_and_mode() {
        let c = ConfigSpec::with_overrides(&ConfigSpec::default(), "read-mode=contiguous").unwrap();
        let v = serde_json::to_value(ConfigDesc::from(&c)).unwrap();
        assert_eq!(
            (v["read_mode"].as_str(), v["backend"].as_str()),
            (Some("contiguous"), Some("zsmalloc"))
        );
        assert_eq!(v["class_delta"], 16);
    }

    #[test]
    fn every_setting_not_mainlines_is_in_the_line() {
        let base = ConfigSpec::default();
        assert_eq!(base.describe(), "page 4096, chain 8, delta 16, classic");
        for (spec, shown) in [
            ("merge=off", "page 4096, chain 8, delta 16, classic, no merging"),
            ("profile=2012", "page 4096, chain 4, delta 16, classic, no merging"),
            ("read-mode=map", "page 4096, chain 8, delta 16, classic, read map"),
            ("mem-limit-pages=100", "page 4096, chain 8, delta 16, classic, limit 100 pages"),
            ("backend=zblock", "zblock, page 4096"),
            ("backend=malloc,read-mode=copy", "malloc, page 4096"),
            (
                "page-size=16K,multi-page=64K",
                "page 16384, chain 8, delta 64, classic, multi-page 65536",
            ),
        ] {
            let c = ConfigSpec::with_overrides(&base, spec).unwrap();
            assert_eq!(c.describe(), shown, "{spec}");
            assert_eq!(ConfigDesc::from(&c).summary(), shown, "{spec}");
        }
    }
}
