//! The driver's state, grouped by job: the objects it keeps ([`Objects`]: handle words and
//! slot records), what it reports as the run goes ([`Telemetry`]) and the workload's
//! [`RunPhase`]. The queue of pool calls is [`super::batch::Batch`].

use super::outcome::{Counters, Peak};
use crate::progress::Progress;
use crate::timeline::Sample;
use crate::timing::CpuTimer;
use crate::trace_format::TraceWriter;
use zsmalloc_core::HandleWords;

/// The part of a workload the driver is in, named in the timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunPhase {
    /// Before the workload names its first phase.
    Start,
    Write,
    Fill,
    Churn,
    Shrink,
    Compact,
    Read,
    Replay,
    /// After the last operation (the timeline's last sample).
    End,
}

impl RunPhase {
    /// The name in the timeline's `phase` column.
    pub fn name(self) -> &'static str {
        match self {
            RunPhase::Start => "start",
            RunPhase::Write => "write",
            RunPhase::Fill => "fill",
            RunPhase::Churn => "churn",
            RunPhase::Shrink => "shrink",
            RunPhase::Compact => "compact",
            RunPhase::Read => "read",
            RunPhase::Replay => "replay",
            RunPhase::End => "end",
        }
    }
}

/// What a slot (one handle word) holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum State {
    Empty,
    /// An object whose bytes the driver generated and verifies.
    Pattern,
    /// Allocated by `malloc`, not yet written.
    Unwritten,
    /// An object whose bytes the workload supplied (and verifies itself).
    Bytes,
    /// A same-filled page kept outside the pool (as modern zram does).
    Same,
}

impl State {
    pub(super) fn holds_object(self) -> bool {
        matches!(self, State::Pattern | State::Unwritten | State::Bytes)
    }
}

/// One slot's record: 16 bytes, so a slot's checks and updates touch one cache line.
#[derive(Debug, Clone, Copy)]
pub(super) struct Slot {
    /// The content key of a [`State::Pattern`] object.
    pub(super) key: u64,
    /// The object's length (0 when empty).
    pub(super) len: u32,
    pub(super) state: State,
}

impl Slot {
    pub(super) const EMPTY: Slot = Slot { key: 0, len: 0, state: State::Empty };
}

/// The objects as the driver keeps them: a handle word per slot (what the pool sees) and the
/// slot's record (what the driver checks), with the live totals.
pub(super) struct Objects {
    pub(super) words: HandleWords,
    /// What each slot holds, indexed like `words`.
    pub(super) slots: Vec<Slot>,
    /// The content key of the next generated object.
    pub(super) next_key: u64,
    pub(super) live_objects: u64,
    pub(super) live_bytes: u64,
    /// Same-filled pages kept outside the pool.
    pub(super) same_pages: u64,
}

impl Objects {
    pub(super) fn new() -> Self {
        Objects {
            words: HandleWords::new(),
            slots: Vec::new(),
            next_key: 0,
            live_objects: 0,
            live_bytes: 0,
            same_pages: 0,
        }
    }

    /// Live objects by length (index: length in bytes, up to `longest`).
    pub(super) fn by_len(&self, longest: usize) -> Vec<u64> {
        let mut n = vec![0u64; longest + 1];
        for s in &self.slots {
            if s.state.holds_object() {
                n[(s.len as usize).min(longest)] += 1;
            }
        }
        n
    }
}

/// What the run reports as it goes: operation counters, the timeline, the progress bar, the
/// trace, the CPU time of the pool calls and the peak.
pub(super) struct Telemetry {
    pub(super) counters: Counters,
    /// Operations so far (the timeline's and the progress bar's clock).
    pub(super) ops: u64,
    pub(super) phase: RunPhase,
    /// Sample the timeline every this many operations (0: no timeline).
    pub(super) timeline_every: u64,
    pub(super) samples: Vec<Sample>,
    pub(super) progress: Progress,
    pub(super) recorder: Option<TraceWriter>,
    pub(super) cpu: CpuTimer,
    pub(super) peak: Peak,
}

impl Telemetry {
    pub(super) fn new(
        recorder: Option<TraceWriter>,
        timeline_every: u64,
        progress: Progress,
    ) -> Self {
        Telemetry {
            counters: Counters::default(),
            ops: 0,
            phase: RunPhase::Start,
            timeline_every,
            samples: Vec::new(),
            progress,
            recorder,
            cpu: CpuTimer::new(),
            peak: Peak::default(),
        }
    }

    /// Whether a timeline sample is due after the operation just counted.
    #[inline(always)]
    pub(super) fn sample_due(&self) -> bool {
        self.timeline_every > 0 && self.ops.is_multiple_of(self.timeline_every)
    }
}
