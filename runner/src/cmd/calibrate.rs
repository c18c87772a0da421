//! `goldgate calibrate`: measures per-metric spread over repeats and suggests tolerances.

use super::error::AppError;
use super::output::{out, outln};
use goldgate_core::config::{BUILTIN_CONFIG, Config};
use goldgate_core::rules::RuleSet;
use goldgate_judge::compare::CompareError;
use goldgate_judge::compare::noise::calibrate;
use goldgate_schema::Exit;

/// Arguments of `goldgate calibrate`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// A run directory holding repeats of the same jobs (`OUT/<run-id>`, or a folder of runs:
    /// the newest; `--all-runs` measures the repeats of every run together).
    #[arg(long)]
    pub results: std::path::PathBuf,
    #[command(flatten)]
    pub pick: super::args::RunPick,
    #[command(flatten)]
    pub config: super::args::ConfigFile,
    /// Write the suggested rules into the configuration file (a text edit of the `rtol:` lines
    /// under `rules:`; comments and everything else are kept).
    #[arg(long)]
    pub write: bool,
    /// Repeats per job the gate will run with (`goldgate run --repeat`): the suggested
    /// tolerances are for this many.
    #[arg(long, default_value_t = 1)]
    pub repeats: usize,
}

/// Runs the command: prints the per-metric spread and suggestions; `--write` edits the config.
pub fn run(args: Args) -> Result<Exit, AppError> {
    let records = args.pick.load(&args.results, "measuring")?;
    let source = args.config.source()?;
    let rules = RuleSet::from_config(&args.config.load()?.rules);
    let cal = calibrate::calibrate(records, &rules, args.repeats);
    out!("{}", calibrate::render(&cal));
    if args.write {
        let updates = calibrate::suggestions(&cal);
        if updates.is_empty() {
            outln!("nothing to write: no metric had two or more passed repeats");
            return Ok(Exit::Pass);
        }
        // With no file anywhere, the working directory's goldgate.yaml is started.
        let path = source
            .path()
            .unwrap_or(std::path::Path::new(goldgate_core::config::CONFIG_NAME));
        write_rules(&args, path, &updates)?;
        outln!(
            "updated rtol of {} metric(s) in {}",
            updates.len(),
            path.display()
        );
    }
    Ok(Exit::Pass)
}

fn write_rules(
    args: &Args,
    path: &std::path::Path,
    updates: &std::collections::BTreeMap<String, f64>,
) -> Result<(), AppError> {
    let text = match goldgate_core::fsio::read_text(path, goldgate_core::config::MAX_CONFIG_BYTES) {
        Ok(t) => t,
        // No file yet: start from the shipped configuration, so the result is complete.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => BUILTIN_CONFIG.to_string(),
        Err(source) => {
            return Err(CompareError::Read {
                path: path.to_path_buf(),
                source,
            }
            .into());
        }
    };
    let note = format!(
        "{} from {} ({} repeat(s) per gate run)",
        jiff::Timestamp::now().strftime("%Y-%m-%d"),
        args.results.display(),
        args.repeats
    );
    let edited = goldgate_core::rules::set_rtols(&text, updates, &note).map_err(|e| {
        CompareError::ConfigEdit {
            path: path.to_path_buf(),
            line: e.line,
            message: e.message,
        }
    })?;
    // Never write a file goldgate cannot read back.
    Config::parse(&edited, path)?;
    goldgate_core::fsio::write_atomic(path, edited.as_bytes()).map_err(|source| {
        CompareError::Write {
            path: path.to_path_buf(),
            source,
        }
    })?;
    Ok(())
}
