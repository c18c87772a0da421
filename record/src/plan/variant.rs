//! Stage "plan": variants — one value per chosen axis of `goldgate.yaml` — and their expansion.
//!
//! `--variant AXIS=VALUE` fixes an axis, `--matrix AXIS,...` expands every value of the axes
//! (restricted by the case's `GOLDGATE.variants`). Axes that are neither keep their default
//! and are left out of the variant's name, so a plain run is called `default`. A choice equal to
//! the value the axis would take anyway is left out too: `--variant checkpoint=sync` runs the very
//! job a plain run does, so it is the same job (`default`), with one id, folder and golden file.

use std::collections::BTreeMap;

use serde::Serialize;

use super::error::PlanError;
use goldgate_core::config::{Axis, AxisValue, Config};

/// One value per chosen axis, in the axis order of `goldgate.yaml`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct Variant {
    /// `(axis, value)` pairs.
    pub choices: Vec<(String, String)>,
}

impl Variant {
    /// `allocator=gc80,checkpoint=async`, or `default` when nothing is chosen.
    pub fn name(&self) -> String {
        if self.choices.is_empty() {
            return "default".to_owned();
        }
        let parts: Vec<String> = self
            .choices
            .iter()
            .map(|(a, v)| format!("{a}={v}"))
            .collect();
        parts.join(",")
    }

    /// A path component: `allocator-gc80+checkpoint-async`, `default` when nothing is chosen.
    pub fn slug(&self) -> String {
        if self.choices.is_empty() {
            return "default".to_owned();
        }
        let parts: Vec<String> = self
            .choices
            .iter()
            .map(|(a, v)| format!("{}-{}", path_safe(a), path_safe(v)))
            .collect();
        parts.join("+")
    }

    /// The value chosen for `axis`, if any.
    pub fn get(&self, axis: &str) -> Option<&str> {
        self.choices
            .iter()
            .find(|(a, _)| a == axis)
            .map(|(_, v)| v.as_str())
    }
}

fn path_safe(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// What the command line asked for, checked against `goldgate.yaml`.
#[derive(Clone, Debug, Default)]
pub struct VariantRequest {
    /// Axis → the one value asked for.
    pub fixed: BTreeMap<String, String>,
    /// Axes to expand.
    pub matrix: Vec<String>,
}

impl VariantRequest {
    /// Parses `--variant AXIS=VALUE` and `--matrix AXIS` arguments.
    pub fn parse(
        config: &Config,
        variants: &[String],
        matrix: &[String],
    ) -> Result<Self, PlanError> {
        let mut request = VariantRequest::default();
        for text in variants {
            let (axis, value) = text
                .split_once('=')
                .ok_or_else(|| PlanError::VariantSyntax { text: text.clone() })?;
            let found = known_axis(config, axis.trim())?;
            let value = value.trim();
            if found.value(value).is_none() {
                return Err(unknown_value(found, value));
            }
            if request
                .fixed
                .insert(found.name.clone(), value.to_owned())
                .is_some()
            {
                return Err(PlanError::AxisTwice {
                    axis: found.name.clone(),
                });
            }
        }
        for axis in matrix.iter().map(|a| a.trim()).filter(|a| !a.is_empty()) {
            let found = known_axis(config, axis)?;
            if request.fixed.contains_key(axis) || request.matrix.contains(&found.name) {
                return Err(PlanError::AxisTwice {
                    axis: found.name.clone(),
                });
            }
            request.matrix.push(found.name.clone());
        }
        Ok(request)
    }
}

fn known_axis<'c>(config: &'c Config, axis: &str) -> Result<&'c Axis, PlanError> {
    config.axis(axis).ok_or_else(|| PlanError::UnknownAxis {
        axis: axis.to_owned(),
        valid: config.axis_names(),
    })
}

fn unknown_value(axis: &Axis, value: &str) -> PlanError {
    PlanError::UnknownValue {
        axis: axis.name.clone(),
        value: value.to_owned(),
        valid: axis.value_names(),
    }
}

/// Checks a case's `GOLDGATE.variants` against `goldgate.yaml`.
pub(crate) fn check_case_variants(
    config: &Config,
    path: &str,
    allowed: &BTreeMap<String, Vec<String>>,
) -> Result<(), PlanError> {
    let error = |message| PlanError::CaseVariants {
        path: path.to_owned(),
        message,
    };
    for (axis, values) in allowed {
        let Some(found) = config.axis(axis) else {
            let valid = config.axis_names();
            return Err(error(format!("unknown axis `{axis}` (valid: {valid})")));
        };
        if values.is_empty() {
            return Err(error(format!("axis `{axis}` allows no value")));
        }
        if let Some(bad) = values.iter().find(|v| found.value(v).is_none()) {
            let valid = found.value_names();
            return Err(error(format!(
                "unknown value `{bad}` for axis `{axis}` (valid: {valid})"
            )));
        }
    }
    Ok(())
}

/// Every variant of one case: the product of the fixed values and the expanded axes.
pub(crate) fn expand(
    config: &Config,
    request: &VariantRequest,
    case: &str,
    allowed: &BTreeMap<String, Vec<String>>,
) -> Result<Vec<Variant>, PlanError> {
    let mut variants = vec![Variant::default()];
    for axis in &config.axes {
        let case_allows = |value: &str| {
            allowed
                .get(&axis.name)
                .is_none_or(|vs| vs.iter().any(|v| v == value))
        };
        let values: Vec<&str> = if let Some(value) = request.fixed.get(&axis.name) {
            if !case_allows(value) {
                return Err(PlanError::NotAllowed {
                    case: case.to_owned(),
                    axis: axis.name.clone(),
                    value: value.clone(),
                    allowed: allowed
                        .get(&axis.name)
                        .map(|v| v.join(", "))
                        .unwrap_or_default(),
                });
            }
            vec![value.as_str()]
        } else if request.matrix.contains(&axis.name) {
            axis.values
                .iter()
                .map(|v| v.name.as_str())
                .filter(|v| case_allows(v))
                .collect()
        } else {
            continue;
        };
        variants = variants
            .into_iter()
            .flat_map(|base| {
                values.iter().map(move |value| {
                    let mut next = base.clone();
                    next.choices.push((axis.name.clone(), (*value).to_owned()));
                    next
                })
            })
            .collect();
    }
    for variant in &mut variants {
        variant
            .choices
            .retain(|(axis, value)| implied_value(config, axis, allowed) != Some(value.as_str()));
    }
    variants.dedup();
    Ok(variants)
}

/// The value an axis takes when nobody chooses one: the first value the case allows, else the
/// axis's first; none for an `opt_in` axis the case does not name.
fn implied_value<'c>(
    config: &'c Config,
    axis: &str,
    allowed: &'c BTreeMap<String, Vec<String>>,
) -> Option<&'c str> {
    let axis = config.axis(axis)?;
    match allowed.get(&axis.name) {
        Some(values) => values.first().map(String::as_str),
        None if axis.opt_in => None,
        None => axis.values.first().map(|v| v.name.as_str()),
    }
}

/// The axis values a job applies, in axis order: the chosen one, else the default — the first
/// value the case allows. An `opt_in` axis the case does not name and nobody chose is skipped.
pub(crate) fn applied_values<'c>(
    config: &'c Config,
    variant: &Variant,
    allowed: &BTreeMap<String, Vec<String>>,
) -> Vec<&'c AxisValue> {
    config
        .axes
        .iter()
        .filter_map(|axis| {
            let name = match (variant.get(&axis.name), allowed.get(&axis.name)) {
                (Some(chosen), _) => chosen,
                (None, Some(values)) => values.first()?.as_str(),
                (None, None) if axis.opt_in => return None,
                (None, None) => axis.values.first()?.name.as_str(),
            };
            axis.value(name)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> Config {
        Config::builtin().unwrap()
    }

    fn names(variants: &[Variant]) -> Vec<String> {
        variants.iter().map(Variant::name).collect()
    }

    #[test]
    fn names_and_slugs() {
        let v = Variant {
            choices: vec![
                ("allocator".into(), "gc80".into()),
                ("checkpoint".into(), "async".into()),
            ],
        };
        assert_eq!(v.name(), "allocator=gc80,checkpoint=async");
        assert_eq!(v.slug(), "allocator-gc80+checkpoint-async");
        assert_eq!(Variant::default().name(), "default");
        assert_eq!(Variant::default().slug(), "default");
        let odd = Variant {
            choices: vec![("a/b".into(), "c d".into())],
        };
        assert_eq!(odd.slug(), "a_b-c_d");
    }

    #[test]
    fn matrix_expands_in_axis_order_and_respects_the_case() {
        let config = config();
        let request =
            VariantRequest::parse(&config, &["allocator=gc80".into()], &["checkpoint".into()])
                .unwrap();
        let all = expand(&config, &request, "c", &BTreeMap::new()).unwrap();
        assert_eq!(
            names(&all),
            [
                "allocator=gc80",
                "allocator=gc80,checkpoint=async_nvrx",
                "allocator=gc80,checkpoint=async_mcore",
                "allocator=gc80,checkpoint=async_shm"
            ]
        );
        let allowed = BTreeMap::from([("checkpoint".to_owned(), vec!["async_nvrx".to_owned()])]);
        let some = expand(&config, &request, "c", &allowed).unwrap();
        // `async_nvrx` is the only value this case allows, so it is the case's default.
        assert_eq!(names(&some), ["allocator=gc80"]);
        assert_eq!(
            applied_values(&config, &some[0], &allowed)[1].name,
            "async_nvrx"
        );
    }

    #[test]
    fn bad_requests_list_the_valid_choices() {
        let config = config();
        let cases: [(&[&str], &[&str], &str); 5] = [
            (
                &["nope=1"],
                &[],
                "unknown variant axis `nope` (valid: allocator, checkpoint, empty_cache, data, fused)",
            ),
            (
                &["allocator=big"],
                &[],
                "unknown value `big` for variant axis `allocator` (valid: default, expandable, gc80)",
            ),
            (
                &["allocator"],
                &[],
                "`--variant allocator` is not of the form AXIS=VALUE",
            ),
            (
                &["allocator=gc80"],
                &["allocator"],
                "variant axis `allocator` is given more than once",
            ),
            (
                &[],
                &["checkpoint", "nope"],
                "unknown variant axis `nope` (valid: allocator, checkpoint, empty_cache, data, fused)",
            ),
        ];
        for (variants, matrix, want) in cases {
            let variants: Vec<String> = variants.iter().map(|s| (*s).to_owned()).collect();
            let matrix: Vec<String> = matrix.iter().map(|s| (*s).to_owned()).collect();
            let err = VariantRequest::parse(&config, &variants, &matrix).unwrap_err();
            assert_eq!(err.to_string(), want);
        }
    }

    #[test]
    fn a_choice_of_the_value_an_axis_takes_anyway_is_the_default_job() {
        let config = config();
        let none = BTreeMap::new();
        let request = |variants: &[&str]| {
            let variants: Vec<String> = variants.iter().map(|s| (*s).to_owned()).collect();
            VariantRequest::parse(&config, &variants, &[]).unwrap()
        };
        let plain = expand(&config, &request(&[]), "c", &none).unwrap();
        let explicit = expand(&config, &request(&["checkpoint=sync"]), "c", &none).unwrap();
        assert_eq!(names(&plain), ["default"]);
        assert_eq!(explicit, plain);
        let both = expand(
            &config,
            &request(&["allocator=default", "checkpoint=async_nvrx"]),
            "c",
            &none,
        );
        assert_eq!(names(&both.unwrap()), ["checkpoint=async_nvrx"]);
        // An opt-in axis the case does not name takes no value, so choosing its first is a change;
        // a case that allows only some values defaults to the first of those.
        let opt_in = expand(&config, &request(&["empty_cache=level0"]), "c", &none).unwrap();
        assert_eq!(names(&opt_in), ["empty_cache=level0"]);
        let allowed = BTreeMap::from([(
            "checkpoint".to_owned(),
            vec!["async_nvrx".to_owned(), "sync".to_owned()],
        )]);
        let first = expand(&config, &request(&["checkpoint=async_nvrx"]), "c", &allowed).unwrap();
        assert_eq!(names(&first), ["default"]);
        let other = expand(&config, &request(&["checkpoint=sync"]), "c", &allowed).unwrap();
        assert_eq!(names(&other), ["checkpoint=sync"]);
    }

    #[test]
    fn a_fixed_value_the_case_excludes_is_an_error() {
        let config = config();
        let request = VariantRequest::parse(&config, &["checkpoint=sync".into()], &[]).unwrap();
        let allowed = BTreeMap::from([("checkpoint".to_owned(), vec!["async_nvrx".to_owned()])]);
        let err = expand(&config, &request, "gpt/x", &allowed).unwrap_err();
        assert_eq!(
            err.to_string(),
            "case gpt/x does not allow `checkpoint=sync` (its GOLDGATE.variants allow: async_nvrx)"
        );
    }

    #[test]
    fn defaults_apply_except_opt_in_axes_the_case_does_not_name() {
        let config = config();
        let applied = |allowed: &BTreeMap<String, Vec<String>>| -> Vec<String> {
            applied_values(&config, &Variant::default(), allowed)
                .iter()
                .map(|v| v.name.clone())
                .collect()
        };
        assert_eq!(applied(&BTreeMap::new()), ["default", "sync"]);
        let named = BTreeMap::from([("empty_cache".to_owned(), vec!["level2".to_owned()])]);
        assert_eq!(applied(&named), ["default", "sync", "level2"]);
    }

    #[test]
    fn case_variants_are_checked() {
        let config = config();
        let bad = BTreeMap::from([("checkpoint".to_owned(), vec!["fast".to_owned()])]);
        let err = check_case_variants(&config, "x.yaml", &bad).unwrap_err();
        assert_eq!(
            err.to_string(),
            "x.yaml: GOLDGATE.variants: unknown value `fast` for axis `checkpoint` (valid: sync, async_nvrx, async_mcore, async_shm)"
        );
    }
}
