//! The `goldgate` command line: parses arguments, dispatches to `cmd/`, prints errors, exits
//! with the documented code (see `exit`).

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use goldgate::cmd;

/// `goldgate --version`: the package version, the release tag when built at one, and the commit
/// it was built from (see build.rs): `0.2.0 (v0.2.0, commit 1a2b3c4d5e6f)`.
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("GOLDGATE_BUILD"), ")");

/// Functional tests and a regression gate for GPU training jobs.
#[derive(Parser, Debug)]
#[command(name = "goldgate", version = VERSION, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Colours: `auto` (a terminal, unless NO_COLOR is set; CLICOLOR_FORCE forces them),
    /// `always`, `never`.
    #[arg(long, global = true, value_enum, default_value_t = cmd::output::ColorChoice::Auto)]
    color: cmd::output::ColorChoice,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List test cases with their type, launcher, metrics and golden files.
    List(cmd::list::Args),
    /// Validate every case and golden file under a root (exit 2 on any error).
    Check(cmd::check::Args),
    /// Show the jobs a run would launch: variants, environment, argv.
    Plan(cmd::plan::Args),
    /// Print a bash script that reproduces one job exactly.
    Repro(cmd::repro::Args),
    /// Launch jobs, record memory, checkpoint timing and metrics, then compare.
    Run(Box<cmd::run::Args>),
    /// Parse Megatron logs into metrics.
    Extract(cmd::extract::Args),
    /// Compare recorded runs with golden files and gate by exit code.
    Compare(cmd::compare::Args),
    /// Write golden files from recorded runs.
    Bless(cmd::bless::Args),
    /// Cancel what a run left in Slurm's queue (after goldgate was killed).
    Cancel(cmd::cancel::Args),
    /// Measure noise over repeats and suggest tolerances.
    Calibrate(cmd::calibrate::Args),
    /// What each rule can see: false alarms and the smallest detected change, from unchanged jobs.
    Power(cmd::power::Args),
    /// Baseline against candidate on one machine: jobs in ABBA blocks until the timing change
    /// is decided (sequential, paired), the other metrics against A and the goldens.
    Ab(Box<cmd::ab::Args>),
    /// The A/B resampling study on recorded jobs (docs/book/src/results/ab-study.md).
    #[command(hide = true)]
    AbStudy(cmd::ab_study::Args),
    /// The history store: ingest runs, show a metric over commits, prune, annotate.
    History(cmd::history_args::Args),
    /// Render recorded runs without judging them.
    Report(cmd::report::Args),
    /// Post or update the sticky PR comment.
    Comment(cmd::comment::Args),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(cmd::completions::CompletionsArgs),
    /// Print goldgate's man page in roff (`--out DIR`: one page per command).
    Man(cmd::completions::ManArgs),
    /// One node's memory sampler inside a Slurm batch job (the batch script starts it on
    /// every node before training; see README, "Running on a Slurm cluster").
    #[command(hide = true)]
    Sample(cmd::sample::Args),
    /// The demo's stand-in training job (`workloads/fake-trainer`), shipped inside goldgate so
    /// an installed goldgate runs the demo cases (`entry: [goldgate, fake-trainer]`).
    #[command(hide = true, disable_help_flag = true, disable_version_flag = true)]
    FakeTrainer {
        /// fake-trainer's own arguments (`goldgate fake-trainer --help` lists them).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

/// The parser's command: the derived one with the EXIT STATUS block after every help.
fn command() -> clap::Command {
    cmd::completions::with_exit_status(Cli::command())
}

fn main() -> ExitCode {
    let cli = match Cli::from_arg_matches(&command().get_matches()) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    cmd::output::set_color(cli.color);
    let result = match cli.command {
        Command::List(a) => cmd::list::run(a),
        Command::Check(a) => cmd::check::run(a),
        Command::Plan(a) => cmd::plan::run(a),
        Command::Repro(a) => cmd::repro::run(a),
        Command::Run(a) => cmd::run::run(*a),
        Command::Extract(a) => cmd::extract::run(a),
        Command::Compare(a) => cmd::compare::run(a),
        Command::Bless(a) => cmd::bless::run(a),
        Command::Cancel(a) => cmd::cancel::run(a),
        Command::Calibrate(a) => cmd::calibrate::run(a),
        Command::Power(a) => cmd::power::run(a),
        Command::Ab(a) => cmd::ab::run(*a),
        Command::AbStudy(a) => cmd::ab_study::run(a),
        Command::History(a) => cmd::history::run(a),
        Command::Report(a) => cmd::report::run(a),
        Command::Comment(a) => cmd::comment::run(a),
        Command::Completions(a) => cmd::completions::completions(&a, command()),
        Command::Man(a) => cmd::completions::man(&a, command()),
        Command::Sample(a) => cmd::sample::run(a),
        Command::FakeTrainer { args } => return fake_trainer::run(&args, &["fake-trainer"]),
    };
    match result {
        Ok(exit) => exit.into(),
        Err(err) => {
            // The one decision: every stage error's code comes from `AppError::exit`. A closed
            // stderr must not turn that code into a panic's 101.
            let exit = err.exit();
            let color = cmd::output::color(cmd::output::Stream::Stderr);
            let text = cmd::output::render_error(&err, None, color);
            cmd::output::stderr(format_args!("{text}"));
            exit.into()
        }
    }
}
