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
}
