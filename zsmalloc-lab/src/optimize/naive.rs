//! The naive way to the same option matrix, for comparison (`scripts/bench-optimize.sh`) and as
//! a check of the sweep: one run per candidate — each class under each of its chains, the other
//! classes at their base chains — reading only that class's figures from each run.

use super::evaluate::{with_table, Evaluation};
use super::frontier::ClassOption;
use super::layout::Layout;
use crate::config::ConfigSpec;
use crate::error::{LabError, LabResult};
use zsmalloc_core::PoolConfig;

/// One naive run: class `class` at `chain`, every other class at its base chain. The base
/// table itself is the candidate `(None, base)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    pub class: Option<usize>,
    pub chain: u32,
}

/// Every candidate of the layout: the base table, then each class under each chain other than
/// its base one.
pub fn candidates(layout: &Layout) -> Vec<Candidate> {
    let mut all = vec![Candidate { class: None, chain: 0 }];
    for i in 0..layout.sizes().len() {
        for &chain in layout.choices(i) {
            if chain != layout.base_chains()[i] {
                all.push(Candidate { class: Some(i), chain });
            }
        }
    }
    all
}

/// The configuration of a candidate's run.
pub fn candidate_spec(layout: &Layout, base: &PoolConfig, c: Candidate) -> LabResult<ConfigSpec> {
    let mut chains = layout.base_chains().to_vec();
    let label = match c.class {
        Some(i) => {
            chains[i] = c.chain;
            format!("class {} chain {}", layout.sizes()[i], c.chain)
        }
        None => "base".to_string(),
    };
    Ok(ConfigSpec { label, config: with_table(base, layout.table(&chains)?) })
}

/// The option a candidate's run measured for its class (for the base run: class `class`'s
/// base option).
pub fn measured_option(c: Candidate, run: &Evaluation, class: usize) -> LabResult<ClassOption> {
    let i = c.class.unwrap_or(class);
    let f = run.classes.get(i).ok_or_else(|| LabError::runtime("internal: class out of range"))?;
    Ok(ClassOption { chain: f.chain, pages: f.pages, spanning: f.spanning })
}

/// The whole option matrix from every candidate's run (`runs[k]` ran `cands[k]`).
pub fn naive_matrix(
    layout: &Layout,
    cands: &[Candidate],
    runs: &[Evaluation],
) -> LabResult<Vec<Vec<ClassOption>>> {
    let (Some(base_run), true) = (runs.first(), cands.len() == runs.len()) else {
        return Err(LabError::runtime("internal: one run per candidate, the base first"));
    };
    let mut options: Vec<Vec<ClassOption>> = (0..layout.sizes().len())
        .map(|i| measured_option(cands[0], base_run, i).map(|o| vec![o]))
        .collect::<LabResult<_>>()?;
    for (c, run) in cands.iter().zip(runs).skip(1) {
        let i = c.class.ok_or_else(|| LabError::runtime("internal: a second base run"))?;
        options[i].push(measured_option(*c, run, i)?);
    }
    Ok(options
        .into_iter()
        .zip(layout.base_chains())
        .map(|(o, &base)| super::sweep::base_first(o, base))
        .collect())
}
