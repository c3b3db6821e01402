//! The kernel run's memory cgroup: a new one of its own, v2 where the unified hierarchy is
//! mounted at /sys/fs/cgroup with the memory controller, else v1's /sys/fs/cgroup/memory. Its
//! limit (`memory.max`, v1 `memory.limit_in_bytes`; the swap limit untouched) is the only thing
//! set; it is removed on every exit ([`super::teardown`]). No other cgroup is written.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use crate::error::{LabError, LabResult};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
}

/// Where a memory cgroup can be made here, or why not.
pub fn hierarchy() -> Result<(Version, PathBuf), String> {
    let v2 = Path::new("/sys/fs/cgroup");
    let has = |file: &str| {
        std::fs::read_to_string(v2.join(file))
            .unwrap_or_default()
            .split_whitespace()
            .any(|c| c == "memory")
    };
    // The root's children get the memory controller only where the root hands it down
    // (`cgroup.subtree_control`), which this command does not change.
    if has("cgroup.controllers") && has("cgroup.subtree_control") {
        return Ok((Version::V2, v2.to_path_buf()));
    }
    let v1 = v2.join("memory");
    if v1.join("memory.limit_in_bytes").exists() {
        return Ok((Version::V1, v1));
    }
    if has("cgroup.controllers") {
        return Err("cgroup v2's root does not hand the memory controller to its children \
                    (memory is not in /sys/fs/cgroup/cgroup.subtree_control)"
            .into());
    }
    Err("no memory cgroup controller (neither cgroup v2 with memory at /sys/fs/cgroup nor v1 \
         at /sys/fs/cgroup/memory)"
        .into())
}

/// A memory cgroup this process made.
pub struct Cgroup {
    pub version: Version,
    pub dir: PathBuf,
    pub limit: u64,
}

impl Cgroup {
    /// Makes `zsmalloc-vs-kernel-<pid>` with `limit` bytes of memory, registered for removal.
    pub fn create(limit: u64) -> LabResult<Cgroup> {
        let (version, root) = hierarchy().map_err(LabError::usage)?;
        let dir = root.join(format!("zsmalloc-vs-kernel-{}", std::process::id()));
        {
            let _blocked = crate::interrupt::Blocked::new();
            std::fs::create_dir(&dir).map_err(|e| LabError::io("create", &dir, &e))?;
            super::teardown::set_cgroup(&dir.display().to_string());
        }
        let knob = match version {
            Version::V2 => "memory.max",
            Version::V1 => "memory.limit_in_bytes",
        };
        let path = dir.join(knob);
        std::fs::write(&path, limit.to_string()).map_err(|e| LabError::io("write", &path, &e))?;
        Ok(Cgroup { version, dir, limit })
    }

    /// `cgroup.procs`, open for the program to write itself into before its exec.
    pub fn procs(&self) -> LabResult<File> {
        let path = self.dir.join("cgroup.procs");
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .map_err(|e| LabError::io("open", &path, &e))
    }

    /// `memory.stat` as keys and values.
    pub fn stat(&self) -> BTreeMap<String, u64> {
        keyed(&self.dir.join("memory.stat"))
    }

    /// The OOM kills in the cgroup (`memory.events` v2, `memory.oom_control` v1).
    pub fn oom_kills(&self) -> Option<u64> {
        let file = match self.version {
            Version::V2 => "memory.events",
            Version::V1 => "memory.oom_control",
        };
        keyed(&self.dir.join(file)).get("oom_kill").copied()
    }

    /// Its peak usage (`memory.peak` v2, `memory.max_usage_in_bytes` v1), when the kernel has it.
    pub fn peak(&self) -> Option<u64> {
        let file = match self.version {
            Version::V2 => "memory.peak",
            Version::V1 => "memory.max_usage_in_bytes",
        };
        std::fs::read_to_string(self.dir.join(file)).ok()?.trim().parse().ok()
    }

    pub fn version_name(&self) -> &'static str {
        match self.version {
            Version::V1 => "v1",
            Version::V2 => "v2",
        }
    }
}

/// A file of `key value` lines.
pub fn keyed(path: &Path) -> BTreeMap<String, u64> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some((w.next()?.to_string(), w.next()?.parse().ok()?))
        })
        .collect()
}
