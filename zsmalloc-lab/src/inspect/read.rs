//! Reading the machine's files for `inspect`: a file that cannot be read is noted (path and
//! reason) and the report goes on without it, never fails.

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::path::Path;

use zsmalloc_core::text_input::io_reason as reason;
use zsmalloc_core::text_input::{read_all, Limits};

/// Files that could not be read, as `path: reason`.
pub type Unreadable = Vec<String>;

/// The file's text, read under the limits of a file read whole (`text_input::Limits::FILE`).
fn bounded(path: &Path) -> std::io::Result<String> {
    let file = std::fs::File::open(path)?;
    read_all(file, &path.display().to_string(), Limits::FILE)
        .map_err(|e| std::io::Error::new(ErrorKind::InvalidData, e.message))
}

/// The file's text; `None`, noted in `unreadable`, when it cannot be read.
pub fn text(path: &Path, unreadable: &mut Unreadable) -> Option<String> {
    match bounded(path) {
        Ok(t) => Some(t),
        Err(e) => {
            unreadable.push(format!("{}: {}", path.display(), reason(&e)));
            None
        }
    }
}

/// The file's text; `None` when it does not exist (a file the kernel has only in some
/// configurations), noted in `unreadable` when it exists but cannot be read.
pub fn optional(path: &Path, unreadable: &mut Unreadable) -> Option<String> {
    match bounded(path) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == ErrorKind::NotFound => None,
        Err(e) => {
            unreadable.push(format!("{}: {}", path.display(), reason(&e)));
            None
        }
    }
}

/// The numbers of a line of numbers (`mm_stat`, `io_stat`, `bd_stat`); `None` when a field
/// is not a number.
pub fn numbers(text: &str) -> Option<Vec<u64>> {
    text.split_whitespace().map(|f| f.parse::<u64>().ok()).collect()
}

/// `key value` lines (`/proc/vmstat`, `memory.stat`) for the keys wanted.
pub fn key_values(text: &str, keys: &[&str]) -> BTreeMap<String, u64> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (k, v) = (f.next()?, f.next()?.parse::<u64>().ok()?);
            keys.contains(&k).then(|| (k.to_string(), v))
        })
        .collect()
}

/// A `Key:   1234 kB` line of `/proc/meminfo`, in bytes.
pub fn meminfo_bytes(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.split(':').next() == Some(key))?;
    let kib: u64 = line.split(':').nth(1)?.split_whitespace().next()?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_of_the_kernel_parse() {
        assert_eq!(numbers(" 1 2\t3\n"), Some(vec![1, 2, 3]));
        assert_eq!(numbers("1 x"), None);
        let kv =
            key_values("zswpin 4\nzswpout 7\nother 9\nzswpwb\n", &["zswpin", "zswpout", "zswpwb"]);
        assert_eq!(
            kv.into_iter().collect::<Vec<_>>(),
            [("zswpin".into(), 4), ("zswpout".into(), 7)]
        );
        assert_eq!(meminfo_bytes("Zswap:   12 kB\nZswapped: 40 kB\n", "Zswapped"), Some(40 << 10));
        assert_eq!(meminfo_bytes("Zswap: 12 kB\n", "Zswapped"), None);
    }

    #[test]
    fn an_unreadable_file_is_noted_not_fatal() {
        let mut u = Unreadable::new();
        assert!(text(Path::new("/nonexistent/zsmalloc-inspect"), &mut u).is_none());
        assert!(optional(Path::new("/nonexistent/zsmalloc-inspect"), &mut u).is_none());
        assert_eq!(u, ["/nonexistent/zsmalloc-inspect: no such file or directory"]);
    }
}
