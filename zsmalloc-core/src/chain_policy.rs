//! Chain policies: how many pages a zspage of a given class size chains.
//!
//! The set is open: anything implementing [`ChainPolicy`] plugs into [`crate::PoolConfig`]
//! without touching the pool. The pool calls the policy only while building its class table.

use std::fmt;
use std::sync::Arc;

/// Decides `pages_per_zspage` for a class size. Must return a value in `1..=max_chain`
/// (the class table clamps anything else into that range).
pub trait ChainPolicy: Send + Sync {
    /// Short name shown in reports (`classic`, `heuristic`, ...).
    fn name(&self) -> String;
    /// Pages per zspage for objects of `class_size` bytes (header included) on `page_size` pages.
    fn chain_size(&self, class_size: u32, page_size: u32, max_chain: u32) -> u32;
}

/// Mainline `calculate_zspage_chain_size()`: the chain with the least tail waste, the shortest
/// winning ties; a power-of-two size takes one page.
#[derive(Debug, Clone, Copy, Default)]
pub struct Classic;

impl ChainPolicy for Classic {
    fn name(&self) -> String {
        "classic".into()
    }
    fn chain_size(&self, size: u32, page: u32, max_chain: u32) -> u32 {
        if size.is_power_of_two() {
            return 1;
        }
        let (mut best, mut best_waste) = (1, u32::MAX);
        for i in 1..=max_chain {
            let waste = (i * page) % size;
            if waste < best_waste {
                best_waste = waste;
                best = i;
            }
        }
        best
    }
}

/// The RFC heuristic ("zsmalloc: size-classes chain-length tunings", January 2026, patch 2/2):
/// lengthen the chain only for substantial savings.
#[derive(Debug, Clone, Copy, Default)]
pub struct Heuristic;

impl ChainPolicy for Heuristic {
    fn name(&self) -> String {
        "heuristic".into()
    }
    fn chain_size(&self, size: u32, page: u32, max_chain: u32) -> u32 {
        if size.is_power_of_two() {
            return 1;
        }
        let (page, size) = (u64::from(page), u64::from(size));
        let (mut best, mut min_waste) = (1u64, u64::MAX);
        for i in 1..=u64::from(max_chain) {
            let waste = (i * page) % size;
            if waste == 0 {
                return i as u32;
            }
            // Wasteful best (> 10% of its zspage): take any improvement; else only a 25% one.
            let wasteful = min_waste.saturating_mul(10) > best * page;
            if (wasteful && waste < min_waste) || (!wasteful && waste * 4 < min_waste * 3) {
                min_waste = waste;
                best = i;
            }
            if min_waste.saturating_mul(64) <= best * page {
                break;
            }
        }
        best as u32
    }
}

/// Every class chains the same number of pages (capped by the configured maximum).
#[derive(Debug, Clone, Copy)]
pub struct Fixed(pub u32);

impl ChainPolicy for Fixed {
    fn name(&self) -> String {
        format!("fixed-{}", self.0)
    }
    fn chain_size(&self, _size: u32, _page: u32, max_chain: u32) -> u32 {
        self.0.min(max_chain)
    }
}

/// A user callback as a policy: `FnPolicy::new("mine", |size, page, max| ...)`.
pub struct FnPolicy<F> {
    name: String,
    f: F,
}

impl<F: Fn(u32, u32, u32) -> u32 + Send + Sync> FnPolicy<F> {
    pub fn new(name: impl Into<String>, f: F) -> Self {
        FnPolicy { name: name.into(), f }
    }
}

impl<F: Fn(u32, u32, u32) -> u32 + Send + Sync> ChainPolicy for FnPolicy<F> {
    fn name(&self) -> String {
        self.name.clone()
    }
    fn chain_size(&self, size: u32, page: u32, max_chain: u32) -> u32 {
        (self.f)(size, page, max_chain)
    }
}

/// A shareable policy handle held by configurations.
#[derive(Clone)]
pub struct PolicyRef(pub Arc<dyn ChainPolicy>);

impl PolicyRef {
    pub fn new(policy: impl ChainPolicy + 'static) -> Self {
        PolicyRef(Arc::new(policy))
    }

    /// Built-in policies by name: `classic`, `heuristic`, `fixed-N`.
    pub fn by_name(name: &str) -> Option<Self> {
        match name {
            "classic" => Some(Self::new(Classic)),
            "heuristic" => Some(Self::new(Heuristic)),
            _ => {
                let n: u32 = name.strip_prefix("fixed-")?.parse().ok()?;
                (1..=16).contains(&n).then(|| Self::new(Fixed(n)))
            }
        }
    }

    pub fn name(&self) -> String {
        self.0.name()
    }
}

impl fmt::Debug for PolicyRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classic_picks_least_waste_shortest_on_ties() {
        // 16K pages, chain 8 (the RFC's table): 1120 -> 8 pages.
        assert_eq!(Classic.chain_size(1120, 16384, 8), 8);
        assert_eq!(Classic.chain_size(1088, 16384, 8), 1);
        assert_eq!(Classic.chain_size(64, 4096, 8), 1);
    }

    #[test]
    fn heuristic_stops_early_on_cheap_chains() {
        // Seed RFC: class 368 drops from 7 spanning objects per zspage to 0.
        let classic = Classic.chain_size(368, 4096, 10);
        let heuristic = Heuristic.chain_size(368, 4096, 10);
        assert!(heuristic < classic, "{heuristic} vs {classic}");
    }

    #[test]
    fn names_round_trip() {
        for n in ["classic", "heuristic", "fixed-4"] {
            assert_eq!(PolicyRef::by_name(n).unwrap().name(), n);
        }
        assert!(PolicyRef::by_name("fixed-0").is_none());
        assert!(PolicyRef::by_name("greedy").is_none());
    }
}
