//! The reports of `zsmalloc kernel check`, `capture`, `cost` and `import`: a table for people
//! and JSON for tools (no CSV: phases, a written trace, read-time bands and tallies are no
//! rows worth a spreadsheet).

use super::grid::with_head;
use super::{Format, Render};
use crate::error::LabResult;
use crate::kernel::capture::CaptureReport;
use crate::kernel::check::CheckReport;
use crate::kernel::cost_report::ReadCostReport;
use crate::kernel::import::ImportReport;
use crate::timing::Samples;

const TABLE_OR_JSON: [Format; 2] = [Format::Table, Format::Json];

impl Render for CheckReport {
    const COMMAND: &'static str = "kernel check";
    const FORMATS: &'static [Format] = &TABLE_OR_JSON;

    fn table(&self) -> String {
        let k = &self.kernel;
        let level = k.level.map(|l| format!(" level {l}")).unwrap_or_default();
        let s = &self.stored;
        let mut out = format!(
            "kernel {} (page {}), zram {}{level}; project: {}\n\
             corpus: {} — {} pages: {} same-filled, {} huge, {} compressed ({} bytes to zs_malloc)\n\
             then {:.0}% of them discarded (seed {}), then compacted\n\n",
            k.release,
            k.page_size,
            k.compressor,
            self.project,
            self.corpus.source,
            self.corpus.pages,
            s.same_filled,
            s.huge,
            s.compressed,
            s.bytes,
            self.free_share * 100.0,
            self.seed
        );
        let head = [
            "phase",
            "steps",
            "agreeing",
            "kernel pages",
            "project pages",
            "huge",
            "same",
            "compacted k/p",
        ];
        let rows: Vec<Vec<String>> = self
            .phases
            .iter()
            .map(|t| {
                vec![
                    t.phase.name().to_string(),
                    t.steps.to_string(),
                    t.agreeing.to_string(),
                    t.kernel_pages.to_string(),
                    t.project_pages.to_string(),
                    t.huge_pages.to_string(),
                    t.same_pages.to_string(),
                    format!("{}/{}", t.pages_compacted, t.project_pages_compacted),
                ]
            })
            .collect();
        out += &with_head(&head, &rows, 1);
        if self.shrinker_compactions > 0 {
            out += &format!(
                "\nthe kernel's shrinker compacted the pool around {} step(s); the project \
                 compacted there too\n",
                self.shrinker_compactions
            );
        }
        if let Some(fits) = &self.chain_search {
            let agree: Vec<String> =
                fits.iter().filter(|f| f.agree).map(|f| f.chain_size.to_string()).collect();
            out += &if agree.is_empty() {
                "\nchain search: no chain size 1..=16 agrees at every step\n".to_string()
            } else {
                format!(
                    "\nchain search: chain size {} agree(s) at every step; shown: chain {}\n",
                    agree.join(", "),
                    self.chain_size
                )
            };
        }
        let (agreeing, steps) =
            self.phases.iter().fold((0, 0), |(a, s), t| (a + t.agreeing, s + t.steps));
        out += &match &self.first_disagreement {
            None => format!("\nagree: every step ({agreeing} of {steps})\n"),
            Some(d) => format!(
                "\nDISAGREE: {agreeing} of {steps} steps agree; first: {} step {}{}{}: kernel \
                 {} pages, project {}\n",
                d.phase.name(),
                d.step,
                d.page.map(|p| format!(" (page {p}")).unwrap_or_default(),
                d.length.map(|l| format!(", {l} bytes)")).unwrap_or_default(),
                d.kernel_pages,
                d.project_pages
            ),
        };
        out
    }

    fn json(&self) -> LabResult<String> {
        super::json(self)
    }
}

impl Render for CaptureReport {
    const COMMAND: &'static str = "kernel capture";
    const FORMATS: &'static [Format] = &TABLE_OR_JSON;

    fn table(&self) -> String {
        let k = &self.kernel;
        let s = &self.stored;
        format!(
            "wrote {} ({} operations): kernel {} (page {}), zram {}\n\
             corpus: {} — {} pages: {} same-filled, {} huge, {} compressed\n\
             kernel pool pages after the fill: {}; at the end: {}\n\
             replay it: zsmalloc replay {} --page-size {} --chain-size 8 --format mm_stat\n",
            self.file,
            self.operations,
            k.release,
            k.page_size,
            k.compressor,
            self.corpus.source,
            self.corpus.pages,
            s.same_filled,
            s.huge,
            s.compressed,
            self.kernel_pages_after_fill,
            self.kernel_pages_at_end,
            self.file,
            k.page_size
        )
    }

    fn json(&self) -> LabResult<String> {
        super::json(self)
    }
}

impl Render for ImportReport {
    const COMMAND: &'static str = "kernel import";
    const FORMATS: &'static [Format] = &TABLE_OR_JSON;

    fn table(&self) -> String {
        let mut out = format!(
            "wrote {}: {} stores, {} frees, {} compactions from {} lines of {}\n",
            self.output, self.stores, self.frees, self.compactions, self.lines, self.input
        );
        let counts = [
            (self.lost_events, "events lost by the kernel's buffer"),
            (self.unpaired_entries, "zs_malloc entries without a return"),
            (self.unpaired_returns, "zs_malloc returns without an entry"),
            (self.failed_allocations, "failed allocations"),
            (self.unknown_frees, "frees of handles allocated before the trace"),
            (self.null_frees, "frees of handle 0 (no-ops)"),
            (self.other_pool_events, "events of other pools"),
            (self.other_lines, "lines of other events, headers or blank"),
        ];
        for (n, what) in counts.iter().filter(|c| c.0 > 0) {
            out += &format!("  {n} {what}\n");
        }
        if self.pools.len() > 1 && self.other_pool_events == 0 {
            out += &format!(
                "  warning: {} pools mixed ({}); keep one with --pool\n",
                self.pools.len(),
                self.pools.join(", ")
            );
        }
        out
    }

    fn json(&self) -> LabResult<String> {
        super::json(self)
    }
}

impl Render for ReadCostReport {
    const COMMAND: &'static str = "kernel cost";
    const FORMATS: &'static [Format] = &TABLE_OR_JSON;

    fn table(&self) -> String {
        let mut out = format!(
            "kernel {} (page {}), zram {}; corpus: {} ({} pages); last-level cache {}; {}, \
             seed {}\nO_DIRECT reads of every page in a seeded random order; a page's time is \
             its median over the rounds; grouped by the project's placement\n",
            self.kernel_release,
            self.page_size,
            self.compressor,
            self.corpus.source,
            self.corpus.pages,
            self.llc_bytes.map_or("unknown".into(), |b| format!("{} MiB", b >> 20)),
            if self.rounds == 1 {
                "1 round".to_string()
            } else {
                format!("{} rounds", self.rounds)
            },
            self.seed
        );
        let f = |x: &Option<Samples>| {
            x.as_ref().map_or("-".to_string(), |f| {
                format!("{} {:.0} [{:.0}..{:.0}]", f.n, f.median, f.min, f.max)
            })
        };
        for c in &self.conditions {
            out += &format!("\n{}: ", c.condition);
            if let Some(why) = &c.not_run {
                out += &format!("not run: {why}\n");
                continue;
            }
            out += &format!(
                "pool {:.1} MiB, {} pages, {} spanning objects (heuristic: {}); one read of every \
                 page takes {:.1} ms\n",
                c.pool_bytes as f64 / (1 << 20) as f64,
                c.pages,
                c.spanning_objects,
                c.heuristic_spanning_objects,
                c.read_time_ns / 1e6
            );
            // The saving is a sum over one pass of every page (each band's spanning objects
            // the heuristic removes, times that band's measured extra), not a per-read figure.
            out += &if c.heuristic_saving_ns > 0.0 {
                format!(
                    "  the heuristic's placement would take {:.1} us off that pass ({:.2}%), \
                     {:.1} ns per page read\n",
                    c.heuristic_saving_ns / 1e3,
                    c.heuristic_saving_share * 100.0,
                    c.heuristic_saving_ns / c.pages.max(1) as f64
                )
            } else {
                format!(
                    "  the heuristic's placement would save nothing measurable on that pass: \
                     spanning reads were not slower here (at the measured extras the pass would \
                     take {:.1} us longer)\n",
                    -c.heuristic_saving_ns / 1e3
                )
            };
            let mut rows = vec![vec![
                "band".to_string(),
                "spanning n med [min..max]".into(),
                "in place n med [min..max]".into(),
                "extra ns (95% CI)".into(),
            ]];
            for r in self.rows.iter().filter(|r| r.condition == c.condition) {
                let extra = r.spanning_extra.as_ref().map_or("-".to_string(), |e| {
                    format!(
                        "{:+.0} ({:+.0}..{:+.0}) {:+.1}%",
                        e.median_ns,
                        e.ci_low_ns,
                        e.ci_high_ns,
                        e.share * 100.0
                    )
                });
                rows.push(vec![r.band.clone(), f(&r.spanning), f(&r.in_place), extra]);
            }
            for line in super::grid::align(&rows, 1).lines() {
                out += &format!("  {line}\n");
            }
        }
        out
    }

    fn json(&self) -> LabResult<String> {
        super::json(self)
    }
}
