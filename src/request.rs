//! What to run and how, as a front end asks for it (the command line, the Python module): one
//! place that turns such a request into an instantiated run, so every front end loads,
//! overrides, checks and names things the same way.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::fmu::description::{FmiVersion, Interface};
use crate::fmu::instance::InstanceOptions;
use crate::fmu::values::{check_start_value_allowed, find_variable, parse_start_values};
use crate::fmu::worker::WorkerOptions;
use crate::master::execution::{Execution, RunOptions};
use crate::settings::{Experiment, Overrides};
use crate::system::load::{load, Target};
use crate::system::ssp::SspPackage;
use crate::system::{Endpoint, System};
use crate::table::Table;
use crate::{Error, Result};

/// A run as a front end asks for it; options are named as the command line names them.
#[derive(Clone, Default)]
pub struct RunRequest {
    /// One FMU, a system file, an SSP, or components `name=path` / paths (with `connections`).
    pub targets: Vec<String>,
    /// `component.output=component.input` joining the components of `targets`.
    pub connections: Vec<String>,
    /// Connections (`FROM=TO`) allowed to join variables whose units differ in dimension.
    pub ignore_units: Vec<String>,
    /// The .ssd file of an SSP.
    pub ssd: Option<String>,
    /// Settings that win over the file's (or the FMU's default experiment).
    pub overrides: Overrides,
    /// Start values and parameters as `NAME=VALUE` (`component.NAME=VALUE` in systems).
    pub start_values: Vec<String>,
    /// Variables to record (empty: every output).
    pub output_variables: Vec<String>,
    /// Inputs driven from a table.
    pub inputs: Option<Arc<Table>>,
    /// Refuse an FMU of the other FMI version.
    pub fmi_version: Option<FmiVersion>,
    /// Worker threads of parallel stepping (0: one per core).
    pub threads: usize,
    /// Options of every instance (logging, FMI call tracing, event mode).
    pub instance: InstanceOptions,
    /// Record and pass on NaN and infinite outputs.
    pub allow_non_finite: bool,
    /// Host every FMU in a worker process.
    pub isolate: bool,
    /// How worker processes are started and watched.
    pub worker: WorkerOptions,
    /// Spread the isolated FMUs over this many worker processes.
    pub worker_processes: Option<usize>,
    /// The interface of FMUs that have both (`None`: Co-Simulation).
    pub interface: Option<Interface>,
    /// Under `mpirun`: write the partition balanced by each component's stepping time over the
    /// whole run to this file (`--partition-out FILE`), for the next run's `--partition`.
    pub partition_out: Option<PathBuf>,
    /// Which MPI rank steps each component (`--partition FILE`, `distribute::partition_file`);
    /// wins over the system's own ranks; refused in one process.
    pub partition: Option<PathBuf>,
}

/// A request made ready to run: the system as it will run and its instantiated execution.
pub struct PreparedRun {
    /// The instantiated system, ready for [`crate::master::run::run`].
    pub execution: Execution,
    /// The system with every override and start value applied.
    pub system: System,
    /// What ran, for messages and default file names: the FMU's model name, or the stem of
    /// the system file (`system` for components named on the command line).
    pub name: String,
    /// One FMU run alone (columns named without a component prefix).
    pub single_fmu: bool,
    /// The files the run reads (FMUs, the system file): results must not overwrite them.
    pub sources: Vec<PathBuf>,
    /// An SSP's extracted package: holds its FMUs until the run ends.
    pub package: Option<SspPackage>,
    /// Under `mpirun`: which rank steps each component, and how that was chosen.
    pub partition: Option<crate::distribute::Partition>,
}

/// Load, override, check and instantiate what `request` names; `warn` hears what an SSP
/// import could not map exactly.
pub fn prepare(request: &RunRequest, warn: &mut dyn FnMut(&str)) -> Result<PreparedRun> {
    prepare_on_ranks(request, None, warn)
}

/// [`prepare`] for one rank of a run under `mpirun` (`transport`; `None`: one process): the
/// settings that cannot run over ranks and a partition given that does not fit are refused
/// before any FMU is opened; without one given, a short trial over the ranks balances it
/// (`distribute::balance`); this rank instantiates only its own components.
pub fn prepare_on_ranks(
    request: &RunRequest,
    transport: Option<Arc<dyn crate::master::transport::Transport>>,
    warn: &mut dyn FnMut(&str),
) -> Result<PreparedRun> {
    if let (Some(path), None) = (&request.partition_out, &transport) {
        return Err(Error::Usage(format!(
            "--partition-out {} writes how to split a system over the ranks of mpirun -n K from a run over them, but this run is one process: run it under mpirun (a build with the feature mpi), or drop --partition-out",
            path.display()
        )));
    }
    if let (Some(path), None) = (&request.partition, &transport) {
        return Err(Error::Usage(format!(
            "--partition {} places a system's components on the ranks of mpirun -n K, but this run is one process: run it under mpirun (a build with the feature mpi), or drop --partition",
            path.display()
        )));
    }
    let target = load(
        &request.targets,
        &request.connections,
        request.ssd.as_deref(),
    )?;
    let loaded = match target {
        Target::Fmu(_) if transport.is_some() => {
            return Err(Error::Usage(
                "one FMU alone can use at most 1 MPI rank: run it without mpirun, or give mpirun -n K a system of K or more components".into(),
            ))
        }
        Target::Fmu(fmu) => return prepare_fmu(request, fmu),
        Target::System(loaded) => *loaded,
    };
    for warning in &loaded.warnings {
        warn(warning);
    }
    let mut system = loaded.system;
    for pair in &request.ignore_units {
        let found = pair.split_once('=').and_then(|(from, to)| {
            system
                .connections
                .iter()
                .position(|c| c.from.to_string() == from.trim() && c.to.to_string() == to.trim())
        });
        let Some(index) = found else {
            let known: Vec<String> = system
                .connections
                .iter()
                .map(|c| format!("{}={}", c.from, c.to))
                .collect();
            return Err(Error::Usage(format!(
                "--ignore-units {pair}: the system has no such connection FROM=TO; its connections are: {}",
                known.join(", ")
            )));
        };
        system.connections[index].ignore_units = true;
    }
    if request.fmi_version.is_some() {
        return Err(Error::Usage(
            "--fmi-version checks the version of one FMU; a system's FMUs may be of either version"
                .into(),
        ));
    }
    system.experiment = request
        .overrides
        .apply(&system.experiment, loaded.labels)
        .map_err(Error::Usage)?;
    check_threads(request, &system.experiment)?;
    // Refused before anything is loaded: what cannot spread, a partition that does not fit.
    let given = match &transport {
        Some(transport) => {
            crate::distribute::given(&system, transport.size(), request.partition.as_deref())?
        }
        None => None,
    };
    for assignment in &request.start_values {
        let (name, value) = assignment.split_once('=').ok_or_else(|| {
            Error::Usage(format!("--start-value \"{assignment}\": expected component.NAME=VALUE, e.g. --start-value mass1.m=2.5"))
        })?;
        let endpoint = Endpoint::parse(name.trim()).ok_or_else(|| {
            Error::Usage(format!("--start-value \"{assignment}\": in a system, name the component: component.NAME=VALUE"))
        })?;
        system
            .set_start_value(&endpoint, value.trim().to_string())
            .map_err(|m| Error::Usage(format!("--start-value {name}: {m}")))?;
    }
    let options = run_options(request, false, Vec::new());
    let first = request.targets.first().cloned().unwrap_or_default();
    // Checks against the FMUs (names, types, units) happen here: say which file they concern.
    let in_file = |e: Error| match e {
        Error::Usage(message) if loaded.file.is_some() => {
            Error::Usage(format!("{first}: {message}"))
        }
        other => other,
    };
    // Under mpirun each rank instantiates only its components: all leave together, or none.
    let (execution, partition) = match &transport {
        Some(transport) => {
            let (execution, partition) =
                crate::distribute::instantiate(&system, &options, transport, given, &in_file)?;
            (execution, Some(partition))
        }
        None => (
            Execution::instantiate(&system, &options).map_err(in_file)?,
            None,
        ),
    };
    let integrals = system
        .connections
        .iter()
        .filter(|c| c.source_integral.is_some())
        .count();
    if integrals > 0
        && system.experiment.algorithm.extension()
            == crate::settings::implicit::Extension::Derivative
    {
        // Kept for --extension integral on the same file; say that they do nothing now.
        warn(&format!(
            "{integrals} connection(s) name a sourceIntegral, which only the integral extension reads: with the derivative extension they do nothing (--extension integral uses them)"
        ));
    }
    if system.experiment.loops != crate::settings::LoopSettings::default()
        && !execution.graph.blocks.iter().any(|b| b.is_loop)
    {
        warn(&format!(
            "{}: the system has no algebraic loop between direct-feedthrough ports, so the loop solver and its settings never act",
            loaded.labels.loops
        ));
    }
    let name = Path::new(&first)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("system")
        .to_string();
    let mut sources: Vec<PathBuf> = system.components.iter().map(|c| c.fmu.clone()).collect();
    sources.extend(loaded.file);
    Ok(PreparedRun {
        execution,
        system,
        name,
        single_fmu: false,
        sources,
        package: loaded.package,
        partition,
    })
}

/// One FMU alone, as fmusim runs it: its own default experiment under the overrides, names
/// without a component prefix.
fn prepare_fmu(request: &RunRequest, fmu: Arc<crate::fmu::Fmu>) -> Result<PreparedRun> {
    if !request.ignore_units.is_empty() {
        return Err(Error::Usage(
            "--ignore-units marks a connection of a system; one FMU alone has none".into(),
        ));
    }
    let path = fmu.source().to_path_buf();
    let md = fmu.description().clone();
    if let Some(wanted) = request.fmi_version {
        if md.fmi_version != wanted {
            let number = if wanted == FmiVersion::Fmi2 { 2 } else { 3 };
            return Err(Error::Usage(format!(
                "{}: this is an FMI {} FMU, but --fmi-version {number} asks for FMI {wanted}",
                path.display(),
                md.fmi_version
            )));
        }
    }
    let mut start_values = Vec::new();
    let mut given = Vec::new();
    for assignment in &request.start_values {
        let (name, text) = assignment.split_once('=').ok_or_else(|| {
            Error::Usage(format!(
                "--start-value \"{assignment}\": expected NAME=VALUE, e.g. --start-value m=2.5"
            ))
        })?;
        let variable = find_variable(&md, name.trim(), "--start-value")?;
        check_start_value_allowed(&md, variable)?;
        let index = md
            .variable_index(&variable.name)
            .ok_or_else(|| Error::Internal(format!("{}: found but not indexed", variable.name)))?;
        given.push((index, text.trim()));
        start_values.push((variable.name.clone(), text.trim().to_string()));
    }
    // An array sized by a structural parameter counts the size given here.
    let configured = parse_start_values(&md, &given)?.0;
    let sized = configured.as_ref().unwrap_or(&md);
    for name in &request.output_variables {
        // A variable, an alias or an array element `y[2]`; an unknown name gets the suggestions
        // of `find_variable`. Time and names given twice are refused where the columns are made.
        if crate::master::record::resolve_output_name(sized, name)
            .map_err(|e| Error::Usage(format!("--output-variable {e}")))?
            .is_none()
        {
            find_variable(&md, name, "--output-variable")?;
        }
    }
    let system = System::single_fmu(&path, &md, start_values, &request.overrides)?;
    check_threads(request, &system.experiment)?;
    let options = run_options(request, true, vec![fmu]);
    let execution = Execution::instantiate(&system, &options)?;
    Ok(PreparedRun {
        execution,
        system,
        name: md.model_name.clone(),
        single_fmu: true,
        sources: vec![path],
        package: None,
        partition: None,
    })
}

/// The run options of a request, for a system or (`bare_names`) one FMU.
fn run_options(
    request: &RunRequest,
    bare_names: bool,
    opened: Vec<Arc<crate::fmu::Fmu>>,
) -> RunOptions {
    RunOptions {
        instance: request.instance.clone(),
        threads: request.threads,
        record: request.output_variables.clone(),
        bare_names,
        inputs: request.inputs.clone(),
        opened,
        allow_non_finite: request.allow_non_finite,
        isolate: request.isolate,
        worker: request.worker.clone(),
        worker_processes: request.worker_processes,
        interface: request.interface,
        ranks: None,
        time_components: request.partition_out.is_some(),
    }
}

/// `--threads` sizes the pool of `--parallel`: without it there is no pool to size.
fn check_threads(request: &RunRequest, experiment: &Experiment) -> Result<()> {
    if request.threads != 0 && !experiment.parallel {
        return Err(Error::Usage(
            "--threads sets the worker threads of --parallel: add --parallel or drop --threads"
                .into(),
        ));
    }
    Ok(())
}

/// `--call-timeout` and `--worker-memory` as worker options.
pub fn worker_options(
    call_timeout: Option<f64>,
    worker_memory: Option<&str>,
) -> Result<WorkerOptions> {
    let call_timeout = call_timeout
        .map(|seconds| {
            crate::settings::call_timeout(seconds).map_err(|why| {
                let seconds = crate::settings::short(seconds);
                Error::Usage(format!("--call-timeout {seconds}: {why}"))
            })
        })
        .transpose()?;
    let memory_limit = worker_memory.map(parse_size).transpose()?;
    Ok(WorkerOptions {
        program: None,
        call_timeout,
        memory_limit,
        worker_spin: None,
    })
}

/// `512M`, `2G`, `1048576`: bytes (K, M, G, T are powers of 1024). At least 16 MiB: a worker
/// with less cannot even load an FMU.
fn parse_size(text: &str) -> Result<u64> {
    let trimmed = text.trim();
    let (digits, shift) = match trimmed.char_indices().last() {
        Some((at, unit)) if unit.is_ascii_alphabetic() => {
            let shift = match unit.to_ascii_uppercase() {
                'K' => 10,
                'M' => 20,
                'G' => 30,
                'T' => 40,
                _ => 64,
            };
            (&trimmed[..at], shift)
        }
        _ => (trimmed, 0),
    };
    let bytes = digits
        .trim()
        .parse::<u64>()
        .ok()
        .filter(|_| shift < 64)
        .and_then(|n| n.checked_mul(1u64 << shift))
        .ok_or_else(|| {
            Error::Usage(format!(
                "--worker-memory {text}: expected a size such as 512M or 2G (K, M, G, T: powers of 1024)"
            ))
        })?;
    if bytes < 16 << 20 {
        return Err(Error::Usage(format!(
            "--worker-memory {text}: a worker needs at least 16M to load an FMU"
        )));
    }
    Ok(bytes)
}

/// What an FMU declares (`schemas/inspect.schema.json`) or, for an SSP, its system as cosimo
/// will run it: the JSON of `cosimo inspect --json`. `warn` hears what the SSP import could
/// not map exactly and array variables that a run would refuse.
pub fn inspect_json(
    path: &Path,
    ssd: Option<&str>,
    warn: &mut dyn FnMut(&str),
) -> Result<serde_json::Value> {
    use serde_json::json;
    if crate::system::load::is_ssp(path) {
        crate::fs_checks::check_regular(path, "an SSP")?;
        let package = SspPackage::open(path)?;
        let imported = package.import(ssd)?;
        for warning in &imported.warnings {
            warn(warning);
        }
        let system = &imported.system;
        return Ok(json!({
            "source": path.display().to_string(),
            "name": imported.name,
            "description": imported.description,
            "ssdFiles": package.ssd_files(),
            "components": system.components.iter().map(|c| json!({
                "name": c.name,
                "fmu": c.fmu.display().to_string(),
                "parameters": c.start_values.iter().map(|(n, v)| (n.clone(), json!(v))).collect::<serde_json::Map<_, _>>(),
            })).collect::<Vec<_>>(),
            "connections": system.connections.iter().map(|c| json!({
                "from": c.from.to_string(), "to": c.to.to_string(), "factor": c.factor, "offset": c.offset,
            })).collect::<Vec<_>>(),
            "experiment": { "startTime": system.experiment.start, "stopTime": system.experiment.stop, "stepSize": system.experiment.step },
            "warnings": imported.warnings,
        }));
    }
    if ssd.is_some() {
        return Err(Error::Usage(
            "--ssd chooses the .ssd file of an SSP, but the target is not an SSP".into(),
        ));
    }
    let fmu = crate::fmu::Fmu::open(path)?;
    let description = fmu.file_description();
    for variable in description.variables.iter().filter(|v| v.is_array()) {
        if let Err(error) = crate::fmu::values::check_array_size(description, variable) {
            warn(&error.to_string());
        }
    }
    let mut summary = crate::fmu::summary::json(description, path);
    summary["platforms"] = json!(crate::fmu::build::platforms(fmu.archive().root()));
    Ok(summary)
}
