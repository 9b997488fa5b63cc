//! What a user names to run: one FMU, a system file, an SSP, or FMUs joined on the command
//! line. Loads the description of what to run (nothing is instantiated here).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::ssp::SspPackage;
use super::{config, System};
use crate::fmu::Fmu;
use crate::settings::{Experiment, Labels};
use crate::{Error, Result};

/// A loaded target.
pub enum Target {
    /// One FMU, to run alone (a one-component system with the FMU's own experiment).
    Fmu(Arc<Fmu>),
    /// A system.
    System(Box<LoadedSystem>),
}

/// A system loaded from a file or the command line.
pub struct LoadedSystem {
    pub system: System,
    /// How its source spells the experiment's settings.
    pub labels: Labels,
    /// The file it came from (`None`: the command line's short form).
    pub file: Option<PathBuf>,
    /// An SSP's extracted package: holds its FMUs, keep it until the run ends.
    pub package: Option<SspPackage>,
    /// What the SSP import could not map exactly.
    pub warnings: Vec<String>,
}

/// Whether `path` is an SSP: a `.ssp` archive or folder, a `.ssd` file, or a folder with a
/// `SystemStructure.ssd`.
pub fn is_ssp(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("ssp" | "ssd")
    ) || path.join("SystemStructure.ssd").is_file()
}

/// Load `targets` (one FMU, one `.json` system file, one SSP, or components `name=path` /
/// paths) with `connections` (`from=to`, only for components) and `ssd` (only for an SSP).
pub fn load(targets: &[String], connections: &[String], ssd: Option<&str>) -> Result<Target> {
    let first = targets
        .first()
        .ok_or_else(|| Error::Usage("name an FMU, a system file or an SSP to run".into()))?;
    let path = Path::new(first);
    let one = targets.len() == 1 && !first.contains('=');
    let file = one && (first.ends_with(".json") || is_ssp(path));
    if file && !connections.is_empty() {
        return Err(Error::Usage(format!(
            "--connect builds a system from FMUs named on the command line; {first} has its own connections: edit the file, or name the FMUs instead"
        )));
    }
    if ssd.is_some() && !(file && is_ssp(path)) {
        return Err(Error::Usage(
            "--ssd chooses the .ssd file of an SSP, but the target is not an SSP".into(),
        ));
    }
    if one && !file && connections.is_empty() {
        return Ok(Target::Fmu(Arc::new(Fmu::open(path)?)));
    }
    if file && is_ssp(path) {
        crate::fs_checks::check_regular(path, "an SSP")?;
        let package = SspPackage::open(path)?;
        let imported = package.import(ssd)?;
        return Ok(Target::System(Box::new(LoadedSystem {
            system: imported.system,
            labels: Labels::SSP,
            file: Some(path.to_path_buf()),
            package: Some(package),
            warnings: imported.warnings,
        })));
    }
    if file {
        return Ok(Target::System(Box::new(LoadedSystem {
            system: config::from_file(path)?,
            labels: Labels::SYSTEM_FILE,
            file: Some(path.to_path_buf()),
            package: None,
            warnings: Vec::new(),
        })));
    }
    Ok(Target::System(Box::new(LoadedSystem {
        system: config::from_command_line(targets, connections, Experiment::default())?,
        labels: Labels::COMMAND_LINE,
        file: None,
        package: None,
        warnings: Vec::new(),
    })))
}
