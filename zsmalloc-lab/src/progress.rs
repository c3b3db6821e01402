//! The progress bar: on stderr, only when stderr is a terminal and a run lasts over a second.

use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

pub mod runs;

/// Whether progress bars may be drawn at all (stderr is a terminal).
pub fn stderr_is_terminal() -> bool {
    std::io::stderr().is_terminal()
}

/// Where a run's bar goes: nowhere, or a shared multi-bar (one line per configuration).
#[derive(Clone, Default)]
pub struct ProgressSink {
    multi: Option<MultiProgress>,
    /// The wall time per run of the last batch of runs ([`RunsProgress`]): the next batch's
    /// first estimate, before any of its own runs has ended.
    pace: Arc<Mutex<Option<Duration>>>,
}

impl ProgressSink {
    /// Draws on stderr when it is a terminal; otherwise silent.
    pub fn auto() -> Self {
        if stderr_is_terminal() {
            ProgressSink {
                multi: Some(MultiProgress::with_draw_target(ProgressDrawTarget::stderr())),
                pace: Arc::default(),
            }
        } else {
            ProgressSink::silent()
        }
    }

    pub fn silent() -> Self {
        ProgressSink::default()
    }

    /// Clears whatever is still drawn (call before printing the report).
    pub fn clear(&self) {
        if let Some(m) = &self.multi {
            let _ = m.clear();
        }
    }

    /// Whether bars may be drawn (so a run's length is worth estimating).
    pub fn is_active(&self) -> bool {
        self.multi.is_some()
    }
}

/// One run's progress. Cheap to tick: the clock is read every few thousand operations.
pub struct Progress {
    multi: Option<MultiProgress>,
    bar: Option<ProgressBar>,
    label: String,
    total: u64,
    start: Instant,
    next_check: u64,
}

const CHECK_EVERY: u64 = 4096;
pub(crate) const SHOW_AFTER: Duration = Duration::from_secs(1);

impl Progress {
    pub fn new(sink: &ProgressSink, label: &str) -> Self {
        Progress {
            multi: sink.multi.clone(),
            bar: None,
            label: label.to_string(),
            total: 0,
            start: Instant::now(),
            next_check: CHECK_EVERY,
        }
    }

    /// Expected number of operations (0 = unknown: a spinner).
    pub fn set_total(&mut self, total: u64) {
        self.total = total;
        if let Some(b) = &self.bar {
            b.set_length(total);
        }
    }

    #[inline]
    pub fn tick(&mut self, done: u64) {
        if self.multi.is_none() || done < self.next_check {
            return;
        }
        self.next_check = done + CHECK_EVERY;
        if self.bar.is_none() && self.start.elapsed() >= SHOW_AFTER {
            self.show();
        }
        if let Some(b) = &self.bar {
            b.set_position(done);
        }
    }

    fn show(&mut self) {
        let Some(multi) = &self.multi else { return };
        // Built hidden and configured before the multi-bar owns it: nothing is drawn outside
        // the multi-bar's lines (no stray first frame), and the clock starts when the run did.
        let bar = if self.total > 0 {
            let b = ProgressBar::with_draw_target(Some(self.total), ProgressDrawTarget::hidden());
            if let Ok(style) = ProgressStyle::with_template(
                "{prefix:>16} [{wide_bar}] {percent:>3}% {elapsed_precise}",
            ) {
                b.set_style(style.progress_chars("=> "));
            }
            b
        } else {
            let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
            if let Ok(style) = ProgressStyle::with_template(
                "{prefix:>16} {spinner} {human_pos} ops {elapsed_precise}",
            ) {
                b.set_style(style);
            }
            b
        };
        let bar = bar.with_elapsed(self.start.elapsed());
        bar.set_prefix(self.label.clone());
        self.bar = Some(multi.add(bar));
    }

    /// Removes the bar, if one was drawn.
    pub fn finish(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
            if let Some(m) = &self.multi {
                m.remove(&b);
            }
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// A bar by bytes read, for a regular file of known length (drawn as the project's bars
/// are: on a terminal, after a second).
pub struct ByteProgress {
    bar: Option<Progress>,
    _sink: ProgressSink,
}

impl ByteProgress {
    pub fn new(size: u64, label: &str) -> Self {
        let sink = ProgressSink::auto();
        let bar = (size > 0 && sink.is_active()).then(|| {
            let mut p = Progress::new(&sink, label);
            p.set_total(size);
            p
        });
        ByteProgress { bar, _sink: sink }
    }

    #[inline]
    pub fn tick(&mut self, bytes: u64) {
        if let Some(b) = &mut self.bar {
            b.tick(bytes);
        }
    }

    pub fn finish(&mut self) {
        if let Some(b) = &mut self.bar {
            b.finish();
        }
    }
}
