//! Pareto panels: two costs to minimise, the front drawn and its points filled.

use super::figure::{Panel, Series, Style, YStart, GREY};

/// A point of a Pareto panel: its label, its group (one colour each), its two costs and the
/// spread of the second (`y_lo..=y_hi`, both `y` when it has none).
#[derive(Debug, Clone, PartialEq)]
pub struct ParetoPoint {
    pub label: String,
    pub group: String,
    pub x: f64,
    pub y: f64,
    pub y_lo: f64,
    pub y_hi: f64,
}

impl ParetoPoint {
    /// A point whose costs are exact (counts).
    pub fn exact(label: String, group: String, x: f64, y: f64) -> Self {
        ParetoPoint { label, group, x, y, y_lo: y, y_hi: y }
    }

    /// `other` is at least as good on both costs and better on one. On `y`, "at least as
    /// good" means not worse beyond the spreads (`other`'s range starts at or below the top of
    /// this one's) and "better" means lower beyond them: two times within each other's spread
    /// count as equal, so neither dominates the other by time alone. Exact points (no
    /// spread) follow the usual rule.
    pub fn dominated_by(&self, other: &ParetoPoint) -> bool {
        other.x <= self.x && other.y_lo <= self.y_hi && (other.x < self.x || other.y_hi < self.y_lo)
    }
}

/// A Pareto panel, both axes to be minimised. Points on the front (dominated by no other, see
/// [`ParetoPoint::dominated_by`]) are filled and joined; dominated points are hollow and pale;
/// spreads are drawn as whiskers. One colour per group.
pub fn pareto_panel(title: &str, x_desc: &str, y_desc: &str, points: &[ParetoPoint]) -> Panel {
    let dominated = |i: usize| points.iter().any(|q| points[i].dominated_by(q));
    let mut groups: Vec<String> = Vec::new();
    for p in points {
        if !groups.contains(&p.group) {
            groups.push(p.group.clone());
        }
    }
    let mut series = Vec::new();
    for (gi, g) in groups.iter().enumerate() {
        for front in [true, false] {
            let idx: Vec<usize> = (0..points.len())
                .filter(|&i| points[i].group == *g && dominated(i) != front)
                .collect();
            if idx.is_empty() {
                continue;
            }
            let mut s = Series::new(
                format!("{g}: {}", if front { "on the front" } else { "dominated" }),
                idx.iter().map(|&i| (points[i].x, points[i].y)).collect(),
                Style::Points,
                gi,
            );
            s.highlight = front;
            s.point_labels = idx.iter().map(|&i| points[i].label.clone()).collect();
            if idx.iter().any(|&i| points[i].y_lo < points[i].y_hi) {
                s.y_spread = idx.iter().map(|&i| (points[i].y_lo, points[i].y_hi)).collect();
            }
            series.push(s);
        }
    }
    let mut front: Vec<(f64, f64)> =
        (0..points.len()).filter(|&i| !dominated(i)).map(|i| (points[i].x, points[i].y)).collect();
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
        // The trade-off between close points is what the panel is for; the title says how
        // close they are.
        y_start: YStart::Data(format!(
            "both axes fit the points, which differ by up to {} in x, {} in y",
            spread(points.iter().map(|p| p.x)),
            spread(points.iter().flat_map(|p| [p.y_lo, p.y_hi]))
        )),
        ..Default::default()
    }
}

/// How far apart values are at most, as a share of the largest: "5.2%".
fn spread(values: impl Iterator<Item = f64>) -> String {
    let (lo, hi) = values.fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if hi <= 0.0 || lo > hi {
        return "0%".into();
    }
    let share = 100.0 * (hi - lo) / hi;
    if share < 1.0 {
        format!("{share:.2}%")
    } else {
        format!("{share:.0}%")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pt(label: &str, x: f64, y: f64, lo: f64, hi: f64) -> ParetoPoint {
        ParetoPoint { label: label.into(), group: "g".into(), x, y, y_lo: lo, y_hi: hi }
    }

    fn front_of(panel: &Panel) -> Vec<String> {
        let s = panel.series.iter().filter(|s| s.highlight && s.style == Style::Points);
        s.flat_map(|s| s.point_labels.clone()).collect()
    }

    #[test]
    fn equal_times_within_their_spread_are_both_on_the_front() {
        // Same pages, medians 0.2 ns apart, each inside the other's min..max.
        let pts = [pt("a", 100.0, 50.0, 49.0, 51.0), pt("b", 100.0, 50.2, 49.1, 51.2)];
        assert_eq!(front_of(&pareto_panel("t", "x", "y", &pts)), vec!["a", "b"]);
        // Apart beyond the spreads, the slower is dominated.
        let pts = [pt("a", 100.0, 50.0, 49.0, 51.0), pt("b", 100.0, 60.0, 59.0, 61.0)];
        assert_eq!(front_of(&pareto_panel("t", "x", "y", &pts)), vec!["a"]);
        // Fewer pages at an equal time dominates.
        let pts = [pt("a", 90.0, 50.2, 49.1, 51.2), pt("b", 100.0, 50.0, 49.0, 51.0)];
        assert_eq!(front_of(&pareto_panel("t", "x", "y", &pts)), vec!["a"]);
    }

    #[test]
    fn exact_points_keep_the_usual_rule() {
        let e = |l: &str, x: f64, y: f64| ParetoPoint::exact(l.into(), "g".into(), x, y);
        let pts = [e("2c", 3454.0, 794.0), e("2h", 3454.0, 764.0), e("4c", 3444.0, 1503.0)];
        assert_eq!(front_of(&pareto_panel("t", "x", "y", &pts)), vec!["2h", "4c"]);
    }
}
