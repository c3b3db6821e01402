//! Files and directories as a stream of pages, for `pages` and the cost study.
//!
//! The walk enters each directory once and yields each regular file once, by device and inode:
//! a symlink loop (`build/Release -> ..`) is not followed around, and a file reached through
//! several links (or hard links) is read once. Directories are walked depth first, entries in
//! name order; what is held at any time is the open file and one sorted listing per level, plus
//! the (device, inode) pairs seen — never the list of every file, never the file contents.
//! Files are read in chunks ([`CHUNK`]) and handed out one page at a time (the last page of a
//! file zero-padded).
//!
//! Inside a directory, entries that cannot be read (a dangling link, a file without read
//! permission, a FIFO or a socket) are skipped; a path given by the user that cannot be read is
//! an error.

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufReader, Read};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::error::{LabError, LabResult};

/// Bytes read from a file at a time.
pub const CHUNK: usize = 256 << 10;

/// A regular file found by [`Walk`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub path: PathBuf,
    /// Bytes, as `stat` gave them.
    pub len: u64,
    /// Given by the user (not found inside a directory).
    pub given: bool,
}

/// The regular files under some paths, each once (see the module documentation).
pub struct Walk {
    /// The given paths still to walk, the next one last.
    roots: Vec<PathBuf>,
    /// One sorted listing per directory being walked, innermost last.
    stack: Vec<std::vec::IntoIter<PathBuf>>,
    /// (device, inode) of every directory entered and every file yielded.
    seen: HashSet<(u64, u64)>,
}

impl Walk {
    pub fn new(paths: &[PathBuf]) -> Walk {
        let roots = paths.iter().rev().cloned().collect();
        Walk { roots, stack: Vec::new(), seen: HashSet::new() }
    }

    /// Checks that each given path is a readable file or directory (before anything runs).
    pub fn check(paths: &[PathBuf]) -> LabResult<()> {
        for p in paths {
            let meta = std::fs::metadata(p).map_err(|e| LabError::io("read", p, &e))?;
            if meta.is_file() {
                File::open(p).map_err(|e| LabError::io("read", p, &e))?;
            } else if meta.is_dir() {
                std::fs::read_dir(p).map_err(|e| LabError::io("read", p, &e))?;
            } else {
                return Err(not_a_file(p));
            }
        }
        Ok(())
    }

    /// Directories entered and files yielded so far.
    pub fn seen(&self) -> usize {
        self.seen.len()
    }
}

fn not_a_file(p: &Path) -> LabError {
    LabError::usage(format!("cannot read '{}': not a regular file or directory", p.display()))
}

impl Iterator for Walk {
    type Item = LabResult<Found>;

    fn next(&mut self) -> Option<LabResult<Found>> {
        loop {
            let (path, given) = match self.stack.last_mut() {
                Some(level) => match level.next() {
                    Some(p) => (p, false),
                    None => {
                        self.stack.pop();
                        continue;
                    }
                },
                None => (self.roots.pop()?, true),
            };
            // Symlinks are followed (a link to a file or directory outside the tree is read),
            // but what they lead to is entered or read once.
            let meta = match std::fs::metadata(&path) {
                Ok(m) => m,
                Err(e) if given => return Some(Err(LabError::io("read", &path, &e))),
                Err(_) => continue,
            };
            let first = self.seen.insert((meta.dev(), meta.ino()));
            if meta.is_dir() {
                if !first {
                    continue;
                }
                match std::fs::read_dir(&path) {
                    Ok(rd) => {
                        let mut entries: Vec<PathBuf> =
                            rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
                        entries.sort();
                        self.stack.push(entries.into_iter());
                    }
                    Err(e) if given => return Some(Err(LabError::io("read", &path, &e))),
                    Err(_) => {}
                }
            } else if meta.is_file() {
                if first {
                    return Some(Ok(Found { path, len: meta.len(), given }));
                }
            } else if given {
                return Some(Err(not_a_file(&path)));
            }
        }
    }
}

/// Pages of `page` bytes read from the files of a [`Walk`].
pub struct FilePages {
    walk: Walk,
    open: Option<(BufReader<File>, PathBuf)>,
    /// Files opened so far.
    pub files: u64,
}

impl FilePages {
    pub fn new(paths: &[PathBuf]) -> FilePages {
        FilePages { walk: Walk::new(paths), open: None, files: 0 }
    }

    /// Fills `buf` with the next page (a file's last page zero-padded); `Ok(false)` at the end.
    pub fn next_page(&mut self, buf: &mut [u8]) -> LabResult<bool> {
        loop {
            let Some((file, path)) = self.open.as_mut() else {
                let Some(found) = self.walk.next() else { return Ok(false) };
                let found = found?;
                match File::open(&found.path) {
                    Ok(f) => {
                        self.files += 1;
                        self.open = Some((BufReader::with_capacity(CHUNK, f), found.path));
                    }
                    Err(e) if found.given => return Err(LabError::io("read", &found.path, &e)),
                    Err(_) => {}
                }
                continue;
            };
            let mut filled = 0;
            while filled < buf.len() {
                match file.read(&mut buf[filled..]) {
                    Ok(0) => break,
                    Ok(n) => filled += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(LabError::io("read", path, &e)),
                }
            }
            if filled < buf.len() {
                self.open = None;
            }
            if filled > 0 {
                buf[filled..].fill(0);
                return Ok(true);
            }
        }
    }
}

/// Pages of `page` bytes the files under `paths` make, counting each file once, stopping once
/// `max` is reached (a walk of the metadata only: for the progress bar).
pub fn estimated_pages(paths: &[PathBuf], page: u64, max: Option<u64>) -> u64 {
    let mut pages = 0u64;
    for found in Walk::new(paths) {
        let Ok(found) = found else { break };
        pages += found.len.div_ceil(page.max(1));
        if max.is_some_and(|m| pages >= m) {
            break;
        }
    }
    max.map_or(pages, |m| pages.min(m))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn tree(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("zsmalloc-walk-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("a/b")).unwrap();
        dir
    }

    #[test]
    fn loops_and_links_are_walked_once() {
        let dir = tree("loops");
        std::fs::write(dir.join("a/b/file"), vec![1u8; 5000]).unwrap();
        std::fs::write(dir.join("top"), b"x").unwrap();
        // Two loops (2^depth paths if followed), a second link to the file, a hard link, a
        // dangling link and a link to a directory outside the tree.
        symlink("..", dir.join("a/b/up")).unwrap();
        symlink("../..", dir.join("a/b/up2")).unwrap();
        symlink("b/file", dir.join("a/again")).unwrap();
        std::fs::hard_link(dir.join("a/b/file"), dir.join("hard")).unwrap();
        symlink("nowhere", dir.join("dangling")).unwrap();
        let found: Vec<Found> = Walk::new(std::slice::from_ref(&dir)).map(Result::unwrap).collect();
        let names: Vec<String> = found
            .iter()
            .map(|f| f.path.strip_prefix(&dir).unwrap().display().to_string())
            .collect();
        // Name order, depth first: a/again (the first name that leads to the file) then top.
        assert_eq!(names, ["a/again", "top"]);
        assert!(found.iter().all(|f| !f.given));
        let mut pages = FilePages::new(&[dir.clone(), dir.join("a/b/file")]);
        let mut buf = vec![0u8; 4096];
        let mut n = 0;
        while pages.next_page(&mut buf).unwrap() {
            n += 1;
        }
        assert_eq!((n, pages.files), (2 + 1, 2), "the file's two pages and top's, once each");
        assert_eq!(estimated_pages(std::slice::from_ref(&dir), 4096, None), 3);
        assert_eq!(estimated_pages(std::slice::from_ref(&dir), 4096, Some(1)), 1);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn given_paths_must_be_readable() {
        let dir = tree("given");
        let missing = dir.join("missing");
        assert!(Walk::check(std::slice::from_ref(&dir)).is_ok());
        let e = Walk::check(std::slice::from_ref(&missing)).unwrap_err().to_string();
        assert!(e.contains("no such file"), "{e}");
        let mut w = Walk::new(&[missing]);
        assert!(w.next().unwrap().is_err());
        let e = Walk::check(&[PathBuf::from("/dev/null")]).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
