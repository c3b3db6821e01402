//! `--boundaries`: the class sizes themselves, searched by a stated heuristic (docs/DESIGN.md,
//! The optimizer): merge two adjacent classes or split one, greedily, while the cheapest read
//! cost within classic's pages falls.
//!
//! A class's figures depend only on the sizes it serves (from above the class below it up to
//! its own size) and its chain, so a move is measured once and reused: each round runs three
//! layouts of the current one through the chain sweep (every even pair merged, every odd pair
//! merged, every class split at its middle), keeps every class's options by the sizes it
//! serves, then applies the best measured move while one improves the score. Classes above the
//! one that sets `huge_class_size` take no part (the layout's huge classes stay), nor do the
//! multi-page band's (its boundaries stay the RFC's; only its chains are searched).

use std::collections::HashMap;

use super::frontier::ClassOption;
use super::layout::Layout;
use super::sweep::run_sweep;
use crate::error::LabResult;
use crate::progress::ProgressSink;
use crate::workload::Workload;
use zsmalloc_core::class_spec::{ClassSpec, ClassTableSpec};
use zsmalloc_core::class_table::MIN_ALLOC;
use zsmalloc_core::PoolConfig;

/// A class's options, by the sizes it serves: (the class below's size, its own size).
type Cache = HashMap<(u32, u32), Vec<ClassOption>>;

/// What the boundary search did.
#[derive(Debug, Clone, Default)]
pub struct BoundaryOutcome {
    /// Moves applied, in order: `merge 1072+1120`, `split 1120 at 1096`.
    pub moves: Vec<String>,
    /// Runs of the workload it made.
    pub runs: usize,
}

/// (pages, spanning) points no other beats, sorted by pages.
fn prune(mut points: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    points.sort_unstable();
    let mut kept: Vec<(u64, u64)> = Vec::with_capacity(points.len());
    for p in points {
        if kept.last().is_none_or(|last| p.1 < last.1) {
            kept.push(p);
        }
    }
    kept
}

fn add(front: &[(u64, u64)], options: &[ClassOption]) -> Vec<(u64, u64)> {
    let sums =
        front.iter().flat_map(|&(p, s)| options.iter().map(move |o| (p + o.pages, s + o.spanning)));
    prune(sums.collect())
}

/// The fewest spanning reads of a point of `a` plus a point of `b` within `cap` pages (both
/// fronts sorted by pages, spanning falling).
fn best_within(a: &[(u64, u64)], b: &[(u64, u64)], cap: u64) -> Option<u64> {
    let mut best = None;
    let mut j = b.len();
    for &(pa, sa) in a {
        while j > 0 && pa + b[j - 1].0 > cap {
            j -= 1;
        }
        if j == 0 {
            break;
        }
        let s = sa + b[j - 1].1;
        best = Some(best.map_or(s, |x: u64| x.min(s)));
    }
    best
}

/// The lower end of each class's sizes (the class below's size; below the smallest class, the
/// size under it).
fn lows(sizes: &[u32]) -> Vec<u32> {
    (0..sizes.len()).map(|i| if i == 0 { MIN_ALLOC - 8 } else { sizes[i - 1] }).collect()
}

/// A layout of `sizes` with `like`'s band, chains taken from `chain_of` (the base chain of the
/// class at or above).
fn layout_of(like: &Layout, sizes: &[u32], chain_of: &dyn Fn(u32) -> u32) -> LabResult<Layout> {
    let classes = sizes
        .iter()
        .map(|&size| ClassSpec { size, chain: chain_of(size), order: like.order_of(size) })
        .collect();
    Ok(Layout::of_table(&ClassTableSpec::new(like.page_size(), classes)?))
}

/// Searches the boundaries of `layout` (whose options `options` the chain sweep measured);
/// returns the improved layout, its options and what was done.
pub fn improve(
    workload: &Workload,
    layout: Layout,
    options: Vec<Vec<ClassOption>>,
    cap: u64,
    base: &PoolConfig,
    jobs: usize,
    sink: &ProgressSink,
) -> LabResult<(Layout, Vec<Vec<ClassOption>>, BoundaryOutcome)> {
    let mut cache: Cache = HashMap::new();
    let remember = |cache: &mut Cache, l: &Layout, opts: &[Vec<ClassOption>]| {
        for ((&lo, &size), o) in lows(l.sizes()).iter().zip(l.sizes()).zip(opts) {
            cache.insert((lo, size), o.clone());
        }
    };
    remember(&mut cache, &layout, &options);
    let base_chain = |size: u32| {
        let i = layout.sizes().partition_point(|&s| s < size).min(layout.sizes().len() - 1);
        layout.base_chains()[i]
    };
    // Classes at or below the one setting huge_class_size may move.
    let movable = |sizes: &[u32]| {
        let hcs = layout.huge_class_size();
        sizes.iter().take_while(|&&s| hcs > 0 && s <= hcs + 7).count()
    };
    let mut sizes = layout.sizes().to_vec();
    let mut outcome = BoundaryOutcome::default();
    for _round in 0..4 {
        let n = movable(&sizes);
        let lo = lows(&sizes);
        let merged = |parity: usize| -> Vec<u32> {
            let drop: Vec<usize> = (parity..n.saturating_sub(1)).step_by(2).collect();
            sizes.iter().enumerate().filter(|(i, _)| !drop.contains(i)).map(|(_, &s)| s).collect()
        };
        let mut split = sizes.clone();
        for i in (0..n).rev() {
            let m = (lo[i] + (sizes[i] - lo[i]) / 2) / 8 * 8;
            if m > lo[i] && m < sizes[i] && m >= MIN_ALLOC {
                split.insert(i, m);
            }
        }
        for candidate in [merged(0), merged(1), split] {
            let l = layout_of(&layout, &candidate, &base_chain)?;
            let sweep = run_sweep(workload, &l, base, jobs, sink)?;
            outcome.runs += sweep.runs.len();
            remember(&mut cache, &l, &sweep.options);
        }
        let before = outcome.moves.len();
        while let Some((next, what)) = best_move(&sizes, movable(&sizes), &cache, cap) {
            sizes = next;
            outcome.moves.push(what);
        }
        if outcome.moves.len() == before {
            break;
        }
    }
    let final_layout = layout_of(&layout, &sizes, &base_chain)?;
    let opts = lows(&sizes).iter().zip(&sizes).map(|(&lo, &s)| cache[&(lo, s)].clone()).collect();
    Ok((final_layout, opts, outcome))
}

/// The measured move that lowers the score most, if one lowers it.
fn best_move(sizes: &[u32], movable: usize, cache: &Cache, cap: u64) -> Option<(Vec<u32>, String)> {
    let lo = lows(sizes);
    let opts: Vec<&Vec<ClassOption>> =
        lo.iter().zip(sizes).map(|(&l, &s)| &cache[&(l, s)]).collect();
    let mut prefix = vec![vec![(0u64, 0u64)]];
    for o in &opts {
        prefix.push(add(prefix.last().unwrap_or(&Vec::new()), o));
    }
    let mut suffix = vec![vec![(0u64, 0u64)]; opts.len() + 1];
    for i in (0..opts.len()).rev() {
        suffix[i] = add(&suffix[i + 1], opts[i]);
    }
    let current = best_within(&prefix[opts.len()], &suffix[opts.len()], cap)?;
    let mut best: Option<(u64, Vec<u32>, String)> = None;
    let mut consider = |score: Option<u64>, next: Vec<u32>, what: String| {
        if let Some(s) = score.filter(|&s| s < current && best.as_ref().is_none_or(|b| s < b.0)) {
            best = Some((s, next, what));
        }
    };
    for i in 0..movable {
        // Merge class i into class i + 1.
        if i + 1 < movable {
            if let Some(o) = cache.get(&(lo[i], sizes[i + 1])) {
                let score = best_within(&add(&prefix[i], o), &suffix[i + 2], cap);
                let mut next = sizes.to_vec();
                next.remove(i);
                consider(score, next, format!("merge {}+{}", sizes[i], sizes[i + 1]));
            }
        }
        // Split class i at a measured size.
        let splits = cache.iter().filter(|(&(l, m), _)| l == lo[i] && m < sizes[i]);
        for (&(_, m), lower) in splits {
            if let Some(upper) = cache.get(&(m, sizes[i])) {
                let score = best_within(&add(&add(&prefix[i], lower), upper), &suffix[i + 1], cap);
                let mut next = sizes.to_vec();
                next.insert(i, m);
                consider(score, next, format!("split {} at {m}", sizes[i]));
            }
        }
    }
    best.map(|(_, next, what)| (next, what))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn best_within_is_the_brute_force_minimum() {
        let a = prune(vec![(1, 9), (3, 5), (6, 2), (9, 0)]);
        let b = prune(vec![(0, 7), (2, 4), (5, 1)]);
        for cap in 0..16 {
            let brute = a
                .iter()
                .flat_map(|&(p, s)| b.iter().map(move |&(q, t)| (p + q, s + t)))
                .filter(|&(p, _)| p <= cap)
                .map(|(_, s)| s)
                .min();
            assert_eq!(best_within(&a, &b, cap), brute, "cap {cap}");
        }
    }
}
