//! Axis ranges and ticks: a magnitude's axis starts at 0 unless the panel says why not, and
//! every tick drawn has its label.

use super::figure::{Panel, Style, YStart};

/// What a panel's axes span, and the note its title gets when the y axis does not start at 0.
#[derive(Debug, Clone, PartialEq)]
pub struct Axes {
    pub x: (f64, f64),
    pub y: (f64, f64),
    pub note: Option<String>,
}

/// The values a panel's axes must show: every drawn point and whisker end (NaN points, line
/// breaks, are not drawn).
fn extent(p: &Panel) -> Option<(f64, f64, f64, f64)> {
    let spread_ends = p.series.iter().flat_map(|s| {
        s.points.iter().zip(&s.y_spread).flat_map(|(&(x, _), &(lo, hi))| [(x, lo), (x, hi)])
    });
    let pts = p.series.iter().flat_map(|s| s.points.iter().copied()).chain(spread_ends);
    let mut e: Option<(f64, f64, f64, f64)> = None;
    for (x, y) in pts.filter(|(x, y)| x.is_finite() && y.is_finite()) {
        e =
            Some(e.map_or((x, x, y, y), |(x0, x1, y0, y1)| {
                (x0.min(x), x1.max(x), y0.min(y), y1.max(y))
            }));
    }
    e
}

/// The axes of `p`: x over the data (or `x_range`), padded for markers and bars; y from 0
/// (spanning 0 for differences) unless [`YStart`] lets it fit the data, and then the note
/// says where it starts and why.
pub fn axes(p: &Panel) -> Axes {
    let (mut x0, mut x1, y_lo, mut y_hi) = extent(p).unwrap_or((0.0, 1.0, 0.0, 1.0));
    if let Some(top) = p.y_max {
        y_hi = y_hi.max(top);
    }
    if !p.x_categories.is_empty() {
        // Categories sit at 0, 1, ...: each gets a whole unit of width.
        (x0, x1) = (-0.6, p.x_categories.len() as f64 - 0.4);
    } else if let Some(r) = p.x_range {
        (x0, x1) = r;
    } else if x1 <= x0 {
        (x0, x1) = (x0 - 1.0, x1 + 1.0);
    } else if p.series.iter().any(|s| s.style == Style::Points || !s.point_labels.is_empty()) {
        let pad = (x1 - x0) * 0.06;
        (x0, x1) = (x0 - pad, x1 + pad);
    }
    let reason = match &p.y_start {
        YStart::Zero => None,
        YStart::Data(why) => Some(why.clone()),
        YStart::DataWhenClose if y_lo > 0.0 && (y_hi - y_lo) < y_hi / 3.0 => {
            Some(format!("the values differ by {:.1}% at most", 100.0 * (y_hi - y_lo) / y_hi))
        }
        YStart::DataWhenClose => None,
    };
    let (mut y0, mut y1) = match reason {
        Some(_) if !p.zero_line => {
            let pad = ((y_hi - y_lo) * 0.12).max(y_hi.abs() * 0.002).max(1e-6);
            let lo = if y_lo >= 0.0 { (y_lo - pad).max(0.0) } else { y_lo - pad };
            (lo, y_hi + pad)
        }
        _ => {
            let (lo, hi) = (y_lo.min(0.0), y_hi.max(0.0));
            if hi - lo <= f64::EPSILON {
                (0.0, 1.0)
            } else {
                let pad = (hi - lo) * 0.08;
                (if lo < 0.0 { lo - pad } else { 0.0 }, hi + pad)
            }
        }
    };
    if p.int_y {
        (y0, y1) = (y0.floor(), y1.ceil().max(y0.floor() + 1.0));
    }
    let step = tick_step(y0, y1, p.int_y, Y_TICKS);
    if y0 > 0.0 {
        // An axis that does not start at 0 starts at a tick, whose label the note repeats.
        y0 = (y0 / step).floor() * step;
    }
    let note =
        reason.filter(|_| y0 > 0.0).map(|why| format!("y axis from {}: {why}", label(y0, step)));
    Axes { x: (x0, x1), y: (y0, y1), note }
}

/// Ticks on a y axis at most; an x axis's depend on its width.
pub const Y_TICKS: usize = 8;

/// The step between ticks: 1, 2 or 5 times a power of ten, the smallest giving at most `max`
/// ticks; whole numbers for a whole-numbered axis.
pub fn tick_step(lo: f64, hi: f64, int: bool, max: usize) -> f64 {
    let span = (hi - lo).max(f64::MIN_POSITIVE);
    let raw = span / max.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(mag);
    if int {
        step.max(1.0).round()
    } else {
        step
    }
}

/// Tick values from `lo` to `hi`, every one a multiple of the step (see [`tick_step`]).
pub fn ticks(lo: f64, hi: f64, int: bool, max: usize) -> Vec<f64> {
    let step = tick_step(lo, hi, int, max);
    let first = (lo / step - 1e-9).ceil() as i64;
    let last = (hi / step + 1e-9).floor() as i64;
    (first..=last).map(|k| k as f64 * step).map(|v| if v == 0.0 { 0.0 } else { v }).collect()
}

/// A tick's text: as many decimals as the step needs, thousands separated.
pub fn label(v: f64, step: f64) -> String {
    let decimals = if step >= 1.0 { 0 } else { (-step.log10().floor()) as usize };
    if decimals > 0 {
        return format!("{v:.decimals$}");
    }
    let r = v.round() as i64;
    if r.abs() < 10_000 {
        return r.to_string();
    }
    let s = r.abs().to_string();
    let mut g = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            g.push(',');
        }
        g.push(ch);
    }
    if r < 0 {
        format!("-{g}")
    } else {
        g
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tick_has_a_label_of_its_own() {
        let ranges = [
            (0.0, 1.0, false),
            (-0.6, 4.4, true),
            (0.0, 9.0, true),
            (0.0, 13.0, true),
            (173_400.0, 184_200.0, true),
            (-52_000.0, 3_000.0, true),
            (0.0, 0.37, false),
            (1.2, 1.9, false),
            (0.0, 16_384.0, true),
        ];
        for (lo, hi, int) in ranges {
            let t = ticks(lo, hi, int, Y_TICKS);
            let step = tick_step(lo, hi, int, Y_TICKS);
            assert!(t.len() >= 2 && t.len() <= Y_TICKS + 1, "{lo}..{hi}: {t:?}");
            let labels: Vec<String> = t.iter().map(|&v| label(v, step)).collect();
            for (i, l) in labels.iter().enumerate() {
                assert!(!l.is_empty() && !labels[..i].contains(l), "{lo}..{hi}: {labels:?}");
            }
            if int {
                assert!(t.iter().all(|v| v.fract() == 0.0), "whole ticks: {t:?}");
            }
            let eps = step * 1e-6;
            assert!(t.iter().all(|v| (lo - eps..=hi + eps).contains(v)), "{lo}..{hi}: {t:?}");
        }
        assert_eq!(label(184_000.0, 2000.0), "184,000");
        assert_eq!(label(0.25, 0.05), "0.25");
    }

    fn panel(points: Vec<(f64, f64)>, y_start: YStart) -> Panel {
        let series = vec![super::super::figure::Series::new("s", points, Style::Line, 0)];
        Panel { series, y_start, ..Default::default() }
    }

    #[test]
    fn the_y_axis_starts_at_zero_unless_the_panel_says_why_not() {
        let close = vec![(0.0, 5400.0), (1.0, 5600.0)];
        assert_eq!(axes(&panel(close.clone(), YStart::Zero)).y.0, 0.0);
        let a = axes(&panel(close.clone(), YStart::DataWhenClose));
        assert!(a.y.0 > 5000.0, "{a:?}");
        assert!(a.note.as_deref().is_some_and(|n| n.contains("3.6% at most")), "{a:?}");
        let a = axes(&panel(close, YStart::Data("the front".into())));
        assert!(a.note.as_deref().is_some_and(|n| n.ends_with(": the front")), "{a:?}");
        // Values twice apart: from zero, and no note.
        let a = axes(&panel(vec![(0.0, 5400.0), (1.0, 10_800.0)], YStart::DataWhenClose));
        assert_eq!((a.y.0, a.note), (0.0, None));
    }
}
