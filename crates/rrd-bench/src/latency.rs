//! A latency histogram for clients that time every request: fixed
//! log-linear buckets (HDR-like), so recording is an add to an array (no
//! allocation, no sorting) and histograms of several clients merge by
//! adding their buckets.
//!
//! Values are nanoseconds. Below 2^`SUB_BITS` every value has its own
//! bucket; above, each power of two is split into 2^`SUB_BITS` equal
//! buckets, so a bucket is at most 1/128 (0.8%) of its values wide.
//! Quantiles are given as the upper bound of their bucket (never below the
//! true value, at most 0.8% above it), capped by the exact maximum.
//!
//! Deliberately absent: coordinated-omission correction (the clients this
//! serves wait for each reply before sending the next request, as the real
//! clients they imitate do).

/// Sub-buckets per power of two: 2^7 = 128.
const SUB_BITS: u32 = 7;
const SUB: usize = 1 << SUB_BITS;
/// Buckets for every u64: the linear range, then one row per exponent.
const BUCKETS: usize = SUB + (64 - SUB_BITS as usize) * SUB;

/// Counts of latencies in log-linear buckets, plus the exact count, sum
/// and maximum.
#[derive(Clone)]
pub struct Histogram {
    counts: Box<[u64]>,
    count: u64,
    sum_ns: u128,
    max_ns: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram::new()
    }
}

impl std::fmt::Debug for Histogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Histogram").field("count", &self.count).field("max_ns", &self.max_ns).finish()
    }
}

fn index(v: u64) -> usize {
    if v < SUB as u64 {
        return v as usize;
    }
    let e = 63 - v.leading_zeros(); // >= SUB_BITS
    let sub = ((v >> (e - SUB_BITS)) as usize) & (SUB - 1);
    SUB + (e - SUB_BITS) as usize * SUB + sub
}

/// The largest value that falls in bucket `i`.
fn upper(i: usize) -> u64 {
    if i < SUB {
        return i as u64;
    }
    let row = (i - SUB) / SUB;
    let sub = ((i - SUB) % SUB) as u64;
    let e = row as u32 + SUB_BITS;
    let width = 1u64 << (e - SUB_BITS);
    ((1u64 << e) + sub * width).saturating_add(width - 1)
}

impl Histogram {
    pub fn new() -> Histogram {
        Histogram { counts: vec![0; BUCKETS].into_boxed_slice(), count: 0, sum_ns: 0, max_ns: 0 }
    }

    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.counts[index(ns)] += 1;
        self.count += 1;
        self.sum_ns += ns as u128;
        self.max_ns = self.max_ns.max(ns);
    }

    pub fn merge(&mut self, o: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(o.counts.iter()) {
            *a += b;
        }
        self.count += o.count;
        self.sum_ns += o.sum_ns;
        self.max_ns = self.max_ns.max(o.max_ns);
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn max_ns(&self) -> u64 {
        self.max_ns
    }

    pub fn mean_ns(&self) -> f64 {
        if self.count == 0 {
            f64::NAN
        } else {
            self.sum_ns as f64 / self.count as f64
        }
    }

    /// The value at quantile `q` (0..=1, nearest rank), as its bucket's
    /// upper bound capped by the maximum; NaN when empty.
    pub fn quantile_ns(&self, q: f64) -> f64 {
        if self.count == 0 {
            return f64::NAN;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return upper(i).min(self.max_ns) as f64;
            }
        }
        self.max_ns as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_every_value_in_order() {
        let mut last = 0;
        for v in (0..5000u64).chain([1 << 20, (1 << 40) + 12345, u64::MAX]) {
            let i = index(v);
            assert!(i < BUCKETS);
            assert!(upper(i) >= v, "{v} in bucket {i} with upper {}", upper(i));
            assert!(i >= last || v > 4999);
            last = i;
            if v >= SUB as u64 {
                // A bucket is at most 1/128 of its values wide.
                assert!((upper(i) - v) as f64 <= v as f64 / 128.0, "{v}: upper {}", upper(i));
            }
        }
        assert_eq!(upper(index(u64::MAX)), u64::MAX);
    }

    #[test]
    fn quantiles_are_close_and_merge_adds() {
        let mut a = Histogram::new();
        let mut b = Histogram::new();
        for v in 1..=1000u64 {
            a.record(v * 1000);
        }
        b.record(5_000_000);
        a.merge(&b);
        assert_eq!(a.count(), 1001);
        assert_eq!(a.max_ns(), 5_000_000);
        let p50 = a.quantile_ns(0.5);
        assert!((501_000.0..=501_000.0 * 1.008).contains(&p50), "{p50}");
        assert_eq!(a.quantile_ns(1.0), 5_000_000.0);
        assert!(a.quantile_ns(0.999) <= 1_000_000.0 * 1.008);
        assert!(Histogram::new().quantile_ns(0.5).is_nan());
    }
}
