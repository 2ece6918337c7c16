//! A small seeded PRNG (SplitMix64) for resume mode's drop times and node
//! choices: a run's schedule is reproducible from `--seed` without a new
//! dependency.

/// SplitMix64: one `u64` of state, good enough for scheduling.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    /// The stream of `seed`; `stream` separates the tasks of one run, so
    /// two subscribers with the same seed do not drop in lockstep.
    pub(crate) fn new(seed: u64, stream: u64) -> Self {
        let mut rng = Self(seed ^ stream.wrapping_mul(0xA076_1D64_78BD_642F));
        // Neighbouring seeds start far apart.
        rng.next_u64();
        rng
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1]: never 0, so its logarithm is finite.
    pub(crate) fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    /// Exponentially distributed with mean `mean`: the gaps between the
    /// events of a Poisson process, so drops come at no fixed rhythm.
    pub(crate) fn exponential(&mut self, mean: f64) -> f64 {
        -self.unit().ln() * mean
    }

    /// Uniform in `0..n` (`n > 0`); the bias of the modulo is negligible
    /// for the handful of URLs it picks from.
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_gives_one_sequence_and_streams_differ() {
        let take = |seed, stream| {
            let mut rng = Rng::new(seed, stream);
            (0..4).map(|_| rng.next_u64()).collect::<Vec<_>>()
        };
        assert_eq!(take(7, 0), take(7, 0));
        assert_ne!(take(7, 0), take(7, 1));
        assert_ne!(take(7, 0), take(8, 0));
    }

    #[test]
    fn exponential_draws_average_near_their_mean() {
        let mut rng = Rng::new(1, 0);
        let n = 20_000;
        let mean = (0..n).map(|_| rng.exponential(100.0)).sum::<f64>() / f64::from(n);
        // The standard error is 100 / sqrt(20000), about 0.7.
        assert!((95.0..105.0).contains(&mean), "{mean}");
        assert!((0..1000).all(|_| rng.below(3) < 3));
    }
}
