//! The chain sweep: the workload once per chain 1..=16, every class that may take that chain at
//! it, and from those 16 runs every class's figures under every chain it may take — the option
//! matrix the exact frontier is merged from ([`super::frontier`]).

use super::evaluate::{evaluate_all, with_table, Evaluation};
use super::frontier::ClassOption;
use super::layout::{Layout, MAX_CHAIN};
use crate::config::ConfigSpec;
use crate::error::{LabError, LabResult};
use crate::progress::ProgressSink;
use crate::workload::Workload;
use zsmalloc_core::PoolConfig;

/// The configurations of the sweep's runs, chain 1 first.
pub fn sweep_specs(layout: &Layout, base: &PoolConfig) -> LabResult<Vec<ConfigSpec>> {
    (1..=MAX_CHAIN)
        .map(|chain| {
            let table = layout.table(&layout.sweep_chains(chain))?;
            Ok(ConfigSpec { label: format!("chain {chain}"), config: with_table(base, table) })
        })
        .collect()
}

/// Orders a class's options with its base chain first, then by chain. Of tables equal on both
/// sums the frontier keeps the first found, so a class whose chains tie — one the workload
/// never uses, above all — keeps its base chain instead of whichever chain came first: a table
/// tuned on one workload then leaves the classes it says nothing about as they were.
pub fn base_first(mut options: Vec<ClassOption>, base: u32) -> Vec<ClassOption> {
    options.sort_by_key(|o| (o.chain != base, o.chain));
    options
}

/// Every class's options from the sweep's evaluations (`runs[k]` ran chain `k + 1`): class
/// `i` under chain `c` is what run `c` measured for it, for each chain `c` it may take (the
/// base chain first: [`base_first`]).
pub fn option_matrix(layout: &Layout, runs: &[Evaluation]) -> LabResult<Vec<Vec<ClassOption>>> {
    if runs.len() != MAX_CHAIN as usize {
        return Err(LabError::runtime(format!("internal: {} sweep runs, not 16", runs.len())));
    }
    (0..layout.sizes().len())
        .map(|i| {
            layout
                .choices(i)
                .iter()
                .map(|&chain| {
                    let c = runs[chain as usize - 1].classes.get(i).copied().ok_or_else(|| {
                        LabError::runtime("internal: a sweep run lacks a class of the layout")
                    })?;
                    if c.chain != chain || c.size != layout.sizes()[i] {
                        return Err(LabError::runtime(format!(
                            "internal: sweep run {chain} measured class {} at chain {}",
                            c.size, c.chain
                        )));
                    }
                    Ok(ClassOption { chain, pages: c.pages, spanning: c.spanning })
                })
                .collect::<LabResult<Vec<_>>>()
                .map(|o| base_first(o, layout.base_chains()[i]))
        })
        .collect()
}

/// The sweep's runs and the option matrix they give.
pub struct ChainSweep {
    pub runs: Vec<Evaluation>,
    pub options: Vec<Vec<ClassOption>>,
}

/// Runs the sweep, `jobs` runs at a time.
pub fn run_sweep(
    workload: &Workload,
    layout: &Layout,
    base: &PoolConfig,
    jobs: usize,
    sink: &ProgressSink,
) -> LabResult<ChainSweep> {
    let runs = evaluate_all(workload, &sweep_specs(layout, base)?, jobs, sink, "optimize round")?;
    let options = option_matrix(layout, &runs)?;
    Ok(ChainSweep { runs, options })
}

/// What a table of the layout measures, predicted from the options: its pages and spanning
/// reads, each the sum over its classes.
pub fn predict(options: &[Vec<ClassOption>], chains: &[u32]) -> Option<(u64, u64)> {
    let mut sums = (0, 0);
    for (opts, &chain) in options.iter().zip(chains) {
        let o = opts.iter().find(|o| o.chain == chain)?;
        sums = (sums.0 + o.pages, sums.1 + o.spanning);
    }
    Some(sums)
}
