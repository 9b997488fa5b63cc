//! `.fmu` zip or unpacked folder; safe extraction; platform binary lookup.

use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::{Component, Path, PathBuf};

use crate::fmu::FmiVersion;
use crate::{Error, Result};

pub use super::extract_dir::remove_extracted_on_signals;
use super::extract_dir::ExtractionDir;

/// Limits that keep a hostile or broken archive from filling the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtractLimits {
    /// Most entries an archive may have.
    pub max_entries: usize,
    /// Most bytes all entries together may uncompress to (declared or actually written).
    pub max_total_size: u64,
    /// Most bytes one entry may uncompress to (declared or actually written).
    pub max_entry_size: u64,
}

impl Default for ExtractLimits {
    /// 2 GiB in all and per entry: far above real FMUs (binaries for a few platforms and
    /// resources, tens of MiB), far below a full temporary folder.
    fn default() -> Self {
        ExtractLimits {
            max_entries: 100_000,
            max_total_size: 2 << 30,
            max_entry_size: 2 << 30,
        }
    }
}

/// An FMU's files on disk: an extracted temporary folder (removed on drop) or a user's folder.
#[derive(Debug)]
pub struct FmuArchive {
    source: PathBuf,
    root: PathBuf,
    /// The extraction folder, deleted when the archive is dropped.
    _temp: Option<ExtractionDir>,
}

impl FmuArchive {
    /// Open a .fmu file (extracting it safely into a temporary folder) or an unpacked FMU folder.
    pub fn open(path: &Path) -> Result<FmuArchive> {
        Self::open_with_limits(path, ExtractLimits::default())
    }

    /// [`FmuArchive::open`] with explicit extraction limits.
    pub fn open_with_limits(path: &Path, limits: ExtractLimits) -> Result<FmuArchive> {
        let meta = match std::fs::metadata(path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(archive_error(
                    path,
                    "no such file or folder (expected a .fmu file or an unpacked FMU folder)",
                ))
            }
            Err(e) => return Err(Error::io(path, e)),
        };
        if let Some(message) = crate::fs_checks::special_file_message(path, "an FMU") {
            return Err(archive_error(path, &message));
        }
        if meta.is_dir() {
            let root = std::path::absolute(path).map_err(|e| Error::io(path, e))?;
            return Ok(FmuArchive {
                source: path.to_path_buf(),
                root,
                _temp: None,
            });
        }
        let temp = ExtractionDir::new("fmu")?;
        extract(path, temp.path(), limits)?;
        Ok(FmuArchive {
            source: path.to_path_buf(),
            root: temp.path().to_path_buf(),
            _temp: Some(temp),
        })
    }

    /// Rewrite an error about a file in the extraction folder to name it inside the FMU the user
    /// gave (`Model.fmu/modelDescription.xml`), not in a temporary folder that is gone by the
    /// time the user reads the message.
    pub fn name_by_source(&self, error: Error) -> Error {
        if self._temp.is_none() {
            return error;
        }
        let root = self.root.display().to_string();
        let source = self.source.display().to_string();
        let rename = |path: PathBuf| match path.strip_prefix(&self.root) {
            Ok(inside) => self.source.join(inside),
            Err(_) => path,
        };
        match error {
            Error::ModelDescription {
                path,
                line,
                message,
            } => Error::ModelDescription {
                path: rename(path),
                line,
                message: message.replace(&root, &source),
            },
            Error::Binary { path, message } => Error::Binary {
                path: rename(path),
                message: message.replace(&root, &source),
            },
            other => other,
        }
    }

    /// The path the user gave.
    pub fn source(&self) -> &Path {
        &self.source
    }

    /// The folder holding modelDescription.xml, binaries/, resources/.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Path of modelDescription.xml (an error if the FMU has none at its top level).
    pub fn model_description_path(&self) -> Result<PathBuf> {
        let path = self.root.join("modelDescription.xml");
        if path.is_file() {
            return Ok(path);
        }
        let mut message = "no modelDescription.xml at the top level of the FMU (an FMU holds \
                           modelDescription.xml, binaries/ and resources/ at its root)"
            .to_string();
        if let Some(folder) = self.nested_model_description() {
            message.push_str(&format!(
                "; there is one in \"{folder}/\": the FMU was packed with an extra top-level \
                 folder, zip the contents of \"{folder}/\" instead"
            ));
        }
        Err(archive_error(&self.source, &message))
    }

    /// A top-level folder holding a modelDescription.xml (a common packing mistake).
    fn nested_model_description(&self) -> Option<String> {
        let mut folders = sorted_entries(&self.root)
            .into_iter()
            .filter(|name| self.root.join(name).join("modelDescription.xml").is_file());
        folders.next()
    }

    /// resources/ folder, if present.
    pub fn resources_dir(&self) -> Option<PathBuf> {
        let path = self.root.join("resources");
        path.is_dir().then_some(path)
    }

    /// The shared library of `model_identifier` for this platform, e.g. FMI 2
    /// `binaries/linux64/<id>.so` or FMI 3 `binaries/x86_64-linux/<id>.so`.
    pub fn binary_path(&self, version: FmiVersion, model_identifier: &str) -> Result<PathBuf> {
        let binary_error = |message: String| Error::Binary {
            path: self.source.clone(),
            message,
        };
        if model_identifier.is_empty()
            || model_identifier.contains(['/', '\\', '\0'])
            || model_identifier == ".."
        {
            return Err(binary_error(format!(
                "modelIdentifier \"{model_identifier}\" is not a valid file name"
            )));
        }
        let file_name = format!("{model_identifier}{LIBRARY_EXTENSION}");
        let folders = platform_folders(version);
        let binaries = self.root.join("binaries");
        for folder in folders {
            let path = binaries.join(folder).join(&file_name);
            if path.is_file() {
                return Ok(path);
            }
        }
        let Some(wanted) = folders.first() else {
            return Err(binary_error(format!(
                "cosimo does not know the FMI {version} platform folder for this machine \
                 ({}-{})",
                std::env::consts::ARCH,
                std::env::consts::OS
            )));
        };
        let expected = format!("binaries/{wanted}/{file_name}");
        let shipped = sorted_entries(&binaries)
            .into_iter()
            .filter(|name| binaries.join(name).is_dir())
            .collect::<Vec<_>>();
        let message = if let Some(folder) = folders.iter().find(|f| binaries.join(f).is_dir()) {
            let files = sorted_entries(&binaries.join(folder));
            format!(
                "expected {expected}, but binaries/{folder}/ holds {}; check that \
                 modelIdentifier \"{model_identifier}\" in modelDescription.xml matches the \
                 library's name",
                if files.is_empty() {
                    "nothing".to_string()
                } else {
                    files.join(", ")
                }
            )
        } else if shipped.is_empty() {
            format!(
                "the FMU ships no binaries (expected {expected}); it may contain only source \
                 code: build it for {wanted} or ask its vendor for a {wanted} binary"
            )
        } else {
            format!(
                "no binary for this platform (expected {expected}); the FMU ships binaries for \
                 {} only: export it for {wanted} or run it on one of those platforms",
                shipped.join(", ")
            )
        };
        Err(binary_error(message))
    }
}

/// File extension of shared libraries on this platform.
#[cfg(target_os = "windows")]
pub(crate) const LIBRARY_EXTENSION: &str = ".dll";
/// File extension of shared libraries on this platform.
#[cfg(target_os = "macos")]
pub(crate) const LIBRARY_EXTENSION: &str = ".dylib";
/// File extension of shared libraries on this platform.
#[cfg(not(any(target_os = "windows", target_os = "macos")))]
pub(crate) const LIBRARY_EXTENSION: &str = ".so";

/// The folders under `binaries/` that may hold this platform's library, preferred first.
pub fn platform_folders(version: FmiVersion) -> &'static [&'static str] {
    let (os, arch) = (std::env::consts::OS, std::env::consts::ARCH);
    match (version, os, arch) {
        (FmiVersion::Fmi2, "linux", "x86_64") => &["linux64"],
        (FmiVersion::Fmi2, "linux", "x86") => &["linux32"],
        (FmiVersion::Fmi2, "linux", "aarch64") => &["aarch64-linux", "linux64"],
        (FmiVersion::Fmi2, "windows", "x86_64") => &["win64"],
        (FmiVersion::Fmi2, "windows", "x86") => &["win32"],
        (FmiVersion::Fmi2, "macos", "x86_64") => &["darwin64"],
        (FmiVersion::Fmi2, "macos", "aarch64") => &["darwin64", "aarch64-darwin"],
        (FmiVersion::Fmi3, "linux", "x86_64") => &["x86_64-linux"],
        (FmiVersion::Fmi3, "linux", "x86") => &["x86-linux"],
        (FmiVersion::Fmi3, "linux", "aarch64") => &["aarch64-linux"],
        (FmiVersion::Fmi3, "windows", "x86_64") => &["x86_64-windows"],
        (FmiVersion::Fmi3, "windows", "x86") => &["x86-windows"],
        (FmiVersion::Fmi3, "windows", "aarch64") => &["aarch64-windows"],
        (FmiVersion::Fmi3, "macos", "x86_64") => &["x86_64-darwin"],
        (FmiVersion::Fmi3, "macos", "aarch64") => &["aarch64-darwin"],
        _ => &[],
    }
}

/// Names in `dir`, sorted (empty when it cannot be read).
fn sorted_entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn archive_error(path: &Path, message: &str) -> Error {
    Error::Archive {
        path: path.to_path_buf(),
        message: message.to_string(),
    }
}

pub(crate) const NOT_A_ZIP: &str =
    "not a zip archive (an FMU is a zip file with modelDescription.xml at its top level)";

/// Unix file type bits and the symbolic-link type.
const S_IFMT: u32 = 0o170000;
const S_IFLNK: u32 = 0o120000;

/// Extract the zip archive at `path` into `dest`, refusing anything that could escape it.
pub(crate) fn extract(path: &Path, dest: &Path, limits: ExtractLimits) -> Result<()> {
    let fail = |message: String| Error::Archive {
        path: path.to_path_buf(),
        message,
    };
    if let Some(message) = crate::fs_checks::special_file_message(path, "an archive") {
        return Err(fail(message));
    }
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut zip = zip::ZipArchive::new(BufReader::new(file)).map_err(|e| match e {
        zip::result::ZipError::Io(e) if e.kind() != std::io::ErrorKind::UnexpectedEof => {
            Error::io(path, e)
        }
        _ => fail(NOT_A_ZIP.to_string()),
    })?;

    if zip.len() > limits.max_entries {
        return Err(fail(format!(
            "the archive has {} entries, more than the limit of {}; refusing to extract it",
            zip.len(),
            limits.max_entries
        )));
    }
    let mut declared: u64 = 0;
    for i in 0..zip.len() {
        let entry = zip
            .by_index_raw(i)
            .map_err(|e| fail(format!("cannot read entry #{i}: {e}")))?;
        declared = declared.saturating_add(entry.size());
    }
    if declared > limits.max_total_size {
        return Err(fail(format!(
            "the archive declares {declared} bytes of uncompressed contents, more than the \
             limit of {} bytes; refusing to extract it",
            limits.max_total_size
        )));
    }

    let mut written: u64 = 0;
    let mut buffer = vec![0u8; 64 * 1024];
    for i in 0..zip.len() {
        let mut entry = zip
            .by_index(i)
            .map_err(|e| fail(format!("cannot read entry #{i}: {e}")))?;
        let name = String::from_utf8_lossy(entry.name_raw()).into_owned();
        let relative = safe_relative_path(&name).map_err(&fail)?;
        if relative.as_os_str().is_empty() {
            continue;
        }
        let target = dest.join(&relative);
        let mode = entry.unix_mode();
        let is_symlink = mode.is_some_and(|m| m & S_IFMT == S_IFLNK);

        if is_symlink {
            let mut link = Vec::new();
            entry
                .by_ref()
                .take(4096)
                .read_to_end(&mut link)
                .map_err(|e| fail(format!("entry \"{name}\": {e}")))?;
            let link = String::from_utf8_lossy(&link).into_owned();
            check_symlink_target(&name, &link).map_err(&fail)?;
            create_parent(&target)?;
            make_symlink(&link, &target)?;
            continue;
        }
        if entry.is_dir() {
            std::fs::create_dir_all(&target).map_err(|e| Error::io(&target, e))?;
            continue;
        }

        // The declared size bounds what is read: a deflate stream may inflate to far more.
        let declared = entry.size();
        if declared > limits.max_entry_size {
            return Err(fail(format!(
                "entry \"{name}\" declares {declared} bytes of uncompressed contents, more than \
                 the limit of {} bytes per entry; refusing to extract it",
                limits.max_entry_size
            )));
        }
        create_parent(&target)?;
        let mut out = File::create(&target).map_err(|e| Error::io(&target, e))?;
        let mut contents = entry.by_ref().take(declared);
        loop {
            let n = contents
                .read(&mut buffer)
                .map_err(|e| fail(format!("entry \"{name}\" is corrupt: {e}")))?;
            if n == 0 {
                break;
            }
            written += n as u64;
            if written > limits.max_total_size {
                return Err(fail(format!(
                    "the archive uncompresses to more than the limit of {} bytes (at entry \
                     \"{name}\"); refusing to extract it",
                    limits.max_total_size
                )));
            }
            out.write_all(&buffer[..n])
                .map_err(|e| Error::io(&target, e))?;
        }
        // Reading on to the end of the stream also checks the entry's CRC.
        let beyond = entry
            .read(&mut buffer[..1])
            .map_err(|e| fail(format!("entry \"{name}\" is corrupt: {e}")))?;
        if beyond > 0 {
            return Err(fail(format!(
                "entry \"{name}\" uncompresses to more than the {declared} bytes it declares \
                 (a corrupt or hostile archive); refusing to extract it"
            )));
        }
        drop(out);
        set_permissions(&target, &relative, mode)?;
    }
    Ok(())
}

/// The entry's path relative to the extraction folder, or why it is unsafe.
fn safe_relative_path(name: &str) -> std::result::Result<PathBuf, String> {
    let unsafe_entry = |why: &str| {
        format!("entry \"{name}\" {why}; refusing to extract the archive (unsafe zip entry)")
    };
    if name.contains('\0') {
        return Err(unsafe_entry("contains a NUL character"));
    }
    let normalised = name.replace('\\', "/");
    let has_drive = normalised.len() >= 2
        && normalised.as_bytes()[1] == b':'
        && normalised.as_bytes()[0].is_ascii_alphabetic();
    if normalised.starts_with('/') || has_drive {
        return Err(unsafe_entry("has an absolute path"));
    }
    let mut relative = PathBuf::new();
    for part in normalised.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                return Err(unsafe_entry(
                    "has a \"..\" component and would be written outside the FMU folder",
                ))
            }
            _ => {
                let p = Path::new(part);
                if !matches!(p.components().next(), Some(Component::Normal(_)))
                    || p.components().count() != 1
                {
                    return Err(unsafe_entry("has an invalid path"));
                }
                relative.push(part);
            }
        }
    }
    Ok(relative)
}

/// A symbolic link may only point into its own folder or below it.
fn check_symlink_target(name: &str, link: &str) -> std::result::Result<(), String> {
    let normalised = link.replace('\\', "/");
    let escapes = normalised.is_empty()
        || normalised.starts_with('/')
        || normalised.split('/').any(|part| part == "..")
        || (normalised.len() >= 2 && normalised.as_bytes()[1] == b':');
    if escapes {
        Err(format!(
            "entry \"{name}\" is a symbolic link to \"{link}\", which may point outside the FMU \
             folder; refusing to extract the archive (unsafe zip entry)"
        ))
    } else {
        Ok(())
    }
}

fn create_parent(target: &Path) -> Result<()> {
    match target.parent() {
        Some(parent) => std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e)),
        None => Ok(()),
    }
}

#[cfg(unix)]
fn make_symlink(link: &str, target: &Path) -> Result<()> {
    if target.symlink_metadata().is_ok() {
        std::fs::remove_file(target).map_err(|e| Error::io(target, e))?;
    }
    std::os::unix::fs::symlink(link, target).map_err(|e| Error::io(target, e))
}

#[cfg(not(unix))]
fn make_symlink(_link: &str, _target: &Path) -> Result<()> {
    // Symbolic links need privileges elsewhere; FMUs do not rely on them.
    Ok(())
}

/// Files under binaries/ get 0o755; others keep their executable bits from the archive.
#[cfg(unix)]
fn set_permissions(target: &Path, relative: &Path, mode: Option<u32>) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let perms = if relative.starts_with("binaries") {
        Some(0o755)
    } else {
        mode.filter(|m| m & 0o111 != 0).map(|m| (m & 0o777) | 0o600)
    };
    match perms {
        Some(p) => std::fs::set_permissions(target, std::fs::Permissions::from_mode(p))
            .map_err(|e| Error::io(target, e)),
        None => Ok(()),
    }
}

#[cfg(not(unix))]
fn set_permissions(_target: &Path, _relative: &Path, _mode: Option<u32>) -> Result<()> {
    Ok(())
}
