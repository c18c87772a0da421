//! `goldgate bless`: writes golden files from recorded results, after printing what changes;
//! or, with `--tensorboard DIR`, the golden file Megatron's
//! `get_test_results_from_tensorboard_logs.py` writes from a TensorBoard folder, byte for byte.

use super::error::AppError;
use super::output::{errln, out, outln};
use crate::compare::{RuleSet, bless, load_runs};
use crate::exit::Exit;

/// Arguments of `goldgate bless`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// A run directory (`OUT/<run-id>`) or a folder holding several (then the newest run is
    /// blessed; see `--all-runs` and `--run`).
    #[arg(long, required_unless_present = "tensorboard")]
    pub from: Option<std::path::PathBuf>,
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
    let (Some(from), None) = (&args.from, &args.tensorboard) else {
        return from_tensorboard(&args);
    };
    let config = args.config.load()?;
    let rules = RuleSet::from_config(&config.rules);
    let selection = args.pick.selection();
    let (records, note) = load_runs(from, &selection)?;
    if let Some(note) = note {
        errln!("goldgate: {note}");
    }
    let files = bless::plan(
        records,
        &args.golden_root.path,
        args.platform.as_deref(),
        &args.cases,
        from,
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
    use crate::compare::tensorboard::{MegatronGoldenOptions, megatron_golden};
    use crate::observe::tensorboard::{accumulate, read_folder};
    let m = &args.megatron;
    let (Some(dir), Some(train_iters), Some(output)) =
        (&args.tensorboard, m.train_iters, &m.output)
    else {
        return Err(super::error::CmdError::BadValue {
            message: "--tensorboard needs --train-iters and --output",
        }
        .into());
    };
    let files = read_folder(dir)?;
    let accumulated: Vec<_> = files.iter().map(|f| accumulate(&f.events)).collect();
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
        files.len(),
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
        crate::golden::write_golden(folder, output, &golden)?;
    }
    Ok(Exit::Pass)
}
