//! The memory a cost run takes, known before the pools are filled: what the process holds
//! already (the corpus, the probes' peak), the cache evictor, and the largest phase's pools.
//! The run refuses to start when that peak is above `--max-memory` or above what the machine
//! has available, and reports its measured peak (`VmHWM`) beside the estimate.

use super::compressed::Compressed;
use super::corpus::Source;
use super::options::CostOptions;
use super::plan::StudyPlan;
use crate::error::{LabError, LabResult};
use crate::line_wrap::{wrap, wrap_indented};
pub use crate::memory::{available_bytes, human, parse_memory, proc_status_bytes};

use crate::memory::SLACK_BYTES;

/// One phase's pools, as planned.
#[derive(Debug, Clone)]
pub struct PhaseMemory {
    /// `phase 1 of 2: 16384 B pages, lz4, 13 copies of the corpus`
    pub what: String,
    pub pools: Vec<PoolMemory>,
    /// The phase's estimated peak: its pools and a write batch.
    pub bytes: u64,
}

/// One pool, as planned.
#[derive(Debug, Clone)]
pub struct PoolMemory {
    /// Its configuration's label and the modes read on it: `classic (copy, sg)`.
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
    /// The modes are measured in phases of their own, for want of memory.
    pub modes_apart: bool,
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
                let what = format!(
                    "phase {} of {n}: {} B pages, {}, {} copies of the corpus",
                    i + 1,
                    c.page,
                    c.compressor.name(),
                    ph.replicas
                );
                let pools = ph
                    .pools
                    .iter()
                    .map(|p| {
                        let modes: Vec<&str> = p.modes.iter().map(|m| m.name()).collect();
                        let label = opts.specs[p.spec].label.as_str();
                        PoolMemory {
                            label: format!("{label} ({})", modes.join(", ")),
                            bytes: p.bytes,
                        }
                    })
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
            modes_apart: plan.modes_apart,
        }
    }

    /// The plan as printed before the run.
    pub fn describe(&self) -> String {
        let mut out = wrap(&format!(
            "zsmalloc cost: memory plan: peak about {} (held throughout: {} of program and corpus, {} of cache \
             evictor; one phase's pools at a time)",
            human(self.peak_bytes),
            human(self.resident_bytes),
            human(self.evict_bytes)
        ));
        for p in &self.phases {
            let each: Vec<String> =
                p.pools.iter().map(|m| format!("{} {}", m.label, human(m.bytes))).collect();
            out += &wrap_indented(
                &format!(
                    "{}, {} at its peak (the pools and a batch of writes): {}",
                    p.what,
                    human(p.bytes),
                    each.join(", ")
                ),
                2,
            );
        }
        if self.modes_apart {
            out += &wrap_indented(
                "(every mode's pools at once need more memory than this run may take: each pool \
                 read mode has a phase of its own, so differences between modes include the \
                 machine's drift from phase to phase)",
                2,
            );
        }
        out
    }

    /// Refuses a plan whose peak is above `max_memory` or whose growth is above what the
    /// machine has available.
    pub fn check(&self, max_memory: Option<u64>) -> LabResult<()> {
        check_peak(self.peak_bytes, self.resident_bytes, max_memory, available_bytes())
            .map_err(|e| LabError::usage(format!("{e} (the memory plan above)")))
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
        (Some(m), _) if peak > m => Some(format!("more than --max-memory {} ({m} B)", human(m))),
        (_, Some(a)) if peak.saturating_sub(resident) > a => Some(format!(
            "more than this machine has available ({}, {a} B, beyond the {} already held)",
            human(a),
            human(resident)
        )),
        _ => None,
    };
    match over {
        None => Ok(()),
        Some(why) => Err(LabError::usage(format!(
            "cost needs about {} ({peak} B) at its peak, {why}: lower --pool-mib, --max-pages, \
             --synthetic-pages or --batch, or measure fewer modes, configurations or compressors",
            human(peak)
        ))),
    }
}

/// Before the corpus is read, from the flags alone: the corpus (every page kept, raw and once
/// per compressor), then the larger of a probe (two raw copies, and a pool of `--pool-mib`) and
/// the run's pools (each configuration of a page size holds `--pool-mib` at least, beside the
/// cache evictor), refused as the plan is.
pub fn check_corpus(opts: &CostOptions) -> LabResult<()> {
    let pages = match &opts.source {
        Source::Builtin { pages, .. } => *pages,
        Source::Files(_) | Source::Pid(_) => opts.max_pages,
    } as u64;
    let mut sizes: Vec<u64> = opts.specs.iter().map(|s| u64::from(s.config.page_size)).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let copies = 1 + opts.compressors.len() as u64;
    let corpus: u64 = sizes.iter().map(|ps| pages * ps * copies).sum();
    let largest_page = sizes.last().copied().unwrap_or(0);
    let probe = (2 * pages * largest_page).saturating_add(opts.pool_bytes);
    let configs_per_page = sizes
        .iter()
        .map(|&ps| opts.specs.iter().filter(|s| u64::from(s.config.page_size) == ps).count())
        .max()
        .unwrap_or(0) as u64;
    let pools = opts.evict_bytes.saturating_add(opts.pool_bytes.saturating_mul(configs_per_page));
    let resident = proc_status_bytes("VmRSS").unwrap_or(0);
    let peak = (resident + corpus + SLACK_BYTES).saturating_add(probe.max(pools));
    check_peak(peak, resident, opts.max_memory, available_bytes()).map_err(|e| {
        LabError::usage(format!(
            "{e} (before the plan: {pages} pages of corpus per page size, kept raw and per \
             compressor, and {configs_per_page} pools of --pool-mib {} at once)",
            opts.pool_bytes >> 20
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peak_over_the_limit_or_the_machine_is_refused_with_exit_2() {
        assert!(check_peak(4 << 30, 1 << 30, Some(6 << 30), Some(8 << 30)).is_ok());
        let e = check_peak(7 << 30, 1 << 30, Some(6 << 30), Some(20 << 30)).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("more than --max-memory 6 GiB"), "{e}");
        // Growth beyond what is available, whatever limit is given.
        let e = check_peak(9 << 30, 1 << 30, None, Some(4 << 30)).unwrap_err();
        assert!(e.to_string().contains("available"), "{e}");
        assert!(check_peak(9 << 30, 1 << 30, None, None).is_ok());
    }
}
