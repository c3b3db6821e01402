//! `zsmalloc kernel check`: the kernel's zsmalloc beside the project's, step by step
//! ([`super::steps`] on the device, [`super::replay`] through the project's pool).

use serde::Serialize;

use super::corpus::CompressorArgs;
use super::corpus::{CorpusArgs, CorpusFacts};
use super::host::Host;
use super::replay::{self, Disagreement, PhaseTally, Replay};
use super::steps::{self, DevicePhase, FillPlan, KernelSteps, Stored};
use crate::config::ConfigSpec;
use crate::error::LabResult;
use crate::flag_values;

/// The kernel's default `CONFIG_ZSMALLOC_CHAIN_SIZE`.
pub const KERNEL_DEFAULT_CHAIN: u32 = 8;

/// `--chain-size`: a chain size, or every one tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChainSize {
    /// Pages per zspage at most, 1..=16.
    Pages(u32),
    /// Every chain size 1..=16, the ones that agree at every step named.
    Auto,
}

impl ChainSize {
    /// `N` or `auto` (clap's value parser: its message names the flag).
    pub fn parse(s: &str) -> Result<ChainSize, String> {
        match s {
            "auto" => Ok(ChainSize::Auto),
            n => flag_values::whole::<u32>(1, 16)(n)
                .map(ChainSize::Pages)
                .map_err(|_| "a chain size in 1..=16 or auto is accepted".to_string()),
        }
    }
}

#[derive(clap::Args, Debug, Clone)]
pub struct Check {
    #[command(flatten)]
    pub corpus: CorpusArgs,
    #[command(flatten)]
    pub codec: CompressorArgs,
    /// Share of the written pages discarded after the fill, 0..=1
    #[arg(long, value_name = "F", default_value_t = 0.5, value_parser = flag_values::share)]
    pub free_share: f64,
    /// Seeds the built-in corpus and which pages are discarded, in which order
    #[arg(long, value_name = "S", default_value_t = 1, value_parser = flag_values::any_whole::<u64>())]
    pub seed: u64,
    /// The project's chain size, 1..=16, or `auto`: every chain size is tried and the ones
    /// that agree at every step are named
    #[arg(long, value_name = "N|auto", default_value = "8", value_parser = ChainSize::parse)]
    pub chain_size: ChainSize,
    /// The project's chain policy (classic = mainline; heuristic for a kernel with the
    /// chain-length patch)
    #[arg(long, value_name = "POLICY", default_value = "classic")]
    pub chain_policy: String,
}

/// The kernel side of a report.
#[derive(Debug, Clone, Serialize)]
pub struct KernelFacts {
    pub release: String,
    pub compressor: String,
    pub level: Option<i32>,
    pub page_size: usize,
}

/// How the corpus's pages were stored by the kernel.
#[derive(Debug, Clone, Default, Serialize)]
pub struct StoredFacts {
    pub same_filled: u64,
    pub huge: u64,
    pub compressed: u64,
    /// Sum of the `zs_malloc` lengths.
    pub bytes: u64,
}

/// One chain size tried by `--chain-size auto`.
#[derive(Debug, Clone, Serialize)]
pub struct ChainFit {
    pub chain_size: u32,
    pub agree: bool,
    pub agreeing_steps: u64,
    pub steps: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    pub agree: bool,
    pub kernel: KernelFacts,
    /// The project's configuration (`page 4096, chain 8, classic`).
    pub project: String,
    pub chain_size: u32,
    pub chain_policy: String,
    pub corpus: CorpusFacts,
    pub stored: StoredFacts,
    pub free_share: f64,
    pub seed: u64,
    pub phases: Vec<PhaseTally>,
    pub first_disagreement: Option<Disagreement>,
    pub shrinker_compactions: u64,
    /// With `--chain-size auto`: every chain size tried.
    pub chain_search: Option<Vec<ChainFit>>,
}

impl KernelFacts {
    pub fn of(k: &KernelSteps) -> KernelFacts {
        KernelFacts {
            release: k.host.release.clone(),
            compressor: k.compressor.clone(),
            level: k.level,
            page_size: k.host.page_size,
        }
    }
}

impl StoredFacts {
    pub fn of(k: &KernelSteps) -> StoredFacts {
        let mut f = StoredFacts::default();
        for s in k.phase(DevicePhase::Fill) {
            if let steps::Op::Store { stored, len, .. } = s.op {
                match stored {
                    Stored::Same => f.same_filled += 1,
                    Stored::Huge => f.huge += 1,
                    Stored::Compressed => f.compressed += 1,
                }
                f.bytes += u64::from(len);
            }
        }
        f
    }
}

/// The project's configuration for `chain` and `policy` at the kernel's page size.
pub fn kernel_spec(page: usize, chain: u32, policy: &str) -> LabResult<ConfigSpec> {
    let mut spec = ConfigSpec::default();
    spec.set("page-size", &page.to_string())?;
    spec.set("chain-size", &chain.to_string())?;
    spec.set("chain-policy", policy)?;
    spec.label = policy.to_string();
    spec.validate()?;
    Ok(spec)
}

fn total_steps(r: &Replay) -> (u64, u64) {
    r.phases.iter().fold((0, 0), |(a, s), t| (a + t.agreeing, s + t.steps))
}

/// Runs the check (module documentation).
pub fn run(a: &Check) -> LabResult<CheckReport> {
    let auto = a.chain_size == ChainSize::Auto;
    let chain = match a.chain_size {
        ChainSize::Auto => KERNEL_DEFAULT_CHAIN,
        ChainSize::Pages(n) => n,
    };
    let host = Host::probe()?;
    // Bad flags fail before the device is made.
    kernel_spec(host.page_size, chain, &a.chain_policy)?;
    let (corpus, facts) = a.corpus.open(&host, a.seed)?;
    let plan = FillPlan::new(&a.codec, a.free_share, a.seed, true);
    let k = steps::run(&host, &corpus, &plan)?;
    drop(corpus);
    let mut chain_search = None;
    let mut chosen = chain;
    if auto {
        let mut fits = Vec::new();
        for c in 1..=16 {
            let r = replay::replay(&k, &kernel_spec(host.page_size, c, &a.chain_policy)?)?;
            let (agreeing, steps) = total_steps(&r);
            fits.push(ChainFit {
                chain_size: c,
                agree: r.agree(),
                agreeing_steps: agreeing,
                steps,
            });
        }
        // The kernel's default when it fits, else the first that does.
        if !fits.iter().any(|f| f.agree && f.chain_size == KERNEL_DEFAULT_CHAIN) {
            if let Some(f) = fits.iter().find(|f| f.agree) {
                chosen = f.chain_size;
            }
        }
        chain_search = Some(fits);
    }
    let spec = kernel_spec(host.page_size, chosen, &a.chain_policy)?;
    let r = replay::replay(&k, &spec)?;
    Ok(CheckReport {
        agree: r.agree(),
        kernel: KernelFacts::of(&k),
        project: spec.describe(),
        chain_size: chosen,
        chain_policy: a.chain_policy.clone(),
        corpus: facts,
        stored: StoredFacts::of(&k),
        free_share: a.free_share,
        seed: a.seed,
        phases: r.phases,
        first_disagreement: r.first_disagreement,
        shrinker_compactions: r.shrinker_compactions,
        chain_search,
    })
}

impl CheckReport {
    /// The exit code: 1 when any step disagrees.
    pub fn exit_code(&self) -> i32 {
        if self.agree {
            0
        } else {
            1
        }
    }
}
