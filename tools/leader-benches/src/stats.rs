//! Summaries of samples: medians, extremes and nearest-rank percentiles.

use std::time::Duration;

/// Count, median, p99 and max of a sample of durations (nearest-rank percentiles).
#[derive(Debug, Clone, Copy)]
pub struct Stats {
    /// How many values the sample held.
    pub n: usize,
    /// The nearest-rank 50th percentile.
    pub median: Duration,
    /// The nearest-rank 99th percentile.
    pub p99: Duration,
    /// The largest value.
    pub max: Duration,
}

impl Stats {
    /// Summarises `sample`; panics when it is empty.
    pub fn of(mut sample: Vec<Duration>) -> Stats {
        assert!(!sample.is_empty(), "an empty sample");
        sample.sort_unstable();
        Stats {
            n: sample.len(),
            median: nearest_rank(&sample, 0.50),
            p99: nearest_rank(&sample, 0.99),
            max: sample[sample.len() - 1],
        }
    }
}

/// Returns the nearest-rank `p`-quantile (`p` in 0..=1) of a sorted, non-empty sample.
pub fn nearest_rank<T: Copy>(sorted: &[T], p: f64) -> T {
    let k = (p * sorted.len() as f64).ceil() as usize;
    sorted[k.clamp(1, sorted.len()) - 1]
}

/// Returns the median of `v` (the mean of the middle two for an even count; NaN when empty).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Returns the largest value of `v` (negative infinity when empty).
pub fn max(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::NEG_INFINITY, f64::max)
}

/// Returns the smallest value of `v` (infinity when empty).
pub fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_extremes_and_nearest_ranks() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(Vec::new()).is_nan());
        assert_eq!(min(&[2.0, -1.0, 5.0]), -1.0);
        assert_eq!(max(&[2.0, -1.0, 5.0]), 5.0);
        let ms = |n: u64| Duration::from_millis(n);
        let s = Stats::of((1..=150).rev().map(ms).collect());
        assert_eq!(
            (s.n, s.median, s.p99, s.max),
            (150, ms(75), ms(149), ms(150))
        );
        let one = Stats::of(vec![ms(7)]);
        assert_eq!((one.median, one.p99, one.max), (ms(7), ms(7), ms(7)));
    }
}
