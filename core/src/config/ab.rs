//! Stage "plan": `goldgate.yaml`'s `ab:` block — the defaults of `goldgate ab`'s sequential
//! statistics (false-alarm rate, minimum effect, most pairs, the job-to-job spread floor and the
//! metrics it times), with per-platform spread floors (a machine's own measured noise).

use serde::{Deserialize, Serialize};

use crate::rules::{Alpha, Effect, Tolerance};
use goldgate_schema::metric_names::{
    CHECKPOINT_ASYNC_LATENCY, CHECKPOINT_BLOCKING, ITERATION_TIME,
};

/// The sequential test's parameters on one platform: what `goldgate ab` judges with, and what
/// `ab.json` records under `sequential`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sequential {
    /// One-sided false-alarm rate of one metric's whole sequence (all looks together).
    pub alpha: f64,
    /// The change that counts: a regression is an interval wholly above `+min_effect`.
    pub min_effect: f64,
    /// Pairs (one job of each arm) at most; the last look ends `inconclusive` if undecided.
    pub max_pairs: u32,
    /// Pairs before the first look (default 1).
    pub min_pairs: u32,
    /// The floor of one job's spread (coefficient of variation of a job's summary within a
    /// block): the interval never assumes less noise than this, so one pair can decide.
    pub spread: f64,
    /// How many degrees of freedom the floor is worth (the jobs it was measured from, less one).
    pub spread_df: u32,
}

/// Built-in defaults, chosen by the resampling study (docs/book/src/results/ab-study.md).
impl Default for Sequential {
    fn default() -> Sequential {
        Sequential {
            alpha: 0.01,
            min_effect: 0.03,
            max_pairs: 6,
            min_pairs: 1,
            spread: 0.05,
            spread_df: 8,
        }
    }
}

impl Sequential {
    /// What one look may spend (Bonferroni over `max_pairs` looks).
    pub fn alpha_per_look(&self) -> f64 {
        self.alpha / f64::from(self.max_pairs.max(1))
    }

    /// The two-sided level of each look's interval (`1 − 2·alpha_per_look`).
    pub fn level(&self) -> f64 {
        1.0 - 2.0 * self.alpha_per_look()
    }
}

/// The `ab:` block, validated.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AbSettings {
    /// The test's parameters; its `spread` is the floor of a platform without its own.
    #[serde(flatten)]
    pub sequential: Sequential,
    /// Per platform: its own spread floor, replacing `sequential.spread`.
    pub platform_spread: Vec<(String, f64)>,
    /// The timing metrics judged by the sequential test (the others: exact B-vs-A and goldens).
    pub metrics: Vec<String>,
    /// Per platform: the save/iteration covariate of `ab --covariate`, measured by the study
    /// (docs/book/src/results/ab-study-covariate.md).
    pub platform_covariate: Vec<(String, AbCovariate)>,
}

/// `ab.platforms.<p>.covariate`: the slope of `ln(save)` on `ln(iteration time)` between jobs,
/// fixed before any run, and the adjusted save's spread floor.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct AbCovariate {
    pub slope: f64,
    pub spread: f64,
}

/// The most pairs one A/B may plan (`max_pairs`, `ab --max-pairs`). Each look spends
/// `alpha / max_pairs`: at 1000 looks that is 1e-5 a look, whose interval is too wide to decide
/// anything a shorter sequence could not, and 1000 pairs of a one-minute job are 33 GPU-hours.
pub const MAX_PAIRS: u32 = 1000;

impl Default for AbSettings {
    fn default() -> AbSettings {
        AbSettings {
            sequential: Sequential::default(),
            platform_spread: Vec::new(),
            metrics: [
                CHECKPOINT_BLOCKING,
                CHECKPOINT_ASYNC_LATENCY,
                ITERATION_TIME,
            ]
            .map(String::from)
            .to_vec(),
            platform_covariate: Vec::new(),
        }
    }
}

impl AbSettings {
    /// The test's parameters on `platform`: its own spread floor, else the block's.
    pub fn on(&self, platform: &str) -> Sequential {
        let spread = self
            .platform_spread
            .iter()
            .find(|(name, _)| name == platform)
            .map_or(self.sequential.spread, |(_, s)| *s);
        Sequential {
            spread,
            ..self.sequential
        }
    }

    /// The covariate measured for `platform`, if any.
    pub fn covariate_on(&self, platform: &str) -> Option<AbCovariate> {
        self.platform_covariate
            .iter()
            .find(|(name, _)| name == platform)
            .map(|(_, c)| *c)
    }
}

/// The `ab:` block as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawAb {
    #[serde(default)]
    alpha: Option<Alpha>,
    #[serde(default)]
    min_effect: Option<Effect>,
    #[serde(default)]
    max_pairs: Option<u32>,
    #[serde(default)]
    min_pairs: Option<u32>,
    #[serde(default)]
    spread: Option<Tolerance>,
    #[serde(default)]
    spread_df: Option<u32>,
    #[serde(default)]
    platforms: super::named::Named<RawAbPlatform>,
    #[serde(default)]
    metrics: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAbPlatform {
    spread: Option<Tolerance>,
    #[serde(default)]
    covariate: Option<AbCovariate>,
}

impl RawAb {
    /// The validated settings; the message names the offending key.
    pub(crate) fn settings(self) -> Result<AbSettings, String> {
        let base = Sequential::default();
        let max_pairs = self.max_pairs.unwrap_or(base.max_pairs);
        let min_pairs = self.min_pairs.unwrap_or(base.min_pairs);
        if max_pairs == 0 || min_pairs == 0 || min_pairs > max_pairs || max_pairs > MAX_PAIRS {
            return Err(format!(
                "ab: min_pairs ({min_pairs}) and max_pairs ({max_pairs}) must be 1 or more, min_pairs at most max_pairs, max_pairs at most {MAX_PAIRS}"
            ));
        }
        let spread = self.spread.map_or(base.spread, |s| s.0);
        let mut platform_spread: Vec<(String, f64)> = Vec::new();
        let mut platform_covariate = Vec::new();
        for (name, p) in self.platforms.0 {
            if let Some(s) = p.spread {
                platform_spread.push((name.value.clone(), s.0));
            }
            if let Some(c) = p.covariate {
                let fine = |v: f64| v.is_finite() && v > 0.0;
                if !(fine(c.slope) && c.slope <= 2.0 && fine(c.spread)) {
                    return Err(format!(
                        "ab: platforms.{}.covariate: slope must be above 0 and at most 2, spread above 0",
                        name.value
                    ));
                }
                platform_covariate.push((name.value, c));
            }
        }
        if spread <= 0.0 || platform_spread.iter().any(|(_, s)| *s <= 0.0) {
            return Err("ab: spread must be above 0 (0.05 = 5 % between jobs)".into());
        }
        let sequential = Sequential {
            alpha: self.alpha.map_or(base.alpha, |a| a.0),
            min_effect: self.min_effect.map_or(base.min_effect, |e| e.0),
            max_pairs,
            min_pairs,
            spread,
            spread_df: self.spread_df.unwrap_or(base.spread_df),
        };
        Ok(AbSettings {
            sequential,
            platform_spread,
            metrics: self
                .metrics
                .unwrap_or_else(|| AbSettings::default().metrics),
            platform_covariate,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<AbSettings, String> {
        let raw: RawAb = serde_saphyr::from_str(text).map_err(|e| e.to_string())?;
        raw.settings()
    }

    #[test]
    fn defaults_and_platform_floor() {
        let s = parse("max_pairs: 6\nplatforms:\n  h200: {spread: 0.04}\n").unwrap();
        assert_eq!(s.sequential.max_pairs, 6);
        assert_eq!(s.on("h200").spread, 0.04);
        assert_eq!(s.on("dev_cpu"), Sequential::default());
    }

    #[test]
    fn a_platform_may_carry_a_covariate_and_a_bad_one_is_refused() {
        let s = parse("platforms:\n  h200: {spread: 0.07, covariate: {slope: 0.76, spread: 0.055}}\n  x: {covariate: {slope: 0.5, spread: 0.04}}\n").unwrap();
        let c = s.covariate_on("h200").unwrap();
        assert_eq!((c.slope, c.spread), (0.76, 0.055));
        assert_eq!(s.on("x").spread, AbSettings::default().sequential.spread);
        assert!(s.covariate_on("dev_cpu").is_none());
        let bad =
            parse("platforms:\n  h200: {covariate: {slope: -1, spread: 0.05}}\n").unwrap_err();
        assert!(bad.contains("platforms.h200.covariate"), "{bad}");
        assert!(parse("platforms:\n  h200: {covariate: {slope: 0.7}}\n").is_err());
    }

    #[test]
    fn bad_values_are_refused() {
        assert!(parse("max_pairs: 0\n").is_err());
        assert!(parse("min_pairs: 5\nmax_pairs: 4\n").is_err());
        assert!(parse("spread: 0\n").is_err());
        assert!(parse("alpha: 0.5\n").is_err());
        assert!(parse("pairs: 3\n").is_err());
        // What `--max-pairs` takes, bounded the same way: no sequence sized to abort on.
        assert!(parse("max_pairs: 1000\n").is_ok());
        assert!(parse("max_pairs: 1001\n").is_err());
        assert!(parse("max_pairs: 4294967295\n").is_err());
    }
}
