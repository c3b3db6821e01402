//! The exact Pareto frontier over per-class chains, for a fixed class layout.
//!
//! Why it is exact and cheap: zsmalloc's classes are independent. Each class owns its zspages;
//! which zspage an object lands in, where in it, and when a zspage is released or compacted
//! depend only on that class's own sequence of stores and frees (and its size and chain). So
//! with the layout fixed, a table's end pages are the sum of its classes' pages, and its
//! spanning reads the sum of its classes' spanning reads, each a function of that class's chain
//! alone. Measuring every class under every chain (16 runs of the workload, one per chain, all
//! classes at once) therefore gives every table's figures, and the frontier over the 16^C
//! tables is a multiple-choice combination: merge the classes one at a time, keeping only the
//! points no other point beats on both sums. A point dropped at any stage cannot be part of a
//! frontier point later, because adding the same choices to a dominating point keeps it
//! dominating.
//!
//! A read-cost model linear in the spanning reads (a fixed cost per read plus a fixed extra per
//! spanning read, as `zsmalloc cost` and the kernel's timings give it) orders points as the
//! spanning count does, so the frontier is computed on spanning reads and priced afterwards.
//! Peak pages are not a sum over classes (classes peak at different times) and are measured by
//! running each reported table.

/// One class under one chain: what the class costs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClassOption {
    /// Pages per zspage, 1..=16.
    pub chain: u32,
    /// The class's pages at the end of the workload.
    pub pages: u64,
    /// Reads of the class's objects that spanned two pages.
    pub spanning: u64,
}

/// One table on the frontier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontierPoint {
    pub pages: u64,
    pub spanning: u64,
    /// The chain of each class, in layout order.
    pub chains: Vec<u32>,
}

/// A point of one merge stage: its sums, and how it was built (for the chains at the end).
#[derive(Clone, Copy)]
struct Partial {
    pages: u64,
    spanning: u64,
    /// Index of the point of the previous stage it extends.
    parent: u32,
    /// Index of the option it took in this stage's class.
    option: u8,
}

/// Keeps the points no other point beats: sorted by pages, strictly decreasing spanning. Of
/// two points equal on both sums the first found is kept (one table per point).
fn prune(mut points: Vec<Partial>) -> Vec<Partial> {
    points.sort_by_key(|p| (p.pages, p.spanning));
    let mut kept: Vec<Partial> = Vec::with_capacity(points.len());
    for p in points {
        if kept.last().is_none_or(|last| p.spanning < last.spanning) {
            kept.push(p);
        }
    }
    kept
}

/// The frontier of (end pages, spanning reads) over every choice of one option per class.
/// `classes[i]` lists class i's options (at least one each). Points come sorted by pages, with
/// spanning reads strictly decreasing.
pub fn frontier(classes: &[Vec<ClassOption>]) -> Vec<FrontierPoint> {
    let mut stages: Vec<Vec<Partial>> = Vec::with_capacity(classes.len());
    let mut current = vec![Partial { pages: 0, spanning: 0, parent: 0, option: 0 }];
    for options in classes {
        assert!(!options.is_empty() && options.len() <= u8::MAX as usize, "1..=255 options");
        let mut next = Vec::with_capacity(current.len() * options.len());
        for (pi, p) in current.iter().enumerate() {
            for (oi, o) in options.iter().enumerate() {
                next.push(Partial {
                    pages: p.pages + o.pages,
                    spanning: p.spanning + o.spanning,
                    parent: pi as u32,
                    option: oi as u8,
                });
            }
        }
        stages.push(std::mem::replace(&mut current, prune(next)));
    }
    stages.push(current);
    let last = stages.len() - 1;
    stages[last]
        .iter()
        .map(|end| {
            let mut chains = vec![0u32; classes.len()];
            let mut at = *end;
            for stage in (1..=last).rev() {
                chains[stage - 1] = classes[stage - 1][at.option as usize].chain;
                at = stages[stage - 1][at.parent as usize];
            }
            FrontierPoint { pages: end.pages, spanning: end.spanning, chains }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Every combination, and the Pareto set of their sums (one point per distinct sum pair).
    fn brute_force(classes: &[Vec<ClassOption>]) -> Vec<(u64, u64)> {
        let mut all = vec![(0u64, 0u64)];
        for options in classes {
            all = all
                .iter()
                .flat_map(|&(p, s)| options.iter().map(move |o| (p + o.pages, s + o.spanning)))
                .collect();
        }
        all.sort();
        all.dedup();
        all.iter()
            .copied()
            .filter(|&(p, s)| !all.iter().any(|&(q, t)| q <= p && t <= s && (q, t) != (p, s)))
            .collect()
    }

    fn sums(classes: &[Vec<ClassOption>], chains: &[u32]) -> (u64, u64) {
        classes.iter().zip(chains).fold((0, 0), |(p, s), (options, &c)| {
            let o = options.iter().find(|o| o.chain == c).expect("a chain of the class");
            (p + o.pages, s + o.spanning)
        })
    }

    #[test]
    fn matches_brute_force_on_random_small_cases() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for case in 0..300 {
            let n_classes = 1 + case % 5;
            let classes: Vec<Vec<ClassOption>> = (0..n_classes)
                .map(|_| {
                    (1..=rng.gen_range(1..=6u32))
                        .map(|chain| ClassOption {
                            chain,
                            pages: rng.gen_range(0..40),
                            spanning: rng.gen_range(0..40),
                        })
                        .collect()
                })
                .collect();
            let points = frontier(&classes);
            let got: Vec<(u64, u64)> = points.iter().map(|p| (p.pages, p.spanning)).collect();
            assert_eq!(got, brute_force(&classes), "case {case}");
            for p in &points {
                assert_eq!(sums(&classes, &p.chains), (p.pages, p.spanning), "case {case}");
            }
        }
    }

    #[test]
    fn one_option_per_class_is_one_point() {
        let classes = vec![vec![ClassOption { chain: 4, pages: 3, spanning: 2 }]; 3];
        assert_eq!(
            frontier(&classes),
            vec![FrontierPoint { pages: 9, spanning: 6, chains: vec![4, 4, 4] }]
        );
    }
}
