//! Times the lab can stand behind: CPU time of a defined timed phase, measured in batches on the
//! thread CPU clock, repeated, with repeats of several jobs interleaved (A B A B, never A A B B),
//! and reported as min / median / max.
//!
//! - [`Clock`]: the calling thread's CPU clock (`clock_gettime(CLOCK_THREAD_CPUTIME_ID)`): user
//!   and system time of this thread only, so another thread or process running beside it does
//!   not add to it (it still shares caches and memory bandwidth: the lab runs timed jobs one at
//!   a time);
//! - [`CpuTimer`]: sums the CPU time of timed sections. Reading the clock is a system call
//!   (a few hundred nanoseconds), so time batches of operations, not single ones;
//! - [`Samples`]: the repeats of one figure as `{min, median, max}`;
//! - [`TimeDelta`]: a relative difference between two [`Samples`] with its spread, and whether
//!   it is within noise (the two ranges overlap);
//! - [`interleave`]: runs `rounds` repeats of each job, round by round.
//!
//! ```
//! use zsmalloc_lab::timing::{interleave, CpuTimer, Samples};
//! let mut jobs: Vec<Box<dyn FnMut(usize) -> Result<f64, ()>>> = (0..2)
//!     .map(|j| {
//!         Box::new(move |_round: usize| {
//!             let mut t = CpuTimer::new();
//!             let s: u64 = t.time(|| (0..100_000u64 * (j + 1)).map(|x| x ^ (x >> 3)).sum());
//!             assert!(s > 0);
//!             Ok(t.seconds())
//!         }) as Box<dyn FnMut(usize) -> Result<f64, ()>>
//!     })
//!     .collect();
//! let per_job = interleave(3, &mut jobs).unwrap();
//! let a = Samples::of(&per_job[0]).unwrap();
//! assert!(a.min <= a.median && a.median <= a.max);
//! ```

use serde::Serialize;

/// The calling thread's CPU clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct Clock;

impl Clock {
    /// CPU time used by the calling thread so far, in nanoseconds.
    #[inline]
    pub fn now_ns() -> u64 {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `ts` is a valid, writable timespec; CLOCK_THREAD_CPUTIME_ID exists on every
        // Linux the lab supports (the call cannot fail with valid arguments).
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        if rc != 0 {
            return 0;
        }
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }
}

/// Sums the thread CPU time of timed sections.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTimer {
    total_ns: u64,
    sections: u64,
}

impl CpuTimer {
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs `f` as one timed section.
    #[inline]
    pub fn time<R>(&mut self, f: impl FnOnce() -> R) -> R {
        let t0 = Clock::now_ns();
        let r = f();
        self.add_ns(Clock::now_ns().saturating_sub(t0));
        r
    }

    /// Adds a section measured elsewhere (e.g. `Clock::now_ns()` before and after a batch).
    #[inline]
    pub fn add_ns(&mut self, ns: u64) {
        self.total_ns += ns;
        self.sections += 1;
    }

    pub fn total_ns(&self) -> u64 {
        self.total_ns
    }

    /// Timed sections so far.
    pub fn sections(&self) -> u64 {
        self.sections
    }

    pub fn seconds(&self) -> f64 {
        self.total_ns as f64 / 1e9
    }
}

/// The repeats of one figure. `median` of an even count is the mean of the middle two.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Samples {
    pub min: f64,
    pub median: f64,
    pub max: f64,
    /// How many values.
    #[serde(skip)]
    pub n: usize,
}

impl Samples {
    /// `None` when `values` is empty or holds a non-finite value.
    pub fn of(values: &[f64]) -> Option<Samples> {
        if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 };
        Some(Samples { min: v[0], median, max: v[n - 1], n })
    }

    /// Whether the ranges `[min, max]` of `self` and `other` overlap.
    pub fn overlaps(&self, other: &Samples) -> bool {
        self.min <= other.max && other.min <= self.max
    }

    /// Rounded to `decimals` decimal places (reports show microseconds).
    pub fn rounded(&self, decimals: i32) -> Samples {
        let f = 10f64.powi(decimals);
        let r = |x: f64| (x * f).round() / f;
        Samples { min: r(self.min), median: r(self.median), max: r(self.max), n: self.n }
    }

    /// `median [min..max]` with three decimals, e.g. `0.412 [0.405..0.431]`.
    pub fn display(&self) -> String {
        format!("{:.3} [{:.3}..{:.3}]", self.median, self.min, self.max)
    }
}

/// A time difference `other` vs `base`, in percent of `base`'s median, with its spread.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TimeDelta {
    /// `(other.median - base.median) / base.median`, percent.
    pub median_pct: f64,
    /// Smallest and largest difference the repeats allow: `(other.min - base.max)` and
    /// `(other.max - base.min)`, in percent of `base.median`.
    pub lo_pct: f64,
    pub hi_pct: f64,
    /// The two ranges overlap: the difference is not distinguishable from noise.
    pub within_noise: bool,
}

impl TimeDelta {
    /// `None` when `base.median` is not positive.
    pub fn between(base: &Samples, other: &Samples) -> Option<TimeDelta> {
        if base.median <= 0.0 || !base.median.is_finite() {
            return None;
        }
        let pct = |x: f64| (1000.0 * x / base.median).round() / 10.0;
        Some(TimeDelta {
            median_pct: pct(other.median - base.median),
            lo_pct: pct(other.min - base.max),
            hi_pct: pct(other.max - base.min),
            within_noise: base.overlaps(other),
        })
    }

    /// `+3.1% [-2.0%..+8.4%] within noise`, or without the mark when the ranges are apart.
    pub fn display(&self) -> String {
        let p = |x: f64| format!("{}{:.1}%", if x < 0.0 { "-" } else { "+" }, x.abs());
        let mut s = format!("{} [{}..{}]", p(self.median_pct), p(self.lo_pct), p(self.hi_pct));
        if self.within_noise {
            s += " within noise";
        }
        s
    }
}

/// Runs `rounds` repeats of every job, round by round (job 0, job 1, ..., job 0, job 1, ...),
/// one at a time; returns each job's results in round order. Stops at the first error.
pub fn interleave<T, E, F>(rounds: usize, jobs: &mut [F]) -> Result<Vec<Vec<T>>, E>
where
    F: FnMut(usize) -> Result<T, E>,
{
    let mut out: Vec<Vec<T>> = jobs.iter().map(|_| Vec::with_capacity(rounds)).collect();
    for round in 0..rounds {
        for (job, results) in jobs.iter_mut().zip(out.iter_mut()) {
            results.push(job(round)?);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_and_deltas() {
        let s = Samples::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.min, s.median, s.max, s.n), (1.0, 2.0, 3.0, 3));
        assert_eq!(Samples::of(&[4.0, 1.0, 2.0, 3.0]).unwrap().median, 2.5);
        assert!(Samples::of(&[]).is_none());
        assert!(Samples::of(&[1.0, f64::NAN]).is_none());
        let a = Samples::of(&[1.0, 1.1, 1.2]).unwrap();
        let b = Samples::of(&[1.15, 1.3, 1.4]).unwrap();
        let d = TimeDelta::between(&a, &b).unwrap();
        assert!(d.within_noise);
        assert_eq!((d.median_pct, d.lo_pct, d.hi_pct), (18.2, -4.5, 36.4));
        assert_eq!(d.display(), "+18.2% [-4.5%..+36.4%] within noise");
        let c = Samples::of(&[2.0, 2.1]).unwrap();
        assert!(!TimeDelta::between(&a, &c).unwrap().within_noise);
        assert!(TimeDelta::between(&Samples::of(&[0.0]).unwrap(), &a).is_none());
    }

    #[test]
    fn interleaves_round_by_round() {
        let order = std::cell::RefCell::new(Vec::new());
        let mk = |name: char| {
            let order = &order;
            move |round: usize| -> Result<usize, ()> {
                order.borrow_mut().push(name);
                Ok(round)
            }
        };
        let mut jobs = [mk('A'), mk('B')];
        let out = interleave(3, &mut jobs).unwrap();
        assert_eq!(order.into_inner(), ['A', 'B', 'A', 'B', 'A', 'B']);
        assert_eq!(out, [[0, 1, 2], [0, 1, 2]]);
    }

    #[test]
    fn the_thread_clock_counts_this_threads_work() {
        let mut t = CpuTimer::new();
        let x: u64 = t.time(|| (0..3_000_000u64).map(|i| i.wrapping_mul(i) >> 7).sum());
        assert!(x > 0);
        assert!(t.total_ns() > 0 && t.sections() == 1);
        // Sleeping uses no CPU.
        let mut s = CpuTimer::new();
        s.time(|| std::thread::sleep(std::time::Duration::from_millis(30)));
        assert!(s.total_ns() < 20_000_000, "{} ns while asleep", s.total_ns());
    }
}
