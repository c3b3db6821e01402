//! The size-class table: merged and huge classes, `huge_class_size`, lookup.
//!
//! Two kinds: mainline's computed table (a class every `delta` bytes, chains from a policy,
//! neighbours with the same shape merged), and an explicit table given class by class
//! ([`ClassTableSpec`]), whose class indices are simply positions and where nothing merges.

use crate::band::MultiBand;
use crate::class_spec::{ClassSpec, ClassTableSpec};
use crate::config::PoolConfig;
use crate::error::Result;

/// Bytes of the in-object header (`ZS_HANDLE_SIZE`).
pub const HDR: u32 = 8;
pub use crate::limits::MIN_ALLOC;

/// One created (non-alias) class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassInfo {
    /// Class index (the largest index this class serves, as in the kernel).
    pub index: u32,
    /// Class size in bytes, header included.
    pub size: u32,
    /// Units per zspage (the chain): pages, or in the multi-page band's classes above a page,
    /// order-`order` compound pages (docs/DESIGN.md, Objects of several pages).
    pub pages_per_zspage: u32,
    pub objs_per_zspage: u32,
    /// One object per one-unit zspage: objects carry no in-object header.
    pub huge: bool,
    /// Smallest index merged into this class (== `index` when nothing merged).
    pub first_index: u32,
    /// A unit is `page << order` bytes of adjacent pages; 0 (single pages) but in the
    /// multi-page band's classes above a page.
    pub order: u32,
    /// The unit's bytes less one and their log2 (`page_shift + order`), kept for the hot paths.
    pub(crate) unit_mask: u32,
    pub(crate) unit_shift: u32,
}

impl ClassInfo {
    /// Bytes of one unit of this class's zspages (a page, or a compound page).
    pub fn unit(&self, page: u32) -> u32 {
        page << self.order
    }

    /// Pages of one zspage, as the pool counts them (`pages_per_zspage << order`).
    pub fn zspage_pages(&self) -> u32 {
        self.pages_per_zspage << self.order
    }

    /// Bytes of each zspage no object can use.
    pub fn tail_waste(&self, page: u32) -> u32 {
        self.pages_per_zspage * self.unit(page) - self.objs_per_zspage * self.size
    }

    /// Objects of a full zspage that cross a unit boundary (a page's, or a compound page's),
    /// counting full class-size objects.
    pub fn spanning_per_zspage(&self, page: u32) -> u32 {
        if self.huge {
            return 0;
        }
        let unit = self.unit(page);
        (0..self.objs_per_zspage).filter(|k| (k * self.size) % unit + self.size > unit).count()
            as u32
    }
}

/// The class table of one configuration.
#[derive(Debug, Clone)]
pub struct ClassTable {
    page: u32,
    /// Class spacing of a computed table; 0 for an explicit one (its sizes are listed).
    delta: u32,
    /// Created classes, ascending by size.
    classes: Vec<ClassInfo>,
    /// For each class index, the position in `classes` of the class serving it.
    by_index: Vec<u16>,
    /// For each size rounded up to 8 (`(size + 7) / 8`), the position of its class: the lookup
    /// without a division (class sizes and spacing are multiples of 8).
    by_size8: Vec<u16>,
    huge_class_size: u32,
    /// Class indices of the base band (mainline's, up to a page): `n0`.
    base_count: u32,
    /// The multi-page band, if configured.
    band: Option<MultiBand>,
    /// `huge_class_size` of the multi-page band (0 without one).
    huge_class_size_multi: u32,
    /// The longest object served: the multi-page size, else the page.
    max_size: u32,
}

impl ClassTable {
    /// The table of `cfg`: its explicit table if it has one, else built exactly as mainline's
    /// `zs_create_pool` does.
    pub fn new(cfg: &PoolConfig) -> Result<Self> {
        cfg.validate()?;
        Ok(match &cfg.class_table {
            Some(spec) => Self::explicit(spec),
            None => Self::computed(cfg),
        })
    }

    /// Mainline's table: index `i` is size `MIN + i*delta` (capped at the page), each index
    /// merged into the next larger class when both have the same pages and objects per zspage.
    /// With a multi-page band, indices `n0..` follow (docs/DESIGN.md, Objects of several
    /// pages): chains counted in units, merged the same way within the band, never across.
    fn computed(cfg: &PoolConfig) -> Self {
        let page = cfg.page_size;
        let delta = cfg.effective_delta();
        let base_count = (page - MIN_ALLOC).div_ceil(delta) + 1;
        let band = MultiBand::new(page, cfg.multi_page_size);
        let n = base_count + band.map_or(0, |b| b.count);
        let mut rev: Vec<ClassInfo> = Vec::new();
        let mut by_index_rev = vec![0u16; n as usize];
        for i in (0..n).rev() {
            let (size, order) = grid(page, delta, base_count, band, i);
            let unit = page << order;
            // The page-sized class also takes lengths page - 7..=page, which only fit without a
            // header: it must be huge (one page). Mainline's policies give every power of two one
            // page; other policies (fixed-N, callbacks) must not override that. The same holds
            // for the multi-page band's last class (the multi-page size).
            let pages = if size == page || band.is_some_and(|b| size == b.size) {
                1
            } else {
                cfg.chain_policy.0.chain_size(size, unit, cfg.chain_size).clamp(1, cfg.chain_size)
            };
            let objs = pages * unit / size;
            let band_edge = band.is_some() && i == base_count - 1;
            match rev.last_mut() {
                Some(prev)
                    if cfg.merge_classes
                        && !band_edge
                        && prev.pages_per_zspage == pages
                        && prev.objs_per_zspage == objs =>
                {
                    prev.first_index = i;
                }
                _ => rev.push(ClassInfo {
                    index: i,
                    size,
                    pages_per_zspage: pages,
                    objs_per_zspage: objs,
                    huge: pages == 1 && objs == 1,
                    first_index: i,
                    order,
                    unit_shift: page.trailing_zeros() + order,
                    unit_mask: (page << order) - 1,
                }),
            }
            by_index_rev[i as usize] = (rev.len() - 1) as u16;
        }
        let count = rev.len() as u16;
        rev.reverse();
        let by_index: Vec<u16> = by_index_rev.into_iter().map(|r| count - 1 - r).collect();
        let (base, multi): (Vec<_>, Vec<_>) =
            rev.iter().cloned().partition(|c| c.index < base_count);
        let mut table = ClassTable {
            page,
            delta,
            huge_class_size: huge_class_size(&base),
            huge_class_size_multi: huge_class_size(&multi),
            base_count,
            band,
            max_size: band.map_or(page, |b| b.size),
            classes: rev,
            by_index,
            by_size8: Vec::new(),
        };
        table.by_size8 = (0..=(table.max_size() + HDR) / 8)
            .map(|s8| table.by_index[table.raw_index(s8 as usize * 8) as usize])
            .collect();
        table
    }

    /// An explicit table: class `i` of the spec is class index `i`; every size goes to the
    /// smallest class holding it. Sizes up to a page and its header go to the classes of a
    /// page or less (the page-sized class stores a page-long object without a header), longer
    /// ones to the band's classes, if the table has the band, and beyond it to the largest.
    fn explicit(spec: &ClassTableSpec) -> Self {
        let page = spec.page_size();
        let band = MultiBand::new(page, spec.multi_page_size());
        let classes: Vec<ClassInfo> = spec
            .classes()
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let (unit, objs) = (c.unit(page), c.objs_per_zspage(page));
                ClassInfo {
                    index: i as u32,
                    size: c.size,
                    pages_per_zspage: c.chain,
                    objs_per_zspage: objs,
                    huge: c.chain == 1 && objs == 1,
                    first_index: i as u32,
                    order: c.order,
                    unit_shift: page.trailing_zeros() + c.order,
                    unit_mask: unit - 1,
                }
            })
            .collect();
        let base_count = classes.iter().take_while(|c| c.size <= page).count();
        let max_size = band.map_or(page, |b| b.size);
        let mut pos = 0;
        let by_size8 = (0..=(max_size + HDR) / 8)
            .map(|s8| {
                let last = if s8 * 8 <= page + HDR { base_count - 1 } else { classes.len() - 1 };
                while pos < last && classes[pos].size < s8 * 8 {
                    pos += 1;
                }
                pos as u16
            })
            .collect();
        let (base, multi) = classes.split_at(base_count);
        ClassTable {
            page,
            delta: 0,
            huge_class_size: huge_class_size(base),
            huge_class_size_multi: huge_class_size(multi),
            base_count: base_count as u32,
            band,
            max_size,
            by_index: (0..classes.len() as u16).collect(),
            by_size8,
            classes,
        }
    }

    pub fn page_size(&self) -> u32 {
        self.page
    }

    /// Class spacing of a computed table; 0 for an explicit table.
    pub fn delta(&self) -> u32 {
        self.delta
    }

    /// The multi-page band, if the table has one.
    pub fn band(&self) -> Option<MultiBand> {
        self.band
    }

    /// Class indices of the base band (`n0`; all of them without a multi-page band).
    pub fn base_count(&self) -> u32 {
        self.base_count
    }

    /// The longest object the table serves (bytes, header excluded): the multi-page size, else
    /// a page.
    #[inline]
    pub fn max_size(&self) -> u32 {
        self.max_size
    }

    /// Whether the table was given class by class (no spacing, no merging).
    pub fn is_explicit(&self) -> bool {
        self.delta == 0
    }

    /// Number of class indices (`ZS_SIZE_CLASSES`), aliases included.
    pub fn index_count(&self) -> u32 {
        self.by_index.len() as u32
    }

    /// Created classes, ascending by size.
    pub fn classes(&self) -> &[ClassInfo] {
        &self.classes
    }

    /// The created classes as an explicit table, in the same order, but the ones no length
    /// reaches ([`Self::stores_objects`]): a pool given it places every object exactly as this
    /// table does (a merged index is served by the next larger created class, which is the
    /// smallest class holding its sizes; the shapes are the same).
    pub fn spec(&self) -> ClassTableSpec {
        let classes: Vec<ClassSpec> = self
            .classes
            .iter()
            .filter(|c| self.stores_objects(c))
            .map(|c| ClassSpec { size: c.size, chain: c.pages_per_zspage, order: c.order })
            .collect();
        ClassTableSpec::new(self.page, classes).expect("a built table follows the rules")
    }

    /// Whether any length reaches `class`: all classes but the multi-page band's first one in
    /// a computed table, a page at order 0 that the RFC's `zs_create_pool` creates but whose
    /// lengths (up to a page and its header) go to the base band's page-sized class.
    pub fn stores_objects(&self, class: &ClassInfo) -> bool {
        self.is_explicit() || self.band.is_none() || class.index != self.base_count
    }

    /// Objects of this size (header included) or more go to huge classes.
    pub fn huge_class_size(&self) -> u32 {
        self.huge_class_size
    }

    /// `huge_class_size` of band `band`: 0 the base band (the same as [`Self::huge_class_size`]),
    /// 1 the multi-page band (`None` without one): scanning the band downward, the first class
    /// with a chain and objects per zspage both above 1, its size less 7.
    pub fn huge_class_size_of_band(&self, band: u32) -> Option<u32> {
        match band {
            0 => Some(self.huge_class_size),
            1 => self.band.map(|_| self.huge_class_size_multi),
            _ => None,
        }
    }

    /// Raw index formula (`get_size_class_index`) for a size, clamped to the last index. In an
    /// explicit table, where nothing merges, the index of the class serving the size.
    pub fn raw_index(&self, size: usize) -> u32 {
        if self.is_explicit() {
            return self.lookup_class_index(size);
        }
        if let Some(b) = self.band.filter(|_| size > (self.page + HDR) as usize) {
            return self.base_count + b.index(size);
        }
        let idx = if size <= MIN_ALLOC as usize {
            0
        } else {
            (size - MIN_ALLOC as usize).div_ceil(self.delta as usize)
        };
        idx.min(self.base_count as usize - 1) as u32
    }

    /// Index of the class serving `size` as given (no header added); merged indices report
    /// their target's index.
    pub fn lookup_class_index(&self, size: usize) -> u32 {
        self.classes[self.position(size)].index
    }

    /// Position in [`Self::classes`] of the class serving `size` bytes (header included).
    #[inline]
    pub fn position(&self, size: usize) -> usize {
        match self.by_size8.get(size.div_ceil(8)) {
            Some(&p) => p as usize,
            None => self.classes.len() - 1,
        }
    }

    /// Position in [`Self::classes`] of the class serving class index `index`.
    pub fn position_of_index(&self, index: u32) -> Option<usize> {
        self.by_index.get(index as usize).map(|&p| p as usize)
    }

    /// One row per logical size `MIN, MIN+step, ...` up to the page, like the RFC's table: the
    /// physical class serving it and the merge waste per zspage. `step` 16 matches the RFC.
    pub fn logical_rows(&self, step: u32) -> impl Iterator<Item = LogicalRow<'_>> + '_ {
        (MIN_ALLOC..=self.max_size()).step_by(step.max(8) as usize).map(move |logical| {
            let class = &self.classes[self.position(logical as usize)];
            LogicalRow {
                index: self.raw_index(logical as usize),
                logical_size: logical,
                class,
                merge_waste: (class.size - logical) * class.objs_per_zspage,
            }
        })
    }

    /// The class size `size` (header included) would have if nothing merged: the size of its
    /// own class index. `class size - own size` is what merging costs an object of that size.
    pub fn own_size(&self, size: usize) -> u32 {
        if self.is_explicit() {
            return self.classes[self.position(size)].size;
        }
        grid(self.page, self.delta, self.base_count, self.band, self.raw_index(size)).0
    }

    /// Worst merge waste of a class: its size minus the smallest size it absorbs, per zspage
    /// (0 in an explicit table, where nothing merges).
    pub fn worst_merge_waste(&self, class: &ClassInfo) -> u32 {
        if self.is_explicit() {
            return 0;
        }
        let smallest = grid(self.page, self.delta, self.base_count, self.band, class.first_index).0;
        (class.size - smallest) * class.objs_per_zspage
    }
}

/// Size and order of class index `i` of a computed table: the base band's `MIN + i*delta`
/// (capped at the page), then the multi-page band's.
fn grid(page: u32, delta: u32, base_count: u32, band: Option<MultiBand>, i: u32) -> (u32, u32) {
    match band {
        Some(b) if i >= base_count => {
            let size = b.class_size(i - base_count);
            (size, b.order_of_size(size))
        }
        _ => ((MIN_ALLOC + i * delta).min(page), 0),
    }
}

/// `huge_class_size` of created classes ascending by size: from the largest class down, the
/// first that chains more than one page and holds more than one object sets it to its size less
/// the header's last 7 bytes (mainline: the first such index met walking down is a created
/// class, since a merged index has its class's shape). 0 when no class does.
fn huge_class_size(classes: &[ClassInfo]) -> u32 {
    classes
        .iter()
        .rev()
        .find(|c| c.pages_per_zspage != 1 && c.objs_per_zspage != 1)
        .map_or(0, |c| c.size - (HDR - 1))
}

/// One class index of the table.
#[derive(Debug, Clone)]
pub struct LogicalRow<'a> {
    pub index: u32,
    pub logical_size: u32,
    pub class: &'a ClassInfo,
    pub merge_waste: u32,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain_policy::{Heuristic, PolicyRef};

    fn table(page: u32, chain: u32, delta: u32) -> ClassTable {
        ClassTable::new(&PoolConfig {
            page_size: page,
            chain_size: chain,
            class_delta: delta,
            ..Default::default()
        })
        .unwrap()
    }

    #[test]
    fn mainline_4k_default_table_shape() {
        let t = table(4096, 8, 0);
        assert_eq!(t.index_count(), 255);
        assert_eq!(t.delta(), 16);
        assert_eq!(t.classes().first().unwrap().size, 32);
        assert_eq!(t.classes().last().unwrap().size, 4096);
        // The largest class that chains pages is 3632; the header's last 7 bytes may spill.
        assert_eq!(t.huge_class_size(), 3632 - 7);
    }

    #[test]
    fn lookup_reports_target_of_merged_index() {
        let t = table(16384, 8, 0);
        // 1072..1104 merge into 1120 with delta 64 (the RFC's table).
        let idx_1120 = t.lookup_class_index(1120);
        for size in [1072, 1088, 1104, 1120] {
            assert_eq!(t.lookup_class_index(size), idx_1120);
        }
        assert_eq!(t.lookup_class_index(1), 0);
        assert_eq!(t.lookup_class_index(1 << 20), t.index_count() - 1);
    }

    #[test]
    fn size_table_agrees_with_the_formula() {
        for (page, delta) in [(4096, 0), (16384, 0), (16384, 16), (65536, 8), (4096, 24)] {
            let t = table(page, 8, delta);
            for size in 0..=(page as usize + 64) {
                assert_eq!(t.position(size), t.by_index[t.raw_index(size) as usize] as usize);
            }
        }
    }

    #[test]
    fn heuristic_changes_chains_not_sizes() {
        let cfg = PoolConfig {
            chain_size: 10,
            chain_policy: PolicyRef::new(Heuristic),
            ..Default::default()
        };
        let h = ClassTable::new(&cfg).unwrap();
        let c = h.classes().iter().find(|c| c.size == 368).unwrap();
        assert_eq!(c.spanning_per_zspage(4096), 0);
        let classic = table(4096, 10, 0);
        let c = classic.classes().iter().find(|c| c.size == 368).unwrap();
        assert_eq!(c.spanning_per_zspage(4096), 7);
    }

    #[test]
    fn own_size_is_the_unmerged_class_and_explicit_tables_merge_nothing() {
        let t = table(16384, 8, 0);
        // A merged index's own size is its grid size, below the class serving it.
        let merged = t.classes().iter().find(|c| c.first_index < c.index).unwrap();
        let own = MIN_ALLOC + merged.first_index * t.delta();
        assert_eq!(t.own_size(own as usize), own);
        assert_eq!(t.classes()[t.position(own as usize)].size, merged.size);
        assert!(merged.size > own);
        let explicit = ClassTable::new(&PoolConfig {
            page_size: 16384,
            class_table: Some(t.spec()),
            ..Default::default()
        })
        .unwrap();
        assert!(explicit.is_explicit() && !t.is_explicit());
        assert_eq!(explicit.own_size(own as usize), merged.size, "nothing merges when explicit");
        assert_eq!(explicit.lookup_class_index(1060), explicit.raw_index(1060));
        assert!(explicit.classes().iter().all(|c| explicit.worst_merge_waste(c) == 0));
        assert_eq!(explicit.index_count() as usize, explicit.classes().len());
    }

    #[test]
    fn without_merging_every_index_is_its_own_class() {
        let merged = table(4096, 4, 16);
        let cfg = PoolConfig {
            chain_size: 4,
            class_delta: 16,
            merge_classes: false,
            ..Default::default()
        };
        let unmerged = ClassTable::new(&cfg).unwrap();
        assert!(merged.classes().len() < 255, "mainline merges some classes on 4K pages");
        assert_eq!(unmerged.classes().len(), 255);
        for size in 1..=4096 {
            let c = &unmerged.classes()[unmerged.position(size)];
            assert_eq!(c.first_index, c.index, "size {size}");
            // Each class is the smallest that fits: its size is the lookup size rounded up.
            let want = if size <= 32 { 32 } else { (32 + (size - 32).div_ceil(16) * 16) as u32 };
            assert_eq!(c.size, want, "size {size}");
        }
        assert_eq!(unmerged.huge_class_size(), merged.huge_class_size());
    }
}
