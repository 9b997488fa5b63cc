//! The `cosimo` command line: parse (clap derive), call the library, print, exit code.
//!
//! Exit codes: 0 ok, 1 simulation failed, 2 bad input or usage, 3 regression check failed,
//! 130 a sweep stopped by Ctrl-C (or kill, or a hang-up); a run stopped by one of these
//! signals says where and then ends by that signal (a shell reports 130 for Ctrl-C).

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

mod cli;
use cli::build::{build_command, BuildArgs};
use cli::check::{check_command, CheckArgs};
use cli::export::{export_command, ExportArgs};
use cli::inspect::{inspect, InspectArgs};
use cli::plot::{plot_command, PlotArgs};
use cli::run::{run, RunArgs};
use cli::say;
use cli::stability::{stability_command, StabilityArgs};
use cli::sweep::{sweep_command, SweepArgs};
use cli::validate::{validate_command, ValidateArgs};

use cosimo::Error;

#[derive(Parser)]
#[command(
    name = "cosimo",
    version,
    about = "An FMI 2.0 / 3.0 co-simulation master"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Show what an FMU declares: model, capabilities, default experiment, variables.
    Inspect(InspectArgs),
    /// Simulate a Co-Simulation FMU and write its results to CSV.
    Run(Box<RunArgs>),
    /// Simulate and compare with reference results; exit code 3 when a signal leaves its
    /// tolerance.
    Check(Box<CheckArgs>),
    /// Check an FMU statically: model description consistency and exported functions.
    Validate(ValidateArgs),
    /// Plot one variable from one or more result files into a PNG.
    Plot(PlotArgs),
    /// Stability of a master algorithm on a system file (its "stability" section) or on the
    /// stability thesis' two-mass oscillator: the spectral radius of the one-step map, the
    /// largest stable macro step, or maps over parameters.
    Stability(Box<StabilityArgs>),
    /// Many runs of one system or FMU: the parameters a study file varies, on every core (or
    /// one shard of a batch job), into one summary table (CSV and Parquet).
    Sweep(Box<SweepArgs>),
    /// Pack a system (or one FMU) as an FMI 2 / FMI 3 Co-Simulation FMU that runs it with
    /// cosimo inside, with the options of `run`.
    Export(Box<ExportArgs>),
    /// Build a binary for this platform from an FMU's C sources (sources/) and add it to the
    /// FMU (or write the FMU with it to --output).
    Build(BuildArgs),
    /// Host one FMU instance for a cosimo master (started by cosimo itself for --isolate).
    #[command(hide = true)]
    Worker {
        /// The descriptor of the shared memory the master created.
        #[arg(long)]
        channel_fd: i32,
    },
}

fn main() -> ExitCode {
    let (cli, notes) = match parse() {
        Ok(parsed) => parsed,
        Err(code) => return code,
    };
    let (quiet, log_calls, debug) = match &cli.command {
        Command::Run(r) => (r.quiet, r.log_fmi_calls, r.debug_logging),
        Command::Inspect(i) => (i.quiet, false, false),
        Command::Check(c) => (c.quiet, false, false),
        Command::Export(e) => (e.run.quiet, false, false),
        Command::Sweep(s) => (s.quiet, false, false),
        Command::Validate(v) => (v.quiet, false, false),
        Command::Plot(p) => (p.quiet, false, false),
        Command::Stability(s) => (s.quiet, false, false),
        Command::Build(b) => (b.quiet, false, false),
        // A worker forwards every message to its master, which logs them.
        Command::Worker { channel_fd } => {
            return match cosimo::fmu::worker::serve(*channel_fd) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    say!("error: {error}");
                    ExitCode::from(exit_code(&error))
                }
            }
        }
    };
    if !quiet {
        for note in notes {
            say!("{note}");
        }
    }
    init_logging(quiet, log_calls, debug);
    // A crash inside an FMU call says which component, call and time (a worker's crash is
    // reported by its master instead).
    cosimo::fmu::crash::install(
        "run with --isolate to host each FMU in a worker process, where a crash ends the run with this report instead of ending cosimo",
    );
    if let Command::Sweep(args) = &cli.command {
        // A sweep handles Ctrl-C itself: it stops its runs and keeps the finished rows.
        return sweep_command(args);
    }
    // Ctrl-C, kill and a closed terminal remove the FMUs extracted so far (a crash leaves them
    // to the next run's sweep). A run handles them itself: it stops after the step under way,
    // keeps its rows and says so (its extracted FMUs are removed as it ends).
    if !matches!(cli.command, Command::Run(_)) {
        if let Err(error) = cosimo::fmu::archive::remove_extracted_on_signals() {
            say!("warning: {error}");
        }
    }
    let result = match cli.command {
        Command::Inspect(args) => inspect(&args),
        Command::Run(args) => match run(&args) {
            // Rows flushed, FMUs freed and removed, the line said: end by the signal itself,
            // so that a shell or a script sees what stopped the run (130 for Ctrl-C).
            Ok(cli::run::Ended::Interrupted(signal)) => {
                #[cfg(unix)]
                let _ = signal_hook::low_level::emulate_default_handler(signal);
                return ExitCode::from(u8::try_from(128 + signal).unwrap_or(130));
            }
            ended => ended.map(|_| ()),
        },
        Command::Check(args) => return check_command(&args),
        Command::Validate(args) => return validate_command(&args),
        Command::Plot(args) => plot_command(&args),
        Command::Stability(args) => stability_command(&args),
        Command::Export(args) => export_command(&args),
        Command::Build(args) => build_command(&args),
        Command::Sweep(args) => return sweep_command(&args),
        Command::Worker { .. } => Ok(()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // A closed pipe (`cosimo inspect X.fmu | head`) ends the output, not in an error.
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::BrokenPipe => {
            ExitCode::SUCCESS
        }
        Err(error) => {
            // Every error's message already includes its cause.
            say!("error: {error}");
            ExitCode::from(exit_code(&error))
        }
    }
}

/// The command line as clap reads it, after the vocabulary's rewrites, with the notes on the
/// old spellings it used; a usage error is printed and becomes the exit code.
fn parse() -> Result<(Cli, Vec<String>), ExitCode> {
    use cli::vocabulary;
    let (args, notes) = match vocabulary::prepare(std::env::args_os().collect()) {
        Ok(prepared) => prepared,
        Err(message) => {
            say!("error: {message}");
            return Err(ExitCode::from(2));
        }
    };
    let command = vocabulary::negative_numbers_everywhere(Cli::command());
    let parsed = command
        .clone()
        .try_get_matches_from(&args)
        .and_then(|matches| Cli::from_arg_matches(&matches))
        .map_err(|error| vocabulary::explain_unknown(error, &command, &args));
    match parsed {
        Ok(cli) => Ok((cli, notes)),
        Err(error) => {
            // --help and --version are "errors" that print to stdout and exit 0.
            let _ = error.print();
            Err(ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(2)))
        }
    }
}

/// 1 when a simulation ran and failed, 2 when the input or the usage was wrong.
pub(crate) fn exit_code(error: &Error) -> u8 {
    error.exit_code()
}

fn init_logging(quiet: bool, log_fmi_calls: bool, debug_logging: bool) {
    let mut builder = env_logger::Builder::new();
    builder.format_timestamp(None).format_target(false);
    builder.filter_level(if quiet {
        log::LevelFilter::Error
    } else {
        log::LevelFilter::Warn
    });
    if debug_logging {
        builder.filter_module("fmu", log::LevelFilter::Trace);
    }
    if log_fmi_calls {
        builder.filter_module("fmi_calls", log::LevelFilter::Trace);
    }
    builder.parse_env("COSIMO_LOG");
    builder.init();
}

// ---------------------------------------------------------------------------------------------
// cosimo check / cosimo validate
