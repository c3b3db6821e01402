//! Tables for people: a run as `field value` lines (preceded by the `zsmalloc_test` module's
//! lines for the kernel-test workload); a comparison as the RFC's blocks, one row per
//! configuration, and the deltas against the first.

use crate::compare::Comparison;
use crate::report::grid::with_head as grid;
use crate::result::{delta_str, density_str, permille_str, RunResult};
use crate::timing::Samples;

fn config_line(r: &RunResult) -> String {
    r.config.summary()
}

fn fields(r: &RunResult) -> Vec<(&'static str, String)> {
    let mut v = vec![
        ("objects", r.objects.to_string()),
        ("bytes_stored", r.bytes_stored.to_string()),
        ("pages", r.pages.to_string()),
        ("pages_peak", r.pages_peak.to_string()),
        ("utilization_pct", permille_str(r.utilization_permille)),
        ("density", density_str(r.density)),
        ("utilization_pct_peak", format!("{:.1}", r.utilization_pct_peak)),
        ("density_peak", density_str(r.density_peak)),
        ("reads", r.reads.to_string()),
        ("reads_spanning", r.reads_spanning.to_string()),
        ("read_copy_bytes", r.read_copy_bytes.to_string()),
        ("huge_class_size", r.huge_class_size.to_string()),
        ("pages_compacted", r.pages_compacted.to_string()),
    ];
    if r.objs_moved > 0 {
        v.push(("objs_moved", r.objs_moved.to_string()));
    }
    if r.workload.name == "dist" || r.workload.name == "pages" {
        v.push(("same_pages", r.same_pages.to_string()));
    }
    if r.store_failures > 0 {
        v.push(("store_failures", r.store_failures.to_string()));
    }
    if r.op_errors > 0 {
        v.push(("op_errors", r.op_errors.to_string()));
    }
    if let Some(d) = &r.dist {
        v.push((
            "clipped_draws",
            format!(
                "{} of {} raised to --min-len {}, {} lowered to the page",
                d.clipped_min, d.draws, d.min_len, d.clipped_page
            ),
        ));
    }
    if let Some(c) = &r.corpus {
        v.push(("input_pages", c.input_pages.to_string()));
        v.push(("same_filled_pages", c.same_filled_pages.to_string()));
        v.push(("incompressible_pages", c.incompressible_pages.to_string()));
        v.push(("compressed_pages", c.compressed_pages.to_string()));
        v.push(("compression_ratio", format!("{:.3}", c.compression_ratio)));
        v.push(("effective_compression_ratio", density_str(c.effective_compression_ratio)));
        if let Some(t) = c.compress_time_s {
            v.push(("compress_time_s", format!("{t:.3}")));
        }
        if let Some(t) = c.read_time_s {
            v.push(("read_time_s", format!("{t:.3}")));
        }
    }
    if let Some(t) = &r.cpu_time_s {
        v.push(("cpu_time_s", cpu_cell(t, r.repeat)));
    }
    if let Some(t) = r.wall_time_s {
        v.push(("wall_time_s", format!("{t:.3} (wall clock, whole workload)")));
    }
    v
}

/// `0.412 [0.405..0.431] (3 runs)`: median [min..max] of the pool calls' CPU time.
fn cpu_cell(t: &Samples, repeat: Option<usize>) -> String {
    let n = repeat.unwrap_or(t.n);
    if n > 1 {
        format!("{} ({n} runs)", t.display())
    } else {
        format!("{:.3} (1 run)", t.median)
    }
}

fn kernel_block(r: &RunResult, out: &mut String) {
    if let Some(k) = &r.kernel_test {
        for l in k.lines() {
            *out += &l;
            *out += "\n";
        }
    }
}

/// Per-class rows of a run (classes holding zspages only).
pub fn classes(r: &RunResult) -> String {
    let head = [
        "index",
        "size",
        "chain",
        "objs",
        "huge",
        "obj_allocated",
        "obj_used",
        "pages_used",
        "freeable",
        "spanning/zspage",
        "tail_waste",
        "worst_merge_waste",
        "merge_waste",
        "reads_spanning",
        "bytes_stored",
    ];
    let rows: Vec<Vec<String>> = r
        .classes
        .iter()
        .filter(|row| row.stats.obj_allocated > 0)
        .map(|row| {
            let c = &row.stats;
            vec![
                c.index.to_string(),
                c.size.to_string(),
                c.pages_per_zspage.to_string(),
                c.objs_per_zspage.to_string(),
                if c.huge { "yes" } else { "" }.to_string(),
                c.obj_allocated.to_string(),
                c.obj_used.to_string(),
                c.pages_used.to_string(),
                c.freeable.to_string(),
                c.spanning_per_zspage.to_string(),
                c.tail_waste.to_string(),
                c.worst_merge_waste.to_string(),
                row.merge_waste.to_string(),
                c.reads_spanning.to_string(),
                c.bytes_stored.to_string(),
            ]
        })
        .collect();
    format!("classes of {} (those holding zspages):\n{}", r.label, grid(&head, &rows, 0))
}

/// The line that says a run's pools kept no bytes.
const PLACEMENT_ONLY_LINE: &str =
    "payload   none: placement only (lengths and order; nothing verified or timed)\n";

pub fn run(r: &RunResult) -> String {
    let mut out = format!("workload  {}\nconfig    {}\n", r.workload.summary, config_line(r));
    if !r.payload {
        out += PLACEMENT_ONLY_LINE;
    }
    out += "\n";
    if r.kernel_test.is_some() {
        kernel_block(r, &mut out);
        out += "\n";
    }
    let f = fields(r);
    let w = f.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    for (k, v) in f {
        out += &format!("{k:<w$}  {v}\n");
    }
    if r.classes.reported {
        out += "\n";
        out += &classes(r);
    }
    out
}

/// One line per config whose objects differ from the base's: how many, and how many of its
/// stores were refused, so that its page deltas are read as over other objects.
fn objects_note(base: &RunResult, runs: &[RunResult]) -> String {
    let mut out = String::new();
    for r in runs.iter().filter(|r| r.objects != base.objects) {
        let (more_or_fewer, n) = if r.objects < base.objects {
            ("fewer", base.objects - r.objects)
        } else {
            ("more", r.objects - base.objects)
        };
        out += &format!(
            "objects: {} stored {} {more_or_fewer} objects than {} ({} vs {}; {} stores refused \
             vs {}): its deltas compare different contents\n",
            r.label,
            thousands(n),
            base.label,
            thousands(r.objects),
            thousands(base.objects),
            thousands(r.store_failures),
            thousands(base.store_failures),
        );
    }
    out
}

/// `8449` as `8,449`: counts in a sentence.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

pub fn comparison(c: &Comparison) -> String {
    let mut out = format!("workload  {}\n", c.workload.summary);
    if c.runs.iter().any(|r| !r.payload) {
        out += PLACEMENT_ONLY_LINE;
    }
    out += "\n";
    // The zsmalloc_test blocks, as the RFC "zsmalloc: size-classes chain-length tunings"
    // (January 2026) prints them; not for sweeps, where the table says it all.
    if c.sweep_keys.is_empty() && c.runs.iter().any(|r| r.kernel_test.is_some()) {
        for r in &c.runs {
            let title = format!("{} ({})", r.label, config_line(r));
            out += &format!("{title}\n{}\n", "=".repeat(title.len()));
            kernel_block(r, &mut out);
            out += "\n";
        }
    }
    let timed = c.runs.iter().all(|r| r.cpu_time_s.is_some());
    let repeats = c.runs.iter().filter_map(|r| r.cpu_time_s.map(|t| t.n)).min().unwrap_or(0);
    let mut head = vec![
        "config",
        "objects",
        "bytes_stored",
        "pages",
        "pages_peak",
        "utilization_pct",
        "reads_spanning",
        "read_copy_bytes",
        "density",
        "huge_class_size",
        "pages_compacted",
    ];
    let with_same = c.runs.iter().any(|r| r.workload.name == "dist" || r.workload.name == "pages");
    if with_same {
        head.push("same_pages");
    }
    let failures = c.runs.iter().any(|r| r.store_failures > 0);
    if failures {
        head.push("store_failures");
    }
    if timed {
        // One run each is no basis for a ratio: the header says what the figures rest on.
        head.push(if repeats > 1 { "cpu_time_s [min..max]" } else { "cpu_time_s (1 run)" });
        head.push("wall_time_s");
    }
    let rows: Vec<Vec<String>> = c
        .runs
        .iter()
        .map(|r| {
            let mut row = vec![
                r.label.clone(),
                r.objects.to_string(),
                r.bytes_stored.to_string(),
                r.pages.to_string(),
                r.pages_peak.to_string(),
                permille_str(r.utilization_permille),
                r.reads_spanning.to_string(),
                r.read_copy_bytes.to_string(),
                density_str(r.density),
                r.huge_class_size.to_string(),
                r.pages_compacted.to_string(),
            ];
            if with_same {
                row.push(r.same_pages.to_string());
            }
            if failures {
                row.push(r.store_failures.to_string());
            }
            if let (true, Some(t)) = (timed, &r.cpu_time_s) {
                row.push(if t.n > 1 { t.display() } else { format!("{:.3}", t.median) });
                row.push(r.wall_time_s.map_or_else(String::new, |w| format!("{w:.3}")));
            }
            row
        })
        .collect();
    out += &grid(&head, &rows, 1);
    if timed {
        out += &if repeats > 1 {
            format!(
                "cpu_time_s: thread CPU time of the pool calls, median [min..max] of {repeats} \
                 runs each, one at a time, interleaved; wall_time_s: wall clock of the whole \
                 workload (lab work included), median\n"
            )
        } else {
            "cpu_time_s: thread CPU time of the pool calls, one run each: too few to compare \
             them (--repeat 3 or more for a spread and a delta); wall_time_s: wall clock of the \
             whole workload (lab work included)\n"
                .to_string()
        };
    }
    if let Some(base) = c.runs.first() {
        if c.runs.len() > 1 {
            out += &format!("\ndeltas vs {} (percent, rounded to one decimal):\n", base.label);
            // A page delta between configs that stored different objects is not a like-for-like
            // saving: the objects' own delta stands first then, and a note says why they differ.
            let objects_differ = c.runs[1..].iter().any(|r| r.objects != base.objects);
            let mut dhead = vec!["config"];
            if objects_differ {
                dhead.push("objects");
            }
            dhead.extend(["pages", "pages_peak", "reads_spanning", "read_copy_bytes", "density"]);
            let counted = dhead.len();
            let spread = timed && repeats > 1;
            if spread {
                dhead.push("cpu_time [spread]");
            }
            let drows: Vec<Vec<String>> = c.runs[1..]
                .iter()
                .map(|r| {
                    let d = r.deltas(base);
                    let mut row = vec![r.label.clone()];
                    for name in &dhead[1..counted] {
                        let t = d.iter().find(|(n, _)| n == name).and_then(|(_, t)| *t);
                        row.push(delta_str(t));
                    }
                    if spread {
                        row.push(r.cpu_delta(base).map_or_else(|| "n/a".into(), |d| d.display()));
                    }
                    row
                })
                .collect();
            out += &grid(&dhead, &drows, 1);
            if objects_differ {
                out += &objects_note(base, &c.runs[1..]);
            }
            if spread {
                out += "cpu_time: change of the median; [spread]: the smallest and largest change \
                        the runs allow; within noise: the two ranges overlap\n";
            } else if timed {
                out += "(no CPU-time delta: one run has no spread; use --repeat 3 or more)\n";
            }
        }
    }
    if c.runs.iter().any(|r| r.classes.reported) {
        for r in &c.runs {
            out += "\n";
            out += &classes(r);
        }
    }
    out
}
