//! Stage "plan": a job's environment, layer by layer, lowest first — Megatron's NCCL defaults
//! (only where the caller sets none), the job's folders and Megatron's own variables, the
//! platform's `env`, the case's ENV_VARS (first placeholder pass done; values as written, as
//! `yq` exports them), the variant's `env`; then the variant's `unset`.

use std::cell::RefCell;
use std::collections::BTreeMap;

use super::build::Place;
use super::error::PlanError;
use super::megatron::NCCL_DEFAULTS;
use super::placeholder::{FromCaller, Names, is_name, resolve};
use goldgate_core::case::{Scalar, ScalarKind, TestCase, TestType};
use goldgate_core::config::{AxisValue, Platform};

/// The environment of a job and the one its first placeholder pass sees.
pub(crate) struct JobEnv {
    /// Every variable the job sets.
    pub(crate) env: BTreeMap<String, String>,
    /// The environment before the ENV_VARS are exported: what `envsubst` sees.
    pub(crate) before_env_vars: BTreeMap<String, String>,
    /// Variables the variant removes.
    pub(crate) unset: Vec<String>,
    /// `(name, place)` of every placeholder in ENV_VARS that nothing sets.
    pub(crate) missing: Vec<(String, Place)>,
}

/// Megatron's own variables besides the job's folders (`run_ci_test.sh` exports them).
pub(crate) fn megatron_vars(case: &TestCase, lightweight: bool) -> Vec<(String, String)> {
    let category = if case.test_type == TestType::Release {
        "production"
    } else {
        "test"
    };
    [
        ("ONE_LOGGER_JOB_CATEGORY", category),
        (
            "ENABLE_LIGHTWEIGHT_MODE",
            if lightweight { "true" } else { "false" },
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

/// The layers a job's environment is built from.
pub(crate) struct Layers<'a> {
    pub(crate) base: BTreeMap<String, String>,
    pub(crate) platform: &'a Platform,
    pub(crate) env_vars: &'a [(String, Scalar)],
    pub(crate) values: &'a [&'a AxisValue],
    pub(crate) caller: &'a BTreeMap<String, String>,
    /// The first run's own variables (ENV_VARS placeholders resolve as that run sees them).
    pub(crate) run1: &'a BTreeMap<String, String>,
    /// Where a placeholder in an ENV_VARS value is written (for warnings).
    pub(crate) place: &'a dyn Fn(&Scalar) -> Place,
}

/// Builds the job's environment from its layers.
pub(crate) fn job_env(
    layers: &Layers<'_>,
    from_caller: &RefCell<Vec<FromCaller>>,
) -> Result<JobEnv, PlanError> {
    let pre = before_case(layers);
    let mut unset = Vec::new();
    for value in layers.values {
        for name in &value.unset {
            if !unset.contains(name) {
                unset.push(name.clone());
            }
        }
    }
    let mut before_env_vars = pre.clone();
    for value in layers.values {
        before_env_vars.extend(value.env.iter().cloned());
    }
    for name in &unset {
        before_env_vars.remove(name);
    }
    let names = Names {
        layers: vec![layers.run1, &before_env_vars],
        caller: layers.caller,
        unset: &unset,
        from_caller,
    };
    let mut env = pre;
    let missing = add_env_vars(layers, &names, &mut env)?;
    for value in layers.values {
        env.extend(value.env.iter().cloned());
    }
    for name in &unset {
        env.remove(name);
    }
    Ok(JobEnv {
        env,
        before_env_vars,
        unset,
        missing,
    })
}

/// The layers below the case: NCCL defaults the caller does not set, the job's variables, the
/// platform's `env`.
fn before_case(layers: &Layers<'_>) -> BTreeMap<String, String> {
    let mut pre = BTreeMap::new();
    for (name, value) in NCCL_DEFAULTS {
        if !layers.caller.contains_key(name) {
            pre.insert(name.to_owned(), value.to_owned());
        }
    }
    pre.extend(layers.base.clone());
    pre.extend(layers.platform.env.iter().cloned());
    pre
}

/// The case's ENV_VARS, first placeholder pass done, into `env`; the names nothing sets.
fn add_env_vars(
    layers: &Layers<'_>,
    names: &Names<'_>,
    env: &mut BTreeMap<String, String>,
) -> Result<Vec<(String, Place)>, PlanError> {
    let mut missing = Vec::new();
    for (name, scalar) in layers.env_vars {
        if !is_name(name) {
            return Err(PlanError::EnvName {
                place: (layers.place)(scalar).to_string(),
                name: name.clone(),
            });
        }
        let text = if scalar.kind == ScalarKind::Null {
            ""
        } else {
            scalar.text.as_str()
        };
        let resolved = resolve(text, names);
        let place = (layers.place)(scalar);
        missing.extend(resolved.missing.into_iter().map(|n| (n, place.clone())));
        env.insert(name.clone(), resolved.text);
    }
    Ok(missing)
}
