//! Pool configurations as the lab names them: flags (`--page-size 16K`), `--config` specs
//! (`chain-policy=heuristic,chain-size=10`) and sweep points, all validated by the core.

use crate::error::{LabError, LabResult};
use serde::Serialize;
use zsmalloc_core::{BackendKind, PolicyRef, PoolConfig, ReadMode};

/// One configuration to run, with the label it is reported under.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigSpec {
    #[serde(skip)]
    pub label: String,
    pub page_size: u32,
    pub chain_size: u32,
    /// As given: 0 means `page_size >> 8`.
    #[serde(skip)]
    pub class_delta: u32,
    pub chain_policy: String,
    pub read_mode: String,
    pub mem_limit_pages: u64,
    /// Class merging (mainline since 2014); off for older kernels.
    pub merge: bool,
    /// zsmalloc, zblock or malloc.
    pub backend: String,
}

/// The configuration keys, as flags (`--page-size`) and as spec keys (`page-size=`).
pub const KEYS: [&str; 9] = [
    "page-size",
    "chain-size",
    "class-delta",
    "chain-policy",
    "read-mode",
    "mem-limit-pages",
    "merge",
    "profile",
    "backend",
];

/// `profile=2012`: the zsmalloc of the 2012 thread "zsmalloc limitations and related topics" —
/// at most 4 pages per zspage, classes 16 bytes apart, no class merging (it came in 2014). What it
/// cannot model: that allocator had no in-object handle header (it came with 2015's compaction
/// work) and 4 fullness groups, not 12.
pub const PROFILES: &str = "2012";

impl Default for ConfigSpec {
    fn default() -> Self {
        ConfigSpec {
            label: String::new(),
            page_size: 4096,
            chain_size: PoolConfig::default().chain_size,
            class_delta: 0,
            chain_policy: "classic".into(),
            read_mode: "copy".into(),
            mem_limit_pages: 0,
            merge: true,
            backend: "zsmalloc".into(),
        }
    }
}

/// Parses a byte count: `4096`, `16K`, `16k`, `64KiB`.
pub fn parse_bytes(key: &str, value: &str) -> LabResult<u64> {
    let v = value.trim();
    let lower = v.to_ascii_lowercase();
    let (digits, mult) = if let Some(d) =
        lower.strip_suffix("kib").or_else(|| lower.strip_suffix("kb")).or(lower.strip_suffix('k'))
    {
        (d.to_string(), 1024)
    } else {
        (lower.clone(), 1)
    };
    digits
        .trim()
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
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

impl ConfigSpec {
    /// The class delta in effect (`page_size >> 8` when unset).
    pub fn effective_delta(&self) -> u32 {
        if self.class_delta == 0 {
            self.page_size >> 8
        } else {
            self.class_delta
        }
    }

    /// Sets one key (`page-size`, `chain-size`, `class-delta`, `chain-policy`, `read-mode`,
    /// `mem-limit-pages`, `label`; `_` may replace `-`; `policy`, `chain`, `delta`, `page` are
    /// short forms).
    pub fn set(&mut self, key: &str, value: &str) -> LabResult<()> {
        let k = key.trim().replace('_', "-");
        match k.as_str() {
            "page-size" | "page" => {
                self.page_size = to_u32("page-size", parse_bytes("page-size", value)?)?
            }
            "chain-size" | "chain" => {
                self.chain_size = to_u32("chain-size", parse_uint("chain-size", value)?)?
            }
            "class-delta" | "delta" => {
                self.class_delta = to_u32("class-delta", parse_bytes("class-delta", value)?)?
            }
            "chain-policy" | "policy" => {
                let v = value.trim();
                if PolicyRef::by_name(v).is_none() {
                    return Err(LabError::usage(format!(
                        "invalid chain-policy: '{v}' (accepted: classic, heuristic, fixed-N with N in 1..=16)"
                    )));
                }
                self.chain_policy = v.to_string();
            }
            "read-mode" => self.read_mode = value.trim().to_string(),
            "mem-limit-pages" | "mem-limit" => {
                self.mem_limit_pages = parse_uint("mem-limit-pages", value)?
            }
            "merge" => {
                self.merge = match value.trim() {
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
                    self.chain_size = 4;
                    self.class_delta = 16;
                    self.merge = false;
                }
                v => {
                    return Err(LabError::usage(format!(
                        "invalid profile: '{v}' (accepted: {PROFILES})"
                    )))
                }
            },
            "backend" => {
                let v = value.trim();
                BackendKind::parse(v).map_err(|e| match e {
                    zsmalloc_core::Error::Config { message, .. } => {
                        LabError::usage(format!("invalid backend: {message}"))
                    }
                    other => LabError::from(other),
                })?;
                self.backend = v.to_string();
            }
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

    /// The core's configuration; errors name the setting.
    pub fn pool_config(&self) -> LabResult<PoolConfig> {
        let chain_policy = PolicyRef::by_name(&self.chain_policy).ok_or_else(|| {
            LabError::usage(format!("invalid chain-policy: '{}'", self.chain_policy))
        })?;
        let read_mode = ReadMode::parse(&self.read_mode).map_err(|e| match e {
            zsmalloc_core::Error::Config { message, .. } => {
                LabError::usage(format!("invalid read-mode: {message}"))
            }
            other => LabError::from(other),
        })?;
        let backend = BackendKind::parse(&self.backend)
            .map_err(|_| LabError::usage(format!("invalid backend: '{}'", self.backend)))?;
        let cfg = PoolConfig {
            backend,
            page_size: self.page_size,
            chain_size: self.chain_size,
            class_delta: self.class_delta,
            chain_policy,
            read_mode,
            mem_limit_pages: self.mem_limit_pages,
            merge_classes: self.merge,
            ..PoolConfig::default()
        };
        cfg.validate().map_err(|e| match e {
            zsmalloc_core::Error::Config { setting, message } => {
                LabError::usage(format!("invalid {}: {message}", setting.replace('_', "-")))
            }
            other => LabError::from(other),
        })?;
        Ok(cfg)
    }

    /// Checks every setting (as [`Self::pool_config`]).
    pub fn validate(&self) -> LabResult<()> {
        self.pool_config().map(|_| ())
    }

    /// `page 4096, chain 10, delta 16, classic` (plus read mode and limit when not default);
    /// `zblock, page 4096` for the other backends.
    pub fn describe(&self) -> String {
        if self.backend != "zsmalloc" {
            let mut s = format!("{}, page {}", self.backend, self.page_size);
            if self.mem_limit_pages != 0 {
                s += &format!(", limit {} pages", self.mem_limit_pages);
            }
            return s;
        }
        let mut s = format!(
            "page {}, chain {}, delta {}, {}",
            self.page_size,
            self.chain_size,
            self.effective_delta(),
            self.chain_policy
        );
        if self.read_mode != "copy" {
            s += &format!(", read {}", self.read_mode);
        }
        if self.mem_limit_pages != 0 {
            s += &format!(", limit {} pages", self.mem_limit_pages);
        }
        if !self.merge {
            s += ", no merging";
        }
        s
    }

    /// The value of a key as text (for sweep plots and CSV).
    pub fn get(&self, key: &str) -> Option<String> {
        Some(match key.replace('_', "-").as_str() {
            "page-size" | "page" => self.page_size.to_string(),
            "chain-size" | "chain" => self.chain_size.to_string(),
            "class-delta" | "delta" => self.effective_delta().to_string(),
            "chain-policy" | "policy" => self.chain_policy.clone(),
            "read-mode" => self.read_mode.clone(),
            "mem-limit-pages" | "mem-limit" => self.mem_limit_pages.to_string(),
            "merge" => if self.merge { "on" } else { "off" }.to_string(),
            "backend" => self.backend.clone(),
            _ => return None,
        })
    }
}

/// The configuration as reported (JSON `config` object).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ConfigDesc {
    pub page_size: u32,
    pub chain_size: u32,
    pub class_delta: u32,
    pub chain_policy: String,
    pub read_mode: String,
    pub mem_limit_pages: u64,
    pub merge: bool,
    pub backend: String,
}

impl From<&ConfigSpec> for ConfigDesc {
    fn from(c: &ConfigSpec) -> Self {
        ConfigDesc {
            page_size: c.page_size,
            chain_size: c.chain_size,
            class_delta: c.effective_delta(),
            chain_policy: c.chain_policy.clone(),
            read_mode: c.read_mode.clone(),
            mem_limit_pages: c.mem_limit_pages,
            merge: c.merge,
            backend: c.backend.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_override_the_base() {
        let base = ConfigSpec { page_size: 16384, ..Default::default() };
        let c = ConfigSpec::with_overrides(&base, "heuristic").unwrap();
        assert_eq!(
            (c.page_size, c.chain_policy.as_str(), c.label.as_str()),
            (16384, "heuristic", "heuristic")
        );
        let c =
            ConfigSpec::with_overrides(&base, "class-delta=16, chain_size=4,label=d16").unwrap();
        assert_eq!((c.effective_delta(), c.chain_size, c.label.as_str()), (16, 4, "d16"));
        let c = ConfigSpec::with_overrides(&base, "page-size=64K").unwrap();
        assert_eq!(c.page_size, 65536);
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
        ] {
            let e = ConfigSpec::with_overrides(&base, bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}: {e}");
        }
    }
}
