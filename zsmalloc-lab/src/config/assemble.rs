//! The one place that turns the configuration flags, `--backend`, `--config`, `--sweep` and
//! `--profile` into the configurations a command runs, by one rule for every command:
//!
//! 1. The base is the flags (`--profile` first, then the others over it).
//! 2. The named configurations are each `--config` over the base, then every point of the
//!    `--sweep`s (several multiply).
//! 3. `--backend` with one name (or none) is part of the base; the command runs the named
//!    configurations, or, when none is named, its own defaults on the base ([`Defaults`]).
//! 4. `--backend a,b,...` makes each backend its configurations, in the order listed:
//!    zsmalloc the named configurations (or, when none is named, the command's zsmalloc set);
//!    every other backend the base with that backend, labelled by its name. Named
//!    configurations need zsmalloc in the list: they are zsmalloc's.

use super::flags::{ConfigFlags, ConfigList};
use super::sweep;
use super::ConfigSpec;
use crate::error::{LabError, LabResult};
use zsmalloc_core::BackendKind;

/// What a command runs where the user named no configuration.
pub struct Defaults<'a> {
    /// Without a backend list: the configurations on the base (usually the base alone).
    pub alone: &'a dyn Fn(&ConfigSpec) -> LabResult<Vec<ConfigSpec>>,
    /// zsmalloc's configurations in a backend list.
    pub in_list: &'a dyn Fn(&ConfigSpec) -> LabResult<Vec<ConfigSpec>>,
}

impl Defaults<'static> {
    /// The base alone; in a list, the base labelled `zsmalloc`.
    pub fn base() -> Self {
        Defaults {
            alone: &|base| Ok(vec![base.clone()]),
            in_list: &|base| Ok(vec![zsmalloc(base)]),
        }
    }
}

/// The base as the zsmalloc entry of a backend list: labelled `zsmalloc`.
pub fn zsmalloc(base: &ConfigSpec) -> ConfigSpec {
    ConfigSpec { label: BackendKind::Zsmalloc.name().to_string(), ..base.clone() }
}

/// The configurations of a command, and what they were made from.
#[derive(Debug, Clone)]
pub struct Assembly {
    /// The flags' configuration (validated).
    pub base: ConfigSpec,
    /// Every configuration to run, in order (each validated).
    pub specs: Vec<ConfigSpec>,
    /// Keys swept (`--sweep`), in order; empty without a sweep.
    pub sweep_keys: Vec<String>,
}

/// The configurations `flags` and `list` name (rule in the module documentation).
pub fn assemble(
    flags: &ConfigFlags,
    list: &ConfigList,
    defaults: &Defaults,
) -> LabResult<Assembly> {
    let base = flags.base()?;
    base.validate()?;
    let sweeps = list.sweep.iter().map(|s| sweep::parse_sweep(s)).collect::<LabResult<Vec<_>>>()?;
    let mut named = Vec::new();
    for c in &list.configs {
        named.push(ConfigSpec::with_overrides(&base, c)?);
    }
    named.extend(sweep::expand(&base, &sweeps)?);
    let specs = match flags.backend_list()? {
        None if named.is_empty() => (defaults.alone)(&base)?,
        None => named,
        Some(backends) => {
            let zsmalloc_listed = backends.contains(&BackendKind::Zsmalloc);
            if !named.is_empty() && !zsmalloc_listed {
                return Err(LabError::usage(
                    "--config and --sweep name zsmalloc configurations: list zsmalloc in \
                     --backend too (or name the backend inside each spec: backend=zblock)",
                ));
            }
            let mut specs = Vec::new();
            for b in backends {
                if b == BackendKind::Zsmalloc {
                    if named.is_empty() {
                        specs.extend((defaults.in_list)(&base)?);
                    } else {
                        specs.extend(named.iter().cloned());
                    }
                } else {
                    let name = b.name();
                    specs.push(ConfigSpec::with_overrides(
                        &base,
                        &format!("backend={name},label={name}"),
                    )?);
                }
            }
            specs
        }
    };
    for s in &specs {
        s.validate()?;
    }
    Ok(Assembly { base, specs, sweep_keys: sweeps.into_iter().map(|s| s.key).collect() })
}

/// The one configuration of a command that runs one (`run`, `replay`, `classes`).
pub fn assemble_one(flags: &ConfigFlags, command: &str) -> LabResult<ConfigSpec> {
    let mut a = assemble(flags, &ConfigList::default(), &Defaults::base())?;
    if a.specs.len() != 1 {
        return Err(LabError::usage(format!(
            "{command} takes one configuration: --backend names one backend here (compare and \
             cost take a list)"
        )));
    }
    Ok(a.specs.remove(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(backend: Option<&str>) -> ConfigFlags {
        ConfigFlags { backend: backend.map(str::to_string), ..ConfigFlags::default() }
    }

    fn labels(a: &Assembly) -> Vec<&str> {
        a.specs.iter().map(|s| s.label.as_str()).collect()
    }

    #[test]
    fn one_rule_for_lists_names_and_defaults() {
        let none = ConfigList::default();
        let a = assemble(&flags(None), &none, &Defaults::base()).unwrap();
        assert_eq!(labels(&a), ["classic"]);
        let a = assemble(&flags(Some("zblock")), &none, &Defaults::base()).unwrap();
        assert_eq!(labels(&a), ["zblock"]);
        let a = assemble(&flags(Some("zsmalloc,zblock,malloc")), &none, &Defaults::base()).unwrap();
        assert_eq!(labels(&a), ["zsmalloc", "zblock", "malloc"]);
        assert_eq!(a.specs[2].config.backend, BackendKind::Malloc);

        let named =
            ConfigList { configs: vec!["heuristic".into()], sweep: vec!["chain-size=4..5".into()] };
        let a = assemble(&flags(None), &named, &Defaults::base()).unwrap();
        assert_eq!(labels(&a), ["heuristic", "chain-size=4", "chain-size=5"]);
        assert_eq!(a.sweep_keys, ["chain-size"]);
        let a = assemble(&flags(Some("malloc,zsmalloc")), &named, &Defaults::base()).unwrap();
        assert_eq!(labels(&a), ["malloc", "heuristic", "chain-size=4", "chain-size=5"]);
        let e = assemble(&flags(Some("zblock,malloc")), &named, &Defaults::base()).unwrap_err();
        assert_eq!(e.exit_code(), 2);

        let pair = |b: &ConfigSpec| {
            ["classic", "heuristic"].iter().map(|p| ConfigSpec::with_overrides(b, p)).collect()
        };
        let d = Defaults { alone: &pair, in_list: &pair };
        let a = assemble(&flags(None), &none, &d).unwrap();
        assert_eq!(labels(&a), ["classic", "heuristic"]);
        let a = assemble(&flags(Some("zblock,zsmalloc")), &none, &d).unwrap();
        assert_eq!(labels(&a), ["zblock", "classic", "heuristic"]);
    }

    #[test]
    fn bad_flags_and_lists_are_usage_errors() {
        let e = assemble_one(&flags(Some("zsmalloc,zblock")), "run").unwrap_err();
        assert!(e.to_string().contains("run takes one configuration"), "{e}");
        let e = assemble_one(&flags(Some("zsmalloc,slab")), "run").unwrap_err();
        assert!(e.to_string().contains("zsmalloc, zblock, malloc"), "{e}");
        let bad = ConfigFlags { chain_size: Some("20".into()), ..ConfigFlags::default() };
        assert_eq!(assemble_one(&bad, "run").unwrap_err().exit_code(), 2);
        let p = ConfigFlags {
            profile: Some("2012".into()),
            chain_size: Some("6".into()),
            ..Default::default()
        };
        let s = assemble_one(&p, "run").unwrap();
        assert_eq!(
            (s.config.chain_size, s.config.class_delta, s.config.merge_classes),
            (6, 16, false)
        );
    }
}
