//! Stage "compare": how Megatron's `run_ci_test.sh` decides a job's fate before any golden
//! value is read, from the inputs the job's record carries (`RunRecord::judging`, written when
//! it ran), never from the case file as it is today unless asked (`--current-case`) or the
//! record predates them (then said in a warning). `SKIP_PYTEST=1`: the job is judged by its
//! outcome alone. `TEST_EVALUATION: xpass`: a failure of the program is the expected result and
//! passes ([`failed_as_expected`], the one place that decides it); a training that passed is
//! compared as usual. `MODE: inference`: the job is judged by its requests
//! (`compare::golden::inference`), not by metric series. `METRICS`: the golden metrics compared.
//! The case file as it is today is read only to say what changed since the run (its hash) and
//! which keys it holds twice, never for an input of a recorded judgement.

use std::path::{Path, PathBuf};

use crate::compare::error::CompareError;
use crate::compare::options::CompareOptions;
use goldgate_schema::{Judging, Outcome, RunRecord};

/// What a job's case says about its evaluation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Evaluation {
    /// `SKIP_PYTEST=1` in the job's environment: no comparison.
    pub(crate) skip_checks: bool,
    /// `TEST_EVALUATION: xpass`: the training is expected to fail.
    pub(crate) expect_failure: bool,
    /// `MODE: inference`: judged by its requests (`compare::golden::inference`).
    pub(crate) inference: bool,
    /// The case's `METRICS`; `None` when neither the record nor a case file says (every golden
    /// metric is compared).
    pub(crate) metrics: Option<Vec<String>>,
}

/// Whether a job that did not pass passes all the same: its case expects a failure
/// (`TEST_EVALUATION: xpass`) and this is a failure of the program itself
/// ([`Outcome::is_program_failure`]). A launch error, a timeout, an interruption or the
/// cluster's failure never is. `goldgate run`'s exit and `compare`'s verdict both ask here.
pub fn failed_as_expected(outcome: &Outcome, expect_failure: bool) -> bool {
    expect_failure && outcome.is_program_failure()
}

/// [`failed_as_expected`] for a record, by the expectation it recorded.
pub fn record_failed_as_expected(record: &RunRecord) -> bool {
    let expect = record.judging.as_ref().is_some_and(|j| j.expect_failure);
    failed_as_expected(&record.outcome, expect)
}

/// The evaluation of a job (its repeats together): from the first repeat's recorded inputs,
/// or from today's case file at `config` when asked or when the record has none. What it was
/// judged by, when that is not the run's own inputs, goes into `warnings`.
pub(crate) fn evaluation(
    group: &[(PathBuf, RunRecord)],
    opts: &CompareOptions,
    config: Option<&Path>,
    warnings: &mut Vec<String>,
) -> Result<Evaluation, CompareError> {
    let first = &group[0].1;
    let skip_env = group
        .iter()
        .any(|(_, r)| r.env.get("SKIP_PYTEST").is_some_and(|v| v.trim() == "1"));
    let mut eval = match (&first.judging, opts.current_case) {
        (Some(judging), false) => {
            note_changes(first, judging, opts, config, warnings);
            // Not an input of the judgement: a reviewer's warning about the file as it is.
            if let Some(Ok((_, found))) =
                config.map(|c| goldgate_core::case::load_case_checked(&opts.root, c))
            {
                duplicate_keys(&found, warnings);
            }
            recorded(judging)
        }
        (recorded, _) => {
            let why = match recorded {
                Some(_) => "--current-case",
                None => "its results.json predates the recorded judging inputs",
            };
            from_case_file(first, config, why, &opts.root, warnings)?
        }
    };
    eval.skip_checks |= skip_env;
    Ok(eval)
}

/// The evaluation the run recorded.
fn recorded(judging: &Judging) -> Evaluation {
    Evaluation {
        skip_checks: judging.skip_checks,
        expect_failure: judging.expect_failure,
        inference: judging.mode == "inference",
        metrics: Some(judging.metrics.clone()),
    }
}

/// The evaluation today's case file gives (none without one), said in a warning.
fn from_case_file(
    first: &RunRecord,
    config: Option<&Path>,
    why: &str,
    root: &Path,
    warnings: &mut Vec<String>,
) -> Result<Evaluation, CompareError> {
    let Some(config) = config else {
        return Ok(Evaluation::default());
    };
    let (case, found) = goldgate_core::case::load_case_checked(root, config)?;
    duplicate_keys(&found, warnings);
    warnings.push(format!(
        "{} ({}): METRICS, TEST_EVALUATION and MODE read from today's {} ({why})",
        first.case,
        first.variant.name,
        config.display()
    ));
    Ok(Evaluation {
        skip_checks: false,
        expect_failure: (case.test_evaluation.as_ref()).is_some_and(|t| t.text.trim() == "xpass"),
        inference: case.mode == goldgate_core::case::Mode::Inference,
        metrics: Some(case.metrics),
    })
}

/// Says when the case file or the rules changed since the run: the job is judged by what the
/// run recorded, and today's rules (the record keeps only their hash).
fn note_changes(
    first: &RunRecord,
    judging: &Judging,
    opts: &CompareOptions,
    config: Option<&Path>,
    warnings: &mut Vec<String>,
) {
    let today = config.and_then(|c| {
        goldgate_core::case::case_file_sha256(c)
            .ok()
            .map(|h| (c, h))
    });
    if let Some((config, hash)) = today.filter(|(_, h)| *h != judging.case_sha256) {
        warnings.push(format!(
            "{} ({}): {} changed since the run (sha256 {} then, {} now): judged with the \
             METRICS, TEST_EVALUATION and MODE the run recorded (--current-case judges with \
             today's)",
            first.case,
            first.variant.name,
            config.display(),
            short(&judging.case_sha256),
            short(&hash)
        ));
    }
    let Some(now) = &opts.rules_ref else { return };
    if now.sha256 != judging.rules.sha256 {
        let note = format!(
            "the rules changed since the run (run: {} sha256 {}; now: {} sha256 {}): judged with \
             today's rules",
            judging.rules.source,
            short(&judging.rules.sha256),
            now.source,
            short(&now.sha256)
        );
        if !warnings.contains(&note) {
            warnings.push(note);
        }
    }
}

/// A warning naming the line of every key the case file holds twice (the last value counts, as
/// in Megatron's reader, but a reviewer sees the first).
fn duplicate_keys(found: &[goldgate_core::case::CaseWarning], warnings: &mut Vec<String>) {
    let dupes = found
        .iter()
        .filter(|w| w.message.starts_with("duplicate key"));
    for w in dupes {
        let line = w.at.map_or(String::new(), |at| format!(":{}", at.line));
        warnings.push(format!("{}{line}: {}", w.path.display(), w.message));
    }
}

/// The first 12 hex digits of a hash, as the warnings show it.
fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::compare_records;
    use goldgate_core::rules::RuleSet;
    use goldgate_schema::Exit;
    use goldgate_schema::Verdict;
    use goldgate_schema::{GoldenKey, RulesRef};

    fn opts(root: &Path, current_case: bool) -> CompareOptions {
        CompareOptions {
            golden_root: root.join("golden"),
            root: root.to_path_buf(),
            platform: None,
            allow_env_mismatch: false,
            rules: RuleSet::megatron(),
            axis_defaults: Default::default(),
            rules_ref: None,
            current_case,
            ab_clock_platforms: Vec::new(),
            clocks: None,
        }
    }

    /// A case file at `<root>/m/c/model_config.yaml` and its path.
    fn case_file(root: &Path, yaml: &str) -> PathBuf {
        let path = root.join("m/c/model_config.yaml");
        goldgate_core::fsio::write_atomic(&path, yaml.as_bytes()).unwrap();
        path
    }

    fn judged(record: RunRecord, root: &Path, current: bool) -> (Evaluation, Vec<String>) {
        let config = root.join("m/c/model_config.yaml");
        let group = [(PathBuf::from("m/c/default/1/results.json"), record)];
        let mut warnings = Vec::new();
        let config = config.is_file().then_some(config);
        let e = evaluation(
            &group,
            &opts(root, current),
            config.as_deref(),
            &mut warnings,
        );
        (e.unwrap(), warnings)
    }

    fn recorded_record(case_sha256: String) -> RunRecord {
        let (_, mut r) = crate::compare::fixtures::record("m/c", 1, &[]);
        r.judging = Some(Judging {
            metrics: vec!["lm loss".into()],
            test_evaluation: None,
            mode: "pretraining".into(),
            expect_failure: false,
            skip_checks: false,
            golden: GoldenKey::default(),
            rules: RulesRef::default(),
            case_file: "m/c/model_config.yaml".into(),
            case_sha256,
        });
        r
    }

    const TODAY: &str = "TEST_TYPE: regular\nMODEL_ARGS: {}\nMETRICS: [num-zeros]\nTEST_EVALUATION: xpass\nMODE: inference\n";

    #[test]
    fn a_record_with_its_inputs_is_judged_by_them_and_says_the_case_changed() {
        let dir = tempfile::tempdir().unwrap();
        case_file(dir.path(), TODAY);
        let (e, warnings) = judged(recorded_record("0".repeat(64)), dir.path(), false);
        assert_eq!(e.metrics, Some(vec!["lm loss".to_string()]));
        assert!(!e.expect_failure && !e.inference, "{e:?}");
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0]
                .contains("model_config.yaml changed since the run (sha256 000000000000 then"),
            "{warnings:?}"
        );
        // Unchanged: nothing to say.
        let same = goldgate_core::case::sha256_hex(TODAY.as_bytes());
        let (_, warnings) = judged(recorded_record(same), dir.path(), false);
        assert!(warnings.is_empty(), "{warnings:?}");
    }

    #[test]
    fn a_record_without_its_inputs_or_under_current_case_reads_todays_case_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        case_file(dir.path(), TODAY);
        let (_, old) = crate::compare::fixtures::record("m/c", 1, &[]);
        for (record, current, why) in [
            (old, false, "predates the recorded judging inputs"),
            (recorded_record(String::new()), true, "--current-case"),
        ] {
            let (e, warnings) = judged(record, dir.path(), current);
            assert_eq!(e.metrics, Some(vec!["num-zeros".to_string()]));
            assert!(e.expect_failure && e.inference, "{e:?}");
            assert!(
                warnings
                    .iter()
                    .any(|w| w.contains("read from today's") && w.contains(why)),
                "{warnings:?}"
            );
        }
    }

    #[test]
    fn a_record_never_opens_a_case_file_it_does_not_need() {
        // No case file at all: the recorded inputs judge, nothing is read.
        let dir = tempfile::tempdir().unwrap();
        let (e, warnings) = judged(recorded_record(String::new()), dir.path(), false);
        assert_eq!(e.metrics, Some(vec!["lm loss".to_string()]));
        assert!(warnings.is_empty(), "{warnings:?}");
    }

    #[test]
    fn xpass_passes_only_a_failure_of_the_program() {
        let failures = [
            (Outcome::Failed { exit_code: 1 }, true),
            (Outcome::Nan, true),
            (Outcome::OutOfMemory, true),
            (
                Outcome::LaunchError {
                    message: "program `torchrun` not found".into(),
                },
                false,
            ),
            (
                Outcome::TimedOut {
                    after_seconds: 60.0,
                },
                false,
            ),
            (Outcome::Interrupted, false),
            (Outcome::HostOutOfMemory, false),
            (
                Outcome::Infrastructure {
                    state: "NODE_FAIL".into(),
                },
                false,
            ),
        ];
        let dir = tempfile::tempdir().unwrap();
        for (outcome, passes) in failures {
            assert_eq!(failed_as_expected(&outcome, true), passes, "{outcome:?}");
            assert!(!failed_as_expected(&outcome, false), "{outcome:?}");
            let mut r = recorded_record(String::new());
            r.outcome = outcome.clone();
            if let Some(j) = r.judging.as_mut() {
                j.expect_failure = true;
            }
            assert_eq!(record_failed_as_expected(&r), passes, "{outcome:?}");
            let group = vec![(PathBuf::from("m/c/default/1/results.json"), r)];
            let c = compare_records(group, &opts(dir.path(), false)).unwrap();
            let (verdict, exit) = match passes {
                true => (Verdict::Pass, Exit::Pass),
                false => (Verdict::JobFailed, Exit::Failure),
            };
            assert_eq!(
                (c.jobs[0].verdict, c.exit(false, false)),
                (verdict, exit),
                "{outcome:?}"
            );
        }
    }
}
