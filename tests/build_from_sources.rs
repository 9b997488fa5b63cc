//! FMUs that ship only C sources (`test-fmus/c-sources/`, written for these tests): cosimo builds
//! their binary with the system's C compiler into its build cache, once, and runs them with the
//! same results as the same FMU packed with a binary built here by `cc` directly; `cosimo
//! build` adds the binary to the FMU; `inspect` shows `c-code`; a missing compiler, a failing
//! build and a hostile build description are errors that say what to do.
//!
//! Without a C compiler every test logs itself skipped (tests/common/skip.rs).

mod common;
mod walk;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::show;
use common::skip::{skipped, Skip};
use cosimo::fmu::archive::platform_folders;
use cosimo::fmu::FmiVersion;

/// The folder of the tests' C sources.
fn c_sources() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("test-fmus/c-sources")
}

/// The C compiler cosimo would use, or a logged skip.
fn compiler() -> Option<cosimo::fmu::build::Compiler> {
    match cosimo::fmu::build::Compiler::from_env() {
        Ok(compiler) => Some(compiler),
        Err(why) => {
            skipped(Skip::NoCompiler, &why);
            None
        }
    }
}

fn fmi(version: u8) -> FmiVersion {
    if version == 2 {
        FmiVersion::Fmi2
    } else {
        FmiVersion::Fmi3
    }
}

/// The files of the lag FMU of FMI `version`, as (path inside the FMU, contents).
fn lag_files(version: u8) -> Vec<(String, Vec<u8>)> {
    let read = |p: &str| std::fs::read(c_sources().join(p)).expect("reads a test source");
    let api = format!("fmi{version}_api.c");
    vec![
        (
            "modelDescription.xml".into(),
            read(&format!("fmi{version}/modelDescription.xml")),
        ),
        (
            "sources/buildDescription.xml".into(),
            read(&format!("fmi{version}/buildDescription.xml")),
        ),
        (
            format!("sources/{api}"),
            read(&format!("fmi{version}/{api}")),
        ),
        ("sources/lag.c".into(), read("lag/lag.c")),
        ("sources/include/lag.h".into(), read("lag/include/lag.h")),
    ]
}

/// Replace `from` by `to` in the file `inside` (which must contain it).
fn edit(files: &mut [(String, Vec<u8>)], inside: &str, from: &str, to: &str) {
    let (_, bytes) = files
        .iter_mut()
        .find(|(name, _)| name == inside)
        .expect("the file is in the FMU");
    let text = String::from_utf8(bytes.clone()).expect("text");
    assert!(text.contains(from), "{inside} has no {from:?}");
    *bytes = text.replace(from, to).into_bytes();
}

/// Zip `files` into `path`.
fn pack(path: &Path, files: &[(String, Vec<u8>)]) {
    use std::io::Write as _;
    let file = std::fs::File::create(path).expect("creates the FMU");
    let mut zip = zip::ZipWriter::new(file);
    for (name, bytes) in files {
        zip.start_file(name.as_str(), zip::write::SimpleFileOptions::default())
            .expect("starts an entry");
        zip.write_all(bytes).expect("writes an entry");
    }
    zip.finish().expect("finishes the FMU");
}

/// The lag FMU of FMI `version` with a binary built here with `cc` directly (the same files,
/// definition, include directory and library as its build description names).
fn with_binary(dir: &Path, version: u8) -> PathBuf {
    let build = dir.join(format!("by-hand-{version}"));
    std::fs::create_dir_all(&build).expect("creates a folder");
    let mut files = lag_files(version);
    for (name, bytes) in &files {
        let path = build.join(name);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("creates a folder");
        std::fs::write(path, bytes).expect("writes a source");
    }
    let sources = build.join("sources");
    let library = build.join("SourceLag.so");
    let output = Command::new("cc")
        .args([
            "-std=c99",
            "-fPIC",
            "-O2",
            "-shared",
            "-DLAG_GAIN=2.5",
            "-I",
        ])
        .arg(sources.join("include"))
        .arg(sources.join("lag.c"))
        .arg(sources.join(format!("fmi{version}_api.c")))
        .arg("-o")
        .arg(&library)
        .arg("-lm")
        .output()
        .expect("cc runs");
    assert!(output.status.success(), "cc: {}", show(&output));
    let platform = platform_folders(fmi(version))[0];
    files.push((
        format!("binaries/{platform}/SourceLag.so"),
        std::fs::read(&library).expect("reads the library"),
    ));
    let fmu = dir.join(format!("with-binary-{version}.fmu"));
    pack(&fmu, &files);
    fmu
}

/// The lag FMU of FMI `version` with sources only.
fn sources_only(dir: &Path, version: u8, name: &str) -> PathBuf {
    let fmu = dir.join(name);
    pack(&fmu, &lag_files(version));
    fmu
}

/// Runs cosimo with a build cache of its own and a C compiler that counts its invocations.
struct Cosimo {
    cache: PathBuf,
    count: PathBuf,
    wrapper: PathBuf,
}

impl Cosimo {
    fn new(dir: &Path) -> Cosimo {
        let count = dir.join("compiler-calls");
        let wrapper = dir.join("counting-cc");
        std::fs::write(
            &wrapper,
            format!(
                "#!/bin/sh\necho call >> '{}'\nexec cc \"$@\"\n",
                count.display()
            ),
        )
        .expect("writes the wrapper");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755))
                .expect("makes the wrapper executable");
        }
        Cosimo {
            cache: dir.join("cache"),
            count,
            wrapper,
        }
    }

    /// Run cosimo with `args`, `CC` = `cc` and the environment `env` (no `CFLAGS` unless it
    /// says).
    fn run_with(&self, cc: &str, env: &[(&str, &str)], args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_cosimo"))
            .args(args)
            .env("COSIMO_BUILD_CACHE", &self.cache)
            .env("CC", cc)
            .env_remove("CFLAGS")
            .envs(env.iter().copied())
            .env_remove("COSIMO_LOG")
            .output()
            .expect("the cosimo binary runs")
    }

    /// Run cosimo with `args` and `CC` = `cc`.
    fn run_with_cc(&self, cc: &str, args: &[&str]) -> Output {
        self.run_with(cc, &[], args)
    }

    fn run(&self, args: &[&str]) -> Output {
        self.run_with_cc(&self.wrapper.display().to_string(), args)
    }

    /// How many times the compiler ran so far.
    fn compiler_calls(&self) -> usize {
        std::fs::read_to_string(&self.count).map_or(0, |t| t.lines().count())
    }
}

fn text(path: &Path) -> String {
    std::fs::read_to_string(path).expect("reads the results")
}

fn s(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

/// The column `y` of a results file as numbers.
fn outputs(results: &str) -> Vec<f64> {
    results
        .lines()
        .skip(1)
        .map(|line| {
            let y = line.split(',').nth(1).expect("a y column");
            y.parse().expect("a number")
        })
        .collect()
}

#[test]
fn sources_only_runs_like_the_binary_and_the_second_run_does_not_compile() {
    if compiler().is_none() {
        return;
    }
    for version in [2, 3] {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let cosimo = Cosimo::new(dir.path());
        let binary = with_binary(dir.path(), version);
        let sources = sources_only(dir.path(), version, "sources.fmu");
        let expected = dir.path().join("expected.csv");
        let ran = cosimo.run(&["run", s(&binary), "-o", s(&expected)]);
        assert!(ran.status.success(), "{}", show(&ran));
        assert_eq!(
            cosimo.compiler_calls(),
            0,
            "an FMU with a binary compiles nothing"
        );

        let first = dir.path().join("first.csv");
        let ran = cosimo.run(&["run", s(&sources), "-o", s(&first)]);
        assert!(ran.status.success(), "FMI {version}: {}", show(&ran));
        let compiled = cosimo.compiler_calls();
        // Two sources and one link.
        assert_eq!(
            compiled, 3,
            "FMI {version}: compiler calls of the first run"
        );
        assert_eq!(
            text(&first),
            text(&expected),
            "FMI {version}: the same results"
        );
        // The definition acts: y = 2.5 x, x the exact lag response 1 - exp(-t / 0.5).
        let y = outputs(&text(&first));
        let x1 = 1.0 - (-0.1f64 / 0.5).exp();
        assert!((y[1] - 2.5 * x1).abs() < 1e-12, "FMI {version}: y = {y:?}");

        let second = dir.path().join("second.csv");
        let ran = cosimo.run(&["run", s(&sources), "-o", s(&second)]);
        assert!(ran.status.success(), "{}", show(&ran));
        assert_eq!(
            cosimo.compiler_calls(),
            compiled,
            "FMI {version}: the second run compiled"
        );
        assert_eq!(text(&second), text(&expected));
        // In a worker process too, from the cache.
        let isolated = dir.path().join("isolated.csv");
        let ran = cosimo.run(&["run", s(&sources), "--isolate", "-o", s(&isolated)]);
        assert!(ran.status.success(), "{}", show(&ran));
        assert_eq!(cosimo.compiler_calls(), compiled);
        assert_eq!(text(&isolated), text(&expected));

        // Two components of a system from two copies of the FMU (same sources), each its own
        // file, opened apart: both from the cache, no compilation; with --parallel the same.
        let copy = sources_only(dir.path(), version, "copy.fmu");
        let system = dir.path().join("system.csv");
        let a = format!("a={}", s(&sources));
        let b = format!("b={}", s(&copy));
        let two_copies = [
            "run",
            &a,
            &b,
            "--connect",
            "a.y=b.u",
            "--parallel",
            "-o",
            s(&system),
        ];
        let ran = cosimo.run(&two_copies);
        assert!(ran.status.success(), "{}", show(&ran));
        assert_eq!(cosimo.compiler_calls(), compiled);
        // With an empty cache, the two copies make one build.
        let fresh_dir = dir.path().join("fresh");
        std::fs::create_dir_all(&fresh_dir).expect("creates a folder");
        let fresh = Cosimo::new(&fresh_dir);
        let ran = fresh.run(&two_copies);
        assert!(ran.status.success(), "{}", show(&ran));
        assert_eq!(fresh.compiler_calls(), compiled, "one build for two copies");

        // Other sources, another cache entry: a new definition builds anew and acts.
        let mut files = lag_files(version);
        edit(
            &mut files,
            "sources/buildDescription.xml",
            "value=\"2.5\"",
            "value=\"4\"",
        );
        let changed = dir.path().join("changed.fmu");
        pack(&changed, &files);
        let other = dir.path().join("other.csv");
        let ran = cosimo.run(&["run", s(&changed), "-o", s(&other)]);
        assert!(ran.status.success(), "{}", show(&ran));
        assert_eq!(cosimo.compiler_calls(), compiled + 3);
        let y4 = outputs(&text(&other));
        assert!(
            (y4[1] - 4.0 * x1).abs() < 1e-12,
            "FMI {version}: y = {y4:?}"
        );
    }
}

/// The lag's sources with every FMI function named `SourceLag_fmiX…`, as source-code FMUs
/// built with `FMI2_FUNCTION_PREFIX` / `FMI3_FUNCTION_PREFIX` export them (the Reference
/// FMUs' sources do, unless `DISABLE_PREFIX` is defined).
fn prefixed(files: &mut [(String, Vec<u8>)], version: u8) {
    let api = format!("sources/fmi{version}_api.c");
    let export = format!("FMI{version}_EXPORT ");
    let (_, bytes) = files
        .iter_mut()
        .find(|(name, _)| *name == api)
        .expect("the API file is in the FMU");
    let text = String::from_utf8(bytes.clone()).expect("text");
    let mut out = String::new();
    let mut renamed = 0;
    for line in text.lines() {
        // `FMI3_EXPORT fmi3Status fmi3DoStep(…`: the name is the word before the parenthesis.
        let name_at = line.find('(').and_then(|open| {
            let before = &line[..open];
            before
                .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .map(|space| space + 1)
        });
        match name_at {
            Some(at)
                if line.starts_with(&export)
                    && line[at..].starts_with(&format!("fmi{version}")) =>
            {
                out.push_str(&line[..at]);
                out.push_str("SourceLag_");
                out.push_str(&line[at..]);
                renamed += 1;
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    assert!(renamed > 10, "FMI {version}: {renamed} functions renamed");
    *bytes = out.into_bytes();
}

/// An FMU shipped with sources whose functions carry the model identifier as a prefix: cosimo
/// finds the prefixed names in the library it builds, and runs it like the binary FMU;
/// `cosimo validate` of a binary FMU with prefixed names says why they do not do for a binary.
#[test]
fn sources_with_prefixed_function_names_run_like_the_binary() {
    if compiler().is_none() {
        return;
    }
    for version in [2, 3] {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let cosimo = Cosimo::new(dir.path());
        let binary = with_binary(dir.path(), version);
        let expected = dir.path().join("expected.csv");
        let ran = cosimo.run(&["run", s(&binary), "-o", s(&expected)]);
        assert!(ran.status.success(), "{}", show(&ran));
        let mut files = lag_files(version);
        prefixed(&mut files, version);
        let fmu = dir.path().join("prefixed.fmu");
        pack(&fmu, &files);
        let out = dir.path().join("prefixed.csv");
        let ran = cosimo.run(&["run", s(&fmu), "-o", s(&out)]);
        assert!(ran.status.success(), "FMI {version}: {}", show(&ran));
        assert_eq!(
            text(&out),
            text(&expected),
            "FMI {version}: the same results"
        );
        // `cosimo build` puts the prefixed library into binaries/: not a conforming binary FMU.
        let built = dir.path().join("built.fmu");
        let ran = cosimo.run(&["build", s(&fmu), "-o", s(&built)]);
        assert!(ran.status.success(), "FMI {version}: {}", show(&ran));
        let checked = cosimo.run(&["validate", s(&built)]);
        let said = show(&checked);
        assert!(
            !checked.status.success()
                && said.contains(&format!("SourceLag_fmi{version}"))
                && said.contains("prefix"),
            "FMI {version}: {said}"
        );
    }
}

#[test]
fn fmi2_source_files_alone_build_with_sources_as_include_directory() {
    if compiler().is_none() {
        return;
    }
    // No build description: the model description's <SourceFiles> say what to compile, with
    // sources/ as include directory and no definitions, so the sources say the rest.
    let dir = tempfile::tempdir().expect("a temporary folder");
    let cosimo = Cosimo::new(dir.path());
    let binary = with_binary(dir.path(), 2);
    let mut files: Vec<(String, Vec<u8>)> = lag_files(2)
        .into_iter()
        .filter(|(name, _)| name != "sources/buildDescription.xml")
        .collect();
    edit(
        &mut files,
        "sources/lag.c",
        "#include \"lag.h\"",
        "#include \"include/lag.h\"\n#define LAG_GAIN 2.5",
    );
    edit(
        &mut files,
        "sources/fmi2_api.c",
        "#include \"lag.h\"",
        "#include \"include/lag.h\"",
    );
    let sources = dir.path().join("source-files.fmu");
    pack(&sources, &files);
    let expected = dir.path().join("expected.csv");
    let ran = cosimo.run(&["run", s(&binary), "-o", s(&expected)]);
    assert!(ran.status.success(), "{}", show(&ran));
    let got = dir.path().join("got.csv");
    let ran = cosimo.run(&["run", s(&sources), "-o", s(&got)]);
    assert!(ran.status.success(), "{}", show(&ran));
    assert_eq!(cosimo.compiler_calls(), 3);
    assert_eq!(text(&got), text(&expected));
    // Without <SourceFiles> there is nothing to go by.
    let md = String::from_utf8(files[0].1.clone()).expect("text");
    let start = md.find("<SourceFiles>").expect("listed");
    let end = md.find("</SourceFiles>").expect("closed") + "</SourceFiles>".len();
    files[0].1 = format!("{}{}", &md[..start], &md[end..]).into_bytes();
    let unlisted = dir.path().join("unlisted.fmu");
    pack(&unlisted, &files);
    let ran = cosimo.run(&["run", s(&unlisted), "-o", s(&got)]);
    refused(&ran, &unlisted, &["cannot tell what to compile"]);
}

#[test]
fn cosimo_build_adds_a_binary_that_validates_and_runs_without_a_compiler() {
    if compiler().is_none() {
        return;
    }
    let fmpy = fmpy_python();
    for version in [2, 3] {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let cosimo = Cosimo::new(dir.path());
        let sources = sources_only(dir.path(), version, "sources.fmu");
        let before = std::fs::read(&sources).expect("reads the FMU");
        let built = dir.path().join("built.fmu");
        let ran = cosimo.run(&["build", s(&sources), "-o", s(&built)]);
        assert!(ran.status.success(), "{}", show(&ran));
        let platform = platform_folders(fmi(version))[0];
        let added = format!("binaries/{platform}/SourceLag.so");
        assert!(
            String::from_utf8_lossy(&ran.stdout).contains(&added),
            "{}",
            show(&ran)
        );
        assert_eq!(
            std::fs::read(&sources).expect("reads"),
            before,
            "-o leaves the input"
        );

        let validated = cosimo.run(&["validate", s(&built)]);
        assert!(validated.status.success(), "{}", show(&validated));
        assert!(
            String::from_utf8_lossy(&validated.stdout).contains("0 errors, 0 warnings"),
            "{}",
            show(&validated)
        );
        // The built FMU needs no compiler; it gives what the sources give.
        let from_built = dir.path().join("built.csv");
        let ran = cosimo.run_with_cc("no-such-cc", &["run", s(&built), "-o", s(&from_built)]);
        assert!(ran.status.success(), "{}", show(&ran));
        let from_sources = dir.path().join("sources.csv");
        let ran = cosimo.run(&["run", s(&sources), "-o", s(&from_sources)]);
        assert!(ran.status.success(), "{}", show(&ran));
        assert_eq!(text(&from_built), text(&from_sources));

        // Without -o the binary goes into the FMU itself; then there is nothing to build.
        let ran = cosimo.run(&["build", s(&sources)]);
        assert!(ran.status.success(), "{}", show(&ran));
        let ran = cosimo.run_with_cc("no-such-cc", &["run", s(&sources), "-o", s(&from_built)]);
        assert!(ran.status.success(), "{}", show(&ran));
        let again = cosimo.run(&["build", s(&sources)]);
        assert_eq!(again.status.code(), Some(2), "{}", show(&again));
        assert!(
            String::from_utf8_lossy(&again.stderr).contains("already ships"),
            "{}",
            show(&again)
        );

        // An unpacked FMU folder gets the file.
        let folder = dir.path().join("unpacked");
        for (name, bytes) in lag_files(version) {
            let path = folder.join(name);
            std::fs::create_dir_all(path.parent().expect("a parent")).expect("creates a folder");
            std::fs::write(path, bytes).expect("writes a file");
        }
        let ran = cosimo.run(&["build", s(&folder)]);
        assert!(ran.status.success(), "{}", show(&ran));
        assert!(folder.join(&added).is_file(), "{}", show(&ran));
        let ran = cosimo.run_with_cc("no-such-cc", &["run", s(&folder), "-o", s(&from_built)]);
        assert!(ran.status.success(), "{}", show(&ran));
        assert_eq!(text(&from_built), text(&from_sources));

        if let Some(python) = &fmpy {
            let checked = Command::new(python)
                .arg("-c")
                .arg(
                    "import sys\nfrom fmpy.validation import validate_fmu\n\
                     problems = validate_fmu(sys.argv[1])\nassert not problems, problems\n",
                )
                .arg(&built)
                .output()
                .expect("python runs");
            assert!(checked.status.success(), "FMPy: {}", show(&checked));
        }
    }
}

fn fmpy_python() -> Option<PathBuf> {
    match std::env::var_os("COSIMO_FMPY_PYTHON") {
        Some(python) => Some(PathBuf::from(python)),
        None if std::env::var_os("CI").is_some() => {
            panic!("FMPy is required in CI: run the suite with `cargo xtask test`")
        }
        None => {
            skipped(
                Skip::Fmpy,
                "COSIMO_FMPY_PYTHON not set; run `cargo xtask test` to validate the built FMU in FMPy",
            );
            None
        }
    }
}

#[test]
fn inspect_shows_c_code_among_the_platforms() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let sources = sources_only(dir.path(), 3, "sources.fmu");
    let shown = common::cosimo_ok(["inspect", s(&sources)]);
    let stdout = String::from_utf8_lossy(&shown.stdout);
    assert!(stdout.contains("Platforms        c-code\n"), "{stdout}");
    let json = common::cosimo_ok(["inspect", "--json", s(&sources)]);
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    assert_eq!(value["platforms"], serde_json::json!(["c-code"]));
    if compiler().is_none() {
        return;
    }
    let binary = with_binary(dir.path(), 2);
    let json = common::cosimo_ok(["inspect", "--json", s(&binary)]);
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    assert_eq!(
        value["platforms"],
        serde_json::json!([platform_folders(FmiVersion::Fmi2)[0], "c-code"])
    );
}

/// cosimo failed with exit 2, naming `fmu` and every one of `says` on stderr, without a panic.
fn refused(ran: &Output, fmu: &Path, says: &[&str]) {
    let stderr = String::from_utf8_lossy(&ran.stderr);
    assert_eq!(ran.status.code(), Some(2), "{}", show(ran));
    assert!(!stderr.contains("panicked"), "{}", show(ran));
    assert!(stderr.contains(s(fmu)), "names the FMU: {}", show(ran));
    for said in says {
        assert!(stderr.contains(said), "expected {said:?}: {}", show(ran));
    }
}

#[test]
fn a_missing_compiler_or_a_failing_build_names_the_fmu_and_what_to_do() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let cosimo = Cosimo::new(dir.path());
    let sources = sources_only(dir.path(), 3, "sources.fmu");
    let out = dir.path().join("out.csv");
    let ran = cosimo.run_with_cc("/no/such/cc", &["run", s(&sources), "-o", s(&out)]);
    refused(&ran, &sources, &["install a C compiler", "set CC"]);
    let ran = cosimo.run_with_cc("/no/such/cc", &["build", s(&sources)]);
    refused(&ran, &sources, &["install a C compiler"]);
    // Sources without a build description: what is missing, whatever the compiler.
    let files: Vec<_> = lag_files(3)
        .into_iter()
        .filter(|(name, _)| name != "sources/buildDescription.xml")
        .collect();
    let undescribed = dir.path().join("undescribed.fmu");
    pack(&undescribed, &files);
    let ran = cosimo.run(&["run", s(&undescribed), "-o", s(&out)]);
    refused(
        &ran,
        &undescribed,
        &["ships no binaries", "cannot tell what to compile"],
    );
    let ran = cosimo.run(&["build", s(&undescribed)]);
    refused(&ran, &undescribed, &["cannot tell what to compile"]);
    if compiler().is_none() {
        return;
    }
    // Each part of the build description is needed: without the definition, the include
    // directory or the library the build fails with the compiler's first error.
    let cases: [(&str, &str, &str, &str); 4] = [
        (
            "sources/buildDescription.xml",
            "<PreprocessorDefinition name=\"LAG_GAIN\" value=\"2.5\"/>",
            "",
            "LAG_GAIN is not defined",
        ),
        (
            "sources/buildDescription.xml",
            "<IncludeDirectory name=\"include\"/>",
            "",
            "lag.h",
        ),
        (
            "sources/lag.c",
            "lag->x = 0.0;",
            "lag->x = 0.0 +;",
            "sources/lag.c:",
        ),
        (
            "sources/buildDescription.xml",
            "<Library name=\"m\"/>",
            "<Library name=\"no_such_library_xyz\"/>",
            "no_such_library_xyz",
        ),
    ];
    for (i, (inside, from, to, says)) in cases.into_iter().enumerate() {
        let mut files = lag_files(3);
        edit(&mut files, inside, from, to);
        let broken = dir.path().join(format!("broken-{i}.fmu"));
        pack(&broken, &files);
        let ran = cosimo.run(&["run", s(&broken), "-o", s(&out)]);
        refused(
            &ran,
            &broken,
            &["building the binary from sources failed", says],
        );
        if says == "lag.h" {
            // The user's CFLAGS reach the compiler (and the cache key): here the missing
            // include directory.
            let include = format!("-I{}", s(&c_sources().join("lag/include")));
            let wrapper = cosimo.wrapper.display().to_string();
            let calls = cosimo.compiler_calls();
            let ran = cosimo.run_with(
                &wrapper,
                &[("CFLAGS", &include)],
                &["run", s(&broken), "-o", s(&out)],
            );
            assert!(ran.status.success(), "{}", show(&ran));
            assert_eq!(cosimo.compiler_calls(), calls + 3);
        }
    }
}

#[test]
fn hostile_build_descriptions_are_errors_naming_the_file() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let cosimo = Cosimo::new(dir.path());
    let deep = format!("{}{}", "<a>".repeat(100_000), "</a>".repeat(100_000));
    let cases: [(&str, &str, String, &str); 5] = [
        (
            "sources/buildDescription.xml",
            "name=\"lag.c\"",
            "name=\"/etc/passwd\"".into(),
            "an absolute path",
        ),
        (
            "sources/buildDescription.xml",
            "name=\"lag.c\"",
            "name=\"../modelDescription.xml\"".into(),
            "climbs out of sources/",
        ),
        (
            "sources/buildDescription.xml",
            "<IncludeDirectory name=\"include\"/>",
            "<IncludeDirectory name=\"include/../../..\"/>".into(),
            "climbs out of sources/",
        ),
        (
            "sources/buildDescription.xml",
            "<Library name=\"m\"/>",
            format!("<Library name=\"m\"/>{deep}"),
            "nested deeper than",
        ),
        (
            "sources/buildDescription.xml",
            "name=\"LAG_GAIN\"",
            "name=\"LAG_GAIN -o /tmp/x\"".into(),
            "not a C identifier",
        ),
    ];
    for (i, (inside, from, to, says)) in cases.into_iter().enumerate() {
        let mut files = lag_files(3);
        edit(&mut files, inside, from, &to);
        let hostile = dir.path().join(format!("hostile-{i}.fmu"));
        pack(&hostile, &files);
        let out = dir.path().join("out.csv");
        let ran = cosimo.run(&["run", s(&hostile), "-o", s(&out)]);
        refused(&ran, &hostile, &["sources/buildDescription.xml", says]);
        let ran = cosimo.run(&["build", s(&hostile)]);
        refused(&ran, &hostile, &["sources/buildDescription.xml", says]);
    }
    assert_eq!(cosimo.compiler_calls(), 0, "nothing hostile was compiled");
}

#[test]
fn every_build_option_takes_effect_or_is_refused() {
    if compiler().is_none() {
        return;
    }
    let mut w = walk::Walker::new();
    let dir = w.dir.path().to_path_buf();
    let cosimo = Cosimo::new(&dir);
    let in_place = sources_only(&dir, 3, "in-place.fmu");
    let kept = sources_only(&dir, 3, "kept.fmu");
    let before = std::fs::read(&kept).expect("reads the FMU");
    let output = dir.join("output.fmu");
    // --output: the input stays as it was and the output has the binary; without it, the
    // input gets it.
    let without = cosimo.run(&["build", s(&in_place)]);
    let with = cosimo.run(&["build", s(&kept), "--output", s(&output)]);
    let has_binary = |fmu: &Path| {
        zip::ZipArchive::new(std::fs::File::open(fmu).expect("opens"))
            .expect("a zip")
            .file_names()
            .any(|n| n.starts_with("binaries/"))
    };
    w.mark(
        "build",
        "--output",
        if without.status.success()
            && with.status.success()
            && has_binary(&in_place)
            && output.is_file()
            && has_binary(&output)
            && std::fs::read(&kept).expect("reads") == before
        {
            Ok(())
        } else {
            Err(format!("{}\n{}", show(&without), show(&with)))
        },
    );
    let folder = cosimo.run(&["build", s(&kept), "--output", s(&dir)]);
    w.mark(
        "build",
        "--output",
        if folder.status.code() == Some(2)
            && String::from_utf8_lossy(&folder.stderr).contains("is a folder")
        {
            Ok(())
        } else {
            Err(format!("a folder as --output: {}", show(&folder)))
        },
    );
    // --quiet: the line naming the binary only without it.
    let loud = cosimo.run(&["build", s(&kept), "-o", s(&dir.join("loud.fmu"))]);
    let quiet = cosimo.run(&[
        "build",
        s(&kept),
        "-o",
        s(&dir.join("quiet.fmu")),
        "--quiet",
    ]);
    w.mark(
        "build",
        "--quiet",
        if loud.status.success()
            && quiet.status.success()
            && !loud.stdout.is_empty()
            && quiet.stdout.is_empty()
            && quiet.stderr.is_empty()
        {
            Ok(())
        } else {
            Err(format!("{}\n{}", show(&loud), show(&quiet)))
        },
    );
    w.covers_help_of("build");
    w.finish("build option");
}
