//! The `cosimo` command line: parse (clap derive), call the library, print, exit code.
//!
//! Exit codes: 0 ok, 1 simulation failed, 2 bad input or usage, 3 regression check failed.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use cosimo::fmu::description::{Causality, FmiVersion, StartValue, Variable};
use cosimo::fmu::instance::InstanceOptions;
use cosimo::fmu::values::{check_start_value_allowed, parse_value};
use cosimo::fmu::{summary, Fmu};
use cosimo::master::execution::{Execution, RunOptions};
use cosimo::master::record::Recording;
use cosimo::master::single::{SingleRun, TableInputs};
use cosimo::master::{run_system, TimeGrid};
use cosimo::results::{CsvWriter, Table};
use cosimo::system::{config, Algorithm, Endpoint, Experiment, System};
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
}

#[derive(Args)]
struct InspectArgs {
    /// The FMU: a .fmu file or an unpacked FMU folder.
    fmu: PathBuf,
    /// Print JSON (schema: schemas/inspect.schema.json) instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct RunArgs {
    /// What to run: one FMU (.fmu file or unpacked folder), a system file (.json), or several
    /// components as `name=path` or bare paths (named after the file) with --connect.
    #[arg(required = true, value_name = "FMU|SYSTEM|NAME=FMU")]
    targets: Vec<String>,
    /// Connect an output to an input: `component.output=component.input` (repeatable).
    #[arg(long = "connect", value_name = "FROM=TO")]
    connections: Vec<String>,
    /// Master algorithm for systems.
    #[arg(long, value_parser = ["jacobi", "gauss-seidel"])]
    algorithm: Option<String>,
    /// Extrapolation order of Float inputs in systems: 0 (hold) to 3.
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=3))]
    extrapolation_order: Option<u8>,
    /// Step Jacobi components in parallel, each FMU on its own worker thread.
    #[arg(long)]
    parallel: bool,
    /// Worker threads for --parallel (default: one per core).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// Start time [s] (default: the FMU's default experiment, else 0).
    #[arg(long)]
    start_time: Option<f64>,
    /// Stop time [s] (default: the FMU's default experiment, else start + 1).
    #[arg(long)]
    stop_time: Option<f64>,
    /// Communication step size [s] (default: the default experiment's, else (stop - start) / 500).
    #[arg(long)]
    step_size: Option<f64>,
    /// Interval between result rows [s] (default: the step size).
    #[arg(long)]
    output_interval: Option<f64>,
    /// Relative tolerance passed to the FMU (default: the default experiment's).
    #[arg(long)]
    tolerance: Option<f64>,
    /// Start value or parameter, NAME=VALUE (repeatable; in systems component.NAME=VALUE).
    /// Arrays: space-separated elements.
    #[arg(long = "start-value", value_name = "NAME=VALUE")]
    start_values: Vec<String>,
    /// CSV with a time column and one column per input (Float inputs interpolated, discrete held).
    #[arg(long)]
    input_file: Option<PathBuf>,
    /// Where to write the results (default: <model name>_out.csv in the current folder).
    #[arg(long)]
    output_file: Option<PathBuf>,
    /// Variable to record (repeatable; in systems component.NAME; default: every output).
    #[arg(long = "output-variable", value_name = "NAME")]
    output_variables: Vec<String>,
    /// Expect this FMI version (2 or 3) and refuse an FMU of the other.
    #[arg(long, value_parser = ["2", "3"])]
    fmi_version: Option<String>,
    /// Print every FMI call with its arguments and status to stderr.
    #[arg(long)]
    log_fmi_calls: bool,
    /// Turn on the FMU's debug logging and print its messages.
    #[arg(long)]
    debug_logging: bool,
    /// FMI 3: ask the FMU to return early at events and handle them in event mode.
    #[arg(long)]
    event_mode: bool,
    /// Print nothing but errors.
    #[arg(long, short)]
    quiet: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let (quiet, log_calls, debug) = match &cli.command {
        Command::Run(r) => (r.quiet, r.log_fmi_calls, r.debug_logging),
        Command::Inspect(_) => (false, false, false),
    };
    init_logging(quiet, log_calls, debug);
    let result = match cli.command {
        Command::Inspect(args) => inspect(&args),
        Command::Run(args) => run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // Every error's message already includes its cause.
            eprintln!("error: {error}");
            ExitCode::from(exit_code(&error))
        }
    }
}

/// 1 when a simulation ran and failed, 2 when the input or the usage was wrong.
fn exit_code(error: &Error) -> u8 {
    match error {
        Error::Simulation { .. }
        | Error::Fmi { .. }
        | Error::Discard { .. }
        | Error::WrongState { .. } => 1,
        _ => 2,
    }
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

fn inspect(args: &InspectArgs) -> Result<(), Error> {
    let fmu = Fmu::open(&args.fmu)?;
    if args.json {
        let json = summary::json(fmu.description(), &args.fmu);
        println!(
            "{}",
            serde_json::to_string_pretty(&json).unwrap_or_default()
        );
    } else {
        print!("{}", summary::text(fmu.description(), &args.fmu));
    }
    Ok(())
}

fn run(args: &RunArgs) -> Result<(), Error> {
    let single = args.targets.len() == 1 && args.connections.is_empty();
    let first = &args.targets[0];
    if single && !first.ends_with(".json") && !first.contains('=') {
        return run_fmu(args, Path::new(first));
    }
    let mut system = if single && first.ends_with(".json") {
        config::from_file(Path::new(first))?
    } else {
        config::from_command_line(&args.targets, &args.connections, Experiment::default())?
    };
    apply_overrides(args, &mut system)?;
    let options = RunOptions {
        instance: InstanceOptions {
            log_fmi_calls: args.log_fmi_calls,
            logging_on: args.debug_logging,
            event_mode: args.event_mode,
            ..InstanceOptions::default()
        },
        threads: args.threads,
        record: args.output_variables.clone(),
    };
    // Checks against the FMUs (names, types, units) happen here: say which file they concern.
    let from_file = single && first.ends_with(".json");
    let mut execution = Execution::instantiate(&system, &options).map_err(|e| match e {
        Error::Usage(message) if from_file => Error::Usage(format!("{first}: {message}")),
        other => other,
    })?;
    let output_file = args.output_file.clone().unwrap_or_else(|| {
        let stem = Path::new(first)
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("system");
        PathBuf::from(format!("{stem}_out.csv"))
    });
    let mut writer = CsvWriter::create(&output_file, &execution.column_names())?;
    let progress = Progress::new(args.quiet, system.experiment.start, system.experiment.stop);
    let result = run_system(&mut execution, &mut writer, &mut |t| progress.update(t));
    progress.finish();
    let stats = result.inspect_err(|e| {
        if let Error::Simulation { time, .. } = e {
            eprintln!("results up to t = {time} are in {}", output_file.display());
        }
    })?;
    if !args.quiet {
        eprintln!(
            "{} components: simulated {} s to {} s in {} macro steps ({} FMI calls, {} rows) in {:.3} s wall time, real-time factor {:.1}{}",
            system.components.len(),
            system.experiment.start,
            stats.end_time,
            stats.steps,
            stats.fmi_calls,
            stats.rows,
            stats.wall_seconds,
            stats.real_time_factor(system.experiment.start),
            if stats.terminated_early { " (an FMU asked to terminate)" } else { "" },
        );
        eprintln!("results: {}", output_file.display());
    }
    Ok(())
}

/// Command-line settings win over the system file's.
fn apply_overrides(args: &RunArgs, system: &mut System) -> Result<(), Error> {
    let experiment = &mut system.experiment;
    if let Some(t) = args.start_time {
        experiment.start = t;
    }
    if let Some(t) = args.stop_time {
        experiment.stop = t;
    }
    if let Some(h) = args.step_size {
        experiment.step = h;
    }
    if args.output_interval.is_some() {
        experiment.output_interval = args.output_interval;
    }
    if args.tolerance.is_some() {
        experiment.tolerance = args.tolerance;
    }
    if let Some(algorithm) = &args.algorithm {
        experiment.algorithm = if algorithm == "gauss-seidel" {
            Algorithm::GaussSeidel
        } else {
            Algorithm::Jacobi
        };
    }
    if let Some(order) = args.extrapolation_order {
        experiment.extrapolation_order = order;
    }
    experiment.parallel |= args.parallel;
    if experiment.stop.is_nan() || experiment.stop <= experiment.start {
        return Err(Error::Usage(format!(
            "the stop time {} must be after the start time {}",
            experiment.stop, experiment.start
        )));
    }
    if !experiment.step.is_finite() || experiment.step <= 0.0 {
        return Err(Error::Usage(format!(
            "the step size must be positive, not {}",
            experiment.step
        )));
    }
    for assignment in &args.start_values {
        let (name, value) = assignment.split_once('=').ok_or_else(|| {
            Error::Usage(format!("--start-value \"{assignment}\": expected component.NAME=VALUE, e.g. --start-value mass1.m=2.5"))
        })?;
        let endpoint = Endpoint::parse(name.trim()).ok_or_else(|| {
            Error::Usage(format!("--start-value \"{assignment}\": in a system, name the component: component.NAME=VALUE"))
        })?;
        let known: Vec<String> = system.components.iter().map(|c| c.name.clone()).collect();
        let component = system
            .components
            .iter_mut()
            .find(|c| c.name == endpoint.component)
            .ok_or_else(|| {
                Error::Usage(format!(
                    "--start-value {name}: there is no component \"{}\"; the components are: {}",
                    endpoint.component,
                    known.join(", ")
                ))
            })?;
        component
            .start_values
            .retain(|(n, _)| *n != endpoint.variable);
        component
            .start_values
            .push((endpoint.variable, value.trim().to_string()));
    }
    Ok(())
}

/// A progress bar on a terminal, shown only for runs that last longer than a second.
struct Progress {
    bar: Option<indicatif::ProgressBar>,
    start: f64,
    stop: f64,
    started: std::time::Instant,
}

impl Progress {
    fn new(quiet: bool, start: f64, stop: f64) -> Progress {
        let bar = (!quiet && std::io::IsTerminal::is_terminal(&std::io::stderr())).then(|| {
            let bar = indicatif::ProgressBar::hidden();
            bar.set_length(1000);
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{bar:40} {percent:>3}% t = {msg} s, {elapsed} elapsed, {eta} left",
            ) {
                bar.set_style(style);
            }
            bar
        });
        Progress {
            bar,
            start,
            stop,
            started: std::time::Instant::now(),
        }
    }

    fn update(&self, t: f64) {
        let Some(bar) = &self.bar else { return };
        if bar.is_hidden() && self.started.elapsed().as_secs_f64() > 1.0 {
            bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
        }
        bar.set_position((1000.0 * (t - self.start) / (self.stop - self.start)) as u64);
        bar.set_message(format!("{t:.6}"));
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

fn run_fmu(args: &RunArgs, path: &Path) -> Result<(), Error> {
    let fmu = Fmu::open(path)?;
    let md = fmu.description().clone();
    if let Some(wanted) = &args.fmi_version {
        let wanted_version = if wanted == "2" {
            FmiVersion::Fmi2
        } else {
            FmiVersion::Fmi3
        };
        if md.fmi_version != wanted_version {
            return Err(Error::Usage(format!(
                "{}: this is an FMI {} FMU, but --fmi-version {wanted} asks for FMI {wanted_version}",
                path.display(),
                md.fmi_version
            )));
        }
    }
    let grid = time_grid(args, &md)?;
    let tolerance = args
        .tolerance
        .or(md.default_experiment.as_ref().and_then(|d| d.tolerance));

    let mut start_values: Vec<(Variable, StartValue)> = Vec::new();
    for assignment in &args.start_values {
        let (name, text) = assignment.split_once('=').ok_or_else(|| {
            Error::Usage(format!(
                "--start-value \"{assignment}\": expected NAME=VALUE, e.g. --start-value m=2.5"
            ))
        })?;
        let variable = find_variable(&md, name.trim(), "--start-value")?;
        check_start_value_allowed(&md, variable)?;
        start_values.push((variable.clone(), parse_value(&md, variable, text.trim())?));
    }

    let recorded: Vec<&Variable> = if args.output_variables.is_empty() {
        md.variables
            .iter()
            .filter(|v| v.causality == Causality::Output)
            .collect()
    } else {
        args.output_variables
            .iter()
            .map(|name| find_variable(&md, name, "--output-variable"))
            .collect::<Result<_, _>>()?
    };
    let recording = Recording::new(&md, &recorded)?;

    let table = args.input_file.as_deref().map(Table::read).transpose()?;
    let inputs = table
        .as_ref()
        .map(|t| TableInputs::new(&md, t))
        .transpose()?;

    let output_file = args
        .output_file
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}_out.csv", md.model_name)));
    let writer = CsvWriter::create(&output_file, &recording.column_names(""))?;

    let options = InstanceOptions {
        log_fmi_calls: args.log_fmi_calls,
        logging_on: args.debug_logging,
        event_mode: args.event_mode,
        ..InstanceOptions::default()
    };
    let mut slave = fmu.instantiate(&md.model_name, options)?;
    let stats = SingleRun {
        grid,
        tolerance,
        start_values,
        inputs,
        recording,
        writer,
    }
    .run(slave.as_mut())
    .inspect_err(|e| {
        if let Error::Simulation { time, .. } = e {
            eprintln!("results up to t = {time} are in {}", output_file.display());
        }
    })?;

    if !args.quiet {
        eprintln!(
            "{}: simulated {} s to {} s in {} steps ({} FMI calls, {} rows) in {:.3} s wall time, real-time factor {:.1}{}",
            md.model_name,
            grid.start,
            stats.end_time,
            stats.steps,
            stats.fmi_calls,
            stats.rows,
            stats.wall_seconds,
            stats.real_time_factor(grid.start),
            if stats.terminated_early { " (the FMU asked to terminate)" } else { "" },
        );
        eprintln!("results: {}", output_file.display());
    }
    Ok(())
}

fn find_variable<'a>(
    md: &'a cosimo::fmu::ModelDescription,
    name: &str,
    option: &str,
) -> Result<&'a Variable, Error> {
    md.variable(name).ok_or_else(|| {
        let mut close: Vec<&str> = md
            .variables
            .iter()
            .map(|v| v.name.as_str())
            .filter(|n| n.to_lowercase().contains(&name.to_lowercase()) || name.to_lowercase().contains(&n.to_lowercase()))
            .take(5)
            .collect();
        if close.is_empty() {
            close = md.variables.iter().map(|v| v.name.as_str()).take(10).collect();
        }
        Error::Usage(format!(
            "{option} {name}: {} has no variable \"{name}\"; did you mean one of: {}? (`cosimo inspect` lists them all)",
            md.model_name,
            close.join(", ")
        ))
    })
}

fn time_grid(args: &RunArgs, md: &cosimo::fmu::ModelDescription) -> Result<TimeGrid, Error> {
    let de = md.default_experiment.clone().unwrap_or_default();
    let start = args.start_time.or(de.start_time).unwrap_or(0.0);
    let stop = args.stop_time.or(de.stop_time).unwrap_or(start + 1.0);
    if stop.is_nan() || start.is_nan() || stop <= start {
        return Err(Error::Usage(format!(
            "the stop time {stop} must be after the start time {start}"
        )));
    }
    let step = args
        .step_size
        .or(de.step_size)
        .unwrap_or((stop - start) / 500.0);
    if !step.is_finite() || step <= 0.0 {
        return Err(Error::Usage(format!(
            "the step size must be positive, not {step}"
        )));
    }
    let output_interval = args.output_interval.unwrap_or(step);
    if !output_interval.is_finite() || output_interval <= 0.0 {
        return Err(Error::Usage(format!(
            "the output interval must be positive, not {output_interval}"
        )));
    }
    Ok(TimeGrid {
        start,
        stop,
        step,
        output_interval,
    })
}
