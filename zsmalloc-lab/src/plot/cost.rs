//! `zsmalloc cost --plot`.

use std::path::Path;

use super::draw::draw;
use super::figure::{Figure, Panel, Series, Style};
use super::pareto::pareto_panel;
use crate::error::LabResult;

/// `zsmalloc cost --plot`: per class, the CPU time of a read (section + decompress, zram
/// consumer) in each mode and compressor of the first configuration, modelled from the measured
/// rows and each class's share of spanning objects; then, with two or more configurations, per
/// compressor and mode, a Pareto plot of pages against the mean read CPU, one colour per chain
/// policy (both policies of a sweep), points labelled with the swept values.
pub fn cost(path: &Path, r: &crate::cost::CostReport, sweep_keys: &[String]) -> LabResult<()> {
    use crate::cost::Kind;
    let mut panels = Vec::new();
    let median = |label: &str, comp: &str, mode: &str, span: bool| {
        r.reads
            .iter()
            .find(|x| {
                x.label == label
                    && x.compressor == comp
                    && x.mode == mode
                    && x.kind == Kind::Regular
                    && x.spanning == span
            })
            .map(|x| x.ns_per_read.median)
    };
    if let Some(first) = r.pools.first() {
        let mut series = Vec::new();
        let mut ci = 0;
        for p in r.pools.iter().filter(|p| p.label == first.label) {
            let mut modes: Vec<&str> = Vec::new();
            for x in r.reads.iter().filter(|x| x.label == p.label && x.compressor == p.compressor) {
                if !modes.contains(&x.mode.as_str()) {
                    modes.push(&x.mode);
                }
            }
            for m in modes {
                let inplace = median(&p.label, &p.compressor, m, false);
                let span = median(&p.label, &p.compressor, m, true);
                let pts: Vec<(f64, f64)> = p
                    .classes
                    .iter()
                    .filter(|(size, n, _)| *n > 0 && u64::from(*size) < p.huge_class_size)
                    .filter_map(|&(size, n, s)| {
                        let share = s as f64 / n as f64;
                        let v = match (inplace, span) {
                            (Some(i), Some(sp)) => share * sp + (1.0 - share) * i,
                            (Some(i), None) => i,
                            (None, Some(sp)) => sp,
                            (None, None) => return None,
                        };
                        Some((f64::from(size), v))
                    })
                    .collect();
                if !pts.is_empty() {
                    series.push(Series::new(format!("{} {m}", p.compressor), pts, Style::Line, ci));
                    ci += 1;
                }
            }
        }
        panels.push(Panel {
            title: format!(
                "{}: CPU per read by class (spanning share x spanning row + rest x in-place row)",
                first.label
            ),
            x_desc: "class size (bytes)".into(),
            y_desc: "ns per read".into(),
            series,
            int_x: true,
            from_zero: true,
            ..Default::default()
        });
    }
    let labels: Vec<&str> = {
        let mut v: Vec<&str> = Vec::new();
        for p in &r.pools {
            if !v.contains(&p.label.as_str()) {
                v.push(&p.label);
            }
        }
        v
    };
    if labels.len() >= 2 {
        let mut keys: Vec<(String, String)> = Vec::new();
        for s in &r.summary.rows {
            let k = (s.compressor.clone(), s.mode.clone());
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        for (comp, mode) in keys {
            let points: Vec<(String, String, f64, f64)> = r
                .summary
                .rows
                .iter()
                .filter(|s| s.compressor == comp && s.mode == mode)
                .map(|s| {
                    let policy = r
                        .pools
                        .iter()
                        .find(|p| p.label == s.label)
                        .map_or(String::new(), |p| p.config.chain_policy.clone());
                    let point = s
                        .label
                        .split(',')
                        .filter(|part| sweep_keys.is_empty() || !part.starts_with("chain-policy="))
                        .collect::<Vec<_>>()
                        .join(",");
                    (point, policy, s.pages as f64, s.ns_per_read)
                })
                .collect();
            let mut p = pareto_panel(
                &format!("{comp}, {mode}: pages against CPU per read (Pareto, lower is better)"),
                "pages",
                "ns per read (section + decompress)",
                &points,
            );
            p.int_y = false;
            panels.push(p);
        }
    }
    let corpus = r.corpus.first().map_or(String::new(), |c| c.source.clone());
    let configs: Vec<String> = r
        .pools
        .iter()
        .filter(|p| p.compressor == r.pools[0].compressor)
        .map(|p| {
            format!(
                "{} (page {}, chain {}, delta {}, {})",
                p.label,
                p.config.page_size,
                p.config.chain_size,
                p.config.class_delta,
                p.config.chain_policy
            )
        })
        .collect();
    // Two configurations a line, so the subtitle fits the picture.
    let mut subtitle: Vec<String> =
        configs.chunks(2).map(|c| format!("configurations: {}", c.join("; "))).collect();
    subtitle.push(format!(
        "{} rounds, medians; backing {}; load average {}; classes below huge_class_size",
        r.environment.rounds,
        r.environment.backing,
        r.environment.load_average_before.map_or("?".into(), |l| l.to_string())
    ));
    draw(path, &Figure { title: format!("cost of reads: {corpus}"), subtitle, panels })
}
