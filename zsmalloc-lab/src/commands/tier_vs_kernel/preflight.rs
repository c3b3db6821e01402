//! The refusals of `--vs-kernel`, each one line (exit 2), before anything is made: root, zram,
//! a memory cgroup; and, unless `--yes`, a machine under memory pressure or already swapping.
//! After the tier run, the memory the kernel run needs (MemAvailable against twice the
//! program's peak), unless `--yes`.

use super::cgroup;
use super::swap;
use crate::kernel::host;

/// `some avg10` of /proc/pressure/memory above which the machine counts as under pressure (%).
pub const PRESSURE_AVG10: f64 = 5.0;

/// The machine-wide counters of /proc/vmstat the run reads.
pub fn vmstat() -> std::collections::BTreeMap<String, u64> {
    cgroup::keyed(std::path::Path::new("/proc/vmstat"))
}

fn pressure() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/pressure/memory").ok()?;
    let some = text.lines().find(|l| l.starts_with("some"))?;
    some.split_whitespace().find_map(|w| w.strip_prefix("avg10="))?.parse().ok()
}

/// Why the kernel run cannot be made here, or `Ok`.
pub fn check(yes: bool) -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("--vs-kernel needs root (it makes a zram device, a swap on it and a memory \
                    cgroup)"
            .into());
    }
    if !std::path::Path::new(host::ZRAM_CONTROL).join("hot_add").exists() {
        return Err(format!(
            "--vs-kernel: this kernel has no zram control ({}/hot_add is missing: try \
             'modprobe zram')",
            host::ZRAM_CONTROL
        ));
    }
    cgroup::hierarchy().map_err(|e| format!("--vs-kernel: {e}"))?;
    super::leftovers::remove();
    if yes {
        return Ok(());
    }
    let swaps = swap::active();
    if !swaps.is_empty() {
        return Err(format!(
            "--vs-kernel: the machine already swaps ({}); the kernel run's figures would mix \
             with it (--yes to run anyway)",
            swaps.join(", ")
        ));
    }
    if let Some(p) = pressure().filter(|&p| p > PRESSURE_AVG10) {
        return Err(format!(
            "--vs-kernel: the machine is under memory pressure (/proc/pressure/memory some \
             avg10={p:.2} > {PRESSURE_AVG10}) (--yes to run anyway)"
        ));
    }
    let before = vmstat().get("pswpout").copied().unwrap_or(0);
    std::thread::sleep(std::time::Duration::from_millis(200));
    let after = vmstat().get("pswpout").copied().unwrap_or(0);
    if after > before {
        return Err(format!(
            "--vs-kernel: the machine is swapping out (pswpout rose by {} in 0.2 s) (--yes to \
             run anyway)",
            after - before
        ));
    }
    Ok(())
}

/// Refuses, unless `yes`, when MemAvailable is below twice `peak` (the program's peak).
pub fn check_memory(peak: u64, yes: bool) -> Result<(), String> {
    let avail = crate::memory::available_bytes().unwrap_or(0);
    if !yes && avail < 2 * peak {
        return Err(format!(
            "--vs-kernel: {} MiB available, less than twice the program's peak ({} MiB): the \
             kernel run is not made (--yes to run anyway)",
            avail >> 20,
            peak >> 20
        ));
    }
    Ok(())
}
