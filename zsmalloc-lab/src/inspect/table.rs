//! `zsmalloc inspect`'s report for people (a table, each column explained under it, and one
//! sentence per device saying what its overhead means), and as JSON and CSV ([`Render`]).

use super::machine::Machine;
use super::zram::ZramDevice;
use super::zswap::Zswap;
use crate::error::LabResult;
use crate::report::csv::{self, Column, Numbers};
use crate::report::{grid, Render};

/// `0 B`, `512 B`, `44.0 KiB`, `312.4 MiB`, `1.50 GiB`.
pub fn bytes(n: u64) -> String {
    let f = n as f64;
    match n {
        0..1024 => format!("{n} B"),
        1024..1_048_576 => format!("{:.1} KiB", f / 1024.0),
        1_048_576..1_073_741_824 => format!("{:.1} MiB", f / 1_048_576.0),
        _ => format!("{:.2} GiB", f / 1_073_741_824.0),
    }
}

const HEADER: [&str; 13] = [
    "device",
    "state",
    "compressor",
    "swap",
    "data",
    "compressed",
    "pool memory",
    "overhead",
    "ratio",
    "same",
    "huge",
    "compacted",
    "peak",
];

/// What each column is, printed under the table.
const LEGEND: [(&str, &str); 11] = [
    ("state", "in use (set up with a disksize) or not initialised (disksize 0, holds nothing)"),
    ("swap", "the device's swap priority when it is active swap (/proc/swaps), else -"),
    ("data", "the pages written to the device, before compression (orig_data_size)"),
    ("compressed", "what the compressor made of them (compr_data_size)"),
    ("pool memory", "the RAM the device takes for them: zsmalloc's pages (mem_used_total)"),
    (
        "overhead",
        "pool memory holding no compressed byte = pool memory - compressed, and its share of \
         the pool: room left in partly filled pages, objects rounded up to a size class",
    ),
    ("ratio", "data / pool memory: bytes of data per byte of RAM"),
    (
        "same",
        "same-filled pages, one word repeated (mostly zeros): kept in zram's table, no pool \
         memory",
    ),
    ("huge", "pages that did not compress: stored whole, a page each"),
    ("compacted", "pool pages freed by compaction since the device was set up (same, huge and compacted count pages)"),
    ("peak", "the most pool memory the device has held (mem_used_max)"),
];

fn row(d: &ZramDevice) -> Vec<String> {
    let dash = || "-".to_string();
    let state = if d.initialised {
        "in use"
    } else if d.disksize.is_some() {
        "not initialised"
    } else {
        "unreadable"
    };
    let swap = d.swap.as_ref().map_or_else(dash, |s| format!("pri {}", s.priority));
    let mut r = vec![d.name.clone(), state.into(), d.compressor.clone().unwrap_or_else(dash), swap];
    match &d.figures {
        Some(f) => r.extend([
            bytes(f.data_bytes),
            bytes(f.compressed_bytes),
            bytes(f.pool_bytes),
            match f.overhead_pct {
                Some(p) => format!("{} ({p:.1}%)", bytes(f.overhead_bytes)),
                None => bytes(f.overhead_bytes),
            },
            f.ratio.map_or_else(dash, |r| format!("{r:.2}")),
            f.same_pages.to_string(),
            f.huge_pages.to_string(),
            f.pages_compacted.to_string(),
            bytes(f.peak_bytes),
        ]),
        None => r.extend(std::iter::repeat_with(dash).take(9)),
    }
    r
}

/// `first` then `text`, wrapped at 100 columns under the text's start.
fn wrap(first: &str, text: &str) -> String {
    let indent = " ".repeat(first.chars().count());
    let mut out = String::new();
    let mut line = first.to_string();
    for word in text.split_whitespace() {
        if line.chars().count() + word.len() >= 100 && line.len() > indent.len() {
            out += line.trim_end();
            out.push('\n');
            line = indent.clone();
        }
        line += word;
        line.push(' ');
    }
    out += line.trim_end();
    out.push('\n');
    out
}

/// One sentence per device with data: what its overhead is, in its own figures.
fn overhead_sentence(d: &ZramDevice) -> Option<String> {
    let f = d.figures.as_ref().filter(|f| f.pool_bytes > 0)?;
    Some(format!(
        "{}: {} of data compressed to {}, kept in {} of RAM; {} of that RAM ({:.1}%) holds no \
         compressed byte — the allocator's overhead.",
        d.name,
        bytes(f.data_bytes),
        bytes(f.compressed_bytes),
        bytes(f.pool_bytes),
        bytes(f.overhead_bytes),
        f.overhead_pct.unwrap_or(0.0)
    ))
}

fn zswap_lines(z: &Zswap) -> Vec<String> {
    if !z.present {
        return vec!["zswap: not in this kernel (/sys/module/zswap is missing)".into()];
    }
    let p = |k: &str| z.parameters.get(k).map_or("?", String::as_str);
    let state = match z.enabled {
        Some(true) => "enabled",
        Some(false) => "disabled",
        None => "state unknown",
    };
    let mut out = vec![format!(
        "zswap: {state}, compressor {}, pool at most {}% of RAM",
        p("compressor"),
        p("max_pool_percent")
    )];
    let opt = |b: Option<u64>| b.map_or_else(|| "?".to_string(), bytes);
    let ratio = z.ratio.map_or_else(String::new, |r| format!(" (ratio {r:.2})"));
    out.push(format!(
        "  pool memory {} for {} of pages stored{ratio} (/proc/meminfo Zswap, Zswapped)",
        opt(z.pool_bytes),
        opt(z.stored_bytes)
    ));
    let v = |k: &str| z.vmstat.get(k).map_or_else(|| "?".to_string(), u64::to_string);
    out.push(format!(
        "  pages stored {}, loaded back {}, written back to swap {} since boot; zsmalloc pages \
         of the whole machine (zram included): {}",
        v("zswpout"),
        v("zswpin"),
        v("zswpwb"),
        v("nr_zspages")
    ));
    for cg in &z.cgroups {
        let s = |k: &str| cg.stat.get(k).copied();
        out.push(format!(
            "  cgroup {}: zswap {}, zswapped {}",
            cg.cgroup,
            opt(s("zswap")),
            opt(s("zswapped"))
        ));
    }
    if let Some(n) = &z.cgroups_note {
        out.push(format!("  cgroups: {n}"));
    }
    out
}

impl Render for Machine {
    const COMMAND: &'static str = "inspect";

    fn table(&self) -> String {
        let mut out = format!("kernel {}, page {} B\n\n", self.kernel, self.page_size);
        if self.zram.is_empty() {
            out += if self.zram_control {
                "zram: no device (zram is loaded, none is set up)\n"
            } else {
                "zram: no device (zram is not loaded)\n"
            };
        } else {
            let mut rows = vec![HEADER.iter().map(|h| h.to_string()).collect::<Vec<_>>()];
            rows.extend(self.zram.iter().map(row));
            out += &grid::align(&rows, 4);
            out.push('\n');
            for (name, what) in LEGEND {
                out += &wrap(&format!("  {name:<12} "), what);
            }
            let sentences: Vec<String> = self.zram.iter().filter_map(overhead_sentence).collect();
            if !sentences.is_empty() {
                out.push('\n');
                for sentence in sentences {
                    out += &wrap("", &sentence);
                }
            }
        }
        out.push('\n');
        for (i, line) in zswap_lines(&self.zswap).iter().enumerate() {
            let indent = if i == 0 { "" } else { "  " };
            out += &wrap(indent, line.trim_start());
        }
        for m in &self.missing {
            out += &format!("missing: {m}\n");
        }
        for u in self.all_unreadable() {
            out += &format!("could not read {u}\n");
        }
        out
    }

    fn json(&self) -> LabResult<String> {
        crate::report::json(self)
    }

    /// One row per device (zswap's figures repeated on each, and a row with device `zswap`
    /// alone when there is no device).
    fn csv(&self) -> String {
        let cols = csv_columns();
        let machine = csv::to_value(self);
        let devices: Vec<serde_json::Value> = self.zram.iter().map(csv::to_value).collect();
        let empty = serde_json::json!({"name": "-"});
        let mut rows: Vec<Vec<&serde_json::Value>> =
            devices.iter().map(|d| vec![d, &machine]).collect();
        if rows.is_empty() {
            rows.push(vec![&empty, &machine]);
        }
        csv::table(&cols, &rows, Numbers::AsJson)
    }
}

/// The CSV's columns: a device's, then the machine's and zswap's.
pub fn csv_columns() -> Vec<Column> {
    let mut cols = vec![Column::at(&["time_unix_s"]), Column::at(&["name"])];
    cols.extend(["initialised", "disksize", "compressor"].iter().map(|k| Column::at(&[k])));
    cols.push(Column::renamed("swap_priority", &["swap", "priority"]));
    for k in [
        "stored_pages",
        "data_bytes",
        "compressed_bytes",
        "pool_bytes",
        "overhead_bytes",
        "overhead_pct",
        "ratio",
        "same_pages",
        "huge_pages",
        "pages_compacted",
        "peak_bytes",
    ] {
        cols.push(Column::at(&["figures", k]));
    }
    cols.push(Column::renamed("zswap_enabled", &["zswap", "enabled"]));
    cols.push(Column::renamed("zswap_pool_bytes", &["zswap", "pool_bytes"]));
    cols.push(Column::renamed("zswap_stored_bytes", &["zswap", "stored_bytes"]));
    cols
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_at_a_glance() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(45056), "44.0 KiB");
        assert_eq!(bytes(3 << 29), "1.50 GiB");
    }

    #[test]
    fn every_report_form_has_every_device() {
        let m = Machine::read();
        let t = m.table();
        assert!(t.contains("zswap"), "{t}");
        for d in &m.zram {
            assert!(t.contains(&d.name), "{t}");
        }
        let csv = m.csv();
        assert_eq!(csv.lines().count(), 1 + m.zram.len().max(1), "{csv}");
        let v: serde_json::Value = serde_json::from_str(&m.json().unwrap()).unwrap();
        assert_eq!(v["zram"].as_array().unwrap().len(), m.zram.len());
    }
}
