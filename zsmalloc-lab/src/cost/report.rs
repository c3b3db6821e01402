//! The cost study's summary and its table, JSON and CSV forms.

use serde::Serialize;

use super::{CostReport, Kind, PoolFacts, ReadRow};
use crate::error::{LabError, LabResult};
use crate::report::Format;

/// What a reviewer wants from a cost run, per configuration, compressor and mode.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Summary {
    /// The configuration the others are compared with (the first).
    pub base: Option<String>,
    pub rows: Vec<SummaryRow>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SummaryRow {
    pub label: String,
    pub compressor: String,
    pub mode: String,
    pub pages: u64,
    /// Objects in the pool (each read once per visit).
    pub objects: u64,
    /// Share of the objects that span two pages, percent.
    pub spanning_pct: f64,
    /// Mean CPU time of a read (section + decompress, zram consumer) over every object, ns:
    /// each row's median weighted by its objects.
    pub ns_per_read: f64,
    /// The same for the zswap consumer.
    pub ns_per_read_zswap: f64,
    /// What a spanning section costs beyond an in-place one, ns (medians).
    pub spanning_extra_ns: Option<f64>,
    /// Share of all read + decompress CPU that the spanning sections' extra cost is, percent.
    pub spanning_copy_share_pct: Option<f64>,
    /// Against the base configuration (same compressor and mode).
    pub vs_base: Option<VsBase>,
}

#[derive(Debug, Clone, Serialize)]
pub struct VsBase {
    /// Pages, percent change.
    pub pages_pct: f64,
    /// Measured change of `ns_per_read`, ns (noise included: see the rows' spreads).
    pub ns_per_read_delta: f64,
    /// What fewer spanning objects save per read, modelled from the rows: base's spanning share
    /// × base's spanning extra minus this one's, ns (positive = cheaper).
    pub spanning_ns_saved_per_read: Option<f64>,
}

fn r1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn r2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

struct Agg {
    objects: u64,
    spanning: u64,
    ns_read: f64,
    ns_zswap: f64,
    extra: Option<f64>,
}

fn aggregate(rows: &[&ReadRow]) -> Agg {
    let objects: u64 = rows.iter().map(|r| r.objects).sum();
    let spanning: u64 = rows.iter().filter(|r| r.spanning).map(|r| r.objects).sum();
    let w = |f: &dyn Fn(&ReadRow) -> f64| {
        rows.iter().map(|r| r.objects as f64 * f(r)).sum::<f64>() / objects.max(1) as f64
    };
    let regular = |span: bool| {
        rows.iter()
            .find(|r| r.kind == Kind::Regular && r.spanning == span)
            .map(|r| r.ns_per_section.median)
    };
    let extra = match (regular(true), regular(false)) {
        (Some(s), Some(i)) => Some(s - i),
        _ => None,
    };
    Agg {
        objects,
        spanning,
        ns_read: w(&|r| r.ns_per_read.median),
        ns_zswap: w(&|r| r.ns_per_read_zswap.median),
        extra,
    }
}

/// The summary of `reads` over `pools`.
pub fn summarize(pools: &[PoolFacts], reads: &[ReadRow]) -> Summary {
    let base = pools.first().map(|p| p.label.clone());
    let mut keys: Vec<(String, String, String)> = Vec::new();
    for r in reads {
        let k = (r.label.clone(), r.compressor.clone(), r.mode.clone());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let of = |k: &(String, String, String)| -> Vec<&ReadRow> {
        reads.iter().filter(|r| r.label == k.0 && r.compressor == k.1 && r.mode == k.2).collect()
    };
    let pages_of = |label: &str, comp: &str| {
        pools.iter().find(|p| p.label == label && p.compressor == comp).map_or(0, |p| p.pages)
    };
    let mut rows = Vec::new();
    for k in &keys {
        let a = aggregate(&of(k));
        let pages = pages_of(&k.0, &k.1);
        let share = |a: &Agg| a.spanning as f64 / a.objects.max(1) as f64;
        let vs_base = base.as_ref().filter(|b| **b != k.0).and_then(|b| {
            let bk = (b.clone(), k.1.clone(), k.2.clone());
            let ba = aggregate(&of(&bk));
            let bp = pages_of(b, &k.1);
            (ba.objects > 0 && bp > 0).then(|| VsBase {
                pages_pct: r1(100.0 * (pages as f64 - bp as f64) / bp as f64),
                ns_per_read_delta: r2(a.ns_read - ba.ns_read),
                spanning_ns_saved_per_read: match (ba.extra, a.extra) {
                    (Some(be), Some(e)) => Some(r2(share(&ba) * be - share(&a) * e)),
                    _ => None,
                },
            })
        });
        rows.push(SummaryRow {
            label: k.0.clone(),
            compressor: k.1.clone(),
            mode: k.2.clone(),
            pages,
            objects: a.objects,
            spanning_pct: r1(100.0 * share(&a)),
            ns_per_read: r2(a.ns_read),
            ns_per_read_zswap: r2(a.ns_zswap),
            spanning_extra_ns: a.extra.map(r2),
            spanning_copy_share_pct: a
                .extra
                .filter(|_| a.ns_read > 0.0)
                .map(|e| r2(100.0 * a.spanning as f64 * e / (a.objects as f64 * a.ns_read))),
            vs_base,
        });
    }
    Summary { base, rows }
}

/// The report in `format` (table, json or csv).
pub fn render(r: &CostReport, format: Format) -> LabResult<String> {
    match format {
        Format::Json => serde_json::to_string_pretty(r)
            .map(|s| s + "\n")
            .map_err(|e| LabError::runtime(format!("JSON: {e}"))),
        Format::Csv => Ok(csv(r)),
        Format::Table => Ok(table(r)),
        _ => Err(LabError::usage("cost prints --format table, json or csv")),
    }
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or("-".into(), |v| v.to_string())
}

fn pad(rows: &[Vec<String>], right_from: usize) -> String {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let w: Vec<usize> = (0..n)
        .map(|i| rows.iter().filter_map(|r| r.get(i)).map(|c| c.chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in rows {
        let cells: Vec<String> =
            r.iter()
                .enumerate()
                .map(|(i, c)| {
                    if i < right_from {
                        format!("{c:<0$}", w[i])
                    } else {
                        format!("{c:>0$}", w[i])
                    }
                })
                .collect();
        out += cells.join("  ").trim_end();
        out.push('\n');
    }
    out
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
        "method: {} (last-level cache {}), seeded random order, {} rounds interleaved, batches of {} per clock read; timer overhead {:.0} ns per batch (subtracted)\n",
        e.pools_held(),
        e.last_level_cache_bytes.map_or("unknown".into(), |b| format!("{} MiB", b >> 20)),
        e.rounds,
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
    out += &pad(&rows, 3);
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
    out += &pad(&rows, 4);
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
    out += &pad(&rows, 3);
    if let Some(h) = &r.handle_memory {
        out += &format!(
            "\nhandles: an embedded word is {} B in the caller's record and nothing in the pool; a pool-owned slot is {:.2} B of pool heap per object (over {} objects)\n",
            h.embedded_bytes_per_object, h.pool_slot_bytes_per_object, h.objects
        );
    }
    out
}

/// A CSV field: quoted when it holds a comma or a quote (sweep labels do).
fn q(s: &str) -> String {
    if s.contains(',') || s.contains('"') {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn csv(r: &CostReport) -> String {
    let s3 = |s: &crate::timing::Samples| format!("{},{},{}", s.min, s.median, s.max);
    let mut out = String::from(
        "table,label,compressor,mode,kind,spanning,objects,reads,mean_len,ns_per_section_min,ns_per_section_median,ns_per_section_max,ns_per_decompress_min,ns_per_decompress_median,ns_per_decompress_max,ns_per_read_min,ns_per_read_median,ns_per_read_max,ns_per_read_zswap_min,ns_per_read_zswap_median,ns_per_read_zswap_max,minor_faults_per_section,instructions_per_section,instructions_per_read,instructions_scope\n",
    );
    for x in &r.reads {
        out += &format!(
            "reads,{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
            q(&x.label),
            x.compressor,
            x.mode,
            x.kind.name(),
            x.spanning,
            x.objects,
            x.reads,
            x.mean_len,
            s3(&x.ns_per_section),
            s3(&x.ns_per_decompress),
            s3(&x.ns_per_read),
            s3(&x.ns_per_read_zswap),
            x.minor_faults_per_section,
            x.instructions_per_section.map_or(String::new(), |v| v.to_string()),
            x.instructions_per_read.map_or(String::new(), |v| v.to_string()),
            x.instructions_scope.unwrap_or(""),
        );
    }
    out += "\ntable,label,compressor,path,writes,ns_per_write_min,ns_per_write_median,ns_per_write_max,minor_faults_per_write,instructions_per_write,instructions_scope\n";
    for w in &r.writes {
        out += &format!(
            "writes,{},{},{},{},{},{},{},{}\n",
            q(&w.label),
            w.compressor,
            w.path,
            w.writes,
            s3(&w.ns_per_write),
            w.minor_faults_per_write,
            w.instructions_per_write.map_or(String::new(), |v| v.to_string()),
            w.instructions_scope.unwrap_or(""),
        );
    }
    out += "\ntable,label,compressor,mode,pages,objects,spanning_pct,ns_per_read,ns_per_read_zswap,spanning_extra_ns,spanning_copy_share_pct,pages_pct_vs_base,ns_per_read_delta_vs_base,spanning_ns_saved_per_read\n";
    for s in &r.summary.rows {
        let vs = s.vs_base.as_ref();
        out += &format!(
            "summary,{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
            q(&s.label),
            s.compressor,
            s.mode,
            s.pages,
            s.objects,
            s.spanning_pct,
            s.ns_per_read,
            s.ns_per_read_zswap,
            s.spanning_extra_ns.map_or(String::new(), |v| v.to_string()),
            s.spanning_copy_share_pct.map_or(String::new(), |v| v.to_string()),
            vs.map_or(String::new(), |v| v.pages_pct.to_string()),
            vs.map_or(String::new(), |v| v.ns_per_read_delta.to_string()),
            vs.and_then(|v| v.spanning_ns_saved_per_read).map_or(String::new(), |v| v.to_string()),
        );
    }
    out
}
