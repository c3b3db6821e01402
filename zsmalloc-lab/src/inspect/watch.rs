//! `--watch SECONDS`: the report again every interval until Ctrl-C (or `--count` reports). On
//! a terminal the screen is redrawn in place; otherwise (a pipe, a file) each report is printed
//! after the last, JSON as one line per report (JSON Lines) and CSV with its header once.
//! SIGINT and SIGTERM end the loop cleanly between two reports: exit 0.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use crate::error::{LabError, LabResult};

/// The shortest `--watch` interval: reading every device's files and drawing the report
/// takes milliseconds, and a faster redraw is flicker, not information.
pub const MIN_SECONDS: f64 = 0.1;
/// The longest `--watch` interval: a day.
pub const MAX_SECONDS: f64 = 86400.0;

/// The interval of `--watch`: [`MIN_SECONDS`] to [`MAX_SECONDS`].
pub fn interval(seconds: f64) -> LabResult<Duration> {
    if !(MIN_SECONDS..=MAX_SECONDS).contains(&seconds) {
        return Err(LabError::usage(format!(
            "--watch {seconds}: an interval from {MIN_SECONDS} to {MAX_SECONDS} seconds is accepted"
        )));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// How each report is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// The text as rendered (a table).
    Whole,
    /// JSON on one line.
    JsonLine,
    /// CSV: the header line once.
    Csv,
}

/// Prints `report(n)` (n = 0, 1, ...) every `every` until a signal or `count` reports.
pub fn watch(
    every: Duration,
    count: Option<u64>,
    shape: Shape,
    mut report: impl FnMut() -> LabResult<String>,
) -> LabResult<()> {
    // SIGINT and SIGTERM stop the loop instead of the process (the shared handler).
    let stop = crate::interrupt::StopRequests::new();
    let tty = std::io::stdout().is_terminal();
    let mut n = 0u64;
    while !stop.requested() && count.is_none_or(|c| n < c) {
        let start = Instant::now();
        let text = report()?;
        let text = match shape {
            Shape::Whole => text,
            Shape::JsonLine => {
                let v: serde_json::Value = serde_json::from_str(&text)
                    .map_err(|e| LabError::runtime(format!("json: {e}")))?;
                v.to_string() + "\n"
            }
            Shape::Csv if n > 0 => text.lines().skip(1).map(|l| format!("{l}\n")).collect(),
            Shape::Csv => text,
        };
        let framed = if tty && shape == Shape::Whole {
            format!(
                "\x1b[H\x1b[2J{text}\nevery {:.1} s, Ctrl-C to stop (report {})\n",
                every.as_secs_f64(),
                n + 1
            )
        } else {
            text
        };
        let mut out = std::io::stdout().lock();
        match out.write_all(framed.as_bytes()).and_then(|_| out.flush()) {
            Ok(()) => {}
            // A reader that went away (`| head`) ends the watch.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
            Err(e) => {
                return Err(LabError::usage(format!(
                    "cannot write the report: {}",
                    zsmalloc_core::text_input::io_reason(&e)
                )))
            }
        }
        drop(out);
        n += 1;
        if count.is_some_and(|c| n >= c) {
            break;
        }
        while start.elapsed() < every && !stop.requested() {
            std::thread::sleep((every - start.elapsed().min(every)).min(Duration::from_millis(50)));
        }
    }
    Ok(())
}
