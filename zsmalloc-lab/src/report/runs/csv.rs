//! A run's CSV: a header and one row per run (deltas against the first for comparisons), or
//! one row per class with `--per-class`.

use serde_json::Value;

use crate::report::csv::{cell, field, table, to_value, Column, Numbers};
use crate::result::{delta_value, RunResult};

/// A run's columns, flattened from its JSON form so the names match: `config` as the one line
/// the text table prints (every setting that is not mainline's), then its keys as they are,
/// `workload` as its one-line summary, other objects as `object_key` (`cpu_time_s_min`,
/// `corpus_compression_ratio`, `dist_clipped_min`, ...); per-class rows are left out.
fn columns(r: &RunResult) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let v = serde_json::to_value(r).unwrap_or_default();
    let Some(obj) = v.as_object() else { return out };
    for (k, v) in obj {
        match (k.as_str(), v) {
            ("classes", _) => {}
            ("workload", _) => out.push(("workload".into(), field(&r.workload.summary))),
            ("config", Value::Object(m)) => {
                out.push(("config".into(), field(&r.config.summary())));
                for (ck, cv) in m {
                    out.push((ck.clone(), cell(cv, Numbers::AsJson)));
                }
            }
            (_, Value::Object(m)) => {
                for (ik, iv) in m {
                    if !iv.is_object() && !iv.is_array() {
                        out.push((format!("{k}_{ik}"), cell(iv, Numbers::AsJson)));
                    }
                }
            }
            (_, Value::Array(_)) => {}
            _ => out.push((k.clone(), cell(v, Numbers::AsJson))),
        }
    }
    out
}

/// One row per run; with `base`, delta columns (percent, one decimal) against it, and the CPU
/// time's: `cpu_time_s_delta_pct` (medians), `_lo_pct`/`_hi_pct` (the spread) and
/// `cpu_time_s_within_noise`.
pub fn runs(runs: &[RunResult], base: Option<&RunResult>) -> String {
    let mut rows: Vec<Vec<(String, String)>> = runs.iter().map(columns).collect();
    if let Some(b) = base {
        for (row, r) in rows.iter_mut().zip(runs) {
            for (name, t) in r.deltas(b) {
                let v = delta_value(t).map(|v| format!("{v:.1}")).unwrap_or_default();
                row.push((format!("{name}_delta_pct"), v));
            }
            let d = r.cpu_delta(b);
            let f = |x: Option<f64>| x.map(|v| format!("{v:.1}")).unwrap_or_default();
            row.push(("cpu_time_s_delta_pct".into(), f(d.map(|d| d.median_pct))));
            row.push(("cpu_time_s_delta_lo_pct".into(), f(d.map(|d| d.lo_pct))));
            row.push(("cpu_time_s_delta_hi_pct".into(), f(d.map(|d| d.hi_pct))));
            row.push((
                "cpu_time_s_within_noise".into(),
                d.map(|d| d.within_noise.to_string()).unwrap_or_default(),
            ));
        }
    }
    let mut head: Vec<String> = Vec::new();
    for row in &rows {
        for (k, _) in row {
            if !head.contains(k) {
                head.push(k.clone());
            }
        }
    }
    let mut out = head.join(",") + "\n";
    for row in &rows {
        let cells: Vec<&str> = head
            .iter()
            .map(|h| row.iter().find(|(k, _)| k == h).map_or("", |(_, v)| v.as_str()))
            .collect();
        out += &cells.join(",");
        out += "\n";
    }
    out
}

/// The per-class columns: the run's label, then the class row's keys (its fullness groups
/// and the read counters other than `reads_spanning` left out).
pub fn class_columns() -> Vec<Column> {
    [
        "label",
        "index",
        "size",
        "pages_per_zspage",
        "objs_per_zspage",
        "huge",
        "obj_allocated",
        "obj_used",
        "pages_used",
        "freeable",
        "spanning_per_zspage",
        "tail_waste",
        "worst_merge_waste",
        "first_index",
        "last_index",
        "bytes_stored",
        "merge_waste",
        "reads_spanning",
    ]
    .iter()
    .map(|k| Column::at(&[k]))
    .collect()
}

/// One row per class of each run (runs measured with `--per-class`).
pub fn class_rows(runs: &[RunResult]) -> String {
    let labels: Vec<Value> = runs.iter().map(|r| serde_json::json!({ "label": r.label })).collect();
    let classes: Vec<Vec<Value>> =
        runs.iter().map(|r| r.classes.reported_rows().iter().map(to_value).collect()).collect();
    let rows: Vec<Vec<&Value>> = labels
        .iter()
        .zip(&classes)
        .flat_map(|(label, cs)| cs.iter().map(move |c| vec![c, label]))
        .collect();
    table(&class_columns(), &rows, Numbers::AsJson)
}
