//! `zsmalloc kernel import`: traces of devices the lab cannot drive (a phone, a production
//! host), recorded with kprobes or bpftrace, turned into the lab's trace format
//! (docs/LAB.md, "The real kernel" has the commands that record them).
//!
//! Two line formats, recognised per line:
//! - kprobe events from `trace_pipe`: the entry of `zs_malloc` with `size=`, its return with
//!   `handle=` (paired per task: the entry's size waits for the same pid's return, so CPUs may
//!   interleave freely), `zs_free` with `handle=`, optionally `zs_compact`. The function is
//!   found from the probe location (`(zs_malloc+0x0/...)`, `(... <- zs_malloc)`), so the events
//!   may have any name. An optional `pool=` field names the pool;
//! - the output of the documented bpftrace one-liner: `zs_malloc <pool> <size> <handle>`,
//!   `zs_free <pool> <handle>`, `zs_compact <pool>`.
//!
//! Each handle is a trace id; a free finds its length through the handle. Nothing is dropped
//! without a count: lost events (`[LOST n EVENTS]`, `Lost n events`), entries without return
//! and returns without entry, failed allocations, frees of handles allocated before the trace
//! began, other pools' events, and lines of other events. A line that starts as one of ours but
//! cannot be read (truncated, a bad number) is an error naming its line.

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Serialize;

use zsmalloc_core::text_input::{escape, Limits, TextLines};

use crate::error::{LabError, LabResult};
use crate::trace_format::{TraceOp, TraceWriter};

#[derive(clap::Args, Debug, Clone)]
pub struct Import {
    /// trace_pipe lines of kprobe events, or the bpftrace one-liner's output ('-': stdin)
    pub input: PathBuf,
    /// The trace file to write
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: PathBuf,
    /// Keep only this pool's events (its address, as the lines print it)
    #[arg(long, value_name = "ADDR")]
    pub pool: Option<String>,
}

/// What the import found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ImportReport {
    pub input: String,
    pub output: String,
    pub lines: u64,
    pub stores: u64,
    pub frees: u64,
    pub compactions: u64,
    /// Events the kernel's buffer dropped, as the lines report them.
    pub lost_events: u64,
    /// `zs_malloc` entries whose return never came (lost, or the trace ended).
    pub unpaired_entries: u64,
    /// Returns without an entry (the entry was lost or came before the trace).
    pub unpaired_returns: u64,
    /// `zs_malloc` returned an error.
    pub failed_allocations: u64,
    /// Frees of handles allocated before the trace began (or whose allocation was lost).
    pub unknown_frees: u64,
    /// `zs_free(pool, 0)`: a no-op in the kernel.
    pub null_frees: u64,
    /// Events of pools other than `--pool`.
    pub other_pool_events: u64,
    /// Lines of other events, headers and blank lines.
    pub other_lines: u64,
    /// Pools seen (more than one without `--pool` mixes zram devices, or zram and zswap).
    pub pools: Vec<String>,
}

/// One recognised event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    MallocEntry {
        task: String,
        pool: Option<u64>,
        size: u64,
    },
    MallocReturn {
        task: String,
        pool: Option<u64>,
        handle: u64,
    },
    /// bpftrace: both halves at once.
    Malloc {
        pool: u64,
        size: u64,
        handle: u64,
    },
    Free {
        pool: Option<u64>,
        handle: u64,
    },
    Compact {
        pool: Option<u64>,
    },
    Lost(u64),
}

fn number(s: &str) -> Option<u64> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// `key=value` of a kprobe line.
fn field(line: &str, key: &str) -> Option<Result<u64, String>> {
    let at = line.split_whitespace().find_map(|w| w.strip_prefix(key)?.strip_prefix('='))?;
    Some(number(at).ok_or_else(|| format!("{key}={at} is not a number")))
}

/// Parses one line: `Ok(None)` for lines of other events.
pub fn parse_line(line: &str) -> Result<Option<Event>, String> {
    let t = line.trim();
    if t.is_empty() || t.starts_with('#') {
        return Ok(None);
    }
    // trace_pipe: "CPU:3 [LOST 120 EVENTS]"; bpftrace: "Lost 120 events".
    if let Some(rest) = t.split("[LOST").nth(1) {
        let n = rest.split_whitespace().next().and_then(number);
        return n.map(|n| Some(Event::Lost(n))).ok_or_else(|| "unreadable LOST count".into());
    }
    if let Some(rest) = t.strip_prefix("Lost ") {
        let n = rest.split_whitespace().next().and_then(number);
        return n.map(|n| Some(Event::Lost(n))).ok_or_else(|| "unreadable Lost count".into());
    }
    let f: Vec<&str> = t.split_whitespace().collect();
    let num = |i: usize, what: &str| -> Result<u64, String> {
        let s = f.get(i).ok_or_else(|| format!("truncated: no {what}"))?;
        number(s).ok_or_else(|| format!("{what} '{s}' is not a number"))
    };
    match f[0] {
        "zs_malloc" if f.len() <= 4 => {
            return Ok(Some(Event::Malloc {
                pool: num(1, "pool")?,
                size: num(2, "size")?,
                handle: num(3, "handle")?,
            }))
        }
        "zs_free" if f.len() <= 3 => {
            return Ok(Some(Event::Free { pool: Some(num(1, "pool")?), handle: num(2, "handle")? }))
        }
        "zs_compact" if f.len() <= 2 => {
            return Ok(Some(Event::Compact { pool: Some(num(1, "pool")?) }))
        }
        _ => {}
    }
    // kprobe: "<comm>-<pid> [cpu] flags ts: <event>: (<location>) fields".
    let Some(loc_start) = t.find(": (") else { return Ok(None) };
    let loc = &t[loc_start + 3..];
    let Some(loc_end) = loc.find(')') else {
        // Ours if it names one of the functions, or breaks off inside one's name.
        let tail = loc.rsplit("<- ").next().unwrap_or(loc).trim();
        let ours = |f: &&str| loc.contains(f) || (!tail.is_empty() && f.starts_with(tail));
        return if ["zs_malloc", "zs_free", "zs_compact"].iter().any(ours) {
            Err("truncated: the probe location is not closed".into())
        } else {
            Ok(None)
        };
    };
    let (location, fields) = (&loc[..loc_end], &loc[loc_end + 1..]);
    let task = t.split(" [").next().unwrap_or("").trim().to_string();
    let pool = field(fields, "pool").transpose()?;
    let need = |key: &str| -> Result<u64, String> {
        field(fields, key).unwrap_or_else(|| Err(format!("truncated: no {key}= field")))
    };
    let func = |name: &str| location.starts_with(&format!("{name}+"));
    Ok(Some(if location.ends_with("<- zs_malloc") {
        Event::MallocReturn { task, pool, handle: need("handle")? }
    } else if func("zs_malloc") {
        Event::MallocEntry { task, pool, size: need("size")? }
    } else if func("zs_free") {
        Event::Free { pool, handle: need("handle")? }
    } else if func("zs_compact") {
        Event::Compact { pool }
    } else {
        return Ok(None);
    }))
}

/// zs_malloc's error returns (`ERR_PTR(-errno)`) and 0.
fn is_error_handle(h: u64) -> bool {
    h == 0 || h >= u64::MAX - 4095
}

/// One allocation of `size` bytes that returned `handle`.
fn store(
    r: &mut ImportReport,
    w: &mut TraceWriter,
    live: &mut HashSet<u64>,
    size: u64,
    handle: u64,
) -> LabResult<()> {
    if is_error_handle(handle) {
        r.failed_allocations += 1;
        return Ok(());
    }
    live.insert(handle);
    r.stores += 1;
    w.op(&TraceOp::Store { id: handle, len: size as usize })
}

/// Imports `input` (lines) into a trace at `output`.
pub fn import(input: impl Read, output: &Path, pool: Option<&str>) -> LabResult<ImportReport> {
    let want = match pool {
        Some(p) => Some(
            number(p).ok_or_else(|| LabError::usage(format!("--pool '{p}' is not an address")))?,
        ),
        None => None,
    };
    let mut r = ImportReport { output: output.display().to_string(), ..Default::default() };
    let mut w = TraceWriter::create(output, &["imported from zs_malloc/zs_free events".into()])?;
    // Per task, the size of its open zs_malloc (None: another pool's, whose return is skipped).
    let mut pending: HashMap<String, Option<u64>> = HashMap::new();
    let mut live: HashSet<u64> = HashSet::new();
    let mut pools: Vec<u64> = Vec::new();
    let mut lines = TextLines::new(input, "", Limits::STREAM);
    loop {
        let (no, line) = match lines.next_line() {
            Ok(Some(l)) => l,
            Ok(None) => break,
            Err(e) => return Err(LabError::usage(format!("line {}: {}", e.line, e.message))),
        };
        r.lines += 1;
        let ev = parse_line(line)
            .map_err(|m| LabError::usage(format!("line {no}: {m}: '{}'", escape(line.trim()))))?;
        let Some(ev) = ev else {
            r.other_lines += 1;
            continue;
        };
        let ev_pool = match &ev {
            Event::MallocEntry { pool, .. }
            | Event::MallocReturn { pool, .. }
            | Event::Free { pool, .. }
            | Event::Compact { pool } => *pool,
            Event::Malloc { pool, .. } => Some(*pool),
            Event::Lost(_) => None,
        };
        if let Some(p) = ev_pool {
            if !pools.contains(&p) {
                pools.push(p);
            }
            if want.is_some_and(|w| w != p) {
                r.other_pool_events += 1;
                if let Event::MallocEntry { task, .. } = ev {
                    pending.insert(task, None);
                }
                continue;
            }
        }
        match ev {
            Event::Lost(n) => r.lost_events += n,
            Event::MallocEntry { task, size, .. } => {
                if pending.insert(task, Some(size)).is_some() {
                    r.unpaired_entries += 1;
                }
            }
            Event::MallocReturn { task, handle, .. } => match pending.remove(&task) {
                Some(Some(size)) => store(&mut r, &mut w, &mut live, size, handle)?,
                Some(None) => r.other_pool_events += 1,
                None => r.unpaired_returns += 1,
            },
            Event::Malloc { size, handle, .. } => store(&mut r, &mut w, &mut live, size, handle)?,
            Event::Free { handle: 0, .. } => r.null_frees += 1,
            Event::Free { handle, .. } => {
                if live.remove(&handle) {
                    r.frees += 1;
                    w.op(&TraceOp::Free { id: handle })?;
                } else {
                    r.unknown_frees += 1;
                }
            }
            Event::Compact { .. } => {
                r.compactions += 1;
                w.op(&TraceOp::Compact)?;
            }
        }
    }
    r.unpaired_entries += pending.len() as u64;
    r.pools = pools.iter().map(|p| format!("{p:#x}")).collect();
    if r.stores + r.frees + r.compactions == 0 {
        // Nothing to replay: no trace is written (the temporary one goes with `w`).
        return Err(LabError::usage(format!(
            "no input: no zs_malloc, zs_free or zs_compact event of the pool in {} lines",
            r.lines
        )));
    }
    w.finish()?;
    Ok(r)
}

pub fn run(a: &Import) -> LabResult<ImportReport> {
    let imported = if a.input.as_os_str() == "-" {
        import(std::io::stdin().lock(), &a.output, a.pool.as_deref())
    } else {
        let f = std::fs::File::open(&a.input).map_err(|e| LabError::io("read", &a.input, &e))?;
        import(f, &a.output, a.pool.as_deref())
    };
    // Errors of the input's lines name the input.
    let mut r = imported.map_err(|e| match e {
        LabError::Usage(m) if m.starts_with("line ") || m.starts_with("no input") => {
            LabError::Usage(format!("{}: {m}", a.input.display()))
        }
        other => other,
    })?;
    r.input = a.input.display().to_string();
    Ok(r)
}
