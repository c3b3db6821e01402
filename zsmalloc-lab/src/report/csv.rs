//! CSV: a header and one row per run (deltas against the first for comparisons), or one row per
//! class with `--per-class`.

use crate::result::{delta_value, RunResult};

/// A CSV field, quoted when it holds a comma, quote or newline.
pub fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

/// One row per run; with `base`, delta columns (percent, one decimal) against it.
pub fn runs(runs: &[RunResult], base: Option<&RunResult>) -> String {
    let mut head = vec![
        "label",
        "page_size",
        "chain_size",
        "class_delta",
        "chain_policy",
        "read_mode",
        "mem_limit_pages",
        "workload",
        "objects",
        "bytes_stored",
        "pages",
        "pages_peak",
        "utilization_pct",
        "reads",
        "reads_spanning",
        "read_copy_bytes",
        "writes_spanning",
        "huge_class_size",
        "pages_compacted",
        "objs_moved",
        "stores",
        "frees",
        "store_failures",
        "op_errors",
        "same_pages",
        "wall_time_s",
    ]
    .join(",");
    if base.is_some() {
        head += ",objects_delta_pct,pages_delta_pct,pages_peak_delta_pct,reads_spanning_delta_pct,read_copy_bytes_delta_pct,wall_time_s_delta_pct";
    }
    let mut out = head + "\n";
    for r in runs {
        let c = &r.config;
        let mut row = vec![
            field(&r.label),
            c.page_size.to_string(),
            c.chain_size.to_string(),
            c.class_delta.to_string(),
            field(&c.chain_policy),
            field(&c.read_mode),
            c.mem_limit_pages.to_string(),
            field(&r.workload.summary),
            r.objects.to_string(),
            r.bytes_stored.to_string(),
            r.pages.to_string(),
            r.pages_peak.to_string(),
            crate::result::permille_str(r.utilization_permille),
            r.reads.to_string(),
            r.reads_spanning.to_string(),
            r.read_copy_bytes.to_string(),
            r.writes_spanning.to_string(),
            r.huge_class_size.to_string(),
            r.pages_compacted.to_string(),
            r.objs_moved.to_string(),
            r.stores.to_string(),
            r.frees.to_string(),
            r.store_failures.to_string(),
            r.op_errors.to_string(),
            r.same_pages.to_string(),
            opt(r.wall_time_s),
        ];
        if let Some(b) = base {
            let d = r.deltas(b);
            let get = |name: &str| {
                d.iter()
                    .find(|(n, _)| *n == name)
                    .and_then(|(_, t)| delta_value(*t))
                    .map(|v| format!("{v:.1}"))
                    .unwrap_or_default()
            };
            for name in [
                "objects",
                "pages",
                "pages_peak",
                "reads_spanning",
                "read_copy_bytes",
                "wall_time_s",
            ] {
                row.push(get(name));
            }
        }
        out += &row.join(",");
        out += "\n";
    }
    out
}

/// One row per class of each run.
pub fn class_rows(runs: &[RunResult]) -> String {
    let mut out = String::from(
        "label,index,size,pages_per_zspage,objs_per_zspage,huge,obj_allocated,obj_used,pages_used,freeable,spanning_per_zspage,tail_waste,worst_merge_waste,first_index,bytes_stored\n",
    );
    for r in runs {
        for c in &r.class_stats {
            out += &format!(
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
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
                c.bytes_stored
            );
        }
    }
    out
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
