//! The machine a corpus is recorded on, as its manifest gives it.

use super::manifest::Machine;

/// This machine: kernel release, CPU model, online CPUs, page size and this build's version.
pub fn this_machine() -> Machine {
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find_map(|l| {
            let (key, value) = l.split_once(':')?;
            (key.trim() == "model name").then(|| value.trim().to_string())
        })
        .unwrap_or_default();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    Machine {
        kernel,
        cpu,
        cores,
        page_size: zsmalloc_tier::uffd::page_size() as u64,
        zsmalloc: format!("zsmalloc {}", env!("CARGO_PKG_VERSION")),
    }
}
