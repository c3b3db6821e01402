//! Text tables for people: columns padded to their widest cell, two spaces apart.

/// Aligns `rows` (the header first): the first `left` columns left-aligned, the rest
/// right-aligned, trailing blanks trimmed. Widths count characters, so a label with accents
/// lines up like any other.
pub fn align(rows: &[Vec<String>], left: usize) -> String {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let w: Vec<usize> = (0..n)
        .map(|i| rows.iter().filter_map(|r| r.get(i)).map(|c| c.chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in rows {
        let cells: Vec<String> = r
            .iter()
            .enumerate()
            .map(
                |(i, c)| if i < left { format!("{c:<0$}", w[i]) } else { format!("{c:>0$}", w[i]) },
            )
            .collect();
        out += cells.join("  ").trim_end();
        out.push('\n');
    }
    out
}

pub use crate::line_wrap::{wrap, wrap_indented, WIDTH};

/// [`align`], split into as many tables as it takes for no line to pass [`WIDTH`]: each repeats
/// the first `keys` columns (those that name a row, at least the `left` ones) and takes as many
/// of the other columns, in order, as fit; the tables are a blank line apart.
pub fn fit(rows: &[Vec<String>], left: usize, keys: usize) -> String {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let keys = keys.max(left).min(n);
    let w: Vec<usize> = (0..n)
        .map(|i| rows.iter().filter_map(|r| r.get(i)).map(|c| c.chars().count()).max().unwrap_or(0))
        .collect();
    let key_width: usize = w[..keys].iter().map(|c| c + 2).sum();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut used = key_width;
    for (i, &width) in w.iter().enumerate().skip(keys) {
        match groups.last_mut() {
            Some(g) if used + width <= WIDTH => g.push(i),
            _ => {
                groups.push(vec![i]);
                used = key_width;
            }
        }
        used += width + 2;
    }
    if groups.is_empty() {
        return align(rows, left);
    }
    let tables: Vec<String> = groups
        .iter()
        .map(|g| {
            let cols: Vec<usize> = (0..keys).chain(g.iter().copied()).collect();
            let part: Vec<Vec<String>> = rows
                .iter()
                .map(|r| cols.iter().map(|&i| r.get(i).cloned().unwrap_or_default()).collect())
                .collect();
            align(&part, left)
        })
        .collect();
    tables.join("\n")
}

/// [`align`] with the header given apart.
pub fn with_head(head: &[&str], rows: &[Vec<String>], left: usize) -> String {
    let mut all = Vec::with_capacity(rows.len() + 1);
    all.push(head.iter().map(|h| h.to_string()).collect());
    all.extend(rows.iter().cloned());
    align(&all, left)
}

#[cfg(test)]
mod tests {
    #[test]
    fn columns_line_up_by_characters() {
        let rows = vec![
            vec!["config".into(), "pages".into()],
            vec!["défaut".into(), "12".into()],
            vec!["x".into(), "1234".into()],
        ];
        assert_eq!(super::align(&rows, 1), "config  pages\ndéfaut     12\nx        1234\n");
    }

    #[test]
    fn a_wide_table_is_split_and_every_part_names_its_rows() {
        let head: Vec<String> = (0..12).map(|i| format!("column{i:02}")).collect();
        let mut rows = vec![["config".to_string()].into_iter().chain(head).collect::<Vec<_>>()];
        rows.push(
            ["classic".to_string()].into_iter().chain((0..12).map(|i| "x".repeat(i + 5))).collect(),
        );
        let text = super::fit(&rows, 1, 1);
        assert!(text.lines().all(|l| l.chars().count() <= super::WIDTH), "{text}");
        let parts: Vec<&str> = text.split("\n\n").collect();
        assert!(parts.len() >= 2, "{text}");
        assert!(parts.iter().all(|p| p.starts_with("config ") && p.contains("\nclassic ")));
        for i in 0..12 {
            assert_eq!(text.matches(&format!("column{i:02}")).count(), 1, "{text}");
        }
        // A table that fits is left whole.
        let narrow = vec![vec!["config".to_string(), "pages".into()], vec!["a".into(), "1".into()]];
        assert_eq!(super::fit(&narrow, 1, 1), super::align(&narrow, 1));
    }

    #[test]
    fn prose_is_wrapped_at_spaces() {
        let line = "word ".repeat(60);
        let text = super::wrap(line.trim());
        assert!(
            text.lines().count() >= 3 && text.lines().all(|l| l.chars().count() <= super::WIDTH)
        );
        assert!(text.lines().skip(1).all(|l| l.starts_with("  word")), "{text}");
        assert_eq!(super::wrap("short line"), "short line\n");
    }
}
