//! Runs that end on counts, not on a clock: a loaded machine makes them longer, never weaker.

use std::time::{Duration, Instant};

/// `STRESS_SECS`: the least a test runs (none by default: the counts decide).
pub fn soak() -> Duration {
    std::env::var("STRESS_SECS")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .map_or(Duration::ZERO, Duration::from_secs_f64)
}

/// Compactions after which a test whose counts are not reached gives up (its assertions then
/// say what was missing); far more than any test needs on an idle machine.
pub const GIVE_UP_COMPACTIONS: u64 = 1_000_000;

/// Polls (every 20 ms, which decides nothing) until `reached` holds and `STRESS_SECS` have
/// passed, or `give_up` holds; `report` is called with the time run at each poll.
pub fn run_until(
    reached: impl Fn() -> bool,
    give_up: impl Fn() -> bool,
    mut report: impl FnMut(Duration),
) {
    let (began, least) = (Instant::now(), soak());
    loop {
        std::thread::sleep(Duration::from_millis(20));
        report(began.elapsed());
        if (reached() && began.elapsed() >= least) || give_up() {
            return;
        }
    }
}
