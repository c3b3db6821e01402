//! What a picture is made of: [`Figure`]s of [`Panel`]s of [`Series`], and step lines.

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Straight segments between points, a marker on each when there are few; a point whose
    /// y is not finite (NaN) breaks the line there.
    Line,
    /// Points already laid out as steps (see [`steps`]), drawn as a line without markers.
    Step,
    /// Markers only: filled when `Series::highlight`, hollow otherwise.
    Points,
    /// One bar per point, centred on x.
    Bars,
}

/// One named series of (x, y) points.
#[derive(Debug, Clone)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub style: Style,
    /// Palette index (series of one configuration share a colour across panels).
    pub color: usize,
    /// Filled markers / full colour; otherwise hollow and pale (e.g. dominated points).
    pub highlight: bool,
    /// Text drawn next to each point (same length as `points`, or empty).
    pub point_labels: Vec<String>,
    /// A whisker from `lo` to `hi` through each point (same length as `points`, or empty).
    pub y_spread: Vec<(f64, f64)>,
}

impl Series {
    pub fn new(
        name: impl Into<String>,
        points: Vec<(f64, f64)>,
        style: Style,
        color: usize,
    ) -> Self {
        Series {
            name: name.into(),
            points,
            style,
            color,
            highlight: true,
            point_labels: Vec::new(),
            y_spread: Vec::new(),
        }
    }
}

/// One chart.
#[derive(Debug, Clone, Default)]
pub struct Panel {
    pub title: String,
    pub x_desc: String,
    pub y_desc: String,
    pub series: Vec<Series>,
    /// Where the y axis starts: at 0 unless said otherwise.
    pub y_start: YStart,
    /// The x axis spans exactly this (panels read against each other share it); else the data.
    pub x_range: Option<(f64, f64)>,
    /// Values are whole numbers: ticks at integers, labels without decimals.
    pub int_x: bool,
    pub int_y: bool,
    /// The y axis reaches at least this high (panels compared by eye share their scale).
    pub y_max: Option<f64>,
    /// Draw the y = 0 line (difference plots).
    pub zero_line: bool,
    /// Category names for the x positions 0, 1, ... (bar panels).
    pub x_categories: Vec<String>,
}

/// Where a panel's y axis starts. A magnitude drawn from an axis that does not start at 0
/// looks bigger than it is, so the panel's title then says where it starts and why.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum YStart {
    #[default]
    Zero,
    /// Near the data when the values differ by less than a third of the largest (a change of
    /// a few percent would be flat from 0); the title says by how much they differ.
    DataWhenClose,
    /// Near the data, for the reason given (said in the title).
    Data(String),
}

/// A picture: a title, lines under it (configurations) and panels, one under the other, or
/// on a grid of `columns` (small multiples: panels of a grid have no legend, their titles
/// name what they show).
#[derive(Debug, Clone, Default)]
pub struct Figure {
    pub title: String,
    pub subtitle: Vec<String>,
    pub panels: Vec<Panel>,
    /// Panels per row; 0 or 1: one column, each panel with its legend beside it.
    pub columns: usize,
}

/// Palette index of the grey used for guides (the Pareto front).
pub const GREY: usize = usize::MAX;

/// A step function through `(size, value)` points sorted by size: each value is held from
/// the previous size (exclusive) up to its own; the first starts one step below itself.
pub fn steps(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(points.len() * 2);
    for (i, &(x, y)) in points.iter().enumerate() {
        let prev = if i > 0 {
            points[i - 1].0
        } else {
            let step = points.get(1).map_or(16.0, |p| p.0 - x).max(1.0);
            x - step
        };
        out.push((prev, y));
        out.push((x, y));
    }
    out
}

/// A step function through `(from, to, value)` spans: each value held from `from` to `to`
/// (for ranges whose left edges are known, like zblock's block types).
pub fn spans(spans: &[(f64, f64, f64)]) -> Vec<(f64, f64)> {
    spans.iter().flat_map(|&(from, to, y)| [(from, y), (to, y)]).collect()
}

/// `text` in lines of at most `width` characters, broken at spaces (a longer word stays whole).
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split(' ') {
        match lines.last_mut() {
            Some(line) if line.chars().count() + 1 + word.chars().count() <= width => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    #[test]
    fn long_lines_break_at_spaces() {
        assert_eq!(super::wrap("aa bb cc", 5), ["aa bb", "cc"]);
        assert_eq!(super::wrap("abcdefg h", 3), ["abcdefg", "h"]);
        assert_eq!(super::wrap("short", 80), ["short"]);
    }
}
