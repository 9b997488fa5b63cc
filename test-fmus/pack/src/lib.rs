//! fmu-pack: builds the model crates under `test-fmus/models` and packs each into an FMI 2.0
//! and an FMI 3.0 `.fmu` archive under `<workspace>/target/fmus/`.
//!
//! Tests call [`fmu_path`] and get a ready FMU; the build runs once per process, in its own
//! target directory (so it never waits on the lock of the `cargo test` that runs it), and
//! processes packing at the same time serialize on a lock file and write atomically.

use std::ffi::{c_char, c_int, CStr};
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// One packed FMU archive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackedFmu {
    /// Model name, e.g. "Oscillator".
    pub model: String,
    /// FMI major version, 2 or 3.
    pub fmi_version: u8,
    /// Path of the `.fmu` file.
    pub path: PathBuf,
}

/// The workspace root (two levels above this crate).
pub fn workspace_root() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    p.canonicalize().unwrap_or(p)
}

/// The folder where packed FMUs are written.
pub fn fmus_dir() -> PathBuf {
    workspace_root().join("target").join("fmus")
}

/// Builds every model crate under test-fmus/models (release profile, separate target dir
/// `<workspace>/target/test-fmus` so it never waits on an outer cargo's lock) and packs them
/// into `<workspace>/target/fmus/`; once per process, and safe when several processes do it
/// at once (a lock file; each `.fmu` is written to a temporary name, then renamed).
pub fn packed_fmus() -> Result<Vec<PackedFmu>, String> {
    static PACKED: OnceLock<Result<Vec<PackedFmu>, String>> = OnceLock::new();
    PACKED.get_or_init(pack_all).clone()
}

/// Path of one packed FMU, packing first if needed; panics with a clear message if packing
/// fails (a test helper).
pub fn fmu_path(model: &str, fmi_version: u8) -> PathBuf {
    let fmus = match packed_fmus() {
        Ok(f) => f,
        Err(e) => panic!("packing the test FMUs failed: {e}"),
    };
    match fmus
        .iter()
        .find(|f| f.model == model && f.fmi_version == fmi_version)
    {
        Some(f) => f.path.clone(),
        None => {
            let known: Vec<String> = fmus
                .iter()
                .map(|f| format!("{} (FMI {})", f.model, f.fmi_version))
                .collect();
            panic!(
                "no test FMU '{model}' for FMI {fmi_version}; packed: {}",
                known.join(", ")
            )
        }
    }
}

/// A model crate: its directory and package name.
struct ModelCrate {
    dir: PathBuf,
    package: String,
}

fn model_crates(root: &Path) -> Result<Vec<ModelCrate>, String> {
    let models = root.join("test-fmus").join("models");
    let entries = fs::read_dir(&models).map_err(|e| format!("{}: {e}", models.display()))?;
    let mut crates = Vec::new();
    for entry in entries {
        let dir = entry.map_err(|e| e.to_string())?.path();
        let manifest = dir.join("Cargo.toml");
        let Ok(text) = fs::read_to_string(&manifest) else {
            continue;
        };
        let package = text
            .lines()
            .map(str::trim)
            .find_map(|l| {
                let rest = l.strip_prefix("name")?.trim_start().strip_prefix('=')?;
                Some(rest.trim().trim_matches('"').to_owned())
            })
            .ok_or_else(|| format!("{}: no package name", manifest.display()))?;
        crates.push(ModelCrate { dir, package });
    }
    crates.sort_by(|a, b| a.package.cmp(&b.package));
    Ok(crates)
}

/// Runs cargo and returns the cdylib of each package.
fn build(root: &Path, crates: &[ModelCrate]) -> Result<Vec<(String, PathBuf)>, String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root)
        .args([
            "build",
            "--release",
            "--message-format=json",
            // The workspace keeps line tables in release builds for profiling; FMUs need none,
            // and without them the archives are a fraction of the size and pack much faster.
            "--config",
            "profile.release.debug=false",
            "--target-dir",
        ])
        .arg(root.join("target").join("test-fmus"));
    for c in crates {
        cmd.args(["-p", &c.package]);
    }
    let out = cmd
        .output()
        .map_err(|e| format!("could not run cargo: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo build of the model crates failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let mut libs = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if msg["reason"] != "compiler-artifact" {
            continue;
        }
        let is_cdylib = msg["target"]["kind"]
            .as_array()
            .is_some_and(|k| k.iter().any(|k| k == "cdylib"));
        if !is_cdylib {
            continue;
        }
        let name = msg["target"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        for f in msg["filenames"].as_array().into_iter().flatten() {
            if let Some(f) = f.as_str().filter(|f| f.ends_with(".so")) {
                libs.push((name.clone(), PathBuf::from(f)));
            }
        }
    }
    if libs.len() != crates.len() {
        return Err(format!(
            "expected {} shared libraries from cargo, found {}",
            crates.len(),
            libs.len()
        ));
    }
    Ok(libs)
}

/// Both model descriptions, from the library's `fmu_kit_model_description`.
fn descriptions(lib: &Path) -> Result<[String; 2], String> {
    let err = |e: libloading::Error| format!("{}: {e}", lib.display());
    // SAFETY: the library is one of our model crates; loading runs no foreign initialisers
    // and the symbol has the signature `export_fmu!` gives it.
    unsafe {
        let library = libloading::Library::new(lib).map_err(err)?;
        let f = library
            .get::<unsafe extern "C" fn(c_int) -> *const c_char>(b"fmu_kit_model_description")
            .map_err(err)?;
        let mut out = [String::new(), String::new()];
        for (slot, v) in out.iter_mut().zip([2, 3]) {
            let p = f(v);
            if p.is_null() {
                return Err(format!(
                    "{}: no FMI {v} model description (invalid variable table?)",
                    lib.display()
                ));
            }
            *slot = CStr::from_ptr(p).to_string_lossy().into_owned();
        }
        Ok(out)
    }
}

/// The value of `attr="..."` on the first element that has it.
pub fn xml_attr(xml: &str, attr: &str) -> Option<String> {
    let key = format!(" {attr}=\"");
    let start = xml.find(&key)? + key.len();
    let len = xml[start..].find('"')?;
    Some(xml[start..start + len].to_owned())
}

/// The bytes of one `.fmu` archive.
fn zip_fmu(
    xml: &str,
    binary_dir: &str,
    id: &str,
    lib: &Path,
    resources: &Path,
    reference: &Path,
) -> Result<Vec<u8>, String> {
    use zip::write::SimpleFileOptions;
    let io = |e: std::io::Error| e.to_string();
    let ze = |e: zip::result::ZipError| e.to_string();
    let opts = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    w.start_file("modelDescription.xml", opts).map_err(ze)?;
    w.write_all(xml.as_bytes()).map_err(io)?;
    w.start_file(
        format!("binaries/{binary_dir}/{id}.so"),
        opts.unix_permissions(0o755),
    )
    .map_err(ze)?;
    w.write_all(&fs::read(lib).map_err(|e| format!("{}: {e}", lib.display()))?)
        .map_err(io)?;
    if resources.is_dir() {
        let mut files = Vec::new();
        collect_files(resources, &mut files).map_err(io)?;
        files.sort();
        for f in files {
            let rel = f.strip_prefix(resources).map_err(|e| e.to_string())?;
            let name = format!("resources/{}", rel.to_string_lossy().replace('\\', "/"));
            w.start_file(name, opts).map_err(ze)?;
            w.write_all(&fs::read(&f).map_err(io)?).map_err(io)?;
        }
    }
    for (name, bytes) in ls_ref_files(reference)? {
        w.start_file(name, opts).map_err(ze)?;
        w.write_all(&bytes).map_err(io)?;
    }
    Ok(w.finish().map_err(ze)?.into_inner())
}

/// The folder of the FMI-LS-REF layered standard inside an FMU.
pub const LS_REF_FOLDER: &str = "extra/org.fmi-standard.fmi-ls-ref";

/// The files of FMI-LS-REF for a model crate's `reference/` folder, as (archive name, bytes):
/// its CSV files (`*_in.csv` / `input.csv` with role "input", the others role "result") and
/// a generated `fmi-ls-manifest.xml`. Nothing when the folder does not exist.
pub fn ls_ref_files(reference: &Path) -> Result<Vec<(String, Vec<u8>)>, String> {
    if !reference.is_dir() {
        return Ok(Vec::new());
    }
    let mut csvs: Vec<PathBuf> = fs::read_dir(reference)
        .map_err(|e| format!("{}: {e}", reference.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "csv"))
        .collect();
    csvs.sort();
    let mut files = Vec::new();
    let mut manifest = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<fmiReferences\n  \
         xmlns:fmi-ls=\"http://fmi-standard.org/fmi-ls-manifest\"\n  \
         fmi-ls:fmi-ls-name=\"org.fmi-standard.fmi-ls-ref\"\n  \
         fmi-ls:fmi-ls-version=\"1.0.0-alpha.1\"\n  \
         fmi-ls:fmi-ls-description=\"Reference results of the default experiment\">\n",
    );
    for csv in csvs {
        let name = csv
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let input = name == "input.csv" || name.ends_with("_in.csv");
        let (role, description) = if input {
            ("input", "Input of the default experiment")
        } else {
            ("result", "Output of the default experiment")
        };
        manifest.push_str(&format!(
            "  <Related type=\"text/csv\" source=\"{name}\" role=\"{role}\" description=\"{description}\"/>\n"
        ));
        let bytes = fs::read(&csv).map_err(|e| format!("{}: {e}", csv.display()))?;
        files.push((format!("{LS_REF_FOLDER}/{name}"), bytes));
    }
    if files.is_empty() {
        return Ok(files);
    }
    manifest.push_str("</fmiReferences>\n");
    files.push((
        format!("{LS_REF_FOLDER}/fmi-ls-manifest.xml"),
        manifest.into_bytes(),
    ));
    Ok(files)
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for e in fs::read_dir(dir)? {
        let p = e?.path();
        if p.is_dir() {
            collect_files(&p, out)?;
        } else {
            out.push(p);
        }
    }
    Ok(())
}

/// Writes `bytes` to `path` via a temporary file and a rename, unless it already holds them.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), String> {
    if fs::read(path).is_ok_and(|old| old == bytes) {
        return Ok(());
    }
    let tmp = path.with_extension(format!("fmu.tmp{}", std::process::id()));
    fs::write(&tmp, bytes).map_err(|e| format!("{}: {e}", tmp.display()))?;
    fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
}

/// Whether `fmu` was written after its library and every resource last changed, so packing
/// it again would produce the same archive (every test binary asks for the FMUs; zipping them
/// all each time costs seconds).
fn up_to_date(fmu: &Path, lib: &Path, resources: &Path, reference: &Path) -> bool {
    let modified = |p: &Path| fs::metadata(p).and_then(|m| m.modified()).ok();
    let Some(packed) = modified(fmu) else {
        return false;
    };
    let mut inputs = vec![lib.to_path_buf()];
    if resources.is_dir() && collect_files(resources, &mut inputs).is_err() {
        return false;
    }
    if reference.is_dir() && collect_files(reference, &mut inputs).is_err() {
        return false;
    }
    inputs
        .iter()
        .all(|input| modified(input).is_some_and(|changed| changed <= packed))
}

fn pack_all() -> Result<Vec<PackedFmu>, String> {
    let root = workspace_root();
    let dir = fmus_dir();
    fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let lock_path = dir.join(".pack.lock");
    let lock = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| format!("{}: {e}", lock_path.display()))?;
    lock.lock()
        .map_err(|e| format!("{}: {e}", lock_path.display()))?;
    let crates = model_crates(&root)?;
    let libs = build(&root, &crates)?;
    let mut packed = Vec::new();
    for c in &crates {
        let target = c.package.replace('-', "_");
        let lib = libs
            .iter()
            .find(|(name, _)| *name == target)
            .map(|(_, p)| p)
            .ok_or_else(|| format!("cargo built no library for {}", c.package))?;
        let [xml2, xml3] = descriptions(lib)?;
        for (version, xml, bin) in [(2u8, &xml2, "linux64"), (3u8, &xml3, "x86_64-linux")] {
            let id = xml_attr(xml, "modelIdentifier")
                .ok_or_else(|| format!("{}: no modelIdentifier", lib.display()))?;
            let model = xml_attr(xml, "modelName").unwrap_or_else(|| id.clone());
            let path = dir.join(format!("{model}-fmi{version}.fmu"));
            let resources = c.dir.join("resources");
            let reference = c.dir.join("reference");
            if !up_to_date(&path, lib, &resources, &reference) {
                let bytes = zip_fmu(xml, bin, &id, lib, &resources, &reference)?;
                write_atomically(&path, &bytes)?;
            }
            packed.push(PackedFmu {
                model,
                fmi_version: version,
                path,
            });
        }
    }
    drop(lock);
    Ok(packed)
}
