//! `zsmalloc cost --plot`.

use std::path::Path;

use super::draw::draw;
use super::figure::{Figure, Panel, Series, Style};
use super::pareto::{pareto_panel, ParetoPoint};
use crate::config::ConfigDesc;
use crate::error::LabResult;

/// `zsmalloc cost --plot`: per compressor and mode, the CPU time of a read by class (section +
/// decompress, zram consumer), one line per configuration, modelled from the measured rows and
/// each class's share of spanning objects; then, with two or more configurations, per
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
    // Per compressor and mode, one line per configuration (its colour in every panel).
    let labels: Vec<&str> = {
        let mut v: Vec<&str> = Vec::new();
        for p in &r.pools {
            if !v.contains(&p.label.as_str()) {
                v.push(&p.label);
            }
        }
        v
    };
    let mut keys: Vec<(&str, &str)> = Vec::new();
    for x in &r.reads {
        if !keys.contains(&(x.compressor.as_str(), x.mode.as_str())) {
            keys.push((&x.compressor, &x.mode));
        }
    }
    for (comp, mode) in keys {
        let series: Vec<Series> = r
            .pools
            .iter()
            .filter(|p| p.compressor == comp)
            .filter_map(|p| {
                let inplace = median(&p.label, comp, mode, false);
                let span = median(&p.label, comp, mode, true);
                let grid = class_grid(&p.config);
                let pts = class_points(&p.classes, &grid, p.huge_class_size, inplace, span);
                let color = labels.iter().position(|l| *l == p.label).unwrap_or(0);
                pts.iter()
                    .any(|p| p.1.is_finite())
                    .then(|| Series::new(p.label.clone(), pts, Style::Line, color))
            })
            .collect();
        if series.is_empty() {
            continue;
        }
        panels.push(Panel {
            title: format!(
                "{comp}, {mode}: CPU per read by class (spanning share x spanning row + rest x \
                 in-place row)"
            ),
            x_desc: "class size (bytes)".into(),
            y_desc: "ns per read".into(),
            series,
            int_x: true,
            ..Default::default()
        });
    }
    if labels.len() >= 2 {
        let mut keys: Vec<(String, String)> = Vec::new();
        for s in &r.summary.rows {
            let k = (s.compressor.clone(), s.mode.clone());
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        for (comp, mode) in keys {
            let points: Vec<ParetoPoint> = r
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
                    let (lo, hi) = read_spread(r, &s.label, &comp, &mode);
                    ParetoPoint {
                        label: point,
                        group: policy,
                        x: s.pages as f64,
                        y: s.ns_per_read,
                        y_lo: lo.min(s.ns_per_read),
                        y_hi: hi.max(s.ns_per_read),
                    }
                })
                .collect();
            let mut p = pareto_panel(
                &format!("{comp}, {mode}: pages against CPU per read (Pareto)"),
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
        "{}, medians; backing {}; load average {}; classes below huge_class_size; Pareto \
         whiskers: min..max over rounds, overlapping times count as equal",
        if r.environment.rounds == 1 {
            "1 round".to_string()
        } else {
            format!("{} rounds", r.environment.rounds)
        },
        r.environment.backing,
        r.environment.load_average_before.map_or("?".into(), |l| l.to_string())
    ));
    draw(path, &Figure { title: format!("cost of reads: {corpus}"), subtitle, panels, columns: 1 })
}

/// The class sizes of `c`'s table (zsmalloc), to tell where classes without objects lie;
/// empty for the other backends.
fn class_grid(c: &ConfigDesc) -> Vec<u32> {
    if c.backend != zsmalloc_core::BackendKind::Zsmalloc {
        return Vec::new();
    }
    let Some(chain_policy) = zsmalloc_core::PolicyRef::by_name(&c.chain_policy) else {
        return Vec::new();
    };
    let cfg = zsmalloc_core::PoolConfig {
        page_size: c.page_size,
        chain_size: c.chain_size,
        class_delta: c.class_delta,
        chain_policy,
        merge_classes: c.merge,
        ..Default::default()
    };
    zsmalloc_core::ClassTable::new(&cfg)
        .map(|t| t.classes().iter().map(|k| k.size).collect())
        .unwrap_or_default()
}

/// Per class below `huge`, the modelled CPU of a read: the class's spanning share times the
/// spanning row's median plus the rest times the in-place row's. A class of `grid` between
/// two holding objects but holding none itself is a NaN point: the line breaks there rather
/// than join classes across it.
fn class_points(
    classes: &[(u32, u64, u64)],
    grid: &[u32],
    huge: u64,
    inplace: Option<f64>,
    span: Option<f64>,
) -> Vec<(f64, f64)> {
    let value = |n: u64, s: u64| {
        let share = s as f64 / n as f64;
        match (inplace, span) {
            (Some(i), Some(sp)) => Some(share * sp + (1.0 - share) * i),
            (Some(i), None) => Some(i),
            (None, Some(sp)) => Some(sp),
            (None, None) => None,
        }
    };
    let held: Vec<(u32, f64)> = classes
        .iter()
        .filter(|(size, n, _)| *n > 0 && u64::from(*size) < huge)
        .filter_map(|&(size, n, s)| value(n, s).map(|v| (size, v)))
        .collect();
    let mut out = Vec::with_capacity(held.len());
    for (i, &(size, v)) in held.iter().enumerate() {
        if let Some(&(prev, _)) = i.checked_sub(1).and_then(|j| held.get(j)) {
            if grid.iter().any(|&g| prev < g && g < size) {
                out.push((f64::from(prev + size) / 2.0, f64::NAN));
            }
        }
        out.push((f64::from(size), v));
    }
    out
}

/// The spread of a configuration's mean read (zram consumer) for one compressor and mode:
/// each row's min and max weighted by its objects, as the summary weights the medians.
fn read_spread(r: &crate::cost::CostReport, label: &str, comp: &str, mode: &str) -> (f64, f64) {
    let rows: Vec<_> = r
        .reads
        .iter()
        .filter(|x| x.label == label && x.compressor == comp && x.mode == mode)
        .collect();
    let objects: u64 = rows.iter().map(|x| x.objects).sum();
    let w = |f: &dyn Fn(&crate::timing::Samples) -> f64| {
        rows.iter().map(|x| x.objects as f64 * f(&x.ns_per_read)).sum::<f64>()
            / objects.max(1) as f64
    };
    (w(&|s| s.min), w(&|s| s.max))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_class_line_breaks_at_classes_without_objects() {
        let desc = ConfigDesc {
            page_size: 4096,
            chain_size: 8,
            class_delta: 16,
            chain_policy: "classic".into(),
            read_mode: zsmalloc_core::ReadMode::Copy,
            mem_limit_pages: 0,
            merge: true,
            backend: zsmalloc_core::BackendKind::Zsmalloc,
            multi_page_size: 0,
            class_table: None,
        };
        let grid = class_grid(&desc);
        assert!(grid.contains(&48) && grid.contains(&64), "{grid:?}");
        // 32 and 48 are neighbours; 64 holds nothing, so 48 and 80 must not be joined.
        let classes = [(32, 10, 0), (48, 10, 5), (80, 4, 4)];
        let pts = class_points(&classes, &grid, 3264, Some(100.0), Some(200.0));
        assert_eq!(pts[0], (32.0, 100.0));
        assert_eq!(pts[1], (48.0, 150.0));
        assert!(pts[2].1.is_nan() && pts[2].0 > 48.0 && pts[2].0 < 80.0, "{pts:?}");
        assert_eq!(pts[3], (80.0, 200.0));
        assert_eq!(pts.len(), 4);
    }
}
