//! SSP import: `.ssp` archives, unpacked SSP folders and bare `.ssd` files -> [`System`].
//!
//! # What is read
//!
//! - **Packages**: a `.ssp` zip (extracted with the FMU extraction rules: no absolute paths, no
//!   `..`, no escaping symbolic links, size limits) or an unpacked folder; `SystemStructure.ssd`
//!   at the root is the default, any other `.ssd` of the package can be imported by name; a bare
//!   `.ssd` file works too.
//! - **Components** (`ssd:Component`, type `application/x-fmu-sharedlibrary`, implementation
//!   `any` or `CoSimulation`): `source` is a path relative to the `.ssd` file's folder
//!   (`resources/A.fmu`) or a `file:` URI. A relative path that leaves the package is taken
//!   relative to the package's own location on disk, as if a `.ssp` zip were a folder: a package
//!   `fmus/x.ssp` (zip or folder) with `SystemStructure.ssd` referencing
//!   `../../target/fmus/A.fmu` finds `target/fmus/A.fmu`. That is how the example SSPs in
//!   `fmus/` reach the project's FMUs, which are built into `target/fmus/` and not committed.
//! - **Connectors** (`ssc:Real`/`Float64`/`Float32`, `Integer` and the sized integers,
//!   `Boolean`, `String`, `Enumeration`, `Binary`) name FMU variables; connection ends must be
//!   declared connectors. Connector types are checked across each connection.
//! - **Nested systems**: connections are traced through system connectors and signal
//!   dictionaries (`.ssb` or inline) down to component connectors. Components of nested systems
//!   are named by their path below the root system joined with `/`
//!   (`outer/inner/component`), because cosimo writes endpoints `component.variable` and a
//!   component name may not contain `.`; SSP element names with `.` or `/` are refused.
//! - **Parameters**: `ssd:ParameterBinding` with inline `ssv:ParameterSet` or a `.ssv` file,
//!   optional `ssm:ParameterMapping` (inline or `.ssm`; linear, Boolean, integer and
//!   enumeration mappings are applied to the values), and `prefix`, which is prepended to every
//!   parameter name of the set (`prefix="mass1."` applies `m` to `mass1.m`). Precedence:
//!   bindings of an enclosing system override those of the elements inside it; among the
//!   bindings of one element, later ones override earlier ones. Names in a system's binding are
//!   `connector` (a parameter connector of the system, passed on along its connections) or
//!   `element.connector` (`sub.element.connector` into nested systems). A Real parameter whose
//!   unit differs from its connector's is converted.
//! - **Connections**: `ssc:LinearTransformation` becomes the connection's factor and offset;
//!   connector units of the same dimension are converted (connector units, `ssd:Units` with
//!   `ssc:BaseUnit`; conversion first, then the linear transformation; not when
//!   `suppressUnitConversion="true"`); different dimensions are an error. When both FMU
//!   variables declare convertible units of their own, cosimo's resolver converts them and the
//!   importer adds nothing. Boolean, integer and enumeration mapping transformations on
//!   connections are errors (cosimo's `Connection` has no value maps) unless they map every
//!   value onto itself.
//! - **Experiment**: `ssd:DefaultExperiment` `startTime` / `stopTime`, and cosimo's annotation
//!   (in the `ssc:Annotations` of `ssd:DefaultExperiment` or of the root element) for the rest:
//!
//! ```xml
//! <ssc:Annotation type="org.cosimo.experiment">
//!   <cosimo:Experiment xmlns:cosimo="urn:cosimo:ssp" stepSize="1e-3" outputInterval="1e-2"
//!       algorithm="jacobi|gauss-seidel|implicit" extrapolationOrder="0" parallel="false" tolerance="1e-6"
//!       loopSolver="newton|newton-finite-differences|fixed-point" loopAbsoluteTolerance="1e-10"
//!       loopRelativeTolerance="1e-10" loopMaxIterations="50"/>
//! </ssc:Annotation>
//! ```
//!
//!   Per component (`ssc:Annotations` of `ssd:Component`): type `org.cosimo.component` with
//!   `<cosimo:Component subSteps="4" isolate="true" callTimeout="2" workerGroup="g"
//!   interface="me" rank="1"/>` (a worker process for the component, a time limit in seconds
//!   per FMI call, a worker process shared with the components naming the same group, the
//!   FMU's interface, the MPI rank that steps it under `mpirun`: every component or none);
//!   per connection: type `org.cosimo.connection` with
//!   `<cosimo:Connection extrapolationOrder="1" halfStep="true" sourceIntegral="x_int"/>`
//!   (`halfStep` and `sourceIntegral` for the extended implicit coupling, with
//!   `correctorExtension="derivative|integral"` on the experiment). Unknown cosimo attributes
//!   are errors.
//!
//! Other vendors' annotations (OMSimulator, FMPy, libcosim, ...) and geometry are ignored with a
//! debug-level log note. Anything else cosimo does not support is reported with file, line and
//! element: a warning in [`Imported::warnings`] when it does not change results, an error when
//! it would.

mod params;
mod ssd;
mod units;
mod xml;

use std::path::{Component as PathPart, Path, PathBuf};

use super::System;
use crate::fmu::archive::ExtractLimits;
use crate::{Error, Result};

/// An opened SSP: a .ssp zip (extracted safely into a temp dir kept alive by the returned value) or an unpacked folder, or a bare .ssd file.
#[derive(Debug)]
pub struct SspPackage {
    /// The path the user gave.
    source: PathBuf,
    /// The package's location on disk, absolute: the .ssp file or folder (for a bare .ssd, its
    /// folder). Relative paths that leave the package are taken from here.
    location: PathBuf,
    /// The folder holding the package's files (extracted or the user's).
    root: PathBuf,
    /// A bare .ssd: its file name.
    bare: Option<String>,
    _temp: Option<crate::fmu::extract_dir::ExtractionDir>,
}

/// An imported system with what the import had to say about it.
#[derive(Debug, Clone)]
pub struct Imported {
    pub system: System,
    /// Harmless unsupported things, each naming file, line and element.
    pub warnings: Vec<String>,
    /// The `name` of the SystemStructureDescription.
    pub name: String,
    pub description: Option<String>,
}

/// The standard's name of the default system structure.
const DEFAULT_SSD: &str = "SystemStructure.ssd";

impl SspPackage {
    /// Open a `.ssp` zip, an unpacked SSP folder, or a bare `.ssd` file.
    pub fn open(path: &Path) -> Result<SspPackage> {
        let meta = match std::fs::metadata(path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::Archive {
                    path: path.to_path_buf(),
                    message: "no such file or folder (expected a .ssp file, an unpacked SSP \
                              folder or a .ssd file)"
                        .to_string(),
                })
            }
            Err(e) => return Err(Error::io(path, e)),
        };
        let absolute = normalise(&std::path::absolute(path).map_err(|e| Error::io(path, e))?);
        if meta.is_dir() {
            return Ok(SspPackage {
                source: path.to_path_buf(),
                location: absolute.clone(),
                root: absolute,
                bare: None,
                _temp: None,
            });
        }
        let is_ssd = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("ssd"));
        if is_ssd {
            let folder = absolute.parent().map(Path::to_path_buf).unwrap_or_default();
            let name = absolute
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            return Ok(SspPackage {
                source: path.to_path_buf(),
                location: folder.clone(),
                root: folder,
                bare: Some(name),
                _temp: None,
            });
        }
        let temp = crate::fmu::extract_dir::ExtractionDir::new("ssp")?;
        crate::fmu::archive::extract(path, temp.path(), ExtractLimits::default()).map_err(|e| {
            match e {
                Error::Archive { path, message } if message == crate::fmu::archive::NOT_A_ZIP => {
                    Error::Archive {
                        path,
                        message: "not a zip archive (a .ssp file is a zip file with \
                                  SystemStructure.ssd at its top level; an unpacked SSP is a \
                                  folder)"
                            .to_string(),
                    }
                }
                Error::Archive { path, message } => Error::Archive {
                    path,
                    message: message.replace("FMU folder", "SSP folder"),
                },
                other => other,
            }
        })?;
        Ok(SspPackage {
            source: path.to_path_buf(),
            location: absolute,
            root: temp.path().to_path_buf(),
            bare: None,
            _temp: Some(temp),
        })
    }

    /// Import the text of a `.ssd` file as if it were the bare `.ssd` file `path`: messages
    /// name `path`, and the files it references are looked for next to it. For callers that
    /// hold the text already (and the fuzz targets); the file itself need not exist.
    pub fn import_ssd_text(text: &str, path: &Path) -> Result<Imported> {
        let absolute = normalise(&std::path::absolute(path).map_err(|e| Error::io(path, e))?);
        let folder = absolute.parent().map(Path::to_path_buf).unwrap_or_default();
        let name = absolute
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| DEFAULT_SSD.to_string());
        let package = SspPackage {
            source: path.to_path_buf(),
            location: folder.clone(),
            root: folder,
            bare: Some(name.clone()),
            _temp: None,
        };
        ssd::import_text(&package, &name, text)
    }

    /// The path the user gave.
    pub fn source(&self) -> &Path {
        &self.source
    }

    /// The folder holding the package's files (a temporary folder for a `.ssp` zip).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The .ssd files in the package (SystemStructure.ssd first).
    pub fn ssd_files(&self) -> Vec<String> {
        if let Some(bare) = &self.bare {
            return vec![bare.clone()];
        }
        let mut found = Vec::new();
        collect_ssd(&self.root, "", &mut found, 0);
        found.sort_by(|a, b| (a != DEFAULT_SSD, a).cmp(&(b != DEFAULT_SSD, b)));
        found
    }

    /// Import one .ssd (None: SystemStructure.ssd) into a System. FMU paths in the System point into the extracted folder, so keep the SspPackage alive while the System runs.
    pub fn import(&self, ssd: Option<&str>) -> Result<Imported> {
        let files = self.ssd_files();
        let wanted = match (ssd, &self.bare) {
            (None, Some(bare)) => bare.clone(),
            (None, None) => DEFAULT_SSD.to_string(),
            (Some(name), _) => name.trim_start_matches("./").replace('\\', "/"),
        };
        if !files.contains(&wanted) {
            let listing = if files.is_empty() {
                "it holds no .ssd file".to_string()
            } else {
                format!("it holds {}", files.join(", "))
            };
            let message = match (ssd, &self.bare) {
                (None, None) => {
                    let hint = if files.is_empty() {
                        String::new()
                    } else {
                        format!("; choose one with --ssd {}", files[0])
                    };
                    let nested = files
                        .iter()
                        .find(|f| f.ends_with(&format!("/{DEFAULT_SSD}")))
                        .map(|f| {
                            format!(
                                " (\"{f}\" suggests the package was zipped with an extra \
                                 top-level folder: zip that folder's contents instead)"
                            )
                        })
                        .unwrap_or_default();
                    format!(
                        "no {DEFAULT_SSD} at the top level of the package (an SSP holds \
                         {DEFAULT_SSD} at its root); {listing}{hint}{nested}"
                    )
                }
                _ => format!("there is no \"{wanted}\" in the package; {listing}"),
            };
            return Err(Error::Archive {
                path: self.source.clone(),
                message,
            });
        }
        ssd::import(self, &wanted)
    }

    /// How a file of the package is named in messages.
    fn display(&self, relative: &Path) -> PathBuf {
        if self.bare.is_some() {
            match self.source.parent() {
                Some(parent) => parent.join(relative),
                None => relative.to_path_buf(),
            }
        } else {
            self.source.join(relative)
        }
    }

    /// The file on disk that `reference` (a relative path or a `file:` URI, written in a file
    /// in the package folder `folder`) names, and its name for messages.
    fn locate(&self, folder: &Path, reference: &str) -> std::result::Result<Located, String> {
        let reference = reference.trim();
        if reference.is_empty() {
            return Err("the reference is empty".to_string());
        }
        let path = if let Some(rest) = reference.strip_prefix("file:") {
            let rest = percent_decode(rest);
            let rest = match rest.strip_prefix("//") {
                // file://host/path: only the local host.
                Some(after) => match after.find('/') {
                    Some(0) => after.to_string(),
                    Some(i) if &after[..i] == "localhost" => after[i..].to_string(),
                    _ => {
                        return Err(format!(
                            "\"{reference}\" names another host; use a local file: URI \
                             (file:///path) or a relative path"
                        ))
                    }
                },
                None => rest,
            };
            PathBuf::from(rest)
        } else {
            if let Some((scheme, _)) = reference.split_once(':') {
                let is_scheme = scheme.len() > 1
                    && scheme
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
                if is_scheme {
                    return Err(format!(
                        "\"{reference}\": only relative paths and file: URIs are supported, not \
                         {scheme}: URIs"
                    ));
                }
            }
            PathBuf::from(percent_decode(reference))
        };
        let logical = if path.is_absolute() {
            normalise(&path)
        } else {
            normalise(&self.location.join(folder).join(&path))
        };
        let (disk, shown) = match logical.strip_prefix(&self.location) {
            Ok(inside) => (self.root.join(inside), self.display(inside)),
            Err(_) => (logical.clone(), logical.clone()),
        };
        Ok(Located { disk, shown })
    }
}

/// A referenced file: where it is, and how messages name it.
struct Located {
    disk: PathBuf,
    shown: PathBuf,
}

/// Collect the .ssd files below `dir` as '/'-separated paths (a few levels deep).
fn collect_ssd(dir: &Path, prefix: &str, found: &mut Vec<String>, depth: usize) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        let relative = format!("{prefix}{name}");
        if path.is_dir() {
            if depth < 4 {
                collect_ssd(&path, &format!("{relative}/"), found, depth + 1);
            }
        } else if Path::new(&name)
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("ssd"))
        {
            found.push(relative);
        }
    }
}

/// Lexically resolve `.` and `..` (no file system access).
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            PathPart::CurDir => {}
            PathPart::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Decode `%XX` escapes of a URI path.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
            if let Ok(v) = u8::from_str_radix(hex, 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
