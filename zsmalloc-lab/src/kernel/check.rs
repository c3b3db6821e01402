//! `zsmalloc kernel check`: the kernel's zsmalloc beside the project's, step by step
//! ([`super::steps`] on the device, [`super::replay`] through the project's pool).

use serde::Serialize;

use super::corpus::{CorpusArgs, CorpusFacts};
use super::device::CompressorArgs;
use super::host::Host;
use super::replay::{self, Disagreement, PhaseTally, Replay};
use super::steps::{self, KernelSteps, Phase, Plan, Stored};
use crate::config::ConfigSpec;
use crate::error::{LabError, LabResult};

/// The kernel's default `CONFIG_ZSMALLOC_CHAIN_SIZE`.
pub const KERNEL_DEFAULT_CHAIN: u32 = 8;

#[derive(clap::Args, Debug, Clone)]
pub struct CheckArgs {
    #[command(flatten)]
    pub corpus: CorpusArgs,
    #[command(flatten)]
    pub codec: CompressorArgs,
    /// Share of the written pages discarded after the fill, 0..=1
    #[arg(long, value_name = "F", default_value_t = 0.5)]
    pub free_share: f64,
    /// Seeds the built-in corpus and which pages are discarded, in which order
    #[arg(long, value_name = "S", default_value_t = 1)]
    pub seed: u64,
    /// The project's chain size, 1..=16, or `auto`: every chain size is tried and the ones
    /// that agree at every step are named [default: 8, the kernel's default]
    #[arg(long, value_name = "N|auto")]
    pub chain_size: Option<String>,
    /// The project's chain policy (classic = mainline; heuristic for a kernel with the
    /// chain-length patch)
    #[arg(long, value_name = "POLICY", default_value = "classic")]
    pub chain_policy: String,
    /// table or json
    #[arg(long, value_name = "FORMAT", default_value = "table")]
    pub format: String,
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
        for s in k.phase(Phase::Fill) {
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
pub fn run(a: &CheckArgs) -> LabResult<CheckReport> {
    if !matches!(a.format.as_str(), "table" | "json") {
        return Err(LabError::usage(format!(
            "invalid --format '{}' (accepted: table, json)",
            a.format
        )));
    }
    let auto = a.chain_size.as_deref() == Some("auto");
    let chain = match a.chain_size.as_deref() {
        None | Some("auto") => KERNEL_DEFAULT_CHAIN,
        Some(n) => n
            .parse::<u32>()
            .map_err(|_| LabError::usage(format!("invalid --chain-size '{n}' (1..=16 or auto)")))?,
    };
    let host = Host::probe()?;
    // Bad flags fail before the device is made.
    kernel_spec(host.page_size, chain, &a.chain_policy)?;
    super::device::sweep::sweep_and_report();
    let (corpus, facts) = a.corpus.load(a.seed, host.page_size)?;
    let plan = Plan {
        compressor: a.codec.compressor.clone(),
        level: a.codec.level,
        free_share: a.free_share,
        seed: a.seed,
        compact: true,
    };
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

    pub fn render(&self, format: &str) -> LabResult<String> {
        if format == "json" {
            return crate::report::json(self);
        }
        Ok(self.table())
    }

    fn table(&self) -> String {
        let k = &self.kernel;
        let level = k.level.map(|l| format!(" level {l}")).unwrap_or_default();
        let s = &self.stored;
        let mut out = format!(
            "kernel {} (page {}), zram {}{level}; project: {}\n\
             corpus: {} — {} pages: {} same-filled, {} huge, {} compressed ({} bytes to zs_malloc)\n\
             then {:.0}% of them discarded (seed {}), then compacted\n\n",
            k.release,
            k.page_size,
            k.compressor,
            self.project,
            self.corpus.source,
            self.corpus.pages,
            s.same_filled,
            s.huge,
            s.compressed,
            s.bytes,
            self.free_share * 100.0,
            self.seed
        );
        out += &format!(
            "{:<8} {:>7} {:>9} {:>12} {:>13} {:>6} {:>6} {:>16}\n",
            "phase",
            "steps",
            "agreeing",
            "kernel pages",
            "project pages",
            "huge",
            "same",
            "compacted k/p"
        );
        for t in &self.phases {
            out += &format!(
                "{:<8} {:>7} {:>9} {:>12} {:>13} {:>6} {:>6} {:>16}\n",
                t.phase.name(),
                t.steps,
                t.agreeing,
                t.kernel_pages,
                t.project_pages,
                t.huge_pages,
                t.same_pages,
                format!("{}/{}", t.pages_compacted, t.project_pages_compacted)
            );
        }
        if self.shrinker_compactions > 0 {
            out += &format!(
                "\nthe kernel's shrinker compacted the pool around {} step(s); the project \
                 compacted there too\n",
                self.shrinker_compactions
            );
        }
        if let Some(fits) = &self.chain_search {
            let agree: Vec<String> =
                fits.iter().filter(|f| f.agree).map(|f| f.chain_size.to_string()).collect();
            out += &if agree.is_empty() {
                "\nchain search: no chain size 1..=16 agrees at every step\n".to_string()
            } else {
                format!(
                    "\nchain search: chain size {} agree(s) at every step; shown: chain {}\n",
                    agree.join(", "),
                    self.chain_size
                )
            };
        }
        let (agreeing, steps) =
            self.phases.iter().fold((0, 0), |(a, s), t| (a + t.agreeing, s + t.steps));
        out += &match &self.first_disagreement {
            None => format!("\nagree: every step ({agreeing} of {steps})\n"),
            Some(d) => format!(
                "\nDISAGREE: {agreeing} of {steps} steps agree; first: {} step {}{}{}: kernel \
                 {} pages, project {}\n",
                d.phase.name(),
                d.step,
                d.page.map(|p| format!(" (page {p}")).unwrap_or_default(),
                d.length.map(|l| format!(", {l} bytes)")).unwrap_or_default(),
                d.kernel_pages,
                d.project_pages
            ),
        };
        out
    }
}
