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

/// One listed workload.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub(crate) struct WorkloadRow {
    /// Megatron's workload name (`{test_case}_{environment}_{platforms}`).
    pub name: String,
    /// `<model>/<case>`.
    pub case: String,
    pub environment: Option<String>,
    pub platform: Option<String>,
    pub scope: Option<String>,
    pub cadence: Vec<String>,
    pub nodes: Option<u32>,
    /// Ranks per node `plan` and `run` launch: the recipe script's `GPUS_PER_NODE`, else
    /// Megatron's default of 8 (what `_run_training.sh` starts torchrun with).
    pub gpus: Option<u32>,
    /// GPUs per node the recipe's `spec.gpus` allocates, where it says (it may differ from the
    /// ranks launched: `gpus: 1` rows of Megatron's H100 recipes still launch 8).
    pub gpus_allocated: Option<u32>,
    pub n_repeat: Option<u32>,
    /// Seconds.
    pub time_limit: Option<u64>,
    /// `TRAINING_SCRIPT_PATH`, relative to Megatron-LM.
    pub training_script: Option<String>,
    /// Why `goldgate run --scope` leaves this row out (the note `plan` and `run` print);
    /// absent for a row it runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_run: Option<String>,
}

impl WorkloadRow {
    fn of(row: &RecipeRow, not_run: Option<String>) -> WorkloadRow {
        WorkloadRow {
            name: row.name.clone(),
            case: row.case.clone(),
            environment: row.environment.clone(),
            platform: row.platform.clone(),
            scope: row.scope.clone(),
            cadence: row.cadence.clone(),
            nodes: Some(row.nodes.unwrap_or(1)),
            gpus: Some(row.gpus_per_node()),
            gpus_allocated: row.gpus,
            n_repeat: row.n_repeat,
            time_limit: row.time_limit,
            training_script: row.training_script().map(str::to_owned),
            not_run,
        }
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
    let listed: Vec<WorkloadRow> = select(&rows, &filter)
        .into_iter()
        .map(|row| WorkloadRow::of(row, not_run_reason(row, &found, root)))
        .collect();
    let out = match json {
        true => render_json(&listed),
        false => render_table(&listed),
    };
    outln!("{out}");
    Ok(Exit::Pass)
}

/// The JSON scripts read: `schema_version` (`list`'s) and `workloads`, one object per row.
pub(crate) fn render_json(rows: &[WorkloadRow]) -> String {
    let doc = serde_json::json!({
        "schema_version": super::list::LIST_SCHEMA_VERSION,
        "workloads": rows,
    });
    serde_json::to_string_pretty(&doc)
        .unwrap_or_else(|e| format!("{{\"error\": {:?}}}", e.to_string()))
}

/// One line per workload.
pub(crate) fn render_table(rows: &[WorkloadRow]) -> String {
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
    for r in rows {
        let size = match (r.nodes, r.gpus, r.gpus_allocated) {
            (Some(n), Some(g), Some(a)) if a != g => format!("{n}×{g} ({a} allocated)"),
            (Some(n), Some(g), _) => format!("{n}×{g}"),
            _ => dash(),
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
            r.training_script.clone().unwrap_or_else(dash),
        ]);
    }
    let mut table = b.build();
    table.with(Style::sharp());
    let mut s = format!("{table}\n{} workload(s)", rows.len());
    let left_out: Vec<&WorkloadRow> = rows.iter().filter(|r| r.not_run.is_some()).collect();
    if !left_out.is_empty() {
        s.push_str(&format!(
            "; {} not run by `goldgate run --scope`:",
            left_out.len()
        ));
        for r in left_out {
            let why = r.not_run.as_deref().unwrap_or_default();
            s.push_str(&format!("\n  {}: {why}", r.name));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        let row = WorkloadRow {
            name: "gpt3_x_dev_dgx_h100".into(),
            case: "gpt/gpt3_x".into(),
            environment: Some("dev".into()),
            platform: Some("dgx_h100".into()),
            scope: Some("mr".into()),
            cadence: vec!["pr".into()],
            nodes: Some(1),
            gpus: Some(8),
            gpus_allocated: Some(8),
            n_repeat: Some(5),
            time_limit: Some(1800),
            training_script: Some("pretrain_gpt.py".into()),
            not_run: None,
        };
        insta::assert_snapshot!(render_table(&[row]));
    }

    #[test]
    fn rows_goldgate_does_not_run_are_named_with_why() {
        let row = |name: &str, case: &str, not_run: Option<&str>| WorkloadRow {
            name: name.into(),
            case: case.into(),
            environment: Some("dev".into()),
            platform: Some("dgx_h100".into()),
            scope: Some("mr".into()),
            cadence: vec![],
            nodes: Some(1),
            gpus: Some(8),
            gpus_allocated: Some(8),
            n_repeat: Some(1),
            time_limit: None,
            training_script: None,
            not_run: not_run.map(str::to_owned),
        };
        let rows = [
            row("gpt3_x_dev_dgx_h100", "gpt/gpt3_x", None),
            row(
                "gpt_16b_perf_dev_dgx_h100",
                "gpt/gpt_16b_perf",
                Some("its recipe runs a performance test script, not run_ci_test.sh"),
            ),
        ];
        insta::assert_snapshot!(render_table(&rows));
    }

    /// A recipe row that allocates one GPU and whose script sets no `GPUS_PER_NODE` launches
    /// Megatron's default of 8 ranks, as `plan` shows: `list` says 8 too, and what is allocated.
    #[test]
    fn a_row_shows_the_ranks_plan_launches_and_what_its_recipe_allocates() {
        let recipe = RecipeRow {
            file: "h100/gpt-grpo.yaml".into(),
            case: "gpt/grpo".into(),
            name: "gpt_grpo_dev_dgx_h100".into(),
            environment: Some("dev".into()),
            platform: Some("dgx_h100".into()),
            scope: Some("mr".into()),
            cadence: vec![],
            nodes: Some(1),
            gpus: Some(1),
            n_repeat: None,
            time_limit: None,
            script: Err("no script".into()),
        };
        let row = WorkloadRow::of(&recipe, None);
        assert_eq!(
            (row.nodes, row.gpus, row.gpus_allocated),
            (Some(1), Some(8), Some(1))
        );
        insta::assert_snapshot!(render_table(&[row]));
    }
}
