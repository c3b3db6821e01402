//! Replays a trace file (format in `trace_format` and docs/LAB.md). Handle ids map to fresh
//! handle words in order of first appearance; object contents are generated and verified.
//! Operations the pool refuses are counted (`op_errors`, `store_failures`), as a C program
//! would have seen them fail, and the replay goes on.
//!
//! The trace is opened once ([`TraceInput`]) and planned in one pass before any run; each run
//! then reads it again from its first line, or one read drives the pools of every configuration
//! ([`crate::replay_many`]). Ids become slots in [`super::trace_slots`].

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::json;

use super::trace_input::{TraceInput, TracePlan};
use super::trace_slots::{apply, SlotResolver};
use super::{Extra, WorkloadKind};
use crate::driver::{Driver, RunPhase};
use crate::error::{LabError, LabResult};
use crate::memory::{human, Limit, Plan};

/// The parameters, as `zsmalloc run trace` and `zsmalloc replay` take them.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct Trace {
    /// The trace file (format: docs/LAB.md); `-` reads standard input. A pipe, a FIFO or
    /// standard input is copied once to an unnamed temporary file, since the memory plan and
    /// every configuration read the trace again
    pub file: PathBuf,
    /// Seeds object contents only (`--seed`).
    #[arg(skip = 1u64)]
    pub seed: u64,
    /// The input once opened, shared by the clones every configuration's run holds.
    #[arg(skip)]
    pub input: Opened,
}

impl Trace {
    pub fn new(file: &Path) -> Trace {
        Trace { file: file.to_path_buf(), seed: 1, input: Opened::default() }
    }

    /// The input, opened on the first call.
    pub(crate) fn input(&self) -> LabResult<Arc<TraceInput>> {
        let mut opened = self.input.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(i) = opened.as_ref() {
            return Ok(Arc::clone(i));
        }
        let input = Arc::new(TraceInput::open(&self.file)?);
        *opened = Some(Arc::clone(&input));
        Ok(input)
    }

    /// The plan of the trace (made by the first call, against `limit`'s budget).
    pub(crate) fn plan(&self, payload: bool, limit: &Limit) -> LabResult<TracePlan> {
        let input = self.input()?;
        let plan = input.plan(limit.budget(), zsmalloc_core::band::MAX_OBJECT as u64, payload)?;
        if plan.ops == 0 {
            return Err(no_operation(input.name()));
        }
        Ok(plan)
    }
}

/// The refusal of a trace with no operation (empty, or comments only), the same from every
/// command that reads one.
pub fn no_operation(name: &str) -> LabError {
    LabError::usage(format!("trace: no input: {name} has no operation"))
}

/// A trace input shared by clones of its [`Trace`] (equal whatever it holds: the file names
/// the trace).
#[derive(Debug, Clone, Default)]
pub struct Opened(Arc<Mutex<Option<Arc<TraceInput>>>>);

impl PartialEq for Opened {
    fn eq(&self, _: &Opened) -> bool {
        true
    }
}

impl Eq for Opened {}

impl WorkloadKind for Trace {
    fn params(&self) -> (serde_json::Value, String) {
        (json!({"file": self.file.display().to_string()}), format!("trace {}", self.file.display()))
    }

    /// Opens the input (once: later calls find it open); the lines are read by the plan.
    fn check(&self, _page: usize) -> LabResult<()> {
        self.input().map(drop)
    }

    /// The operations the plan counted (0 before it was made: a spinner).
    fn estimated_ops(&self) -> u64 {
        let input = self.input.0.lock().unwrap_or_else(|p| p.into_inner());
        input.as_ref().and_then(|i| i.planned()).map_or(0, |p| p.ops)
    }

    /// A pass over the trace: the most bytes and objects live at once, each object at most the
    /// longest a pool stores (a page, or with the multi-page band up to 64 KiB), and the
    /// replay's map of handle ids. The pass stops once the plan is over the budget.
    fn memory_plan(&self, _page: usize, payload: bool, limit: &Limit) -> LabResult<Plan> {
        let plan = self.plan(payload, limit)?;
        let name = self.input()?.name().to_string();
        let from = match plan.stopped_at {
            0 => format!("the trace {name}"),
            at => format!(
                "the trace {name} (at least: past {} by its {} {at}, where the reading \
                 stopped)",
                human(limit.budget()),
                plan.stopped_unit
            ),
        };
        Ok(Plan::new(plan.bytes, from))
    }

    fn seed(&self) -> u64 {
        self.seed
    }

    fn set_seed(&mut self, seed: u64) {
        self.seed = seed;
    }

    fn run(&self, d: &mut Driver<'_>, _timing: bool) -> LabResult<Extra> {
        // A run whose command planned nothing (no limit was checked) plans without one.
        self.plan(zsmalloc_core::Backend::keeps_bytes(d.pool()), &Limit::new(None))?;
        let mut reader = self.input()?.reader()?;
        let mut slots = SlotResolver::new(&self.file.display().to_string());
        d.phase(RunPhase::Replay)?;
        while let Some(op) = reader.next_op()? {
            apply(d, &slots.resolve(op)?)?;
        }
        Ok(Extra::default())
    }
}
