//! Replays a trace file (format in `trace_format` and docs/LAB.md). Handle ids map to fresh
//! handle words in order of first appearance; object contents are generated and verified.
//! Operations the pool refuses are counted (`op_errors`, `store_failures`), as a C program
//! would have seen them fail, and the replay goes on.

use std::collections::HashMap;
use std::path::PathBuf;

use serde_json::json;

use super::{Extra, WorkloadKind};
use crate::driver::{Driver, RunPhase};
use crate::error::{LabError, LabResult};
use crate::memory::Plan;
use crate::trace_format::{TraceOp, TraceReader};

/// The parameters, as `zsmalloc run trace` and `zsmalloc replay` take them.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct Trace {
    /// The trace file (format: docs/LAB.md)
    pub file: PathBuf,
    /// Seeds object contents only (`--seed`).
    #[arg(skip = 1u64)]
    pub seed: u64,
}

impl WorkloadKind for Trace {
    fn params(&self) -> (serde_json::Value, String) {
        (json!({"file": self.file.display().to_string()}), format!("trace {}", self.file.display()))
    }

    /// Opens and parses the whole file, so a bad line fails before anything runs; a trace
    /// without an operation is refused (there would be nothing to measure).
    fn check(&self, _page: usize) -> LabResult<()> {
        if TraceReader::count_ops(&self.file)? == 0 {
            return Err(LabError::usage(format!(
                "trace: no input: {} has no operation",
                self.file.display()
            )));
        }
        Ok(())
    }

    fn estimated_ops(&self) -> u64 {
        TraceReader::count_ops(&self.file).unwrap_or(0)
    }

    /// A pass over the trace: the most bytes and objects live at once, each object at most the
    /// longest a pool stores (a page, or with the multi-page band up to 64 KiB), and the
    /// replay's map of handle ids.
    fn memory_plan(&self, page: usize) -> LabResult<Plan> {
        let longest = page.max(zsmalloc_core::band::MAX_OBJECT as usize);
        let mut reader = TraceReader::open(&self.file)?;
        let mut live: HashMap<u64, u64> = HashMap::new();
        let (mut bytes, mut peak) = (0u64, 0u64);
        let mut ids = 0u64;
        while let Some(op) = reader.next_op()? {
            match op {
                TraceOp::Store { id, len } | TraceOp::Malloc { id, len } => {
                    let len = len.min(longest) as u64;
                    ids += 1;
                    bytes += len;
                    bytes -= live.insert(id, len).unwrap_or(0);
                }
                TraceOp::Free { id } => bytes -= live.remove(&id).unwrap_or(0),
                TraceOp::Move { from, to } => {
                    if let Some(len) = live.remove(&from) {
                        bytes -= live.insert(to, len).unwrap_or(0);
                    }
                }
                TraceOp::Read { .. } | TraceOp::ReadSg { .. } | TraceOp::Write { .. } => {}
                TraceOp::Compact => {}
            }
            let now = super::pool_plan_bytes(live.len() as u64, bytes);
            peak = peak.max(now);
        }
        // The replay maps every id it met to a slot (about 48 bytes an entry).
        let plan = peak.saturating_add(ids.saturating_mul(48));
        Ok(Plan::new(plan, format!("the trace {}", self.file.display())))
    }

    fn seed(&self) -> u64 {
        self.seed
    }

    fn set_seed(&mut self, seed: u64) {
        self.seed = seed;
    }

    fn run(&self, d: &mut Driver<'_>, _timing: bool) -> LabResult<Extra> {
        let mut reader = TraceReader::open(&self.file)?;
        let mut slots: HashMap<u64, usize> = HashMap::new();
        let mut slot_of = |d: &mut Driver<'_>, id: u64| -> LabResult<usize> {
            if let Some(&s) = slots.get(&id) {
                return Ok(s);
            }
            let s = d.new_slot()?;
            slots.insert(id, s);
            Ok(s)
        };
        d.phase(RunPhase::Replay)?;
        while let Some(op) = reader.next_op()? {
            match op {
                TraceOp::Store { id, len } => {
                    let s = slot_of(d, id)?;
                    d.store(s, len)?;
                }
                TraceOp::Free { id } => {
                    let s = slot_of(d, id)?;
                    d.free(s)?;
                }
                TraceOp::Read { id, len } => {
                    let s = slot_of(d, id)?;
                    d.read(s, Some(len))?;
                }
                TraceOp::Compact => {
                    d.compact()?;
                }
                TraceOp::Malloc { id, len } => {
                    let s = slot_of(d, id)?;
                    d.malloc(s, len)?;
                }
                TraceOp::Write { id, len } => {
                    let s = slot_of(d, id)?;
                    d.write(s, len)?;
                }
                TraceOp::ReadSg { id, len } => {
                    let s = slot_of(d, id)?;
                    d.read_sg(s, len)?;
                }
                TraceOp::Move { from, to } => {
                    let (f, t) = (slot_of(d, from)?, slot_of(d, to)?);
                    d.move_handle(f, t)?;
                }
            }
        }
        Ok(Extra::default())
    }
}
