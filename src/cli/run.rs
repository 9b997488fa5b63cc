//! `cosimo run`: one FMU, a system file, an SSP or FMUs joined with --connect, on the run loop.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use clap::{Args, ValueEnum};

use super::model::ModelArgs;
use super::say;
use cosimo::numbers::{number, seconds};

use cosimo::fmu::description::{Causality, FmiVersion, Interface, StartValue, VariableType};
use cosimo::fmu::instance::InstanceOptions;
use cosimo::fs_checks::read_table;
use cosimo::master::execution::Execution;
use cosimo::master::run::{self as run_loop, Observer};
use cosimo::master::scenario::ScenarioPlayer;
use cosimo::master::transport::Transport;
use cosimo::observe::realtime::check_factor;
use cosimo::observe::ResultFile;
use cosimo::observe::{
    JsonProgress, Progress as ProgressObserver, RateMeter, RealTime, RealTimeReport,
};
use cosimo::request::{prepare_on_ranks, PreparedRun, RunRequest};
use cosimo::settings::scenario::Scenario;
use cosimo::settings::{Experiment, Overrides};
use cosimo::system::System;
use cosimo::Error;

#[derive(Args)]
pub(crate) struct RunArgs {
    /// What to run: one FMU (.fmu file or unpacked folder), a system file (.json), an SSP (.ssp
    /// file or folder, .ssd), or several components as `name=path` or bare paths (named after
    /// the file) with --connect.
    #[arg(required = true, value_name = "FMU|SYSTEM|SSP|NAME=FMU")]
    pub(crate) targets: Vec<String>,
    /// Where to write the results (repeatable: one run, several files); the extension picks
    /// the format: .csv, .mat (MAT v4 as Dymola and OpenModelica write it), .arrow (Arrow IPC
    /// stream) or .parquet (default: <FMU file name>_out.csv, or <system file name>_out.csv,
    /// in the current folder, as FMPy names them). Formerly --output-file.
    #[arg(
        short = 'o',
        long = "output",
        alias = "output-file",
        value_name = "FILE"
    )]
    pub(crate) output_file: Vec<PathBuf>,
    /// Connect an output to an input: `component.output=component.input` (repeatable).
    #[arg(long = "connect", value_name = "FROM=TO")]
    pub(crate) connections: Vec<String>,
    /// Let this connection (`component.output=component.input`, of the system file, the SSP
    /// or --connect) join variables whose units differ in dimension: the value passes
    /// unchanged, with a warning (repeatable).
    #[arg(long = "ignore-units", value_name = "FROM=TO")]
    pub(crate) ignore_units: Vec<String>,
    /// The .ssd file of an SSP to run (default: SystemStructure.ssd).
    #[arg(long)]
    pub(crate) ssd: Option<String>,
    #[command(flatten)]
    pub(crate) model: ModelArgs,
    /// With --adaptive: relative tolerance of states (ExLocal, ExMilne, ImMilne).
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) rtol: Option<f64>,
    /// With --adaptive: absolute tolerance of positions.
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) atol_position: Option<f64>,
    /// With --adaptive: absolute tolerance of velocities.
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) atol_velocity: Option<f64>,
    /// With --adaptive: relative tolerance of coupling variables (ExSLocal, ImSLocal, order control).
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) rtol_coupling: Option<f64>,
    /// With --adaptive: absolute tolerance of coupling variables.
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) atol_coupling: Option<f64>,
    /// CSV with a time column and one column per input (in systems component.NAME): continuous
    /// Float inputs interpolated; discrete, integer, Boolean and String inputs held; arrays as
    /// space-separated values in one cell.
    #[arg(long, value_name = "FILE")]
    pub(crate) input_file: Option<PathBuf>,
    /// Variable to record (repeatable; in systems component.NAME; default: every output).
    #[arg(long = "output-variable", value_name = "NAME")]
    pub(crate) output_variables: Vec<String>,
    /// Expect this FMI version (2 or 3) and refuse an FMU of the other.
    #[arg(long, value_parser = ["2", "3"])]
    pub(crate) fmi_version: Option<String>,
    /// Print every FMI call with its arguments and status to stderr.
    #[arg(long)]
    pub(crate) log_fmi_calls: bool,
    /// Turn on the FMU's debug logging and print its messages.
    #[arg(long)]
    pub(crate) debug_logging: bool,
    /// Pace macro steps to the wall clock, FACTOR times real time (default 1; 2 runs twice as
    /// fast): each step waits until its simulated time is due. The summary reports the total
    /// and rolling real-time factor, the steps that finished late and the worst lateness;
    /// results are the same as without pacing. Put it after the FMU or write
    /// --real-time=FACTOR.
    #[arg(
        long,
        value_name = "FACTOR",
        num_args = 0..=1,
        default_missing_value = "1",
        allow_negative_numbers = true,
        value_parser = real_time_factor
    )]
    pub(crate) real_time: Option<f64>,
    /// How progress is shown: bar (on a terminal, for runs longer than a second; the default),
    /// jsonl (one JSON object per line on stderr, or in --progress-file: status, time,
    /// fraction, steps, wall, real_time_factor, rolling_factor; at most ten lines a second plus
    /// the first and the last), none.
    #[arg(long, value_enum, value_name = "HOW")]
    pub(crate) progress: Option<ProgressKind>,
    /// Write the progress lines to FILE instead of stderr (implies --progress jsonl).
    #[arg(long, value_name = "FILE")]
    pub(crate) progress_file: Option<PathBuf>,
    /// Play a scenario: timed events that override, bias or reset variables, in libcosim's
    /// format (JSON, or YAML for .yaml / .yml), as `cosim run --scenario` reads it. Every event
    /// is checked before the start; those that took effect are listed in the summary.
    #[arg(long, value_name = "FILE")]
    pub(crate) scenario: Option<PathBuf>,
    /// Print the run's summary as JSON on stdout (what ran, steps, rows, times, the real-time
    /// figures, the scenario events that took effect), for programs and CI jobs; printed also
    /// for a run that fails, with the error.
    #[arg(long)]
    pub(crate) json: bool,
    /// Write the run's summary as JSON (as --json prints it) to FILE. Formerly --summary-json.
    #[arg(long, value_name = "FILE", alias = "summary-json")]
    pub(crate) json_file: Option<PathBuf>,
    /// Under mpirun: which MPI rank steps each component, one line `NAME RANK` per component
    /// (`#` starts a comment line); every component named once, every rank given one. Wins
    /// over the ranks the system file or the SSP gives; without either, the components are
    /// split along the coupling order, balanced by their step costs measured in a short trial.
    /// Refused without mpirun.
    #[arg(long, value_name = "FILE")]
    pub(crate) partition: Option<PathBuf>,
    /// Under mpirun: time every component's steps over the whole run and write to FILE the
    /// split along the coupling order those times balance best, for the next run's
    /// --partition (the start-up trial sees only the first steps). Refused without mpirun
    /// and with --parallel.
    #[arg(long, value_name = "FILE")]
    pub(crate) partition_out: Option<PathBuf>,
    /// Print nothing but errors.
    #[arg(long, short)]
    pub(crate) quiet: bool,
}

/// How `run` shows its progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ProgressKind {
    /// A progress bar on a terminal.
    Bar,
    /// JSON lines for programs.
    Jsonl,
    /// Nothing.
    None,
}

/// The FACTOR of --real-time: a positive finite number.
fn real_time_factor(text: &str) -> Result<f64, String> {
    let factor: f64 = text.trim().parse().map_err(|_| {
        format!(
            "'{text}' is not a number: the real-time factor is a positive number (1 is real \
             time, 2 twice as fast); put the FMU before --real-time or write --real-time=FACTOR"
        )
    })?;
    check_factor(factor)?;
    Ok(factor)
}

/// The progress lines' stream: --progress-file, else stderr.
fn progress_lines(args: &RunArgs) -> Result<Option<Box<dyn std::io::Write + Send>>, Error> {
    let kind = match (args.progress, &args.progress_file) {
        (Some(kind @ (ProgressKind::Bar | ProgressKind::None)), Some(_)) => {
            return Err(Error::Usage(format!(
                "--progress-file takes the JSON progress lines, but --progress is {}: use --progress jsonl or leave it out",
                if kind == ProgressKind::Bar { "bar" } else { "none" }
            )))
        }
        (Some(kind), _) => kind,
        (None, Some(_)) => ProgressKind::Jsonl,
        (None, None) => ProgressKind::Bar,
    };
    if kind != ProgressKind::Jsonl {
        return Ok(None);
    }
    Ok(Some(match &args.progress_file {
        Some(path) => Box::new(std::fs::File::create(path).map_err(|e| {
            Error::Usage(format!(
                "--progress-file {}: cannot create it: {e}",
                path.display()
            ))
        })?),
        None => Box::new(std::io::stderr()),
    }))
}

/// How a run that did not fail ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// At the stop time, or where an FMU asked to terminate.
    Finished,
    /// Stopped by this signal (Ctrl-C, kill, a hang-up) after a macro step, its rows flushed
    /// and its extracted FMUs removed: the process then ends by that signal, as it would have
    /// without a handler (a shell reports 128 + its number: 130 for Ctrl-C).
    Interrupted(i32),
}

/// The signals that stop a run: it ends after the macro step under way and keeps its rows.
/// `stop` says that one came, `signal` which; a second one ends the process at once (exit
/// code 128 + its number). A signal ignored at start (`nohup`) stays ignored.
struct Signals {
    stop: Arc<AtomicBool>,
    signal: Arc<AtomicUsize>,
}

fn stop_on_signals() -> Result<Signals, Error> {
    let signals = Signals {
        stop: Arc::new(AtomicBool::new(false)),
        signal: Arc::new(AtomicUsize::new(0)),
    };
    #[cfg(unix)]
    {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        for signal in [SIGINT, SIGTERM, SIGHUP] {
            if ignored(signal) {
                continue;
            }
            let failed = |e: std::io::Error| {
                Error::Internal(format!("cannot install the run's signal handlers: {e}"))
            };
            // The shutdown first: it ends the process only when the flag was set before.
            signal_hook::flag::register_conditional_shutdown(
                signal,
                128 + signal,
                signals.stop.clone(),
            )
            .map_err(failed)?;
            let number = usize::try_from(signal).unwrap_or_default();
            signal_hook::flag::register_usize(signal, signals.signal.clone(), number)
                .map_err(failed)?;
            signal_hook::flag::register(signal, signals.stop.clone()).map_err(failed)?;
        }
    }
    Ok(signals)
}

/// Whether `signal` is ignored now (as `nohup` leaves SIGHUP).
#[cfg(unix)]
fn ignored(signal: i32) -> bool {
    // SAFETY: a zeroed sigaction is a valid out-parameter; a null new action only queries.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, std::ptr::null(), &mut current) == 0
            && current.sa_sigaction == libc::SIG_IGN
    }
}

/// Ends the run after the step under way once a signal came.
struct Interrupt(Arc<AtomicBool>);

impl Observer for Interrupt {
    fn stop_requested(&mut self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

pub(crate) fn run(args: &RunArgs) -> Result<Ended, Error> {
    let transport = match start_transport() {
        Ok(transport) => transport,
        // Launched by mpirun without MPI: every rank gets the error; rank 0 says it.
        Err(error) if super::sweep::launch_rank() != 0 => {
            std::process::exit(i32::from(crate::exit_code(&error)))
        }
        Err(error) => return Err(error),
    };
    match transport {
        Some(transport) if transport.rank() != 0 => follow(args, transport),
        transport => lead(args, transport),
    }
}

/// Under `mpirun -n K` (K > 1): the MPI transport between the ranks; `None` without mpirun.
#[cfg(feature = "mpi")]
fn start_transport() -> Result<Option<Arc<dyn Transport>>, Error> {
    match cosimo::sweep::mpi_launch_size() {
        None => Ok(None),
        Some(_) => Ok(cosimo::distribute::mpi::MpiTransport::start()?
            .map(|t| Arc::new(t) as Arc<dyn Transport>)),
    }
}

/// Without the feature `mpi`, a run under `mpirun -n K` (K > 1) is refused: every process would
/// run the whole system and write the same files.
#[cfg(not(feature = "mpi"))]
fn start_transport() -> Result<Option<Arc<dyn Transport>>, Error> {
    match cosimo::sweep::mpi_launch_size() {
        None => Ok(None),
        Some(size) => Err(Error::Usage(format!(
            "cosimo run was started as {size} MPI processes (mpirun), but this cosimo was built \
             without MPI: each process would run the whole system and write the same files. \
             Build it with the feature: cargo build --release --features mpi (it needs an MPI \
             library, e.g. Debian's libopenmpi-dev, and libclang-dev), or run without mpirun"
        ))),
    }
}

/// A rank other than 0 under `mpirun`: the same run over its own components, quietly; rank 0
/// writes the results and says what happened. An error ends this process with its exit code
/// and without a word (rank 0 prints it), once MPI is finalised.
fn follow(args: &RunArgs, transport: Arc<dyn Transport>) -> Result<Ended, Error> {
    let result = (|| {
        let scenario = read_scenario(args)?;
        let request = request(args)?;
        let mut prepared = prepare_on_ranks(&request, Some(transport.clone()), &mut |_| {})?;
        // Every rank plays the scenario (control is replicated); owners apply its sets.
        let start = prepared.system.experiment.start;
        let player = scenario
            .map(|s| ScenarioPlayer::new(&prepared.execution, Arc::new(s), start))
            .transpose()?;
        let mut observers: Vec<&mut dyn Observer> = Vec::new();
        run_loop::run_with_scenario(&mut prepared.execution, player, &mut observers)
    })();
    // The last handle: MPI is finalised here.
    drop(transport);
    match result {
        Ok(_) => Ok(Ended::Finished),
        // Rank 0 says what went wrong; this rank only ends with the same code. mpirun ends the
        // job as soon as one rank exits with an error, so this one gives rank 0 a moment to say
        // it first (without, rank 0 was sometimes cut short before its message).
        Err(error) => {
            std::thread::sleep(std::time::Duration::from_secs(2));
            std::process::exit(i32::from(crate::exit_code(&error)))
        }
    }
}

/// The scenario of `--scenario`, read (every rank reads the same file).
fn read_scenario(args: &RunArgs) -> Result<Option<Scenario>, Error> {
    args.scenario
        .as_deref()
        .map(|path| Scenario::read(path).map_err(Error::Usage))
        .transpose()
}

/// The run in one process, or rank 0 of a run under `mpirun` (`transport`): it writes the
/// results and the summary.
fn lead(args: &RunArgs, transport: Option<Arc<dyn Transport>>) -> Result<Ended, Error> {
    let signals = stop_on_signals()?;
    let quiet = args.quiet;
    let scenario = read_scenario(args)?;
    let request = request(args)?;
    let prepared = prepare_on_ranks(&request, transport, &mut |warning| {
        if !quiet {
            say!("warning: {warning}");
        }
    })?;
    let PreparedRun {
        mut execution,
        system,
        name,
        single_fmu,
        sources,
        package: _package,
        partition,
    } = prepared;
    if let (false, Some(partition)) = (quiet, &partition) {
        let names: Vec<String> = system.components.iter().map(|c| c.name.clone()).collect();
        say!("partition over {}", partition.describe(&names));
    }
    if !quiet && single_fmu {
        if let Some(warning) = long_co_simulation(&execution, &system, request.interface) {
            say!("warning: {warning}");
        }
    }
    if !quiet && !single_fmu {
        let driven = request.inputs.as_deref().map_or(&[][..], |t| t.columns());
        if let Some(warning) = unconnected_inputs(&execution, driven) {
            say!("warning: {warning}");
        }
    }
    let output_files = if args.output_file.is_empty() {
        vec![default_output(args, &name, single_fmu)]
    } else {
        args.output_file.clone()
    };
    let sources: Vec<&Path> = sources.iter().map(PathBuf::as_path).collect();
    for (k, output_file) in output_files.iter().enumerate() {
        refuse_overwriting(output_file, &sources, args)?;
        ResultFile::format_of(output_file)?;
        if output_files[..k].contains(output_file) {
            return Err(Error::Usage(format!(
                "-o/--output {} is given twice; name each result file once",
                output_file.display()
            )));
        }
    }
    let shown_files = output_files
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let lines = progress_lines(args)?;
    let experiment = &system.experiment;
    let player = scenario
        .map(|s| ScenarioPlayer::new(&execution, Arc::new(s), experiment.start))
        .transpose()?;
    let columns = execution.result_columns();
    let mut writers = Vec::with_capacity(output_files.len());
    for output_file in &output_files {
        writers.push(ResultFile::create(output_file, &columns, &mut |warning| {
            if !quiet {
                say!("warning: {warning}");
            }
        })?);
    }
    cosimo::fmu::crash::run_started();
    cosimo::fmu::crash::results_file(Path::new(&shown_files));
    let mut writer = OnDisk {
        writers: &mut writers,
        last_row: None,
    };
    let mut pacing = args.real_time.map(RealTime::new).transpose()?;
    let mut json = lines.map(|out| JsonProgress::new(out, experiment.start, experiment.stop));
    // The bar shares stderr with the JSON lines: one or the other.
    let bar = json.is_none() && args.progress != Some(ProgressKind::None);
    let mut progress = Progress::new(args.quiet || !bar, experiment.start, experiment.stop);
    let mut shown = ProgressObserver(|t| progress.update(t));
    let mut interrupt = Interrupt(signals.stop.clone());
    // Pacing comes before the progress observers, so they measure the paced time.
    let mut observers: Vec<&mut dyn Observer> = vec![&mut writer];
    if let Some(pacing) = pacing.as_mut() {
        observers.push(pacing);
    }
    if let Some(json) = json.as_mut() {
        observers.push(json);
    }
    observers.push(&mut shown);
    observers.push(&mut interrupt);
    let result = run_loop::run_with_scenario(&mut execution, player, &mut observers);
    drop(observers);
    let last_row = writer.last_row;
    if result.is_ok() {
        // Every row is flushed: a crash freeing or unloading an FMU from here on is a warning.
        cosimo::fmu::crash::run_finished(0);
    }
    progress.finish();
    let interrupted = signals.stop.load(Ordering::Relaxed) && result.is_ok();
    if args.json || args.json_file.is_some() {
        let summary = summary_json(
            &name,
            experiment,
            &result,
            interrupted,
            pacing.as_ref(),
            &output_files,
        )?;
        if let Some(path) = &args.json_file {
            std::fs::write(path, summary.clone() + "\n").map_err(|e| Error::io(path, e))?;
        }
        if args.json {
            super::write_out(format_args!("{summary}\n"))?;
        }
    }
    let stats = result.inspect_err(|e| {
        if let Error::Simulation { .. } = e {
            say!("{}", kept_rows(last_row, &shown_files, output_files.len()));
        }
    })?;
    if let Some(path) = &args.partition_out {
        let ranks = stats.ranks.len();
        cosimo::distribute::write_partition(path, &execution, &stats.component_seconds, ranks)?;
        if !args.quiet {
            say!(
                "partition for mpirun -n {ranks}, balanced by the run's stepping times: {}",
                path.display()
            );
        }
    }
    if !args.quiet {
        let (what, terminated) = if interrupted {
            let what = if single_fmu {
                name
            } else {
                format!("{} components", system.components.len())
            };
            (what, "interrupted")
        } else if single_fmu {
            (name, "the FMU asked to terminate")
        } else {
            (
                format!("{} components", system.components.len()),
                "an FMU asked to terminate",
            )
        };
        print_summary(&what, experiment, &stats, terminated);
        if let Some(pacing) = &pacing {
            print_real_time(&pacing.report());
        }
        if args.scenario.is_some() {
            print_scenario(&stats.scenario);
        }
        if !interrupted {
            say!("results: {shown_files}");
        }
    }
    if interrupted {
        // Said even with --quiet: the run did not do what was asked.
        match last_row {
            Some(row) => say!(
                "interrupted at t = {}, rows up to t = {} kept in {shown_files}",
                number(stats.end_time),
                number(row),
            ),
            None => say!(
                "interrupted at t = {}, no rows written to {shown_files}",
                number(stats.end_time),
            ),
        }
        let signal = i32::try_from(signals.signal.load(Ordering::Relaxed)).unwrap_or_default();
        return Ok(Ended::Interrupted(signal));
    }
    Ok(Ended::Finished)
}

/// Internal steps from which a Co-Simulation run may take hours (a microsecond or more each).
const HOURS_OF_STEPS: f64 = 1e9;

/// One FMU run as Co-Simulation although it also has Model Exchange, on more internal steps
/// than take minutes: its own internal step (its fixed internal step size, else its default
/// experiment's step size) or the macro step if smaller, over the run's time. A stiff model
/// (Robertson over 1e8 s) finishes in milliseconds under a variable-step solver.
fn long_co_simulation(
    execution: &Execution,
    system: &System,
    interface: Option<Interface>,
) -> Option<String> {
    let component = execution.resolved.components.first()?;
    let description = &component.description;
    let chosen = system
        .components
        .first()
        .and_then(|c| c.interface)
        .or(interface);
    if chosen == Some(Interface::ModelExchange) || description.model_exchange.is_none() {
        return None;
    }
    let experiment = &system.experiment;
    let internal = description
        .co_simulation
        .as_ref()?
        .fixed_internal_step_size
        .or_else(|| description.default_experiment.as_ref()?.step_size)
        .filter(|h| *h > 0.0)?;
    let step = internal.min(experiment.step);
    let steps = (experiment.stop - experiment.start) / step;
    (steps >= HOURS_OF_STEPS).then(|| {
        format!(
            "{} as Co-Simulation takes about {steps:.0e} internal steps of {} to t = {}, which may take hours; it also has Model Exchange: --interface me integrates it with cosimo's variable-step solver",
            description.model_name,
            seconds(step),
            seconds(experiment.stop)
        )
    })
}

/// The inputs of a system's components that no connection and no input-file column (named in
/// `driven`) sets: they stay at their start values for the whole run, which is worth a word.
fn unconnected_inputs(execution: &Execution, driven: &[String]) -> Option<String> {
    /// Inputs named in the warning; the rest are counted.
    const NAMED: usize = 10;
    let resolved = &execution.resolved;
    // Sets, not scans: a system of 100,000 components has as many inputs and connections.
    let connected: std::collections::HashSet<(usize, usize)> = resolved
        .connections
        .iter()
        // An array connected element by element counts as the array.
        .map(|k| {
            let component = &resolved.components[k.to_component];
            (k.to_component, component.declared_variable(k.to_variable))
        })
        .collect();
    let driven: std::collections::HashSet<&str> = driven.iter().map(String::as_str).collect();
    let mut unconnected = Vec::new();
    for (c, component) in resolved.components.iter().enumerate() {
        for (v, variable) in component.description.variables.iter().enumerate() {
            if variable.causality != Causality::Input || variable.var_type == VariableType::Clock {
                continue;
            }
            let name = format!("{}.{}", component.name, variable.name);
            if connected.contains(&(c, v)) || driven.contains(name.as_str()) {
                continue;
            }
            let start = component
                .start_values
                .iter()
                .find(|(i, _)| *i == v)
                .map(|(_, value)| value)
                .or(variable.start.as_ref());
            unconnected.push(match start {
                Some(value) => format!("{name} ({})", start_text(value)),
                None => name,
            });
        }
    }
    if unconnected.is_empty() {
        return None;
    }
    let count = unconnected.len();
    let more = count.saturating_sub(NAMED);
    unconnected.truncate(NAMED);
    let mut names = unconnected.join(", ");
    if more > 0 {
        names.push_str(&format!(" and {more} more"));
    }
    Some(if count == 1 {
        format!("1 input is connected to nothing and stays at its start value: {names}")
    } else {
        format!("{count} inputs are connected to nothing and stay at their start values: {names}")
    })
}

/// A start value as a system file writes it: one value, or an array's values in brackets.
fn start_text(value: &StartValue) -> String {
    fn join<T: std::fmt::Display>(values: &[T]) -> String {
        match values {
            [one] => one.to_string(),
            many => format!(
                "[{}]",
                many.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
        }
    }
    match value {
        StartValue::Float(v) => join(v),
        StartValue::Int(v) => join(v),
        StartValue::UInt(v) => join(v),
        StartValue::Bool(v) => join(v),
        StartValue::String(v) => join(&v.iter().map(|s| format!("{s:?}")).collect::<Vec<_>>()),
        StartValue::Binary(v) => format!("{} binary value(s)", v.len()),
    }
}

/// The command line as a library run request (clap has checked the syntax of its options).
pub(crate) fn request(args: &RunArgs) -> Result<RunRequest, Error> {
    let model = &args.model;
    Ok(RunRequest {
        targets: args.targets.clone(),
        connections: args.connections.clone(),
        ignore_units: args.ignore_units.clone(),
        ssd: args.ssd.clone(),
        overrides: Overrides {
            rtol: args.rtol,
            atol_position: args.atol_position,
            atol_velocity: args.atol_velocity,
            rtol_coupling: args.rtol_coupling,
            atol_coupling: args.atol_coupling,
            ..model.overrides()
        },
        start_values: model.start_values.clone(),
        output_variables: args.output_variables.clone(),
        inputs: args
            .input_file
            .as_deref()
            .map(|p| read_table(p, "the input file (--input-file)"))
            .transpose()?
            .map(Arc::new),
        fmi_version: args.fmi_version.as_deref().map(|v| {
            if v == "2" {
                FmiVersion::Fmi2
            } else {
                FmiVersion::Fmi3
            }
        }),
        threads: model.threads,
        instance: InstanceOptions {
            log_fmi_calls: args.log_fmi_calls,
            logging_on: args.debug_logging,
            ..model.instance()
        },
        allow_non_finite: model.allow_non_finite,
        isolate: model.isolate,
        worker: model.worker()?,
        worker_processes: model.worker_processes(),
        interface: model.interface(),
        partition: args.partition.clone(),
        partition_out: args.partition_out.clone(),
    })
}

/// The summary of a run on stderr: what ran, how far, how fast, and the algorithm's figures.
fn print_summary(
    what: &str,
    experiment: &Experiment,
    stats: &cosimo::master::RunStatistics,
    terminated: &str,
) {
    say!(
        "{what}: simulated {} to {} in {} macro steps ({} FMI calls, {} rows) in {:.3} s wall time, real-time factor {:.1}{}",
        seconds(experiment.start),
        seconds(stats.end_time),
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
    if stats.shortened_for_output > 0 {
        say!("{}", shortened_note(experiment, stats.shortened_for_output));
    }
    for r in &stats.ranks {
        let threads = match r.threads {
            1 => String::new(),
            n => format!(" (its FMUs on {n} threads)"),
        };
        say!(
            "MPI rank {}: {:.3} s stepping its FMUs{threads}, {:.3} s saving and restoring FMU states, {:.3} s interface computations, {:.3} s communication and waiting",
            r.rank,
            r.integration,
            r.states,
            r.interface,
            r.communication
        );
    }
    if let Some(control) = &stats.control {
        let histogram: Vec<String> = control
            .order_histogram
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(k, n)| format!("k={k}: {n}"))
            .collect();
        say!(
            "step control: {} accepted, {} rejected, {} corrector iterations, {} macro-step computations, H from {} to {}, orders {}",
            control.accepted,
            control.rejected,
            control.corrector_iterations,
            control.macro_steps,
            seconds(control.smallest_step),
            seconds(control.largest_step),
            histogram.join(", ")
        );
    } else if stats.corrector_iterations > 0 {
        say!(
            "corrector: {} Newton iterations",
            stats.corrector_iterations
        );
    }
    if let Some(integrator) = stats.integrator {
        say!(
            "Model Exchange: {} integrator steps, {} evaluations of the derivatives, {} events",
            integrator.steps,
            integrator.rhs_evaluations,
            integrator.events
        );
    }
    if let Some(parallel) = &stats.parallel {
        say!("{parallel}");
    }
}

/// The note that output points changed the macro steps, and why.
fn shortened_note(experiment: &Experiment, shortened: u64) -> String {
    let steps = if shortened == 1 {
        "1 macro step was".to_string()
    } else {
        format!("{shortened} macro steps were")
    };
    let why = match experiment.output_interval {
        Some(interval) if !is_multiple(interval, experiment.step) => format!(
            " (output interval {} is not a multiple of the step {})",
            seconds(interval),
            seconds(experiment.step)
        ),
        _ => String::new(),
    };
    format!("note: {steps} shortened to land on output points{why}")
}

/// Whether `interval` is a whole number (at least 1) of `step`s, to rounding.
fn is_multiple(interval: f64, step: f64) -> bool {
    let ratio = interval / step;
    ratio.round() >= 1.0 && (ratio - ratio.round()).abs() <= 1e-9 * ratio.max(1.0)
}

/// How a paced run kept pace, after the summary line.
/// The default results file: named after the FMU's (or the system's) file, as FMPy does (a
/// model name may hold spaces or a `/`).
fn default_output(args: &RunArgs, name: &str, single_fmu: bool) -> PathBuf {
    let stem = single_fmu
        .then(|| args.targets.first())
        .flatten()
        .map(|target| Path::new(target.trim_end_matches('/')))
        .and_then(Path::file_stem)
        .and_then(|s| s.to_str())
        .unwrap_or(name);
    PathBuf::from(format!("{stem}_out.csv"))
}

/// What a failed run left in its results file: the rows up to the last one written, or none.
fn kept_rows(last_row: Option<f64>, shown_files: &str, files: usize) -> String {
    match last_row {
        Some(t) => format!("results up to t = {} are in {shown_files}", number(t)),
        None if files == 1 => {
            format!("no result rows were written: {shown_files} holds the header only")
        }
        None => format!("no result rows were written: {shown_files} hold the header only"),
    }
}

/// `--json` / `--json-file`: the run's figures (or its error) as one JSON object.
fn summary_json(
    name: &str,
    experiment: &Experiment,
    result: &Result<cosimo::master::RunStatistics, Error>,
    interrupted: bool,
    pacing: Option<&RealTime>,
    output_files: &[PathBuf],
) -> Result<String, Error> {
    let shown = |p: &PathBuf| p.display().to_string();
    let mut summary = serde_json::json!({
        "name": name,
        "results": output_files.first().map(shown).unwrap_or_default(),
        "result_files": output_files.iter().map(shown).collect::<Vec<_>>(),
        "start_time": experiment.start,
        "stop_time": experiment.stop,
    });
    match result {
        Ok(stats) => {
            summary["status"] = if interrupted {
                "interrupted"
            } else {
                "finished"
            }
            .into();
            summary["end_time"] = stats.end_time.into();
            summary["steps"] = stats.steps.into();
            summary["steps_shortened_for_output"] = stats.shortened_for_output.into();
            summary["rows"] = stats.rows.into();
            summary["fmi_calls"] = stats.fmi_calls.into();
            summary["wall_seconds"] = stats.wall_seconds.into();
            summary["terminated_early"] = stats.terminated_early.into();
            summary["real_time_factor"] = stats.real_time_factor(experiment.start).into();
            summary["scenario"] = serde_json::to_value(&stats.scenario).unwrap_or_default();
            if !stats.ranks.is_empty() {
                summary["ranks"] = stats
                    .ranks
                    .iter()
                    .map(|r| {
                        serde_json::json!({
                            "rank": r.rank,
                            "integration_seconds": r.integration,
                            "state_seconds": r.states,
                            "interface_seconds": r.interface,
                            "communication_seconds": r.communication,
                            "threads": r.threads,
                        })
                    })
                    .collect();
            }
        }
        Err(error) => {
            summary["status"] = "failed".into();
            summary["error"] = error.to_string().into();
            if let Error::Simulation { time, .. } = error {
                summary["end_time"] = (*time).into();
            }
        }
    }
    if let Some(pacing) = pacing {
        let report = pacing.report();
        summary["real_time"] = serde_json::json!({
            "target_factor": report.target_factor,
            "total_factor": report.total_factor,
            "rolling_factor": report.rolling_factor,
            "steps": report.steps,
            "overruns": report.overruns,
            "worst_lateness": report.worst_lateness,
        });
    }
    serde_json::to_string_pretty(&summary)
        .map_err(|e| Error::Internal(format!("the summary as JSON: {e}")))
}

/// The scenario events that took effect, one line each.
fn print_scenario(events: &[cosimo::master::scenario::AppliedEvent]) {
    let changes = events.iter().filter(|e| e.action != "end").count();
    say!("scenario: {changes} event(s) took effect");
    for event in events {
        if event.action == "end" {
            say!(
                "  t = {}: the scenario ended; every change undone",
                number(event.time)
            );
        } else {
            say!(
                "  t = {}: {} {}{} ({})",
                number(event.time),
                event.action,
                event.variable,
                event
                    .value
                    .as_ref()
                    .map_or(String::new(), |v| format!(" with {v}")),
                event.location
            );
        }
    }
}

fn print_real_time(report: &RealTimeReport) {
    let late = if report.overruns == 0 {
        "no step finished late".to_owned()
    } else {
        format!(
            "{} of {} steps finished late, the worst by {:.3} ms",
            report.overruns,
            report.steps,
            report.worst_lateness * 1e3
        )
    };
    say!(
        "real time x{}: {:.3} s simulated in {:.3} s wall time, real-time factor {:.3} (rolling {:.3} over the last {} s), {late}",
        report.target_factor,
        report.simulated_seconds,
        report.wall_seconds,
        report.total_factor,
        report.rolling_factor,
        cosimo::observe::realtime::ROLLING_WINDOW.as_secs_f64(),
    );
}

/// A progress bar on a terminal, shown only for runs that last longer than a second, with the
/// rolling real-time factor.
pub(crate) struct Progress {
    pub(crate) bar: Option<indicatif::ProgressBar>,
    pub(crate) start: f64,
    pub(crate) stop: f64,
    pub(crate) started: std::time::Instant,
    /// When the bar was last drawn: it is redrawn ten times a second at most, not per step.
    pub(crate) drawn: std::time::Instant,
    /// Simulated against wall time, sampled when the bar is drawn.
    pub(crate) rate: RateMeter,
}

impl Progress {
    fn new(quiet: bool, start: f64, stop: f64) -> Progress {
        let bar = (!quiet && std::io::IsTerminal::is_terminal(&std::io::stderr())).then(|| {
            let bar = indicatif::ProgressBar::hidden();
            bar.set_length(1000);
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{bar:40} {percent:>3}% t = {msg}, {elapsed} elapsed, {eta} left",
            ) {
                bar.set_style(style);
            }
            bar.set_message(format!("{start} s, first step running"));
            // A first step that takes long (a slow FMU, a stiff start) shows the bar too: the
            // steps' updates cannot, there are none yet. Off the stepping thread; it ends
            // after the second whether it showed the bar or not.
            let watched = bar.clone();
            let _ = std::thread::Builder::new()
                .name("progress".into())
                .spawn(move || {
                    std::thread::sleep(std::time::Duration::from_secs(1));
                    if watched.is_hidden() && !watched.is_finished() {
                        watched.set_draw_target(indicatif::ProgressDrawTarget::stderr());
                        watched.enable_steady_tick(std::time::Duration::from_millis(250));
                    }
                });
            bar
        });
        Progress {
            bar,
            start,
            stop,
            started: std::time::Instant::now(),
            drawn: std::time::Instant::now(),
            rate: RateMeter::default(),
        }
    }

    fn update(&mut self, t: f64) {
        let Some(bar) = &self.bar else { return };
        let now = std::time::Instant::now();
        if now.duration_since(self.drawn) < std::time::Duration::from_millis(100) {
            return;
        }
        self.drawn = now;
        self.rate.record(now, t);
        if bar.is_hidden() && self.started.elapsed().as_secs_f64() > 1.0 {
            bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
        }
        bar.set_position((1000.0 * (t - self.start) / (self.stop - self.start)) as u64);
        let rolling = self.rate.rolling();
        bar.set_message(if rolling.is_finite() {
            format!("{t:.6} s, real-time factor {rolling:.2}")
        } else {
            format!("{t:.6} s")
        });
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// The result writers, telling the crash handler the time of the last row on disk.
struct OnDisk<'a> {
    writers: &'a mut [ResultFile],
    /// The last row written, flushed or not.
    last_row: Option<f64>,
}

impl OnDisk<'_> {
    fn note(&self) {
        // On disk in every file a killed run leaves readable (Parquet is complete at the end).
        let flushed = self.writers.iter().all(|w| !w.streams() || !w.pending());
        if let Some(t) = self.last_row.filter(|_| flushed) {
            cosimo::fmu::crash::row_on_disk(t);
        }
    }
}

impl Observer for OnDisk<'_> {
    fn started(&mut self, columns: &[String]) -> Result<(), Error> {
        self.writers.iter_mut().try_for_each(|w| w.started(columns))
    }
    fn row(&mut self, row: &cosimo::master::record::Row) -> Result<(), Error> {
        // Every file takes the row, even after one fails to: the others keep it.
        let mut result = Ok(());
        for writer in self.writers.iter_mut() {
            let written = writer.row(row);
            if result.is_ok() {
                result = written;
            }
        }
        result?;
        self.last_row = Some(row.time);
        self.note();
        Ok(())
    }
    fn stepped(&mut self, time: f64) {
        for writer in self.writers.iter_mut() {
            writer.stepped(time);
        }
        self.note();
    }
    fn finished(&mut self, stats: &cosimo::master::RunStatistics) -> Result<(), Error> {
        // Every file is closed, even after one fails; the first failure is the run's.
        let mut result = Ok(());
        for writer in self.writers.iter_mut() {
            let closed = writer.finished(stats);
            if result.is_ok() {
                result = closed;
            }
        }
        result
    }
    fn failed(&mut self, error: &Error) {
        for writer in self.writers.iter_mut() {
            writer.failed(error);
        }
    }
    fn restored(&mut self, rows: u64, time: f64) {
        for writer in self.writers.iter_mut() {
            writer.restored(rows, time);
        }
    }
}

/// The results file must not be one of the run's own inputs (an FMU, the system file, the
/// input file): writing it would destroy them.
fn refuse_overwriting(output: &Path, inputs: &[&Path], args: &RunArgs) -> Result<(), Error> {
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    let input_file = args.input_file.as_deref();
    if let Some(clobbered) = inputs
        .iter()
        .copied()
        .chain(input_file)
        .find(|p| same(output, p))
    {
        return Err(Error::Usage(format!(
            "-o/--output {} is {}, an input of the run: writing the results would overwrite it; choose another file",
            output.display(),
            clobbered.display()
        )));
    }
    Ok(())
}
