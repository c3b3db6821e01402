//! `zsmalloc cost`: the study as text (corpus, method and machine lines, then the summary,
//! reads and writes tables), as JSON (the report as it is) or as CSV (three tables, `reads`,
//! `writes` and `summary`, each under its own header and told apart by a `table` column).

use serde_json::Value;

use super::csv::{self, to_value, Column, Numbers};
use super::grid::{fit, wrap};
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
            "copies",
            "pages_per_copy",
            "objects",
            "spanning_pct",
            "ns_per_read",
            "ns_per_read_zswap",
            "spanning_extra_ns",
            "spanning_extra_within_noise",
            "spanning_copy_share_pct",
        ],
    );
    c.push(Column::renamed("pages_pct_vs_base", &["vs_base", "pages_pct"]));
    c.push(Column::renamed("ns_per_read_delta_vs_base", &["vs_base", "ns_per_read_delta"]));
    c.push(Column::at(&["vs_base", "ns_per_read_delta_within_noise"]));
    c.push(Column::at(&["vs_base", "spanning_ns_saved_per_read"]));
    c.push(Column::at(&["vs_base", "spanning_ns_saved_within_noise"]));
    c
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or("-".into(), |v| v.to_string())
}

/// A figure over rounds, in ns: `274` from one round (or rounds that agree to the ns), else
/// `274 [266..290]` (median [min..max]): a spread only where there is one.
fn spread(s: &crate::timing::Samples) -> String {
    let (min, med, max) = (s.min.round(), s.median.round(), s.max.round());
    if s.n <= 1 || min == max {
        format!("{med:.0}")
    } else {
        format!("{med:.0} [{min:.0}..{max:.0}]")
    }
}

/// `value`, and ` noise` when it cannot be told from nothing.
fn judged(value: String, within_noise: Option<bool>) -> String {
    if within_noise == Some(true) {
        format!("{value} noise")
    } else {
        value
    }
}

/// What the spreads rest on, said once above the tables.
fn rounds_note(rounds: usize) -> String {
    if rounds <= 1 {
        "one round: each figure is a single measurement, with no spread to tell a difference \
         from noise (--repeat 3 or more gives one)"
            .to_string()
    } else {
        format!(
            "{rounds} rounds, interleaved: figures are the median, [min..max] over the rounds \
             where they differ; \"noise\" marks a difference inside those ranges"
        )
    }
}

fn table(r: &CostReport) -> String {
    let e = &r.environment;
    let mut out = String::new();
    for c in &r.corpus {
        out += &wrap(&format!(
            "corpus: {} — {} pages of {} B, {} same-filled (kept outside the pool), {}{}",
            c.source,
            c.input_pages,
            c.page_size,
            c.same_filled_pages,
            c.compressor,
            c.level.map_or(String::new(), |l| format!(" level {l}"))
        ));
    }
    out += &wrap(&format!(
        "method: {}, seeded random order, {} interleaved, batches of {} per clock read; timer overhead {:.0} ns per batch (subtracted)",
        e.pools_held(),
        if e.rounds == 1 { "1 round".to_string() } else { format!("{} rounds", e.rounds) },
        e.batch,
        r.timer_overhead_ns.median,
    ));
    out += &wrap(&format!(
        "machine: backing {}, THP enabled={} shmem_enabled={}, load average {} -> {}, instructions: {}",
        e.backing,
        opt(e.transparent_hugepage.enabled.as_deref()),
        opt(e.transparent_hugepage.shmem_enabled.as_deref()),
        opt(e.load_average_before),
        opt(e.load_average_after),
        e.instruction_counter,
    ));
    for s in &r.skipped {
        out += &wrap(&format!("skipped: mode {} ({}): {}", s.mode, s.label, s.reason));
    }
    let mut refused_said = std::collections::BTreeSet::new();
    for p in r.pools.iter().filter(|p| p.refused_objects > 0) {
        if refused_said.insert((p.label.clone(), p.compressor.clone())) {
            out += &wrap(&format!(
                "refused: {} ({}) does not store {} objects (lengths from {} up): they are in \
                 no row and not in its pages",
                p.label, p.compressor, p.refused_objects, p.huge_class_size
            ));
        }
    }
    out += &wrap(&rounds_note(e.rounds));
    out += &summary(r);
    out += &reads(r);
    out += "\nwrites (ns per write; each batch freed untimed):\n";
    let counted = r.writes.iter().any(|w| w.instructions_per_write.is_some());
    let mut head =
        vec!["config".to_string(), "compressor".into(), "path".into(), "ns/write".into()];
    head.push("faults/op".into());
    if counted {
        head.push("instr/write".into());
    }
    let mut rows = vec![head];
    for w in &r.writes {
        let mut row = vec![
            w.label.clone(),
            w.compressor.clone(),
            w.path.to_string(),
            spread(&w.ns_per_write),
            format!("{:.3}", w.minor_faults_per_write),
        ];
        if counted {
            row.push(opt(w.instructions_per_write));
        }
        rows.push(row);
    }
    out += &fit(&rows, 3, 3);
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
        out += "\n";
        out += &wrap(&format!(
            "handles: an embedded word is {} B in the caller's record and nothing in the pool; a pool-owned slot is {:.2} B of pool heap per object (over {} objects{caveat})",
            h.embedded_bytes_per_object, h.pool_slot_bytes_per_object, h.objects
        ));
    }
    out
}

/// The summary, and each configuration against the base in a table of its own.
fn summary(r: &CostReport) -> String {
    let mut out = String::from("\nsummary (ns per read, medians weighted by objects):\n");
    let head = [
        "config",
        "compressor",
        "mode",
        "copies",
        "pages/copy",
        "spanning",
        "ns/read",
        "zswap",
        "extra",
    ];
    let mut rows = vec![head.iter().map(|h| h.to_string()).chain(["share".to_string()]).collect()];
    for s in &r.summary.rows {
        let noise = s.spanning_extra_within_noise;
        rows.push(vec![
            s.label.clone(),
            s.compressor.clone(),
            s.mode.clone(),
            s.copies.to_string(),
            format!("{:.1}", s.pages_per_copy),
            format!("{:.1}%", s.spanning_pct),
            format!("{:.0}", s.ns_per_read),
            format!("{:.0}", s.ns_per_read_zswap),
            judged(opt(s.spanning_extra_ns.map(|v| format!("{v:.0}"))), noise),
            judged(opt(s.spanning_copy_share_pct.map(|v| format!("{v:.2}%"))), noise),
        ]);
    }
    out += &fit(&rows, 3, 3);
    out += &wrap(
        "copies: of the corpus in each pool (the same for one compressor); pages/copy: pool pages \
         per copy, which compare between compressors; ns/read: read section + decompress into a \
         page (the zram consumer); zswap: the same for the zswap consumer; extra: what a spanning section costs beyond an in-place one, ns; \
         share: the spanning objects' extra as a share of all read CPU",
    );
    let Some(base) = r.summary.base.as_deref() else { return out };
    let against: Vec<_> = r.summary.rows.iter().filter(|s| s.vs_base.is_some()).collect();
    if against.is_empty() {
        return out;
    }
    out += &format!("\nagainst {base} (same compressor and mode):\n");
    let mut rows =
        vec![["config", "compressor", "mode", "pages", "ns/read", "spanning saves ns/read"]
            .iter()
            .map(|h| h.to_string())
            .collect::<Vec<_>>()];
    for s in against {
        let Some(v) = s.vs_base.as_ref() else { continue };
        rows.push(vec![
            s.label.clone(),
            s.compressor.clone(),
            s.mode.clone(),
            format!("{:+.1}%", v.pages_pct),
            judged(format!("{:+.0}", v.ns_per_read_delta), v.ns_per_read_delta_within_noise),
            judged(
                opt(v.spanning_ns_saved_per_read.map(|x| format!("{x:+.2}"))),
                v.spanning_ns_saved_within_noise,
            ),
        ]);
    }
    out += &fit(&rows, 3, 3);
    out += &wrap(
        "ns/read: the measured change; spanning saves: fewer spanning objects times the measured \
         extra, modelled from the rows (positive: cheaper)",
    );
    out
}

fn e_apart(r: &CostReport) -> bool {
    r.environment.modes_apart
}

/// The reads table: per configuration, compressor, mode and row; columns that hold nothing in
/// this run (instructions without a counter) left out, and split to fit the terminal.
fn reads(r: &CostReport) -> String {
    let mut out = String::from("\nreads (ns per operation):\n");
    let counted = r.reads.iter().any(|x| x.instructions_per_section.is_some());
    let mut head: Vec<String> = ["config", "compressor", "mode", "row", "objects", "len"]
        .iter()
        .map(|h| h.to_string())
        .collect();
    head.extend(["section", "decompress", "read", "zswap", "faults/op"].map(String::from));
    if counted {
        head.extend(["instr/section", "instr/read"].map(String::from));
    }
    let mut rows = vec![head];
    for x in &r.reads {
        let what = match x.kind {
            Kind::Regular if x.spanning => "spanning".to_string(),
            Kind::Regular => "in place".to_string(),
            k => k.name().to_string(),
        };
        let mut row = vec![
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
        ];
        if counted {
            row.push(opt(x.instructions_per_section));
            row.push(opt(x.instructions_per_read));
        }
        rows.push(row);
    }
    out += &fit(&rows, 4, 4);
    out += &wrap(
        "section: read begin + end; read: section + decompress into a page (zram); zswap: the \
         zswap consumer where it copies the object first (= zram where it does not); faults/op: \
         minor faults per section",
    );
    if !r.summary.pool_spread.is_empty() {
        let each: Vec<String> = r
            .summary
            .pool_spread
            .iter()
            .map(|p| {
                let [lo, hi] = p.in_place_section_ns;
                format!("{} {} {lo:.0}..{hi:.0} ns", p.label, p.compressor)
            })
            .collect();
        out += &wrap(&format!(
            "pools: the in-place section is the same code in {}, each read on a pool of its own{}; \
             its medians there span {}: a difference between those modes inside that range is the \
             pools', not the mode's",
            r.summary.pool_spread[0].modes.join(", "),
            if e_apart(r) { ", in a phase of its own" } else { ", in the same rounds" },
            each.join(", ")
        ));
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
            copies: 4,
            pages_per_copy: 2.5,
            objects: 20,
            spanning_pct: 5.0,
            ns_per_read: 100.5,
            ns_per_read_zswap: 101.0,
            spanning_extra_ns: Some(3.0),
            spanning_extra_within_noise: Some(false),
            spanning_copy_share_pct: Some(0.5),
            vs_base: Some(VsBase {
                pages_pct: -1.5,
                ns_per_read_delta: 2.0,
                ns_per_read_delta_within_noise: Some(true),
                spanning_ns_saved_per_read: Some(0.25),
                spanning_ns_saved_within_noise: Some(false),
            }),
        };
        let v = to_value(&row);
        assert!(csv::unresolved(&summary_columns(), &[vec![&v]]).is_empty());
        assert_eq!(
            csv::table(&summary_columns(), &[vec![&v]], Numbers::Plain).lines().nth(1),
            Some("summary,a,lz4,copy,10,4,2.5,20,5,100.5,101,3,false,0.5,-1.5,2,true,0.25,false")
        );
    }

    #[test]
    fn a_single_round_shows_a_value_and_a_spread_only_where_there_is_one() {
        use crate::timing::Samples;
        let one = Samples { min: 273.6, median: 273.6, max: 273.6, n: 1 };
        assert_eq!(spread(&one), "274");
        let agreeing = Samples { min: 273.6, median: 273.7, max: 273.8, n: 3 };
        assert_eq!(spread(&agreeing), "274");
        let three = Samples { min: 266.0, median: 273.6, max: 290.2, n: 3 };
        assert_eq!(spread(&three), "274 [266..290]");
        assert_eq!(judged("-201".into(), Some(true)), "-201 noise");
        assert_eq!(judged("750".into(), Some(false)), "750");
        assert_eq!(judged("750".into(), None), "750");
        assert!(rounds_note(1).contains("no spread"));
    }
}
