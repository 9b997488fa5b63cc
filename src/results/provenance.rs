//! `cosimo check --update-references`: a case's result written as its reference, and beside it
//! a provenance file that says what made it: the cosimo version, the SHA-256 of each FMU, the
//! platform, the settings and the command that reproduces it.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::reference::{Case, ModelKind};
use crate::settings::results::ResultFormat;
use crate::{Error, Result};

/// What the provenance file's name adds to the reference's: `reference.csv.provenance.json`.
pub const PROVENANCE_SUFFIX: &str = ".provenance.json";

/// The file a case folder's new reference is written to when it had none.
pub const NEW_REFERENCE: &str = "reference.csv";

/// Where `--update-references` writes the reference of `case`: its reference file, else
/// `reference.csv` in its case folder. A model given directly without `--reference` (its
/// reference is inside the FMU, which cosimo does not rewrite) and a reference that is not a
/// CSV file are refused.
pub fn reference_target(case: &Case) -> Result<PathBuf> {
    let target = match (&case.reference, &case.folder) {
        (Some(reference), _) => reference.clone(),
        (None, Some(folder)) => folder.join(NEW_REFERENCE),
        (None, None) => {
            return Err(Error::Usage(format!(
                "{}: --update-references has no file to write: this model's reference is its own \
                 FMI-LS-REF data (inside the FMU, which cosimo does not rewrite), or it has none; \
                 give --reference FILE.csv (written now, compared with from then on), or put the \
                 model in a case folder",
                case.model.display()
            )))
        }
    };
    let format = super::read::format_of(&target);
    if format != ResultFormat::Csv {
        return Err(Error::Usage(format!(
            "{}: --update-references writes CSV references, and this reference is read as {}: \
             name a .csv reference (--reference, or \"reference\" in {})",
            target.display(),
            format.extension().to_uppercase(),
            super::reference::SETTINGS_FILE
        )));
    }
    Ok(target)
}

/// The provenance file beside `reference`.
pub fn provenance_path(reference: &Path) -> PathBuf {
    let mut name = reference
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(PROVENANCE_SUFFIX);
    reference.with_file_name(name)
}

/// Whether `path` is a provenance file (not a model, in a case folder).
pub fn is_provenance(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with(PROVENANCE_SUFFIX))
}

/// Copy the case's result file to `target` as its reference and write the provenance beside
/// it; the provenance file's path. `command` is the command line that made it, `options` what
/// the command line set on top of the case's own settings.
pub fn write_reference(
    case: &Case,
    result_file: &Path,
    target: &Path,
    command: &[String],
    options: &serde_json::Value,
) -> Result<PathBuf> {
    if let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    }
    std::fs::copy(result_file, target).map_err(|e| Error::io(target, e))?;
    let settings_file = case
        .settings_file
        .as_ref()
        .map(|path| -> Result<serde_json::Value> {
            let text = crate::fs_checks::read_to_string(path, "check settings")?;
            serde_json::from_str(&text)
                .map_err(|e| Error::Usage(format!("{}: {e}", path.display())))
        })
        .transpose()?;
    let provenance = serde_json::json!({
        "cosimo": env!("CARGO_PKG_VERSION"),
        "case": case.name,
        "reference": target.display().to_string(),
        "model": {
            "path": case.model.display().to_string(),
            "sha256": sha256_of(&case.model)?,
        },
        "fmus": fmus_of(case)?
            .into_iter()
            .map(|(path, sha256)| serde_json::json!({"path": path, "sha256": sha256}))
            .collect::<Vec<_>>(),
        "platform": {
            "os": std::env::consts::OS,
            "arch": std::env::consts::ARCH,
        },
        "settings": {
            "file": case.settings_file.as_ref().map(|p| p.display().to_string()),
            "case": settings_file,
            "commandLine": options,
        },
        "directory": std::env::current_dir().ok().map(|d| d.display().to_string()),
        "command": command,
        "commandLine": shell_line(command),
    });
    let path = provenance_path(target);
    let text = serde_json::to_string_pretty(&provenance)
        .map_err(|e| Error::Usage(format!("{}: {e}", path.display())))?;
    std::fs::write(&path, text + "\n").map_err(|e| Error::io(&path, e))?;
    Ok(path)
}

/// The FMUs a case runs, each with its SHA-256: the model itself when it is an FMU, a system
/// file's components' FMUs, an SSP archive's FMUs (named `model.ssp!path/in/it.fmu`).
fn fmus_of(case: &Case) -> Result<Vec<(String, String)>> {
    let mut fmus = Vec::new();
    match case.kind {
        ModelKind::Fmu => fmus.push((case.model.display().to_string(), sha256_of(&case.model)?)),
        ModelKind::System => {
            let system = crate::system::config::from_file(&case.model)?;
            for component in &system.components {
                let path = component.fmu.display().to_string();
                if !fmus.iter().any(|(p, _)| *p == path) {
                    fmus.push((path, sha256_of(&component.fmu)?));
                }
            }
        }
        ModelKind::Ssp => {
            // An SSP archive holds its FMUs; an .ssd file or a folder names files beside it (a
            // folder's hash as the model covers them).
            let zip = std::fs::File::open(&case.model)
                .ok()
                .filter(|_| case.model.is_file())
                .and_then(|file| zip::ZipArchive::new(file).ok());
            let Some(mut zip) = zip else {
                return Ok(fmus);
            };
            for i in 0..zip.len() {
                let mut entry = zip.by_index(i).map_err(|e| {
                    Error::Usage(format!("{}: broken archive: {e}", case.model.display()))
                })?;
                if !entry.name().to_ascii_lowercase().ends_with(".fmu") {
                    continue;
                }
                let name = format!("{}!{}", case.model.display(), entry.name());
                let mut hasher = Sha256::new();
                std::io::copy(&mut entry, &mut hasher).map_err(|e| Error::io(&case.model, e))?;
                fmus.push((name, hex(&hasher.finalize())));
            }
        }
    }
    Ok(fmus)
}

/// The SHA-256 of a file, or of a folder's files (each one's path relative to the folder and
/// bytes, in path order).
pub fn sha256_of(path: &Path) -> Result<String> {
    let mut hasher = Sha256::new();
    if path.is_dir() {
        let mut files = Vec::new();
        list_files(path, path, &mut files)?;
        files.sort();
        for relative in files {
            let name = relative.to_string_lossy().replace('\\', "/");
            let bytes = std::fs::read(path.join(&relative)).map_err(|e| Error::io(path, e))?;
            hasher.update((name.len() as u64).to_le_bytes());
            hasher.update(name.as_bytes());
            hasher.update((bytes.len() as u64).to_le_bytes());
            hasher.update(&bytes);
        }
    } else {
        let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        let mut buffer = vec![0u8; 1 << 16];
        loop {
            let n = file.read(&mut buffer).map_err(|e| Error::io(path, e))?;
            if n == 0 {
                break;
            }
            hasher.update(&buffer[..n]);
        }
    }
    Ok(hex(&hasher.finalize()))
}

fn list_files(top: &Path, dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let path = entry.map_err(|e| Error::io(dir, e))?.path();
        if path.is_dir() {
            list_files(top, &path, out)?;
        } else if let Ok(relative) = path.strip_prefix(top) {
            out.push(relative.to_path_buf());
        }
    }
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A command line a POSIX shell reads back as `words`: words with characters the shell treats
/// specially are single-quoted.
pub fn shell_line(words: &[String]) -> String {
    words
        .iter()
        .map(|word| {
            let plain = !word.is_empty()
                && word.chars().all(|c| {
                    c.is_ascii_alphanumeric()
                        || matches!(c, '-' | '_' | '.' | '/' | '=' | ':' | ',' | '+' | '@' | '%')
                });
            if plain {
                word.clone()
            } else {
                format!("'{}'", word.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_quote_what_a_shell_would_split() {
        let words: Vec<String> = ["cosimo", "check", "my case/m.fmu", "--rtol", "1e-3", "it's"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            shell_line(&words),
            "cosimo check 'my case/m.fmu' --rtol 1e-3 'it'\\''s'"
        );
    }

    #[test]
    fn the_provenance_sits_beside_the_reference() {
        let path = provenance_path(Path::new("cases/a/reference.csv"));
        assert_eq!(path, Path::new("cases/a/reference.csv.provenance.json"));
        assert!(is_provenance(&path));
    }
}
