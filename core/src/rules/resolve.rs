//! Stage "plan", rules: the rules in force for a comparison. The model is `schema` (one
//! schema: `goldgate.yaml`'s `rules:` and the built-in Megatron checks); this module pairs each
//! rule with its pattern and the display unit the pattern implies, and reads what a rule means
//! for judging (allowance, skipped saves, which test applies).
//! A metric takes the first rule whose pattern matches (`*` matches any run of characters).

use std::ops::Deref;

use goldgate_schema::Unit;

use super::schema::{MetricKind, MetricRule, Rules, TestKind, glob_match};

/// A rule in force: a `goldgate.yaml` (or built-in) rule with its pattern and display unit.
/// Reads as the [`MetricRule`] it holds.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    /// Metric name or glob (`*loss`).
    pub pattern: String,
    /// How its values are shown (from the pattern: `*-bytes` are bytes, ...).
    pub unit: Unit,
    rule: MetricRule,
}

impl Deref for Rule {
    type Target = MetricRule;

    fn deref(&self) -> &MetricRule {
        &self.rule
    }
}

impl Rule {
    /// The rule for `pattern`.
    pub fn new(pattern: &str, rule: MetricRule) -> Rule {
        Rule {
            pattern: pattern.to_owned(),
            unit: Unit::of_metric(pattern),
            rule,
        }
    }

    /// A copy with `edit` applied to its rule (the same rule under another test or tolerance).
    pub fn edited(&self, edit: impl FnOnce(&mut MetricRule)) -> Rule {
        let mut rule = self.rule.clone();
        edit(&mut rule);
        Rule::new(&self.pattern, rule)
    }

    /// Failing steps tolerated out of `n` checked.
    pub fn allowance(&self, n: usize) -> usize {
        let allowed = self.fail_steps_allowance.allowed(n as u64);
        usize::try_from(allowed).unwrap_or(usize::MAX)
    }

    /// Saves at the start of a per-save metric that are not counted.
    pub fn skipped_saves(&self) -> usize {
        self.skip_first_saves as usize
    }

    /// Whether the rule reads one value per checkpoint save (and no window).
    pub fn is_per_save(&self) -> bool {
        self.window.is_none() && self.kind == MetricKind::PerSave
    }

    /// Whether a metric with this rule is judged on the distribution of repeats (one value
    /// per repeat: a window, a scalar, per-save) rather than step by step.
    pub fn is_distribution(&self) -> bool {
        self.window.is_some() || self.kind != MetricKind::PerStep
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

impl RuleSet {
    /// The rules of a loaded `goldgate.yaml` (its `rules:` in front of the built-in ones), then
    /// the catch-all for metrics no pattern names ([`MetricRule::default`]).
    pub fn from_config(rules: &Rules) -> RuleSet {
        let mut out: Vec<Rule> = rules
            .entries
            .iter()
            .map(|(p, r)| Rule::new(p, r.clone()))
            .collect();
        out.push(Rule::new("*", MetricRule::default()));
        RuleSet { rules: out }
    }

    /// The built-in rules: Megatron's checks (megatron-format.md §3) and goldgate's metric rules.
    pub fn megatron() -> RuleSet {
        RuleSet::from_config(&Rules::default())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::Statistic;

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
    fn units_from_patterns() {
        let unit = |p: &str| RuleSet::megatron().find(p).unwrap().unit;
        assert_eq!(unit("mem-max-allocated-bytes"), Unit::Bytes);
        assert_eq!(unit("checkpoint-async-latency"), Unit::Seconds);
        assert_eq!(unit("iteration-time"), Unit::Seconds);
        assert_eq!(unit("num-zeros"), Unit::Count);
        assert_eq!(unit("lm loss"), Unit::Plain);
        assert_eq!(unit("throughput"), Unit::Plain);
    }

    #[test]
    fn megatron_defaults() {
        let r = RuleSet::megatron();
        let lm = r.find("lm loss").unwrap();
        assert!(lm.exact && lm.rtol == 0.05 && !lm.is_distribution());
        assert_eq!(r.find("num-zeros").unwrap().rtol, 0.20);
        assert_eq!(r.find("mem-allocated-bytes").unwrap().rtol, 0.05);
        assert_eq!(r.find("mtp_2 loss").unwrap().pattern, "mtp_* loss");
        assert_eq!(
            r.find("checkpoint-blocking-time").unwrap().skip_first_saves,
            1
        );
        assert_eq!(r.find("throughput").unwrap().pattern, "*");
        let it = r.find("iteration-time").unwrap().window.unwrap();
        assert_eq!(it.statistic, Statistic::Median);
        assert_eq!((it.steps_for(25).first, it.steps_for(25).last), (5, 20));
        assert_eq!((it.steps_for(100).first, it.steps_for(100).last), (30, 45));
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
