//! Views computed from the kernel's own events, beside the critical path:
//! process-centric and kernel-wide profiles as KTAU gives them
//! ([`profile`]), the life of each network packet ([`packets`]), and the
//! call graph of a sampling profile ([`callgraph`]). The profiler and the
//! packet tracker are `KernelObserver`s, fed the decoded events of a
//! perf.data recording as it streams by (`PerfSource::observe`), and the
//! profile also the engine's state visits; neither holds the trace in
//! memory.

pub mod callgraph;
pub mod packets;
pub mod profile;

/// Count, mean, min, max and a power-of-two histogram of a quantity
/// (packet sizes, durations).
#[derive(Clone, Debug, Default, serde::Serialize, PartialEq)]
pub struct Values {
    pub count: u64,
    pub sum: u64,
    pub min: u64,
    pub max: u64,
    /// `[low, count]`: values in `low..2*low` (`0` for the value 0).
    pub histogram: Vec<(u64, u64)>,
}

impl Values {
    pub fn add(&mut self, v: u64) {
        if self.count == 0 || v < self.min {
            self.min = v;
        }
        self.max = self.max.max(v);
        self.count += 1;
        self.sum += v;
        let low = if v == 0 {
            0
        } else {
            1u64 << (63 - v.leading_zeros())
        };
        add_to_bucket(&mut self.histogram, low, 1);
    }
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }
}

/// Adds `n` to the histogram's bucket from `low` (kept sorted by `low`).
pub fn add_to_bucket(histogram: &mut Vec<(u64, u64)>, low: u64, n: u64) {
    match histogram.binary_search_by_key(&low, |&(l, _)| l) {
        Ok(i) => histogram[i].1 += n,
        Err(i) => histogram.insert(i, (low, n)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_keep_count_extremes_and_power_of_two_buckets() {
        let mut v = Values::default();
        for x in [0, 1, 3, 64, 100, 127, 128, 1500] {
            v.add(x);
        }
        assert_eq!((v.count, v.min, v.max, v.sum), (8, 0, 1500, 1923));
        assert_eq!(
            v.histogram,
            vec![(0, 1), (1, 1), (2, 1), (64, 3), (128, 1), (1024, 1)]
        );
        assert!((v.mean() - 240.375).abs() < 1e-9);
    }
}
