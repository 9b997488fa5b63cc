//! The `cosimo` command line: parse (clap derive), call the library, print, exit code.
//!
//! Exit codes: 0 ok, 1 simulation failed, 2 bad input or usage, 3 regression check failed.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use cosimo::fmu::description::FmiVersion;
use cosimo::fmu::instance::InstanceOptions;
use cosimo::fmu::values::{check_start_value_allowed, find_variable, parse_value};
use cosimo::fmu::{summary, Fmu};
use cosimo::master::execution::{Execution, RunOptions};
use cosimo::master::run::{self as run_loop, Observer};
use cosimo::observe::Progress as ProgressObserver;
use cosimo::results::{CsvWriter, Table};
use cosimo::settings::control::Estimator;
use cosimo::settings::{AlgorithmKind, Experiment, Labels, Overrides};
use cosimo::system::load::{is_ssp, load, Target};
use cosimo::system::ssp::{Imported, SspPackage};
use cosimo::system::{Endpoint, System};
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
    /// Stability of a master algorithm on the two-mass oscillator: a map of the spectral radius
    /// over the eigenvalue plane, or the largest stable macro step of a physical system.
    Stability(Box<StabilityArgs>),
}

#[derive(Args)]
struct InspectArgs {
    /// An FMU (.fmu file or unpacked folder) or an SSP (.ssp file or folder, or a .ssd file).
    fmu: PathBuf,
    /// Print JSON (FMUs: schemas/inspect.schema.json) instead of a table.
    #[arg(long)]
    json: bool,
    /// The .ssd file of an SSP to inspect (default: SystemStructure.ssd).
    #[arg(long)]
    ssd: Option<String>,
}

#[derive(Args)]
struct RunArgs {
    /// What to run: one FMU (.fmu file or unpacked folder), a system file (.json), an SSP (.ssp
    /// file or folder, .ssd), or several components as `name=path` or bare paths (named after
    /// the file) with --connect.
    #[arg(required = true, value_name = "FMU|SYSTEM|SSP|NAME=FMU")]
    targets: Vec<String>,
    /// Connect an output to an input: `component.output=component.input` (repeatable).
    #[arg(long = "connect", value_name = "FROM=TO")]
    connections: Vec<String>,
    /// The .ssd file of an SSP to run (default: SystemStructure.ssd).
    #[arg(long)]
    ssd: Option<String>,
    /// Master algorithm for systems: jacobi, gauss-seidel, or implicit (predictor / corrector
    /// repeating each macro step from saved FMU states until the coupling equations hold).
    #[arg(long, value_parser = ["jacobi", "gauss-seidel", "implicit", "constraint", "rim"])]
    algorithm: Option<String>,
    /// Interface Jacobian of --algorithm implicit: system (one repeated macro step of every
    /// component per coupling variable) or components (each component repeats only its own
    /// step per own input, in parallel; direct feedthrough from the FMUs' directional
    /// derivatives; composed along the coupling graph).
    #[arg(long, value_parser = ["system", "components"])]
    jacobian: Option<String>,
    /// Extended coupling of --algorithm implicit (the stability thesis, Sect. 3.4) for the
    /// connections the system file marks "halfStep": derivative (the coupling condition's time
    /// derivative at each point, from the sources' output derivatives) or integral (its
    /// integral over each step, from the outputs the connections name as "sourceIntegral").
    #[arg(long, value_parser = ["none", "derivative", "integral"])]
    extension: Option<String>,
    /// Extrapolation order k of Float inputs in systems: 0 (hold) to 3 (with --adaptive: the
    /// highest order the order controller may choose).
    #[arg(long, visible_alias = "order", value_parser = clap::value_parser!(u8).range(0..=3))]
    extrapolation_order: Option<u8>,
    /// Control the macro-step size (and, unless --fixed-order, the order) with an error
    /// estimator; --step-size is the first step.
    #[arg(long)]
    adaptive: bool,
    /// Error estimator for --adaptive: ExLocal, ExMilne, ExSLocal (explicit), ImMilne, ImSLocal
    /// (implicit). Default: ExSLocal, or ImSLocal with --algorithm implicit.
    #[arg(long, value_parser = ["ExLocal", "ExMilne", "ExSLocal", "ImMilne", "ImSLocal"])]
    estimator: Option<String>,
    /// With --adaptive: keep the order given by --order instead of controlling it.
    #[arg(long)]
    fixed_order: bool,
    /// With --adaptive: relative tolerance of states (ExLocal, ExMilne, ImMilne).
    #[arg(long)]
    rtol: Option<f64>,
    /// With --adaptive: absolute tolerance of positions.
    #[arg(long)]
    atol_position: Option<f64>,
    /// With --adaptive: absolute tolerance of velocities.
    #[arg(long)]
    atol_velocity: Option<f64>,
    /// With --adaptive: relative tolerance of coupling variables (ExSLocal, ImSLocal, order control).
    #[arg(long)]
    rtol_coupling: Option<f64>,
    /// With --adaptive: absolute tolerance of coupling variables.
    #[arg(long)]
    atol_coupling: Option<f64>,
    /// With --adaptive: largest macro step.
    #[arg(long)]
    max_step: Option<f64>,
    /// With --adaptive: safety factor of the step-size controller (the paper recommends 2..6).
    #[arg(long)]
    safety_factor: Option<f64>,
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
        Command::Check(c) => (c.quiet, false, false),
        Command::Validate(_) | Command::Plot(_) | Command::Stability(_) => (false, false, false),
    };
    init_logging(quiet, log_calls, debug);
    let result = match cli.command {
        Command::Inspect(args) => inspect(&args),
        Command::Run(args) => run(&args),
        Command::Check(args) => return check_command(&args),
        Command::Validate(args) => return validate_command(&args),
        Command::Plot(args) => plot_command(&args),
        Command::Stability(args) => stability_command(&args),
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
        // Bad input found only once the run started is still bad input.
        Error::Simulation { source, .. } => exit_code(source),
        Error::Fmi { .. }
        | Error::Discard { .. }
        | Error::Numerics(_)
        | Error::Internal(_)
        | Error::Worker { .. }
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

/// Import an SSP, printing what it uses that cosimo does not (harmlessly) support.
fn import_ssp(
    path: &Path,
    ssd: Option<&str>,
    quiet: bool,
) -> Result<(SspPackage, Imported), Error> {
    let package = SspPackage::open(path)?;
    let imported = package.import(ssd)?;
    if !quiet {
        for warning in &imported.warnings {
            eprintln!("warning: {warning}");
        }
    }
    Ok((package, imported))
}

/// `cosimo inspect` of an SSP: its system as cosimo will run it.
fn inspect_ssp(args: &InspectArgs) -> Result<(), Error> {
    let (package, imported) = import_ssp(&args.fmu, args.ssd.as_deref(), false)?;
    let system = &imported.system;
    if args.json {
        let json = serde_json::json!({
            "source": args.fmu.display().to_string(),
            "name": imported.name,
            "description": imported.description,
            "ssdFiles": package.ssd_files(),
            "components": system.components.iter().map(|c| serde_json::json!({
                "name": c.name,
                "fmu": c.fmu.display().to_string(),
                "parameters": c.start_values.iter().map(|(n, v)| (n.clone(), serde_json::json!(v))).collect::<serde_json::Map<_, _>>(),
            })).collect::<Vec<_>>(),
            "connections": system.connections.iter().map(|c| serde_json::json!({
                "from": c.from.to_string(), "to": c.to.to_string(), "factor": c.factor, "offset": c.offset,
            })).collect::<Vec<_>>(),
            "experiment": { "startTime": system.experiment.start, "stopTime": system.experiment.stop, "stepSize": system.experiment.step },
            "warnings": imported.warnings,
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&json).unwrap_or_default()
        );
        return Ok(());
    }
    println!("{}", args.fmu.display());
    println!("  System           {}", imported.name);
    if let Some(d) = &imported.description {
        println!("  Description      {d}");
    }
    println!("  SSD files        {}", package.ssd_files().join(", "));
    let e = &system.experiment;
    println!(
        "  Experiment       start {}, stop {}, step {}, {}",
        e.start,
        e.stop,
        e.step,
        e.algorithm.kind()
    );
    println!("\n  Components ({})", system.components.len());
    for c in &system.components {
        let parameters: Vec<String> = c
            .start_values
            .iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect();
        println!(
            "    {}  {}  {}",
            c.name,
            c.fmu.display(),
            parameters.join(" ")
        );
    }
    println!("\n  Connections ({})", system.connections.len());
    for c in &system.connections {
        let transform = if c.factor != 1.0 || c.offset != 0.0 {
            format!("  (x {} + {})", c.factor, c.offset)
        } else {
            String::new()
        };
        println!("    {} -> {}{transform}", c.from, c.to);
    }
    Ok(())
}

fn inspect(args: &InspectArgs) -> Result<(), Error> {
    if is_ssp(&args.fmu) {
        return inspect_ssp(args);
    }
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
    let first = &args.targets[0];
    let target = load(&args.targets, &args.connections, args.ssd.as_deref())?;
    let (mut system, labels, file, _package) = match target {
        Target::Fmu(fmu) => return run_fmu(args, fmu),
        Target::System(loaded) => {
            if !args.quiet {
                for warning in &loaded.warnings {
                    eprintln!("warning: {warning}");
                }
            }
            let loaded = *loaded;
            (loaded.system, loaded.labels, loaded.file, loaded.package)
        }
    };
    if args.fmi_version.is_some() {
        return Err(Error::Usage(
            "--fmi-version checks the version of one FMU; a system's FMUs may be of either version"
                .into(),
        ));
    }
    apply_overrides(args, &mut system, labels)?;
    let options = RunOptions {
        instance: InstanceOptions {
            log_fmi_calls: args.log_fmi_calls,
            logging_on: args.debug_logging,
            event_mode: args.event_mode,
            ..InstanceOptions::default()
        },
        threads: args.threads,
        record: args.output_variables.clone(),
        bare_names: false,
        inputs: args
            .input_file
            .as_deref()
            .map(Table::read)
            .transpose()?
            .map(std::sync::Arc::new),
        opened: Vec::new(),
    };
    // Checks against the FMUs (names, types, units) happen here: say which file they concern.
    let mut execution = Execution::instantiate(&system, &options).map_err(|e| match e {
        Error::Usage(message) if file.is_some() => Error::Usage(format!("{first}: {message}")),
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
    let mut shown = ProgressObserver(|t| progress.update(t));
    let observers: &mut [&mut dyn Observer] = &mut [&mut writer, &mut shown];
    let result = run_loop::run(&mut execution, observers);
    progress.finish();
    let stats = result.inspect_err(|e| {
        if let Error::Simulation { time, .. } = e {
            eprintln!("results up to t = {time} are in {}", output_file.display());
        }
    })?;
    if !args.quiet {
        let what = format!("{} components", system.components.len());
        print_summary(
            &what,
            &system.experiment,
            &stats,
            "an FMU asked to terminate",
        );
        eprintln!("results: {}", output_file.display());
    }
    Ok(())
}

/// The experiment options of `run` as library overrides (clap has checked their syntax).
fn overrides(args: &RunArgs) -> Overrides {
    use cosimo::settings::implicit::{Extension, JacobianMethod};
    Overrides {
        start: args.start_time,
        stop: args.stop_time,
        step: args.step_size,
        output_interval: args.output_interval,
        tolerance: args.tolerance,
        algorithm: args.algorithm.as_deref().and_then(AlgorithmKind::parse),
        extrapolation_order: args.extrapolation_order,
        parallel: args.parallel,
        jacobian: args.jacobian.as_deref().map(|j| match j {
            "components" => JacobianMethod::Components,
            _ => JacobianMethod::SystemSteps,
        }),
        extension: args.extension.as_deref().map(|e| match e {
            "derivative" => Extension::Derivative,
            "integral" => Extension::Integral,
            _ => Extension::None,
        }),
        adaptive: args.adaptive,
        estimator: args.estimator.as_deref().map(|name| match name {
            "ExLocal" => Estimator::ExLocal,
            "ExMilne" => Estimator::ExMilne,
            "ImMilne" => Estimator::ImMilne,
            "ImSLocal" => Estimator::ImSLocal,
            _ => Estimator::ExSLocal,
        }),
        fixed_order: args.fixed_order,
        rtol: args.rtol,
        atol_position: args.atol_position,
        atol_velocity: args.atol_velocity,
        rtol_coupling: args.rtol_coupling,
        atol_coupling: args.atol_coupling,
        max_step: args.max_step,
        safety_factor: args.safety_factor,
    }
}

/// Command-line settings win over the system file's; `labels` spell the file's settings.
fn apply_overrides(args: &RunArgs, system: &mut System, labels: Labels) -> Result<(), Error> {
    system.experiment = overrides(args)
        .apply(&system.experiment, labels)
        .map_err(Error::Usage)?;
    if args.threads != 0 && !system.experiment.parallel {
        return Err(Error::Usage(
            "--threads sets the worker threads of --parallel: add --parallel or drop --threads"
                .into(),
        ));
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

/// The summary of a run on stderr: what ran, how far, how fast, and the algorithm's figures.
fn print_summary(
    what: &str,
    experiment: &Experiment,
    stats: &cosimo::master::RunStatistics,
    terminated: &str,
) {
    eprintln!(
        "{what}: simulated {} s to {} s in {} macro steps ({} FMI calls, {} rows) in {:.3} s wall time, real-time factor {:.1}{}",
        experiment.start,
        stats.end_time,
        stats.steps,
        stats.fmi_calls,
        stats.rows,
        stats.wall_seconds,
        stats.real_time_factor(experiment.start),
        if stats.terminated_early {
            format!(" ({terminated})")
        } else {
            String::new()
        },
    );
    if let Some(control) = &stats.control {
        let histogram: Vec<String> = control
            .order_histogram
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(k, n)| format!("k={k}: {n}"))
            .collect();
        eprintln!(
            "step control: {} accepted, {} rejected, {} corrector iterations, {} macro-step computations, H from {:e} to {:e} s, orders {}",
            control.accepted,
            control.rejected,
            control.corrector_iterations,
            control.macro_steps,
            control.smallest_step,
            control.largest_step,
            histogram.join(", ")
        );
    } else if stats.corrector_iterations > 0 {
        eprintln!(
            "corrector: {} Newton iterations",
            stats.corrector_iterations
        );
    }
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

fn run_fmu(args: &RunArgs, fmu: std::sync::Arc<Fmu>) -> Result<(), Error> {
    let path = fmu.source().to_path_buf();
    let path = path.as_path();
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
    let mut start_values = Vec::new();
    for assignment in &args.start_values {
        let (name, text) = assignment.split_once('=').ok_or_else(|| {
            Error::Usage(format!(
                "--start-value \"{assignment}\": expected NAME=VALUE, e.g. --start-value m=2.5"
            ))
        })?;
        let variable = find_variable(&md, name.trim(), "--start-value")?;
        check_start_value_allowed(&md, variable)?;
        parse_value(&md, variable, text.trim())?;
        start_values.push((variable.name.clone(), text.trim().to_string()));
    }
    for name in &args.output_variables {
        find_variable(&md, name, "--output-variable")?;
    }
    let system = System::single_fmu(path, &md, start_values, &overrides(args))?;
    if args.threads != 0 && !system.experiment.parallel {
        return Err(Error::Usage(
            "--threads sets the worker threads of --parallel: add --parallel or drop --threads"
                .into(),
        ));
    }
    let options = RunOptions {
        instance: InstanceOptions {
            log_fmi_calls: args.log_fmi_calls,
            logging_on: args.debug_logging,
            event_mode: args.event_mode,
            ..InstanceOptions::default()
        },
        threads: args.threads,
        record: args.output_variables.clone(),
        bare_names: true,
        inputs: args
            .input_file
            .as_deref()
            .map(Table::read)
            .transpose()?
            .map(std::sync::Arc::new),
        opened: vec![fmu],
    };
    let mut execution = Execution::instantiate(&system, &options)?;
    let output_file = args
        .output_file
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}_out.csv", md.model_name)));
    let mut writer = CsvWriter::create(&output_file, &execution.column_names())?;
    let experiment = &system.experiment;
    let progress = Progress::new(args.quiet, experiment.start, experiment.stop);
    let mut shown = ProgressObserver(|t| progress.update(t));
    let observers: &mut [&mut dyn Observer] = &mut [&mut writer, &mut shown];
    let result = run_loop::run(&mut execution, observers);
    progress.finish();
    let stats = result.inspect_err(|e| {
        if let Error::Simulation { time, .. } = e {
            eprintln!("results up to t = {time} are in {}", output_file.display());
        }
    })?;
    if !args.quiet {
        print_summary(
            &md.model_name,
            experiment,
            &stats,
            "the FMU asked to terminate",
        );
        eprintln!("results: {}", output_file.display());
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// cosimo check / cosimo validate

#[derive(Args)]
struct CheckArgs {
    /// What to check: an FMU (.fmu or unpacked folder), a system file (.json), an SSP, a case
    /// folder (model + reference CSV + optional input CSV + optional check.json) or a folder of
    /// case folders.
    #[arg(required = true, value_name = "FMU|SYSTEM|CASES")]
    targets: Vec<PathBuf>,
    /// Reference CSV for a model given directly (default: the FMU's own FMI-LS-REF reference).
    #[arg(long)]
    reference: Option<PathBuf>,
    /// Input CSV for an FMU given directly.
    #[arg(long)]
    input_file: Option<PathBuf>,
    /// Settings (check.json format: tolerances, experiment, start values) for a model given
    /// directly.
    #[arg(long)]
    settings: Option<PathBuf>,
    /// Relative tolerance (of |reference|) of every signal [default: 1e-3].
    #[arg(long)]
    rel_tol: Option<f64>,
    /// Absolute tolerance of every signal [default: 1e-6].
    #[arg(long)]
    abs_tol: Option<f64>,
    /// Tolerance relative to each signal's range (max - min) [default: 1e-3].
    #[arg(long)]
    range_tol: Option<f64>,
    /// Time tolerance [s]: half-width of the tube in time [default: 1e-3 of the duration].
    #[arg(long)]
    time_tol: Option<f64>,
    /// Start time [s] (overrides the case's and the model's).
    #[arg(long)]
    start_time: Option<f64>,
    /// Stop time [s].
    #[arg(long)]
    stop_time: Option<f64>,
    /// Communication step size [s].
    #[arg(long)]
    step_size: Option<f64>,
    /// Interval between result rows [s].
    #[arg(long)]
    output_interval: Option<f64>,
    /// Write a JUnit XML report.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Write the JSON report (schemas/check-report.schema.json) to FILE, or to stdout.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
    json: Option<PathBuf>,
    /// Write a PNG plot (reference, tube, result) of every failing signal into DIR.
    #[arg(long, value_name = "DIR")]
    plot: Option<PathBuf>,
    /// Keep the simulation results in DIR (default: a temporary folder).
    #[arg(long, value_name = "DIR")]
    results: Option<PathBuf>,
    /// Print no summary.
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Args)]
struct ValidateArgs {
    /// The FMU: a .fmu file, an unpacked FMU folder, or a modelDescription.xml.
    fmu: PathBuf,
    /// Print the findings as JSON.
    #[arg(long)]
    json: bool,
}

fn check_command(args: &CheckArgs) -> ExitCode {
    match check(args) {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            eprintln!("error: {error}");
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

    let mut reports = Vec::new();
    for case in &cases {
        let mut report = check_case(case, args, &cli_tolerance, &work);
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
            eprint!("{}", report.text());
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
        eprintln!("warning: {}: {e}", case_dir.display());
        return;
    }
    for i in failing {
        let signal = &mut report.signals[i];
        let path = case_dir.join(plot::file_name(&signal.comparison.name));
        let title = format!("{}: {}", report.name, signal.comparison.name);
        match plot::plot_signal(&path, &title, &signal.comparison) {
            Ok(()) => signal.plot = Some(path.display().to_string()),
            Err(e) => eprintln!("warning: {e}"),
        }
        signal.comparison.trace = None;
    }
}

fn validate_command(args: &ValidateArgs) -> ExitCode {
    use cosimo::fmu::validate::{has_errors, validate, Severity};
    let findings = match validate(&args.fmu) {
        Ok(findings) => findings,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    let errors = findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .count();
    let warnings = findings.len() - errors;
    if args.json {
        let json = serde_json::json!({
            "fmu": args.fmu.display().to_string(),
            "valid": errors == 0,
            "errors": errors,
            "warnings": warnings,
            "findings": findings,
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&json).unwrap_or_default()
        );
    } else {
        for finding in &findings {
            println!("{finding}");
        }
        println!(
            "{}: {errors} error{}, {warnings} warning{}",
            args.fmu.display(),
            if errors == 1 { "" } else { "s" },
            if warnings == 1 { "" } else { "s" }
        );
    }
    if has_errors(&findings) {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}

#[derive(Args)]
struct PlotArgs {
    /// Result files (CSV with a time column), one line each.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// The column to plot (e.g. crane.s1).
    #[arg(long)]
    variable: String,
    /// The PNG to write.
    #[arg(long, short)]
    output: PathBuf,
    /// A label per file (default: the file names).
    #[arg(long = "label")]
    labels: Vec<String>,
    /// Chart title (default: the variable).
    #[arg(long)]
    title: Option<String>,
    /// Lower end of the value axis (with --y-max: keeps a diverging run from flattening the
    /// others).
    #[arg(long, allow_negative_numbers = true)]
    y_min: Option<f64>,
    /// Upper end of the value axis.
    #[arg(long, allow_negative_numbers = true)]
    y_max: Option<f64>,
}

fn plot_command(args: &PlotArgs) -> Result<(), Error> {
    use cosimo::results::plot::{plot_series, Series};
    let mut series = Vec::with_capacity(args.files.len());
    for (i, file) in args.files.iter().enumerate() {
        let table = Table::read(file)?;
        let column = table.column(&args.variable).ok_or_else(|| {
            Error::Usage(format!(
                "{}: no column \"{}\"; the columns are: {}",
                file.display(),
                args.variable,
                table.columns().join(", ")
            ))
        })?;
        let label = args
            .labels
            .get(i)
            .cloned()
            .unwrap_or_else(|| file.display().to_string());
        let points = table
            .time()
            .iter()
            .copied()
            .zip(table.values(column).iter().copied())
            .collect();
        series.push(Series { label, points });
    }
    let range = args.y_min.zip(args.y_max);
    plot_series(
        &args.output,
        args.title.as_deref().unwrap_or(&args.variable),
        &args.variable,
        &series,
        range,
    )?;
    eprintln!("plot: {}", args.output.display());
    Ok(())
}

#[derive(Args)]
struct StabilityArgs {
    /// Decomposition of the two-mass oscillator: ff (force/force), fd (force/displacement) or dd.
    #[arg(long, default_value = "ff", value_parser = ["ff", "fd", "dd"])]
    decomposition: String,
    /// Master algorithm; constraint: the two masses joined rigidly (x2 - x1 = 0) with index-1
    /// coupling of --order 2 or 3, the index-1 paper's Appendix A model.
    #[arg(long, default_value = "jacobi", value_parser = ["jacobi", "gauss-seidel", "implicit", "constraint"])]
    algorithm: String,
    /// constraint: the Appendix A ratios alpha_m, alpha_Lr, alpha_Li (Eq. 41).
    #[arg(long, value_delimiter = ',', default_value = "1,1,1")]
    ratios: Vec<f64>,
    /// Extrapolation / interpolation order k.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=3))]
    order: u8,
    /// implicit: the thesis' extended coupling (Sect. 3.4): derivative (D) with half-step
    /// values of the forces (F/F), the force and velocity (F/D) or the velocities (D/D);
    /// integral (I) with the forces, the force and position, or the positions; k = 0, 1, 2
    /// select the C, L, Q functions.
    #[arg(long, default_value = "none", value_parser = ["none", "derivative", "integral"])]
    extension: String,
    /// The plane's ranges of the thesis: implicit (Λr in [-2, 0], Λi in [0, 10]) or explicit
    /// ([-1, 0] x [0, 2]); the symmetric model.
    #[arg(long, default_value = "explicit", value_parser = ["explicit", "implicit"])]
    plane: String,
    /// Grid points per axis.
    #[arg(long, default_value_t = 21)]
    points: usize,
    /// Folder with the project's packed FMUs (Oscillator, CouplingSpring).
    #[arg(long, default_value = "target/fmus")]
    fmus: PathBuf,
    /// CSV of the spectral radius per grid point.
    #[arg(long)]
    output: Option<PathBuf>,
    /// PNG stability map.
    #[arg(long)]
    png: Option<PathBuf>,
    /// Instead of a map: the largest stable macro step of the physical system given by
    /// --m1 --c1 --d1 --m2 --c2 --d2 --cc --dc, by bisection in [--h-low, --h-high].
    #[arg(long)]
    max_step: bool,
    #[arg(long, default_value_t = 1.0)]
    m1: f64,
    #[arg(long, default_value_t = 1000.0)]
    c1: f64,
    #[arg(long, default_value_t = 10.0)]
    d1: f64,
    #[arg(long, default_value_t = 1.0)]
    m2: f64,
    #[arg(long, default_value_t = 1000.0)]
    c2: f64,
    #[arg(long, default_value_t = 10.0)]
    d2: f64,
    #[arg(long, default_value_t = 1000.0)]
    cc: f64,
    #[arg(long, default_value_t = 10.0)]
    dc: f64,
    #[arg(long, default_value_t = 1e-4)]
    h_low: f64,
    #[arg(long, default_value_t = 1.0)]
    h_high: f64,
}

fn stability_command(args: &StabilityArgs) -> Result<(), Error> {
    use cosimo::analysis::stability::{
        max_stable_step, symmetric_map, Decomposition, Scheme, TestFmus, TwoMass,
    };
    let scheme = Scheme {
        decomposition: match args.decomposition.as_str() {
            "fd" => Decomposition::ForceDisplacement,
            "dd" => Decomposition::DisplacementDisplacement,
            _ => Decomposition::ForceForce,
        },
        algorithm: match args.algorithm.as_str() {
            "gauss-seidel" => AlgorithmKind::GaussSeidel,
            "implicit" => AlgorithmKind::Implicit,
            "constraint" => AlgorithmKind::Constraint,
            _ => AlgorithmKind::Jacobi,
        },
        order: args.order,
        extension: match args.extension.as_str() {
            "derivative" => cosimo::master::implicit::Extension::Derivative,
            "integral" => cosimo::master::implicit::Extension::Integral,
            _ => cosimo::master::implicit::Extension::None,
        },
    };
    if scheme.extension != cosimo::master::implicit::Extension::None
        && scheme.algorithm != AlgorithmKind::Implicit
    {
        return Err(Error::Usage(
            "--extension applies to the implicit algorithm; add --algorithm implicit".into(),
        ));
    }
    let fmus = TestFmus::in_folder(&args.fmus);
    for path in [&fmus.oscillator, &fmus.spring] {
        if !path.exists() {
            return Err(Error::Usage(format!(
                "{}: not found; the analyser runs the project's own FMUs: build them with `cargo run -p fmu-pack` or give --fmus",
                path.display()
            )));
        }
    }
    if args.max_step && args.algorithm == "constraint" {
        return Err(Error::Usage(
            "--max-step analyses applied-force coupling; draw a map for --algorithm constraint"
                .into(),
        ));
    }
    if args.max_step {
        let model = TwoMass {
            m1: args.m1,
            c1: args.c1,
            d1: args.d1,
            m2: args.m2,
            c2: args.c2,
            d2: args.d2,
            cc: args.cc,
            dc: args.dc,
        };
        let h = max_stable_step(&fmus, &model, scheme, args.h_low, args.h_high, 1e-3)?;
        println!("largest stable macro step: {h:.6e} s");
        return Ok(());
    }
    let map = if args.algorithm == "constraint" {
        if (args.order != 2 && args.order != 3) || args.ratios.len() != 3 {
            return Err(Error::Usage(
                "--algorithm constraint needs --order 2 or 3 and --ratios alpha_m,alpha_Lr,alpha_Li".into(),
            ));
        }
        // The index-1 paper's squares: [-10, 0] x [0, 10] (--plane explicit) or
        // [-1000, 0] x [0, 1000] (--plane implicit).
        let size = if args.plane == "implicit" {
            1000.0
        } else {
            10.0
        };
        let ratios = (args.ratios[0], args.ratios[1], args.ratios[2]);
        cosimo::analysis::stability::constraint_map(
            &fmus,
            args.order,
            ratios,
            (-size, 0.0),
            (0.0, size),
            args.points,
        )?
    } else {
        let (re, im) = if args.plane == "implicit" {
            ((-2.0, -0.02), (0.0, 10.0))
        } else {
            ((-1.0, -0.02), (0.0, 2.0))
        };
        symmetric_map(&fmus, scheme, re, im, args.points)?
    };
    let stable = map
        .iter()
        .filter(|p| p.spectral_radius <= 1.0 + 1e-9)
        .count();
    println!(
        "{stable} of {} grid points stable (spectral radius <= 1)",
        map.len()
    );
    if let Some(path) = &args.output {
        let mut text = String::from("\"lambda_re\",\"lambda_im\",\"spectral_radius\"\n");
        for p in &map {
            text.push_str(&format!(
                "{},{},{}\n",
                p.lambda_re, p.lambda_im, p.spectral_radius
            ));
        }
        std::fs::write(path, text).map_err(|e| Error::io(path, e))?;
    }
    if let Some(path) = &args.png {
        let points: Vec<(f64, f64, bool)> = map
            .iter()
            .map(|p| (p.lambda_re, p.lambda_im, p.spectral_radius <= 1.0 + 1e-9))
            .collect();
        let title = if args.algorithm == "constraint" {
            format!(
                "index-1 constraint coupling k = {}, rigid link, ratios ({})",
                args.order,
                args.ratios
                    .iter()
                    .map(|r| r.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        } else {
            format!(
                "{} {} k = {}, symmetric two-mass oscillator",
                args.decomposition.to_uppercase(),
                args.algorithm,
                args.order
            )
        };
        cosimo::results::plot::plot_stability_map(path, &title, &points)?;
        eprintln!("map: {}", path.display());
    }
    Ok(())
}
