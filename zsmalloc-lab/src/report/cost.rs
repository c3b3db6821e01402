//! `zsmalloc cost`: the study as text (corpus, method and machine lines, then the summary,
//! reads and writes tables), as JSON (the report as it is) or as CSV (three tables, `reads`,
//! `writes` and `summary`, each under its own header and told apart by a `table` column).

use serde_json::Value;

use super::csv::{self, to_value, Column, Numbers};
use super::grid::align;
use super::Render;
use crate::cost::{CostReport, Kind};
use crate::error::LabResult;

impl Render for CostReport {
    const COMMAND: &'static str = "cost";

    fn table(&self) -> String {
        table(self)
    }

    fn json(&self) -> LabResult<String> {
        super::json(self)
    }

    fn csv(&self) -> String {
        let reads: Vec<Value> = self.reads.iter().map(to_value).collect();
        let writes: Vec<Value> = self.writes.iter().map(to_value).collect();
        let summary: Vec<Value> = self.summary.rows.iter().map(to_value).collect();
        [
            csv::table(&read_columns(), &one(&reads), Numbers::Plain),
            csv::table(&write_columns(), &one(&writes), Numbers::Plain),
            csv::table(&summary_columns(), &one(&summary), Numbers::Plain),
        ]
        .join("\n")
    }
}

/// Rows that are their own only scope.
fn one(rows: &[Value]) -> Vec<Vec<&Value>> {
    rows.iter().map(|r| vec![r]).collect()
}

fn keys(cols: &mut Vec<Column>, keys: &[&'static str]) {
    cols.extend(keys.iter().map(|k| Column::at(&[k])));
}

/// `reads`: one row per configuration, compressor, mode and kind of object.
fn read_columns() -> Vec<Column> {
    let mut c = vec![Column::constant("table", "reads")];
    keys(
        &mut c,
        &["label", "compressor", "mode", "kind", "spanning", "objects", "reads", "mean_len"],
    );
    for k in ["ns_per_section", "ns_per_decompress", "ns_per_read", "ns_per_read_zswap"] {
        c.extend(Column::spread(k));
    }
    keys(
        &mut c,
        &[
            "minor_faults_per_section",
            "instructions_per_section",
            "instructions_per_read",
            "instructions_scope",
        ],
    );
    c
}

/// `writes`: one row per configuration, compressor and write path.
fn write_columns() -> Vec<Column> {
    let mut c = vec![Column::constant("table", "writes")];
    keys(&mut c, &["label", "compressor", "path", "writes"]);
    c.extend(Column::spread("ns_per_write"));
    keys(&mut c, &["minor_faults_per_write", "instructions_per_write", "instructions_scope"]);
    c
}

/// `summary`: one row per configuration, compressor and mode; the comparison with the base
/// configuration headed `..._vs_base`.
fn summary_columns() -> Vec<Column> {
    let mut c = vec![Column::constant("table", "summary")];
    keys(
        &mut c,
        &[
            "label",
            "compressor",
            "mode",
            "pages",
            "objects",
            "spanning_pct",
            "ns_per_read",
            "ns_per_read_zswap",
            "spanning_extra_ns",
            "spanning_copy_share_pct",
        ],
    );
    c.push(Column::renamed("pages_pct_vs_base", &["vs_base", "pages_pct"]));
    c.push(Column::renamed("ns_per_read_delta_vs_base", &["vs_base", "ns_per_read_delta"]));
    c.push(Column::at(&["vs_base", "spanning_ns_saved_per_read"]));
    c
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or("-".into(), |v| v.to_string())
}

fn spread(s: &crate::timing::Samples) -> String {
    format!("{:.1} [{:.1}..{:.1}]", s.median, s.min, s.max)
}

fn table(r: &CostReport) -> String {
    let e = &r.environment;
    let mut out = String::new();
    for c in &r.corpus {
        out += &format!(
            "corpus: {} — {} pages of {} B, {} same-filled (kept outside the pool), {}{}\n",
            c.source,
            c.input_pages,
            c.page_size,
            c.same_filled_pages,
            c.compressor,
            c.level.map_or(String::new(), |l| format!(" level {l}"))
        );
    }
    out += &format!(
        "method: {}, seeded random order, {} interleaved, batches of {} per clock read; timer overhead {:.0} ns per batch (subtracted)\n",
        e.pools_held(),
        if e.rounds == 1 { "1 round".to_string() } else { format!("{} rounds", e.rounds) },
        e.batch,
        r.timer_overhead_ns.median,
    );
    out += &format!(
        "machine: backing {}, THP enabled={} shmem_enabled={}, load average {} -> {}, instructions: {}\n",
        e.backing,
        opt(e.transparent_hugepage.enabled.as_deref()),
        opt(e.transparent_hugepage.shmem_enabled.as_deref()),
        opt(e.load_average_before),
        opt(e.load_average_after),
        e.instruction_counter,
    );
    for s in &r.skipped {
        out += &format!("skipped: mode {} ({}): {}\n", s.mode, s.label, s.reason);
    }
    let mut refused_said = std::collections::BTreeSet::new();
    for p in r.pools.iter().filter(|p| p.refused_objects > 0) {
        if refused_said.insert((p.label.clone(), p.compressor.clone())) {
            out += &format!(
                "refused: {} ({}) does not store {} objects (lengths from {} up): they are in \
                 no row and not in its pages\n",
                p.label, p.compressor, p.refused_objects, p.huge_class_size
            );
        }
    }
    out += "\nsummary (read = section + decompress, zram consumer; ns, medians weighted by objects):\n";
    let base = r.summary.base.clone().unwrap_or_default();
    let mut rows = vec![vec![
        "config".to_string(),
        "compressor".into(),
        "mode".into(),
        "pages".into(),
        "spanning".into(),
        "ns/read".into(),
        "ns/read zswap".into(),
        "spanning extra ns".into(),
        "spanning share of read CPU".into(),
        format!("pages vs {base}"),
        format!("ns/read vs {base}"),
        "spanning saves ns/read".into(),
    ]];
    for s in &r.summary.rows {
        let vs = s.vs_base.as_ref();
        rows.push(vec![
            s.label.clone(),
            s.compressor.clone(),
            s.mode.clone(),
            s.pages.to_string(),
            format!("{:.1}%", s.spanning_pct),
            format!("{:.1}", s.ns_per_read),
            format!("{:.1}", s.ns_per_read_zswap),
            opt(s.spanning_extra_ns.map(|v| format!("{v:.1}"))),
            opt(s.spanning_copy_share_pct.map(|v| format!("{v:.2}%"))),
            opt(vs.map(|v| format!("{:+.1}%", v.pages_pct))),
            opt(vs.map(|v| format!("{:+.1}", v.ns_per_read_delta))),
            opt(vs.and_then(|v| v.spanning_ns_saved_per_read).map(|v| format!("{v:+.2}"))),
        ]);
    }
    out += &align(&rows, 3);
    out += "\nreads (ns per operation, median [min..max] over rounds):\n";
    let mut rows = vec![vec![
        "config".to_string(),
        "compressor".into(),
        "mode".into(),
        "row".into(),
        "objects".into(),
        "len".into(),
        "section".into(),
        "decompress".into(),
        "read (zram)".into(),
        "read (zswap)".into(),
        "faults/op".into(),
        "instr/section".into(),
        "instr/read".into(),
    ]];
    for x in &r.reads {
        let what = match x.kind {
            Kind::Regular if x.spanning => "spanning".to_string(),
            Kind::Regular => "in place".to_string(),
            k => k.name().to_string(),
        };
        rows.push(vec![
            x.label.clone(),
            x.compressor.clone(),
            x.mode.clone(),
            what,
            x.objects.to_string(),
            format!("{:.0}", x.mean_len),
            spread(&x.ns_per_section),
            spread(&x.ns_per_decompress),
            spread(&x.ns_per_read),
            if x.zswap_copies { spread(&x.ns_per_read_zswap) } else { "= zram".into() },
            format!("{:.3}", x.minor_faults_per_section),
            opt(x.instructions_per_section),
            opt(x.instructions_per_read),
        ]);
    }
    out += &align(&rows, 4);
    out += "\nwrites (ns per write, median [min..max]; each batch freed untimed):\n";
    let mut rows = vec![vec![
        "config".to_string(),
        "compressor".into(),
        "path".into(),
        "ns/write".into(),
        "faults/op".into(),
        "instr/write".into(),
    ]];
    for w in &r.writes {
        rows.push(vec![
            w.label.clone(),
            w.compressor.clone(),
            w.path.to_string(),
            spread(&w.ns_per_write),
            format!("{:.3}", w.minor_faults_per_write),
            opt(w.instructions_per_write),
        ]);
    }
    out += &align(&rows, 3);
    if let Some(h) = &r.handle_memory {
        // The slot table grows in chunks: over few objects one chunk dominates the figure.
        let caveat = if h.objects < STEADY_HANDLE_OBJECTS {
            format!(
                ": too few for a steady figure, as the slot table grows in chunks; a corpus of \
                 {STEADY_HANDLE_OBJECTS} pages or more gives one"
            )
        } else {
            String::new()
        };
        out += &format!(
            "\nhandles: an embedded word is {} B in the caller's record and nothing in the pool; a pool-owned slot is {:.2} B of pool heap per object (over {} objects{caveat})\n",
            h.embedded_bytes_per_object, h.pool_slot_bytes_per_object, h.objects
        );
    }
    out
}

/// Objects from which the handle figure no longer depends on where the last chunk ends.
const STEADY_HANDLE_OBJECTS: u64 = 16_384;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::report::{SummaryRow, VsBase};

    #[test]
    fn summary_columns_are_keys_of_the_json() {
        let row = SummaryRow {
            label: "a".into(),
            compressor: "lz4".into(),
            mode: "copy".into(),
            pages: 10,
            objects: 20,
            spanning_pct: 5.0,
            ns_per_read: 100.5,
            ns_per_read_zswap: 101.0,
            spanning_extra_ns: Some(3.0),
            spanning_copy_share_pct: Some(0.5),
            vs_base: Some(VsBase {
                pages_pct: -1.5,
                ns_per_read_delta: 2.0,
                spanning_ns_saved_per_read: Some(0.25),
            }),
        };
        let v = to_value(&row);
        assert!(csv::unresolved(&summary_columns(), &[vec![&v]]).is_empty());
        assert_eq!(
            csv::table(&summary_columns(), &[vec![&v]], Numbers::Plain).lines().nth(1),
            Some("summary,a,lz4,copy,10,20,5,100.5,101,3,0.5,-1.5,2,0.25")
        );
    }
}
