//! Pareto panels: two costs to minimise, the front drawn and its points filled.

use super::figure::{Panel, Series, Style, GREY};

/// A Pareto panel: `points` are (label, group, x, y), both axes to be minimised. Points on the
/// front (no other point is at least as good on both axes and better on one) are filled and
/// joined; dominated points are hollow and pale. One colour per group.
pub fn pareto_panel(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    points: &[(String, String, f64, f64)],
) -> Panel {
    let dominated = |i: usize| {
        let (_, _, x, y) = &points[i];
        points.iter().any(|(_, _, a, b)| a <= x && b <= y && (a < x || b < y))
    };
    let mut groups: Vec<String> = Vec::new();
    for (_, g, _, _) in points {
        if !groups.contains(g) {
            groups.push(g.clone());
        }
    }
    let mut series = Vec::new();
    for (gi, g) in groups.iter().enumerate() {
        for front in [true, false] {
            let idx: Vec<usize> =
                (0..points.len()).filter(|&i| points[i].1 == *g && dominated(i) != front).collect();
            if idx.is_empty() {
                continue;
            }
            let mut s = Series::new(
                format!("{g}: {}", if front { "on the front" } else { "dominated" }),
                idx.iter().map(|&i| (points[i].2, points[i].3)).collect(),
                Style::Points,
                gi,
            );
            s.highlight = front;
            s.point_labels = idx.iter().map(|&i| points[i].0.clone()).collect();
            series.push(s);
        }
    }
    let mut front: Vec<(f64, f64)> =
        (0..points.len()).filter(|&i| !dominated(i)).map(|i| (points[i].2, points[i].3)).collect();
    front.sort_by(|a, b| a.0.total_cmp(&b.0));
    if front.len() > 1 {
        let mut line = Vec::new();
        for w in front.windows(2) {
            line.push(w[0]);
            line.push((w[1].0, w[0].1));
        }
        line.push(front[front.len() - 1]);
        let mut s = Series::new("Pareto front (lower is better on both)", line, Style::Step, GREY);
        s.highlight = false;
        series.insert(0, s);
    }
    Panel {
        title: title.into(),
        x_desc: x_desc.into(),
        y_desc: y_desc.into(),
        series,
        int_x: true,
        int_y: true,
        ..Default::default()
    }
}
