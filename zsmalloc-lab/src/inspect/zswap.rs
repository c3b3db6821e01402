//! zswap as the machine shows it: its module parameters, `/proc/vmstat` (`nr_zspages`,
//! `zswpout`, `zswpin`, `zswpwb`), `/proc/meminfo` (`Zswap`: the pool's memory, `Zswapped`:
//! the pages it holds, before compression), and cgroup v2 `memory.stat`'s zswap lines for the
//! root cgroup and this process's own.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::read::{self, Unreadable};

const PARAMETERS: &str = "/sys/module/zswap/parameters";
const VMSTAT_KEYS: [&str; 4] = ["nr_zspages", "zswpout", "zswpin", "zswpwb"];
const CGROUP_KEYS: [&str; 5] = ["zswap", "zswapped", "zswpout", "zswpin", "zswpwb"];

/// One cgroup's zswap lines of `memory.stat` (`zswap`, `zswapped` in bytes; the events).
#[derive(Debug, Clone, Serialize)]
pub struct CgroupZswap {
    /// The cgroup, as `/proc/self/cgroup` names it (`/` for the root).
    pub cgroup: String,
    pub stat: BTreeMap<String, u64>,
}

/// zswap on this machine.
#[derive(Debug, Clone, Serialize)]
pub struct Zswap {
    /// The kernel has zswap (`/sys/module/zswap` exists).
    pub present: bool,
    /// `enabled` is `Y`.
    pub enabled: Option<bool>,
    /// Every module parameter (`compressor`, `max_pool_percent`...), as its file reads.
    pub parameters: BTreeMap<String, String>,
    /// `nr_zspages` (every zsmalloc pool of the machine, zram's included) and zswap's events.
    pub vmstat: BTreeMap<String, u64>,
    /// `Zswap` of `/proc/meminfo`: the memory zswap's pool takes.
    pub pool_bytes: Option<u64>,
    /// `Zswapped`: the pages it holds, before compression.
    pub stored_bytes: Option<u64>,
    /// `Zswapped / Zswap`.
    pub ratio: Option<f64>,
    /// cgroup v2 `memory.stat` zswap lines: the root cgroup and this process's own.
    pub cgroups: Vec<CgroupZswap>,
    /// Why there are no cgroup lines, when there are none.
    pub cgroups_note: Option<String>,
    pub unreadable: Unreadable,
}

/// Reads zswap's files.
pub fn read_zswap() -> Zswap {
    let mut u = Unreadable::new();
    let present = Path::new("/sys/module/zswap").exists();
    let mut parameters = BTreeMap::new();
    if let Ok(dir) = std::fs::read_dir(PARAMETERS) {
        let mut names: Vec<PathBuf> = dir.filter_map(|e| Some(e.ok()?.path())).collect();
        names.sort();
        for p in names {
            if let (Some(name), Some(v)) =
                (p.file_name().and_then(|n| n.to_str()), read::text(&p, &mut u))
            {
                parameters.insert(name.to_string(), v.trim().to_string());
            }
        }
    }
    let enabled = parameters.get("enabled").map(|v| v == "Y" || v == "1");
    let vmstat = read::text(Path::new("/proc/vmstat"), &mut u)
        .map(|t| read::key_values(&t, &VMSTAT_KEYS))
        .unwrap_or_default();
    let meminfo = read::text(Path::new("/proc/meminfo"), &mut u);
    let pool_bytes = meminfo.as_deref().and_then(|t| read::meminfo_bytes(t, "Zswap"));
    let stored_bytes = meminfo.as_deref().and_then(|t| read::meminfo_bytes(t, "Zswapped"));
    let ratio = match (stored_bytes, pool_bytes) {
        (Some(s), Some(p)) if p > 0 => Some((s as f64 / p as f64 * 100.0).round() / 100.0),
        _ => None,
    };
    let (cgroups, cgroups_note) = cgroups(&mut u);
    Zswap {
        present,
        enabled,
        parameters,
        vmstat,
        pool_bytes,
        stored_bytes,
        ratio,
        cgroups,
        cgroups_note,
        unreadable: u,
    }
}

/// Where cgroup v2 is mounted (`/proc/self/mountinfo`: the field after ` - ` is the type).
fn cgroup2_mount() -> Option<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    info.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        if right.split_whitespace().next()? != "cgroup2" {
            return None;
        }
        left.split_whitespace().nth(4).map(PathBuf::from)
    })
}

/// The zswap lines of the root cgroup's and this process's cgroup's `memory.stat`.
fn cgroups(u: &mut Unreadable) -> (Vec<CgroupZswap>, Option<String>) {
    let Some(mount) = cgroup2_mount() else {
        return (Vec::new(), Some("cgroup v2 is not mounted".into()));
    };
    let own = std::fs::read_to_string("/proc/self/cgroup")
        .ok()
        .and_then(|t| t.lines().find_map(|l| l.strip_prefix("0::").map(|p| p.trim().to_string())))
        .unwrap_or_else(|| "/".into());
    let mut paths = vec!["/".to_string()];
    if own != "/" {
        paths.push(own);
    }
    let mut out = Vec::new();
    for cg in paths {
        let file = mount.join(cg.trim_start_matches('/')).join("memory.stat");
        if let Some(t) = read::optional(&file, u) {
            out.push(CgroupZswap { cgroup: cg, stat: read::key_values(&t, &CGROUP_KEYS) });
        }
    }
    let note = out.is_empty().then(|| {
        format!(
            "no memory.stat under {} (the memory controller is not on cgroup v2, or the root \
             cgroup has none)",
            mount.display()
        )
    });
    (out, note)
}
