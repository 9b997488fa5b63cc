//! `cosimo check`: simulate cases and compare them with their references.

use std::path::PathBuf;

use clap::Args;

use super::model::ModelArgs;
use super::say;

use cosimo::master::execution::RunOptions;
use cosimo::results::baseline::{Baseline, Slower};
use cosimo::results::check::{check_targets_with, CheckHistory, CheckRequest};
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
    /// Keep the simulation results in DIR (default: a temporary folder). Formerly --results.
    #[arg(short = 'o', long = "output", alias = "results", value_name = "DIR")]
    pub(crate) results: Option<PathBuf>,
    /// Reference results for a model given directly: CSV, or by the extension MAT (also
    /// Dymola's and OpenModelica's), Arrow or Parquet (default: the FMU's own FMI-LS-REF
    /// reference).
    #[arg(long, value_name = "FILE")]
    pub(crate) reference: Option<PathBuf>,
    /// Input CSV for an FMU given directly.
    #[arg(long, value_name = "FILE")]
    pub(crate) input_file: Option<PathBuf>,
    /// Settings (check.json format: tolerances, experiment, start values) for a model given
    /// directly.
    #[arg(long, value_name = "FILE")]
    pub(crate) settings: Option<PathBuf>,
    /// Relative tolerance of the comparison (of |reference|) for every signal [default: 1e-3].
    /// Formerly --rel-tol.
    #[arg(long, alias = "rel-tol", allow_negative_numbers = true)]
    pub(crate) rtol: Option<f64>,
    /// Absolute tolerance of the comparison for every signal [default: 1e-6]. Formerly
    /// --abs-tol.
    #[arg(long, alias = "abs-tol", allow_negative_numbers = true)]
    pub(crate) atol: Option<f64>,
    /// Tolerance relative to each signal's range (max - min) [default: 1e-3].
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) range_tol: Option<f64>,
    /// Time tolerance [s]: half-width of the tube in time [default: 1e-3 of the duration].
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) time_tol: Option<f64>,
    /// Where to compare: `reference` (default) at the reference's own time points, the run
    /// taking a communication point at each one between its output points; `all` at every
    /// result row against a straight line between the reference's rows, and at every
    /// reference row (the earlier default, which fails a correct FMU against a coarse reference).
    #[arg(long, value_enum, value_name = "WHERE")]
    pub(crate) compare_at: Option<CompareAtArg>,
    /// Write a JUnit XML report.
    #[arg(long, value_name = "FILE")]
    pub(crate) junit: Option<PathBuf>,
    /// Print the JSON report (schemas/check-report.schema.json) on stdout; the text report then
    /// goes to stderr.
    #[arg(long)]
    pub(crate) json: bool,
    /// Write the JSON report (schemas/check-report.schema.json) to FILE. Formerly --json FILE.
    #[arg(long, value_name = "FILE")]
    pub(crate) json_file: Option<PathBuf>,
    /// Write a PNG plot (reference, tube, result) of every failing signal into DIR.
    #[arg(long, value_name = "DIR")]
    pub(crate) plot: Option<PathBuf>,
    /// Write an HTML report into DIR: the cases with their phases, and a page with an SVG plot
    /// per failing signal. It opens offline and under Jenkins' content security policy. DIR
    /// must be new, empty or a previous report.
    #[arg(long, value_name = "DIR")]
    pub(crate) html: Option<PathBuf>,
    /// Append a Markdown table of the worst signals to the file $GITHUB_STEP_SUMMARY names (the
    /// job summary of GitHub Actions).
    #[arg(long)]
    pub(crate) github_summary: bool,
    /// Set each case against an earlier JSON report of `cosimo check` (--json-file): newly
    /// failing, fixed, still failing, passing, slower; new cases and the baseline's cases not
    /// checked now are named. The exit code stays the verdict of this check.
    #[arg(long, value_name = "REPORT.json")]
    pub(crate) baseline: Option<PathBuf>,
    /// With --baseline: a case is slower when its run time grew by more than this factor, and
    /// by more than --slower-seconds [default: 1.5].
    #[arg(long, value_name = "FACTOR", allow_negative_numbers = true)]
    pub(crate) slower_factor: Option<f64>,
    /// With --baseline: a case is slower when its run time grew by more than these seconds,
    /// and by more than --slower-factor [default: 1].
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub(crate) slower_seconds: Option<f64>,
    /// Write each case's result as its reference (its reference file, --reference, or
    /// reference.csv in its case folder; CSV only; never inside an FMU), with a provenance file
    /// beside it (FILE.provenance.json: cosimo version, SHA-256 of each FMU, platform,
    /// settings, the command line). A reference that existed keeps its columns; a new one
    /// holds every recorded column. The report compares with the old references; failing
    /// cases whose reference was written do not fail the exit code.
    #[arg(long)]
    pub(crate) update_references: bool,
    #[command(flatten)]
    pub(crate) model: ModelArgs,
    /// Print no report, only errors: the exit code is the verdict (0 every case passed, 3 a
    /// signal left its tolerance, 1 a simulation failed, 2 bad input). --json, --json-file and
    /// --junit still write theirs.
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
    // Refused before anything runs: a summary that cannot be written is not written silently.
    let summary = if args.github_summary {
        match std::env::var_os(GITHUB_SUMMARY_VARIABLE).filter(|v| !v.is_empty()) {
            Some(path) => Some(PathBuf::from(path)),
            None => {
                return Err(Error::Usage(format!(
                    "--github-summary appends to the file ${GITHUB_SUMMARY_VARIABLE} names, and \
                     it is not set: GitHub Actions sets it in every step of a job; elsewhere \
                     leave the option out (--junit, --json-file and --html write reports anywhere)"
                )))
            }
        }
    } else {
        None
    };
    let history = history(args)?;
    let model = &args.model;
    let request = CheckRequest {
        targets: args.targets.clone(),
        reference: args.reference.clone(),
        input_file: args.input_file.clone(),
        settings: args.settings.clone(),
        tolerance: cosimo::results::compare::ToleranceSettings {
            rel: args.rtol,
            abs: args.atol,
            range: args.range_tol,
            time: args.time_tol,
        },
        overrides: model.overrides(),
        start_values: model.start_values.clone(),
        run: RunOptions {
            instance: model.instance(),
            threads: model.threads,
            allow_non_finite: model.allow_non_finite,
            isolate: model.isolate,
            worker: model.worker()?,
            worker_processes: model.worker_processes(),
            interface: model.interface(),
            ..RunOptions::default()
        },
        plot: args.plot.clone(),
        html: args.html.clone(),
        results: args.results.clone(),
        compare_at: args.compare_at.map(|at| match at {
            CompareAtArg::Reference => cosimo::results::compare::CompareAt::Reference,
            CompareAtArg::All => cosimo::results::compare::CompareAt::All,
        }),
    };
    let report = check_targets_with(&request, &history, &mut |warning| {
        say!("warning: {warning}")
    })?;
    // A failed write to stdout (`> /dev/full`) is an error; a closed pipe (`| head`) is not.
    use std::io::Write as _;
    if !args.quiet {
        if args.json {
            let _ = write!(std::io::stderr(), "{}", report.text());
        } else {
            print_report(format_args!("{}", report.text()))?;
        }
    }
    if let Some(dir) = args.html.as_ref().filter(|_| !args.quiet) {
        say!("HTML report: {}", dir.join("index.html").display());
    }
    if let Some(path) = &args.junit {
        std::fs::write(path, report.junit()).map_err(|e| Error::io(path, e))?;
    }
    if let Some(path) = &args.json_file {
        std::fs::write(path, report.json() + "\n").map_err(|e| Error::io(path, e))?;
    }
    if args.json {
        print_report(format_args!("{}\n", report.json()))?;
    }
    if let Some(path) = &summary {
        let text = cosimo::results::markdown::github_summary(&report);
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut file| file.write_all(text.as_bytes()))
            .map_err(|e| Error::io(path, e))?;
    }
    Ok(report.exit_code())
}

/// `--baseline` (read now: a file that is not a report stops the check before it runs) with
/// its thresholds, and `--update-references` with the command line its provenance records.
fn history(args: &CheckArgs) -> Result<CheckHistory, Error> {
    if args.baseline.is_none() {
        for (option, given) in [
            ("--slower-factor", args.slower_factor.is_some()),
            ("--slower-seconds", args.slower_seconds.is_some()),
        ] {
            if given {
                return Err(Error::Usage(format!(
                    "{option} says when a case is slower than in the baseline, and there is none: \
                     add --baseline REPORT.json (a report --json-file wrote), or leave {option} out"
                )));
            }
        }
    }
    if args.update_references && args.baseline.is_some() {
        return Err(Error::Usage(
            "--update-references accepts this run's results as the references, and --baseline \
             sets this run's verdicts against an earlier report's: run them as two checks \
             (first --baseline, then --update-references)"
                .into(),
        ));
    }
    let baseline = match &args.baseline {
        Some(path) => {
            let defaults = Slower::default();
            let slower = Slower {
                factor: args.slower_factor.unwrap_or(defaults.factor),
                seconds: args.slower_seconds.unwrap_or(defaults.seconds),
            };
            slower.validate()?;
            Some((Baseline::read(path)?, slower))
        }
        None => None,
    };
    let command = args.update_references.then(|| {
        std::env::args_os()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    });
    Ok(CheckHistory {
        baseline,
        update_references: command,
    })
}

/// The variable GitHub Actions sets to the file of a step's job summary.
const GITHUB_SUMMARY_VARIABLE: &str = "GITHUB_STEP_SUMMARY";

/// Write to stdout: a closed pipe (`| head`) ends the output but keeps the verdict's exit code;
/// any other failure (`> /dev/full`) is an error.
fn print_report(text: std::fmt::Arguments<'_>) -> Result<(), Error> {
    match super::write_out(text) {
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}
