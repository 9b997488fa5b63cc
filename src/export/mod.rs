//! A system packed as an FMU: `cosimo export` writes an FMI 2 or FMI 3 Co-Simulation FMU whose
//! binary is the container library (the `container/` crate: the FMI API over
//! [`crate::master::simulation::Simulation`]), whose `resources/` hold the system description,
//! the inner FMUs and the manifest ([`manifest`]), and whose model description
//! ([`model_description`]) shows the variables chosen here.
//!
//! The system is prepared exactly as `cosimo run` prepares it (every check of a run happens
//! at export time, so an FMU that would not run is refused with the name of what is wrong).

pub mod manifest;
pub mod model_description;

use std::collections::{BTreeMap, HashSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::fmu::description::{Causality, FmiVersion, Variability, VariableType};
use crate::fmu::values::{dimension_size, element_count, start_value_len};
use crate::request::{prepare, PreparedRun, RunRequest};
use crate::{Error, Result};
use manifest::{Exposed, Manifest, Role, Workers, FORMAT, MANIFEST_FILE};
use model_description::{Header, Shown};

/// An export as a front end asks for it.
pub struct ExportRequest {
    /// The run to pack, as `cosimo run` would make it.
    pub run: RunRequest,
    /// The `.fmu` to write.
    pub output: PathBuf,
    /// The FMI version of the exported FMU.
    pub fmi_version: FmiVersion,
    /// Patterns of the variables to show (empty: every unconnected input and every output).
    pub expose: Vec<String>,
    /// Patterns of variables not to show.
    pub hide: Vec<String>,
    /// The container library (`libcosimo_container.so`), shipped as the FMU's binary.
    pub library: PathBuf,
    /// The worker program shipped beside it when inner FMUs run in worker processes
    /// (`--container-worker`; `None`: `$COSIMO_CONTAINER_WORKER`, else
    /// [`worker_file_name`] next to the library).
    pub worker: Option<PathBuf>,
}

/// What was written.
pub struct Exported {
    pub path: PathBuf,
    pub model_identifier: String,
    pub variables: Vec<Exposed>,
    pub can_get_and_set_state: bool,
    pub can_serialize_state: bool,
}

/// The container library's file name as cargo builds it.
pub fn library_file_name() -> String {
    format!(
        "{}cosimo_container{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    )
}

/// The container's worker program as cargo builds it (and as the FMU's `binaries/` holds it).
pub fn worker_file_name() -> String {
    format!("cosimo-container-worker{}", std::env::consts::EXE_SUFFIX)
}

/// Where a system file, an SSP or components `name=path` come from, and where they go.
enum Packing {
    /// One FMU run alone.
    Fmu,
    /// A system file: its JSON with the FMU paths rewritten.
    SystemFile(PathBuf),
    /// An SSP archive, copied whole (it holds its FMUs).
    Ssp(PathBuf),
    /// An unpacked SSP (a folder, or one `.ssd` file in its folder): its files copied, the
    /// components' `source` pointing to the packed FMUs.
    SspFolder { root: PathBuf, ssd: Option<String> },
    /// Components named on the command line.
    Components,
}

fn packing(request: &RunRequest, prepared: &PreparedRun) -> Result<Packing> {
    if prepared.single_fmu {
        return Ok(Packing::Fmu);
    }
    let first = request.targets.first().cloned().unwrap_or_default();
    let path = PathBuf::from(&first);
    if request.targets.len() == 1 && !first.contains('=') {
        if crate::system::load::is_ssp(&path) {
            if path.is_dir() {
                return Ok(Packing::SspFolder {
                    root: path,
                    ssd: None,
                });
            }
            if path.extension().and_then(|e| e.to_str()) == Some("ssd") {
                let root = path.parent().unwrap_or(Path::new(".")).to_path_buf();
                let ssd = path.file_name().map(|n| n.to_string_lossy().into_owned());
                return Ok(Packing::SspFolder { root, ssd });
            }
            return Ok(Packing::Ssp(path));
        }
        return Ok(Packing::SystemFile(path));
    }
    Ok(Packing::Components)
}

/// One entry of the FMU archive.
enum Entry {
    Bytes(Vec<u8>),
    File(PathBuf),
    /// A file written executable.
    Program(PathBuf),
}

/// Check, prepare and write the FMU; `warn` hears what an SSP import could not map exactly
/// and the variables the default choice leaves out.
pub fn export(request: &ExportRequest, warn: &mut dyn FnMut(&str)) -> Result<Exported> {
    refuse_unpackable(&request.run)?;
    if !request.library.is_file() {
        return Err(Error::Usage(format!(
            "the container library {} is missing: build it with `cargo build --release -p cosimo-container` and pass --container-library PATH (or set COSIMO_CONTAINER_LIBRARY)",
            request.library.display()
        )));
    }
    let mut prepared = prepare(&request.run, warn)?;
    let worker = worker_program(request, &prepared)?;
    let packing = packing(&request.run, &prepared)?;
    let (file_expose, file_hide) = match &packing {
        Packing::SystemFile(path) => export_section(path)?,
        _ => (Vec::new(), Vec::new()),
    };
    let expose: Vec<String> = if request.expose.is_empty() {
        file_expose
    } else {
        request.expose.clone()
    };
    let mut hide = file_hide;
    hide.extend(request.hide.iter().cloned());
    let version = request.fmi_version;
    let variables = choose_variables(&mut prepared, version, &expose, &hide, warn)?;

    // The files: inner FMUs under fmus/, the system description, the manifest.
    let mut entries: BTreeMap<String, Entry> = BTreeMap::new();
    let mut packed: BTreeMap<PathBuf, String> = BTreeMap::new();
    let system = prepared.system.clone();
    let mut fmu_names = Vec::new();
    if !matches!(packing, Packing::Ssp(_)) {
        for component in &system.components {
            fmu_names.push(pack_fmu(&component.fmu, &mut packed, &mut entries)?);
        }
    }
    let run = &request.run;
    let targets = match &packing {
        Packing::Fmu => vec![fmu_names[0].clone()],
        Packing::Components => system
            .components
            .iter()
            .zip(&fmu_names)
            .map(|(c, f)| format!("{}={f}", c.name))
            .collect(),
        Packing::SystemFile(path) => {
            let text = rewrite_system_file(path, &fmu_names)?;
            entries.insert(
                "resources/system.json".into(),
                Entry::Bytes(text.into_bytes()),
            );
            vec!["system.json".into()]
        }
        Packing::SspFolder { root, ssd } => {
            add_ssp_folder(root, &packed, &mut entries)?;
            match ssd {
                Some(file) => vec![format!("system.ssp/{file}")],
                None => vec!["system.ssp".into()],
            }
        }
        Packing::Ssp(path) => {
            // The SSP's FMUs stay inside it.
            entries.insert("resources/system.ssp".into(), Entry::File(path.clone()));
            vec!["system.ssp".into()]
        }
    };
    let exec = &mut prepared.execution;
    let n = exec.resolved.components.len();
    let can_get_and_set_state = (0..n).all(|i| exec.can_save_state(i));
    let can_serialize_state = can_get_and_set_state && (0..n).all(|i| exec.can_serialize_state(i));
    let mut manifest = Manifest {
        format: FORMAT,
        token: String::new(),
        targets,
        connections: if matches!(packing, Packing::Components) {
            run.connections.clone()
        } else {
            Vec::new()
        },
        ignore_units: run.ignore_units.clone(),
        ssd: run.ssd.clone(),
        start_values: run.start_values.clone(),
        overrides: run.overrides.clone(),
        threads: run.threads,
        allow_non_finite: run.allow_non_finite,
        log_fmi_calls: run.instance.log_fmi_calls,
        debug_logging: run.instance.logging_on,
        event_mode: run.instance.event_mode,
        interface: run.interface.map(|i| i.to_string()),
        solver: run.instance.solver,
        variables: variables.iter().map(|(e, _, _)| e.clone()).collect(),
        workers: Workers::default(),
    };
    let platform = crate::fmu::archive::platform_folders(version)
        .first()
        .ok_or_else(|| {
            Error::Usage(format!(
                "cosimo export has no FMI {version} platform folder for {} {}",
                std::env::consts::OS,
                std::env::consts::ARCH
            ))
        })?;
    if worker.is_some() {
        manifest.workers = Workers {
            program: Some(format!("binaries/{platform}/{}", worker_file_name())),
            isolate: run.isolate,
            call_timeout: run.worker.call_timeout.map(|t| t.as_secs_f64()),
            memory_limit: run.worker.memory_limit,
            processes: run.worker_processes,
        };
    }
    // The experiment options are in the packed system now (or in the overrides): the
    // importer's times win over start and stop.
    let experiment = &system.experiment;
    let model_name = prepared.name.clone();
    let model_identifier = identifier(&model_name);
    let shown: Vec<Shown<'_>> = variables
        .iter()
        .zip(&manifest.variables)
        .map(|((_, c, v), exposed)| {
            let description = &exec.resolved.components[*c].description;
            let variable = &description.variables[*v];
            Shown {
                exposed,
                variable,
                description,
                dimensions: variable
                    .dimensions
                    .iter()
                    .map(|d| dimension_size(description, d).unwrap_or(1))
                    .collect(),
            }
        })
        .collect();
    let mut header = Header {
        version,
        model_name: model_name.clone(),
        model_identifier: model_identifier.clone(),
        token: String::new(),
        description: format!(
            "{} exported by cosimo ({} components, algorithm {})",
            model_name,
            n,
            experiment.algorithm.kind()
        ),
        can_get_and_set_state,
        can_serialize_state,
        start: experiment.start,
        stop: experiment.stop,
        step: experiment.step,
        tolerance: experiment.tolerance,
    };
    // The token: a hash of everything the FMU holds, so that a changed export is a new model.
    let mut hash = Fnv::new();
    hash.text(&model_description::write(&header, &shown));
    hash.text(&serde_json::to_string(&manifest).unwrap_or_default());
    for (name, entry) in &entries {
        hash.text(name);
        match entry {
            Entry::Bytes(bytes) => hash.bytes(bytes),
            Entry::File(path) | Entry::Program(path) => hash_file(&mut hash, path)?,
        }
    }
    // Not the container library: its bytes change with every build of cosimo, the model does
    // not (the manifest's format version guards what the library reads).
    let token = hash.guid();
    header.token = token.clone();
    manifest.token = token;
    let xml = model_description::write(&header, &shown);
    drop(shown);
    entries.insert(
        "modelDescription.xml".into(),
        Entry::Bytes(xml.into_bytes()),
    );
    entries.insert(
        format!("resources/{MANIFEST_FILE}"),
        Entry::Bytes(
            serde_json::to_vec_pretty(&manifest)
                .map_err(|e| Error::Internal(format!("writing the manifest: {e}")))?,
        ),
    );
    entries.insert(
        format!(
            "binaries/{platform}/{model_identifier}{}",
            std::env::consts::DLL_SUFFIX
        ),
        Entry::File(request.library.clone()),
    );
    if let Some(program) = worker {
        entries.insert(
            format!("binaries/{platform}/{}", worker_file_name()),
            Entry::Program(program),
        );
    }
    for source in &prepared.sources {
        if same_file(source, &request.output) {
            return Err(Error::Usage(format!(
                "-o {}: that is an input of the export; choose another file name",
                request.output.display()
            )));
        }
    }
    write_archive(&request.output, &entries)?;
    Ok(Exported {
        path: request.output.clone(),
        model_identifier,
        variables: manifest.variables,
        can_get_and_set_state,
        can_serialize_state,
    })
}

/// Options of `run` that an exported FMU cannot take along.
fn refuse_unpackable(run: &RunRequest) -> Result<()> {
    let refused = [
        (
            run.inputs.is_some(),
            "--input-file",
            "the importer sets the FMU's inputs",
        ),
        (
            run.overrides.max_rows.is_some(),
            "--max-rows",
            "the exported FMU keeps no result rows (its importer records them)",
        ),
        (
            !run.output_variables.is_empty(),
            "--output-variable",
            "choose what the FMU shows with --expose and --hide",
        ),
        (
            run.partition.is_some(),
            "--partition",
            "the exported FMU runs its components in its importer's process, not over MPI ranks",
        ),
        (
            run.partition_out.is_some(),
            "--partition-out",
            "the exported FMU runs its components in its importer's process, not over MPI ranks",
        ),
    ];
    for (given, option, why) in refused {
        if given {
            return Err(Error::Usage(format!(
                "cosimo export does not take {option}: {why}"
            )));
        }
    }
    Ok(())
}

/// The worker program to ship when some inner FMU runs in a worker process (isolated, with a
/// call timeout or a worker group, or an FMU that may be instantiated only once per process
/// with several instances); `None` when none does, where naming one is refused.
fn worker_program(request: &ExportRequest, prepared: &PreparedRun) -> Result<Option<PathBuf>> {
    let run = &request.run;
    let resolved = &prepared.execution.resolved;
    // The rules of the run's placement (master::execution): isolation, a call timeout or a
    // worker group put a component into a worker, and so do several instances of an FMU that
    // may be instantiated only once per process.
    let hosted = run.isolate
        || run.worker.call_timeout.is_some()
        || resolved.system.components.iter().enumerate().any(|(i, c)| {
            let once = resolved.components[i]
                .description
                .co_simulation
                .as_ref()
                .is_some_and(|cs| cs.can_be_instantiated_only_once_per_process);
            let instances = resolved
                .system
                .components
                .iter()
                .filter(|other| other.fmu == c.fmu)
                .count();
            c.isolate == Some(true)
                || c.call_timeout.is_some()
                || c.worker_group.is_some()
                || (once && instances > 1)
        });
    if !hosted {
        if let Some(path) = &request.worker {
            return Err(Error::Usage(format!(
                "--container-worker {}: no inner FMU of this system runs in a worker process; add --isolate (or a component's isolate, callTimeout or workerGroup) or drop the option",
                path.display()
            )));
        }
        return Ok(None);
    }
    let (path, from) = match (&request.worker, std::env::var_os("COSIMO_CONTAINER_WORKER")) {
        (Some(path), _) => (path.clone(), "--container-worker"),
        (None, Some(path)) => (PathBuf::from(path), "COSIMO_CONTAINER_WORKER"),
        (None, None) => (
            request
                .library
                .parent()
                .unwrap_or(Path::new("."))
                .join(worker_file_name()),
            "next to the container library",
        ),
    };
    if !path.is_file() {
        return Err(Error::Usage(format!(
            "the worker program {} ({from}) is missing; inner FMUs of this export run in worker processes, which the FMU starts from its own copy of it: build it with `cargo build --release -p cosimo-container` and pass --container-worker PATH (or set COSIMO_CONTAINER_WORKER)",
            path.display()
        )));
    }
    Ok(Some(path))
}

/// The `"export"` section of a system file: expose and hide patterns.
fn export_section(path: &Path) -> Result<(Vec<String>, Vec<String>)> {
    let text = crate::fs_checks::read_to_string(path, "a system file")?;
    let value: serde_json::Value = serde_json::from_str(text.trim_start_matches('\u{feff}'))
        .map_err(|e| Error::Usage(format!("{}: {e}", path.display())))?;
    let list = |key: &str| -> Result<Vec<String>> {
        match value.get("export").and_then(|e| e.get(key)) {
            None => Ok(Vec::new()),
            Some(serde_json::Value::Array(items)) => items
                .iter()
                .map(|i| {
                    i.as_str().map(str::to_string).ok_or_else(|| {
                        Error::Usage(format!(
                            "{}: export.{key}: expected a list of name patterns",
                            path.display()
                        ))
                    })
                })
                .collect(),
            Some(_) => Err(Error::Usage(format!(
                "{}: export.{key}: expected a list of name patterns",
                path.display()
            ))),
        }
    };
    Ok((list("expose")?, list("hide")?))
}

/// A `*` / `?` pattern against a name.
pub fn matches(pattern: &str, name: &str) -> bool {
    fn go(p: &[char], n: &[char]) -> bool {
        match p.split_first() {
            None => n.is_empty(),
            Some(('*', rest)) => (0..=n.len()).any(|i| go(rest, &n[i..])),
            Some(('?', rest)) => !n.is_empty() && go(rest, &n[1..]),
            Some((c, rest)) => n.first() == Some(c) && go(rest, &n[1..]),
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    go(&p, &n)
}

/// The variables the FMU shows, with value references from 1, each with its component and
/// variable index.
fn choose_variables(
    prepared: &mut PreparedRun,
    version: FmiVersion,
    expose: &[String],
    hide: &[String],
    warn: &mut dyn FnMut(&str),
) -> Result<Vec<(Exposed, usize, usize)>> {
    let single = prepared.single_fmu;
    let resolved = &prepared.execution.resolved;
    let driven: HashSet<(usize, usize)> = resolved
        .connections
        .iter()
        // An array connected element by element counts as the array.
        .map(|c| {
            let component = &resolved.components[c.to_component];
            (c.to_component, component.declared_variable(c.to_variable))
        })
        .collect();
    // Every candidate: (name, component, variable, role).
    let mut candidates = Vec::new();
    for (c, component) in resolved.components.iter().enumerate() {
        for (v, variable) in component.description.variables.iter().enumerate() {
            let role = match (variable.causality, variable.variability) {
                (Causality::Input, _) if !driven.contains(&(c, v)) => Role::Input,
                (Causality::Output, _) => Role::Output,
                (Causality::Parameter, Variability::Fixed) => Role::Parameter,
                (Causality::Parameter, Variability::Tunable) => Role::TunableParameter,
                _ => continue,
            };
            let name = if single {
                variable.name.clone()
            } else {
                format!("{}.{}", component.name, variable.name)
            };
            candidates.push((name, c, v, role));
        }
    }
    let mut chosen: Vec<bool> = candidates
        .iter()
        .map(|(_, _, _, role)| expose.is_empty() && matches!(role, Role::Input | Role::Output))
        .collect();
    for pattern in expose {
        let mut any = false;
        for (i, (name, _, _, _)) in candidates.iter().enumerate() {
            if matches(pattern, name) {
                chosen[i] = true;
                any = true;
            }
        }
        if !any {
            return Err(unknown(pattern, "--expose", &candidates, resolved));
        }
    }
    for pattern in hide {
        let mut any = false;
        for (i, (name, _, _, _)) in candidates.iter().enumerate() {
            if matches(pattern, name) {
                chosen[i] = false;
                any = true;
            }
        }
        if !any {
            return Err(unknown(pattern, "--hide", &candidates, resolved));
        }
    }
    let mut variables = Vec::new();
    let mut names = HashSet::new();
    for (i, (name, c, v, role)) in candidates.iter().enumerate() {
        if !chosen[i] {
            continue;
        }
        let component = &resolved.components[*c];
        let description = &component.description;
        let variable = &description.variables[*v];
        let fits = match version {
            FmiVersion::Fmi2 => {
                !variable.is_array() && model_description::fmi2_element(variable.var_type).is_some()
            }
            FmiVersion::Fmi3 => variable.var_type != VariableType::Clock,
        };
        if !fits {
            let why = format!(
                "{name} ({}{}) has no FMI {version} counterpart",
                variable.var_type.fmi_name(description.fmi_version),
                if variable.is_array() { " array" } else { "" }
            );
            if expose.iter().any(|p| matches(p, name)) {
                return Err(Error::Usage(format!(
                    "{why}: export as --fmi-version 3, or leave it out of --expose"
                )));
            }
            warn(&format!(
                "{why}: not shown (export as --fmi-version 3 to show it)"
            ));
            continue;
        }
        if !names.insert(name.clone()) || (version == FmiVersion::Fmi3 && name == "time") {
            return Err(Error::Usage(format!(
                "{name}: two exposed variables would have this name; hide one of them"
            )));
        }
        let count = element_count(description, variable)?;
        let start = component
            .start_values
            .iter()
            .find(|(index, _)| index == v)
            .map(|(_, value)| value.clone())
            .or_else(|| variable.start.clone());
        // An array sized by a structural parameter has the configured size; its start value in
        // the FMU's description has the start size.
        if let Some(given) = start.as_ref().map(start_value_len).filter(|&n| n != count) {
            return Err(Error::Usage(format!(
                "{name}: the array has {count} elements as configured (a structural parameter \
                 sizes it), but its start value has {given}; give it a start value of {count} \
                 elements (--start-value), or leave it out of --expose"
            )));
        }
        let value_reference = u32::try_from(variables.len() + 1)
            .map_err(|_| Error::Usage("too many variables to export".into()))?;
        variables.push((
            Exposed {
                name: name.clone(),
                value_reference,
                target: name.clone(),
                role: *role,
                var_type: variable.var_type.fmi_name(FmiVersion::Fmi3).to_string(),
                count,
                start,
            },
            *c,
            *v,
        ));
    }
    Ok(variables)
}

fn unknown(
    pattern: &str,
    option: &str,
    candidates: &[(String, usize, usize, Role)],
    resolved: &crate::system::resolve::ResolvedSystem,
) -> Error {
    // Say why a real variable is no candidate: a connected input, a local, ...
    let direct = resolved.components.iter().find_map(|c| {
        let rest = pattern.strip_prefix(&format!("{}.", c.name))?;
        c.description
            .variable(rest)
            .map(|v| (c.name.clone(), v.causality))
    });
    if let Some((component, causality)) = direct {
        let why = if causality == Causality::Input {
            "an input driven by a connection".to_string()
        } else {
            format!("a variable of causality {causality:?}")
        };
        return Error::Usage(format!(
            "{option} {pattern}: {pattern} of component {component} is {why}; an exported FMU shows unconnected inputs, outputs and parameters"
        ));
    }
    let some: Vec<&str> = candidates
        .iter()
        .map(|(n, ..)| n.as_str())
        .take(12)
        .collect();
    Error::Usage(format!(
        "{option} {pattern}: no input, output or parameter of the system has such a name; some are: {}{}",
        some.join(", "),
        if candidates.len() > some.len() { ", ..." } else { "" }
    ))
}

/// Put one inner FMU (file or unpacked folder) under `resources/fmus/`; returns its path
/// relative to `resources/`.
fn pack_fmu(
    source: &Path,
    packed: &mut BTreeMap<PathBuf, String>,
    entries: &mut BTreeMap<String, Entry>,
) -> Result<String> {
    let key = source
        .canonicalize()
        .unwrap_or_else(|_| source.to_path_buf());
    if let Some(name) = packed.get(&key) {
        return Ok(name.clone());
    }
    let stem = source
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "component.fmu".into());
    let mut name = format!("fmus/{stem}");
    let mut n = 2;
    while packed.values().any(|v| *v == name) {
        name = format!("fmus/{n}-{stem}");
        n += 1;
    }
    if source.is_dir() {
        add_folder(source, &format!("resources/{name}"), entries)?;
    } else {
        entries.insert(
            format!("resources/{name}"),
            Entry::File(source.to_path_buf()),
        );
    }
    packed.insert(key, name.clone());
    Ok(name)
}

fn add_folder(folder: &Path, prefix: &str, entries: &mut BTreeMap<String, Entry>) -> Result<()> {
    let read = std::fs::read_dir(folder).map_err(|e| Error::io(folder, e))?;
    for entry in read {
        let entry = entry.map_err(|e| Error::io(folder, e))?;
        let path = entry.path();
        let name = format!("{prefix}/{}", entry.file_name().to_string_lossy());
        if path.is_dir() {
            add_folder(&path, &name, entries)?;
        } else {
            entries.insert(name, Entry::File(path));
        }
    }
    Ok(())
}

/// An unpacked SSP's files under `resources/system.ssp/`, each `.ssd`'s component sources that name
/// a packed FMU rewritten to `../fmus/NAME` (the other files as they are).
fn add_ssp_folder(
    root: &Path,
    packed: &BTreeMap<PathBuf, String>,
    entries: &mut BTreeMap<String, Entry>,
) -> Result<()> {
    let mut files = BTreeMap::new();
    add_folder(root, "resources/system.ssp", &mut files)?;
    for (name, entry) in files {
        let Entry::File(path) = &entry else {
            continue;
        };
        if name.ends_with(".fmu") && packed.contains_key(&path.canonicalize().unwrap_or_default()) {
            // Packed under fmus/ already.
            continue;
        }
        if !name.ends_with(".ssd") {
            entries.insert(name, entry);
            continue;
        }
        let text = crate::fs_checks::read_to_string(path, "an SSP's .ssd file")?;
        let mut out = String::with_capacity(text.len());
        let mut rest = text.as_str();
        while let Some(at) = rest.find("source=\"") {
            let (head, tail) = rest.split_at(at + "source=\"".len());
            out.push_str(head);
            let end = tail.find('"').unwrap_or(tail.len());
            let value = &tail[..end];
            let resolved = root.join(value).canonicalize().unwrap_or_default();
            match packed.get(&resolved) {
                Some(packed_name) => out.push_str(&format!("../{packed_name}")),
                None => out.push_str(value),
            }
            rest = &tail[end..];
        }
        out.push_str(rest);
        entries.insert(name, Entry::Bytes(out.into_bytes()));
    }
    Ok(())
}

/// The system file's JSON with each component's `fmu` pointing into `resources/fmus/`.
fn rewrite_system_file(path: &Path, fmu_names: &[String]) -> Result<String> {
    let text = crate::fs_checks::read_to_string(path, "a system file")?;
    let mut value: serde_json::Value = serde_json::from_str(text.trim_start_matches('\u{feff}'))
        .map_err(|e| Error::Usage(format!("{}: {e}", path.display())))?;
    let components = value
        .get_mut("components")
        .and_then(|c| c.as_array_mut())
        .ok_or_else(|| Error::Usage(format!("{}: no components", path.display())))?;
    for (component, name) in components.iter_mut().zip(fmu_names) {
        component["fmu"] = serde_json::Value::String(name.clone());
    }
    if let Some(object) = value.as_object_mut() {
        // The schema's relative path means nothing inside the FMU.
        object.remove("$schema");
    }
    serde_json::to_string_pretty(&value)
        .map_err(|e| Error::Internal(format!("writing the packed system file: {e}")))
}

/// A C identifier from a model name (`two-mass force/force` -> `two_mass_force_force`).
fn identifier(name: &str) -> String {
    let mut id: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if !id.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        id.insert(0, '_');
    }
    id
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

fn write_archive(output: &Path, entries: &BTreeMap<String, Entry>) -> Result<()> {
    use zip::write::SimpleFileOptions;
    let folder = output
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let temporary = tempfile::Builder::new()
        .prefix(".cosimo-export")
        .suffix(".fmu")
        .tempfile_in(folder)
        .map_err(|e| Error::io(folder, e))?;
    let mut zip = zip::ZipWriter::new(temporary.as_file());
    for (name, entry) in entries {
        // Inner FMUs and SSPs are compressed already.
        let stored = name.ends_with(".fmu") || name.ends_with(".ssp");
        let options = SimpleFileOptions::default()
            .compression_method(if stored {
                zip::CompressionMethod::Stored
            } else {
                zip::CompressionMethod::Deflated
            })
            .large_file(false)
            .unix_permissions(if matches!(entry, Entry::Program(_)) {
                0o755
            } else {
                0o644
            });
        zip.start_file(name.as_str(), options)
            .map_err(|e| Error::Internal(format!("writing {}: {e}", output.display())))?;
        match entry {
            Entry::Bytes(bytes) => zip.write_all(bytes).map_err(|e| Error::io(output, e))?,
            Entry::File(path) | Entry::Program(path) => {
                let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
                std::io::copy(&mut file, &mut zip).map_err(|e| Error::io(output, e))?;
            }
        }
    }
    zip.finish()
        .map_err(|e| Error::Internal(format!("writing {}: {e}", output.display())))?;
    temporary
        .persist(output)
        .map_err(|e| Error::io(output, e.error))?;
    Ok(())
}

/// FNV-1a over two lanes: a stable 128-bit content hash for the instantiation token.
struct Fnv([u64; 2]);

impl Fnv {
    fn new() -> Fnv {
        Fnv([0xcbf2_9ce4_8422_2325, 0x6c62_272e_07bb_0142])
    }

    fn bytes(&mut self, bytes: &[u8]) {
        for &b in bytes {
            for lane in &mut self.0 {
                *lane ^= u64::from(b);
                *lane = lane.wrapping_mul(0x0100_0000_01b3);
            }
        }
    }

    fn text(&mut self, text: &str) {
        self.bytes(text.as_bytes());
        self.bytes(&[0]);
    }

    /// `{8-4-4-4-12}` hex digits, as FMI 2 GUIDs are written.
    fn guid(&self) -> String {
        let hex = format!("{:016x}{:016x}", self.0[0], self.0[1]);
        format!(
            "{{{}-{}-{}-{}-{}}}",
            &hex[0..8],
            &hex[8..12],
            &hex[12..16],
            &hex[16..20],
            &hex[20..32]
        )
    }
}

fn hash_file(hash: &mut Fnv, path: &Path) -> Result<()> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    hash.bytes(&bytes);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_whole_names() {
        assert!(matches("mass1.*", "mass1.x"));
        assert!(matches("*.x", "mass2.x"));
        assert!(!matches("*.x", "mass2.x0"));
        assert!(matches("mass?.v", "mass2.v"));
        assert!(!matches("mass1.x", "mass1.xx"));
    }

    #[test]
    fn identifiers_are_c_names() {
        assert_eq!(identifier("two-mass force"), "two_mass_force");
        assert_eq!(identifier("2mass"), "_2mass");
    }
}
