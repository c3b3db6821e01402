//! The kernel's side of `check` and `capture`: a device is filled with the corpus one page per
//! write, then a seeded share of its pages is discarded, then it is compacted, with `mm_stat`
//! read after every step. Each step keeps what the kernel did: for a write, the exact length
//! zram passed to `zs_malloc` (the delta of `compr_data_size`), or that the page was same-filled
//! (`same_pages` grew: nothing stored) or stored whole (`huge_pages` grew: `PAGE_SIZE` bytes).

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use super::corpus::CompressorArgs;
use super::device::{Device, DeviceSpec};
use super::host::{self, Host};
use super::mm_stat::MmStat;
use crate::error::{LabError, LabResult};

/// The three phases, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DevicePhase {
    Fill,
    Free,
    Compact,
}

impl DevicePhase {
    pub const ALL: [DevicePhase; 3] = [DevicePhase::Fill, DevicePhase::Free, DevicePhase::Compact];

    pub fn name(self) -> &'static str {
        match self {
            DevicePhase::Fill => "fill",
            DevicePhase::Free => "free",
            DevicePhase::Compact => "compact",
        }
    }
}

/// How zram stored one page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Stored {
    /// Same-filled: kept in zram's table, nothing in the pool.
    Same,
    /// Did not compress below `huge_class_size`: stored whole (`PAGE_SIZE` bytes).
    Huge,
    /// Compressed: `zs_malloc` of the step's length.
    Compressed,
}

/// One operation on the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Page `page` written; `len` is the `zs_malloc` length (0 for a same-filled page).
    Store { page: u32, stored: Stored, len: u32 },
    /// Page `page` discarded.
    Free { page: u32 },
    /// The pool compacted.
    Compact,
}

/// An operation and `mm_stat` right after it.
#[derive(Debug, Clone, Copy)]
pub struct Step {
    pub phase: DevicePhase,
    pub op: Op,
    pub after: MmStat,
    /// `pages_compacted` grew outside the compact phase: the kernel's shrinker compacted the
    /// pool on its own around this step.
    pub shrinker_compacted: bool,
}

/// What to do with the device.
#[derive(Debug, Clone, PartialEq)]
pub struct FillPlan {
    pub compressor: Option<String>,
    pub level: Option<i32>,
    /// Share of the written pages discarded after the fill, 0..=1.
    pub free_share: f64,
    /// Seeds which pages are discarded and in which order.
    pub seed: u64,
    /// Compact after the discards.
    pub compact: bool,
}

impl FillPlan {
    /// The plan of a fill with `codec`'s compressor, `free_share` of the pages then discarded
    /// in the order `seed` draws, and a compaction when `compact`.
    pub fn new(codec: &CompressorArgs, free_share: f64, seed: u64, compact: bool) -> FillPlan {
        let (compressor, level) = (codec.compressor.clone(), codec.level);
        FillPlan { compressor, level, free_share, seed, compact }
    }
}

/// Everything the kernel did.
#[derive(Debug, Clone)]
pub struct KernelSteps {
    pub host: Host,
    pub compressor: String,
    pub level: Option<i32>,
    pub steps: Vec<Step>,
}

impl KernelSteps {
    /// The steps of one phase.
    pub fn phase(&self, phase: DevicePhase) -> impl Iterator<Item = &Step> {
        self.steps.iter().filter(move |s| s.phase == phase)
    }

    /// `mm_stat` at the end of `phase` (or of the phase before it when it had no step).
    pub fn after(&self, phase: DevicePhase) -> MmStat {
        self.steps
            .iter()
            .rev()
            .find(|s| s.phase as u8 <= phase as u8)
            .map_or_else(MmStat::default, |s| s.after)
    }
}

fn unexpected(page: usize, before: &MmStat, after: &MmStat) -> LabError {
    LabError::runtime(format!(
        "page {page}: mm_stat changed in a way one write cannot explain ({before:?} -> {after:?}): \
         is something else writing to the device?"
    ))
}

/// How the kernel stored the page of one write, from `mm_stat` before and after.
pub(crate) fn classify(
    page: usize,
    size: usize,
    b: &MmStat,
    a: &MmStat,
) -> LabResult<(Stored, u32)> {
    if a.orig_data_size != b.orig_data_size + size as u64 {
        return Err(unexpected(page, b, a));
    }
    let len = a.compr_data_size.checked_sub(b.compr_data_size);
    match (a.same_pages.checked_sub(b.same_pages), len) {
        (Some(1), Some(0)) => Ok((Stored::Same, 0)),
        (Some(0), Some(len)) if len > 0 && len <= size as u64 => {
            let huge = a.huge_pages > b.huge_pages;
            if huge != (len == size as u64) {
                return Err(unexpected(page, b, a));
            }
            Ok((if huge { Stored::Huge } else { Stored::Compressed }, len as u32))
        }
        _ => Err(unexpected(page, b, a)),
    }
}

/// Runs `plan` on a new device holding `corpus` (whole pages of the host's size), then removes
/// the device.
pub fn run(host: &Host, corpus: &[u8], plan: &FillPlan) -> LabResult<KernelSteps> {
    let page = host.page_size;
    let pages = corpus.len() / page;
    if pages == 0 {
        return Err(LabError::usage("the corpus has no page"));
    }
    if !(0.0..=1.0).contains(&plan.free_share) {
        return Err(LabError::usage(format!("--free-share {} is outside 0..=1", plan.free_share)));
    }
    // The device at worst stores every page whole, beside the corpus already in memory.
    host::check_memory((pages * page) as u64 * 2, "the device")?;
    let spec = DeviceSpec {
        compressor: plan.compressor.clone(),
        level: plan.level,
        pages: pages as u64,
        page_size: page,
    };
    let mut dev = Device::create(&spec)?;
    let mut steps = Vec::with_capacity(pages * 2 + 1);
    let mut before = dev.mm_stat()?;
    let push = |steps: &mut Vec<Step>, phase, op, after: MmStat, before: &mut MmStat| {
        let shrinker_compacted =
            phase != DevicePhase::Compact && after.pages_compacted != before.pages_compacted;
        steps.push(Step { phase, op, after, shrinker_compacted });
        *before = after;
    };
    for (i, data) in corpus.chunks_exact(page).enumerate() {
        dev.write_page(i as u64, data)?;
        let after = dev.mm_stat()?;
        let (stored, len) = classify(i, page, &before, &after)?;
        push(
            &mut steps,
            DevicePhase::Fill,
            Op::Store { page: i as u32, stored, len },
            after,
            &mut before,
        );
    }
    let mut order: Vec<u32> = (0..pages as u32).collect();
    order.shuffle(&mut ChaCha8Rng::seed_from_u64(plan.seed));
    let freed = (plan.free_share * pages as f64).round() as usize;
    for &p in &order[..freed.min(pages)] {
        dev.discard_page(u64::from(p))?;
        let after = dev.mm_stat()?;
        push(&mut steps, DevicePhase::Free, Op::Free { page: p }, after, &mut before);
    }
    if plan.compact {
        dev.compact()?;
        let after = dev.mm_stat()?;
        push(&mut steps, DevicePhase::Compact, Op::Compact, after, &mut before);
    }
    let compressor = dev.compressor().to_string();
    dev.remove()?;
    Ok(KernelSteps { host: host.clone(), compressor, level: plan.level, steps })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(orig: u64, compr: u64, same: u64, huge: u64) -> MmStat {
        MmStat {
            orig_data_size: orig,
            compr_data_size: compr,
            same_pages: same,
            huge_pages: huge,
            ..MmStat::default()
        }
    }

    #[test]
    fn writes_are_classified_from_the_deltas() {
        let b = stat(4096, 300, 1, 0);
        assert_eq!(classify(0, 4096, &b, &stat(8192, 300, 2, 0)).unwrap(), (Stored::Same, 0));
        assert_eq!(classify(0, 4096, &b, &stat(8192, 4396, 1, 1)).unwrap(), (Stored::Huge, 4096));
        assert_eq!(
            classify(0, 4096, &b, &stat(8192, 1300, 1, 0)).unwrap(),
            (Stored::Compressed, 1000)
        );
        // Nothing stored, two pages stored, a huge page without the huge count.
        assert!(classify(0, 4096, &b, &stat(8192, 300, 1, 0)).is_err());
        assert!(classify(0, 4096, &b, &stat(12288, 900, 1, 0)).is_err());
        assert!(classify(0, 4096, &b, &stat(8192, 4396, 1, 0)).is_err());
    }
}
