//! `cosimo inspect`: what an FMU, an SSP or a system file declares.

use std::path::{Path, PathBuf};

use clap::Args;

use super::{out, say};

use cosimo::fmu::values::check_array_size;
use cosimo::fmu::{summary, Fmu};
use cosimo::system::load::is_ssp;
use cosimo::system::ssp::{Imported, SspPackage};
use cosimo::Error;

#[derive(Args)]
pub(crate) struct InspectArgs {
    /// An FMU (.fmu file or unpacked folder), an SSP (.ssp file or folder, or a .ssd file) or a
    /// system file (.json).
    pub(crate) fmu: PathBuf,
    /// Print JSON (FMUs: schemas/inspect.schema.json) instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
    /// The .ssd file of an SSP to inspect (default: SystemStructure.ssd).
    #[arg(long)]
    pub(crate) ssd: Option<String>,
    /// Print no warnings (what the target declares is printed all the same).
    #[arg(long, short)]
    pub(crate) quiet: bool,
}

/// Import an SSP, printing what it uses that cosimo does not (harmlessly) support.
pub(crate) fn import_ssp(
    path: &Path,
    ssd: Option<&str>,
    quiet: bool,
) -> Result<(SspPackage, Imported), Error> {
    cosimo::fs_checks::check_regular(path, "an SSP")?;
    let package = SspPackage::open(path)?;
    let imported = package.import(ssd)?;
    if !quiet {
        for warning in &imported.warnings {
            say!("warning: {warning}");
        }
    }
    Ok((package, imported))
}

/// `cosimo inspect` of an SSP: its system as cosimo will run it.
fn inspect_ssp(args: &InspectArgs) -> Result<(), Error> {
    if args.json {
        return print_json(args);
    }
    let (package, imported) = import_ssp(&args.fmu, args.ssd.as_deref(), args.quiet)?;
    out!("{}", args.fmu.display());
    out!("  System           {}", imported.name);
    if let Some(d) = &imported.description {
        out!("  Description      {d}");
    }
    out!("  SSD files        {}", package.ssd_files().join(", "));
    print_system(&imported.system)?;
    Ok(())
}

/// Whether `path` names a system file (as `cosimo run` tells one from an FMU).
pub(crate) fn is_system_file(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("json"))
}

/// `cosimo inspect` of a system file: its components, their FMUs, connections and experiment
/// as `cosimo run` reads them (the FMUs are not opened: `cosimo inspect FMU` describes one).
fn inspect_system(args: &InspectArgs) -> Result<(), Error> {
    if args.ssd.is_some() {
        return Err(Error::Usage(
            "--ssd chooses the .ssd file of an SSP, but the target is a system file".into(),
        ));
    }
    let system = cosimo::system::config::from_file(&args.fmu)?;
    if args.json {
        use serde_json::json;
        let value = json!({
            "source": args.fmu.display().to_string(),
            "components": system.components.iter().map(|c| json!({
                "name": c.name,
                "fmu": c.fmu.display().to_string(),
                "parameters": c.start_values.iter().map(|(n, v)| (n.clone(), json!(v))).collect::<serde_json::Map<_, _>>(),
            })).collect::<Vec<_>>(),
            "connections": system.connections.iter().map(|c| json!({
                "from": c.from.to_string(), "to": c.to.to_string(), "factor": c.factor, "offset": c.offset,
            })).collect::<Vec<_>>(),
            "experiment": {
                "startTime": system.experiment.start,
                "stopTime": system.experiment.stop,
                "stepSize": system.experiment.step,
                "algorithm": system.experiment.algorithm.kind().to_string(),
            },
        });
        out!(
            "{}",
            serde_json::to_string_pretty(&value).unwrap_or_default()
        );
        return Ok(());
    }
    out!("{}", args.fmu.display());
    out!(
        "  System file      {} components, {} connections",
        system.components.len(),
        system.connections.len()
    );
    print_system(&system)?;
    out!(
        "\n  `cosimo inspect FMU` describes one component's FMU; `cosimo run {}` runs the system.",
        args.fmu.display()
    );
    Ok(())
}

/// The experiment, components and connections of a system.
fn print_system(system: &cosimo::system::System) -> Result<(), Error> {
    let e = &system.experiment;
    out!(
        "  Experiment       start {}, stop {}, step {}, {}",
        e.start,
        e.stop,
        e.step,
        e.algorithm.kind()
    );
    out!("\n  Components ({})", system.components.len());
    for c in &system.components {
        let parameters: Vec<String> = c
            .start_values
            .iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect();
        out!(
            "    {}  {}  {}",
            c.name,
            c.fmu.display(),
            parameters.join(" ")
        );
    }
    out!("\n  Connections ({})", system.connections.len());
    for c in &system.connections {
        let transform = if c.factor != 1.0 || c.offset != 0.0 {
            format!("  (x {} + {})", c.factor, c.offset)
        } else {
            String::new()
        };
        out!("    {} -> {}{transform}", c.from, c.to);
    }
    Ok(())
}

pub(crate) fn inspect(args: &InspectArgs) -> Result<(), Error> {
    if is_ssp(&args.fmu) {
        return inspect_ssp(args);
    }
    if is_system_file(&args.fmu) {
        return inspect_system(args);
    }
    if args.ssd.is_some() {
        return Err(Error::Usage(
            "--ssd chooses the .ssd file of an SSP, but the target is not an SSP".into(),
        ));
    }
    if args.json {
        return print_json(args);
    }
    let fmu = Fmu::open(&args.fmu)?;
    // Shown as declared, but `run` would refuse them.
    let description = fmu.file_description();
    for variable in description.variables.iter().filter(|v| v.is_array()) {
        if let Err(error) = check_array_size(description, variable) {
            if !args.quiet {
                say!("warning: {error}");
            }
        }
    }
    super::write_out(format_args!(
        "{}",
        summary::text_with_platforms(
            fmu.file_description(),
            &args.fmu,
            Some(&cosimo::fmu::build::platforms(fmu.archive().root()))
        )
    ))?;
    Ok(())
}

/// `cosimo inspect --json`, as the library builds it.
fn print_json(args: &InspectArgs) -> Result<(), Error> {
    let json = cosimo::request::inspect_json(&args.fmu, args.ssd.as_deref(), &mut |warning| {
        if !args.quiet {
            say!("warning: {warning}")
        }
    })?;
    out!(
        "{}",
        serde_json::to_string_pretty(&json).unwrap_or_default()
    );
    Ok(())
}
