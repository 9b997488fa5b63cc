//! `cosimo export`: a system (or one FMU) packed as an FMI 2 / FMI 3 Co-Simulation FMU, with
//! the options of `run` stored inside it.

use std::path::PathBuf;

use clap::Args;

use super::run::RunArgs;
use super::{out, say};
use cosimo::export::{export, library_file_name, manifest::Role, ExportRequest};
use cosimo::fmu::description::FmiVersion;
use cosimo::Error;

#[derive(Args)]
#[command(
    mut_arg("output_file", |a| a
        .short('o')
        .required(true)
        .help("The FMU to write (OUT.fmu)")),
    mut_arg("fmi_version", |a| a
        .help("FMI version of the exported FMU: 2 (the default) or 3 (shows arrays and every FMI 3 type)")),
)]
pub(crate) struct ExportArgs {
    #[command(flatten)]
    pub(crate) run: RunArgs,
    /// Show the variables whose `component.variable` name matches this pattern (`*` any
    /// text, `?` one character; repeatable): unconnected inputs, outputs and parameters.
    /// Default: every unconnected input and every output (or the system file's "export").
    #[arg(long, value_name = "PATTERN")]
    pub(crate) expose: Vec<String>,
    /// Do not show the variables matching this pattern (repeatable).
    #[arg(long, value_name = "PATTERN")]
    pub(crate) hide: Vec<String>,
    /// The container library to ship as the FMU's binary (default: $COSIMO_CONTAINER_LIBRARY,
    /// else libcosimo_container next to the cosimo executable or in ../lib).
    #[arg(long, value_name = "PATH")]
    pub(crate) container_library: Option<PathBuf>,
    /// The worker program to ship beside it when inner FMUs run in worker processes
    /// (--isolate, --call-timeout, a component's isolate, callTimeout or workerGroup); default:
    /// $COSIMO_CONTAINER_WORKER, else cosimo-container-worker next to the container library.
    /// Refused when no inner FMU runs in a worker process.
    #[arg(long, value_name = "PATH")]
    pub(crate) container_worker: Option<PathBuf>,
}

/// Options of `run` that have no meaning for an FMU that an importer drives.
fn refuse_run_only(args: &RunArgs) -> Result<(), Error> {
    let refused = [
        (args.real_time.is_some(), "--real-time"),
        (args.progress.is_some(), "--progress"),
        (args.progress_file.is_some(), "--progress-file"),
        (args.json, "--json"),
        (args.json_file.is_some(), "--json-file"),
        (args.scenario.is_some(), "--scenario"),
    ];
    for (given, option) in refused {
        if given {
            return Err(Error::Usage(format!(
                "cosimo export does not take {option}: the importer drives the exported FMU"
            )));
        }
    }
    Ok(())
}

/// The container library: the option, the environment, or next to this executable.
fn container_library(args: &ExportArgs) -> Result<PathBuf, Error> {
    if let Some(path) = &args.container_library {
        return Ok(path.clone());
    }
    if let Some(path) = std::env::var_os("COSIMO_CONTAINER_LIBRARY") {
        return Ok(PathBuf::from(path));
    }
    let name = library_file_name();
    let mut tried = Vec::new();
    if let Some(folder) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(PathBuf::from))
    {
        for candidate in [folder.join(&name), folder.join("../lib").join(&name)] {
            if candidate.is_file() {
                return Ok(candidate);
            }
            tried.push(candidate.display().to_string());
        }
    }
    Err(Error::Usage(format!(
        "cannot find the container library {name} (looked in {}): build it with `cargo build --release -p cosimo-container` (it lands next to cosimo in target/release), then pass --container-library PATH or set COSIMO_CONTAINER_LIBRARY",
        tried.join(", ")
    )))
}

pub(crate) fn export_command(args: &ExportArgs) -> Result<(), Error> {
    refuse_run_only(&args.run)?;
    let mut run = super::run::request(&args.run)?;
    let fmi_version = match run.fmi_version.take() {
        Some(FmiVersion::Fmi3) => FmiVersion::Fmi3,
        _ => FmiVersion::Fmi2,
    };
    let output = match args.run.output_file.as_slice() {
        [one] => one.clone(),
        _ => return Err(Error::Usage("name one FMU to write with -o OUT.fmu".into())),
    };
    let request = ExportRequest {
        run,
        output,
        fmi_version,
        expose: args.expose.clone(),
        hide: args.hide.clone(),
        library: container_library(args)?,
        worker: args.container_worker.clone(),
    };
    let quiet = args.run.quiet;
    let exported = export(&request, &mut |warning| {
        if !quiet {
            say!("warning: {warning}");
        }
    })?;
    if !quiet {
        let count = |role: &[Role]| {
            exported
                .variables
                .iter()
                .filter(|v| role.contains(&v.role))
                .count()
        };
        out!(
            "{}: FMI {fmi_version} Co-Simulation FMU {} with {} inputs, {} outputs, {} parameters (state get/set: {}, serialise: {})",
            exported.path.display(),
            exported.model_identifier,
            count(&[Role::Input]),
            count(&[Role::Output]),
            count(&[Role::Parameter, Role::TunableParameter]),
            exported.can_get_and_set_state,
            exported.can_serialize_state,
        );
    }
    Ok(())
}
