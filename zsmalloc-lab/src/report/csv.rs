//! CSV: a header and one row per run (deltas against the first for comparisons), or one row per
//! class with `--per-class`.

use crate::error::{LabError, LabResult};
use crate::result::{delta_value, per_class, permille_str, RunResult};
use crate::timeline::Sample;

/// A CSV field, quoted when it holds a comma, quote or newline.
pub fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// A JSON scalar as a CSV cell (null: empty).
fn cell(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => String::new(),
        serde_json::Value::String(s) => field(s),
        other => other.to_string(),
    }
}

/// A run's columns, flattened from its JSON form so the names match: `config`'s keys as they
/// are, `workload` as its one-line summary, other objects as `object_key` (`cpu_time_s_min`,
/// `corpus_compression_ratio`, `dist_clipped_min`, ...); per-class rows are left out.
fn columns(r: &RunResult) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let v = serde_json::to_value(r).unwrap_or_default();
    let Some(obj) = v.as_object() else { return out };
    for (k, v) in obj {
        match (k.as_str(), v) {
            ("classes", _) => {}
            ("workload", _) => out.push(("workload".into(), field(&r.workload.summary))),
            ("config", serde_json::Value::Object(m)) => {
                for (ck, cv) in m {
                    out.push((ck.clone(), cell(cv)));
                }
            }
            (_, serde_json::Value::Object(m)) => {
                for (ik, iv) in m {
                    if !iv.is_object() && !iv.is_array() {
                        out.push((format!("{k}_{ik}"), cell(iv)));
                    }
                }
            }
            (_, serde_json::Value::Array(_)) => {}
            _ => out.push((k.clone(), cell(v))),
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

/// One row per class of each run.
pub fn class_rows(runs: &[RunResult]) -> String {
    let mut out = String::from(
        "label,index,size,pages_per_zspage,objs_per_zspage,huge,obj_allocated,obj_used,pages_used,freeable,spanning_per_zspage,tail_waste,worst_merge_waste,first_index,last_index,bytes_stored,merge_waste,spanning_reads\n",
    );
    for r in runs {
        for c in &r.class_stats {
            let merge = per_class(&r.class_merge_waste, c.index);
            let spanning = per_class(&r.class_spanning_reads, c.index);
            out += &format!(
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
                field(&r.label),
                c.index,
                c.size,
                c.pages_per_zspage,
                c.objs_per_zspage,
                c.huge,
                c.obj_allocated,
                c.obj_used,
                c.pages_used,
                c.freeable,
                c.spanning_per_zspage,
                c.tail_waste,
                c.worst_merge_waste,
                c.first_index,
                c.last_index,
                c.bytes_stored,
                merge,
                spanning
            );
        }
    }
    out
}

/// Writes the samples of each labelled run as one CSV file.
pub fn write_timeline(path: &std::path::Path, runs: &[(&str, &[Sample])]) -> LabResult<()> {
    let mut out = String::from("label,op,phase,objects,bytes_stored,pages,utilization_pct\n");
    for (label, samples) in runs {
        for s in samples.iter() {
            out += &format!(
                "{},{},{},{},{},{},{}\n",
                field(label),
                s.op,
                field(&s.phase),
                s.objects,
                s.bytes_stored,
                s.pages,
                permille_str(s.utilization_permille)
            );
        }
    }
    std::fs::File::create(path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, out.as_bytes()))
        .map_err(|e| LabError::io("write", path, &e))
}

#[cfg(test)]
mod tests {
    #[test]
    fn fields_are_quoted_when_needed() {
        assert_eq!(super::field("a,b"), "\"a,b\"");
        assert_eq!(super::field("say \"x\""), "\"say \"\"x\"\"\"");
        assert_eq!(super::field("x\"y,"), "\"x\"\"y,\"");
        assert_eq!(super::field("plain"), "plain");
    }
}
