//! The steps of a fault's service timed, when `ZSMALLOC_TIER_BREAKDOWN` asks for it at the
//! start: each lap is the time since the one before, in the step's histogram of the stats file.
//! Off, a lap is one load of a flag; no clock is read. Laps count only between [`arm`] and
//! [`finish`], so a restore outside a fault's service (before a fork, stepping aside) is not
//! counted. All calls are made with the state's lock held, so the laps never interleave.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

use zsmalloc_tier::stats::Step;

use crate::tier;

static ON: AtomicBool = AtomicBool::new(false);
static ARMED: AtomicBool = AtomicBool::new(false);
static BASE: OnceLock<Instant> = OnceLock::new();
/// The last lap, in ns since `BASE`.
static LAST: AtomicU64 = AtomicU64::new(0);

/// Reads the switch (at the library's start, before the environment is stripped).
pub fn init(value: Option<&str>) {
    if value.is_some_and(|v| !v.is_empty() && v != "0") {
        BASE.get_or_init(Instant::now);
        ON.store(true, Ordering::Relaxed);
    }
}

/// Whether the steps are timed.
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

fn now() -> u64 {
    BASE.get().map_or(0, |b| b.elapsed().as_nanos() as u64)
}

/// A fault's service begins (its message read at `t0`): what passed since is the lookup.
pub fn arm(t0: Instant) {
    if ON.load(Ordering::Relaxed) {
        tier::stats().step(Step::Lookup, t0.elapsed().as_nanos() as u64);
        LAST.store(now(), Ordering::Relaxed);
        ARMED.store(true, Ordering::Relaxed);
    }
}

/// `step` has ended.
pub fn lap(step: Step) {
    if ON.load(Ordering::Relaxed) && ARMED.load(Ordering::Relaxed) {
        let t = now();
        tier::stats().step(step, t.saturating_sub(LAST.swap(t, Ordering::Relaxed)));
    }
}

/// What passed since the last lap belongs to no step (the wake of the faulting thread, whose
/// run on this CPU it includes).
pub fn skip() {
    if ON.load(Ordering::Relaxed) && ARMED.load(Ordering::Relaxed) {
        LAST.store(now(), Ordering::Relaxed);
    }
}

/// The last step, `step`, has ended: laps stop counting.
pub fn finish(step: Step) {
    lap(step);
    ARMED.store(false, Ordering::Relaxed);
}
