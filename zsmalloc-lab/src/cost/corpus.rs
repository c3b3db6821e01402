//! Where the cost study's pages come from: files (directories walked as `pages` walks them:
//! [`crate::workload::files`]), the
//! anonymous memory of a live process (`/proc/PID/maps` + `/proc/PID/pagemap` + `/proc/PID/mem`:
//! the memory zram actually stores, only pages that are resident or swapped), or the built-in
//! synthetic corpus of `pages`. Pages are the simulated page size; a file's last page is
//! zero-padded.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::error::{LabError, LabResult};
use crate::workload::corpus;
use crate::workload::files::{FilePages, Walk};

/// Most pages of the built-in corpus (the memory plan refuses what does not fit before).
pub const MAX_SYNTHETIC_PAGES: usize = 200_000_000;

/// A corpus source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The built-in synthetic pages (`pages` pages, seeded).
    Builtin {
        pages: usize,
        seed: u64,
    },
    Files(Vec<PathBuf>),
    /// A live process's anonymous memory.
    Pid(u32),
}

impl Source {
    /// The source the corpus flags name: a process (`--pid`), files, or else the built-in
    /// corpus of `synthetic_pages` pages (the command's default when not given), seeded.
    pub fn from_flags(
        pid: Option<u32>,
        paths: &[PathBuf],
        synthetic_pages: usize,
        seed: u64,
    ) -> Source {
        match (pid, paths.is_empty()) {
            (Some(pid), _) => Source::Pid(pid),
            (None, false) => Source::Files(paths.to_vec()),
            (None, true) => Source::Builtin { pages: synthetic_pages, seed },
        }
    }

    /// Checks that the source can be read, before anything runs.
    pub fn check(&self) -> LabResult<()> {
        match self {
            Source::Builtin { pages, .. } if !(1..=MAX_SYNTHETIC_PAGES).contains(pages) => {
                Err(LabError::usage(format!(
                    "--synthetic-pages {pages} is outside 1..={MAX_SYNTHETIC_PAGES}"
                )))
            }
            Source::Builtin { .. } => Ok(()),
            Source::Files(paths) => Walk::check(paths),
            Source::Pid(pid) => {
                for f in ["maps", "mem"] {
                    let p = PathBuf::from(format!("/proc/{pid}/{f}"));
                    File::open(&p).map_err(|e| LabError::io("read", &p, &e))?;
                }
                Ok(())
            }
        }
    }

    /// How the source is described in reports.
    pub fn describe(&self) -> String {
        match self {
            Source::Builtin { pages, seed } => {
                format!("built-in synthetic corpus ({pages} pages, seed {seed})")
            }
            Source::Files(paths) => {
                paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" ")
            }
            Source::Pid(pid) => format!("anonymous memory of process {pid}"),
        }
    }

    /// Reads the pages of `page` bytes, concatenated: every page of the built-in corpus, at most
    /// `max_pages` from files or a process. The buffer is reserved up front, so a corpus that
    /// does not fit is refused, never an abort.
    pub fn load(&self, page: usize, max_pages: usize) -> LabResult<Vec<u8>> {
        let (n, flag) = match self {
            Source::Builtin { pages, .. } => (*pages, "--synthetic-pages"),
            Source::Files(_) | Source::Pid(_) => (max_pages, "--max-pages"),
        };
        let mut out = crate::memory::try_vec(n.saturating_mul(page), flag)?;
        match self {
            Source::Builtin { seed, .. } => {
                out.resize(n * page, 0);
                let mut rng = ChaCha8Rng::seed_from_u64(*seed);
                for p in out.chunks_mut(page) {
                    corpus::synth_page(&mut rng, p);
                }
            }
            Source::Files(paths) => {
                // Streamed: each file once, read in chunks, up to `max_pages` pages held.
                let mut files = FilePages::new(paths);
                let mut buf = vec![0u8; page];
                while out.len() / page < max_pages && files.next_page(&mut buf)? {
                    out.extend_from_slice(&buf);
                }
            }
            Source::Pid(pid) => read_process(*pid, page, max_pages, &mut out)?,
        }
        Ok(out)
    }
}

/// One anonymous, readable mapping of `/proc/PID/maps`: `[start, end)`.
pub fn anonymous_regions(maps: &str) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    for line in maps.lines() {
        let mut f = line.split_whitespace();
        let (Some(range), Some(perms), Some(_off), Some(_dev), Some(inode)) =
            (f.next(), f.next(), f.next(), f.next(), f.next())
        else {
            continue;
        };
        let name = f.next().unwrap_or("");
        // Private anonymous memory: no file behind it (the heap, stacks, anonymous mmaps).
        let anon = inode == "0"
            && (name.is_empty()
                || name == "[heap]"
                || name == "[stack]"
                || name.starts_with("[anon"));
        if !anon || !perms.starts_with('r') || perms.as_bytes().get(3) != Some(&b'p') {
            continue;
        }
        let Some((a, b)) = range.split_once('-') else { continue };
        if let (Ok(a), Ok(b)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16)) {
            if b > a {
                out.push((a, b));
            }
        }
    }
    out
}

fn read_process(pid: u32, page: usize, max_pages: usize, out: &mut Vec<u8>) -> LabResult<()> {
    let maps_path = PathBuf::from(format!("/proc/{pid}/maps"));
    let maps =
        zsmalloc_core::text_input::read_path(&maps_path, zsmalloc_core::text_input::Limits::FILE)
            .map_err(|e| LabError::usage(format!("cannot read {e}")))?;
    let mem_path = PathBuf::from(format!("/proc/{pid}/mem"));
    let mem = File::open(&mem_path).map_err(|e| LabError::io("read", &mem_path, &e))?;
    // pagemap tells which host pages are resident (bit 63) or swapped (bit 62); without it
    // every page of a region is read (untouched ones read as zeros, same-filled, skipped).
    let pagemap = File::open(format!("/proc/{pid}/pagemap")).ok();
    let host = zsmalloc_core::config::host_page_size().max(4096) as u64;
    let per = (page as u64 / host).max(1);
    let mut buf = vec![0u8; page];
    let mut entries = vec![0u8; 8 * per as usize];
    for (start, end) in anonymous_regions(&maps) {
        let mut at = start.next_multiple_of(page as u64);
        while at + page as u64 <= end {
            if out.len() / page >= max_pages {
                return Ok(());
            }
            let present = match &pagemap {
                Some(pm) => match pm.read_exact_at(&mut entries, at / host * 8) {
                    Ok(()) => entries.chunks(8).any(|e| {
                        let v = u64::from_le_bytes(e.try_into().unwrap_or([0; 8]));
                        v & (3 << 62) != 0
                    }),
                    Err(_) => true,
                },
                None => true,
            };
            if present && mem.read_exact_at(&mut buf, at).is_ok() {
                out.extend_from_slice(&buf);
            }
            at += page as u64;
        }
    }
    if out.is_empty() {
        return Err(LabError::usage(format!(
            "process {pid}: no readable anonymous memory (is it running, and may this user read /proc/{pid}/mem?)"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anonymous_regions_are_picked_from_maps() {
        let maps = "\
55d0c0000000-55d0c0021000 rw-p 00000000 00:00 0                          [heap]
7f0000000000-7f0000010000 rw-p 00000000 00:00 0 
7f0000010000-7f0000020000 r-xp 00000000 08:01 1234                       /usr/lib/libc.so.6
7f0000020000-7f0000030000 ---p 00000000 00:00 0 
7f0000030000-7f0000040000 rw-s 00000000 00:05 77                         /memfd:x (deleted)
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]
";
        assert_eq!(
            anonymous_regions(maps),
            [
                (0x55d0c0000000, 0x55d0c0021000),
                (0x7f0000000000, 0x7f0000010000),
                (0x7ffd00000000, 0x7ffd00021000)
            ]
        );
    }

    #[test]
    fn this_process_can_be_read() {
        let keep = vec![0x5au8; 1 << 20];
        std::hint::black_box(&keep);
        let pages = Source::Pid(std::process::id()).load(4096, 64).unwrap();
        assert_eq!(pages.len() % 4096, 0);
        assert!(!pages.is_empty() && pages.len() <= 64 * 4096);
    }
}
