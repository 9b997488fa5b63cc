//! `cosimo check`: simulate cases and compare them with their references.

use std::path::{Path, PathBuf};

use clap::Args;

use super::say;

use cosimo::results::check::{check_targets, CheckRequest};
use cosimo::Error;
use std::process::ExitCode;

use super::exit_code;

#[derive(Args)]
pub(crate) struct CheckArgs {
    /// What to check: an FMU (.fmu or unpacked folder), a system file (.json), an SSP, a case
    /// folder (model + reference CSV + optional input CSV + optional check.json) or a folder of
    /// case folders.
    #[arg(required = true, value_name = "FMU|SYSTEM|CASES")]
    pub(crate) targets: Vec<PathBuf>,
    /// Reference CSV for a model given directly (default: the FMU's own FMI-LS-REF reference).
    #[arg(long)]
    pub(crate) reference: Option<PathBuf>,
    /// Input CSV for an FMU given directly.
    #[arg(long)]
    pub(crate) input_file: Option<PathBuf>,
    /// Settings (check.json format: tolerances, experiment, start values) for a model given
    /// directly.
    #[arg(long)]
    pub(crate) settings: Option<PathBuf>,
    /// Relative tolerance (of |reference|) of every signal [default: 1e-3].
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) rel_tol: Option<f64>,
    /// Absolute tolerance of every signal [default: 1e-6].
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) abs_tol: Option<f64>,
    /// Tolerance relative to each signal's range (max - min) [default: 1e-3].
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) range_tol: Option<f64>,
    /// Time tolerance [s]: half-width of the tube in time [default: 1e-3 of the duration].
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) time_tol: Option<f64>,
    /// Start time [s] (overrides the case's and the model's).
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) start_time: Option<f64>,
    /// Stop time [s].
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) stop_time: Option<f64>,
    /// Communication step size [s].
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) step_size: Option<f64>,
    /// Interval between result rows [s].
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) output_interval: Option<f64>,
    /// Write a JUnit XML report.
    #[arg(long, value_name = "FILE")]
    pub(crate) junit: Option<PathBuf>,
    /// Write the JSON report (schemas/check-report.schema.json) to FILE, or to stdout.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
    pub(crate) json: Option<PathBuf>,
    /// Write a PNG plot (reference, tube, result) of every failing signal into DIR.
    #[arg(long, value_name = "DIR")]
    pub(crate) plot: Option<PathBuf>,
    /// Keep the simulation results in DIR (default: a temporary folder).
    #[arg(long, value_name = "DIR")]
    pub(crate) results: Option<PathBuf>,
    /// Host every FMU in its own worker process: a case whose FMU crashes fails alone, with
    /// the signal in its report, and the other cases run.
    #[arg(long)]
    pub(crate) isolate: bool,
    /// Seconds an FMI call may take before its worker is killed and the case fails (puts every
    /// FMU into a worker process).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub(crate) call_timeout: Option<f64>,
    /// Memory limit of each worker process, e.g. 512M or 2G.
    #[arg(long, value_name = "SIZE")]
    pub(crate) worker_memory: Option<String>,
    /// Where to compare: `reference` (default) at the reference's own time points, the run
    /// taking a communication point at each one between its output points; `all` at every
    /// result row against a straight line between the reference's rows, and at every
    /// reference row (the earlier default, which fails a correct FMU against a coarse reference).
    #[arg(long, value_enum, value_name = "WHERE")]
    pub(crate) compare_at: Option<CompareAtArg>,
    /// Print no summary.
    #[arg(long, short)]
    pub(crate) quiet: bool,
}

/// `--compare-at`.
#[derive(Clone, Copy, clap::ValueEnum)]
pub(crate) enum CompareAtArg {
    /// At the reference's time points.
    Reference,
    /// At every result row and every reference row.
    All,
}

pub(crate) fn check_command(args: &CheckArgs) -> ExitCode {
    // The cases' FMUs are freed and unloaded after the report: one that crashes there (as FMUs
    // exported from Python do) is a warning, and the exit code stays the report's.
    cosimo::fmu::crash::defer_teardown();
    let code = match check(args) {
        Ok(code) => code,
        Err(error) => {
            say!("error: {error}");
            exit_code(&error)
        }
    };
    cosimo::fmu::crash::run_finished(code);
    ExitCode::from(code)
}

/// Collect the cases, run and compare each, write the reports; returns the exit code.
fn check(args: &CheckArgs) -> Result<u8, Error> {
    let request = CheckRequest {
        targets: args.targets.clone(),
        reference: args.reference.clone(),
        input_file: args.input_file.clone(),
        settings: args.settings.clone(),
        tolerance: cosimo::results::compare::ToleranceSettings {
            rel: args.rel_tol,
            abs: args.abs_tol,
            range: args.range_tol,
            time: args.time_tol,
        },
        start: args.start_time,
        stop: args.stop_time,
        step: args.step_size,
        output_interval: args.output_interval,
        plot: args.plot.clone(),
        results: args.results.clone(),
        isolate: args.isolate,
        worker: super::run::worker_options(args.call_timeout, args.worker_memory.as_deref())?,
        compare_at: args.compare_at.map(|at| match at {
            CompareAtArg::Reference => cosimo::results::compare::CompareAt::Reference,
            CompareAtArg::All => cosimo::results::compare::CompareAt::All,
        }),
    };
    let report = check_targets(&request, &mut |warning| say!("warning: {warning}"))?;
    let json_to_stdout = args.json.as_deref() == Some(Path::new("-"));
    // A failed write to stdout (`> /dev/full`) is an error; a closed pipe (`| head`) is not.
    use std::io::Write as _;
    if !args.quiet {
        if json_to_stdout {
            let _ = write!(std::io::stderr(), "{}", report.text());
        } else {
            print_report(format_args!("{}", report.text()))?;
        }
    }
    if let Some(path) = &args.junit {
        std::fs::write(path, report.junit()).map_err(|e| Error::io(path, e))?;
    }
    match &args.json {
        Some(_) if json_to_stdout => print_report(format_args!("{}\n", report.json()))?,
        Some(path) => std::fs::write(path, report.json() + "\n").map_err(|e| Error::io(path, e))?,
        None => {}
    }
    Ok(report.exit_code())
}

/// Write to stdout: a closed pipe (`| head`) ends the output but keeps the verdict's exit code;
/// any other failure (`> /dev/full`) is an error.
fn print_report(text: std::fmt::Arguments<'_>) -> Result<(), Error> {
    match super::write_out(text) {
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}
