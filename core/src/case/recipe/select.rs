//! Stage "case" (recipes): picking rows as Megatron's `load_workloads` filters them (scope,
//! cadence, environment, platform), and the row a named case runs under.

use super::load::{DEFAULT_CADENCE, RecipeRow, resolve_scope};

/// Megatron's filters; `None` does not filter.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecipeFilter {
    /// `--scope`: legacy names are renamed as recipe rows are (`nightly` matches `L2`).
    pub scope: Option<String>,
    /// `--cadence`: rows whose cadence list holds it.
    pub cadence: Option<String>,
    /// `--environment`: `dev` or `lts`.
    pub environment: Option<String>,
    /// `--platform`: `dgx_h100` ...
    pub platform: Option<String>,
}

impl RecipeFilter {
    /// Whether `row` passes every filter.
    pub fn matches(&self, row: &RecipeRow) -> bool {
        let same = |want: &Option<String>, have: &Option<String>| {
            want.as_ref().is_none_or(|w| have.as_ref() == Some(w))
        };
        let scope = self.scope.as_deref().map(resolve_scope);
        scope.is_none_or(|s| row.scope.as_deref() == Some(s))
            && self.cadence.as_ref().is_none_or(|c| {
                if row.cadence.is_empty() {
                    DEFAULT_CADENCE.contains(&c.as_str())
                } else {
                    row.cadence.contains(c)
                }
            })
            && same(&self.environment, &row.environment)
            && same(&self.platform, &row.platform)
    }
}

/// The rows that pass `filter`, in recipe order.
pub fn select<'a>(rows: &'a [RecipeRow], filter: &RecipeFilter) -> Vec<&'a RecipeRow> {
    rows.iter().filter(|r| filter.matches(r)).collect()
}

/// What the recipes say about one case run on one environment and platform.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CaseRecipe<'a> {
    /// A row for exactly this environment and platform: its nodes and GPUs apply.
    pub exact: Option<&'a RecipeRow>,
    /// A row of the case for this environment (any platform), else any row of the case: its
    /// training script applies, which a case keeps across platforms.
    pub any: Option<&'a RecipeRow>,
}

/// The recipe rows of `case` for `environment` on `platform`.
pub fn for_case<'a>(
    rows: &'a [RecipeRow],
    case: &str,
    environment: &str,
    platform: &str,
) -> CaseRecipe<'a> {
    let of_case = || rows.iter().filter(move |r| r.case == case);
    let exact = of_case().find(|r| {
        r.environment.as_deref() == Some(environment) && r.platform.as_deref() == Some(platform)
    });
    let any = exact
        .or_else(|| of_case().find(|r| r.environment.as_deref() == Some(environment)))
        .or_else(|| of_case().next());
    CaseRecipe { exact, any }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(case: &str, env: &str, platform: &str, scope: &str, cadence: &[&str]) -> RecipeRow {
        RecipeRow {
            file: "r.yaml".into(),
            case: case.into(),
            name: String::new(),
            environment: Some(env.into()),
            platform: Some(platform.into()),
            scope: Some(scope.into()),
            cadence: cadence.iter().map(|c| (*c).to_owned()).collect(),
            nodes: Some(1),
            gpus: Some(8),
            n_repeat: None,
            time_limit: None,
            script: Err("none".into()),
        }
    }

    #[test]
    fn filters_as_megatron_does() {
        let rows = [
            row("gpt/a", "dev", "dgx_h100", "mr", &["pr"]),
            row("gpt/a", "lts", "dgx_a100", "L2", &["nightly"]),
            row("gpt/b", "dev", "dgx_a100", "mr", &[]),
        ];
        let pick = |f: RecipeFilter| -> Vec<String> {
            select(&rows, &f)
                .iter()
                .map(|r| format!("{}:{}", r.case, r.platform.as_deref().unwrap_or("")))
                .collect()
        };
        let mr = RecipeFilter {
            scope: Some("mr".into()),
            ..RecipeFilter::default()
        };
        assert_eq!(pick(mr.clone()), ["gpt/a:dgx_h100", "gpt/b:dgx_a100"]);
        let mr_h100 = RecipeFilter {
            platform: Some("dgx_h100".into()),
            ..mr
        };
        assert_eq!(pick(mr_h100), ["gpt/a:dgx_h100"]);
        let nightly = RecipeFilter {
            scope: Some("nightly".into()),
            ..RecipeFilter::default()
        };
        assert_eq!(pick(nightly), ["gpt/a:dgx_a100"], "legacy name → L2");
        let by_cadence = RecipeFilter {
            cadence: Some("mergegroup".into()),
            ..RecipeFilter::default()
        };
        assert_eq!(
            pick(by_cadence),
            ["gpt/b:dgx_a100"],
            "an empty cadence is the default"
        );
    }

    #[test]
    fn a_named_case_takes_the_exact_row_or_the_script_of_another() {
        let rows = [
            row("gpt/a", "lts", "dgx_a100", "L2", &[]),
            row("gpt/a", "dev", "dgx_h100", "mr", &[]),
        ];
        let exact = for_case(&rows, "gpt/a", "dev", "dgx_h100");
        assert_eq!(exact.exact, Some(&rows[1]));
        let h200 = for_case(&rows, "gpt/a", "dev", "h200");
        assert_eq!(h200.exact, None);
        assert_eq!(h200.any, Some(&rows[1]), "same environment first");
        assert_eq!(for_case(&rows, "gpt/zz", "dev", "h200").any, None);
    }
}
