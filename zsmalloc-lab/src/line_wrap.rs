//! Lines a user reads, kept within [`WIDTH`] columns: every report's and plan's long line
//! broken at spaces (`report::grid` aligns tables to the same width).

/// The widest line a text report prints: a terminal of 120 columns.
pub const WIDTH: usize = 120;

/// `line` broken at spaces into lines of at most [`WIDTH`] characters (a word longer than that
/// stays whole), the later ones indented by two spaces; ends with a newline.
pub fn wrap(line: &str) -> String {
    wrap_indented(line, 0)
}

/// [`wrap`] for a line indented by `indent` spaces (its later lines by two more).
pub fn wrap_indented(line: &str, indent: usize) -> String {
    let mut out = String::new();
    let first = " ".repeat(indent);
    let later = " ".repeat(indent + 2);
    let mut current = first.clone();
    let mut words_on_line = 0usize;
    for word in line.split(' ').filter(|w| !w.is_empty()) {
        let len = current.chars().count();
        if words_on_line > 0 && len + 1 + word.chars().count() > WIDTH {
            out += &current;
            out.push('\n');
            current = later.clone();
            words_on_line = 0;
        } else if words_on_line > 0 {
            current.push(' ');
        }
        current += word;
        words_on_line += 1;
    }
    out += &current;
    out.push('\n');
    out
}
