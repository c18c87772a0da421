//! Stage "compare": where a comparison looks for golden files and how it judges
//! ([`CompareOptions`]), shared by the engine and Megatron's test semantics (`evaluation`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use goldgate_core::rules::RuleSet;

/// Where to look and how to judge.
#[derive(Clone, Debug)]
pub struct CompareOptions {
    /// goldgate's golden tree: `<golden_root>/<model>/<case>/golden_values_<env>_<platform>.json`.
    pub golden_root: PathBuf,
    /// The test-case tree (goldens beside `model_config.yaml`, Megatron's layout).
    pub root: PathBuf,
    /// Golden platform; `None` = each record's own platform.
    pub platform: Option<String>,
    /// Compare even when the GPU model does not match the golden platform (adds a warning).
    pub allow_env_mismatch: bool,
    pub rules: RuleSet,
    /// Each variant axis's default value: a record whose every choice is a default is judged
    /// against the case's golden file, any other against its variant's own (records that
    /// carry their golden key use it).
    pub axis_defaults: BTreeMap<String, String>,
    /// Today's rules' source and hash, to say when they differ from the run's.
    pub rules_ref: Option<goldgate_schema::RulesRef>,
    /// `--current-case`: judge with today's case files (METRICS, TEST_EVALUATION, MODE)
    /// instead of what each run recorded.
    pub current_case: bool,
    /// Platforms whose clocks only `goldgate ab` gates (`clocks: ab`): there a clock is judged
    /// against its golden and reported, and never fails the gate (`engine::report_clocks`).
    pub ab_clock_platforms: Vec<String>,
    /// `run`/`compare --clocks`: what judges the clocks in this comparison, whatever the
    /// platform says (`ab` where a `goldgate ab` of the same check gates timing).
    pub clocks: Option<goldgate_core::config::Clocks>,
}

impl CompareOptions {
    /// Whether `platform`'s clocks are left to `goldgate ab` here, and who said so, short (a
    /// row's reason) and long (the warning): `--clocks ab`, or the platform's `clocks: ab`.
    pub fn clocks_by_ab(&self, platform: &str) -> Option<(&'static str, &'static str)> {
        use goldgate_core::config::Clocks;
        match self.clocks {
            Some(Clocks::Ab) => Some(("`--clocks ab`", "`--clocks ab`")),
            Some(Clocks::Golden) => None,
            None => (self.ab_clock_platforms.iter().any(|p| p == platform))
                .then_some(("`clocks: ab`", "`clocks: ab` in goldgate.yaml")),
        }
    }
}

impl CompareOptions {
    /// Options with the rules and variant axes of `config`.
    pub fn from_config(
        config: &goldgate_core::config::Config,
        golden_root: PathBuf,
        root: PathBuf,
        platform: Option<String>,
        allow_env_mismatch: bool,
    ) -> CompareOptions {
        CompareOptions {
            golden_root,
            root,
            platform,
            allow_env_mismatch,
            rules: RuleSet::from_config(&config.rules),
            axis_defaults: config.axis_defaults(),
            rules_ref: Some(config.rules_ref()),
            current_case: false,
            ab_clock_platforms: (config.platforms.iter())
                .filter(|p| p.clocks == goldgate_core::config::Clocks::Ab)
                .map(|p| p.name.clone())
                .collect(),
            clocks: None,
        }
    }
}
