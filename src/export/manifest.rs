//! What an exported FMU keeps in `resources/cosimo-export.json`: the run as `cosimo export`
//! was asked for it (targets inside `resources/`, the run's options) and the variables the FMU
//! shows, each with the value reference the importer uses and the name the simulation knows.
//! The exporter writes it; the container reads it and turns it back into the same
//! [`RunRequest`] that `cosimo run` would make.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::fmu::description::{StartValue, VariableType};
use crate::fmu::instance::InstanceOptions;
use crate::fmu::model_exchange::SolverOptions;
use crate::fmu::worker::WorkerOptions;
use crate::request::RunRequest;
use crate::settings::Overrides;
use crate::{Error, Result};

/// The manifest's file name inside `resources/`.
pub const MANIFEST_FILE: &str = "cosimo-export.json";

/// The format version this build writes and reads.
pub const FORMAT: u32 = 1;

/// Everything the container needs besides the files it names.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Manifest {
    pub format: u32,
    /// The instantiation token (FMI 2 GUID) the model description declares.
    pub token: String,
    /// As `cosimo run` takes them, with paths relative to `resources/`: one system file or
    /// SSP, one FMU, or components `name=path`.
    pub targets: Vec<String>,
    pub connections: Vec<String>,
    pub ignore_units: Vec<String>,
    pub ssd: Option<String>,
    pub start_values: Vec<String>,
    /// The run's experiment options (the importer's start / stop time and tolerance win).
    pub overrides: Overrides,
    pub threads: usize,
    pub allow_non_finite: bool,
    pub log_fmi_calls: bool,
    pub debug_logging: bool,
    pub event_mode: bool,
    pub interface: Option<String>,
    pub solver: SolverOptions,
    /// The variables the FMU shows, in value-reference order.
    pub variables: Vec<Exposed>,
    /// Worker processes: `--isolate` and its options, and the worker program inside the FMU.
    #[serde(default)]
    pub workers: Workers,
}

/// How the inner FMUs run in worker processes (`--isolate`, `--call-timeout`,
/// `--worker-memory`, `--worker-processes`; a component's own settings are in the packed
/// system file).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Workers {
    /// The worker program, relative to the FMU's root folder (`binaries/<platform>/...`);
    /// `None`: every inner FMU runs in the importer's process.
    pub program: Option<String>,
    pub isolate: bool,
    /// Seconds.
    pub call_timeout: Option<f64>,
    /// Bytes.
    pub memory_limit: Option<u64>,
    pub processes: Option<usize>,
}

impl Workers {
    /// The worker program inside the FMU unpacked at `resources/..`, made executable (an
    /// importer may unpack the archive without file modes).
    pub fn program_in(&self, resources: &Path) -> Result<Option<PathBuf>> {
        let Some(relative) = &self.program else {
            return Ok(None);
        };
        let root = resources.parent().unwrap_or(resources);
        let path = root.join(relative);
        if !path.is_file() {
            return Err(Error::Usage(format!(
                "the worker program {} of this FMU is missing: unpack the whole FMU, or export the system again",
                path.display()
            )));
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path)
                .map_err(|e| Error::io(&path, e))?
                .permissions()
                .mode();
            if mode & 0o100 == 0 {
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode | 0o755))
                    .map_err(|e| {
                        Error::Usage(format!(
                            "cannot make the worker program {} executable ({e}): unpack the FMU where it may be changed",
                            path.display()
                        ))
                    })?;
            }
        }
        Ok(Some(path))
    }
}

/// How an exposed variable faces the importer.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum Role {
    /// An input of the system that no connection drives.
    Input,
    /// An output of a component.
    Output,
    /// A parameter of a component: set before the start (fixed) or also between steps
    /// (tunable).
    Parameter,
    /// A tunable parameter.
    TunableParameter,
}

/// One variable of the exported FMU.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Exposed {
    /// The name in the exported model description.
    pub name: String,
    pub value_reference: u32,
    /// The name the simulation knows (`component.variable`, or the variable of one FMU).
    pub target: String,
    pub role: Role,
    /// The FMI 3 type name (`Float64`, `Int32`, ...).
    pub var_type: String,
    /// Elements (1 for a scalar).
    pub count: usize,
    /// The value before the start: the inner variable's start value, if it has one.
    pub start: Option<StartValue>,
}

impl Exposed {
    /// The type as the library names it.
    pub fn variable_type(&self) -> Option<VariableType> {
        type_from_name(&self.var_type)
    }
}

/// A type from its FMI 3 name.
pub fn type_from_name(name: &str) -> Option<VariableType> {
    use VariableType::*;
    Some(match name {
        "Float32" => Float32,
        "Float64" => Float64,
        "Int8" => Int8,
        "UInt8" => UInt8,
        "Int16" => Int16,
        "UInt16" => UInt16,
        "Int32" => Int32,
        "UInt32" => UInt32,
        "Int64" => Int64,
        "UInt64" => UInt64,
        "Boolean" => Boolean,
        "String" => String,
        "Binary" => Binary,
        "Enumeration" => Enumeration,
        _ => return None,
    })
}

/// What the importer says about the experiment when it initializes the FMU.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ImporterExperiment {
    pub start: f64,
    pub stop: Option<f64>,
    pub tolerance: Option<f64>,
}

impl Manifest {
    /// Read the manifest of an exported FMU's `resources/` folder.
    pub fn read(resources: &Path) -> Result<Manifest> {
        let path = resources.join(MANIFEST_FILE);
        let text = crate::fs_checks::read_to_string(&path, "the export manifest")?;
        let manifest: Manifest = serde_json::from_str(&text).map_err(|e| {
            Error::Usage(format!(
                "{}: not a manifest of this cosimo version ({e}); export the system again",
                path.display()
            ))
        })?;
        if manifest.format != FORMAT {
            return Err(Error::Usage(format!(
                "{}: manifest format {} but this container reads format {FORMAT}; export the system again",
                path.display(),
                manifest.format
            )));
        }
        Ok(manifest)
    }

    /// The run this FMU packs, with its files found under `resources`, the importer's
    /// experiment on top of the exported options and `start_values` (`target=value`, set
    /// before the start by the importer) after the exported ones, and worker processes
    /// started from `worker` (see [`Workers::program_in`]).
    pub fn request(
        &self,
        resources: &Path,
        experiment: ImporterExperiment,
        start_values: Vec<String>,
        worker: Option<PathBuf>,
    ) -> RunRequest {
        let inside = |target: &str| match target.split_once('=') {
            Some((name, path)) => format!("{name}={}", resources.join(path).display()),
            None => resources.join(target).display().to_string(),
        };
        let mut overrides = self.overrides.clone();
        overrides.start = Some(experiment.start);
        if let Some(stop) = experiment.stop {
            overrides.stop = Some(stop);
        }
        if let Some(tolerance) = experiment.tolerance {
            overrides.tolerance = Some(tolerance);
        }
        // No rows are kept inside (the importer asks for values): an importer's long stop time
        // must not hit the row limit of a run that writes them.
        overrides.max_rows = Some(u64::MAX);
        let mut all_start_values = self.start_values.clone();
        all_start_values.extend(start_values);
        RunRequest {
            targets: self.targets.iter().map(|t| inside(t)).collect(),
            connections: self.connections.clone(),
            ignore_units: self.ignore_units.clone(),
            ssd: self.ssd.clone(),
            overrides,
            start_values: all_start_values,
            threads: self.threads,
            allow_non_finite: self.allow_non_finite,
            instance: InstanceOptions {
                log_fmi_calls: self.log_fmi_calls,
                logging_on: self.debug_logging,
                event_mode: self.event_mode,
                solver: self.solver,
                ..InstanceOptions::default()
            },
            interface: self
                .interface
                .as_deref()
                .and_then(crate::fmu::description::Interface::parse),
            isolate: self.workers.isolate,
            worker: WorkerOptions {
                program: worker,
                call_timeout: self.workers.call_timeout.map(Duration::from_secs_f64),
                memory_limit: self.workers.memory_limit,
                worker_spin: None,
            },
            worker_processes: self.workers.processes,
            ..RunRequest::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(targets: &[&str]) -> Manifest {
        Manifest {
            format: FORMAT,
            token: "{t}".into(),
            targets: targets.iter().map(|s| s.to_string()).collect(),
            connections: vec!["a.y=b.u".into()],
            ignore_units: Vec::new(),
            ssd: None,
            start_values: vec!["a.k=2".into()],
            overrides: Overrides {
                step: Some(1e-3),
                stop: Some(1.0),
                ..Overrides::default()
            },
            threads: 0,
            allow_non_finite: false,
            log_fmi_calls: false,
            debug_logging: false,
            event_mode: false,
            interface: None,
            solver: SolverOptions::default(),
            variables: Vec::new(),
            workers: Workers::default(),
        }
    }

    #[test]
    fn a_manifest_reads_back_as_written() {
        let written = manifest(&["a=fmus/A.fmu"]);
        let text = serde_json::to_string(&written).unwrap();
        let read: Manifest = serde_json::from_str(&text).unwrap();
        assert_eq!(read, written);
    }

    #[test]
    fn the_request_finds_files_under_resources_and_the_importer_wins() {
        let resources = Path::new("/x/resources");
        let request = manifest(&["a=fmus/A.fmu", "fmus/B.fmu"]).request(
            resources,
            ImporterExperiment {
                start: 0.5,
                stop: Some(2.0),
                tolerance: None,
            },
            vec!["a.u=3".into()],
            None,
        );
        assert_eq!(
            request.targets,
            vec!["a=/x/resources/fmus/A.fmu", "/x/resources/fmus/B.fmu"]
        );
        assert_eq!(request.overrides.start, Some(0.5));
        assert_eq!(request.overrides.stop, Some(2.0));
        assert_eq!(request.overrides.step, Some(1e-3));
        assert_eq!(request.start_values, vec!["a.k=2", "a.u=3"]);
    }

    #[cfg(unix)]
    #[test]
    fn the_worker_program_is_found_under_the_fmu_and_made_executable() {
        use std::os::unix::fs::PermissionsExt;
        let root = tempfile::tempdir().unwrap();
        let resources = root.path().join("resources");
        std::fs::create_dir_all(&resources).unwrap();
        let workers = Workers {
            program: Some("binaries/linux64/worker".into()),
            ..Workers::default()
        };
        let missing = workers.program_in(&resources).unwrap_err().to_string();
        assert!(missing.contains("binaries/linux64/worker"), "{missing}");
        let program = root.path().join("binaries/linux64/worker");
        std::fs::create_dir_all(program.parent().unwrap()).unwrap();
        // As an importer that unzips without file modes leaves it.
        std::fs::write(&program, "").unwrap();
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(
            workers.program_in(&resources).unwrap(),
            Some(program.clone())
        );
        let mode = std::fs::metadata(&program).unwrap().permissions().mode();
        assert_eq!(mode & 0o111, 0o111, "{mode:o}");
        assert_eq!(Workers::default().program_in(&resources).unwrap(), None);
    }
}
