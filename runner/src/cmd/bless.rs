//! `goldgate bless`: writes golden files from recorded results, after printing what changes;
//! or, with `--tensorboard DIR`, the golden file Megatron's
//! `get_test_results_from_tensorboard_logs.py` writes from a TensorBoard folder, byte for byte.

use super::error::AppError;
use super::output::{out, outln};
use goldgate_core::rules::RuleSet;
use goldgate_judge::compare::bless;
use goldgate_judge::history::{HistoryError, SeriesKey};
use goldgate_schema::Exit;
use goldgate_schema::RunRecord;

/// The records `--from-history N` blesses: for each case asked (every stored case when none
/// is), each variant recorded on the platform, the jobs of its newest N passed runs.
fn from_history(
    args: &Args,
    runs: usize,
) -> Result<(Vec<(std::path::PathBuf, RunRecord)>, std::path::PathBuf), AppError> {
    if runs == 0 {
        return Err(HistoryError::Usage("--from-history takes 1 or more runs".into()).into());
    }
    let store_args = super::history_args::StoreArgs {
        db: args.db.clone(),
        config: args.config.clone(),
    };
    let mut store = super::history_store::open_read(&store_args)?;
    let names = store.series_names()?;
    let mut series: Vec<(String, String, String)> = names
        .into_iter()
        .filter(|(case, _, platform, _)| {
            (args.cases.is_empty() || args.cases.contains(case))
                && args.platform.as_ref().is_none_or(|p| p == platform)
        })
        .map(|(case, variant, platform, _)| (case, variant, platform))
        .collect();
    series.dedup();
    if args.platform.is_none()
        && let Some(w) = series
            .windows(2)
            .find(|w| w[0].0 == w[1].0 && w[0].2 != w[1].2)
    {
        return Err(HistoryError::Usage(format!(
            "{} was recorded on several platforms ({}, {}, …): name one with --platform",
            w[0].0, w[0].2, w[1].2
        ))
        .into());
    }
    let mut records = Vec::new();
    for (case, variant, platform) in series {
        let key = SeriesKey {
            case,
            variant,
            platform,
            metric: String::new(),
            branch: Some(args.history_branch.clone()),
        };
        records.extend(goldgate_judge::history::recent::recent_records(
            &mut store, &key, runs,
        )?);
    }
    if records.is_empty() {
        return Err(HistoryError::NotFound(format!(
            "{}: no passed run of {} on branch {}",
            store.location(),
            if args.cases.is_empty() {
                "any case".to_owned()
            } else {
                args.cases.join(", ")
            },
            args.history_branch
        ))
        .into());
    }
    let from = std::path::PathBuf::from(store.location().to_string());
    Ok((records, from))
}

/// Arguments of `goldgate bless`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// A run directory (`OUT/<run-id>`) or a folder holding several (then the newest run is
    /// blessed; see `--all-runs` and `--run`).
    #[arg(long, required_unless_present_any = ["tensorboard", "from_history"])]
    pub from: Option<std::path::PathBuf>,
    /// Bless from the history store instead: the newest N passed runs of `--history-branch`
    /// on the platform (`--platform`, else the only one the case was recorded on), every job
    /// of them a golden job of the two-sample test.
    #[arg(long, value_name = "N", conflicts_with_all = ["from", "tensorboard"])]
    pub from_history: Option<usize>,
    /// The branch `--from-history` reads.
    #[arg(long, default_value = "main", requires = "from_history")]
    pub history_branch: String,
    /// The history store (`goldgate history --db`; default: $GOLDGATE_HISTORY, goldgate.yaml,
    /// .goldgate/history.sqlite).
    #[arg(long = "db", value_name = "URL|FILE", requires = "from_history")]
    pub db: Option<String>,
    /// A job's TensorBoard folder (Megatron's --tensorboard-dir): write the golden file
    /// Megatron's get_test_results_from_tensorboard_logs.py writes from it to --output,
    /// byte for byte.
    #[arg(long, value_name = "DIR", conflicts_with = "from", requires_all = ["train_iters", "output"])]
    pub tensorboard: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub megatron: MegatronTensorboard,
    #[command(flatten)]
    pub pick: super::args::RunPick,
    #[command(flatten)]
    pub golden_root: super::args::GoldenRoot,
    /// Only these cases.
    pub cases: Vec<String>,
    /// Print the diff, write nothing.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub config: super::args::ConfigFile,
    /// Platform in the golden file name (default: the one recorded in the results).
    #[arg(long, value_parser = super::args::platform_name)]
    pub platform: Option<String>,
}

/// The options of Megatron's script that `--tensorboard` takes.
#[derive(clap::Args, Debug)]
pub struct MegatronTensorboard {
    /// With --tensorboard: the run's --train-iters (steps after it are left out).
    #[arg(long, requires = "tensorboard")]
    pub train_iters: Option<u64>,
    /// With --tensorboard: keep step 1 and every multiple of this.
    #[arg(long, default_value_t = 5, requires = "tensorboard")]
    pub step_size: u64,
    /// With --tensorboard: read every event file (Megatron's --is-convergence-test), not only
    /// the first one with scalars.
    #[arg(long, requires = "tensorboard")]
    pub convergence: bool,
    /// With --tensorboard: the golden file to write.
    #[arg(long, value_name = "FILE", requires = "tensorboard")]
    pub output: Option<std::path::PathBuf>,
}

/// Runs the command: prints the per-metric diff, then writes (unless `--dry-run`).
pub fn run(args: Args) -> Result<Exit, AppError> {
    if args.tensorboard.is_some() {
        return from_tensorboard(&args);
    }
    let config = args.config.load()?;
    let rules = RuleSet::from_config(&config.rules);
    let (records, from) = match (&args.from, args.from_history) {
        (_, Some(runs)) => from_history(&args, runs)?,
        (Some(from), None) => (args.pick.load(from, "blessing")?, from.clone()),
        (None, None) => {
            return Err(HistoryError::Usage(
                "bless needs --from DIR, --from-history N or --tensorboard DIR".into(),
            )
            .into());
        }
    };
    let files = bless::plan(
        records,
        &args.golden_root.path,
        args.platform.as_deref(),
        &args.cases,
        &from,
        &config.axis_defaults(),
        &rules,
    )?;
    out!("{}", bless::render_diff(&files, &rules));
    if args.dry_run {
        outln!("dry run: {} golden file(s) not written", files.len());
    } else {
        bless::write(&files, &args.golden_root.path)?;
        outln!("wrote {} golden file(s)", files.len());
    }
    Ok(Exit::Pass)
}

/// `--tensorboard DIR`: Megatron's golden file from the folder's event files.
fn from_tensorboard(args: &Args) -> Result<Exit, AppError> {
    use goldgate_core::tensorboard::accumulate_folder;
    use goldgate_judge::compare::bless::tensorboard::{MegatronGoldenOptions, megatron_golden};
    let m = &args.megatron;
    let (Some(dir), Some(train_iters), Some(output)) =
        (&args.tensorboard, m.train_iters, &m.output)
    else {
        return Err(super::error::CmdError::BadValue {
            message: "--tensorboard needs --train-iters and --output",
        }
        .into());
    };
    let files = accumulate_folder(dir)?;
    let accumulated: Vec<_> = files.into_iter().map(|(_, acc)| acc).collect();
    let opts = MegatronGoldenOptions {
        train_iters,
        step_size: m.step_size,
        convergence: m.convergence,
    };
    let golden = megatron_golden(dir, &accumulated, opts)?;
    let names: Vec<&str> = golden.metrics.iter().map(|(n, _)| n.as_str()).collect();
    outln!(
        "{} -> {} ({} event file(s); metrics: {})",
        dir.display(),
        output.display(),
        accumulated.len(),
        if names.is_empty() {
            "none".to_owned()
        } else {
            names.join(", ")
        }
    );
    if args.dry_run {
        outln!("dry run: golden file not written");
    } else {
        // `--output` names the file: its folder is the root nothing is written past (a link
        // there is refused).
        let folder = output.parent().unwrap_or(std::path::Path::new(""));
        goldgate_core::golden::write_golden(folder, output, &golden)?;
    }
    Ok(Exit::Pass)
}
