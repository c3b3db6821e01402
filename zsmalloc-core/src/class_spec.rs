//! A class table given explicitly, class by class (docs/DESIGN.md, Class tables): its entries,
//! the rules a table must follow, and the refusal that names the entry breaking one.
//!
//! A table may carry the multi-page band (docs/DESIGN.md, Objects of several pages): classes
//! above the page, of order `K` (their zspages are made of units of `page << K` bytes, chains
//! count units), up to the multi-page size `page << K`. A class of a page or less is order 0.
//!
//! The rules, checked entry by entry in order so the first bad entry is the one named:
//! - at least one class, and at most [`max_classes`] (one per multiple of 8 from 32 to the
//!   largest size: the page, or the multi-page size);
//! - each chain in 1..=16 (units per zspage, [`MAX_CHAIN_SIZE`]);
//! - each size (bytes, the 8-byte object header included, as the kernel's class sizes) a
//!   multiple of 8, at least [`MIN_ALLOC`];
//! - each order 0 for a size up to the page; above the page, the band's order `K` in 1..=4 (the
//!   same for every class above the page), the size at most `page << K` and that at most 64 KiB;
//! - sizes strictly ascending (no duplicates): an object goes to the smallest class that holds
//!   it, so a class after a larger one would never be used;
//! - the page-sized class is `page 1`: a one-page zspage holding one page-long object without a
//!   header (a huge class, as mainline's page-sized class), so every length up to a page has a
//!   class; without the band it is the last class, with it the last of order 0, and the band
//!   ends with `page<<K 1` of order `K` (the multi-page size, huge too).

use std::sync::Arc;

use crate::band::{MultiBand, MAX_OBJECT, MAX_ORDER};
use crate::error::{Error, Result};
use crate::limits::{MAX_CHAIN_SIZE, MAX_PAGE_SIZE, MIN_ALLOC, MIN_PAGE_SIZE};

/// One class of an explicit table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClassSpec {
    /// Class size in bytes, header included.
    pub size: u32,
    /// Units per zspage, 1..=16: pages, or order-`order` compound pages.
    pub chain: u32,
    /// 0 (single pages) for a class up to the page; the multi-page band's `K` above it.
    pub order: u32,
}

impl ClassSpec {
    /// A class of single pages (order 0).
    pub fn new(size: u32, chain: u32) -> Self {
        ClassSpec { size, chain, order: 0 }
    }

    /// The order a class of `size` bytes has in a pool whose multi-page size is `multi` (0, or
    /// not a multi-page size: none): the band's `K` above the page, else 0. Bindings whose
    /// table entries carry no order (the C struct, Python pairs) take it from here.
    pub fn order_in(size: u32, page: u32, multi: u32) -> u32 {
        MultiBand::new(page, multi).map_or(0, |b| b.order_of_size(size))
    }

    /// Bytes of one unit of this class's zspages: a page, or a compound page of the band.
    pub fn unit(&self, page: u32) -> u32 {
        page << self.order
    }

    /// Objects a zspage of this class holds (`chain * unit / size`).
    pub fn objs_per_zspage(&self, page: u32) -> u32 {
        self.chain * self.unit(page) / self.size
    }
}

/// The most classes a table whose largest class is `largest` bytes (the page, or the
/// multi-page size) can have: one per multiple of 8 from [`MIN_ALLOC`] up to it (509 on 4K
/// pages, 8189 on 64K pages). Every computed table fits.
pub fn max_classes(largest: u32) -> usize {
    (largest.saturating_sub(MIN_ALLOC) / 8 + 1) as usize
}

/// A class table given class by class, for one page size, checked against the rules above.
/// Cloning is cheap (the entries are shared).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassTableSpec {
    page_size: u32,
    classes: Arc<[ClassSpec]>,
}

/// Why a table was refused: the entry at fault (its position in the table) if one is, and what
/// is wrong. Callers word the entry their way (`class_table[3]`, `line 12`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub entry: Option<usize>,
    pub message: String,
    /// The table stops before the page-sized class (a file cut short looks like this).
    pub ends_short: bool,
}

impl ClassTableSpec {
    /// Checks `classes` for `page_size`-byte pages. A refusal names the entry as
    /// `class_table[i] (size S, chain C)`, `i` counted from 0.
    pub fn new(page_size: u32, classes: Vec<ClassSpec>) -> Result<Self> {
        check(page_size, &classes).map_err(|r| {
            let message = match r.entry {
                Some(i) => {
                    let c = classes[i];
                    format!("class_table[{i}] (size {}, chain {}): {}", c.size, c.chain, r.message)
                }
                None => r.message,
            };
            Error::config("class_table", message)
        })?;
        Ok(ClassTableSpec { page_size, classes: classes.into() })
    }

    pub fn page_size(&self) -> u32 {
        self.page_size
    }

    /// The classes, ascending by size; the last is the page, or with the band the multi-page
    /// size.
    pub fn classes(&self) -> &[ClassSpec] {
        &self.classes
    }

    /// The multi-page size of the table's band (`page << K`), 0 when it has none.
    pub fn multi_page_size(&self) -> u32 {
        match self.classes.last() {
            Some(c) if c.order > 0 => self.page_size << c.order,
            _ => 0,
        }
    }
}

/// The rules of the module documentation, first bad entry first.
pub(crate) fn check(page: u32, classes: &[ClassSpec]) -> std::result::Result<(), Refusal> {
    let whole = |message: String| Err(Refusal { entry: None, message, ends_short: false });
    let at =
        |i: usize, message: String| Err(Refusal { entry: Some(i), message, ends_short: false });
    if !(MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&page) || !page.is_power_of_two() {
        return whole(format!("page size {page} is not a power of two in 4096..=65536"));
    }
    if classes.is_empty() {
        return whole(format!("the table has no classes; it needs at least `{page} 1`"));
    }
    // The count's limit follows the largest size the table may reach: the band's, if its
    // first class above the page states a valid order, else the page.
    let band = classes.iter().find(|c| c.size > page).map(|c| c.order);
    let largest = match band {
        Some(k) if (1..=MAX_ORDER).contains(&k) => (page << k).min(MAX_OBJECT),
        _ => page,
    };
    let limit = max_classes(largest);
    if classes.len() > limit {
        return at(
            limit,
            format!(
                "too many classes ({}): a table up to {largest} bytes has room for at most \
                 {limit} (one per multiple of 8 from {MIN_ALLOC} to {largest})",
                classes.len()
            ),
        );
    }
    for (i, c) in classes.iter().enumerate() {
        if !(1..=MAX_CHAIN_SIZE).contains(&c.chain) {
            return at(i, format!("chain {} is outside 1..={MAX_CHAIN_SIZE}", c.chain));
        }
        if c.size % 8 != 0 {
            return at(i, format!("size {} is not a multiple of 8", c.size));
        }
        if c.size < MIN_ALLOC {
            return at(i, format!("size {} is below the smallest class size, {MIN_ALLOC}", c.size));
        }
        if let Err(why) = check_order(page, band, c) {
            return at(i, why);
        }
        if let Some(prev) = i.checked_sub(1).map(|p| classes[p]) {
            if c.size == prev.size {
                return at(i, format!("duplicate size {} (the previous class has it too)", c.size));
            }
            if c.size < prev.size {
                return at(
                    i,
                    format!(
                        "size {} is below the previous class's {}: sizes must ascend",
                        c.size, prev.size
                    ),
                );
            }
        }
        // The band starts right after the page-sized class, which then ends the order-0 part.
        let band_starts = c.size > page && (i == 0 || classes[i - 1].size <= page);
        if band_starts {
            if let Some(refusal) = check_top(page, classes, i.checked_sub(1), 0) {
                return Err(refusal);
            }
        }
    }
    let last = classes.len() - 1;
    check_top(page, classes, Some(last), band.unwrap_or(0)).map_or(Ok(()), Err)
}

/// The order rule of one class, `band` the order of the table's first class above the page.
fn check_order(page: u32, band: Option<u32>, c: &ClassSpec) -> std::result::Result<(), String> {
    let (size, order) = (c.size, c.order);
    if size <= page {
        if order != 0 {
            return Err(format!(
                "order {order}: a class of a page or less is made of single pages (order 0)"
            ));
        }
        return Ok(());
    }
    if !(1..=MAX_ORDER).contains(&order) {
        return Err(format!(
            "size {size} is above the page size, {page}: such a class belongs to the multi-page \
             band and needs its order, 1..={MAX_ORDER} (units of page << order bytes), not \
             {order}"
        ));
    }
    if band != Some(order) {
        let k = band.unwrap_or(0);
        return Err(format!(
            "order {order} differs from the band's, {k} (its first class above the page): \
             every class above the page has the band's order"
        ));
    }
    let multi = page << order;
    if multi > MAX_OBJECT {
        return Err(format!(
            "order {order} makes units of {multi} bytes, above {MAX_OBJECT}, the longest \
             object an object header records"
        ));
    }
    if size > multi {
        return Err(format!(
            "size {size} is above the band's multi-page size, {multi} (page << order {order})"
        ));
    }
    Ok(())
}

/// The class at `top` must be the largest of its band, stored whole without a header: `page 1`
/// for order 0, `page<<order 1` for the band. `None` (the table starts above the page) is
/// refused at entry 0.
fn check_top(page: u32, classes: &[ClassSpec], top: Option<usize>, order: u32) -> Option<Refusal> {
    let want = page << order;
    let row = if order == 0 { format!("`{want} 1`") } else { format!("`{want} 1 {order}`") };
    let Some(i) = top else {
        return Some(Refusal {
            entry: Some(0),
            message: format!(
                "the band starts before any class of a page or less: the table needs \
                 {row} (every length up to a page) before its first class above the page"
            ),
            ends_short: false,
        });
    };
    let c = classes[i];
    if c.size != want {
        let (message, ends_short) = if order == 0 && i + 1 < classes.len() {
            (
                format!(
                    "the band starts after {}: the table needs {row} (every length up to a \
                     page) before its first class above the page",
                    c.size
                ),
                false,
            )
        } else if order == 0 {
            (
                format!(
                    "no class stores a whole page: the largest class is {}; the table must end \
                     with {row}",
                    c.size
                ),
                true,
            )
        } else {
            (
                format!(
                    "no class stores a whole multi-page object: the band's largest class is {}; \
                     the table must end with {row}",
                    c.size
                ),
                true,
            )
        };
        return Some(Refusal { entry: Some(i), message, ends_short });
    }
    if c.chain != 1 {
        let what = if order == 0 { "page-sized class" } else { "multi-page-sized class" };
        return Some(Refusal {
            entry: Some(i),
            message: format!(
                "the {what} must have chain 1 (one header-less object of {want} bytes per \
                 one-unit zspage, a huge class); with chain {} its objects carry an 8-byte \
                 header and no {want}-byte object fits",
                c.chain
            ),
            ends_short: false,
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(page: u32, pairs: &[(u32, u32)]) -> Result<ClassTableSpec> {
        let classes = pairs.iter().map(|&(size, chain)| ClassSpec::new(size, chain)).collect();
        ClassTableSpec::new(page, classes)
    }

    fn refusal(page: u32, pairs: &[(u32, u32)]) -> String {
        spec(page, pairs).unwrap_err().to_string()
    }

    #[test]
    fn a_small_table_is_accepted() {
        let t = spec(4096, &[(32, 1), (48, 3), (2048, 1), (4096, 1)]).unwrap();
        assert_eq!(t.classes().len(), 4);
        assert_eq!(t.page_size(), 4096);
    }

    #[test]
    fn each_rule_names_the_entry_breaking_it() {
        let cases: [(&[(u32, u32)], &str); 9] = [
            (
                &[(48, 1), (32, 1), (4096, 1)],
                "class_table[1] (size 32, chain 1): size 32 is below the previous",
            ),
            (
                &[(32, 1), (32, 2), (4096, 1)],
                "class_table[1] (size 32, chain 2): duplicate size 32",
            ),
            (
                &[(32, 1), (44, 1), (4096, 1)],
                "class_table[1] (size 44, chain 1): size 44 is not a multiple of 8",
            ),
            (&[(24, 1), (4096, 1)], "class_table[0] (size 24, chain 1): size 24 is below"),
            (
                &[(32, 1), (4104, 1)],
                "class_table[1] (size 4104, chain 1): size 4104 is above the page",
            ),
            (&[(32, 0), (4096, 1)], "class_table[0] (size 32, chain 0): chain 0 is outside 1..=16"),
            (&[(32, 17), (4096, 1)], "class_table[0] (size 32, chain 17): chain 17 is outside"),
            (
                &[(32, 1), (2048, 1)],
                "class_table[1] (size 2048, chain 1): no class stores a whole page",
            ),
            (
                &[(32, 1), (4096, 2)],
                "class_table[1] (size 4096, chain 2): the page-sized class must",
            ),
        ];
        for (pairs, want) in cases {
            let err = refusal(4096, pairs);
            assert!(err.contains(want), "{pairs:?}: {err}");
        }
        assert!(refusal(4096, &[]).contains("no classes"));
    }

    #[test]
    fn too_many_classes_states_the_limit() {
        assert_eq!(max_classes(4096), 509);
        assert_eq!(max_classes(65536), 8189);
        let mut pairs: Vec<(u32, u32)> = (0..509).map(|i| (32 + 8 * i, 1)).collect();
        assert!(spec(4096, &pairs).is_ok(), "one class per multiple of 8 is the most");
        pairs.push((4104, 1));
        let err = refusal(4096, &pairs);
        assert!(err.contains("class_table[509]") && err.contains("at most 509"), "{err}");
    }
}
