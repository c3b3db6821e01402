//! The memory a cost run takes, known before the pools are filled: what the process holds
//! already (the corpus, the probes' peak), the cache evictor, and the largest phase's pools.
//! The run refuses to start when that peak is above `--max-memory` or above what the machine
//! has available, and reports its measured peak (`VmHWM`) beside the estimate.

use super::compressed::Compressed;
use super::corpus::Source;
use super::options::CostOptions;
use super::plan::StudyPlan;
use crate::error::{LabError, LabResult};

/// Margin on every estimate: allocator slack and the program's own buffers.
const SLACK_BYTES: u64 = 32 << 20;

/// One phase's pools, as planned.
#[derive(Debug, Clone)]
pub struct PhaseMemory {
    /// `phase 1 of 6: 16384 B pages, lz4, copy pools (modes copy, sg), 13 copies of the corpus`
    pub what: String,
    pub pools: Vec<PoolMemory>,
    /// The phase's estimated peak: its pools and a write batch.
    pub bytes: u64,
}

/// One pool, as planned.
#[derive(Debug, Clone)]
pub struct PoolMemory {
    /// Its configuration's label.
    pub label: String,
    /// Its estimated bytes once filled.
    pub bytes: u64,
}

/// The run's memory, phase by phase.
#[derive(Debug, Clone)]
pub struct MemoryPlan {
    /// Resident now: the program and the compressed corpus, held until the end.
    pub resident_bytes: u64,
    /// The most the process held so far (the probes' pools included).
    pub peak_so_far_bytes: u64,
    pub evict_bytes: u64,
    pub phases: Vec<PhaseMemory>,
    /// The estimated peak of the whole run.
    pub peak_bytes: u64,
}

impl MemoryPlan {
    pub fn new(opts: &CostOptions, corpora: &[Compressed], plan: &StudyPlan) -> MemoryPlan {
        let resident_bytes = proc_status_bytes("VmRSS").unwrap_or(0);
        let peak_so_far_bytes = proc_status_bytes("VmHWM").unwrap_or(resident_bytes);
        let n = plan.phases.len();
        let phases: Vec<PhaseMemory> = plan
            .phases
            .iter()
            .enumerate()
            .map(|(i, ph)| {
                let c = &corpora[ph.corpus];
                let modes: Vec<&str> = ph.modes.iter().map(|m| m.name()).collect();
                let what = format!(
                    "phase {} of {n}: {} B pages, {}, {} pools (modes {}), {} copies of the corpus",
                    i + 1,
                    c.page,
                    c.algo.name(),
                    ph.pool_mode.name(),
                    modes.join(", "),
                    ph.replicas
                );
                let pools = ph
                    .pools
                    .iter()
                    .map(|p| PoolMemory { label: opts.specs[p.spec].label.clone(), bytes: p.bytes })
                    .collect();
                PhaseMemory { what, pools, bytes: ph.bytes() }
            })
            .collect();
        let largest = phases.iter().map(|p| p.bytes).max().unwrap_or(0);
        let running = resident_bytes + opts.evict_bytes + largest + SLACK_BYTES;
        MemoryPlan {
            resident_bytes,
            peak_so_far_bytes,
            evict_bytes: opts.evict_bytes,
            phases,
            peak_bytes: running.max(peak_so_far_bytes),
        }
    }

    /// The plan as printed before the run.
    pub fn describe(&self) -> String {
        let mut out = format!(
            "memory plan: peak about {} (held throughout: {} of program and corpus, {} of cache \
             evictor; one phase's pools at a time)\n",
            human(self.peak_bytes),
            human(self.resident_bytes),
            human(self.evict_bytes)
        );
        for p in &self.phases {
            let each: Vec<String> =
                p.pools.iter().map(|m| format!("{} {}", m.label, human(m.bytes))).collect();
            out += &format!("  {}: {} = {}\n", p.what, each.join(", "), human(p.bytes));
        }
        out
    }

    /// Refuses a plan whose peak is above `max_memory` or whose growth is above what the
    /// machine has available.
    pub fn check(&self, max_memory: Option<u64>) -> LabResult<()> {
        check_peak(self.peak_bytes, self.resident_bytes, max_memory, available_bytes())
    }
}

/// `peak` against the user's limit and against `available` bytes beyond `resident`.
fn check_peak(
    peak: u64,
    resident: u64,
    max_memory: Option<u64>,
    available: Option<u64>,
) -> LabResult<()> {
    let over = match (max_memory, available) {
        (Some(m), _) if peak > m => Some(format!("more than --max-memory {}", human(m))),
        (_, Some(a)) if peak.saturating_sub(resident) > a => Some(format!(
            "more than this machine has available ({} beyond the {} already held)",
            human(a),
            human(resident)
        )),
        _ => None,
    };
    match over {
        None => Ok(()),
        Some(why) => Err(LabError::usage(format!(
            "cost needs about {} at its peak (the memory plan above), {why}: lower --pool-mib, \
             --max-pages or --synthetic-pages, measure fewer modes, configurations or \
             compressors, or raise --max-memory",
            human(peak)
        ))),
    }
}

/// Before the corpus is read: the most the corpus and the probes can take (every page kept,
/// raw and once per compressor, and a probe holding two raw copies), refused as the plan is.
pub fn check_corpus(opts: &CostOptions) -> LabResult<()> {
    let pages = match &opts.source {
        Source::Builtin { pages, .. } => (*pages).min(opts.max_pages),
        Source::Files(_) | Source::Pid(_) => opts.max_pages,
    } as u64;
    let mut sizes: Vec<u64> = opts.specs.iter().map(|s| u64::from(s.config.page_size)).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let copies = 1 + opts.compressors.len() as u64;
    let corpus: u64 = sizes.iter().map(|ps| pages * ps * copies).sum();
    let probe = 2 * pages * sizes.last().copied().unwrap_or(0);
    let resident = proc_status_bytes("VmRSS").unwrap_or(0);
    let peak = resident + corpus + probe + SLACK_BYTES;
    check_peak(peak, resident, opts.max_memory, available_bytes()).map_err(|e| {
        LabError::usage(format!(
            "{e} (before the plan: {pages} pages of corpus per page size, kept raw and per \
             compressor)"
        ))
    })
}

/// A field of `/proc/self/status` in bytes (`VmRSS`, `VmHWM`: kB there).
pub fn proc_status_bytes(field: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    kib_field(&text, field)
}

/// `MemAvailable` of `/proc/meminfo`, or what the memory cgroup still allows, the smaller.
pub fn available_bytes() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok();
    let machine = meminfo.as_deref().and_then(|t| kib_field(t, "MemAvailable"));
    let read = |f: &str| std::fs::read_to_string(format!("/sys/fs/cgroup/{f}")).ok();
    let cgroup = match (read("memory.max"), read("memory.current")) {
        (Some(max), Some(cur)) => max
            .trim()
            .parse::<u64>()
            .ok()
            .zip(cur.trim().parse::<u64>().ok())
            .map(|(m, c)| m.saturating_sub(c)),
        _ => None,
    };
    match (machine, cgroup) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// `Field:   1234 kB` in `text`, in bytes.
fn kib_field(text: &str, field: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.split(':').next() == Some(field))?;
    let kib: u64 = line.split(':').nth(1)?.split_whitespace().next()?.parse().ok()?;
    Some(kib * 1024)
}

/// `--max-memory`: a byte count with an optional K, M, G or T suffix (powers of 1024; `KiB`,
/// `MB` and the like accepted).
pub fn parse_memory(s: &str) -> LabResult<u64> {
    let bad = || {
        LabError::usage(format!(
            "invalid --max-memory '{s}': a size such as 6G, 4096M or 1073741824"
        ))
    };
    let t = s.trim().to_ascii_lowercase();
    let t = t.strip_suffix("ib").or_else(|| t.strip_suffix('b')).unwrap_or(&t);
    let (digits, shift) = match t.chars().last().ok_or_else(bad)? {
        'k' => (&t[..t.len() - 1], 10),
        'm' => (&t[..t.len() - 1], 20),
        'g' => (&t[..t.len() - 1], 30),
        't' => (&t[..t.len() - 1], 40),
        _ => (t, 0),
    };
    let n: u64 = digits.trim().parse().map_err(|_| bad())?;
    n.checked_mul(1 << shift).filter(|&b| b > 0).ok_or_else(bad)
}

/// `1.5 GiB`, `312 MiB`, `64 KiB`.
pub fn human(bytes: u64) -> String {
    let b = bytes as f64;
    if bytes >= 1 << 30 {
        format!("{:.1} GiB", b / f64::from(1 << 30))
    } else if bytes >= 1 << 20 {
        format!("{:.0} MiB", b / f64::from(1 << 20))
    } else {
        format!("{:.0} KiB", b / 1024.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_and_print() {
        assert_eq!(parse_memory("6G").unwrap(), 6 << 30);
        assert_eq!(parse_memory("4096MiB").unwrap(), 4 << 30);
        assert_eq!(parse_memory("512m").unwrap(), 512 << 20);
        assert_eq!(parse_memory("1048576").unwrap(), 1 << 20);
        for bad in ["", "G", "-1G", "0", "1.5G", "lots"] {
            assert!(parse_memory(bad).is_err(), "{bad}");
        }
        assert_eq!(human(3 << 29), "1.5 GiB");
        assert_eq!(human(312 << 20), "312 MiB");
    }

    #[test]
    fn a_peak_over_the_limit_or_the_machine_is_refused_with_exit_2() {
        assert!(check_peak(4 << 30, 1 << 30, Some(6 << 30), Some(8 << 30)).is_ok());
        let e = check_peak(7 << 30, 1 << 30, Some(6 << 30), Some(20 << 30)).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("more than --max-memory 6.0 GiB"), "{e}");
        // Growth beyond what is available, whatever limit is given.
        let e = check_peak(9 << 30, 1 << 30, None, Some(4 << 30)).unwrap_err();
        assert!(e.to_string().contains("available"), "{e}");
        assert!(check_peak(9 << 30, 1 << 30, None, None).is_ok());
    }

    #[test]
    fn fields_are_read_in_bytes() {
        let t = "Name:\tx\nVmHWM:\t  1234 kB\nVmRSS:\t 1000 kB\n";
        assert_eq!(kib_field(t, "VmHWM"), Some(1234 * 1024));
        assert_eq!(kib_field(t, "VmRSS"), Some(1000 * 1024));
        assert_eq!(kib_field(t, "Vm"), None);
        assert!(proc_status_bytes("VmRSS").is_some_and(|b| b > 0));
    }
}
