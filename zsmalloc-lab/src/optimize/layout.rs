//! A class layout: the class sizes the chain search keeps fixed, the chains it starts from, and
//! the chains each class may take.
//!
//! What each class may take keeps the layout's `huge_class_size` (docs/DESIGN.md, The optimizer):
//! zram stores a page whole when it does not compress below that size, so a table that moved it
//! would change which objects the workload stores, and the classes would no longer be
//! independent. `huge_class_size` is set by the largest class that chains more than one page and
//! holds more than one object (`T` below). So:
//! - classes below `T` take any chain, 1..=16 (at chain 1 a class above half a page becomes a
//!   huge class, which changes nothing for the others);
//! - `T` takes 2..=16 (at chain 1 it would stop setting `huge_class_size`);
//! - classes above `T` keep chain 1 (they are huge classes; a longer chain would make one of them
//!   the new `T`).

use crate::error::{LabError, LabResult};
use zsmalloc_core::class_spec::{ClassSpec, ClassTableSpec};
use zsmalloc_core::{ClassTable, PoolConfig, HANDLE_SIZE};

/// The longest chain a class may take.
pub const MAX_CHAIN: u32 = 16;

/// The sizes of a table, its chains, and the chains the search may give each class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    page_size: u32,
    /// Class sizes, ascending; the last is the page.
    sizes: Vec<u32>,
    /// The chains of the table the layout was taken from.
    base_chains: Vec<u32>,
    /// For each class, the chains it may take, ascending (the base chain among them).
    choices: Vec<Vec<u32>>,
    /// Position of the class setting `huge_class_size`, if any class chains pages.
    top_chained: Option<usize>,
}

impl Layout {
    /// The layout of an explicit table: its sizes, its chains as the base.
    pub fn of_table(spec: &ClassTableSpec) -> Self {
        let page = spec.page_size();
        let sizes: Vec<u32> = spec.classes().iter().map(|c| c.size).collect();
        let base_chains: Vec<u32> = spec.classes().iter().map(|c| c.chain).collect();
        let sets_huge = |i: usize| {
            let chain = base_chains[i];
            chain != 1 && chain * page / sizes[i] != 1
        };
        let top_chained = (0..sizes.len()).rev().find(|&i| sets_huge(i));
        let choices = (0..sizes.len())
            .map(|i| match top_chained {
                Some(t) if i < t => (1..=MAX_CHAIN).collect(),
                Some(t) if i == t => (2..=MAX_CHAIN).collect(),
                _ => vec![base_chains[i]],
            })
            .collect();
        Layout { page_size: page, sizes, base_chains, choices, top_chained }
    }

    /// The layout of a configuration's table (mainline's computed one by default): its created
    /// classes, merged as that configuration merges them.
    pub fn of_config(cfg: &PoolConfig) -> LabResult<Self> {
        let table = ClassTable::new(cfg).map_err(LabError::from)?;
        Ok(Self::of_table(&table.spec()))
    }

    pub fn page_size(&self) -> u32 {
        self.page_size
    }

    pub fn sizes(&self) -> &[u32] {
        &self.sizes
    }

    pub fn base_chains(&self) -> &[u32] {
        &self.base_chains
    }

    /// The chains class `i` may take.
    pub fn choices(&self, i: usize) -> &[u32] {
        &self.choices[i]
    }

    /// Classes whose chain the search chooses (more than one choice).
    pub fn searched(&self) -> usize {
        self.choices.iter().filter(|c| c.len() > 1).count()
    }

    /// The `huge_class_size` every table of the search has (0 when no class chains pages).
    pub fn huge_class_size(&self) -> u32 {
        self.top_chained.map_or(0, |t| self.sizes[t] - (HANDLE_SIZE as u32 - 1))
    }

    /// The chains of the sweep's run at `chain`: every class that may take it takes it, the
    /// others keep their base chain.
    pub fn sweep_chains(&self, chain: u32) -> Vec<u32> {
        self.choices
            .iter()
            .zip(&self.base_chains)
            .map(|(choices, &base)| if choices.contains(&chain) { chain } else { base })
            .collect()
    }

    /// The table of this layout with `chains` (one per class, each among its choices).
    pub fn table(&self, chains: &[u32]) -> LabResult<ClassTableSpec> {
        if chains.len() != self.sizes.len() {
            return Err(LabError::runtime(format!(
                "internal: {} chains for a layout of {} classes",
                chains.len(),
                self.sizes.len()
            )));
        }
        if let Some(i) = (0..chains.len()).find(|&i| !self.choices[i].contains(&chains[i])) {
            return Err(LabError::runtime(format!(
                "internal: chain {} is not a choice of class {}",
                chains[i], self.sizes[i]
            )));
        }
        let classes = self
            .sizes
            .iter()
            .zip(chains)
            .map(|(&size, &chain)| ClassSpec { size, chain })
            .collect();
        ClassTableSpec::new(self.page_size, classes).map_err(LabError::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mainline(page: u32) -> Layout {
        Layout::of_config(&PoolConfig { page_size: page, ..Default::default() }).unwrap()
    }

    #[test]
    fn the_mainline_layout_keeps_its_huge_class_size() {
        for page in [4096, 16384, 65536] {
            let layout = mainline(page);
            let cfg = PoolConfig { page_size: page, ..Default::default() };
            let computed = ClassTable::new(&cfg).unwrap().huge_class_size();
            assert_eq!(layout.huge_class_size(), computed, "page {page}");
            for chain in 1..=MAX_CHAIN {
                let spec = layout.table(&layout.sweep_chains(chain)).unwrap();
                let table = ClassTable::new(&PoolConfig {
                    page_size: page,
                    class_table: Some(spec),
                    ..Default::default()
                })
                .unwrap();
                assert_eq!(table.huge_class_size(), computed, "page {page}, chain {chain}");
            }
        }
    }

    #[test]
    fn choices_follow_the_rule() {
        let layout = mainline(4096);
        let t = layout.top_chained.unwrap();
        assert_eq!(layout.sizes()[t], 3632);
        assert_eq!(layout.choices(t), (2..=16).collect::<Vec<u32>>());
        assert_eq!(layout.choices(0).len(), 16);
        assert!((t + 1..layout.sizes().len()).all(|i| layout.choices(i) == [1]));
        for i in 0..layout.sizes().len() {
            assert!(layout.choices(i).contains(&layout.base_chains()[i]));
        }
        assert_eq!(layout.searched(), t + 1);
        assert!(layout.table(&vec![1; layout.sizes().len()]).is_err(), "T cannot take chain 1");
    }
}
