//! `goldgate list --scope/--cadence`: the recipe rows Megatron's recipe parser selects, one
//! line per workload (case × environment × platform), with the nodes, GPUs, repeats, time
//! limit and training script its recipe gives — what `goldgate run --scope` would run.

use tabled::settings::Style;

use super::error::AppError;
use super::output::outln;
use super::select::RecipeArgs;
use goldgate_core::case::{RecipeFilter, RecipeRow, select};
use goldgate_record::plan::{load_rows, not_run_reason};
use goldgate_schema::Exit;

/// Version of `list --format json`'s layout; raised when a field changes meaning or goes away.
pub(crate) const LIST_SCHEMA_VERSION: u32 = 1;

/// One listed workload: its recipe row and why `goldgate run --scope` leaves it out (the note
/// `plan` and `run` print), if it does.
pub(crate) struct Listed<'a> {
    pub row: &'a RecipeRow,
    pub not_run: Option<String>,
}

impl Listed<'_> {
    /// Nodes the job takes (1 when the recipe says nothing).
    fn nodes(&self) -> u32 {
        self.row.nodes.unwrap_or(1)
    }
}

/// Lists the rows of `recipes`' scope or cadence (and environment, platform).
pub(crate) fn run(
    recipes: &RecipeArgs,
    platform: Option<&str>,
    root: &std::path::Path,
    config: &goldgate_core::config::Config,
    json: bool,
) -> Result<Exit, AppError> {
    let rows = load_rows(&recipes.query(), root, config)?;
    // Without a case tree every row is "no case folder", as `plan` would say.
    let found = goldgate_core::case::discover(root).unwrap_or_default();
    let filter = RecipeFilter {
        scope: recipes.scope.clone(),
        cadence: recipes.cadence.clone(),
        environment: recipes.environment.clone(),
        platform: platform.map(str::to_owned),
    };
    let listed: Vec<Listed> = select(&rows, &filter)
        .into_iter()
        .map(|row| Listed {
            row,
            not_run: not_run_reason(row, &found, root),
        })
        .collect();
    let out = match json {
        true => render_json(&listed),
        false => render_table(&listed),
    };
    outln!("{out}");
    Ok(Exit::Pass)
}

/// The JSON scripts read: `schema_version` (`list`'s) and `workloads`, one object per row.
pub(crate) fn render_json(rows: &[Listed]) -> String {
    let workloads: Vec<_> = rows.iter().map(workload_json).collect();
    let doc = serde_json::json!({
        "schema_version": LIST_SCHEMA_VERSION,
        "workloads": workloads,
    });
    serde_json::to_string_pretty(&doc)
        .unwrap_or_else(|e| format!("{{\"error\": {:?}}}", e.to_string()))
}

/// One workload of `list --format json`: Megatron's workload `name`, the `case` folder
/// (`<model>/<case>`), `environment`, `platform`, `scope`, `cadence`, `nodes`, `gpus` (ranks per
/// node `plan` and `run` launch: the recipe script's `GPUS_PER_NODE`, else Megatron's default
/// of 8), `gpus_allocated` (the recipe's `spec.gpus`, which may differ: `gpus: 1` rows of
/// Megatron's H100 recipes still launch 8), `n_repeat`, `time_limit` (seconds),
/// `training_script` (relative to Megatron-LM) and, for a row `run --scope` leaves out,
/// `not_run`.
fn workload_json(listed: &Listed) -> serde_json::Value {
    let row = listed.row;
    let mut value = serde_json::json!({
        "name": row.name,
        "case": row.case,
        "environment": row.environment,
        "platform": row.platform,
        "scope": row.scope,
        "cadence": row.cadence,
        "nodes": listed.nodes(),
        "gpus": row.gpus_per_node(),
        "gpus_allocated": row.gpus,
        "n_repeat": row.n_repeat,
        "time_limit": row.time_limit,
        "training_script": row.training_script(),
    });
    if let Some(why) = &listed.not_run {
        value["not_run"] = why.as_str().into();
    }
    value
}

/// One line per workload.
pub(crate) fn render_table(rows: &[Listed]) -> String {
    let dash = || "-".to_owned();
    let mut b = tabled::builder::Builder::default();
    b.push_record([
        "case",
        "env",
        "platform",
        "scope",
        "nodes×gpus",
        "repeats",
        "time",
        "script",
    ]);
    for listed in rows {
        let r = listed.row;
        let (n, g) = (listed.nodes(), r.gpus_per_node());
        let size = match r.gpus {
            Some(a) if a != g => format!("{n}×{g} ({a} allocated)"),
            _ => format!("{n}×{g}"),
        };
        b.push_record([
            r.case.clone(),
            r.environment.clone().unwrap_or_else(dash),
            r.platform.clone().unwrap_or_else(dash),
            r.scope.clone().unwrap_or_else(dash),
            size,
            r.n_repeat.map_or_else(dash, |n| n.to_string()),
            r.time_limit
                .map_or_else(dash, |s| format!("{} min", s / 60)),
            r.training_script().map_or_else(dash, str::to_owned),
        ]);
    }
    let mut table = b.build();
    table.with(Style::sharp());
    let mut s = format!("{table}\n{} workload(s)", rows.len());
    let left_out: Vec<&Listed> = rows.iter().filter(|r| r.not_run.is_some()).collect();
    if !left_out.is_empty() {
        s.push_str(&format!(
            "; {} not run by `goldgate run --scope`:",
            left_out.len()
        ));
        for r in left_out {
            let why = r.not_run.as_deref().unwrap_or_default();
            s.push_str(&format!("\n  {}: {why}", r.row.name));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use goldgate_core::case::{Runner, ScriptFacts};

    /// A recipe row of `gpt/<name>` on dgx_h100 in scope mr, one node, allocating 8 GPUs, with
    /// a functional-test script that sets no `GPUS_PER_NODE`.
    fn recipe(name: &str, case: &str) -> RecipeRow {
        RecipeRow {
            file: "h100/gpt.yaml".into(),
            case: case.into(),
            name: name.into(),
            environment: Some("dev".into()),
            platform: Some("dgx_h100".into()),
            scope: Some("mr".into()),
            cadence: vec![],
            nodes: Some(1),
            gpus: Some(8),
            n_repeat: Some(1),
            time_limit: None,
            script: Err("no script".into()),
        }
    }

    #[test]
    fn table() {
        let recipe = RecipeRow {
            cadence: vec!["pr".into()],
            n_repeat: Some(5),
            time_limit: Some(1800),
            script: Ok(ScriptFacts {
                runner: Runner::FunctionalTest,
                arguments: vec![("TRAINING_SCRIPT_PATH".into(), "pretrain_gpt.py".into())],
                gpus_per_node: None,
            }),
            ..recipe("gpt3_x_dev_dgx_h100", "gpt/gpt3_x")
        };
        let row = Listed {
            row: &recipe,
            not_run: None,
        };
        insta::assert_snapshot!(render_table(&[row]));
    }

    #[test]
    fn rows_goldgate_does_not_run_are_named_with_why() {
        let runs = recipe("gpt3_x_dev_dgx_h100", "gpt/gpt3_x");
        let perf = recipe("gpt_16b_perf_dev_dgx_h100", "gpt/gpt_16b_perf");
        let rows = [
            Listed {
                row: &runs,
                not_run: None,
            },
            Listed {
                row: &perf,
                not_run: Some(
                    "its recipe runs a performance test script, not run_ci_test.sh".into(),
                ),
            },
        ];
        insta::assert_snapshot!(render_table(&rows));
        let json: serde_json::Value = serde_json::from_str(&render_json(&rows)).unwrap();
        let workloads = json["workloads"].as_array().unwrap();
        assert_eq!(workloads[0].get("not_run"), None, "{json}");
        assert_eq!(
            workloads[1]["not_run"],
            "its recipe runs a performance test script, not run_ci_test.sh"
        );
    }

    /// A recipe row that allocates one GPU and whose script sets no `GPUS_PER_NODE` launches
    /// Megatron's default of 8 ranks, as `plan` shows: `list` says 8 too, and what is allocated.
    #[test]
    fn a_row_shows_the_ranks_plan_launches_and_what_its_recipe_allocates() {
        let recipe = RecipeRow {
            file: "h100/gpt-grpo.yaml".into(),
            n_repeat: None,
            gpus: Some(1),
            ..recipe("gpt_grpo_dev_dgx_h100", "gpt/grpo")
        };
        let row = Listed {
            row: &recipe,
            not_run: None,
        };
        let json: serde_json::Value =
            serde_json::from_str(&render_json(std::slice::from_ref(&row))).unwrap();
        let listed = &json["workloads"][0];
        assert_eq!(
            (&listed["nodes"], &listed["gpus"], &listed["gpus_allocated"]),
            (&1.into(), &8.into(), &1.into())
        );
        insta::assert_snapshot!(render_table(&[row]));
    }
}
