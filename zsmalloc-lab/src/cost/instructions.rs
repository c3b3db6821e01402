//! Instruction counts where the machine has no hardware counter: `--instructions` runs the same
//! study again under `valgrind --tool=callgrind`, collecting only inside the timed passes
//! (`--toggle-collect` on [`collected`]) and dumping a profile after each one (`--dump-after`).
//! The child lists its passes in order (key, operations, batches); pass k is dump k. A pass's
//! instructions per operation are its count less the empty batch's per batch, over its
//! operations. They count user-space instructions only (`instructions_scope: "user"`): the
//! kernel's share (page faults, the clock's system call) is not in them.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::{CostReport, Pass};
use crate::error::{LabError, LabResult};

thread_local! {
    static MANIFEST: RefCell<Vec<(String, u64, u64)>> = const { RefCell::new(Vec::new()) };
}

/// Runs one timed pass; under callgrind (`cg`), inside [`collected`] and listed under `key`.
#[inline(always)]
pub fn pass(
    cg: bool,
    key: impl FnOnce() -> String,
    f: impl FnOnce() -> Option<Pass>,
) -> Option<Pass> {
    if !cg {
        return f();
    }
    let k = key();
    let p = collected(f);
    if let Some(p) = &p {
        MANIFEST.with(|m| m.borrow_mut().push((k, p.ops, p.batches)));
    }
    p
}

/// The function callgrind collects in (its name is the toggle pattern).
#[inline(never)]
pub fn collected(f: impl FnOnce() -> Option<Pass>) -> Option<Pass> {
    black_box(f())
}

/// Writes the passes run so far to `dir/manifest.tsv` (the child's last step).
pub fn write_manifest(dir: &Path) -> LabResult<()> {
    let text = MANIFEST.with(|m| {
        m.borrow().iter().map(|(k, o, b)| format!("{k}\t{o}\t{b}\n")).collect::<String>()
    });
    let p = dir.join("manifest.tsv");
    crate::atomic_file::write(&p, text.as_bytes())
}

/// [`collected`] as callgrind names it (demangled; every instance of the generic has this
/// name; a wildcard here makes callgrind dump nothing).
const PATTERN: &str = "zsmalloc_lab::cost::instructions::collected";

/// The `Ir` total of one callgrind dump (`summary:` or `totals:` line).
pub fn dump_total(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("summary:").or_else(|| l.strip_prefix("totals:")))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// Runs `exe args... --callgrind-child DIR` under callgrind; instructions per operation by pass
/// key.
pub fn run_child(exe: &Path, args: &[String]) -> LabResult<HashMap<String, u64>> {
    let dir = std::env::temp_dir().join(format!("zsmalloc-cost-cg-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| LabError::io("create", &dir, &e))?;
    let _scratch = Scratch(&dir);
    let out = dir.join("cg.out");
    let status = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg("--collect-atstart=no")
        .arg(format!("--toggle-collect={PATTERN}"))
        .arg(format!("--dump-after={PATTERN}"))
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(exe)
        .args(args)
        .arg("--callgrind-child")
        .arg(&dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .output()
        .map_err(|e| {
            LabError::usage(format!(
                "--instructions needs valgrind on PATH (cannot run it: {})",
                zsmalloc_core::text_input::io_reason(&e)
            ))
        })?;
    if !status.status.success() {
        let err = String::from_utf8_lossy(&status.stderr);
        let last: Vec<&str> = err.lines().rev().take(3).collect();
        return Err(LabError::runtime(format!(
            "the callgrind run failed: {}",
            last.into_iter().rev().collect::<Vec<_>>().join(" / ")
        )));
    }
    read_dumps(&dir, &out)
}

/// callgrind's directory, removed however the run ends (a failed run's dumps included).
struct Scratch<'a>(&'a Path);

impl Drop for Scratch<'_> {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(self.0);
    }
}

fn read_dumps(dir: &Path, out: &Path) -> LabResult<HashMap<String, u64>> {
    let mpath = dir.join("manifest.tsv");
    let manifest = std::fs::read_to_string(&mpath).map_err(|e| LabError::io("read", &mpath, &e))?;
    let base = out.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    // Dumps: cg.out.1, cg.out.2, ... in order (the final cg.out holds what came after).
    let mut dumps: Vec<(u64, PathBuf)> = std::fs::read_dir(dir)
        .map_err(|e| LabError::io("read", dir, &e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter_map(|p| {
            let name = p.file_name()?.to_string_lossy().into_owned();
            let n = name.strip_prefix(&format!("{base}."))?.parse::<u64>().ok()?;
            Some((n, p))
        })
        .collect();
    dumps.sort();
    let rows: Vec<(String, u64, u64)> = manifest
        .lines()
        .filter_map(|l| {
            let mut f = l.split('\t');
            Some((f.next()?.to_string(), f.next()?.parse().ok()?, f.next()?.parse().ok()?))
        })
        .collect();
    if rows.len() != dumps.len() {
        return Err(LabError::runtime(format!(
            "callgrind wrote {} dumps for {} passes",
            dumps.len(),
            rows.len()
        )));
    }
    let mut totals = Vec::new();
    for (_, p) in &dumps {
        let t = std::fs::read_to_string(p).map_err(|e| LabError::io("read", p, &e))?;
        totals.push(dump_total(&t).ok_or_else(|| {
            LabError::runtime(format!("no instruction total in '{}'", p.display()))
        })?);
    }
    let empty_per_batch = rows
        .iter()
        .zip(&totals)
        .find(|(r, _)| r.0 == "empty")
        .map_or(0.0, |(r, &t)| t as f64 / r.2.max(1) as f64);
    Ok(rows
        .iter()
        .zip(&totals)
        .filter(|(r, _)| r.0 != "empty")
        .map(|((k, ops, batches), &t)| {
            let v = (t as f64 - empty_per_batch * *batches as f64) / (*ops).max(1) as f64;
            (k.clone(), v.max(0.0).round() as u64)
        })
        .collect())
}

/// Puts callgrind's counts into the report's rows (`instructions_scope: "user"`).
pub fn apply(r: &mut CostReport, counts: &HashMap<String, u64>) {
    for row in &mut r.reads {
        let k = format!(
            "read|{}|{}|{}|{}|{}",
            row.label,
            row.compressor,
            row.mode,
            row.kind.name(),
            row.spanning
        );
        row.instructions_per_section = counts.get(&format!("{k}|section")).copied();
        row.instructions_per_read = counts.get(&format!("{k}|read")).copied();
        row.instructions_scope = row.instructions_per_section.map(|_| "user");
    }
    for w in &mut r.writes {
        let k = format!("write|{}|{}|{}", w.label, w.compressor, w.path);
        w.instructions_per_write = counts.get(&k).copied();
        w.instructions_scope = w.instructions_per_write.map(|_| "user");
    }
    r.environment.instruction_counter = "callgrind";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_are_read_from_dumps() {
        assert_eq!(dump_total("events: Ir\nsummary: 123456\n"), Some(123456));
        assert_eq!(dump_total("events: Ir\ntotals: 77\n"), Some(77));
        assert_eq!(dump_total("events: Ir\n"), None);
    }
}
