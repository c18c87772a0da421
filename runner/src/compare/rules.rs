//! Stage "compare": the effective per-metric comparison rules, with defaults equal to
//! Megatron-LM's functional-test checks plus rules for goldgate's own metrics.
//!
//! `goldgate.yaml`'s `rules:` section (schema in `config::rules`, owned by the plan stage) is
//! turned into a [`RuleSet`] by the caller; without a file, [`RuleSet::megatron`] applies.
//! A metric takes the first rule whose pattern matches (`*` matches any run of characters).

use super::stats::Tolerance;
use super::verdict::Unit;
pub use crate::config::TestKind;

/// How a metric's values are read.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    /// Every golden step is checked; `fail_steps_allowance` steps may miss.
    PerStep,
    /// The median over a window of steps (Megatron's iteration-time).
    Window(Window),
    /// One value (goldgate's memory peaks, keyed by the final step).
    Scalar,
    /// One value per checkpoint save; the median of the counted saves is judged.
    PerSave,
}

/// A statistic that collapses a window of steps to one number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Statistic {
    Median,
    Mean,
    Min,
    Max,
}

impl Statistic {
    /// Applies the statistic; `None` for no values.
    pub fn apply(self, values: &[f64]) -> Option<f64> {
        let fold = |f: fn(f64, f64) -> f64| values.iter().copied().reduce(f);
        match self {
            Statistic::Median => super::stats::median(values),
            Statistic::Mean if values.is_empty() => None,
            Statistic::Mean => Some(values.iter().sum::<f64>() / values.len() as f64),
            Statistic::Min => fold(f64::min),
            Statistic::Max => fold(f64::max),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Statistic::Median => "median",
            Statistic::Mean => "mean",
            Statistic::Min => "min",
            Statistic::Max => "max",
        }
    }
}

/// Which steps a [`Kind::Window`] metric collapses, and how.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Window {
    pub statistic: Statistic,
    /// Inclusive steps for runs of at most `long_run_after` steps.
    pub steps: (u64, u64),
    /// Inclusive steps for longer runs (absent: always `steps`).
    pub long_run_steps: Option<(u64, u64)>,
    pub long_run_after: u64,
}

impl Window {
    /// Megatron's iteration-time window: median over steps 5-20 for runs of at most 25 steps,
    /// else 30-45.
    pub const MEGATRON: Window = Window {
        statistic: Statistic::Median,
        steps: (5, 20),
        long_run_steps: Some((30, 45)),
        long_run_after: 25,
    };

    /// The inclusive step range for a golden series that ends at `last_step`.
    pub fn range(self, last_step: u64) -> (u64, u64) {
        match self.long_run_steps {
            Some(long) if last_step > self.long_run_after => long,
            _ => self.steps,
        }
    }

    /// `"median"`, for detail lines.
    pub fn statistic_name(self) -> &'static str {
        self.statistic.name()
    }
}

/// Failing steps tolerated out of `n`: `min(max(floor(n * fraction), min), max)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Allowance {
    pub fraction: f64,
    pub min: usize,
    pub max: usize,
}

impl Allowance {
    /// Megatron's `min(max(N//100, 1), 50)`.
    pub const MEGATRON: Allowance = Allowance {
        fraction: 0.01,
        min: 1,
        max: 50,
    };
}

/// Which way is good.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Smaller values are improvements (time, memory).
    LowerIsBetter,
    /// Larger values are improvements (throughput).
    HigherIsBetter,
    /// Any deviation beyond tolerance is a regression (losses: Megatron's two-sided check).
    Both,
}

/// The rule for one metric (or a glob of metrics).
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    /// Metric name or glob (`*loss`).
    pub pattern: String,
    pub kind: Kind,
    /// Relative tolerance (0.05 = 5 %).
    pub rtol: f64,
    /// Absolute tolerance in the metric's unit.
    pub atol: f64,
    /// Also require exact equality (at golden precision, 5 decimals) on deterministic runs.
    pub exact: bool,
    pub direction: Direction,
    /// Coefficient of variation over repeats above which the metric is `unstable`.
    pub max_cv: Option<f64>,
    /// Per-save metrics: saves at the start that are not counted (one-time set-up).
    pub skip_first_saves: usize,
    /// Per-step metrics: failing steps tolerated.
    pub fail_steps_allowance: Allowance,
    /// Per-step metrics: only these steps (inclusive) are compared.
    pub steps: Option<(u64, u64)>,
    pub unit: Unit,
    /// Repeated window, scalar and per-save metrics: the band or the two-sample test.
    pub test: TestKind,
    /// Two-sample test: the smallest relative change that counts.
    pub min_effect: f64,
    /// Two-sample test: false-alarm rate per direction.
    pub alpha: f64,
}

impl Rule {
    fn new(pattern: &str, kind: Kind, rtol: f64, direction: Direction, unit: Unit) -> Rule {
        Rule {
            pattern: pattern.to_string(),
            kind,
            rtol,
            atol: 0.0,
            exact: false,
            direction,
            max_cv: None,
            skip_first_saves: 0,
            fail_steps_allowance: Allowance::MEGATRON,
            steps: None,
            unit,
            test: TestKind::Band,
            min_effect: crate::config::DEFAULT_MIN_EFFECT,
            alpha: crate::config::DEFAULT_ALPHA,
        }
    }

    fn exact(mut self) -> Rule {
        self.exact = true;
        self
    }

    fn atol(mut self, atol: f64) -> Rule {
        self.atol = atol;
        self
    }

    fn max_cv(mut self, cv: f64) -> Rule {
        self.max_cv = Some(cv);
        self
    }

    fn skip_first(mut self, n: usize) -> Rule {
        self.skip_first_saves = n;
        self
    }

    pub(crate) fn tolerance(&self) -> Tolerance {
        Tolerance {
            rtol: self.rtol,
            atol: self.atol,
        }
    }

    /// Failing steps tolerated out of `n` checked.
    pub fn allowance(&self, n: usize) -> usize {
        let a = self.fail_steps_allowance;
        // Truncation is the point: Megatron uses integer division.
        let share = (n as f64 * a.fraction).floor() as usize;
        share.max(a.min).min(a.max)
    }

    /// Whether a metric with this rule is judged on the distribution of repeats (one value
    /// per repeat) rather than step by step.
    pub fn is_distribution(&self) -> bool {
        !matches!(self.kind, Kind::PerStep)
    }

    /// `"exact + rtol 5%"`, `"rtol 10% + atol 0.05 s"`: for reports.
    pub fn describe(&self, exact_applies: bool) -> String {
        let mut parts = Vec::new();
        if self.exact && exact_applies {
            parts.push("exact".to_string());
        }
        parts.push(format!("rtol {}%", trim(self.rtol * 100.0)));
        if self.atol > 0.0 {
            parts.push(format!("atol {}", atol_text(self.atol, self.unit)));
        }
        parts.join(" + ")
    }

    /// `"two-sample: min effect 2%, alpha 1%"`: the two-sample test's tolerance, for reports.
    pub fn describe_two_sample(&self) -> String {
        format!(
            "two-sample: min effect {}%, alpha {}%",
            trim(self.min_effect * 100.0),
            trim(self.alpha * 100.0)
        )
    }

    /// Whether the two-sample test is asked for and applies (not to per-step metrics).
    pub fn wants_two_sample(&self) -> bool {
        self.test == TestKind::TwoSample && self.is_distribution()
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn atol_text(v: f64, unit: Unit) -> String {
    match unit {
        Unit::Seconds => format!("{} s", trim(v)),
        Unit::Bytes if v >= 1024.0 * 1024.0 => format!("{} MiB", trim(v / 1024.0 / 1024.0)),
        Unit::Bytes => format!("{} B", trim(v)),
        Unit::Count | Unit::Plain => trim(v),
    }
}

/// Ordered rules; the first match wins.
#[derive(Clone, Debug, PartialEq)]
pub struct RuleSet {
    pub rules: Vec<Rule>,
}

const MIB: f64 = 1024.0 * 1024.0;

impl RuleSet {
    /// Megatron's checks (megatron-format.md §3) and goldgate's metric rules.
    pub fn megatron() -> RuleSet {
        use Direction::*;
        use Kind::*;
        let loss = |p: &str| Rule::new(p, PerStep, 0.05, Both, Unit::Plain).exact();
        let save = |p: &str| {
            Rule::new(p, PerSave, 0.10, LowerIsBetter, Unit::Seconds)
                .atol(0.05)
                .max_cv(0.25)
        };
        let peak = |p: &str| {
            Rule::new(p, Scalar, 0.05, LowerIsBetter, Unit::Bytes)
                .atol(64.0 * MIB)
                .max_cv(0.10)
        };
        RuleSet {
            rules: vec![
                loss("lm loss"),
                loss("total loss"),
                loss("mtp_* loss"),
                Rule::new("num-zeros", PerStep, 0.20, Both, Unit::Count).exact(),
                Rule::new("mem-*-bytes", PerStep, 0.05, LowerIsBetter, Unit::Bytes),
                Rule::new(
                    "iteration-time",
                    Window(self::Window::MEGATRON),
                    0.05,
                    LowerIsBetter,
                    Unit::Seconds,
                )
                .max_cv(0.10),
                peak("gpu-peak-memory-bytes"),
                peak("host-peak-rss-bytes"),
                peak("shm-peak-bytes"),
                save("checkpoint-blocking-time").skip_first(1),
                save("checkpoint-async-latency"),
                loss("*loss"),
                // Anything else: every step, 5 % either way (`config::MetricRule::default`).
                Rule::new("*", PerStep, 0.05, Both, Unit::Plain),
            ],
        }
    }

    /// The rule for `metric`, if any pattern matches.
    pub fn find(&self, metric: &str) -> Option<&Rule> {
        self.rules.iter().find(|r| glob_match(&r.pattern, metric))
    }
}

impl Default for RuleSet {
    fn default() -> RuleSet {
        RuleSet::megatron()
    }
}

/// Rule patterns are matched as in `goldgate.yaml` (`*` any run of characters, `?` one).
pub use crate::config::glob_match;

/// The display unit a metric name implies.
pub fn unit_of(metric: &str) -> Unit {
    if metric.ends_with("-bytes") {
        Unit::Bytes
    } else if metric.contains("time") || metric.contains("latency") {
        Unit::Seconds
    } else if metric == "num-zeros" {
        Unit::Count
    } else {
        Unit::Plain
    }
}

impl Rule {
    /// The compare stage's form of a `goldgate.yaml` rule (`config::rules`).
    pub fn from_config(pattern: &str, r: &crate::config::MetricRule) -> Rule {
        use crate::config::{MetricKind, Statistic as S};
        let range = |s: crate::config::StepRange| (s.first, s.last);
        let kind = match (r.window, r.kind) {
            (Some(w), _) => Kind::Window(Window {
                statistic: match w.statistic {
                    S::Median => Statistic::Median,
                    S::Mean => Statistic::Mean,
                    S::Min => Statistic::Min,
                    S::Max => Statistic::Max,
                },
                steps: range(w.steps),
                long_run_steps: w.long_run_steps.map(range),
                long_run_after: w.long_run_after,
            }),
            (None, MetricKind::PerStep) => Kind::PerStep,
            (None, MetricKind::Scalar) => Kind::Scalar,
            (None, MetricKind::PerSave) => Kind::PerSave,
        };
        let a = r.fail_steps_allowance;
        Rule {
            pattern: pattern.to_string(),
            kind,
            rtol: r.rtol,
            atol: r.atol,
            exact: r.exact,
            direction: match r.direction {
                crate::config::Direction::LowerIsBetter => Direction::LowerIsBetter,
                crate::config::Direction::HigherIsBetter => Direction::HigherIsBetter,
                crate::config::Direction::Both => Direction::Both,
            },
            max_cv: r.max_cv,
            skip_first_saves: r.skip_first_saves as usize,
            fail_steps_allowance: Allowance {
                fraction: a.fraction,
                min: usize::try_from(a.min).unwrap_or(usize::MAX),
                max: usize::try_from(a.max).unwrap_or(usize::MAX),
            },
            steps: r.steps.map(range),
            unit: unit_of(pattern),
            test: r.test,
            min_effect: r.min_effect,
            alpha: r.alpha,
        }
    }
}

impl RuleSet {
    /// The rules of a loaded `goldgate.yaml` (its `rules:` in front of the built-in ones), with
    /// the config's catch-all for metrics no pattern names.
    pub fn from_config(rules: &crate::config::Rules) -> RuleSet {
        let mut out: Vec<Rule> = rules
            .entries
            .iter()
            .map(|(p, r)| Rule::from_config(p, r))
            .collect();
        out.push(Rule::from_config(
            "*",
            &crate::config::MetricRule::default(),
        ));
        RuleSet { rules: out }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        for (p, t, want) in [
            ("lm loss", "lm loss", true),
            ("mtp_* loss", "mtp_1 loss", true),
            ("mem-*-bytes", "mem-max-allocated-bytes", true),
            ("*loss", "load-balancing loss", true),
            ("*loss", "loss scale", false),
            ("iteration-?ime", "iteration-time", true),
            ("a*b*c", "abc", true),
            ("a*b*c", "ac", false),
            ("ab*ba", "aba", false),
        ] {
            assert_eq!(glob_match(p, t), want, "{p} {t}");
        }
    }

    #[test]
    fn builtin_rules_equal_the_config_defaults() {
        let from_config = RuleSet::from_config(&crate::config::Rules::default());
        assert_eq!(from_config, RuleSet::megatron());
    }

    #[test]
    fn units_from_names() {
        assert_eq!(unit_of("mem-max-allocated-bytes"), Unit::Bytes);
        assert_eq!(unit_of("checkpoint-async-latency"), Unit::Seconds);
        assert_eq!(unit_of("iteration-time"), Unit::Seconds);
        assert_eq!(unit_of("num-zeros"), Unit::Count);
        assert_eq!(unit_of("lm loss"), Unit::Plain);
    }

    #[test]
    fn megatron_defaults() {
        let r = RuleSet::megatron();
        let lm = r.find("lm loss").unwrap();
        assert!(lm.exact && lm.rtol == 0.05 && lm.kind == Kind::PerStep);
        assert_eq!(r.find("num-zeros").unwrap().rtol, 0.20);
        assert_eq!(r.find("mem-allocated-bytes").unwrap().rtol, 0.05);
        assert_eq!(r.find("mtp_2 loss").unwrap().pattern, "mtp_* loss");
        assert_eq!(
            r.find("checkpoint-blocking-time").unwrap().skip_first_saves,
            1
        );
        assert_eq!(r.find("throughput").unwrap().pattern, "*");
        let it = r.find("iteration-time").unwrap();
        assert_eq!(it.kind, Kind::Window(Window::MEGATRON));
        assert_eq!(Window::MEGATRON.range(25), (5, 20));
        assert_eq!(Window::MEGATRON.range(100), (30, 45));
    }

    #[test]
    fn megatron_allowance() {
        let r = RuleSet::megatron();
        let lm = r.find("lm loss").unwrap();
        assert_eq!(
            [10, 100, 250, 5000, 9000].map(|n| lm.allowance(n)),
            [1, 1, 2, 50, 50]
        );
    }

    #[test]
    fn describes_tolerances() {
        let r = RuleSet::megatron();
        assert_eq!(r.find("lm loss").unwrap().describe(true), "exact + rtol 5%");
        assert_eq!(r.find("lm loss").unwrap().describe(false), "rtol 5%");
        assert_eq!(
            r.find("checkpoint-blocking-time").unwrap().describe(true),
            "rtol 10% + atol 0.05 s"
        );
        assert_eq!(
            r.find("shm-peak-bytes").unwrap().describe(true),
            "rtol 5% + atol 64 MiB"
        );
    }
}
