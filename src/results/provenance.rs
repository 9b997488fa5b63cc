//! `cosimo check --update-references`: a case's result written as its reference, and beside it
//! a provenance file that says what made it: the cosimo version, the SHA-256 of each FMU, the
//! platform, the settings and the command that reproduces it.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::compare::SignalTable;
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

/// Refuse two cases that would write one reference file (`targets[i]` is case i's): the second
/// would overwrite the first's result and provenance.
pub fn refuse_shared(cases: &[Case], targets: &[Option<PathBuf>]) -> Result<()> {
    let mut seen: Vec<(PathBuf, &Case)> = Vec::new();
    for (case, target) in cases.iter().zip(targets) {
        let Some(target) = target else { continue };
        let key = same_file(target);
        if let Some((_, first)) = seen.iter().find(|(k, _)| *k == key) {
            return Err(Error::Usage(format!(
                "--update-references: the cases \"{}\" and \"{}\" share the reference {}, and \
                 each would write its own result to it: update them one at a time (cosimo check \
                 CASE --update-references), or give each its own reference",
                first.name,
                case.name,
                target.display()
            )));
        }
        seen.push((key, case));
    }
    Ok(())
}

/// A path that is the same for two spellings of one file (`a/../b/r.csv`, `b/r.csv`), also
/// when the file does not exist yet.
fn same_file(path: &Path) -> PathBuf {
    let folder = path.parent().filter(|p| !p.as_os_str().is_empty());
    let folder = folder.map_or_else(|| std::fs::canonicalize("."), std::fs::canonicalize);
    match (folder, path.file_name()) {
        (Ok(folder), Some(name)) => folder.join(name),
        _ => std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()),
    }
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
    // An existing reference keeps its columns: updating changes its values, not what is
    // checked. A new one holds every column the run recorded.
    let kept = std::fs::exists(target)
        .unwrap_or(false)
        .then(|| SignalTable::read(target).ok())
        .flatten()
        .map(|old| {
            old.column_names()
                .into_iter()
                .map(String::from)
                .collect::<Vec<_>>()
        });
    write_columns(result_file, target, kept.as_deref())?;
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

/// Write the result CSV `from` to `to` with the time and only the columns `keep` names (an
/// FMI 3 array kept whole when one of its elements `name[i]` is named); all of them for None.
/// Cells are copied as written: the numbers stay exact.
fn write_columns(from: &Path, to: &Path, keep: Option<&[String]>) -> Result<()> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .from_path(from)
        .map_err(|e| Error::Usage(format!("{}: {e}", from.display())))?;
    let headers = reader
        .headers()
        .map_err(|e| Error::Usage(format!("{}: {e}", from.display())))?
        .clone();
    let wanted = |name: &str| {
        keep.is_none_or(|keep| {
            keep.iter().any(|k| {
                k == name
                    || k.strip_prefix(name)
                        .is_some_and(|rest| rest.starts_with('[') && rest.ends_with(']'))
            })
        })
    };
    let columns: Vec<usize> = (0..headers.len())
        .filter(|&i| i == 0 || wanted(&headers[i]))
        .collect();
    let header: Vec<String> = columns
        .iter()
        .map(|&i| format!("\"{}\"", headers[i].replace('"', "\"\"")))
        .collect();
    let mut file = std::fs::File::create(to).map_err(|e| Error::io(to, e))?;
    use std::io::Write as _;
    writeln!(file, "{}", header.join(",")).map_err(|e| Error::io(to, e))?;
    let mut writer = csv::WriterBuilder::new()
        .quote_style(csv::QuoteStyle::Necessary)
        .from_writer(file);
    for record in reader.records() {
        let record = record.map_err(|e| Error::Usage(format!("{}: {e}", from.display())))?;
        writer
            .write_record(columns.iter().map(|&i| record.get(i).unwrap_or("")))
            .map_err(|e| Error::Usage(format!("{}: {e}", to.display())))?;
    }
    writer.flush().map_err(|e| Error::io(to, e))
}

/// The FMUs a case runs, each with its SHA-256: the model itself when it is an FMU, else every
/// component's FMU (one inside an SSP archive named `model.ssp!path/in/it.fmu`).
fn fmus_of(case: &Case) -> Result<Vec<(String, String)>> {
    if case.kind == ModelKind::Fmu {
        return Ok(vec![(
            case.model.display().to_string(),
            sha256_of(&case.model)?,
        )]);
    }
    // An SSP's package holds its extracted FMUs: kept until they are hashed.
    let mut package = None;
    let system = if case.kind == ModelKind::Ssp {
        let opened = crate::system::ssp::SspPackage::open(&case.model)?;
        let system = opened.import(None)?.system;
        package = Some(opened);
        system
    } else {
        crate::system::config::from_file(&case.model)?
    };
    let archive = case.model.is_file()
        && case
            .model
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("ssp"));
    let mut fmus: Vec<(String, String)> = Vec::new();
    for component in &system.components {
        let inside = package
            .as_ref()
            .filter(|_| archive)
            .and_then(|p| component.fmu.strip_prefix(p.root()).ok());
        let name = match inside {
            Some(relative) => format!("{}!{}", case.model.display(), relative.display()),
            None => component.fmu.display().to_string(),
        };
        if !fmus.iter().any(|(n, _)| *n == name) {
            fmus.push((name, sha256_of(&component.fmu)?));
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
