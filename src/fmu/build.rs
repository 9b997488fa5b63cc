//! An FMU that ships only sources -> a binary for the host, built with the system's C compiler
//! into a cache keyed by the sources' content, the compiler and its flags.
//!
//! What to compile comes from `sources/buildDescription.xml` (FMI 3, and FMI 2.0.4) or else the
//! FMI 2 `<SourceFiles>` of the model description: every build configuration of the model
//! identifier that matches this platform, each source file set with its language standard,
//! include directories and preprocessor definitions, and the libraries to link. Every path in
//! those files is checked to stay inside `sources/`. The user's `$CFLAGS` join every
//! compilation (e.g. `-I` the FMI headers, which an FMU may leave out of its sources).
//!
//! The cache is `$COSIMO_BUILD_CACHE` if set, else the user's cache folder
//! (`$XDG_CACHE_HOME/cosimo/builds`, `~/.cache/cosimo/builds`; `~/Library/Caches/...` on macOS,
//! `%LOCALAPPDATA%\...` on Windows). An entry is a folder named by the SHA-256 of everything
//! that goes into the binary; a second run of the same FMU finds it and compiles nothing.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

use super::archive::{platform_folders, FmuArchive, LIBRARY_EXTENSION};
use super::FmiVersion;
use crate::xml::{self, Element};
use crate::{Error, Result};

/// The environment variable naming the build cache folder.
pub const CACHE_ENV: &str = "COSIMO_BUILD_CACHE";

/// The name `inspect` gives the sources among the platforms (FMI 3 calls it so too).
pub const C_CODE: &str = "c-code";

/// Bumped when what goes into a binary changes, so that old cache entries are not reused.
const SCHEME: &str = "cosimo-build-1";

/// Flags every compilation gets: position-independent code for a shared library.
const BASE_FLAGS: &[&str] = &["-fPIC", "-O2"];

/// What one build compiles and links.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildPlan {
    /// The model identifier: the library's name.
    pub model_identifier: String,
    /// Where the plan was read, inside the FMU (`sources/buildDescription.xml` or
    /// `modelDescription.xml`).
    pub described_in: String,
    /// The source file sets, compiled each with its own flags.
    pub sets: Vec<SourceSet>,
    /// Libraries to link (`-lNAME`), in order, without repeats.
    pub libraries: Vec<String>,
    /// What the description asks that cosimo does not do (said as warnings).
    pub notes: Vec<String>,
}

/// Source files compiled with the same flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceSet {
    /// The language standard as the description names it (`C99`); `None`: the compiler's own.
    pub language: Option<String>,
    /// Source files, relative to `sources/`.
    pub files: Vec<String>,
    /// Include directories, relative to `sources/`.
    pub include_dirs: Vec<String>,
    /// Preprocessor definitions: name and optional value.
    pub definitions: Vec<(String, Option<String>)>,
}

impl SourceSet {
    /// The compiler flags of this set, its include directories under `sources`.
    fn flags(&self, sources: &Path) -> Result<Vec<String>, String> {
        let mut flags: Vec<String> = BASE_FLAGS.iter().map(|f| f.to_string()).collect();
        if let Some(language) = &self.language {
            flags.push(format!("-std={}", standard(language)?));
        }
        for dir in &self.include_dirs {
            flags.push(format!("-I{}", sources.join(dir).display()));
        }
        for (name, value) in &self.definitions {
            flags.push(match value {
                Some(value) => format!("-D{name}={value}"),
                None => format!("-D{name}"),
            });
        }
        Ok(flags)
    }
}

/// The `-std=` value of a build description's language.
fn standard(language: &str) -> Result<&'static str, String> {
    Ok(match language.trim().to_ascii_uppercase().as_str() {
        "C89" => "c89",
        "C90" => "c90",
        "C99" => "c99",
        "C11" => "c11",
        "C17" | "C18" => "c17",
        "C23" => "c2x",
        other if other.starts_with("C++") => {
            return Err(format!(
                "language \"{language}\": cosimo builds C sources only; build this FMU with \
                 a C++ toolchain by hand"
            ))
        }
        _ => {
            return Err(format!(
                "language \"{language}\" is not a C standard cosimo knows (C89, C90, C99, \
                 C11, C17, C18, C23)"
            ))
        }
    })
}

/// Whether the FMU ships a `sources/` folder.
pub fn has_sources(root: &Path) -> bool {
    root.join("sources").is_dir()
}

/// The platforms an FMU ships binaries for (the folders under `binaries/`), and `c-code` when
/// it ships sources.
pub fn platforms(root: &Path) -> Vec<String> {
    let binaries = root.join("binaries");
    let mut names: Vec<String> = std::fs::read_dir(&binaries)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter(|e| e.path().is_dir())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    if has_sources(root) {
        names.push(C_CODE.to_string());
    }
    names
}

/// The plan for `model_identifier` of the FMU at `root`: from `sources/buildDescription.xml`,
/// else (FMI 2) the model description's `<SourceFiles>`; `None` when neither is there. Errors
/// name the file as `shown` (the FMU the user gave) joined with the file inside it.
pub fn plan(
    root: &Path,
    shown: &Path,
    version: FmiVersion,
    model_identifier: &str,
) -> Result<Option<BuildPlan>> {
    let sources = root.join("sources");
    let build_description = sources.join("buildDescription.xml");
    if build_description.is_file() {
        let inside = "sources/buildDescription.xml";
        let text = read_text(&build_description, &shown.join(inside))?;
        return from_build_description(&text, &sources, model_identifier)
            .map(Some)
            .map_err(|fail| description_error(shown, inside, fail));
    }
    if version == FmiVersion::Fmi2 {
        let inside = "modelDescription.xml";
        let text = read_text(&root.join(inside), &shown.join(inside))?;
        return from_source_files(&text, &sources, model_identifier)
            .map_err(|fail| description_error(shown, inside, fail));
    }
    Ok(None)
}

/// Why sources without a build description give no binary.
pub fn no_description(model_identifier: &str) -> String {
    format!(
        "the FMU's sources/ come with neither sources/buildDescription.xml nor <SourceFiles> for \
         model \"{model_identifier}\", so cosimo cannot tell what to compile"
    )
}

fn read_text(path: &Path, shown: &Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(shown, e))?;
    String::from_utf8(bytes).map_err(|_| Error::ModelDescription {
        path: shown.to_path_buf(),
        line: 1,
        message: "not UTF-8 text".into(),
    })
}

fn description_error(shown: &Path, inside: &str, fail: xml::Fail) -> Error {
    Error::ModelDescription {
        path: shown.join(inside),
        line: fail.line,
        message: fail.message,
    }
}

/// The platform names a build configuration may give for this machine (FMI 3 and FMI 2).
fn host_platform_names() -> BTreeSet<&'static str> {
    platform_folders(FmiVersion::Fmi3)
        .iter()
        .chain(platform_folders(FmiVersion::Fmi2))
        .copied()
        .collect()
}

/// This machine's platform folder for `version` (`x86_64-linux`), or its OS and architecture.
pub fn host_platform(version: FmiVersion) -> String {
    platform_folders(version).first().map_or_else(
        || format!("{}-{}", std::env::consts::ARCH, std::env::consts::OS),
        |p| p.to_string(),
    )
}

/// The plan of a build description (`fmiBuildDescription`).
fn from_build_description(
    xml_text: &str,
    sources: &Path,
    model_identifier: &str,
) -> xml::R<BuildPlan> {
    let root = xml::parse_tree(xml_text)?;
    if root.name != "fmiBuildDescription" {
        return Err(xml::Fail::new(
            root.line,
            format!(
                "the root element is <{}>, expected <fmiBuildDescription>",
                root.name
            ),
        ));
    }
    let platforms = host_platform_names();
    let mut plan = BuildPlan {
        model_identifier: model_identifier.to_string(),
        described_in: "sources/buildDescription.xml".into(),
        sets: Vec::new(),
        libraries: Vec::new(),
        notes: Vec::new(),
    };
    let mut seen = Vec::new();
    let mut matched = false;
    for config in root.children_named("BuildConfiguration") {
        let identifier = required(config, "modelIdentifier")?;
        let platform = config.attr("platform").map(str::trim);
        seen.push(match platform {
            Some(p) => format!("{identifier} on {p}"),
            None => identifier.to_string(),
        });
        if identifier != model_identifier || platform.is_some_and(|p| !platforms.contains(p)) {
            continue;
        }
        matched = true;
        for set in config.children_named("SourceFileSet") {
            plan.sets.push(source_set(set, sources, &mut plan.notes)?);
        }
        for library in config.children_named("Library") {
            let name = required(library, "name")?;
            if !is_library_name(name) {
                return Err(xml::Fail::new(
                    library.line,
                    format!(
                        "<Library name=\"{name}\">: not a library name (letters, digits and \
                         \"_.+-\", not starting with \"-\")"
                    ),
                ));
            }
            if !plan.libraries.iter().any(|l| l == name) {
                plan.libraries.push(name.to_string());
            }
        }
    }
    if !matched {
        return Err(xml::Fail::new(
            root.line,
            format!(
                "no <BuildConfiguration> for model \"{model_identifier}\" on this platform \
                 ({}); it has {}",
                platforms.into_iter().collect::<Vec<_>>().join(" or "),
                if seen.is_empty() {
                    "none".to_string()
                } else {
                    seen.join(", ")
                }
            ),
        ));
    }
    if plan.sets.iter().all(|s| s.files.is_empty()) {
        return Err(xml::Fail::new(
            root.line,
            format!("the build configurations of model \"{model_identifier}\" name no source file"),
        ));
    }
    Ok(plan)
}

/// One `<SourceFileSet>`.
fn source_set(set: &Element, sources: &Path, notes: &mut Vec<String>) -> xml::R<SourceSet> {
    let language = set.attr("language").map(str::to_string);
    if let Some(language) = &language {
        standard(language)
            .map_err(|m| xml::Fail::new(set.line, format!("<SourceFileSet>: {m}")))?;
    }
    if let Some(options) = set.attr("compilerOptions").filter(|o| !o.trim().is_empty()) {
        // Options from a file could name any output or plug-in: they are not passed on.
        notes.push(format!(
            "line {}: compilerOptions=\"{options}\" are not passed to the compiler (cosimo \
             passes only the standard, include directories, definitions and libraries)",
            set.line
        ));
    }
    let mut files = Vec::new();
    for file in set.children_named("SourceFile") {
        files.push(inside_sources(
            file,
            required(file, "name")?,
            sources,
            false,
        )?);
    }
    let mut include_dirs = Vec::new();
    for dir in set.children_named("IncludeDirectory") {
        include_dirs.push(inside_sources(dir, required(dir, "name")?, sources, true)?);
    }
    let mut definitions = Vec::new();
    for definition in set.children_named("PreprocessorDefinition") {
        let name = required(definition, "name")?;
        if !is_c_identifier(name) {
            return Err(xml::Fail::new(
                definition.line,
                format!("<PreprocessorDefinition name=\"{name}\">: not a C identifier"),
            ));
        }
        let value = definition.attr("value").map(str::to_string);
        if value.as_deref().is_some_and(|v| v.contains(['\n', '\r'])) {
            return Err(xml::Fail::new(
                definition.line,
                format!("<PreprocessorDefinition name=\"{name}\">: the value spans lines"),
            ));
        }
        definitions.push((name.to_string(), value));
    }
    Ok(SourceSet {
        language,
        files,
        include_dirs,
        definitions,
    })
}

/// The plan of an FMI 2 model description's `<SourceFiles>` (of the interface whose model
/// identifier is `model_identifier`): one C set, with `sources/` as include directory; `None`
/// when that interface lists no source files.
fn from_source_files(
    xml_text: &str,
    sources: &Path,
    model_identifier: &str,
) -> xml::R<Option<BuildPlan>> {
    let root = xml::parse_tree(xml_text)?;
    let interface = root
        .children
        .iter()
        .filter(|c| c.name == "CoSimulation" || c.name == "ModelExchange")
        .find(|c| c.attr("modelIdentifier") == Some(model_identifier));
    let list = interface.and_then(|i| i.child("SourceFiles"));
    let Some(list) = list else {
        return Ok(None);
    };
    let mut files = Vec::new();
    for file in list.children_named("File") {
        files.push(inside_sources(
            file,
            required(file, "name")?,
            sources,
            false,
        )?);
    }
    if files.is_empty() {
        return Err(xml::Fail::new(list.line, "<SourceFiles> names no <File>"));
    }
    Ok(Some(BuildPlan {
        model_identifier: model_identifier.to_string(),
        described_in: "modelDescription.xml".into(),
        sets: vec![SourceSet {
            language: None,
            files,
            include_dirs: vec![".".into()],
            definitions: Vec::new(),
        }],
        libraries: Vec::new(),
        notes: Vec::new(),
    }))
}

fn required<'a>(element: &'a Element, attribute: &str) -> xml::R<&'a str> {
    element.attr(attribute).ok_or_else(|| {
        xml::Fail::new(
            element.line,
            format!("<{}> has no {attribute} attribute", element.name),
        )
    })
}

/// `name` as a path relative to `sources/`, refused if it is absolute, climbs out with `..`,
/// or (after symbolic links) lands outside `sources/` or on nothing.
fn inside_sources(element: &Element, name: &str, sources: &Path, folder: bool) -> xml::R<String> {
    let refuse = |why: &str| {
        xml::Fail::new(
            element.line,
            format!(
                "<{} name=\"{name}\">: {why}; paths in a build description are relative to \
                 sources/ and stay inside it",
                element.name
            ),
        )
    };
    let normalised = name.trim().replace('\\', "/");
    let bytes = normalised.as_bytes();
    let has_drive = bytes.len() >= 2 && bytes[1] == b':' && bytes[0].is_ascii_alphabetic();
    if normalised.is_empty() || normalised.contains('\0') {
        return Err(refuse("an empty or invalid path"));
    }
    if normalised.starts_with('/') || has_drive {
        return Err(refuse("an absolute path"));
    }
    let mut relative = PathBuf::new();
    for part in normalised.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err(refuse("a \"..\" climbs out of sources/")),
            _ => match Path::new(part).components().next() {
                Some(Component::Normal(_)) => relative.push(part),
                _ => return Err(refuse("an invalid path")),
            },
        }
    }
    let target = sources.join(&relative);
    let exists = if folder {
        target.is_dir()
    } else {
        target.is_file()
    };
    if !exists {
        return Err(refuse(&format!(
            "the FMU ships no such {}",
            if folder { "folder" } else { "file" }
        )));
    }
    // Symbolic links inside the FMU may not lead out of it.
    let inside = match (target.canonicalize(), sources.canonicalize()) {
        (Ok(target), Ok(sources)) => target.starts_with(sources),
        _ => false,
    };
    if !inside {
        return Err(refuse("a symbolic link leads out of sources/"));
    }
    let text = relative.to_string_lossy().replace('\\', "/");
    Ok(if text.is_empty() { ".".into() } else { text })
}

fn is_c_identifier(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_library_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.+-".contains(c))
}

/// The system's C compiler: `$CC` (a command with optional arguments) or `cc`, with the
/// user's `$CFLAGS` (e.g. `-I` a folder of FMI headers for sources that include them but do not
/// ship them).
#[derive(Debug, Clone)]
pub struct Compiler {
    /// The command and its arguments, as `$CC` gives them.
    pub command: Vec<String>,
    /// The executable found on `PATH`.
    pub executable: PathBuf,
    /// `$CFLAGS`, added to every compilation (not to the link).
    pub cflags: Vec<String>,
}

/// What a user without a compiler is told to do.
pub const INSTALL_HINT: &str =
    "install a C compiler (Debian/Ubuntu: apt install gcc; Fedora: dnf install gcc; macOS: \
     xcode-select --install) or set CC to one";

impl Compiler {
    /// The compiler `$CC` names (or `cc`), found on `PATH`; the error says what is missing.
    pub fn from_env() -> Result<Compiler, String> {
        let cc = std::env::var("CC")
            .ok()
            .filter(|v| !v.trim().is_empty())
            .unwrap_or_else(|| "cc".to_string());
        let command: Vec<String> = cc.split_whitespace().map(str::to_string).collect();
        let Some(program) = command.first() else {
            return Err(format!("CC is empty: {INSTALL_HINT}"));
        };
        let executable = find_program(program).ok_or_else(|| {
            format!("no C compiler found (\"{program}\" is not on PATH): {INSTALL_HINT}")
        })?;
        let cflags = std::env::var("CFLAGS")
            .map(|f| f.split_whitespace().map(str::to_string).collect())
            .unwrap_or_default();
        Ok(Compiler {
            command,
            executable,
            cflags,
        })
    }

    fn run(&self, args: &[String], dir: &Path) -> std::io::Result<std::process::Output> {
        Command::new(&self.executable)
            .args(&self.command[1..])
            .args(args)
            .current_dir(dir)
            .output()
    }

    /// What identifies the compiler in the cache key: its command and flags, and its
    /// executable's path, size and modification time (an upgraded compiler builds anew).
    fn identity(&self) -> String {
        let meta = std::fs::metadata(&self.executable).ok();
        let modified = meta
            .as_ref()
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        format!(
            "{:?} {:?} {} {} {modified}",
            self.command,
            self.cflags,
            self.executable.display(),
            meta.map_or(0, |m| m.len())
        )
    }
}

/// `program` itself when it names a path, else the first executable of that name on `PATH`.
fn find_program(program: &str) -> Option<PathBuf> {
    let is_program = |path: &Path| {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            path.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        }
        #[cfg(not(unix))]
        {
            path.is_file()
        }
    };
    if program.contains(['/', '\\']) {
        let path = PathBuf::from(program);
        return is_program(&path).then_some(path);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).find_map(|dir| {
        let candidate = dir.join(program);
        if is_program(&candidate) {
            return Some(candidate);
        }
        let exe = dir.join(format!("{program}.exe"));
        (cfg!(windows) && is_program(&exe)).then_some(exe)
    })
}

/// The build cache folder (see the module documentation).
pub fn cache_dir() -> Result<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var(CACHE_ENV) {
        return Ok(PathBuf::from(dir));
    }
    let user_cache = if cfg!(windows) {
        var("LOCALAPPDATA").map(PathBuf::from)
    } else if cfg!(target_os = "macos") {
        var("HOME").map(|h| PathBuf::from(h).join("Library/Caches"))
    } else {
        var("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".cache")))
    };
    user_cache
        .map(|dir| dir.join("cosimo").join("builds"))
        .ok_or_else(|| {
            Error::Usage(format!(
                "no folder to cache FMUs built from sources in (no HOME): set {CACHE_ENV}"
            ))
        })
}

/// The binary of `model_identifier` for this platform, built from the FMU's sources (or found
/// in the cache from an earlier build); `None` when the sources come without a build
/// description ([`plan`]). Errors name the FMU as the user gave it; `warn` hears what the
/// build description asks that cosimo does not do.
pub fn binary(
    archive: &FmuArchive,
    version: FmiVersion,
    model_identifier: &str,
    warn: &mut dyn FnMut(&str),
) -> Result<Option<PathBuf>> {
    let shown = archive.source();
    let fail = |message: String| Error::Binary {
        path: shown.to_path_buf(),
        message,
    };
    if model_identifier.is_empty()
        || !model_identifier
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return Err(fail(format!(
            "modelIdentifier \"{model_identifier}\" is not a C identifier, so no library can \
             be built from sources under that name"
        )));
    }
    let Some(plan) = plan(archive.root(), shown, version, model_identifier)? else {
        return Ok(None);
    };
    for note in &plan.notes {
        warn(&format!(
            "{}/{}: {note}",
            shown.display(),
            plan.described_in
        ));
    }
    let compiler = Compiler::from_env().map_err(|m| {
        fail(format!(
            "the FMU ships no binary for {}, only sources, and cosimo cannot build one: {m}",
            host_platform(version)
        ))
    })?;
    let sources = archive.root().join("sources");
    let key = cache_key(&plan, &compiler, &sources, version)?;
    let cache = cache_dir()?;
    let file_name = format!("{model_identifier}{LIBRARY_EXTENSION}");
    let entry = cache.join(&key);
    let cached = entry.join(&file_name);
    // One build at a time in this process: the runs of a sweep open the same FMU together
    // and should find one build in the cache, not make one each. (Processes that build the
    // same entry at once each build it; the first to store it wins.)
    static BUILDING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = BUILDING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if cached.is_file() {
        return Ok(Some(cached));
    }
    std::fs::create_dir_all(&cache).map_err(|e| Error::io(&cache, e))?;
    let work = tempfile::Builder::new()
        .prefix(".building-")
        .tempdir_in(&cache)
        .map_err(|e| Error::io(&cache, e))?;
    compile(&plan, &compiler, &sources, version, work.path(), &file_name)
        .map_err(|m| fail(m.replace(&sources.display().to_string(), "sources")))?;
    // Another process may have built the same entry meanwhile: either copy serves.
    let built = work.keep();
    if std::fs::rename(&built, &entry).is_err() {
        let _ = std::fs::remove_dir_all(&built);
    }
    if cached.is_file() {
        Ok(Some(cached))
    } else {
        Err(fail(format!(
            "the binary built from sources could not be stored in the build cache {} (set \
             {CACHE_ENV} to a writable folder)",
            cache.display()
        )))
    }
}

/// The SHA-256 (hex) of everything that goes into the binary: the scheme, the compiler, the
/// plan, the platform and every file under `sources/` (path and content).
fn cache_key(
    plan: &BuildPlan,
    compiler: &Compiler,
    sources: &Path,
    version: FmiVersion,
) -> Result<String> {
    let mut hash = Sha256::new();
    let mut text = |t: &str| {
        hash.update((t.len() as u64).to_le_bytes());
        hash.update(t.as_bytes());
    };
    text(SCHEME);
    text(&compiler.identity());
    text(&format!("{BASE_FLAGS:?}"));
    text(&host_platform(version));
    text(&format!(
        "{:?} {:?} {:?}",
        plan.model_identifier, plan.sets, plan.libraries
    ));
    for (relative, path) in files_below(sources, Links::All)? {
        let bytes = match std::fs::read_link(&path) {
            Ok(target) => format!("link to {}", target.display()).into_bytes(),
            Err(_) => std::fs::read(&path).map_err(|e| Error::io(&path, e))?,
        };
        hash.update((relative.len() as u64).to_le_bytes());
        hash.update(relative.as_bytes());
        hash.update((bytes.len() as u64).to_le_bytes());
        hash.update(&bytes);
    }
    Ok(hash.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// Which symbolic links [`files_below`] lists (it never follows one into a folder: links
/// could loop).
#[derive(Clone, Copy, PartialEq)]
enum Links {
    /// Every link (the cache key hashes a link as where it leads).
    All,
    /// Links to files only (packed as the files they lead to).
    ToFiles,
}

/// Every file below `root` as (relative path with `/`, path), sorted.
fn files_below(root: &Path, links: Links) -> Result<Vec<(String, PathBuf)>> {
    let mut files = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(folder) = pending.pop() {
        let entries = std::fs::read_dir(&folder).map_err(|e| Error::io(&folder, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| Error::io(&folder, e))?;
            let path = entry.path();
            let kind = entry.file_type().map_err(|e| Error::io(&path, e))?;
            let listed =
                kind.is_file() || (kind.is_symlink() && (links == Links::All || path.is_file()));
            if kind.is_dir() {
                pending.push(path);
            } else if listed {
                let relative = path
                    .strip_prefix(root)
                    .unwrap_or(&path)
                    .to_string_lossy()
                    .replace('\\', "/");
                files.push((relative, path));
            }
        }
    }
    files.sort();
    Ok(files)
}

/// Compile every source file of `plan` into an object in `work`, then link them into
/// `work/file_name`. The error is the compiler's first error line.
fn compile(
    plan: &BuildPlan,
    compiler: &Compiler,
    sources: &Path,
    version: FmiVersion,
    work: &Path,
    file_name: &str,
) -> Result<(), String> {
    let mut objects = Vec::new();
    for (i, set) in plan.sets.iter().enumerate() {
        let flags = set.flags(sources)?;
        for (j, file) in set.files.iter().enumerate() {
            let object = format!("{i}-{j}.o");
            let mut args = flags.clone();
            if version == FmiVersion::Fmi3 {
                // The standard's FMI 3 headers then declare the functions without the prefix
                // a source-code FMU may set: a shared library exports the plain names.
                args.push("-DFMI3_OVERRIDE_FUNCTION_PREFIX".to_string());
            }
            args.extend(compiler.cflags.iter().cloned());
            args.extend([
                "-c".to_string(),
                sources.join(file).display().to_string(),
                "-o".to_string(),
                object.clone(),
            ]);
            invoke(compiler, &args, work, &format!("compiling sources/{file}"))?;
            objects.push(object);
        }
    }
    let mut args = vec!["-shared".to_string()];
    args.extend(objects.iter().cloned());
    args.extend(["-o".to_string(), file_name.to_string()]);
    if !plan.libraries.is_empty() {
        // Libraries the FMU ships itself sit in sources/.
        args.push(format!("-L{}", sources.display()));
    }
    args.extend(plan.libraries.iter().map(|l| format!("-l{l}")));
    invoke(compiler, &args, work, "linking the shared library")?;
    for object in &objects {
        let _ = std::fs::remove_file(work.join(object));
    }
    Ok(())
}

fn invoke(compiler: &Compiler, args: &[String], work: &Path, what: &str) -> Result<(), String> {
    let program = compiler.command.join(" ");
    let output = compiler.run(args, work).map_err(|e| {
        format!(
            "building the binary from sources failed: {what}: cannot run the C compiler \
             \"{program}\": {e}: {INSTALL_HINT}"
        )
    })?;
    if output.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&output.stderr).into_owned()
        + &String::from_utf8_lossy(&output.stdout);
    let error = first_error(&said);
    // FMUs may leave the FMI headers out of sources/ (the standard lets them): say where
    // they go.
    let lower = error.to_ascii_lowercase();
    let missing_fmi_header = (lower.contains("fmi2") || lower.contains("fmi3"))
        && lower.contains(".h")
        && (lower.contains("no such file") || lower.contains("not found"));
    let todo = if missing_fmi_header {
        "the sources include the FMI headers but do not ship them: set CFLAGS=-I<a folder \
         holding the FMI headers of the standard>"
    } else {
        "fix the sources or the build description, or ask the FMU's vendor for a binary"
    };
    Err(format!(
        "building the binary from sources failed: {what} with \"{program}\" ({}): {error}; \
         {todo}",
        output.status,
    ))
}

/// The compiler's (or linker's) first error line (else its first line).
fn first_error(said: &str) -> String {
    let lines = || said.lines().map(str::trim).filter(|l| !l.is_empty());
    let is_error = |line: &&str| {
        let line = line.to_ascii_lowercase();
        [
            "error",
            "cannot find",
            "undefined reference",
            "no such file",
        ]
        .iter()
        .any(|word| line.contains(word))
    };
    lines()
        .find(is_error)
        .or_else(|| lines().next())
        .unwrap_or("the compiler said nothing")
        .to_string()
}

/// What `cosimo build` made.
#[derive(Debug, Clone)]
pub struct Built {
    /// The FMU written (the input itself, or `--output`).
    pub output: PathBuf,
    /// The binaries added, as paths inside the FMU (`binaries/x86_64-linux/M.so`).
    pub added: Vec<String>,
}

/// Build the binary of every interface of the FMU at `path` from its sources and add it under
/// `binaries/<platform>/`: into `output` (a new .fmu), or into the FMU itself when `output` is
/// `None` (a .fmu is replaced whole, atomically; a folder gets the file). An FMU that already
/// ships a binary for this platform, or ships no sources, is refused.
pub fn add_binary(path: &Path, output: Option<&Path>, warn: &mut dyn FnMut(&str)) -> Result<Built> {
    let fmu = super::Fmu::open(path)?;
    let archive = fmu.archive();
    let description = fmu.file_description();
    let version = description.fmi_version;
    let fail = |message: String| Error::Binary {
        path: path.to_path_buf(),
        message,
    };
    let mut identifiers: Vec<&str> = description
        .co_simulation
        .as_ref()
        .map(|cs| cs.model_identifier.as_str())
        .into_iter()
        .chain(description.model_exchange_identifier.as_deref())
        .collect();
    identifiers.dedup();
    if identifiers.is_empty() {
        return Err(fail(
            "the model description declares no interface, so there is no library to build".into(),
        ));
    }
    if !has_sources(archive.root()) {
        return Err(fail(
            "the FMU ships no sources/ folder: there is nothing to build a binary from".into(),
        ));
    }
    let platform = host_platform(version);
    let mut binaries = Vec::new();
    for identifier in &identifiers {
        if let Ok(shipped) = archive.binary_path(version, identifier) {
            let inside = shipped.strip_prefix(archive.root()).unwrap_or(&shipped);
            return Err(fail(format!(
                "the FMU already ships {} for this platform: nothing to build",
                inside.display()
            )));
        }
        let built = binary(archive, version, identifier, warn)?
            .ok_or_else(|| fail(no_description(identifier)))?;
        let inside = format!("binaries/{platform}/{identifier}{LIBRARY_EXTENSION}");
        binaries.push((inside, built));
    }
    let added: Vec<String> = binaries.iter().map(|(inside, _)| inside.clone()).collect();
    let in_place_folder = output.is_none() && path.is_dir();
    if in_place_folder {
        for (inside, built) in &binaries {
            let target = path.join(inside);
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
            }
            std::fs::copy(built, &target).map_err(|e| Error::io(&target, e))?;
        }
        return Ok(Built {
            output: path.to_path_buf(),
            added,
        });
    }
    let output = output.unwrap_or(path);
    if output.is_dir() {
        return Err(Error::Usage(format!(
            "--output {}: is a folder; name the .fmu file to write",
            output.display()
        )));
    }
    let mut entries: Vec<(String, PathBuf)> = files_below(archive.root(), Links::ToFiles)?
        .into_iter()
        .filter(|(inside, _)| !added.contains(inside))
        .collect();
    entries.extend(binaries);
    entries.sort();
    write_zip(output, &entries)?;
    Ok(Built {
        output: output.to_path_buf(),
        added,
    })
}

/// Write `entries` as a zip at `output`, through a temporary file in the same folder (a
/// failure leaves `output` as it was).
fn write_zip(output: &Path, entries: &[(String, PathBuf)]) -> Result<()> {
    use std::io::Write as _;
    use zip::write::SimpleFileOptions;
    let folder = output
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let temporary = tempfile::Builder::new()
        .prefix(".cosimo-build")
        .suffix(".fmu")
        .tempfile_in(folder)
        .map_err(|e| Error::io(folder, e))?;
    let zip_error =
        |e: zip::result::ZipError| Error::Internal(format!("writing {}: {e}", output.display()));
    let mut zip = zip::ZipWriter::new(temporary.as_file());
    for (inside, path) in entries {
        let options = SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .unix_permissions(if inside.starts_with("binaries/") {
                0o755
            } else {
                0o644
            });
        zip.start_file(inside.as_str(), options)
            .map_err(zip_error)?;
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        zip.write_all(&bytes).map_err(|e| Error::io(output, e))?;
    }
    zip.finish().map_err(zip_error)?;
    temporary
        .persist(output)
        .map_err(|e| Error::io(output, e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sources() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("a temporary folder");
        std::fs::create_dir_all(dir.path().join("include")).expect("creates a folder");
        std::fs::write(dir.path().join("model.c"), "int x;").expect("writes a file");
        dir
    }

    fn description(body: &str) -> String {
        format!("<fmiBuildDescription fmiVersion=\"3.0\">{body}</fmiBuildDescription>")
    }

    #[test]
    fn configurations_of_this_platform_are_merged() {
        let dir = sources();
        let xml = description(
            r#"<BuildConfiguration modelIdentifier="m">
                 <SourceFileSet language="C99"><SourceFile name="model.c"/>
                   <IncludeDirectory name="include"/>
                   <PreprocessorDefinition name="A" value="1"/>
                   <PreprocessorDefinition name="B"/></SourceFileSet>
                 <Library name="m"/></BuildConfiguration>
               <BuildConfiguration modelIdentifier="m" platform="no-such-platform">
                 <SourceFileSet><SourceFile name="missing.c"/></SourceFileSet></BuildConfiguration>
               <BuildConfiguration modelIdentifier="other">
                 <SourceFileSet><SourceFile name="missing.c"/></SourceFileSet></BuildConfiguration>"#,
        );
        let plan = from_build_description(&xml, dir.path(), "m").expect("a plan");
        assert_eq!(plan.sets.len(), 1);
        assert_eq!(plan.sets[0].files, ["model.c"]);
        assert_eq!(plan.sets[0].include_dirs, ["include"]);
        assert_eq!(
            plan.sets[0].definitions,
            [("A".to_string(), Some("1".to_string())), ("B".into(), None)]
        );
        assert_eq!(plan.libraries, ["m"]);
        let flags = plan.sets[0].flags(Path::new("/s")).expect("flags");
        assert!(flags.contains(&"-std=c99".to_string()));
        assert!(flags.contains(&"-DA=1".to_string()) && flags.contains(&"-DB".to_string()));
    }

    #[test]
    fn a_configuration_for_this_platform_is_taken_and_one_for_another_is_not() {
        let dir = sources();
        let config = |platform: &str| {
            description(&format!(
                r#"<BuildConfiguration modelIdentifier="m" platform="{platform}">
                     <SourceFileSet><SourceFile name="model.c"/></SourceFileSet>
                   </BuildConfiguration>"#
            ))
        };
        for version in [FmiVersion::Fmi2, FmiVersion::Fmi3] {
            let host = host_platform(version);
            let plan = from_build_description(&config(&host), dir.path(), "m").expect(&host);
            assert_eq!(plan.sets.len(), 1);
        }
        let fail = from_build_description(&config("sparc-solaris"), dir.path(), "m")
            .expect_err("another platform");
        assert!(
            fail.message.contains("m on sparc-solaris"),
            "{}",
            fail.message
        );
    }

    #[test]
    fn hostile_paths_and_names_are_refused() {
        let dir = sources();
        let refused = |body: &str, expected: &str| {
            let xml = description(&format!(
                "<BuildConfiguration modelIdentifier=\"m\">{body}</BuildConfiguration>"
            ));
            let fail = from_build_description(&xml, dir.path(), "m").expect_err(body);
            assert!(fail.message.contains(expected), "{body}: {}", fail.message);
        };
        let set = |inner: &str| format!("<SourceFileSet>{inner}</SourceFileSet>");
        refused(
            &set(r#"<SourceFile name="/etc/passwd"/>"#),
            "an absolute path",
        );
        refused(&set(r#"<SourceFile name="C:\x.c"/>"#), "an absolute path");
        refused(&set(r#"<SourceFile name="../model.c"/>"#), "climbs out");
        refused(
            &set(r#"<SourceFile name="model.c"/><IncludeDirectory name="include/../.."/>"#),
            "climbs out",
        );
        refused(&set(r#"<SourceFile name="gone.c"/>"#), "no such file");
        refused(
            &set(r#"<SourceFile name="model.c"/><PreprocessorDefinition name="-o x"/>"#),
            "not a C identifier",
        );
        refused(
            &format!(
                "{}<Library name=\"-Wl,--x\"/>",
                set(r#"<SourceFile name="model.c"/>"#)
            ),
            "not a library name",
        );
        refused(
            r#"<SourceFileSet language="C++17"><SourceFile name="model.c"/></SourceFileSet>"#,
            "C sources only",
        );
        let deep = format!("{}{}", "<a>".repeat(5000), "</a>".repeat(5000));
        let fail =
            from_build_description(&description(&deep), dir.path(), "m").expect_err("too deep");
        assert!(fail.message.contains("nested deeper"), "{}", fail.message);
        let fail = from_build_description(&description(""), dir.path(), "m").expect_err("none");
        assert!(fail
            .message
            .contains("no <BuildConfiguration> for model \"m\""));
    }

    #[cfg(unix)]
    #[test]
    fn links_out_of_sources_are_refused_and_compiler_options_are_noted() {
        let dir = sources();
        let outside = tempfile::tempdir().expect("a temporary folder");
        std::fs::write(outside.path().join("secret.c"), "int s;").expect("writes a file");
        std::os::unix::fs::symlink(outside.path().join("secret.c"), dir.path().join("link.c"))
            .expect("links");
        let xml = |file: &str| {
            description(&format!(
                r#"<BuildConfiguration modelIdentifier="m">
                     <SourceFileSet compilerOptions="-o /tmp/x"><SourceFile name="{file}"/>
                   </SourceFileSet></BuildConfiguration>"#
            ))
        };
        let fail = from_build_description(&xml("link.c"), dir.path(), "m").expect_err("a link");
        assert!(
            fail.message.contains("leads out of sources/"),
            "{}",
            fail.message
        );
        let plan = from_build_description(&xml("model.c"), dir.path(), "m").expect("a plan");
        assert!(plan.notes[0].contains("are not passed to the compiler"));
        let flags = plan.sets[0].flags(dir.path()).expect("flags");
        assert!(!flags.iter().any(|f| f.contains("/tmp/x")), "{flags:?}");
    }

    #[test]
    fn fmi2_source_files_are_one_set() {
        let dir = sources();
        let xml = r#"<fmiModelDescription fmiVersion="2.0"><CoSimulation modelIdentifier="m">
            <SourceFiles><File name="model.c"/></SourceFiles></CoSimulation></fmiModelDescription>"#;
        let plan = from_source_files(xml, dir.path(), "m")
            .expect("parses")
            .expect("a plan");
        assert_eq!(plan.sets[0].files, ["model.c"]);
        assert_eq!(plan.sets[0].include_dirs, ["."]);
        let none = from_source_files(xml, dir.path(), "other").expect("parses");
        assert!(none.is_none(), "another model's sources");
    }

    #[test]
    fn the_first_error_line_is_kept() {
        let said = "In file included from x.c:1:\nx.c:3:1: error: expected ';'\nmore";
        assert_eq!(first_error(said), "x.c:3:1: error: expected ';'");
        let linker = "/usr/bin/ld: cannot find -lfoo\ncollect2: error: ld returned 1 exit status";
        assert_eq!(first_error(linker), "/usr/bin/ld: cannot find -lfoo");
        assert_eq!(first_error("just this\nand that"), "just this");
    }
}
