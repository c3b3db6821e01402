//! Class tables for `zsmalloc classes`: one row per logical size, like the RFC's table
//! (logical size, physical class size, chain, objects per zspage, tail waste, merge waste),
//! plus spanning objects per zspage.

use serde::Serialize;

use crate::config::{ConfigDesc, ConfigSpec};
use crate::error::{LabError, LabResult};
use zsmalloc_core::ClassTable;

/// One logical size of a class table.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct LogicalClassRow {
    /// Size (header included) whose class this row shows.
    pub logical_size: u32,
    /// Size of the class that serves it (equal unless merged).
    pub class_size: u32,
    pub class_index: u32,
    pub chain: u32,
    pub objs_per_zspage: u32,
    /// Bytes of each zspage no object can use.
    pub tail_waste: u32,
    /// `(class_size - logical_size) * objs_per_zspage`: bytes lost per zspage when every object
    /// is of this logical size.
    pub merge_waste: u32,
    /// Objects of a full zspage that cross a page boundary.
    pub spanning_per_zspage: u32,
    pub huge: bool,
    /// With the multi-page band (docs/DESIGN.md, Objects of several pages): the class's order;
    /// `chain` then counts units of `page << order` bytes (compound pages) and
    /// `objs_per_zspage` is `chain * unit / class_size`, as the RFC computes them. Absent
    /// without the band.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order: Option<u32>,
}

/// A configuration's class table.
#[derive(Debug, Clone, Serialize)]
pub struct ClassTableReport {
    pub label: String,
    pub config: ConfigDesc,
    /// `zs_huge_class_size()`: objects of this length or more go to huge classes.
    pub huge_class_size: u32,
    /// With the multi-page band: the band's huge class size (a compressed folio of this length
    /// or more is stored raw). Absent without the band.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub huge_class_size_multi: Option<u32>,
    /// Class indices (`ZS_SIZE_CLASSES`) and created (non-merged) classes.
    pub class_indices: u32,
    pub classes: usize,
    /// Worst merge waste per zspage over all classes, and the class it occurs in.
    pub worst_merge_waste: u32,
    pub worst_merge_waste_class: u32,
    pub rows: Vec<LogicalClassRow>,
}

/// Builds the table of `spec`, one row per `step` bytes from 32 up to the page, restricted to
/// `min..=max` when given.
pub fn class_table(
    spec: &ConfigSpec,
    step: u32,
    min: Option<u32>,
    max: Option<u32>,
) -> LabResult<ClassTableReport> {
    if step == 0 || !step.is_multiple_of(8) {
        return Err(LabError::usage(format!("invalid --step {step}: a positive multiple of 8")));
    }
    if let (Some(lo), Some(hi)) = (min, max) {
        if lo > hi {
            return Err(LabError::usage(format!(
                "--min-size {lo} is above --max-size {hi}: the range holds no size"
            )));
        }
    }
    let cfg = spec.pool_config()?;
    let page = cfg.page_size;
    let table = ClassTable::new(&cfg)?;
    let banded = table.band().is_some();
    let (worst, worst_class) = table
        .classes()
        .iter()
        .map(|c| (table.worst_merge_waste(c), c.size))
        .max_by_key(|&(w, s)| (w, std::cmp::Reverse(s)))
        .unwrap_or((0, 0));
    let rows = table
        .logical_rows(step)
        .filter(|r| min.is_none_or_compat(|m| r.logical_size >= m))
        .filter(|r| max.is_none_or_compat(|m| r.logical_size <= m))
        .map(|r| LogicalClassRow {
            logical_size: r.logical_size,
            class_size: r.class.size,
            class_index: r.class.index,
            chain: r.class.pages_per_zspage,
            objs_per_zspage: r.class.objs_per_zspage,
            tail_waste: r.class.tail_waste(page),
            merge_waste: r.merge_waste,
            spanning_per_zspage: r.class.spanning_per_zspage(page),
            huge: r.class.huge,
            order: banded.then_some(r.class.order),
        })
        .collect::<Vec<_>>();
    if rows.is_empty() {
        return Err(LabError::usage(format!(
            "no logical size in --min-size {}..=--max-size {} (sizes run {step}..={} by {step})",
            min.map_or("-".into(), |m| m.to_string()),
            max.map_or("-".into(), |m| m.to_string()),
            table.max_size()
        )));
    }
    Ok(ClassTableReport {
        label: spec.label.clone(),
        config: ConfigDesc::from(spec),
        huge_class_size: table.huge_class_size(),
        huge_class_size_multi: table.huge_class_size_of_band(1),
        class_indices: table.index_count(),
        classes: table.classes().len(),
        worst_merge_waste: worst,
        worst_merge_waste_class: worst_class,
        rows,
    })
}

/// `Option::is_none_or` for older toolchains.
trait NoneOr<T> {
    fn is_none_or_compat(&self, f: impl FnOnce(T) -> bool) -> bool;
}

impl<T: Copy> NoneOr<T> for Option<T> {
    fn is_none_or_compat(&self, f: impl FnOnce(T) -> bool) -> bool {
        match *self {
            None => true,
            Some(v) => f(v),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_rows() {
        let mut base = ConfigSpec::default();
        base.config.page_size = 16384;
        let t = class_table(&base, 16, Some(1072), Some(1120)).unwrap();
        let got: Vec<_> = t
            .rows
            .iter()
            .map(|r| {
                (
                    r.logical_size,
                    r.class_size,
                    r.chain,
                    r.objs_per_zspage,
                    r.tail_waste,
                    r.merge_waste,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (1072, 1120, 8, 117, 32, 5616),
                (1088, 1120, 8, 117, 32, 3744),
                (1104, 1120, 8, 117, 32, 1872),
                (1120, 1120, 8, 117, 32, 0)
            ]
        );
    }
}
