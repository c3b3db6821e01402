//! A class table given explicitly, class by class (docs/DESIGN.md, Class tables): its entries,
//! the rules a table must follow, and the refusal that names the entry breaking one.
//!
//! The rules, checked entry by entry in order so the first bad entry is the one named:
//! - at least one class, and at most [`max_classes`] (one per multiple of 8 from 32 to the page);
//! - each chain in 1..=16 (pages per zspage, [`MAX_CHAIN_SIZE`]);
//! - each size (bytes, the 8-byte object header included, as the kernel's class sizes) a
//!   multiple of 8, at least [`MIN_ALLOC`] and at most the page;
//! - sizes strictly ascending (no duplicates): an object goes to the smallest class that holds
//!   it, so a class after a larger one would never be used;
//! - the last class is `page 1`: a one-page zspage holding one page-long object without a header
//!   (a huge class, as mainline's page-sized class), so every length up to a page has a class.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::limits::{MAX_CHAIN_SIZE, MAX_PAGE_SIZE, MIN_ALLOC, MIN_PAGE_SIZE};

/// One class of an explicit table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClassSpec {
    /// Class size in bytes, header included.
    pub size: u32,
    /// Pages per zspage, 1..=16.
    pub chain: u32,
}

/// The most classes a table for `page_size`-byte pages can have: one per multiple of 8 from
/// [`MIN_ALLOC`] to the page (509 on 4K pages, 8189 on 64K pages). Every computed table fits.
pub fn max_classes(page_size: u32) -> usize {
    (page_size.saturating_sub(MIN_ALLOC) / 8 + 1) as usize
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

    /// The classes, ascending by size; the last is the page.
    pub fn classes(&self) -> &[ClassSpec] {
        &self.classes
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
    let limit = max_classes(page);
    if classes.is_empty() {
        return whole(format!("the table has no classes; it needs at least `{page} 1`"));
    }
    if classes.len() > limit {
        return at(
            limit,
            format!(
                "too many classes ({}): a {page}-byte page has room for at most {limit} (one per \
                 multiple of 8 from {MIN_ALLOC} to {page})",
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
        if c.size > page {
            return at(i, format!("size {} is above the page size, {page}", c.size));
        }
        if let Some(prev) = i.checked_sub(1).map(|p| classes[p].size) {
            if c.size == prev {
                return at(i, format!("duplicate size {} (the previous class has it too)", c.size));
            }
            if c.size < prev {
                return at(
                    i,
                    format!(
                        "size {} is below the previous class's {prev}: sizes must ascend",
                        c.size
                    ),
                );
            }
        }
    }
    let last = classes.len() - 1;
    let top = classes[last];
    if top.size != page {
        return Err(Refusal {
            entry: Some(last),
            message: format!(
                "no class stores a whole page: the largest class is {}; the table must end with \
                 `{page} 1`",
                top.size
            ),
            ends_short: true,
        });
    }
    if top.chain != 1 {
        return at(
            last,
            format!(
                "the page-sized class must have chain 1 (one header-less page-long object per \
                 one-page zspage, a huge class); with chain {} its objects carry an 8-byte header \
                 and no page-long object fits",
                top.chain
            ),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(page: u32, pairs: &[(u32, u32)]) -> Result<ClassTableSpec> {
        let classes = pairs.iter().map(|&(size, chain)| ClassSpec { size, chain }).collect();
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
