//! Facts about the running machine the kernel commands need before touching anything: root,
//! zram's control directory, the kernel release, the page size, free memory and the last-level
//! cache. Each refusal is a usage error (exit 2, one line).

use std::path::Path;

use serde::Serialize;

use crate::error::{LabError, LabResult};

/// Where `hot_add` and `hot_remove` live.
pub const ZRAM_CONTROL: &str = "/sys/class/zram-control";

/// The machine the commands run on.
#[derive(Debug, Clone, Serialize)]
pub struct Host {
    /// `uname -r`.
    pub release: String,
    /// The kernel's page size (zram's page, the pool's page).
    pub page_size: usize,
}

impl Host {
    /// The host, or why the kernel commands cannot run here.
    pub fn probe() -> LabResult<Host> {
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            return Err(LabError::usage(
                "the kernel commands need root (they create and remove a zram device)",
            ));
        }
        if !Path::new(ZRAM_CONTROL).join("hot_add").exists() {
            return Err(LabError::usage(format!(
                "this kernel has no zram control ({ZRAM_CONTROL}/hot_add is missing: zram not \
                 built in or not loaded — try 'modprobe zram')"
            )));
        }
        Ok(Host { release: release(), page_size: page_size() })
    }
}

/// Why the kernel commands cannot run here, or `None` (for tests that skip with a reason).
pub fn unavailable() -> Option<String> {
    Host::probe().err().map(|e| e.to_string())
}

/// The kernel release (`uname -r`).
pub fn release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// The host's page size (the core's reading; 4096 if the system does not say).
pub fn page_size() -> usize {
    match zsmalloc_core::config::host_page_size() {
        0 => 4096,
        p => p,
    }
}

/// Refuses when `need` bytes would not fit in what this process can take
/// ([`crate::memory::available_bytes`], with a quarter kept free).
pub fn check_memory(need: u64, what: &str) -> LabResult<()> {
    let avail = crate::memory::available_bytes()
        .ok_or_else(|| LabError::runtime("/proc/meminfo has no MemAvailable line"))?;
    if need > avail / 4 * 3 {
        return Err(LabError::usage(format!(
            "{what} needs about {} MiB ({need} B), more than three quarters of the {} MiB \
             ({avail} B) available: lower --max-pages or --synthetic-pages",
            need >> 20,
            avail >> 20
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_has_a_page_size_and_a_release() {
        assert!(page_size() >= 4096);
        assert!(!release().is_empty());
    }
}
