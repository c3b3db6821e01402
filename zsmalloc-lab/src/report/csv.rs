//! CSV: fields, columns read out of a row's JSON form, and the timeline file.
//!
//! A report's CSV is a list of [`Column`]s over the JSON its structures serialise to: a
//! column names the key (or the path of keys) its value sits at, and its header is that key,
//! so the two cannot drift apart. The few headers that differ from their key (kept so existing
//! files stay readable) say so with [`Column::renamed`].

use serde::Serialize;
use serde_json::Value;

use crate::error::LabResult;
use crate::result::permille_str;
use crate::timeline::Sample;

/// A CSV field, quoted when it holds a comma, quote or newline.
pub fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// How a CSV writes numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Numbers {
    /// As the JSON does (`97.0`): the runs' CSV.
    AsJson,
    /// As Rust prints them, without a trailing `.0` (`2048`): the cost study's CSV.
    Plain,
}

/// A JSON scalar as a CSV cell: null empty, strings quoted as needed.
pub fn cell(v: &Value, numbers: Numbers) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => field(s),
        Value::Number(n) if numbers == Numbers::Plain && n.is_f64() => {
            n.as_f64().map_or_else(|| n.to_string(), |f| f.to_string())
        }
        other => other.to_string(),
    }
}

/// One column: a header and where its value is.
#[derive(Debug, Clone)]
pub struct Column {
    pub header: String,
    source: Source,
}

#[derive(Debug, Clone)]
enum Source {
    /// Keys from the row's JSON object down to the value.
    Path(Vec<&'static str>),
    /// The same text in every row (which table of a multi-table file a row belongs to).
    Constant(&'static str),
}

impl Column {
    /// The value at `path`; the header is its last key.
    pub fn at(path: &[&'static str]) -> Column {
        let header = path.last().copied().unwrap_or_default().to_string();
        Column { header, source: Source::Path(path.to_vec()) }
    }

    /// A `{min, median, max}` figure's three columns: `key_min`, `key_median`, `key_max`.
    pub fn spread(key: &'static str) -> [Column; 3] {
        ["min", "median", "max"]
            .map(|s| Column { header: format!("{key}_{s}"), source: Source::Path(vec![key, s]) })
    }

    /// The value at `path` under another header.
    pub fn renamed(header: &str, path: &[&'static str]) -> Column {
        Column { header: header.into(), source: Source::Path(path.to_vec()) }
    }

    /// `text` in every row.
    pub fn constant(header: &str, text: &'static str) -> Column {
        Column { header: header.into(), source: Source::Constant(text) }
    }

    /// The value in `scopes`: the first scope holding the path (a row, then what it belongs
    /// to); `None` when none does.
    pub fn value<'a>(&self, scopes: &[&'a Value]) -> Option<&'a Value> {
        let Source::Path(path) = &self.source else { return None };
        scopes.iter().find_map(|s| path.iter().try_fold(*s, |v, k| v.get(k)))
    }

    fn text(&self, scopes: &[&Value], numbers: Numbers) -> String {
        match &self.source {
            Source::Constant(t) => field(t),
            Source::Path(_) => self.value(scopes).map_or_else(String::new, |v| cell(v, numbers)),
        }
    }
}

/// The JSON form of `v` (null if it has none; every report type serialises).
pub fn to_value<T: Serialize + ?Sized>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// A header line and one line per row; each row is a list of scopes, searched in order.
pub fn table(columns: &[Column], rows: &[Vec<&Value>], numbers: Numbers) -> String {
    let head: Vec<&str> = columns.iter().map(|c| c.header.as_str()).collect();
    let mut out = head.join(",") + "\n";
    for scopes in rows {
        let cells: Vec<String> = columns.iter().map(|c| c.text(scopes, numbers)).collect();
        out += &cells.join(",");
        out += "\n";
    }
    out
}

/// The columns of `columns` that no row resolves (for tests: each column must name a key the
/// JSON has).
pub fn unresolved<'a>(columns: &'a [Column], rows: &[Vec<&Value>]) -> Vec<&'a str> {
    columns
        .iter()
        .filter(|c| matches!(c.source, Source::Path(_)))
        .filter(|c| rows.iter().all(|scopes| c.value(scopes).is_none()))
        .map(|c| c.header.as_str())
        .collect()
}

/// Writes the samples of each labelled run as one CSV file.
pub fn write_timeline(path: &std::path::Path, runs: &[(&str, &[Sample])]) -> LabResult<()> {
    let mut out = String::from("label,op,phase,objects,bytes_stored,pages,utilization_pct\n");
    for (label, samples) in runs {
        for s in samples.iter() {
            out += &format!(
                "{},{},{},{},{},{},{}\n",
                field(label),
                s.op,
                field(&s.phase),
                s.objects,
                s.bytes_stored,
                s.pages,
                permille_str(s.utilization_permille)
            );
        }
    }
    crate::atomic_file::write(path, out.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_quoted_when_needed() {
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"x\""), "\"say \"\"x\"\"\"");
        assert_eq!(field("x\"y,"), "\"x\"\"y,\"");
        assert_eq!(field("plain"), "plain");
    }

    #[test]
    fn columns_read_their_key_from_the_first_scope_holding_it() {
        let row = serde_json::json!({"n": 3, "t": {"min": 1.5, "median": 2.0, "max": 2.5}});
        let parent = serde_json::json!({"label": "a,b", "n": 9});
        let mut cols = vec![Column::at(&["label"]), Column::at(&["n"])];
        cols.extend(Column::spread("t"));
        cols.push(Column::constant("table", "reads"));
        cols.push(Column::at(&["missing"]));
        let rows = vec![vec![&row, &parent]];
        assert_eq!(
            table(&cols, &rows, Numbers::Plain),
            "label,n,t_min,t_median,t_max,table,missing\n\"a,b\",3,1.5,2,2.5,reads,\n"
        );
        assert!(table(&cols, &rows, Numbers::AsJson).ends_with(",1.5,2.0,2.5,reads,\n"));
        assert_eq!(unresolved(&cols, &rows), vec!["missing"]);
    }
}
