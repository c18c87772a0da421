//! Model: the numbers a training run reports — a decaying loss with seeded noise, grad norm, num
//! zeros, params norm, learning-rate schedule. Each value depends only on (seed, iteration), never on
//! timing or checkpoint mode, so two runs with one seed give identical `lm loss` golden values.

/// SplitMix64: a tiny, well-mixed generator; enough for plausible noise.
fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// A uniform number in (0, 1) from the top 53 bits.
fn unit(x: u64) -> f64 {
    ((x >> 11) as f64 + 0.5) / (1u64 << 53) as f64
}

/// A standard normal draw for (seed, iteration, stream), by Box–Muller.
fn normal(seed: u64, iteration: u64, stream: u64) -> f64 {
    let base = splitmix(seed ^ splitmix(iteration ^ (stream << 48)));
    let (u1, u2) = (unit(base), unit(splitmix(base)));
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// Per-iteration training statistics.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Step {
    pub(crate) loss: f64,
    pub(crate) grad_norm: f64,
    pub(crate) num_zeros: f64,
    pub(crate) params_norm: f64,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Curve {
    pub(crate) seed: u64,
    /// Decay constant in iterations: a quarter of the run, so short and long runs both flatten out.
    tau: f64,
}

impl Curve {
    pub(crate) fn new(seed: u64, train_iters: u64) -> Curve {
        Curve {
            seed,
            tau: (train_iters as f64 / 4.0).clamp(5.0, 2000.0),
        }
    }

    /// From ~10.9 (ln of a 32k vocabulary plus init noise) towards 2.6, with 0.5% noise.
    pub(crate) fn step(&self, iteration: u64) -> Step {
        let decay = (-(iteration as f64) / self.tau).exp();
        let loss = (2.6 + 8.3 * decay) * (1.0 + 0.005 * normal(self.seed, iteration, 1));
        let grad_norm = (1.5 + 9.0 * decay) * (1.0 + 0.05 * normal(self.seed, iteration, 2));
        let zeros = 27_000.0 + 3_000.0 * decay + 150.0 * normal(self.seed, iteration, 3);
        Step {
            loss,
            grad_norm: grad_norm.max(0.0),
            num_zeros: zeros.round().max(0.0),
            params_norm: 262.0 + 0.2 * iteration as f64,
        }
    }
}

/// Megatron's `--lr-decay-style` (the ones a fake needs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Decay {
    Cosine,
    Linear,
    Constant,
}

/// The learning-rate schedule: linear warm-up, then decay from `lr` to `min_lr` at the last iteration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Schedule {
    pub(crate) lr: f64,
    pub(crate) min_lr: f64,
    pub(crate) warmup: u64,
    pub(crate) decay: Decay,
    pub(crate) train_iters: u64,
}

impl Schedule {
    pub(crate) fn at(&self, iteration: u64) -> f64 {
        let (lr, min_lr, warmup) = (self.lr, self.min_lr, self.warmup);
        if warmup > 0 && iteration <= warmup {
            return lr * iteration as f64 / warmup as f64;
        }
        let span = self.train_iters.saturating_sub(warmup).max(1) as f64;
        let progress = (iteration.saturating_sub(warmup) as f64 / span).min(1.0);
        match self.decay {
            Decay::Constant => lr,
            Decay::Linear => lr - (lr - min_lr) * progress,
            Decay::Cosine => {
                min_lr + (lr - min_lr) * 0.5 * (1.0 + (std::f64::consts::PI * progress).cos())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loss_decays_and_is_seeded() {
        let c = Curve::new(1234, 100);
        let first = c.step(1).loss;
        let last = c.step(100).loss;
        assert!((10.0..11.5).contains(&first), "{first}");
        assert!((2.5..3.0).contains(&last), "{last}");
        assert_eq!(c.step(17), Curve::new(1234, 100).step(17));
        assert_ne!(c.step(17).loss, Curve::new(1235, 100).step(17).loss);
    }

    #[test]
    fn noise_is_roughly_standard_normal() {
        let n = 20_000;
        let draws: Vec<f64> = (0..n).map(|i| normal(42, i, 1)).collect();
        let mean = draws.iter().sum::<f64>() / n as f64;
        let var = draws.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / n as f64;
        assert!(mean.abs() < 0.05, "{mean}");
        assert!((var - 1.0).abs() < 0.05, "{var}");
    }

    #[test]
    fn learning_rate_schedule() {
        let s = |warmup, decay| Schedule {
            lr: 1e-4,
            min_lr: 1e-5,
            warmup,
            decay,
            train_iters: 100,
        };
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        assert_eq!(s(10, Decay::Cosine).at(5), 5e-5);
        assert_eq!(s(0, Decay::Cosine).at(0), 1e-4);
        assert!(close(s(0, Decay::Cosine).at(100), 1e-5));
        assert!(close(s(0, Decay::Cosine).at(50), 5.5e-5));
        assert!(close(s(0, Decay::Linear).at(50), 5.5e-5));
        assert!(close(s(0, Decay::Linear).at(75), 3.25e-5));
        assert_eq!(s(0, Decay::Constant).at(90), 1e-4);
    }
}
