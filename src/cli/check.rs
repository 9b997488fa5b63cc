//! `cosimo check`: simulate cases and compare them with their references.

use std::path::{Path, PathBuf};

use clap::Args;

use super::say;

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
    #[arg(long)]
    pub(crate) rel_tol: Option<f64>,
    /// Absolute tolerance of every signal [default: 1e-6].
    #[arg(long)]
    pub(crate) abs_tol: Option<f64>,
    /// Tolerance relative to each signal's range (max - min) [default: 1e-3].
    #[arg(long)]
    pub(crate) range_tol: Option<f64>,
    /// Time tolerance [s]: half-width of the tube in time [default: 1e-3 of the duration].
    #[arg(long)]
    pub(crate) time_tol: Option<f64>,
    /// Start time [s] (overrides the case's and the model's).
    #[arg(long)]
    pub(crate) start_time: Option<f64>,
    /// Stop time [s].
    #[arg(long)]
    pub(crate) stop_time: Option<f64>,
    /// Communication step size [s].
    #[arg(long)]
    pub(crate) step_size: Option<f64>,
    /// Interval between result rows [s].
    #[arg(long)]
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
    /// Print no summary.
    /// Host every FMU in its own worker process: a case whose FMU crashes fails alone, with
    /// the signal in its report, and the other cases run.
    #[arg(long)]
    pub(crate) isolate: bool,
    /// Seconds an FMI call may take before its worker is killed and the case fails (puts every
    /// FMU into a worker process).
    #[arg(long, value_name = "SECONDS")]
    pub(crate) call_timeout: Option<f64>,
    /// Memory limit of each worker process, e.g. 512M or 2G.
    #[arg(long, value_name = "SIZE")]
    pub(crate) worker_memory: Option<String>,
    #[arg(long, short)]
    pub(crate) quiet: bool,
}

pub(crate) fn check_command(args: &CheckArgs) -> ExitCode {
    match check(args) {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            say!("error: {error}");
            ExitCode::from(exit_code(&error))
        }
    }
}

/// Collect the cases, run and compare each, write the reports; returns the exit code.
fn check(args: &CheckArgs) -> Result<u8, Error> {
    use cosimo::results::reference::{discover, Case, CheckSettings, ModelKind};
    use cosimo::results::report::CheckReport;

    let mut cases: Vec<Case> = Vec::new();
    for target in &args.targets {
        if target.is_dir() && ModelKind::of(target).is_none() {
            cases.extend(discover(target)?);
        } else {
            if !target.exists() {
                return Err(Error::Usage(format!("{}: no such file", target.display())));
            }
            let mut case = Case::for_model(target)?;
            if let Some(settings) = &args.settings {
                case.settings = CheckSettings::read(settings)?;
                case.reference = case.settings.reference.clone();
                case.input = case.settings.input.clone();
            }
            cases.push(case);
        }
    }
    let direct = args.reference.is_some() || args.input_file.is_some() || args.settings.is_some();
    if direct
        && (cases.len() != 1
            || args
                .targets
                .iter()
                .any(|t| t.is_dir() && ModelKind::of(t).is_none()))
    {
        return Err(Error::Usage(
            "--reference, --input-file and --settings apply to one model given directly, not to \
             case folders (put them in the case folder or its check.json)"
                .into(),
        ));
    }
    if let Some(case) = cases.first_mut().filter(|_| direct) {
        if args.reference.is_some() {
            case.reference = args.reference.clone();
        }
        if args.input_file.is_some() {
            case.input = args.input_file.clone();
        }
    }
    let cli_tolerance = cosimo::results::compare::ToleranceSettings {
        rel: args.rel_tol,
        abs: args.abs_tol,
        range: args.range_tol,
        time: args.time_tol,
    };
    cli_tolerance.validate("the command line")?;

    let temporary;
    let work = match &args.results {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
            dir.clone()
        }
        None => {
            temporary =
                tempfile::tempdir().map_err(|e| Error::io(Path::new("temporary folder"), e))?;
            temporary.path().to_path_buf()
        }
    };
    if let Some(dir) = &args.plot {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }

    let worker = super::run::worker_options(args.call_timeout, args.worker_memory.as_deref())?;
    if worker.memory_limit.is_some() && !args.isolate && worker.call_timeout.is_none() {
        return Err(Error::Usage(
            "--worker-memory limits worker processes, but no FMU runs in one: add --isolate".into(),
        ));
    }
    let mut reports = Vec::new();
    for case in &cases {
        let mut report = check_case(case, args, &cli_tolerance, &worker, &work);
        if let Some(dir) = &args.plot {
            plot_failures(dir, &mut report);
        }
        reports.push(report);
    }
    let report = CheckReport::new(reports);
    let json_to_stdout = args.json.as_deref() == Some(Path::new("-"));
    // A closed pipe (`| head`) is not an error worth a panic: writes to stdout are best-effort.
    use std::io::Write as _;
    if !args.quiet {
        if json_to_stdout {
            let _ = write!(std::io::stderr(), "{}", report.text());
        } else {
            let _ = write!(std::io::stdout(), "{}", report.text());
        }
    }
    if let Some(path) = &args.junit {
        std::fs::write(path, report.junit()).map_err(|e| Error::io(path, e))?;
    }
    match &args.json {
        Some(_) if json_to_stdout => {
            let _ = writeln!(std::io::stdout(), "{}", report.json());
        }
        Some(path) => std::fs::write(path, report.json() + "\n").map_err(|e| Error::io(path, e))?,
        None => {}
    }
    Ok(report.exit_code())
}

/// Run and compare one case; errors become an `error` case.
fn check_case(
    case: &cosimo::results::reference::Case,
    args: &CheckArgs,
    cli_tolerance: &cosimo::results::compare::ToleranceSettings,
    worker: &cosimo::fmu::worker::WorkerOptions,
    work: &Path,
) -> cosimo::results::report::CaseReport {
    use cosimo::results::report::CaseReport;
    let started = std::time::Instant::now();
    let mut reference_used = case.reference.as_ref().map(|p| p.display().to_string());
    let result_file = work.join(format!("{}_out.csv", safe_name(&case.name)));
    let options = cosimo::results::check::CaseOptions {
        start: args.start_time,
        stop: args.stop_time,
        step: args.step_size,
        output_interval: args.output_interval,
        tolerance: cli_tolerance.clone(),
        keep_traces: args.plot.is_some(),
        isolate: args.isolate,
        worker: worker.clone(),
    };
    let simulated = cosimo::results::check::simulate_and_compare(
        case,
        &options,
        &result_file,
        &mut reference_used,
    );
    match simulated {
        Ok(comparison) => {
            let mut report = CaseReport::compared(
                case.name.clone(),
                case.model.display().to_string(),
                reference_used.unwrap_or_default(),
                comparison,
                started.elapsed().as_secs_f64(),
            );
            if args.results.is_some() {
                report.result_file = Some(result_file.display().to_string());
            }
            report
        }
        Err(error) => CaseReport::failed_to_run(
            case.name.clone(),
            case.model.display().to_string(),
            reference_used,
            error.to_string(),
            exit_code(&error),
            started.elapsed().as_secs_f64(),
        ),
    }
}

fn safe_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Plot every failing signal of a case that kept its trace; a plot that fails is noted.
fn plot_failures(dir: &Path, report: &mut cosimo::results::report::CaseReport) {
    use cosimo::results::plot;
    let case_dir = dir.join(safe_name(&report.name));
    let failing: Vec<usize> = (0..report.signals.len())
        .filter(|&i| {
            !report.signals[i].comparison.passed && report.signals[i].comparison.trace.is_some()
        })
        .collect();
    if failing.is_empty() {
        return;
    }
    if let Err(e) = std::fs::create_dir_all(&case_dir) {
        say!("warning: {}: {e}", case_dir.display());
        return;
    }
    for i in failing {
        let signal = &mut report.signals[i];
        let path = case_dir.join(plot::file_name(&signal.comparison.name));
        let title = format!("{}: {}", report.name, signal.comparison.name);
        match plot::plot_signal(&path, &title, &signal.comparison) {
            Ok(()) => signal.plot = Some(path.display().to_string()),
            Err(e) => say!("warning: {e}"),
        }
        signal.comparison.trace = None;
    }
}
