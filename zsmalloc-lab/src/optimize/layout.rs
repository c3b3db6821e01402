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
//!
//! With the multi-page band (docs/DESIGN.md, Objects of several pages) each band has its own
//! `huge_class_size` and so its own `T`, and the rule holds in each band; chains above the page
//! count compound units of the multi-page size.

use crate::error::{LabError, LabResult};
use zsmalloc_core::class_spec::{ClassSpec, ClassTableSpec};
use zsmalloc_core::{ClassTable, PoolConfig, HANDLE_SIZE};

/// The two bands: classes of a page or less, and the multi-page band above the page.
const BANDS: usize = 2;

/// The longest chain a class may take.
pub const MAX_CHAIN: u32 = 16;

/// The sizes of a table, its chains, and the chains the search may give each class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    page_size: u32,
    /// The band's multi-page size, 0 without the band.
    multi_page_size: u32,
    /// Class sizes, ascending; the last is the page, or with the band the multi-page size.
    sizes: Vec<u32>,
    /// The chains of the table the layout was taken from.
    base_chains: Vec<u32>,
    /// For each class, the chains it may take, ascending (the base chain among them).
    choices: Vec<Vec<u32>>,
    /// Per band, the position of the class setting its `huge_class_size`, if any class of the
    /// band chains units.
    top_chained: [Option<usize>; BANDS],
}

impl Layout {
    /// The layout of an explicit table: its sizes, its chains as the base.
    pub fn of_table(spec: &ClassTableSpec) -> Self {
        let page = spec.page_size();
        let classes = spec.classes();
        let sizes: Vec<u32> = classes.iter().map(|c| c.size).collect();
        let base_chains: Vec<u32> = classes.iter().map(|c| c.chain).collect();
        let band = |i: usize| usize::from(sizes[i] > page);
        let sets_huge = |i: usize| classes[i].chain != 1 && classes[i].objs_per_zspage(page) != 1;
        let top_chained: [Option<usize>; BANDS] =
            std::array::from_fn(|b| (0..sizes.len()).rev().find(|&i| band(i) == b && sets_huge(i)));
        let choices = (0..sizes.len())
            .map(|i| match top_chained[band(i)] {
                Some(t) if i < t => (1..=MAX_CHAIN).collect(),
                Some(t) if i == t => (2..=MAX_CHAIN).collect(),
                _ => vec![base_chains[i]],
            })
            .collect();
        Layout {
            page_size: page,
            multi_page_size: spec.multi_page_size(),
            sizes,
            base_chains,
            choices,
            top_chained,
        }
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

    /// The band's multi-page size, 0 without the band.
    pub fn multi_page_size(&self) -> u32 {
        self.multi_page_size
    }

    /// The order of a class of `size` bytes in this layout.
    pub fn order_of(&self, size: u32) -> u32 {
        ClassSpec::order_in(size, self.page_size, self.multi_page_size)
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
        self.huge_class_size_of_band(0)
    }

    /// The `huge_class_size` of band `band` (0: up to the page, 1: the multi-page band) every
    /// table of the search has (0 when no class of the band chains units).
    pub fn huge_class_size_of_band(&self, band: usize) -> u32 {
        self.top_chained[band].map_or(0, |t| self.sizes[t] - (HANDLE_SIZE as u32 - 1))
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
            .map(|(&size, &chain)| ClassSpec { size, chain, order: self.order_of(size) })
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
    fn the_mainline_layout_keeps_its_huge_class_sizes() {
        let shapes =
            [(4096, 0), (16384, 0), (65536, 0), (4096, 16384), (4096, 65536), (16384, 65536)];
        for (page, multi) in shapes {
            let cfg = PoolConfig { page_size: page, multi_page_size: multi, ..Default::default() };
            let layout = Layout::of_config(&cfg).unwrap();
            assert_eq!(layout.multi_page_size(), multi);
            let computed = ClassTable::new(&cfg).unwrap();
            let huge = |t: &ClassTable, band| t.huge_class_size_of_band(band).unwrap_or(0);
            for band in [0, 1] {
                assert_eq!(layout.huge_class_size_of_band(band), huge(&computed, band as u32));
            }
            for chain in 1..=MAX_CHAIN {
                let spec = layout.table(&layout.sweep_chains(chain)).unwrap();
                let table = ClassTable::new(&PoolConfig::for_table(spec)).unwrap();
                for band in [0, 1] {
                    let at = format!("page {page}, multi {multi}, chain {chain}, band {band}");
                    assert_eq!(huge(&table, band), huge(&computed, band), "{at}");
                }
            }
        }
    }

    #[test]
    fn choices_follow_the_rule() {
        let layout = mainline(4096);
        let t = layout.top_chained[0].unwrap();
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
