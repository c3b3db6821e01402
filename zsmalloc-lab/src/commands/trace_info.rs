//! `zsmalloc trace info`: a trace's figures in one pass, holding only the map of the handles
//! met (an [`IdMap`]) and fixed counters, however long the trace.

use std::fmt::Write as _;
use std::io::Read;

use serde_json::json;
use zsmalloc_core::text_input::escape;

use crate::error::{LabError, LabResult};
use crate::trace_format::{TraceOp, TraceReader};
use crate::workload::id_map::IdMap;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum InfoFormat {
    #[default]
    Table,
    Json,
}

/// The operations' names, in the order of [`kind`].
const KINDS: [&str; 8] = ["store", "free", "read", "compact", "malloc", "write", "read_sg", "move"];

fn kind(op: &TraceOp) -> usize {
    match op {
        TraceOp::Store { .. } => 0,
        TraceOp::Free { .. } => 1,
        TraceOp::Read { .. } => 2,
        TraceOp::Compact => 3,
        TraceOp::Malloc { .. } => 4,
        TraceOp::Write { .. } => 5,
        TraceOp::ReadSg { .. } => 6,
        TraceOp::Move { .. } => 7,
    }
}

/// What the map holds for a handle met and empty.
const EMPTY: u32 = 0;

/// The most length a map entry holds (one below the map's reserved value, less the `+1`).
const MAX_HELD: u64 = u32::MAX as u64 - 2;

/// A trace's figures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceFigures {
    pub input: String,
    pub binary: bool,
    pub zstd: bool,
    /// From a binary trace's header (0: not known).
    pub page_size: u32,
    pub command: String,
    pub by_kind: [u64; 8],
    /// Distinct handle ids named.
    pub handles: u64,
    pub peak_live_objects: u64,
    pub peak_live_bytes: u64,
    /// Object lengths of store and malloc: `[0]` length 0, `[k + 1]` lengths in `2^k..2^(k+1)`.
    pub lengths: [u64; 65],
}

impl TraceFigures {
    pub fn operations(&self) -> u64 {
        self.by_kind.iter().sum()
    }
}

/// Reads `reader` to its end; `tick` is told the bytes read as it goes.
pub fn figures<R: Read>(
    mut reader: TraceReader<R>,
    input: String,
    tick: &mut dyn FnMut(u64),
) -> LabResult<TraceFigures> {
    let mut f = TraceFigures {
        input,
        binary: false,
        zstd: false,
        page_size: 0,
        command: String::new(),
        by_kind: [0; 8],
        handles: 0,
        peak_live_objects: 0,
        peak_live_bytes: 0,
        lengths: [0; 65],
    };
    if let Some(h) = reader.binary_header() {
        (f.binary, f.zstd, f.page_size, f.command) = (true, h.zstd, h.page_size, h.command.clone());
    }
    // A handle's entry: EMPTY, or its object's length + 1 (lengths past MAX_HELD are held as
    // MAX_HELD, so the live bytes of objects over 4 GiB are counted short).
    let mut map = IdMap::new();
    let (mut objects, mut bytes) = (0u64, 0u64);
    let meet = |map: &mut IdMap, id: u64| -> u32 {
        match map.get(id) {
            Some(v) => v,
            None => {
                map.insert(id, EMPTY);
                EMPTY
            }
        }
    };
    let empty = |map: &mut IdMap, objects: &mut u64, bytes: &mut u64, id: u64| -> u32 {
        let old = meet(map, id);
        if old != EMPTY {
            map.insert(id, EMPTY);
            *objects -= 1;
            *bytes -= u64::from(old - 1);
        }
        old
    };
    while let Some(op) = reader.next_op()? {
        f.by_kind[kind(&op)] += 1;
        match op {
            TraceOp::Store { id, len } | TraceOp::Malloc { id, len } => {
                let bucket = if len == 0 { 0 } else { 64 - (len as u64).leading_zeros() as usize };
                f.lengths[bucket] += 1;
                empty(&mut map, &mut objects, &mut bytes, id);
                let held = (len as u64).min(MAX_HELD);
                map.insert(id, held as u32 + 1);
                objects += 1;
                bytes += held;
            }
            TraceOp::Free { id } => {
                empty(&mut map, &mut objects, &mut bytes, id);
            }
            TraceOp::Move { from, to } => {
                let moved = empty(&mut map, &mut objects, &mut bytes, from);
                empty(&mut map, &mut objects, &mut bytes, to);
                if moved != EMPTY {
                    map.insert(to, moved);
                    objects += 1;
                    bytes += u64::from(moved - 1);
                }
            }
            TraceOp::Read { id, .. } | TraceOp::ReadSg { id, .. } | TraceOp::Write { id, .. } => {
                meet(&mut map, id);
            }
            TraceOp::Compact => {}
        }
        f.peak_live_objects = f.peak_live_objects.max(objects);
        f.peak_live_bytes = f.peak_live_bytes.max(bytes);
        tick(reader.bytes_read());
    }
    f.handles = map.len();
    Ok(f)
}

/// The lengths bucket `k` holds, as `(from, to)`.
fn bucket_range(k: usize) -> (u64, u64) {
    match k {
        0 => (0, 0),
        k => (1 << (k - 1), ((1u128 << k) - 1) as u64),
    }
}

impl TraceFigures {
    pub fn render(&self, format: InfoFormat) -> LabResult<String> {
        match format {
            InfoFormat::Table => Ok(self.table()),
            InfoFormat::Json => {
                let mut ops = serde_json::Map::new();
                ops.insert("total".into(), json!(self.operations()));
                for (name, n) in KINDS.iter().zip(self.by_kind) {
                    ops.insert((*name).into(), json!(n));
                }
                let hist: Vec<_> = (0..self.lengths.len())
                    .filter(|&k| self.lengths[k] > 0)
                    .map(|k| {
                        let (from, to) = bucket_range(k);
                        json!({"from": from, "to": to, "count": self.lengths[k]})
                    })
                    .collect();
                let v = json!({
                    "input": self.input,
                    "format": if self.binary { "binary" } else { "text" },
                    "zstd": self.zstd,
                    "page_size": (self.page_size > 0).then_some(self.page_size),
                    "command": self.binary.then_some(&self.command),
                    "operations": ops,
                    "handles": self.handles,
                    "peak_live_objects": self.peak_live_objects,
                    "peak_live_bytes": self.peak_live_bytes,
                    "lengths": hist,
                });
                serde_json::to_string_pretty(&v)
                    .map(|s| s + "\n")
                    .map_err(|e| LabError::runtime(format!("json: {e}")))
            }
        }
    }

    fn table(&self) -> String {
        let mut s = String::new();
        let form = match (self.binary, self.zstd) {
            (false, _) => "text".to_string(),
            (true, false) => "binary".to_string(),
            (true, true) => "binary, zstd".to_string(),
        };
        let _ = writeln!(s, "{:<20}{} ({form})", "trace", self.input);
        if self.page_size > 0 {
            let _ = writeln!(s, "{:<20}{}", "page size", self.page_size);
        }
        if self.binary && !self.command.is_empty() {
            let _ = writeln!(s, "{:<20}{}", "recorded by", escape(&self.command));
        }
        let _ = writeln!(s, "{:<20}{}", "operations", self.operations());
        for (name, n) in KINDS.iter().zip(self.by_kind).filter(|(_, n)| *n > 0) {
            let _ = writeln!(s, "  {name:<18}{n}");
        }
        let _ = writeln!(s, "{:<20}{}", "handles", self.handles);
        let _ = writeln!(s, "{:<20}{}", "peak live objects", self.peak_live_objects);
        let _ = writeln!(s, "{:<20}{}", "peak live bytes", self.peak_live_bytes);
        let _ = writeln!(s, "lengths (store, malloc)");
        for k in (0..self.lengths.len()).filter(|&k| self.lengths[k] > 0) {
            let (from, to) = bucket_range(k);
            let range = if from == to { from.to_string() } else { format!("{from}-{to}") };
            let _ = writeln!(s, "  {range:<18}{}", self.lengths[k]);
        }
        s
    }
}
