//! Latencies as the floor reports them: median, 99th percentile, worst and mean.

/// A summary of measured durations, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    pub count: usize,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
    pub mean_ns: u64,
}

impl Summary {
    /// The summary of `samples` (sorted here), `None` when there are none. A percentile is the
    /// sample below which that share of the others lies (nearest rank).
    pub fn of(samples: &mut [u64]) -> Option<Summary> {
        if samples.is_empty() {
            return None;
        }
        samples.sort_unstable();
        let n = samples.len();
        let rank = |p: usize| samples[((n * p).div_ceil(100)).clamp(1, n) - 1];
        let mean_ns = (samples.iter().map(|&s| u128::from(s)).sum::<u128>() / n as u128) as u64;
        Some(Summary {
            count: n,
            p50_ns: rank(50),
            p99_ns: rank(99),
            max_ns: samples[n - 1],
            mean_ns,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_by_nearest_rank() {
        let mut v: Vec<u64> = (1..=100).rev().collect();
        let s = Summary::of(&mut v).expect("samples");
        assert_eq!((s.count, s.p50_ns, s.p99_ns, s.max_ns, s.mean_ns), (100, 50, 99, 100, 50));
        let s = Summary::of(&mut [7]).expect("one sample");
        assert_eq!((s.p50_ns, s.p99_ns, s.max_ns), (7, 7, 7));
        assert_eq!(Summary::of(&mut []), None);
    }
}
