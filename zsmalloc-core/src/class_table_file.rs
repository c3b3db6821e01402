//! The class-table file: one plain-text format for every explicit table (docs/DESIGN.md, Class
//! tables), read by `ZSMALLOC_CLASS_TABLE` and the lab, written by the export of any
//! configuration's table.
//!
//! ```text
//! # anything after a '#' is a comment; blank lines are ignored
//! page_size 4096
//! # size chain  (size in bytes with the 8-byte header; chain = pages per zspage)
//! 32 1
//! 48 3
//! ...
//! 4096 1
//! ```
//!
//! The header line (`page_size N`, `N` in bytes or `16K`) comes before any class. Each class
//! line is `size chain`, or `size chain order` (the order, 0 when omitted, is the multi-page
//! band's `K` for a class above the page: chains then count units of `page << K` bytes). The
//! rules of [`crate::class_spec`] apply; a refusal names the line.
//! A file cut short shows as a class line without its chain or a table that stops before the
//! page-sized class: both are refused as such.

use std::io::Read;
use std::path::Path;

use crate::band::MAX_OBJECT;
use crate::class_spec::{check, max_classes, ClassSpec, ClassTableSpec};
use crate::class_table::ClassTable;
use crate::config::{parse_bytes, PoolConfig};
use crate::error::{Error, Result};
use crate::text_input::{escape, Limits, TextLines};

/// The keyword of the header line.
pub const PAGE_SIZE_KEY: &str = "page_size";

impl ClassTableSpec {
    /// Reads a table in the file format. A refusal reads `line N (`text`): why`.
    pub fn parse(text: &str) -> Result<Self> {
        let lines = TextLines::new(text.as_bytes(), "", Limits::TABLE);
        parse(lines).map_err(|message| Error::config("class_table", message))
    }

    /// Reads the table file at `path` (a file, a pipe or a device alike, under
    /// [`Limits::TABLE`]: `/dev/zero` is refused after one line's limit). A refusal names the
    /// file and the line.
    pub fn load(path: &Path) -> Result<Self> {
        let shown = escape(&path.display().to_string()).into_owned();
        let lines = TextLines::open(path, Limits::TABLE).map_err(|e| {
            Error::config("class_table", format!("cannot read the table file {}", e))
        })?;
        parse(lines).map_err(|message| Error::config("class_table", format!("{shown}: {message}")))
    }

    /// The table in the file format, nothing but the header and one `size chain` per class
    /// (`size chain order` with the band).
    pub fn to_file_text(&self) -> String {
        let mut out = format!("{PAGE_SIZE_KEY} {}\n", self.page_size());
        let band = self.multi_page_size() != 0;
        for c in self.classes() {
            if band {
                out.push_str(&format!("{} {} {}\n", c.size, c.chain, c.order));
            } else {
                out.push_str(&format!("{} {}\n", c.size, c.chain));
            }
        }
        out
    }
}

impl ClassTable {
    /// The table in the file format, each class commented with its shape so that a reader can
    /// edit it: objects per zspage, tail waste, objects spanning two units; `title` (one line per
    /// `\n`) opens the file as comments. With the band, each line carries its order.
    pub fn to_file_text(&self, title: &str) -> String {
        let page = self.page_size();
        let band = self.band().is_some();
        let mut out = String::new();
        for line in title.lines() {
            out.push_str(&format!("# {line}\n"));
        }
        out.push_str(&format!("{PAGE_SIZE_KEY} {page}\n"));
        let (head, unit) = if band { ("chain order", "unit") } else { ("chain", "page") };
        out.push_str(&format!(
            "# size {head}    objects/zspage, tail waste (bytes/zspage), spanning two {unit}s \
             per zspage\n"
        ));
        for c in self.classes().iter().filter(|c| self.stores_objects(c)) {
            let shape = if c.huge { ", huge".to_string() } else { String::new() };
            let order = if band { format!(" {}", c.order) } else { String::new() };
            out.push_str(&format!(
                "{:<5} {:<2}{order:<6}  # {} objs, waste {}, spanning {}{shape}\n",
                c.size,
                c.pages_per_zspage,
                c.objs_per_zspage,
                c.tail_waste(page),
                c.spanning_per_zspage(page),
            ));
        }
        out
    }
}

impl PoolConfig {
    /// The class table this configuration uses (mainline's computed one, any policy's, or its
    /// explicit table) in the file format, titled with the configuration. Loading the text back
    /// as `class_table` places every object exactly as this configuration does.
    pub fn export_class_table(&self) -> Result<String> {
        let table = ClassTable::new(self)?;
        let band = match self.multi_page_size {
            0 => String::new(),
            m => format!(", multi_page_size {m}"),
        };
        let title = match &self.class_table {
            Some(spec) => format!("explicit class table{band}, {} classes", spec.classes().len()),
            None => format!(
                "computed class table: chain_size {}, class_delta {}, chain_policy {}{}{band}; \
                 {} classes",
                self.chain_size,
                self.effective_delta(),
                self.chain_policy.name(),
                if self.merge_classes { "" } else { ", unmerged" },
                table.spec().classes().len()
            ),
        };
        Ok(table.to_file_text(&format!("zsmalloc class table\n{title}")))
    }
}

/// A parsed class line: its line number and text, for refusals.
struct Line {
    number: usize,
    text: String,
}

/// The most class lines a file may hold: the most classes any table can have. A longer file
/// is refused at the first line past it, before the rest is read.
pub fn max_class_lines() -> usize {
    max_classes(MAX_OBJECT)
}

fn parse<R: Read>(mut input: TextLines<R>) -> std::result::Result<ClassTableSpec, String> {
    let mut page: Option<(u32, usize)> = None;
    let mut classes = Vec::new();
    let mut lines: Vec<Line> = Vec::new();
    let mut last_line = 0;
    loop {
        let (number, raw) = match input.next_line() {
            Ok(Some((number, raw))) => (number as usize, raw),
            Ok(None) => break,
            Err(e) => return Err(format!("line {}: {}", e.line, e.message)),
        };
        let content = raw.split('#').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        last_line = number;
        let shown = escape(content);
        let here = |why: String| format!("line {number} (`{shown}`): {why}");
        let fields: Vec<&str> = content.split_whitespace().collect();
        if fields[0] == PAGE_SIZE_KEY {
            if let Some((_, first)) = page {
                return Err(here(format!("a second `{PAGE_SIZE_KEY}` header (line {first})")));
            }
            let [_, value] = fields[..] else {
                return Err(here(format!("the header is `{PAGE_SIZE_KEY} <bytes>`")));
            };
            let bytes = parse_bytes(value).and_then(|b| u32::try_from(b).ok());
            let Some(bytes) = bytes.filter(|b| b.is_power_of_two() && (4096..=65536).contains(b))
            else {
                return Err(here(format!(
                    "page size `{value}` is not a power of two in 4096..=65536"
                )));
            };
            page = Some((bytes, number));
            continue;
        }
        if page.is_none() {
            return Err(here(format!(
                "expected the header `{PAGE_SIZE_KEY} <bytes>` before the first class"
            )));
        }
        let number_of = |field: &str, what: &str| {
            field.parse::<u32>().map_err(|_| here(format!("{what} `{field}` is not a number")))
        };
        let spec = match fields[..] {
            [size, chain] => ClassSpec::new(number_of(size, "size")?, number_of(chain, "chain")?),
            [size, chain, order] => ClassSpec {
                size: number_of(size, "size")?,
                chain: number_of(chain, "chain")?,
                order: number_of(order, "order")?,
            },
            [size] => {
                number_of(size, "size")?;
                return Err(here(
                    "a class line is `size chain` and this one has no chain: is the file \
                     truncated?"
                        .into(),
                ));
            }
            _ => {
                return Err(here(format!(
                    "a class line is `size chain` or `size chain order`, this one has {} fields",
                    fields.len()
                )))
            }
        };
        if classes.len() == max_class_lines() {
            return Err(here(format!(
                "too many classes: no table has more than {} (one per multiple of 8 from 32 to \
                 {MAX_OBJECT}); the rest of the file is not read",
                max_class_lines()
            )));
        }
        classes.push(spec);
        lines.push(Line { number, text: shown.into_owned() });
    }
    let Some((page, header_line)) = page else {
        return Err(if last_line == 0 {
            format!("the file is empty: expected `{PAGE_SIZE_KEY} <bytes>` and classes")
        } else {
            format!("no `{PAGE_SIZE_KEY}` header")
        });
    };
    if classes.is_empty() {
        return Err(format!(
            "line {header_line}: the table has no classes after its header: is the file \
             truncated?"
        ));
    }
    if let Err(r) = check(page, &classes) {
        return Err(match r.entry {
            Some(i) => {
                let at = &lines[i];
                let hint = if r.ends_short { " (is the file truncated?)" } else { "" };
                format!("line {} (`{}`): {}{hint}", at.number, at.text, r.message)
            }
            None => format!("line {header_line}: {}", r.message),
        });
    }
    ClassTableSpec::new(page, classes).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain_policy::{Heuristic, PolicyRef};

    fn refusal(text: &str) -> String {
        ClassTableSpec::parse(text).unwrap_err().to_string()
    }

    #[test]
    fn comments_blank_lines_and_k_suffixes_are_read() {
        let t = ClassTableSpec::parse(
            "# my table\n\npage_size 16K   # 16 KiB pages\n  32 1\n48 3 # three pages\n16384 1\n",
        )
        .unwrap();
        assert_eq!(t.page_size(), 16384);
        let pairs: Vec<(u32, u32)> = t.classes().iter().map(|c| (c.size, c.chain)).collect();
        assert_eq!(pairs, [(32, 1), (48, 3), (16384, 1)]);
    }

    #[test]
    fn export_then_parse_is_the_identity_for_computed_tables() {
        let configs = [
            PoolConfig::default(),
            PoolConfig {
                chain_size: 10,
                chain_policy: PolicyRef::new(Heuristic),
                ..Default::default()
            },
            PoolConfig { page_size: 16384, class_delta: 16, ..Default::default() },
            PoolConfig {
                page_size: 65536,
                class_delta: 8,
                merge_classes: false,
                ..Default::default()
            },
            PoolConfig {
                chain_policy: PolicyRef::by_name("fixed-4").unwrap(),
                ..Default::default()
            },
        ];
        for cfg in configs {
            let text = cfg.export_class_table().unwrap();
            let spec = ClassTableSpec::parse(&text).unwrap();
            assert_eq!(spec, ClassTable::new(&cfg).unwrap().spec());
            assert_eq!(ClassTableSpec::parse(&spec.to_file_text()).unwrap(), spec);
            let loaded = ClassTable::new(&PoolConfig {
                page_size: cfg.page_size,
                class_table: Some(spec),
                ..Default::default()
            })
            .unwrap();
            let computed = ClassTable::new(&cfg).unwrap();
            assert_eq!(loaded.huge_class_size(), computed.huge_class_size());
            for size in 0..=cfg.page_size as usize + 16 {
                let (a, b) = (loaded.position(size), computed.position(size));
                assert_eq!(a, b, "size {size}");
                let (a, b) = (&loaded.classes()[a], &computed.classes()[b]);
                assert_eq!(
                    (a.size, a.pages_per_zspage, a.objs_per_zspage, a.huge),
                    (b.size, b.pages_per_zspage, b.objs_per_zspage, b.huge)
                );
            }
        }
    }

    #[test]
    fn bad_files_are_refused_naming_the_line() {
        let cases = [
            ("page_size 4096\n48 1\n32 1\n4096 1\n", "line 3 (`32 1`): size 32 is below the previous"),
            ("page_size 4096\n32 1\n32 2\n4096 1\n", "line 3 (`32 2`): duplicate size 32"),
            ("page_size 4096\n32 1\n# c\n44 1\n4096 1\n", "line 4 (`44 1`): size 44 is not a multiple"),
            ("page_size 4096\n16 1\n4096 1\n", "line 2 (`16 1`): size 16 is below"),
            ("page_size 4096\n32 1\n8192 1\n", "line 3 (`8192 1`): size 8192 is above the page"),
            ("page_size 4096\n32 0\n4096 1\n", "line 2 (`32 0`): chain 0 is outside"),
            ("page_size 4096\n32 17\n4096 1\n", "line 2 (`32 17`): chain 17 is outside"),
            ("page_size 4096\n32 1\n2048 1\n", "line 3 (`2048 1`): no class stores a whole page"),
            ("page_size 4096\n32 1\n1024 1\n20", "line 4 (`20`): a class line is `size chain` and this one has no chain: is the file truncated?"),
            ("page_size 4096\n32 1\n1024 1\n", "(is the file truncated?)"),
            ("page_size 4096\n", "line 1: the table has no classes"),
            ("", "the file is empty"),
            ("32 1\n4096 1\n", "line 1 (`32 1`): expected the header `page_size <bytes>`"),
            ("page_size 5000\n32 1\n", "line 1 (`page_size 5000`): page size `5000` is not"),
            ("page_size 4096\n32 x\n", "line 2 (`32 x`): chain `x` is not a number"),
            ("page_size 4096\n32 1 1 1\n", "line 2 (`32 1 1 1`): a class line is `size chain` or `size chain order`, this one has 4"),
            ("page_size 4096\n32 1\npage_size 4096\n", "line 3 (`page_size 4096`): a second"),
        ];
        for (text, want) in cases {
            let err = refusal(text);
            assert!(err.contains(want), "{text:?}: {err}");
        }
        let many: String = std::iter::once("page_size 4096\n".to_string())
            .chain((0..=509).map(|i| format!("{} 1\n", 32 + 8 * i)))
            .collect();
        let err = refusal(&many);
        assert!(err.contains("line 511") && err.contains("too many classes (510)"), "{err}");
    }

    #[test]
    fn endless_and_binary_inputs_are_refused_in_bounded_memory() {
        let err = ClassTableSpec::load(Path::new("/dev/zero")).unwrap_err().to_string();
        assert_eq!(
            err,
            "invalid class_table: /dev/zero: line 1: the line is longer than 64 KiB (the limit \
             of a line): not a text file?"
        );
        let err = ClassTableSpec::load(Path::new("/dev/urandom")).unwrap_err().to_string();
        assert!(err.starts_with("invalid class_table: /dev/urandom: line "), "{err}");
        let err = refusal("page_size 4096\n32 1\x1b[2J\n4096 1\n");
        assert!(err.contains("line 2 (`32 1\\u{1b}[2J`)"), "{err}");
        let endless: String = std::iter::once("page_size 4096\n".to_string())
            .chain((0..9000).map(|i| format!("{} 1\n", 32 + 8 * i)))
            .collect();
        let err = refusal(&endless);
        assert!(err.contains("line 8191") && err.contains("no table has more than 8189"), "{err}");
    }

    #[test]
    fn a_page_size_other_than_the_pools_is_refused() {
        let spec = ClassTableSpec::parse("page_size 16384\n32 1\n16384 1\n").unwrap();
        let cfg = PoolConfig { class_table: Some(spec), ..Default::default() };
        let err = ClassTable::new(&cfg).unwrap_err().to_string();
        assert!(err.contains("the table is for 16384-byte pages, the pool's are 4096"), "{err}");
    }

    /// `PoolConfig::from_lookup` over a map, with `ZSMALLOC_CLASS_TABLE` naming a file holding
    /// `text`.
    fn from_env_with_table(text: &str, vars: &[(&str, &str)]) -> Result<PoolConfig> {
        // A directory per call: tests run at once, and each removes its own.
        static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("zs-table-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("t{:x}.table", text.len() * 31 + vars.len()));
        std::fs::write(&path, text).unwrap();
        let path_text = path.to_string_lossy().into_owned();
        let lookup = |name: &str| {
            if name == "ZSMALLOC_CLASS_TABLE" {
                return Some(path_text.clone());
            }
            vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
        };
        let cfg = PoolConfig::from_lookup(lookup);
        std::fs::remove_dir_all(&dir).unwrap();
        cfg
    }

    #[test]
    fn the_environment_loads_a_table_file_and_names_the_variable_and_line() {
        let text = "page_size 16384\n32 1\n16384 1\n";
        let cfg = from_env_with_table(text, &[]).unwrap();
        assert_eq!(cfg.page_size, 16384, "the file's page size when ZSMALLOC_PAGE_SIZE is unset");
        assert_eq!(cfg.class_table.unwrap().classes().len(), 2);
        let err = from_env_with_table(text, &[("ZSMALLOC_PAGE_SIZE", "4K")]).unwrap_err();
        assert!(err
            .to_string()
            .starts_with("invalid ZSMALLOC_CLASS_TABLE: the table is for 16384"));
        let err = from_env_with_table("page_size 4096\n32 1\n32 1\n4096 1\n", &[]).unwrap_err();
        let err = err.to_string();
        assert!(
            err.starts_with("invalid ZSMALLOC_CLASS_TABLE: ") && err.contains("line 3"),
            "{err}"
        );
        let err = from_env_with_table(text, &[("ZSMALLOC_CHAIN_SIZE", "4")]).unwrap_err();
        assert!(err.to_string().contains("chain_size 4 means nothing with a class table"), "{err}");
        let missing = PoolConfig::from_lookup(|n| {
            (n == "ZSMALLOC_CLASS_TABLE").then(|| "/nonexistent/zs.table".to_string())
        });
        let err = missing.unwrap_err().to_string();
        assert!(
            err.contains("ZSMALLOC_CLASS_TABLE") && err.contains("/nonexistent/zs.table"),
            "{err}"
        );
    }
}
