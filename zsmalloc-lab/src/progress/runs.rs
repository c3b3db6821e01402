//! A batch of whole runs (optimize's sweep, its points, `--test`): each run may be shorter than
//! the second after which a run's own bar shows, so thousands of them (`optimize --points 0`)
//! would print nothing for minutes. This bar counts the runs ended and says the time left at
//! the pace so far (before the first run ends, at the last batch's pace).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::{ProgressSink, SHOW_AFTER};

/// Runs ended of a batch, drawn on the sink's terminal after a second; silent elsewhere.
pub struct RunsProgress {
    multi: Option<MultiProgress>,
    sink: ProgressSink,
    state: Mutex<State>,
}

struct State {
    bar: Option<ProgressBar>,
    label: String,
    total: u64,
    done: u64,
    start: Instant,
    /// The last batch's wall time per run, for the estimate before a run of this one ends.
    prior: Option<Duration>,
}

impl RunsProgress {
    pub fn new(sink: &ProgressSink, label: &str, total: usize) -> Self {
        let prior = *sink.pace.lock().unwrap_or_else(|e| e.into_inner());
        RunsProgress {
            multi: sink.multi.clone(),
            sink: sink.clone(),
            state: Mutex::new(State {
                bar: None,
                label: label.to_string(),
                total: total as u64,
                done: 0,
                start: Instant::now(),
                prior,
            }),
        }
    }

    /// One run of the batch ended (called from any of the runs' threads).
    pub fn run_done(&self) {
        let Some(multi) = &self.multi else { return };
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.done += 1;
        let elapsed = s.start.elapsed();
        if s.bar.is_none() && elapsed >= SHOW_AFTER && s.done < s.total {
            let b = ProgressBar::with_draw_target(Some(s.total), ProgressDrawTarget::hidden());
            if let Ok(style) = ProgressStyle::with_template(
                "{prefix:>16} [{wide_bar}] {pos}/{len} runs, {msg} {elapsed_precise}",
            ) {
                b.set_style(style.progress_chars("=> "));
            }
            b.set_prefix(s.label.clone());
            let b = b.with_elapsed(elapsed);
            // The elapsed time moves between runs that each take long.
            b.enable_steady_tick(Duration::from_millis(500));
            s.bar = Some(multi.add(b));
        }
        if let Some(b) = &s.bar {
            b.set_position(s.done);
            b.set_message(left_message(time_left(elapsed, s.done, s.total, s.prior)));
        }
    }
}

impl Drop for RunsProgress {
    /// Clears the bar and leaves this batch's pace for the next one's first estimate.
    fn drop(&mut self) {
        let s = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        if let Some(b) = s.bar.take() {
            b.finish_and_clear();
            if let Some(m) = &self.multi {
                m.remove(&b);
            }
        }
        if s.done > 0 {
            let pace = s.start.elapsed() / s.done.min(u64::from(u32::MAX)) as u32;
            *self.sink.pace.lock().unwrap_or_else(|e| e.into_inner()) = Some(pace);
        }
    }
}

/// The time left for `total - done` runs: at this batch's pace once a run has ended, else at
/// `prior` (the last batch's); unknown without either.
pub fn time_left(
    elapsed: Duration,
    done: u64,
    total: u64,
    prior: Option<Duration>,
) -> Option<Duration> {
    let left = u32::try_from(total.saturating_sub(done)).unwrap_or(u32::MAX);
    let pace = match done {
        0 => prior?,
        n => elapsed / u32::try_from(n).unwrap_or(u32::MAX),
    };
    Some(pace.saturating_mul(left))
}

/// `about 38 min left`; `time left unknown` before any pace is known.
pub fn left_message(left: Option<Duration>) -> String {
    let Some(left) = left else { return "time left unknown".to_string() };
    let s = left.as_secs();
    let amount = match s {
        0..=99 => format!("{s} s"),
        100..=5999 => format!("{} min", (s + 30) / 60),
        _ => format!("{:.1} h", s as f64 / 3600.0),
    };
    format!("about {amount} left")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_left_is_the_pace_so_far_else_the_last_batch_s() {
        let sec = Duration::from_secs;
        // 120 runs of 23961 in 60 s: half a second each, 23841 to go.
        assert_eq!(time_left(sec(60), 120, 23961, None), Some(Duration::from_millis(500) * 23841));
        assert_eq!(time_left(sec(3), 0, 10, Some(sec(2))), Some(sec(20)));
        assert_eq!(time_left(sec(3), 0, 10, None), None);
        assert_eq!(time_left(sec(9), 10, 10, None), Some(sec(0)));
        assert_eq!(left_message(Some(Duration::from_millis(500) * 23841)), "about 3.3 h left");
        assert_eq!(left_message(Some(sec(45))), "about 45 s left");
        assert_eq!(left_message(Some(sec(38 * 60 + 10))), "about 38 min left");
        assert_eq!(left_message(None), "time left unknown");
    }

    #[test]
    fn a_silent_sink_draws_nothing_and_keeps_no_pace() {
        let sink = ProgressSink::silent();
        let p = RunsProgress::new(&sink, "points", 3);
        for _ in 0..3 {
            p.run_done();
        }
        assert!(p.state.lock().unwrap().bar.is_none());
        drop(p);
        assert!(sink.pace.lock().unwrap().is_none());
    }
}
