//! Where point labels go: near their own point, never on another label.

/// Width of a label character at the labels' 12-pixel font, pixels (a little over the widest
/// digits, so that estimated boxes hold the drawn text).
pub const LABEL_CHAR_WIDTH: i32 = 7;
pub const LABEL_HEIGHT: i32 = 12;
/// Pixels between a marker's centre and its label.
const LABEL_GAP: i32 = 8;
/// Half the side of the square a marker covers, pixels.
const MARKER: i32 = 5;
/// Rings searched around a point when no place next to it is free: their radii, pixels.
const RING_STEP: i32 = 14;
const RINGS: i32 = 14;
const RING_ANGLES: i32 = 24;

/// A labelled point, in pixels, and its label's width.
#[derive(Debug, Clone, Copy)]
pub struct LabelBox {
    pub x: i32,
    pub y: i32,
    pub width: i32,
}

/// Where a label goes: the offset of its top-left corner from its point, and whether it sits
/// away from the point (then a leader line joins the two).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    pub dx: i32,
    pub dy: i32,
    pub leader: bool,
}

/// A label's rectangle: left, top, right, bottom.
pub type Rect = (i32, i32, i32, i32);

pub fn rect(p: &LabelBox, pl: &Placement) -> Rect {
    (p.x + pl.dx, p.y + pl.dy, p.x + pl.dx + p.width, p.y + pl.dy + LABEL_HEIGHT)
}

pub fn intersect(a: Rect, b: Rect) -> bool {
    !(a.2 <= b.0 || b.2 <= a.0 || a.3 <= b.1 || b.3 <= a.1)
}

/// A leader line's ends, as offsets from its point: from the marker's edge to the label's
/// nearest point.
pub fn leader(p: &LabelBox, pl: &Placement) -> ((i32, i32), (i32, i32)) {
    let r = rect(p, pl);
    let (ex, ey) = (p.x.clamp(r.0, r.2) - p.x, p.y.clamp(r.1, r.3) - p.y);
    let len = f64::from(ex * ex + ey * ey).sqrt().max(1.0);
    let from = (f64::from(ex) * 6.0 / len, f64::from(ey) * 6.0 / len);
    ((from.0 as i32, from.1 as i32), (ex, ey))
}

/// The line from `a` to `b` (pixels) passes through `r`.
fn crosses((a, b): ((i32, i32), (i32, i32)), r: Rect) -> bool {
    let steps = (a.0 - b.0).abs().max((a.1 - b.1).abs()).max(1);
    (0..=steps).any(|k| {
        let (x, y) = (a.0 + (b.0 - a.0) * k / steps, a.1 + (b.1 - a.1) * k / steps);
        x > r.0 && x < r.2 && y > r.1 && y < r.3
    })
}

/// Where each label goes (`None`: nowhere free, the label is left out and the caller lists it
/// elsewhere). A label never covers another label nor leaves `area` (left, top, right,
/// bottom: the plot's pixels). The places tried, in order: right of the point and level with
/// it; left; above; below; the four corners; a line further above or below; then rings of
/// growing radius around the point (with a leader line). The first of those that neither
/// covers another point's marker nor, next to its point, sits about as near another point as its
/// own wins; where each does, the first doing it least. A label therefore sits next to its
/// own point, and nearer it than any other, wherever there is room.
pub fn place_labels(points: &[LabelBox], area: Rect) -> Vec<Option<Placement>> {
    let mut placed: Vec<Rect> = Vec::new();
    let mut lines: Vec<((i32, i32), (i32, i32))> = Vec::new();
    let mut out = Vec::with_capacity(points.len());
    let half = LABEL_HEIGHT / 2;
    for (i, p) in points.iter().enumerate() {
        let near = [
            (LABEL_GAP, -half),
            (-LABEL_GAP - p.width, -half),
            (-p.width / 2, -LABEL_GAP - LABEL_HEIGHT),
            (-p.width / 2, LABEL_GAP),
            (LABEL_GAP / 2, -LABEL_GAP / 2 - LABEL_HEIGHT),
            (LABEL_GAP / 2, LABEL_GAP / 2),
            (-LABEL_GAP / 2 - p.width, -LABEL_GAP / 2 - LABEL_HEIGHT),
            (-LABEL_GAP / 2 - p.width, LABEL_GAP / 2),
            (-p.width / 2, -LABEL_GAP - 2 * LABEL_HEIGHT - 2),
            (-p.width / 2, LABEL_GAP + LABEL_HEIGHT + 2),
        ]
        .map(|(dx, dy)| Placement { dx, dy, leader: false });
        let rings = (2..=RINGS).flat_map(|ring| {
            (0..RING_ANGLES).map(move |k| {
                let a = std::f64::consts::TAU * f64::from(k) / f64::from(RING_ANGLES);
                let r = f64::from(ring * RING_STEP);
                // The label's centre on the ring.
                let (cx, cy) = ((r * a.cos()).round() as i32, (r * a.sin()).round() as i32);
                Placement { dx: cx - p.width / 2, dy: cy - half, leader: true }
            })
        });
        // Other points' markers the label would cover, and (next to its point, where no
        // leader line tells whose it is) other points about as near the label as its own
        // (less than a quarter further).
        let misleads = |pl: &Placement| {
            let r = rect(p, pl);
            let (cx, cy) = ((r.0 + r.2) / 2, (r.1 + r.3) / 2);
            let d2 = |q: &LabelBox| (q.x - cx).pow(2) + (q.y - cy).pow(2);
            let hit = |(j, q): (usize, &LabelBox)| {
                j != i
                    && (intersect(r, (q.x - MARKER, q.y - MARKER, q.x + MARKER, q.y + MARKER))
                        || (!pl.leader && 16 * d2(q) < 25 * d2(p)))
            };
            points.iter().enumerate().filter(|&jq| hit(jq)).count()
        };
        // Inside the area, on no label, and neither on a leader line nor (with its own) across
        // a label.
        let free = |pl: &Placement| {
            let r = rect(p, pl);
            let inside = r.0 >= area.0 && r.1 >= area.1 && r.2 <= area.2 && r.3 <= area.3;
            let own = pl.leader.then(|| {
                let (a, b) = leader(p, pl);
                ((p.x + a.0, p.y + a.1), (p.x + b.0, p.y + b.1))
            });
            inside
                && !placed.iter().any(|&b| intersect(r, b))
                && !lines.iter().any(|&l| crosses(l, r))
                && !own.is_some_and(|l| placed.iter().any(|&b| crosses(l, b)))
        };
        let mut best: Option<(usize, Placement)> = None;
        for pl in near.into_iter().chain(rings).filter(|pl| free(pl)) {
            let covered = misleads(&pl);
            if best.is_none_or(|(c, _)| covered < c) {
                best = Some((covered, pl));
            }
            if covered == 0 {
                break;
            }
        }
        let chosen = best.map(|(_, pl)| pl);
        if let Some(pl) = &chosen {
            placed.push(rect(p, pl));
            if pl.leader {
                let (a, b) = leader(p, pl);
                lines.push(((p.x + a.0, p.y + a.1), (p.x + b.0, p.y + b.1)));
            }
        }
        out.push(chosen);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plot area no label leaves.
    const EVERYWHERE: Rect = (i32::MIN / 2, i32::MIN / 2, i32::MAX / 2, i32::MAX / 2);

    fn placed(pts: &[LabelBox], area: Rect) -> Vec<Placement> {
        place_labels(pts, area).into_iter().map(|p| p.expect("room for every label")).collect()
    }

    fn assert_apart(pts: &[LabelBox], out: &[Option<Placement>]) {
        for (i, (p, o)) in pts.iter().zip(out).enumerate() {
            let Some(o) = o.filter(|o| o.leader) else { continue };
            let (a, b) = leader(p, &o);
            let line = ((p.x + a.0, p.y + a.1), (p.x + b.0, p.y + b.1));
            for (j, (q, other)) in pts.iter().zip(out).enumerate() {
                if let Some(other) = other.filter(|_| j != i) {
                    assert!(!crosses(line, rect(q, &other)), "{i}'s leader crosses label {j}");
                }
            }
        }
        let rects: Vec<(usize, Rect)> = pts
            .iter()
            .zip(out)
            .enumerate()
            .filter_map(|(i, (p, o))| o.map(|o| (i, rect(p, &o))))
            .collect();
        for (k, &(i, a)) in rects.iter().enumerate() {
            for &(j, b) in &rects[..k] {
                assert!(!intersect(a, b), "labels {j} {b:?} and {i} {a:?} overlap");
            }
        }
    }

    #[test]
    fn a_label_at_the_right_edge_turns_inwards() {
        let pts = [LabelBox { x: 995, y: 100, width: 90 }];
        let o = placed(&pts, (0, 0, 1000, 400))[0];
        assert!(995 + o.dx + 90 <= 1000, "the label stays inside: {o:?}");
        let alone = placed(&pts, EVERYWHERE)[0];
        assert_eq!((alone.dx, alone.dy, alone.leader), (LABEL_GAP, -LABEL_HEIGHT / 2, false));
    }

    /// The label's centre, in pixels.
    fn centre(p: &LabelBox, o: Placement) -> (f64, f64) {
        (f64::from(p.x + o.dx) + f64::from(p.width) / 2.0, f64::from(p.y + o.dy + LABEL_HEIGHT / 2))
    }

    fn dist(a: (f64, f64), p: &LabelBox) -> f64 {
        ((a.0 - f64::from(p.x)).powi(2) + (a.1 - f64::from(p.y)).powi(2)).sqrt()
    }

    #[test]
    fn each_label_sits_nearest_its_own_point() {
        // The sweep's case: chain 2 classic (dominated) a few pixels above chain 2 heuristic
        // (on the front), at the same pages; and a lone point.
        let pts = [
            LabelBox { x: 100, y: 200, width: 7 },
            LabelBox { x: 100, y: 207, width: 7 },
            LabelBox { x: 300, y: 50, width: 14 },
        ];
        let offsets = placed(&pts, EVERYWHERE);
        for (i, (p, &o)) in pts.iter().zip(&offsets).enumerate() {
            let c = centre(p, o);
            for (j, q) in pts.iter().enumerate() {
                if i != j {
                    assert!(dist(c, p) < dist(c, q), "label {i} is nearer point {j}: {offsets:?}");
                }
            }
        }
        assert_eq!((offsets[2].dx, offsets[2].dy), (LABEL_GAP, -LABEL_HEIGHT / 2), "lone label");
    }

    #[test]
    fn labels_in_a_crowd_stay_off_each_other() {
        // A reference between two frontier points a few pixels apart (as in optimize's default
        // run), their labels placed first.
        let pts = [
            LabelBox { x: 829, y: 335, width: 21 },
            LabelBox { x: 786, y: 332, width: 21 },
            LabelBox { x: 815, y: 332, width: 63 },
        ];
        assert_apart(&pts, &place_labels(&pts, EVERYWHERE));
    }

    #[test]
    fn the_chain_sweeps_crowded_corner_is_labelled_without_overlaps() {
        // Chains 4..16 of `compare --sweep chain-size=4..16` in the Pareto panel's pixels
        // (from the drawn SVG): 12..15 a few pixels apart along the front, 16 (dominated) on
        // top of 15.
        let pts: Vec<LabelBox> = [
            (855, 1291, 7),
            (573, 1247, 7),
            (465, 1225, 7),
            (348, 1200, 7),
            (295, 1184, 7),
            (240, 1164, 7),
            (217, 1157, 14),
            (185, 1142, 14),
            (169, 1134, 14),
            (155, 1125, 14),
            (149, 1120, 14),
            (139, 1111, 14),
            (140, 1107, 14),
        ]
        .iter()
        .map(|&(x, y, width)| LabelBox { x, y, width })
        .collect();
        let area = (96, 1085, 900, 1305);
        let out = place_labels(&pts, area);
        assert!(out.iter().all(Option::is_some), "room for all: {out:?}");
        assert_apart(&pts, &out);
        // A label without a leader line is plainly its own point's.
        for (i, (p, o)) in pts.iter().zip(&out).enumerate() {
            let o = o.unwrap();
            if o.leader {
                continue;
            }
            let c = centre(p, o);
            for (j, q) in pts.iter().enumerate() {
                assert!(i == j || dist(c, p) < dist(c, q), "label {i} is as near {j}: {o:?}");
            }
        }
    }

    #[test]
    fn a_dense_cloud_never_gets_overlapping_labels() {
        // 60 points on a 40-pixel square: some labels go further out on leader lines, some
        // find no room; none covers another.
        let mut seed = 7u32;
        let mut next = |m: u32| {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            ((seed >> 16) % m) as i32
        };
        let pts: Vec<LabelBox> = (0..60)
            .map(|_| LabelBox { x: 300 + next(40), y: 200 + next(40), width: 7 + next(4) * 7 })
            .collect();
        let area = (0, 0, 700, 450);
        let out = place_labels(&pts, area);
        assert_apart(&pts, &out);
        for (p, o) in pts.iter().zip(&out) {
            if let Some(o) = o {
                let r = rect(p, o);
                assert!(r.0 >= area.0 && r.1 >= area.1 && r.2 <= area.2 && r.3 <= area.3);
            }
        }
        assert!(out.iter().any(|o| o.is_some_and(|o| o.leader)), "some on leader lines");
        assert!(out.iter().filter(|o| o.is_some()).count() >= 30, "{out:?}");
    }
}
