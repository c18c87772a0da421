//! `goldgate list`: lists the cases under a root with their test type, launcher, metrics and golden files.

use std::path::{Path, PathBuf};

use tabled::settings::object::Columns;
use tabled::settings::{Style, Width};

use super::error::AppError;
use super::output::{errln, outln};
use goldgate_core::case::{self, CaseError, CaseRef};
use goldgate_core::golden::{self, GoldenRef};
use goldgate_schema::Exit;

/// Arguments of `goldgate list`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub root: super::args::CaseRoot,
    #[command(flatten)]
    pub golden_root: super::args::GoldenRoot,
    /// The cases to list: names, globs, `--filter`, `--partition`, as `plan` and `run` take them.
    #[command(flatten)]
    pub which: super::select::CaseArgs,
    /// Print only the case names, one per line (what shell completion reads).
    #[arg(long, conflicts_with = "format")]
    pub names: bool,
    /// Output format (`json`: `{"schema_version", "cases": [...]}`, one object per case with
    /// its `name`, type, launcher and golden files).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// With `--scope` or `--cadence`: list Megatron's recipe rows (workloads) instead of cases.
    #[command(flatten)]
    pub recipes: super::select::RecipeArgs,
    /// With `--scope` or `--cadence`: only the rows of this platform (`dgx_h100` ...).
    #[arg(long, value_parser = super::args::platform_name)]
    pub platform: Option<String>,
    #[command(flatten)]
    pub config: super::args::ConfigFile,
}

/// How `list`, `plan` and `extract` print.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum Format {
    /// A table for people.
    Table,
    /// JSON for scripts: an object with `schema_version` and the command's list.
    Json,
}

/// One listed case.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Row {
    /// `<model>/<case>`.
    pub name: String,
    /// `TEST_TYPE`, or `invalid` when the config does not load.
    pub test_type: String,
    /// `LAUNCHER`.
    pub launcher: String,
    /// `MODE`.
    pub mode: String,
    /// `METRICS` (with Megatron's default filled in).
    pub metrics: Vec<String>,
    /// Golden files beside the config and under the golden root.
    pub goldens: Vec<GoldenRef>,
    /// The config file.
    pub config: PathBuf,
    /// Why the config does not load, if it does not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Keys the config holds twice (`path:line:column: message`), said on stderr.
    #[serde(skip)]
    pub warnings: Vec<String>,
}

/// Runs the command.
pub fn run(args: Args) -> Result<Exit, AppError> {
    if args.recipes.scope.is_some() || args.recipes.cadence.is_some() {
        let config = args.config.load()?;
        let json = matches!(args.format, Format::Json);
        let platform = args.platform.as_deref();
        return super::list_recipes::run(&args.recipes, platform, &args.root.path, &config, json);
    }
    let found = case::discover(&args.root.path)?;
    let root = args.root.path.display().to_string();
    let cases = args.which.filter()?.select(&found, &root)?;
    if args.names {
        for c in &cases {
            outln!("{}", c.name);
        }
        return Ok(Exit::Pass);
    }
    let golden_root = args
        .golden_root
        .path
        .is_dir()
        .then_some(args.golden_root.path.as_path());
    let rows: Vec<Row> = cases
        .into_iter()
        .map(|c| row(&args.root.path, golden_root, c))
        .collect();
    let out = match args.format {
        Format::Table => render_table(&rows),
        Format::Json => render_json(&rows),
    };
    for w in rows.iter().flat_map(|r| &r.warnings) {
        errln!("warning: {w}");
    }
    outln!("{out}");
    let broken = rows.iter().filter(|r| r.error.is_some()).count();
    if broken > 0 {
        errln!(
            "{broken} case(s) do not load; run `goldgate check --root {}` for details",
            args.root.path.display()
        );
        return Ok(Exit::Usage);
    }
    Ok(Exit::Pass)
}

/// Loads one case into a row; a broken config becomes a row with `error` set.
pub fn row(root: &Path, golden_root: Option<&Path>, c: &CaseRef) -> Row {
    let goldens = golden::find_goldens(&c.dir, golden_root, &c.name);
    match case::load_case_noting_duplicates(root, &c.config_path) {
        Ok((case, duplicates)) => Row {
            name: case.name,
            test_type: case.test_type.as_str().to_string(),
            launcher: case.launcher.as_str().to_string(),
            mode: case.mode.as_str().to_string(),
            metrics: case.metrics,
            goldens,
            config: c.config_path.clone(),
            error: None,
            warnings: duplicates.iter().map(ToString::to_string).collect(),
        },
        Err(e) => broken_row(c, goldens, &e),
    }
}

fn broken_row(c: &CaseRef, goldens: Vec<GoldenRef>, e: &CaseError) -> Row {
    Row {
        name: c.name.clone(),
        test_type: "invalid".into(),
        launcher: String::new(),
        mode: String::new(),
        metrics: Vec::new(),
        goldens,
        config: c.config_path.clone(),
        error: Some(e.to_string()),
        warnings: Vec::new(),
    }
}

/// The table people read: one line per case.
pub fn render_table(rows: &[Row]) -> String {
    let mut b = tabled::builder::Builder::default();
    b.push_record(["case", "type", "launcher", "metrics", "golden files"]);
    for r in rows {
        let goldens: Vec<String> = r.goldens.iter().map(golden_label).collect();
        b.push_record([
            r.name.clone(),
            r.test_type.clone(),
            r.launcher.clone(),
            r.metrics.join(", "),
            if goldens.is_empty() {
                "-".into()
            } else {
                goldens.join(" ")
            },
        ]);
    }
    let mut table = b.build();
    table.with(Style::sharp());
    // Cases with many metrics would make the table far wider than a terminal.
    table.modify(Columns::one(3), Width::wrap(40).keep_words(true));
    table.modify(Columns::one(4), Width::wrap(40).keep_words(true));
    format!("{table}\n{} case(s)", rows.len())
}

/// `dev/dgx_h100`, `lts` (legacy, no platform), `dev/dgx_h100/2nd`; a variant's golden
/// (`variants/<choices>/`) is prefixed with its choices: `allocator-gc80:dev/h200`.
fn golden_label(g: &GoldenRef) -> String {
    let mut label = g.name.environment.clone();
    let variant = g
        .path
        .parent()
        .filter(|d| {
            d.parent()
                .and_then(|p| p.file_name())
                .is_some_and(|n| n == golden::VARIANTS_DIR)
        })
        .and_then(|d| d.file_name())
        .map(|n| n.to_string_lossy().into_owned());
    if let Some(p) = &g.name.platform {
        label = format!("{label}/{p}");
    }
    if g.name.second {
        label.push_str("/2nd");
    }
    match variant {
        Some(v) => format!("{v}:{label}"),
        None => label,
    }
}

/// Version of `list --format json`'s layout; raised when a field changes meaning or goes away.
pub const LIST_SCHEMA_VERSION: u32 = 1;

/// The JSON scripts read: `schema_version` and `cases`, one object per case, each with `name`.
pub fn render_json(rows: &[Row]) -> String {
    let doc = serde_json::json!({"schema_version": LIST_SCHEMA_VERSION, "cases": rows});
    serde_json::to_string_pretty(&doc)
        .unwrap_or_else(|e| format!("{{\"error\": {:?}}}", e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use goldgate_core::golden::GoldenName;

    fn rows() -> Vec<Row> {
        let golden = |file: &str| GoldenRef {
            path: PathBuf::from(format!("gpt/a/{file}")),
            name: GoldenName::parse(file).unwrap(),
        };
        vec![
            Row {
                name: "gpt/a".into(),
                test_type: "ckpt-resume".into(),
                launcher: "torchrun".into(),
                mode: "pretraining".into(),
                metrics: [
                    "lm loss",
                    "num-zeros",
                    "iteration-time",
                    "mem-allocated-bytes",
                    "checkpoint-blocking-time",
                ]
                .map(String::from)
                .to_vec(),
                goldens: vec![
                    golden("golden_values_dev_dgx_h100.json"),
                    golden("golden_values_dev_dgx_h100_2nd.json"),
                    golden("golden_values_lts.json"),
                ],
                config: PathBuf::from("gpt/a/model_config.yaml"),
                error: None,
                warnings: vec![],
            },
            Row {
                name: "gpt/broken".into(),
                test_type: "invalid".into(),
                launcher: String::new(),
                mode: String::new(),
                metrics: vec![],
                goldens: vec![],
                config: PathBuf::from("gpt/broken/model_config.yaml"),
                error: Some("gpt/broken/model_config.yaml: empty file".into()),
                warnings: vec![],
            },
        ]
    }

    #[test]
    fn table() {
        insta::assert_snapshot!(render_table(&rows()));
    }

    #[test]
    fn json() {
        insta::assert_snapshot!(render_json(&rows()));
    }
}
