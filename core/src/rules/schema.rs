//! Stage "plan", rules: their schema (`goldgate.yaml`'s `rules:`; the `compare` stage applies them).
//!
//! [`Rules::default`] holds Megatron's own checks (`docs/megatron-format.md` §3) plus rules for
//! goldgate's metric keys, so `compare` works without a `goldgate.yaml`. Rules from the file
//! come first; the first rule whose pattern matches a metric name wins, and fields a file rule
//! leaves out are taken from the built-in rule for the same pattern (or [`MetricRule::default`]).

use serde::{Deserialize, Serialize};

use goldgate_schema::metric_names as names;

/// How a metric's values are keyed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MetricKind {
    /// One value per logged training step (`lm loss`).
    PerStep,
    /// One value per job, keyed by the final step (`gpu-peak-memory-bytes`).
    Scalar,
    /// One value per checkpoint save, keyed by the save iteration (`checkpoint-blocking-time`).
    PerSave,
}

/// Which change of a value counts as a regression.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    /// Only an increase regresses (memory, time).
    LowerIsBetter,
    /// Only a decrease regresses (throughput).
    HigherIsBetter,
    /// Any change beyond the tolerance regresses (losses).
    Both,
}

/// A statistic that collapses a window of steps to one number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Statistic {
    Median,
    Mean,
    Min,
    Max,
}

impl Statistic {
    /// Its name as `goldgate.yaml` writes it (`median`), for reports.
    pub fn name(self) -> &'static str {
        match self {
            Statistic::Median => "median",
            Statistic::Mean => "mean",
            Statistic::Min => "min",
            Statistic::Max => "max",
        }
    }
}

/// How repeated measurements of a window, scalar or per-save metric are judged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TestKind {
    /// The median of the repeats against `atol + rtol * |golden|` (goldgate's first rule).
    #[default]
    Band,
    /// The golden's jobs against the jobs now: a t-test on per-job summaries with false-alarm
    /// rate `alpha` and `min_effect` as the tolerance (`compare::stats::t_test`).
    TwoSample,
}

/// A relative effect size such as `0.05` (5 %): finite, at least 0 and below 10.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "f64", into = "f64")]
pub struct Effect(pub f64);

impl TryFrom<f64> for Effect {
    type Error = String;

    fn try_from(v: f64) -> Result<Effect, String> {
        if v.is_finite() && (0.0..10.0).contains(&v) {
            Ok(Effect(v))
        } else {
            Err(format!(
                "min_effect must be a share from 0 to below 10 (0.05 = 5 %), not {v}"
            ))
        }
    }
}

impl From<Effect> for f64 {
    fn from(e: Effect) -> f64 {
        e.0
    }
}

/// A tolerance or limit such as `rtol: 0.05`: finite and at least 0. `.inf`, `.nan` or a
/// negative value would let any change pass (or none), silently.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "f64", into = "f64")]
pub struct Tolerance(pub f64);

impl TryFrom<f64> for Tolerance {
    type Error = String;

    fn try_from(v: f64) -> Result<Tolerance, String> {
        if v.is_finite() && v >= 0.0 {
            Ok(Tolerance(v))
        } else {
            Err(format!(
                "a tolerance must be a finite number of at least 0 (0.05 = 5 %), not {v}"
            ))
        }
    }
}

impl From<Tolerance> for f64 {
    fn from(t: Tolerance) -> f64 {
        t.0
    }
}

/// A false-alarm rate such as `0.01`: above 0 and at most 0.25.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "f64", into = "f64")]
pub struct Alpha(pub f64);

impl TryFrom<f64> for Alpha {
    type Error = String;

    fn try_from(v: f64) -> Result<Alpha, String> {
        if v > 0.0 && v <= 0.25 {
            Ok(Alpha(v))
        } else {
            Err(format!(
                "alpha must be a false-alarm rate above 0 and at most 0.25 (0.01 = 1 %), not {v}"
            ))
        }
    }
}

impl From<Alpha> for f64 {
    fn from(a: Alpha) -> f64 {
        a.0
    }
}

/// An inclusive range of steps, written `5-20` in `goldgate.yaml`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct StepRange {
    pub first: u64,
    pub last: u64,
}

impl StepRange {
    /// Whether `step` lies in the range.
    pub fn contains(&self, step: u64) -> bool {
        (self.first..=self.last).contains(&step)
    }
}

impl TryFrom<String> for StepRange {
    type Error = String;

    fn try_from(text: String) -> Result<Self, String> {
        let bad = || format!("invalid step range `{text}`, expected `FIRST-LAST` such as `5-20`");
        let (first, last) = text.split_once('-').ok_or_else(bad)?;
        let first: u64 = first.trim().parse().map_err(|_| bad())?;
        let last: u64 = last.trim().parse().map_err(|_| bad())?;
        if first > last {
            return Err(bad());
        }
        Ok(StepRange { first, last })
    }
}

impl From<StepRange> for String {
    fn from(range: StepRange) -> String {
        format!("{}-{}", range.first, range.last)
    }
}

/// Collapse the steps of a run to one number before comparing (Megatron's iteration-time check).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Window {
    /// The statistic taken over the window.
    pub statistic: Statistic,
    /// Steps used for runs of at most `long_run_after` steps.
    pub steps: StepRange,
    /// Steps used for longer runs (absent: always `steps`).
    #[serde(default)]
    pub long_run_steps: Option<StepRange>,
    /// Runs with more steps than this use `long_run_steps`.
    #[serde(default)]
    pub long_run_after: u64,
}

impl Window {
    /// The window that applies to a run of `run_steps` steps.
    pub fn steps_for(&self, run_steps: u64) -> StepRange {
        match self.long_run_steps {
            Some(long) if run_steps > self.long_run_after => long,
            _ => self.steps,
        }
    }

    /// How many of the steps 1..=`run_steps` of a run lie in its window: all of it unless the
    /// run ends inside it (the built-in window gives a 30-step run one step, 30 of 30-45).
    pub fn steps_in_run(&self, run_steps: u64) -> u64 {
        let range = self.steps_for(run_steps);
        let last = range.last.min(run_steps);
        (last + 1).saturating_sub(range.first)
    }
}

/// How many steps of `n` may fail the approximate check: `min(max(n * fraction, min), max)`
/// (Megatron: `min(max(N//100, 1), 50)`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FailAllowance {
    #[serde(deserialize_with = "share")]
    pub fraction: f64,
    pub min: u64,
    pub max: u64,
}

/// A share from 0 to 1 (`fail_steps_allowance.fraction`).
fn share<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    let v = f64::deserialize(d)?;
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(serde::de::Error::custom(format!(
            "a share of the steps must be from 0 to 1 (0.01 = 1 %), not {v}"
        )))
    }
}

impl FailAllowance {
    /// Megatron's allowance.
    pub const MEGATRON: FailAllowance = FailAllowance {
        fraction: 0.01,
        min: 1,
        max: 50,
    };
    /// No failing step allowed.
    pub const NONE: FailAllowance = FailAllowance {
        fraction: 0.0,
        min: 0,
        max: 0,
    };

    /// The number of failing steps tolerated out of `n` compared steps.
    pub fn allowed(&self, n: u64) -> u64 {
        // Truncation is the point: Megatron uses integer division.
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let share = (n as f64 * self.fraction).floor() as u64;
        share.max(self.min).min(self.max)
    }
}

/// The comparison rule for one metric.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MetricRule {
    pub kind: MetricKind,
    /// Relative tolerance: `|a - g| <= atol + rtol * |g|`.
    pub rtol: f64,
    /// Absolute tolerance, in the metric's unit.
    pub atol: f64,
    /// Also require bit-equal values (skipped for non-deterministic runs, as Megatron does).
    pub exact: bool,
    pub direction: Direction,
    /// Largest coefficient of variation over repeats before the metric is called unstable.
    pub max_cv: Option<f64>,
    /// Only these steps are compared.
    pub steps: Option<StepRange>,
    /// Collapse the steps to one statistic before comparing.
    pub window: Option<Window>,
    /// Ignore the first N saves of a per-save metric (the first async save also sets up the worker).
    pub skip_first_saves: u32,
    pub fail_steps_allowance: FailAllowance,
    /// How repeats are judged: the band, or the two-sample test.
    pub test: TestKind,
    /// Two-sample test: the smallest relative change that counts (its tolerance).
    pub min_effect: f64,
    /// Two-sample test: false-alarm rate on unchanged code, per metric and direction.
    pub alpha: f64,
}

/// The two-sample test's default minimum effect: 2 %, a change too small to act on.
pub const DEFAULT_MIN_EFFECT: f64 = 0.02;
/// The two-sample test's default false-alarm rate: 1 %.
pub const DEFAULT_ALPHA: f64 = 0.01;

impl Default for MetricRule {
    /// The rule for a metric nothing else matches: per step, 5 % either way.
    fn default() -> Self {
        MetricRule {
            kind: MetricKind::PerStep,
            rtol: 0.05,
            atol: 0.0,
            exact: false,
            direction: Direction::Both,
            max_cv: None,
            steps: None,
            window: None,
            skip_first_saves: 0,
            fail_steps_allowance: FailAllowance::MEGATRON,
            test: TestKind::Band,
            min_effect: DEFAULT_MIN_EFFECT,
            alpha: DEFAULT_ALPHA,
        }
    }
}

/// A rule as written in `goldgate.yaml`: every field optional (left out = the built-in value).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleOverride {
    pub kind: Option<MetricKind>,
    pub rtol: Option<Tolerance>,
    pub atol: Option<Tolerance>,
    pub exact: Option<bool>,
    pub direction: Option<Direction>,
    pub max_cv: Option<Tolerance>,
    pub steps: Option<StepRange>,
    pub window: Option<Window>,
    pub skip_first_saves: Option<u32>,
    pub fail_steps_allowance: Option<FailAllowance>,
    pub test: Option<TestKind>,
    pub min_effect: Option<Effect>,
    pub alpha: Option<Alpha>,
}

impl RuleOverride {
    /// Fills the fields left out from `base`.
    pub fn over(self, base: MetricRule) -> MetricRule {
        MetricRule {
            kind: self.kind.unwrap_or(base.kind),
            rtol: self.rtol.map_or(base.rtol, f64::from),
            atol: self.atol.map_or(base.atol, f64::from),
            exact: self.exact.unwrap_or(base.exact),
            direction: self.direction.unwrap_or(base.direction),
            max_cv: self.max_cv.map(f64::from).or(base.max_cv),
            steps: self.steps.or(base.steps),
            window: self.window.or(base.window),
            skip_first_saves: self.skip_first_saves.unwrap_or(base.skip_first_saves),
            fail_steps_allowance: self
                .fail_steps_allowance
                .unwrap_or(base.fail_steps_allowance),
            test: self.test.unwrap_or(base.test),
            min_effect: self.min_effect.map_or(base.min_effect, f64::from),
            alpha: self.alpha.map_or(base.alpha, f64::from),
        }
    }
}

/// Ordered `(pattern, rule)` pairs; a pattern is a metric name or a glob with `*` and `?`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Rules {
    pub entries: Vec<(String, MetricRule)>,
}

impl Rules {
    /// The rule for `metric`: the first matching pattern, else [`MetricRule::default`].
    pub fn rule_for(&self, metric: &str) -> MetricRule {
        self.entries
            .iter()
            .find(|(pattern, _)| glob_match(pattern, metric))
            .map(|(_, rule)| rule.clone())
            .unwrap_or_default()
    }

    /// Puts `rules` from a file in front of these, completing each from the rule it overrides.
    pub fn with_file_rules(self, rules: Vec<(String, RuleOverride)>) -> Rules {
        let mut entries: Vec<(String, MetricRule)> = rules
            .into_iter()
            .map(|(pattern, raw)| {
                let base = self.rule_for(&pattern);
                (pattern, raw.over(base))
            })
            .collect();
        entries.extend(self.entries);
        Rules { entries }
    }
}

/// The built-in iteration-time window: the median over steps 5–20, or 30–45 for runs of
/// more than 25 steps (past Megatron's warm-up and the first checkpoint saves).
fn builtin_iteration_window() -> Window {
    Window {
        statistic: Statistic::Median,
        steps: StepRange { first: 5, last: 20 },
        long_run_steps: Some(StepRange {
            first: 30,
            last: 45,
        }),
        long_run_after: 25,
    }
}

impl Default for Rules {
    /// Megatron's checks (`docs/megatron-format.md` §3) and goldgate's metric rules: the
    /// built-in set `compare` uses without a `goldgate.yaml`.
    fn default() -> Self {
        const MIB: f64 = 1024.0 * 1024.0;
        let loss = MetricRule {
            exact: true,
            ..MetricRule::default()
        };
        let lower = MetricRule {
            direction: Direction::LowerIsBetter,
            ..MetricRule::default()
        };
        let iteration_time = MetricRule {
            max_cv: Some(0.10),
            window: Some(builtin_iteration_window()),
            ..lower.clone()
        };
        let peak = MetricRule {
            kind: MetricKind::Scalar,
            atol: 64.0 * MIB,
            max_cv: Some(0.10),
            ..lower.clone()
        };
        let per_save = MetricRule {
            kind: MetricKind::PerSave,
            rtol: 0.10,
            atol: 0.05,
            max_cv: Some(0.25),
            ..lower.clone()
        };
        let mut entries = vec![
            (names::LM_LOSS.to_owned(), loss.clone()),
            ("total loss".to_owned(), loss.clone()),
            ("mtp_* loss".to_owned(), loss.clone()),
            (
                names::NUM_ZEROS.to_owned(),
                MetricRule {
                    rtol: 0.2,
                    ..loss.clone()
                },
            ),
            ("mem-*-bytes".to_owned(), lower),
            (names::ITERATION_TIME.to_owned(), iteration_time),
            (names::GPU_PEAK.to_owned(), peak.clone()),
            (names::HOST_PEAK.to_owned(), peak.clone()),
            (names::SHM_PEAK.to_owned(), peak),
            // The first save of a run also starts the async worker and pays for it.
            (
                names::CHECKPOINT_BLOCKING.to_owned(),
                MetricRule {
                    skip_first_saves: 1,
                    ..per_save.clone()
                },
            ),
            (names::CHECKPOINT_ASYNC_LATENCY.to_owned(), per_save.clone()),
            (names::CKPT_EMPTY_CACHE_SECONDS.to_owned(), per_save),
            ("*loss".to_owned(), loss),
        ];
        entries.extend(counter_rules());
        Rules { entries }
    }
}

/// The counters' built-in rules (`metric_names::EXACT_COUNTERS`, `BYTE_COUNTERS` and
/// `ALLOCATOR_COUNTERS`).
fn counter_rules() -> Vec<(String, MetricRule)> {
    // Counters are judged save by save (as steps) and exactly: one more
    // `empty_cache` in one save is a regression, with one job and no statistics. A count
    // that fell is an improvement where the run is non-deterministic (exact checks off),
    // a change to bless otherwise.
    let count = MetricRule {
        rtol: 0.0,
        atol: 0.0,
        exact: true,
        direction: Direction::LowerIsBetter,
        fail_steps_allowance: FailAllowance::NONE,
        ..MetricRule::default()
    };
    // Bytes written move by a log line's digits or a file's metadata: 1 % + 64 KiB.
    let bytes = MetricRule {
        rtol: 0.01,
        atol: 64.0 * 1024.0,
        exact: false,
        ..count.clone()
    };
    // Segment counts move by a few between identical jobs on real Megatron (ALLOCATOR_COUNTERS):
    // 5 % + 2, still far below what `empty_cache` or a new allocation pattern does to them.
    let segments = MetricRule {
        rtol: 0.05,
        atol: 2.0,
        exact: false,
        ..count.clone()
    };
    let exact = names::EXACT_COUNTERS.map(|n| (n.to_owned(), count.clone()));
    let tight = names::BYTE_COUNTERS.map(|n| (n.to_owned(), bytes.clone()));
    let loose = names::ALLOCATOR_COUNTERS.map(|n| (n.to_owned(), segments.clone()));
    exact.into_iter().chain(tight).chain(loose).collect()
}

/// Whether `name` matches `pattern` (`*` any run of characters, `?` one character).
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    // Iterative matcher with one backtrack point for the last `*`.
    let (mut pi, mut ni, mut star, mut mark) = (0, 0, None, 0);
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ni;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_like_shell_patterns() {
        let cases = [
            ("lm loss", "lm loss", true),
            ("mtp_* loss", "mtp_1 loss", true),
            ("mtp_* loss", "mtp_1 losses", false),
            ("*", "anything", true),
            ("iteration-?ime", "iteration-time", true),
            ("a*b*c", "axxbyyc", true),
            ("a*b*c", "axxbyy", false),
        ];
        for (pattern, name, want) in cases {
            assert_eq!(glob_match(pattern, name), want, "{pattern} vs {name}");
        }
    }

    #[test]
    fn counters_are_exact_and_bytes_tight() {
        let rules = Rules::default();
        for name in names::EXACT_COUNTERS {
            let rule = rules.rule_for(name);
            assert!(rule.exact, "{name}");
            assert_eq!((rule.rtol, rule.atol), (0.0, 0.0), "{name}");
            assert_eq!(rule.kind, MetricKind::PerStep, "{name}");
            assert_eq!(rule.fail_steps_allowance, FailAllowance::NONE, "{name}");
        }
        let bytes = rules.rule_for(names::CKPT_WRITTEN_BYTES);
        assert_eq!((bytes.rtol, bytes.atol), (0.01, 65536.0));
        // Segment counts are not exact on real Megatron: a tolerance, lower is better.
        for name in names::ALLOCATOR_COUNTERS {
            let rule = rules.rule_for(name);
            assert!(!rule.exact, "{name}");
            assert_eq!((rule.rtol, rule.atol), (0.05, 2.0), "{name}");
            assert_eq!(rule.direction, Direction::LowerIsBetter, "{name}");
        }
        assert_eq!(rules.rule_for(names::CKPT_FOLDER_BYTES), bytes);
    }

    #[test]
    fn defaults_follow_megatron() {
        let rules = Rules::default();
        let loss = rules.rule_for("lm loss");
        assert!(loss.exact);
        assert_eq!(loss.rtol, 0.05);
        assert_eq!(rules.rule_for("mtp_2 loss"), loss);
        assert_eq!(rules.rule_for("num-zeros").rtol, 0.2);
        let window = rules.rule_for("iteration-time").window.unwrap();
        assert_eq!(window.steps_for(25), StepRange { first: 5, last: 20 });
        assert_eq!(
            window.steps_for(100),
            StepRange {
                first: 30,
                last: 45
            }
        );
        assert_eq!(
            rules.rule_for("checkpoint-blocking-time").skip_first_saves,
            1
        );
        assert_eq!(rules.rule_for("unknown metric"), MetricRule::default());
    }

    #[test]
    fn a_run_that_ends_inside_its_window_keeps_only_the_steps_it_ran() {
        let window = Rules::default().rule_for("iteration-time").window.unwrap();
        let kept = |steps: u64| window.steps_in_run(steps);
        assert_eq!(
            [kept(4), kept(5), kept(10), kept(24), kept(25)],
            [0, 1, 6, 16, 16]
        );
        assert_eq!([kept(26), kept(29), kept(30), kept(33)], [0, 0, 1, 4]);
        assert_eq!([kept(44), kept(45), kept(46), kept(1000)], [15, 16, 16, 16]);
    }

    #[test]
    fn allowance_is_megatrons_integer_formula() {
        let a = FailAllowance::MEGATRON;
        assert_eq!([50, 100, 250, 10_000].map(|n| a.allowed(n)), [1, 1, 2, 50]);
        assert_eq!(FailAllowance::NONE.allowed(1000), 0);
    }

    #[test]
    fn file_rules_override_and_inherit() {
        let raw: RuleOverride = serde_saphyr::from_str("rtol: 0.01\n").unwrap();
        let rules = Rules::default().with_file_rules(vec![("lm loss".into(), raw)]);
        let loss = rules.rule_for("lm loss");
        assert_eq!(loss.rtol, 0.01);
        assert!(loss.exact, "inherits the built-in exact check");
    }

    #[test]
    fn two_sample_fields_parse_inherit_and_reject_nonsense() {
        let raw: RuleOverride =
            serde_saphyr::from_str("test: two-sample\nmin_effect: 0.05\n").unwrap();
        let rules = Rules::default().with_file_rules(vec![("checkpoint-*".into(), raw)]);
        let r = rules.rule_for("checkpoint-async-latency");
        assert_eq!(
            (r.test, r.min_effect, r.alpha),
            (TestKind::TwoSample, 0.05, 0.01)
        );
        assert_eq!(Rules::default().rule_for("lm loss").test, TestKind::Band);
        for bad in [
            "rtol: .inf",
            "rtol: -5",
            "rtol: .nan",
            "atol: -1",
            "atol: .inf",
            "max_cv: .nan",
            "max_cv: -0.1",
            "fail_steps_allowance: {fraction: -1, min: 1, max: 50}",
            "fail_steps_allowance: {fraction: .nan, min: 1, max: 50}",
            "alpha: 0",
            "alpha: 0.6",
            "min_effect: -1",
            "min_effect: .nan",
            "test: t",
        ] {
            assert!(
                serde_saphyr::from_str::<RuleOverride>(bad).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn step_ranges_parse_and_reject() {
        assert_eq!(
            StepRange::try_from("5-20".to_owned()),
            Ok(StepRange { first: 5, last: 20 })
        );
        assert!(StepRange::try_from("20-5".to_owned()).is_err());
        assert!(StepRange::try_from("x".to_owned()).is_err());
    }

    #[test]
    fn nonsense_tolerances_in_goldgate_yaml_name_file_line_and_column() {
        for (text, value) in [
            ("rules:\n  lm loss:\n    rtol: .inf\n", "inf"),
            ("rules:\n  lm loss:\n    rtol: -5\n", "-5"),
            ("rules:\n  lm loss:\n    atol: .nan\n", "NaN"),
        ] {
            let err = crate::config::Config::parse(text, std::path::Path::new("goldgate.yaml"))
                .unwrap_err()
                .to_string();
            assert!(err.starts_with("goldgate.yaml:3:"), "{err}");
            assert!(
                err.contains(&format!(
                    "a tolerance must be a finite number of at least 0 (0.05 = 5 %), not {value}"
                )),
                "{err}"
            );
        }
        let platform = "platforms:\n  ../..:\n    gpus_per_node: 1\n";
        let err = crate::config::Config::parse(platform, std::path::Path::new("goldgate.yaml"))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("goldgate.yaml:2:"), "{err}");
    }
}
