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
use cosimo::settings::control::Estimator;
use cosimo::settings::{AlgorithmKind, Experiment, Labels, Overrides};
use cosimo::system::ssp::{Imported, SspPackage};
use cosimo::system::{config, Endpoint, System};
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
        Error::Simulation { .. }
        | Error::Fmi { .. }
        | Error::Discard { .. }
        | Error::Numerics(_)
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

/// An SSP: a `.ssp` archive or folder, a `.ssd` file, or a folder with `SystemStructure.ssd`.
fn is_ssp(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("ssp" | "ssd")
    ) || path.join("SystemStructure.ssd").is_file()
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
        "  Experiment       start {}, stop {}, step {}, {:?}",
        e.start, e.stop, e.step, e.algorithm
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
    let single = args.targets.len() == 1 && args.connections.is_empty();
    let first = &args.targets[0];
    if single && !first.ends_with(".json") && !first.contains('=') && !is_ssp(Path::new(first)) {
        return run_fmu(args, Path::new(first));
    }
    // The package holds the SSP's extracted files (FMUs inside it): keep it to the end.
    let mut _package = None;
    let mut system = if single && first.ends_with(".json") {
        config::from_file(Path::new(first))?
    } else if single && is_ssp(Path::new(first)) {
        let (package, imported) = import_ssp(Path::new(first), args.ssd.as_deref(), args.quiet)?;
        _package = Some(package);
        imported.system
    } else {
        config::from_command_line(&args.targets, &args.connections, Experiment::default())?
    };
    let labels = if is_ssp(Path::new(first)) {
        Labels::SSP
    } else {
        Labels::SYSTEM_FILE
    };
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
    };
    // Checks against the FMUs (names, types, units) happen here: say which file they concern.
    let from_file = single && (first.ends_with(".json") || is_ssp(Path::new(first)));
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
    match simulate_and_compare(case, args, cli_tolerance, &result_file, &mut reference_used) {
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

/// A JSON value of a check file as the text `--start-value` takes.
fn json_value_text(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(items) => items
            .iter()
            .map(json_value_text)
            .collect::<Vec<_>>()
            .join(" "),
        other => other.to_string(),
    }
}

fn simulate_and_compare(
    case: &cosimo::results::reference::Case,
    args: &CheckArgs,
    cli_tolerance: &cosimo::results::compare::ToleranceSettings,
    result_file: &Path,
    reference_used: &mut Option<String>,
) -> Result<cosimo::results::compare::Comparison, Error> {
    use cosimo::fmu::description::VariableType;
    use cosimo::results::compare::{compare, CompareOptions, SignalKind, SignalTable};
    use cosimo::results::reference::{ls_reference, ModelKind};

    let settings = &case.settings;
    let experiment = &settings.experiment;
    let start = args.start_time.or(experiment.start_time);
    let stop = args.stop_time.or(experiment.stop_time);
    let step = args.step_size.or(experiment.step_size);
    let output_interval = args.output_interval.or(experiment.output_interval);
    let kind_of_type = |t: VariableType| {
        if t.is_float() {
            SignalKind::Continuous
        } else {
            SignalKind::Discrete
        }
    };
    let options = CompareOptions {
        tolerance: cli_tolerance.over(&settings.tolerance),
        signals: settings.signals.clone(),
        keep_traces: args.plot.is_some(),
    };
    let no_reference = || {
        Error::Usage(format!(
            "{}: no reference results; give --reference, put reference.csv (or *_ref.csv) in \
             the case folder, or ship them in the FMU (FMI-LS-REF)",
            case.model.display()
        ))
    };

    match case.kind {
        ModelKind::Fmu => {
            let fmu = Fmu::open(&case.model)?;
            let md = fmu.description().clone();
            let mut input = case.input.clone();
            let reference_path = match &case.reference {
                Some(path) => path.clone(),
                None => {
                    let own = ls_reference(fmu.archive().root())?.ok_or_else(no_reference)?;
                    if input.is_none() {
                        input = own.inputs.first().cloned();
                    }
                    let path = own.results.first().cloned().ok_or_else(|| {
                        Error::Usage(format!(
                            "{}: the FMU's FMI-LS-REF manifest lists no file with role=\"result\"",
                            case.model.display()
                        ))
                    })?;
                    *reference_used = Some(format!(
                        "{} (FMI-LS-REF: {})",
                        case.model.display(),
                        path.strip_prefix(fmu.archive().root())
                            .unwrap_or(&path)
                            .display()
                    ));
                    path
                }
            };
            let reference = SignalTable::read(&reference_path)?;

            let de = md.default_experiment.clone().unwrap_or_default();
            let start = start.or(de.start_time).unwrap_or(0.0);
            let stop = stop.or(de.stop_time).unwrap_or(start + 1.0);
            if stop.is_nan() || start.is_nan() || stop <= start {
                return Err(Error::Usage(format!(
                    "the stop time {stop} must be after the start time {start}"
                )));
            }
            let step = step.or(de.step_size).unwrap_or((stop - start) / 500.0);
            let output_interval = output_interval.unwrap_or(step);
            if !(step.is_finite()
                && step > 0.0
                && output_interval.is_finite()
                && output_interval > 0.0)
            {
                return Err(Error::Usage(format!(
                    "the step size ({step}) and output interval ({output_interval}) must be positive"
                )));
            }
            let grid = TimeGrid {
                start,
                stop,
                step,
                output_interval,
            };
            let tolerance = experiment.tolerance.or(de.tolerance);

            let mut start_values = Vec::new();
            for (name, value) in &settings.start_values {
                let variable = find_variable(&md, name, "startValues")?;
                check_start_value_allowed(&md, variable)?;
                start_values.push((
                    variable.clone(),
                    parse_value(&md, variable, &json_value_text(value))?,
                ));
            }
            // Every output, and whatever else the reference names.
            let mut recorded: Vec<&Variable> = md
                .variables
                .iter()
                .filter(|v| v.causality == Causality::Output)
                .collect();
            for column in reference.column_names() {
                if let Some(v) = md.variable(column) {
                    if !recorded.iter().any(|r| r.name == v.name) {
                        recorded.push(v);
                    }
                }
            }
            let recording = Recording::new(&md, &recorded)?;
            let table = input.as_deref().map(Table::read).transpose()?;
            let inputs = table
                .as_ref()
                .map(|t| TableInputs::new(&md, t))
                .transpose()?;
            let writer = CsvWriter::create(result_file, &recording.column_names(""))?;
            let mut slave = fmu.instantiate(&md.model_name, InstanceOptions::default())?;
            SingleRun {
                grid,
                tolerance,
                start_values,
                inputs,
                recording,
                writer,
            }
            .run(slave.as_mut())?;
            drop(slave);
            let result = SignalTable::read(result_file)?;
            Ok(compare(&reference, &result, &options, &|column| {
                md.variable(column).map(|v| kind_of_type(v.var_type))
            }))
        }
        ModelKind::System | ModelKind::Ssp => {
            let reference = SignalTable::read(case.reference.as_ref().ok_or_else(no_reference)?)?;
            if case.input.is_some() {
                return Err(Error::Usage(format!(
                    "{}: input files drive single FMUs; a system's inputs come from its \
                     connections and parameters",
                    case.model.display()
                )));
            }
            // An SSP's package holds its extracted FMUs: keep it until the run ends.
            let mut _package = None;
            let mut system = if case.kind == ModelKind::Ssp {
                let (package, imported) = import_ssp(&case.model, None, true)?;
                _package = Some(package);
                imported.system
            } else {
                config::from_file(&case.model)?
            };
            check_system(
                case,
                &mut system,
                (start, stop, step, output_interval),
                experiment.tolerance,
            )?;
            let options_run = RunOptions {
                instance: InstanceOptions::default(),
                threads: 0,
                record: Vec::new(),
            };
            let model = case.model.display().to_string();
            let mut execution =
                Execution::instantiate(&system, &options_run).map_err(|e| match e {
                    Error::Usage(message) => Error::Usage(format!("{model}: {message}")),
                    other => other,
                })?;
            let mut writer = CsvWriter::create(result_file, &execution.column_names())?;
            run_system(&mut execution, &mut writer, &mut |_| {})?;
            drop(writer);
            let types: Vec<(String, std::sync::Arc<cosimo::fmu::ModelDescription>)> = execution
                .resolved
                .components
                .iter()
                .map(|c| (format!("{}.", c.name), c.description.clone()))
                .collect();
            drop(execution);
            let result = SignalTable::read(result_file)?;
            Ok(compare(&reference, &result, &options, &|column| {
                types.iter().find_map(|(prefix, md)| {
                    let name = column.strip_prefix(prefix.as_str())?;
                    md.variable(name).map(|v| kind_of_type(v.var_type))
                })
            }))
        }
    }
}

/// Apply a check's experiment overrides and start values to a system.
fn check_system(
    case: &cosimo::results::reference::Case,
    system: &mut System,
    (start, stop, step, output_interval): (Option<f64>, Option<f64>, Option<f64>, Option<f64>),
    tolerance: Option<f64>,
) -> Result<(), Error> {
    let experiment = &mut system.experiment;
    if let Some(t) = start {
        experiment.start = t;
    }
    if let Some(t) = stop {
        experiment.stop = t;
    }
    if let Some(h) = step {
        experiment.step = h;
    }
    if output_interval.is_some() {
        experiment.output_interval = output_interval;
    }
    if tolerance.is_some() {
        experiment.tolerance = tolerance;
    }
    if experiment.stop.is_nan()
        || experiment.stop <= experiment.start
        || !experiment.step.is_finite()
        || experiment.step <= 0.0
    {
        return Err(Error::Usage(format!(
            "{}: the experiment needs stop > start and a positive step size",
            case.model.display()
        )));
    }
    for (name, value) in &case.settings.start_values {
        let endpoint = Endpoint::parse(name).ok_or_else(|| {
            Error::Usage(format!(
                "startValues \"{name}\": in a system, name the component: component.NAME"
            ))
        })?;
        let component = system
            .components
            .iter_mut()
            .find(|c| c.name == endpoint.component)
            .ok_or_else(|| {
                Error::Usage(format!(
                    "startValues \"{name}\": there is no component \"{}\"",
                    endpoint.component
                ))
            })?;
        component
            .start_values
            .retain(|(n, _)| *n != endpoint.variable);
        component
            .start_values
            .push((endpoint.variable, json_value_text(value)));
    }
    Ok(())
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
    /// A JSON system file with a "stability" section (the FMU states and the start values that
    /// set them): the spectral radius of that system's one-step map with its own algorithm at
    /// its macro step, or --max-step, --map, --scan. Without a system file: the stability
    /// thesis' two-mass oscillator (--decomposition, --plane, ...).
    system: Option<PathBuf>,
    /// Thesis: decomposition of the two-mass oscillator: ff (force/force), fd
    /// (force/displacement) or dd [default: ff].
    #[arg(long, value_parser = ["ff", "fd", "dd"])]
    decomposition: Option<String>,
    /// Master algorithm [thesis default: jacobi; with a system file: the file's]. Thesis with
    /// constraint: the two masses joined rigidly (x2 - x1 = 0) with index-1 coupling of
    /// --order 2 or 3, the index-1 paper's Appendix A model.
    #[arg(long, value_parser = ["jacobi", "gauss-seidel", "implicit", "constraint"])]
    algorithm: Option<String>,
    /// Thesis, --algorithm constraint: the Appendix A ratios alpha_m, alpha_Lr, alpha_Li
    /// (Eq. 41) [default: 1,1,1].
    #[arg(long, value_delimiter = ',')]
    ratios: Option<Vec<f64>>,
    /// Extrapolation / interpolation order k [thesis default: 0; with a system file: the
    /// file's].
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=3))]
    order: Option<u8>,
    /// implicit: the thesis' extended coupling (Sect. 3.4): derivative (D) with half-step
    /// values of the forces (F/F), the force and velocity (F/D) or the velocities (D/D);
    /// integral (I) with the forces, the force and position, or the positions; k = 0, 1, 2
    /// select the C, L, Q functions. With a system file: its connections marked "halfStep".
    #[arg(long, value_parser = ["none", "derivative", "integral"])]
    extension: Option<String>,
    /// Thesis: the plane's ranges: implicit (Λr in [-2, 0], Λi in [0, 10]) or explicit
    /// ([-1, 0] x [0, 2]); the symmetric model [default: explicit].
    #[arg(long, value_parser = ["explicit", "implicit"])]
    plane: Option<String>,
    /// Grid points per axis of a map, or step sizes of --scan [default: 21].
    #[arg(long)]
    points: Option<usize>,
    /// Thesis: folder with the project's packed FMUs [default: target/fmus].
    #[arg(long)]
    fmus: Option<PathBuf>,
    /// CSV of the spectral radius per grid point (or per step size of --scan).
    #[arg(long)]
    output: Option<PathBuf>,
    /// PNG stability map.
    #[arg(long)]
    png: Option<PathBuf>,
    /// Instead of a map: the largest stable macro step, by bisection in [--h-low, --h-high]
    /// (thesis: of the physical system given by --m1 --c1 --d1 --m2 --c2 --d2 --cc --dc).
    #[arg(long)]
    max_step: bool,
    /// With a system file: the spectral radius over a grid of two parameters, --x and --y.
    #[arg(long)]
    map: bool,
    /// --map: the first axis, PARAMETER=LOW:HIGH, PARAMETER `component.parameter` or a
    /// named parameter of the file's "stability" section.
    #[arg(long, allow_hyphen_values = true)]
    x: Option<String>,
    /// --map: the second axis, PARAMETER=LOW:HIGH.
    #[arg(long, allow_hyphen_values = true)]
    y: Option<String>,
    /// With a system file: the spectral radius at --points macro steps spaced geometrically
    /// in [--h-low, --h-high].
    #[arg(long)]
    scan: bool,
    /// With a system file: the macro step of the map (or of the spectral radius) instead of
    /// the file's experiment.stepSize.
    #[arg(long)]
    step_size: Option<f64>,
    /// Thesis, --max-step: mass 1 [default: 1].
    #[arg(long)]
    m1: Option<f64>,
    /// Thesis, --max-step: stiffness of mass 1 [default: 1000].
    #[arg(long)]
    c1: Option<f64>,
    /// Thesis, --max-step: damping of mass 1 [default: 10].
    #[arg(long)]
    d1: Option<f64>,
    /// Thesis, --max-step: mass 2 [default: 1].
    #[arg(long)]
    m2: Option<f64>,
    /// Thesis, --max-step: stiffness of mass 2 [default: 1000].
    #[arg(long)]
    c2: Option<f64>,
    /// Thesis, --max-step: damping of mass 2 [default: 10].
    #[arg(long)]
    d2: Option<f64>,
    /// Thesis, --max-step: coupling stiffness [default: 1000].
    #[arg(long)]
    cc: Option<f64>,
    /// Thesis, --max-step: coupling damping [default: 10].
    #[arg(long)]
    dc: Option<f64>,
    /// --max-step, --scan: the smallest macro step [default: 1e-4].
    #[arg(long)]
    h_low: Option<f64>,
    /// --max-step, --scan: the largest macro step [default: 1].
    #[arg(long)]
    h_high: Option<f64>,
}

fn stability_command(args: &StabilityArgs) -> Result<(), Error> {
    use cosimo::analysis::linear::{
        is_stable, write_map_csv, write_scan_csv, Axis, LinearAnalyser, MapPoint,
    };
    use cosimo::analysis::stability::{
        constraint_map, max_stable_step, symmetric_map, Decomposition, Scheme, TestFmus, TwoMass,
    };
    use cosimo::master::implicit::Extension;
    // The first of `options` that was given is refused: "OPTION why".
    let refuse = |options: &[(&str, bool)], why: &str| match options.iter().find(|o| o.1) {
        Some((option, _)) => Err(Error::Usage(format!("{option} {why}"))),
        None => Ok(()),
    };
    let physical = [
        ("--m1", args.m1.is_some()),
        ("--c1", args.c1.is_some()),
        ("--d1", args.d1.is_some()),
        ("--m2", args.m2.is_some()),
        ("--c2", args.c2.is_some()),
        ("--d2", args.d2.is_some()),
        ("--cc", args.cc.is_some()),
        ("--dc", args.dc.is_some()),
    ];
    let bounds = [
        ("--h-low", args.h_low.is_some()),
        ("--h-high", args.h_high.is_some()),
    ];
    let (h_low, h_high) = (args.h_low.unwrap_or(1e-4), args.h_high.unwrap_or(1.0));
    let points = args.points.unwrap_or(21);
    let extension = args.extension.as_deref().map(|e| match e {
        "derivative" => Extension::Derivative,
        "integral" => Extension::Integral,
        _ => Extension::None,
    });
    let stable = |rho: f64| if is_stable(rho) { "stable" } else { "unstable" };
    let draw = |path: &Path, title: &str, axes: (&str, &str), map: &[MapPoint]| {
        let points: Vec<(f64, f64, bool)> = map.iter().map(|p| (p.x, p.y, p.stable())).collect();
        cosimo::results::plot::plot_stability_map(path, title, axes, &points)?;
        eprintln!("map: {}", path.display());
        Ok::<(), Error>(())
    };

    if let Some(path) = &args.system {
        // A user's system: its own algorithm (unless --algorithm, --order or --extension
        // change it) at its own macro step.
        let thesis = [
            ("--decomposition", args.decomposition.is_some()),
            ("--ratios", args.ratios.is_some()),
            ("--plane", args.plane.is_some()),
            ("--fmus", args.fmus.is_some()),
        ];
        refuse(
            &[&thesis[..], &physical[..]].concat(),
            "belongs to the stability thesis' two-mass study, which runs without a system file; with a system file, set parameters in the file or map them with --map --x ... --y ...",
        )?;
        let studies = [
            ("--max-step", args.max_step),
            ("--map", args.map),
            ("--scan", args.scan),
        ];
        if studies.iter().filter(|s| s.1).count() > 1 {
            return Err(Error::Usage(
                "--max-step, --map and --scan are separate studies: choose one".into(),
            ));
        }
        if !args.map {
            refuse(
                &[("--x", args.x.is_some()), ("--y", args.y.is_some())],
                "gives an axis of --map; add --map",
            )?;
            refuse(
                &[("--png", args.png.is_some())],
                "draws the map of --map; add --map --x ... --y ...",
            )?;
        }
        if args.max_step || args.scan {
            refuse(
                &[("--step-size", args.step_size.is_some())],
                "fixes the macro step, which --max-step and --scan vary; give --h-low and --h-high instead",
            )?;
        } else {
            refuse(
                &bounds,
                "bounds the macro step of --max-step or --scan; add one of them",
            )?;
        }
        if !args.map && !args.scan {
            refuse(
                &[
                    ("--points", args.points.is_some()),
                    ("--output", args.output.is_some()),
                ],
                "applies to --map or --scan; add one of them",
            )?;
        }
        let (mut system, study) = cosimo::analysis::study::read(path)?;
        system.experiment = Overrides {
            algorithm: args.algorithm.as_deref().and_then(AlgorithmKind::parse),
            extrapolation_order: args.order,
            extension,
            step: args.step_size,
            ..Overrides::default()
        }
        .apply(&system.experiment, Labels::SYSTEM_FILE)
        .map_err(Error::Usage)?;
        let mut analyser = LinearAnalyser::new(&system, &study)?;
        if args.max_step {
            let h = analyser.max_stable_step(h_low, h_high, 1e-3)?;
            println!("largest stable macro step: {h:.6e} s");
        } else if args.scan {
            let scan = analyser.step_scan(h_low, h_high, points)?;
            for (h, rho) in &scan {
                println!("H = {h:.6e} s: spectral radius {rho:.9} ({})", stable(*rho));
            }
            if let Some(path) = &args.output {
                write_scan_csv(path, &scan)?;
            }
        } else if args.map {
            let axis = |option: &str, text: &Option<String>| match text {
                Some(text) => Axis::parse(text).map_err(|e| Error::Usage(format!("{option} {e}"))),
                None => Err(Error::Usage(format!(
                    "--map needs {option} PARAMETER=LOW:HIGH (both --x and --y)"
                ))),
            };
            let (x, y) = (axis("--x", &args.x)?, axis("--y", &args.y)?);
            let map = analyser.parameter_map(&x, &y, points)?;
            let count = map.iter().filter(|p| p.stable()).count();
            println!(
                "{count} of {} grid points stable (spectral radius <= 1) at H = {:e} s",
                map.len(),
                analyser.step()
            );
            let axes = (x.parameter.as_str(), y.parameter.as_str());
            if let Some(out) = &args.output {
                write_map_csv(out, axes, &map)?;
            }
            if let Some(png) = &args.png {
                let title = format!(
                    "{}, {} k = {}, H = {:e} s",
                    path.file_name().unwrap_or_default().to_string_lossy(),
                    system.experiment.algorithm.kind(),
                    system.experiment.algorithm.extrapolation_order(),
                    analyser.step()
                );
                draw(png, &title, axes, &map)?;
            }
        } else {
            println!("state vector: {}", analyser.describe());
            let rho = analyser.spectral_radius()?;
            println!(
                "spectral radius at H = {:e} s: {rho:.9} ({})",
                analyser.step(),
                stable(rho)
            );
        }
        return Ok(());
    }

    // The stability thesis' two-mass oscillator.
    refuse(
        &[
            ("--map", args.map),
            ("--x", args.x.is_some()),
            ("--y", args.y.is_some()),
            ("--scan", args.scan),
            ("--step-size", args.step_size.is_some()),
        ],
        "studies a system file: cosimo stability SYSTEM.json ...",
    )?;
    let algorithm = args.algorithm.as_deref().unwrap_or("jacobi");
    let order = args.order.unwrap_or(0);
    let constraint = algorithm == "constraint";
    if constraint {
        refuse(
            &[("--decomposition", args.decomposition.is_some())],
            "cuts the two-mass oscillator for applied-force coupling; --algorithm constraint studies the rigidly coupled model",
        )?;
        refuse(
            &[("--max-step", args.max_step)],
            "analyses applied-force coupling; draw a map for --algorithm constraint",
        )?;
    } else {
        refuse(
            &[("--ratios", args.ratios.is_some())],
            "applies to --algorithm constraint only (the Appendix A ratios of the rigidly coupled model)",
        )?;
    }
    if algorithm != "implicit" {
        refuse(
            &[("--extension", args.extension.is_some())],
            "applies to the implicit algorithm only; add --algorithm implicit",
        )?;
    }
    if args.max_step {
        refuse(
            &[
                ("--plane", args.plane.is_some()),
                ("--points", args.points.is_some()),
                ("--output", args.output.is_some()),
                ("--png", args.png.is_some()),
            ],
            "belongs to a map; --max-step finds one macro step",
        )?;
    } else {
        refuse(
            &[&physical[..], &bounds[..]].concat(),
            "gives the physical system of --max-step; add --max-step",
        )?;
    }
    let decomposition = args.decomposition.as_deref().unwrap_or("ff");
    let scheme = Scheme {
        decomposition: match decomposition {
            "fd" => Decomposition::ForceDisplacement,
            "dd" => Decomposition::DisplacementDisplacement,
            _ => Decomposition::ForceForce,
        },
        algorithm: AlgorithmKind::parse(algorithm).unwrap_or(AlgorithmKind::Jacobi),
        order,
        extension: extension.unwrap_or(Extension::None),
    };
    let fmus = TestFmus::in_folder(args.fmus.as_deref().unwrap_or(Path::new("target/fmus")));
    if args.max_step {
        let model = TwoMass {
            m1: args.m1.unwrap_or(1.0),
            c1: args.c1.unwrap_or(1000.0),
            d1: args.d1.unwrap_or(10.0),
            m2: args.m2.unwrap_or(1.0),
            c2: args.c2.unwrap_or(1000.0),
            d2: args.d2.unwrap_or(10.0),
            cc: args.cc.unwrap_or(1000.0),
            dc: args.dc.unwrap_or(10.0),
        };
        let h = max_stable_step(&fmus, &model, scheme, h_low, h_high, 1e-3)?;
        println!("largest stable macro step: {h:.6e} s");
        return Ok(());
    }
    let implicit_plane = args.plane.as_deref() == Some("implicit");
    let ratios = args.ratios.clone().unwrap_or_else(|| vec![1.0; 3]);
    let map = if constraint {
        if (order != 2 && order != 3) || ratios.len() != 3 {
            return Err(Error::Usage(
                "--algorithm constraint needs --order 2 or 3 and --ratios alpha_m,alpha_Lr,alpha_Li".into(),
            ));
        }
        // The index-1 paper's squares: [-10, 0] x [0, 10] (--plane explicit) or
        // [-1000, 0] x [0, 1000] (--plane implicit).
        let size = if implicit_plane { 1000.0 } else { 10.0 };
        let ratios = (ratios[0], ratios[1], ratios[2]);
        constraint_map(&fmus, order, ratios, (-size, 0.0), (0.0, size), points)?
    } else {
        let (re, im) = if implicit_plane {
            ((-2.0, -0.02), (0.0, 10.0))
        } else {
            ((-1.0, -0.02), (0.0, 2.0))
        };
        symmetric_map(&fmus, scheme, re, im, points)?
    };
    let count = map.iter().filter(|p| p.stable()).count();
    println!(
        "{count} of {} grid points stable (spectral radius <= 1)",
        map.len()
    );
    if let Some(path) = &args.output {
        write_map_csv(path, ("lambda_re", "lambda_im"), &map)?;
    }
    if let Some(path) = &args.png {
        let title = if constraint {
            format!(
                "index-1 constraint coupling k = {order}, rigid link, ratios ({})",
                ratios
                    .iter()
                    .map(|r| r.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        } else {
            format!(
                "{} {algorithm} k = {order}, symmetric two-mass oscillator",
                decomposition.to_uppercase()
            )
        };
        let axes = (
            "Λr1 (real part of H·λ of subsystem 1)",
            "Λi1 (imaginary part)",
        );
        draw(path, &title, axes, &map)?;
    }
    Ok(())
}
