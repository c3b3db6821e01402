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
}

/// A configuration's class table.
#[derive(Debug, Clone, Serialize)]
pub struct ClassTableReport {
    pub label: String,
    pub config: ConfigDesc,
    /// `zs_huge_class_size()`: objects of this length or more go to huge classes.
    pub huge_class_size: u32,
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
    let cfg = spec.pool_config()?;
    let page = cfg.page_size;
    let table = ClassTable::new(&cfg)?;
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
        })
        .collect();
    Ok(ClassTableReport {
        label: spec.label.clone(),
        config: ConfigDesc::from(spec),
        huge_class_size: table.huge_class_size(),
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

const HEAD: [&str; 7] =
    ["Log", "Phys", "Chain", "Objs/Page", "TailWaste", "MergeWaste", "Spanning"];
const WIDTH: [usize; 7] = [5, 5, 5, 9, 9, 10, 8];

fn cells(r: Option<&LogicalClassRow>) -> String {
    let vals: Vec<String> = match r {
        Some(r) => vec![
            r.logical_size.to_string(),
            r.class_size.to_string(),
            r.chain.to_string(),
            r.objs_per_zspage.to_string(),
            r.tail_waste.to_string(),
            r.merge_waste.to_string(),
            r.spanning_per_zspage.to_string(),
        ],
        None => vec![String::new(); 7],
    };
    vals.iter().zip(WIDTH).map(|(v, w)| format!("{v:>w$}")).collect::<Vec<_>>().join(" | ")
}

fn head() -> String {
    HEAD.iter().zip(WIDTH).map(|(h, w)| format!("{h:>w$}")).collect::<Vec<_>>().join(" | ")
}

fn title(t: &ClassTableReport) -> String {
    let spec_desc = t.config.summary();
    if t.label.is_empty() {
        spec_desc
    } else {
        format!("{} ({spec_desc})", t.label)
    }
}

fn summary(t: &ClassTableReport) -> String {
    format!(
        "{}: {} classes for {} indices, huge_class_size {}, worst merge waste {} bytes/zspage (class {})",
        if t.label.is_empty() { "table" } else { &t.label },
        t.classes,
        t.class_indices,
        t.huge_class_size,
        t.worst_merge_waste,
        t.worst_merge_waste_class
    )
}

/// One table, or two side by side (rows matched by logical size).
pub fn render_table(tables: &[ClassTableReport]) -> String {
    let mut out = String::new();
    let width = head().len();
    let sep = " || ";
    let titles: Vec<String> = tables.iter().map(title).collect();
    out += &titles.iter().map(|t| format!("{t:<width$}")).collect::<Vec<_>>().join(sep);
    out = out.trim_end().to_string() + "\n";
    out += &tables
        .iter()
        .map(|t| "=".repeat(title(t).len().min(width)))
        .map(|u| format!("{u:<width$}"))
        .collect::<Vec<_>>()
        .join(sep);
    out = out.trim_end().to_string() + "\n";
    out += &vec![head(); tables.len()].join(sep);
    out += "\n";
    let mut sizes: Vec<u32> =
        tables.iter().flat_map(|t| t.rows.iter().map(|r| r.logical_size)).collect();
    sizes.sort_unstable();
    sizes.dedup();
    for s in sizes {
        let line: Vec<String> =
            tables.iter().map(|t| cells(t.rows.iter().find(|r| r.logical_size == s))).collect();
        out += &line.join(sep);
        out += "\n";
    }
    out += "\n";
    for t in tables {
        out += &summary(t);
        out += "\n";
    }
    out
}

pub fn render_json(tables: &[ClassTableReport]) -> LabResult<String> {
    serde_json::to_string_pretty(&serde_json::json!({ "tables": tables }))
        .map(|s| s + "\n")
        .map_err(|e| LabError::runtime(format!("json: {e}")))
}

pub fn render_csv(tables: &[ClassTableReport]) -> String {
    let mut out = String::from(
        "label,page_size,chain_size,class_delta,chain_policy,logical_size,class_size,class_index,chain,objs_per_zspage,tail_waste,merge_waste,spanning_per_zspage,huge\n",
    );
    for t in tables {
        for r in &t.rows {
            out += &format!(
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
                crate::report::csv::field(&t.label),
                t.config.page_size,
                t.config.chain_size,
                t.config.class_delta,
                t.config.chain_policy,
                r.logical_size,
                r.class_size,
                r.class_index,
                r.chain,
                r.objs_per_zspage,
                r.tail_waste,
                r.merge_waste,
                r.spanning_per_zspage,
                r.huge
            );
        }
    }
    out
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
        let text = render_table(&[t.clone(), t]);
        assert!(
            text.contains(" 1072 |  1120 |     8 |       117 |        32 |       5616 |"),
            "{text}"
        );
    }
}
