//! `cosimo export`: a system packed as an FMI 2 / FMI 3 Co-Simulation FMU runs inside cosimo
//! and inside FMPy with the results of `cosimo run` of the system (to 1e-12 with outer steps
//! off the inner grid), lands on any outer step,
//! saves and restores its state across instances, refuses misuse with Error, nests, and is
//! refused at export time when it would not run.
//!
//! The container library comes from `cargo build -p cosimo-container` (`cargo xtask test`
//! builds it); FMPy from `COSIMO_FMPY_PYTHON` (else the FMPy tests log themselves skipped).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::skip::Skip;
use common::*;

/// The container library next to the cosimo executable.
fn container_library() -> PathBuf {
    let path =
        Path::new(env!("CARGO_BIN_EXE_cosimo")).with_file_name(cosimo::export::library_file_name());
    assert!(
        path.is_file(),
        "{} is missing: build it with `cargo build -p cosimo-container` (cargo xtask test does)",
        path.display()
    );
    path
}

/// An example system of `fmus/` (its FMUs packed first).
fn example(name: &str) -> PathBuf {
    fmu("Oscillator", 2);
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fmus")
        .join(name)
}

/// `cosimo export` of `targets` into `dir/name`, FMI `version`.
fn export(targets: &[&str], version: u8, extra: &[&str], dir: &Path, name: &str) -> PathBuf {
    let out = dir.join(name);
    let mut args: Vec<String> = vec!["export".into()];
    args.extend(targets.iter().map(|s| s.to_string()));
    args.extend([
        "-o".into(),
        out.display().to_string(),
        "--fmi-version".into(),
        version.to_string(),
        "--container-library".into(),
        container_library().display().to_string(),
    ]);
    args.extend(extra.iter().map(|s| s.to_string()));
    cosimo_ok(&args);
    out
}

/// `cosimo run` with `args` into `dir/name`; the result table.
fn run(args: &[&str], dir: &Path, name: &str) -> cosimo::results::Table {
    let out = dir.join(name);
    let mut all: Vec<String> = vec!["run".into()];
    all.extend(args.iter().map(|s| s.to_string()));
    all.extend(["-o".into(), out.display().to_string(), "-q".into()]);
    cosimo_ok(&all);
    read_results(&out)
}

/// Every column of `expected` that `actual` has too, at every time of `expected` that
/// `actual` has: equal within `tolerance` (0: the same bits). Returns the values compared.
fn compare(
    expected: &cosimo::results::Table,
    actual: &cosimo::results::Table,
    tolerance: f64,
) -> usize {
    let mut compared = 0;
    for (c, name) in expected.columns().iter().enumerate() {
        let Some(a) = actual.column(name) else {
            continue;
        };
        for (i, &t) in expected.time().iter().enumerate() {
            let Some(j) = actual
                .time()
                .iter()
                .position(|&s| (s - t).abs() <= 1e-9 * t.abs().max(1e-3))
            else {
                continue;
            };
            let (x, y) = (expected.values(c)[i], actual.values(a)[j]);
            assert!(
                (x - y).abs() <= tolerance * x.abs().max(1.0),
                "{name} at t = {t}: expected {x:e}, got {y:e}"
            );
            compared += 1;
        }
    }
    compared
}

#[test]
fn an_exported_system_validates_and_runs_like_the_system() {
    let dir = temp_dir();
    let system = example("two-mass-force-force.json");
    let system = system.to_str().unwrap();
    let flat = run(&[system], dir.path(), "flat.csv");
    for version in [2, 3] {
        let fmu = export(
            &[system],
            version,
            &[],
            dir.path(),
            &format!("two-mass-{version}.fmu"),
        );
        cosimo_ok(["validate", fmu.to_str().unwrap()]);
        let md = String::from_utf8(
            zip::ZipArchive::new(std::fs::File::open(&fmu).unwrap())
                .unwrap()
                .by_name("modelDescription.xml")
                .map(|mut f| {
                    let mut v = Vec::new();
                    std::io::Read::read_to_end(&mut f, &mut v).unwrap();
                    v
                })
                .unwrap(),
        )
        .unwrap();
        assert!(
            md.contains("canHandleVariableCommunicationStepSize=\"true\""),
            "{md}"
        );
        assert!(md.contains("name=\"mass1.x\""), "{md}");
        assert!(
            !md.contains("name=\"spring.x1\""),
            "a connected input is not shown: {md}"
        );
        // The outer step is the macro step (the FMU's default experiment): the same bits.
        let nested = run(
            &[fmu.to_str().unwrap(), "--output-interval", "0.01"],
            dir.path(),
            &format!("exported-{version}.csv"),
        );
        assert!(
            compare(&flat, &nested, 0.0) > 300,
            "too few values compared"
        );
    }
}

#[test]
fn the_same_export_is_the_same_fmu_and_another_is_another() {
    let dir = temp_dir();
    let system = example("two-mass-force-force.json");
    let system = system.to_str().unwrap();
    let token = |fmu: &Path| {
        let archive = zip::ZipArchive::new(std::fs::File::open(fmu).unwrap());
        let mut archive = archive.unwrap();
        let mut text = String::new();
        std::io::Read::read_to_string(
            &mut archive.by_name("modelDescription.xml").unwrap(),
            &mut text,
        )
        .unwrap();
        let at = text.find("guid=\"").unwrap() + 6;
        text[at..at + 38].to_string()
    };
    let a = export(&[system], 2, &[], dir.path(), "a.fmu");
    let b = export(&[system], 2, &[], dir.path(), "b.fmu");
    let c = export(&[system], 2, &["--step-size", "2e-3"], dir.path(), "c.fmu");
    assert_eq!(token(&a), token(&b));
    assert_ne!(token(&a), token(&c));
}

#[test]
fn exposed_parameters_take_start_values_like_the_system() {
    let dir = temp_dir();
    let system = example("two-mass-force-force.json");
    let system = system.to_str().unwrap();
    let fmu = export(
        &[system],
        2,
        &["--expose", "mass*.x", "--expose", "mass1.m"],
        dir.path(),
        "m.fmu",
    );
    let flat = run(
        &[system, "--start-value", "mass1.m=2"],
        dir.path(),
        "flat.csv",
    );
    let nested = run(
        &[
            fmu.to_str().unwrap(),
            "--output-interval",
            "0.01",
            "--start-value",
            "mass1.m=2",
        ],
        dir.path(),
        "nested.csv",
    );
    assert!(
        nested.column("mass1.v").is_none(),
        "only the exposed variables are shown"
    );
    assert!(compare(&flat, &nested, 0.0) > 150);
    let default = run(&[system], dir.path(), "default.csv");
    let x = default.column("mass2.x").unwrap();
    let y = nested.column("mass2.x").unwrap();
    assert_ne!(
        default.values(x).last(),
        nested.values(y).last(),
        "m = 2 changes the motion"
    );
}

#[test]
fn a_nested_export_equals_the_flat_system() {
    let dir = temp_dir();
    let (mass, spring) = (fmu("Oscillator", 2), fmu("CouplingSpring", 2));
    let inner = dir.path().join("inner.json");
    std::fs::write(
        &inner,
        serde_json::json!({
            "components": [
                {"name": "mass1", "fmu": mass, "parameters": {"m": 1, "c": 1000, "d": 10, "x0": 0.1, "v0": 0}},
                {"name": "spring", "fmu": spring, "parameters": {"c1": 1000, "d1": 10, "c3": 0, "d3": 0}}
            ],
            "connections": [
                {"from": "mass1.x", "to": "spring.x1"},
                {"from": "mass1.v", "to": "spring.v1"},
                {"from": "spring.F1", "to": "mass1.F"}
            ],
            "experiment": {"startTime": 0, "stopTime": 1, "stepSize": 1e-3, "algorithm": "jacobi"}
        })
        .to_string(),
    )
    .unwrap();
    let sub = export(&[inner.to_str().unwrap()], 2, &[], dir.path(), "sub.fmu");
    let outer = dir.path().join("outer.json");
    let mass3 = fmu("Oscillator", 3);
    std::fs::write(
        &outer,
        serde_json::json!({
            "components": [
                {"name": "sub", "fmu": sub},
                {"name": "mass2", "fmu": mass3, "parameters": {"m": 1, "c": 1000, "d": 10, "x0": 0, "v0": 0}}
            ],
            "connections": [
                {"from": "mass2.x", "to": "sub.spring.x2"},
                {"from": "mass2.v", "to": "sub.spring.v2"},
                {"from": "sub.spring.F2", "to": "mass2.F"}
            ],
            "experiment": {"startTime": 0, "stopTime": 1, "stepSize": 1e-3, "outputInterval": 1e-2, "algorithm": "jacobi"}
        })
        .to_string(),
    )
    .unwrap();
    let flat = run(
        &[example("two-mass-force-force.json").to_str().unwrap()],
        dir.path(),
        "flat.csv",
    );
    let nested = run(&[outer.to_str().unwrap()], dir.path(), "nested.csv");
    // Renamed columns: sub.mass1.x is mass1.x.
    let mut compared = 0;
    for name in ["mass1.x", "mass1.v", "mass2.x", "mass2.v"] {
        let f = flat.column(name).unwrap();
        let nested_name = if name.starts_with("mass1") {
            format!("sub.{name}")
        } else {
            name.to_string()
        };
        let n = nested
            .column(&nested_name)
            .unwrap_or_else(|| panic!("no {nested_name} in {:?}", nested.columns()));
        assert_eq!(flat.time(), nested.time());
        for (i, (&a, &b)) in flat.values(f).iter().zip(nested.values(n)).enumerate() {
            assert_eq!(a, b, "{name} at t = {}", flat.time()[i]);
            compared += 1;
        }
    }
    assert!(compared > 400);
}

#[test]
fn an_export_that_would_not_run_is_refused_with_the_name() {
    let dir = temp_dir();
    let system = example("two-mass-force-force.json");
    let system = system.to_str().unwrap();
    let library = container_library();
    let library = library.to_str().unwrap();
    let out = dir.path().join("x.fmu");
    let out = out.to_str().unwrap();
    let refused = |args: &[&str], needle: &str| {
        let output = cosimo(args);
        assert_eq!(output.status.code(), Some(2), "{}", show(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(needle), "expected {needle:?} in:\n{stderr}");
        assert!(!Path::new(out).exists(), "nothing is written");
    };
    refused(
        &[
            "export",
            system,
            "-o",
            out,
            "--container-library",
            library,
            "--expose",
            "mass1.nothing",
        ],
        "mass1.nothing",
    );
    refused(
        &[
            "export",
            system,
            "-o",
            out,
            "--container-library",
            library,
            "--expose",
            "spring.x1",
        ],
        "driven by a connection",
    );
    refused(
        &[
            "export",
            system,
            "-o",
            out,
            "--container-library",
            library,
            "--hide",
            "nobody.*",
        ],
        "nobody.*",
    );
    refused(
        &[
            "export",
            system,
            "-o",
            out,
            "--container-library",
            "/nonexistent/lib.so",
        ],
        "cosimo-container",
    );
    refused(
        &[
            "export",
            system,
            "-o",
            out,
            "--container-library",
            library,
            "--isolate",
            "--container-worker",
            "/nonexistent/worker",
        ],
        "the worker program /nonexistent/worker (--container-worker) is missing",
    );
    // An inner FMU without a binary for this platform.
    let unpacked = unpacked_with_edit("Oscillator", 2, "modelName", "modelName");
    std::fs::remove_dir_all(unpacked.path().join("binaries")).unwrap();
    let component = format!("a={}", unpacked.path().display());
    refused(
        &[
            "export",
            &component,
            "-o",
            out,
            "--container-library",
            library,
        ],
        "binaries",
    );
}

// ---------------------------------------------------------------------------------------------
// In FMPy

fn fmpy_python() -> Option<PathBuf> {
    match std::env::var_os("COSIMO_FMPY_PYTHON") {
        Some(python) => Some(PathBuf::from(python)),
        None if std::env::var_os("CI").is_some() => {
            panic!("FMPy is required in CI: run the suite with `cargo xtask test`")
        }
        None => {
            common::skip::skipped(
                Skip::Fmpy,
                "COSIMO_FMPY_PYTHON not set; run `cargo xtask test` to run exported FMUs in FMPy",
            );
            None
        }
    }
}

/// Run a Python script with FMPy; its stdout.
fn python(python: &Path, script: &str, args: &[&str]) -> String {
    let output = Command::new(python)
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("python runs");
    assert!(output.status.success(), "{}", show(&output));
    String::from_utf8(output.stdout).unwrap()
}

/// simulate_fmu, every value printed with repr (exact).
const SIMULATE: &str = r#"
import sys
from fmpy import simulate_fmu
from fmpy.validation import validate_fmu
path, interval, out = sys.argv[1], float(sys.argv[2]), sys.argv[3]
problems = validate_fmu(path)
assert not problems, problems
result = simulate_fmu(path, fmi_type='CoSimulation', output_interval=interval)
names = result.dtype.names
with open(out, 'w') as f:
    f.write(','.join(names) + '\n')
    for row in result:
        f.write(','.join(repr(float(row[n])) for n in names) + '\n')
print(len(result))
"#;

#[test]
fn fmpy_validates_and_simulates_the_export_like_cosimo_run() {
    let Some(py) = fmpy_python() else { return };
    let dir = temp_dir();
    let system = example("two-mass-force-force.json");
    let system = system.to_str().unwrap();
    let flat = run(
        &[system, "--output-interval", "1e-3"],
        dir.path(),
        "flat.csv",
    );
    for version in [2, 3] {
        let fmu = export(
            &[system],
            version,
            &[],
            dir.path(),
            &format!("e{version}.fmu"),
        );
        // The outer step is the macro step, and a multiple of it: the same bits.
        for interval in ["1e-3", "5e-3", "0.01"] {
            let out = dir.path().join(format!("fmpy-{version}-{interval}.csv"));
            python(
                &py,
                SIMULATE,
                &[fmu.to_str().unwrap(), interval, out.to_str().unwrap()],
            );
            let fmpy = read_results(&out);
            assert!(
                compare(&flat, &fmpy, 0.0) > 400,
                "FMI {version}, interval {interval}: too few values compared"
            );
        }
        // Outer steps off the inner grid: the macro steps they cut are taken whole, replayed
        // up to each outer point and ended with the whole step's states, so the points both
        // runs have are the same bits.
        for interval in ["1.5e-3", "4e-4"] {
            let out = dir.path().join(format!("fmpy-{version}-{interval}.csv"));
            python(
                &py,
                SIMULATE,
                &[fmu.to_str().unwrap(), interval, out.to_str().unwrap()],
            );
            let fmpy = read_results(&out);
            assert!(
                compare(&flat, &fmpy, 0.0) > 1000,
                "FMI {version}, interval {interval}: too few values compared"
            );
        }
    }
    // The algorithms that iterate over a whole macro step, the same way.
    for (version, settings) in [
        (
            2,
            ["--algorithm", "gauss-seidel", "--extrapolation-order", "2"],
        ),
        (3, ["--algorithm", "implicit", "--extrapolation-order", "1"]),
    ] {
        let name = format!("{}.csv", settings[1]);
        let mut args = vec![system, "--output-interval", "1e-3"];
        args.extend(settings);
        let flat = run(&args, dir.path(), &name);
        let fmu = export(
            &[system],
            version,
            &settings,
            dir.path(),
            &format!("{}-{version}.fmu", settings[1]),
        );
        let out = dir
            .path()
            .join(format!("fmpy-{}-{version}.csv", settings[1]));
        python(
            &py,
            SIMULATE,
            &[fmu.to_str().unwrap(), "4e-4", out.to_str().unwrap()],
        );
        let fmpy = read_results(&out);
        assert!(
            compare(&flat, &fmpy, 0.0) > 1000,
            "{}: too few values compared",
            settings[1]
        );
    }
}

/// Random outer steps, FMI 2 and FMI 3: each lands where it was asked to.
const RANDOM_STEPS: &str = r#"
import sys, random, shutil
from fmpy import read_model_description, extract
from fmpy.fmi2 import FMU2Slave, fmi2LastSuccessfulTime
from fmpy.fmi3 import FMU3Slave
path = sys.argv[1]
md = read_model_description(path)
unzipped = extract(path)
version = md.fmiVersion
cls = FMU2Slave if version == '2.0' else FMU3Slave
ident = md.coSimulation.modelIdentifier
fmu = cls(guid=md.guid, unzipDirectory=unzipped, modelIdentifier=ident, instanceName='r')
fmu.instantiate()
if version == '2.0':
    fmu.setupExperiment(startTime=0.0, stopTime=1.0)
    fmu.enterInitializationMode(); fmu.exitInitializationMode()
else:
    fmu.enterInitializationMode(startTime=0.0, stopTime=1.0); fmu.exitInitializationMode()
rng = random.Random(7)
t = 0.0
worst = 0.0
steps = 0
while t < 0.9:
    h = rng.choice([1e-3, 2.5e-4, 3.7e-3, 1e-2, 7e-5]) * rng.uniform(0.5, 1.5)
    if version == '2.0':
        fmu.doStep(currentCommunicationPoint=t, communicationStepSize=h)
        landed = fmu.getRealStatus(fmi2LastSuccessfulTime)
    else:
        _, _, _, landed = fmu.doStep(currentCommunicationPoint=t, communicationStepSize=h)
    worst = max(worst, abs(landed - (t + h)))
    t = t + h
    steps += 1
x = fmu.getReal([1])[0] if version == '2.0' else fmu.getFloat64([1])[0]
fmu.terminate(); fmu.freeInstance()
shutil.rmtree(unzipped, ignore_errors=True)
print(steps, worst, x)
"#;

#[test]
fn random_outer_steps_land_exactly() {
    let Some(py) = fmpy_python() else { return };
    let dir = temp_dir();
    let system = example("two-mass-force-force.json");
    for version in [2, 3] {
        let fmu = export(
            &[system.to_str().unwrap()],
            version,
            &[],
            dir.path(),
            &format!("r{version}.fmu"),
        );
        let printed = python(&py, RANDOM_STEPS, &[fmu.to_str().unwrap()]);
        let fields: Vec<f64> = printed
            .split_whitespace()
            .map(|s| s.parse().unwrap())
            .collect();
        assert!(fields[0] > 100.0, "{printed}");
        assert!(
            fields[1] <= 1e-12,
            "a step did not land where asked: {printed}"
        );
        assert!(fields[2].is_finite(), "{printed}");
    }
}

/// Save after 30 outer steps of h, go on 30 more; restore in the same instance and, serialised,
/// in a fresh one; both go on to the same bits. The bytes and the rows go to a file, which
/// `STATE_IN_A_NEW_PROCESS` continues from.
const STATE: &str = r#"
import sys, shutil, pickle
from fmpy import read_model_description, extract
from fmpy.fmi2 import FMU2Slave
from fmpy.fmi3 import FMU3Slave
path = sys.argv[1]
md = read_model_description(path)
unzipped = extract(path)
version = md.fmiVersion
cls = FMU2Slave if version == '2.0' else FMU3Slave
outputs = [v.valueReference for v in md.modelVariables if v.causality == 'output']
def make(name):
    fmu = cls(guid=md.guid, unzipDirectory=unzipped, modelIdentifier=md.coSimulation.modelIdentifier, instanceName=name)
    fmu.instantiate()
    if version == '2.0':
        fmu.setupExperiment(startTime=0.0, stopTime=1.0)
        fmu.enterInitializationMode(); fmu.exitInitializationMode()
    else:
        fmu.enterInitializationMode(startTime=0.0, stopTime=1.0); fmu.exitInitializationMode()
    return fmu
def get(fmu):
    return list(fmu.getReal(outputs) if version == '2.0' else fmu.getFloat64(outputs))
h = float(sys.argv[2])
def go(fmu, k0, n):
    rows = []
    for i in range(k0, k0 + n):
        fmu.doStep(currentCommunicationPoint=i * h, communicationStepSize=h)
        rows.append(get(fmu))
    return rows
a = make('a')
go(a, 0, 30)
state = a.getFMUState() if version == '3.0' else a.getFMUstate()
data = a.serializeFMUState(state) if version == '3.0' else a.serializeFMUstate(state)
first = go(a, 30, 30)
with open(sys.argv[3], 'wb') as f:
    pickle.dump((bytes(data), first), f)
if version == '3.0':
    a.setFMUState(state)
else:
    a.setFMUstate(state)
again = go(a, 30, 30)
b = make('b')
restored = b.deserializeFMUState(data) if version == '3.0' else b.deSerializeFMUstate(data)
if version == '3.0':
    b.setFMUState(restored)
else:
    b.setFMUstate(restored)
fresh = go(b, 30, 30)
assert first == again, 'restored in the same instance differs'
assert first == fresh, 'restored in a fresh instance differs'
for fmu in (a, b):
    fmu.terminate(); fmu.freeInstance()
shutil.rmtree(unzipped, ignore_errors=True)
print('same', len(first), len(data))
"#;

/// The bytes `STATE` saved, restored in this new process: the same rows.
const STATE_IN_A_NEW_PROCESS: &str = r#"
import sys, shutil, pickle
from fmpy import read_model_description, extract
from fmpy.fmi2 import FMU2Slave
from fmpy.fmi3 import FMU3Slave
path, h = sys.argv[1], float(sys.argv[2])
with open(sys.argv[3], 'rb') as f:
    data, first = pickle.load(f)
md = read_model_description(path)
unzipped = extract(path)
version = md.fmiVersion
cls = FMU2Slave if version == '2.0' else FMU3Slave
outputs = [v.valueReference for v in md.modelVariables if v.causality == 'output']
fmu = cls(guid=md.guid, unzipDirectory=unzipped, modelIdentifier=md.coSimulation.modelIdentifier, instanceName='c')
fmu.instantiate()
if version == '2.0':
    fmu.setupExperiment(startTime=0.0, stopTime=1.0)
    fmu.enterInitializationMode(); fmu.exitInitializationMode()
    fmu.setFMUstate(fmu.deSerializeFMUstate(data))
else:
    fmu.enterInitializationMode(startTime=0.0, stopTime=1.0); fmu.exitInitializationMode()
    fmu.setFMUState(fmu.deserializeFMUState(data))
rows = []
for i in range(30, 60):
    fmu.doStep(currentCommunicationPoint=i * h, communicationStepSize=h)
    rows.append(list(fmu.getReal(outputs) if version == '2.0' else fmu.getFloat64(outputs)))
assert rows == first, 'restored in a new process differs'
fmu.terminate(); fmu.freeInstance()
shutil.rmtree(unzipped, ignore_errors=True)
print('same', len(rows))
"#;

#[test]
fn a_saved_state_continues_identically_here_in_a_fresh_instance_and_in_a_new_process() {
    let Some(py) = fmpy_python() else { return };
    let dir = temp_dir();
    let system = example("two-mass-force-force.json");
    for version in [2, 3] {
        let fmu = export(
            &[system.to_str().unwrap()],
            version,
            &[],
            dir.path(),
            &format!("s{version}.fmu"),
        );
        // On the inner grid, and off it: 0.37 ms steps save inside a replayed macro step.
        for h in ["0.01", "0.00037"] {
            let saved = dir.path().join(format!("state-{version}-{h}.pickle"));
            let args = [fmu.to_str().unwrap(), h, saved.to_str().unwrap()];
            let printed = python(&py, STATE, &args);
            assert!(
                printed.starts_with("same 30"),
                "FMI {version}, h {h}: {printed}"
            );
            let printed = python(&py, STATE_IN_A_NEW_PROCESS, &args);
            assert_eq!(printed.trim(), "same 30", "FMI {version}, h {h}");
        }
    }
}

/// Misuse: each call must fail with Error (status 3) and the process must go on.
const MISUSE: &str = r#"
import sys, shutil
from fmpy import read_model_description, extract
from fmpy.fmi2 import FMU2Slave
from fmpy.fmi3 import FMU3Slave
from fmpy.fmi1 import FMICallException
path = sys.argv[1]
md = read_model_description(path)
unzipped = extract(path)
version = md.fmiVersion
cls = FMU2Slave if version == '2.0' else FMU3Slave
messages = []
def logger(*args):
    messages.append(args)
fmu = cls(guid=md.guid, unzipDirectory=unzipped, modelIdentifier=md.coSimulation.modelIdentifier, instanceName='m')
fmu.instantiate()
def refused(what, f):
    try:
        f()
    except FMICallException as e:
        assert e.status == 3, (what, e.status)
        return
    raise AssertionError(what + ' was accepted')
step = (lambda t, h: fmu.doStep(currentCommunicationPoint=t, communicationStepSize=h))
refused('doStep before initialization', lambda: step(0.0, 0.01))
if version == '2.0':
    fmu.setupExperiment(startTime=0.0, stopTime=1.0)
    fmu.enterInitializationMode(); fmu.exitInitializationMode()
    get = fmu.getReal; set_ = fmu.setReal
else:
    fmu.enterInitializationMode(startTime=0.0, stopTime=1.0); fmu.exitInitializationMode()
    get = fmu.getFloat64; set_ = fmu.setFloat64
refused('doStep at the wrong time', lambda: step(0.5, 0.01))
refused('a negative step', lambda: step(0.0, -0.01))
refused('an unknown value reference', lambda: get([999]))
refused('setting an output', lambda: set_([1], [1.0]))
refused('doStep past the stop time', lambda: step(0.0, 5.0))
print('refused')
"#;

#[test]
fn misuse_returns_error_and_the_importer_goes_on() {
    let Some(py) = fmpy_python() else { return };
    let dir = temp_dir();
    let system = example("two-mass-force-force.json");
    for version in [2, 3] {
        let fmu = export(
            &[system.to_str().unwrap()],
            version,
            &[],
            dir.path(),
            &format!("m{version}.fmu"),
        );
        let printed = python(&py, MISUSE, &[fmu.to_str().unwrap()]);
        assert!(printed.contains("refused"), "{printed}");
    }
}

#[test]
fn every_example_exports_as_fmi_2_and_fmi_3_and_fmpy_runs_it_with_the_bits_of_cosimo_run() {
    let dir = temp_dir();
    let folder = example("");
    let mut examples: Vec<PathBuf> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            // Studies are sweeps over a system, not systems.
            (name.ends_with(".json") && !name.contains("study")) || name.ends_with(".ssp")
        })
        .collect();
    examples.sort();
    assert!(examples.len() >= 15, "{examples:?}");
    let py = fmpy_python();
    // FMPy's runs, all in one process at the end: (FMU, outer step, stop, CSV, flat run).
    let mut fmpy_jobs = Vec::new();
    for (e, system) in examples.iter().enumerate() {
        // Output points on every macro step (the first one's size, for step control), up to
        // 200 of them: FMPy's outer steps are compared with this run at each point.
        let request = cosimo::request::RunRequest {
            targets: vec![system.display().to_string()],
            ..Default::default()
        };
        let experiment = cosimo::request::prepare(&request, &mut |_| {})
            .unwrap_or_else(|error| panic!("{}: {error}", system.display()))
            .system
            .experiment;
        let (step, stop) = (
            experiment.step,
            experiment
                .stop
                .min(experiment.start + 200.0 * experiment.step),
        );
        let grid = ["--output-interval".to_string(), step.to_string()];
        let grid = [grid[0].as_str(), grid[1].as_str()];
        let stop_text = stop.to_string();
        let flat = py.as_ref().map(|_| {
            let mut args = vec![system.to_str().unwrap(), "--stop-time", &stop_text];
            args.extend(grid);
            run(&args, dir.path(), &format!("flat-{e}.csv"))
        });
        for version in [2, 3] {
            let name = format!("e{e}-{version}.fmu");
            let fmu = export(
                &[system.to_str().unwrap()],
                version,
                &grid,
                dir.path(),
                &name,
            );
            cosimo_ok(["validate", fmu.to_str().unwrap()]);
            // Running is the other tests' subject: once per example keeps this one short.
            if version == 3 {
                let out = dir.path().join("e.csv");
                cosimo_ok([
                    "run",
                    fmu.to_str().unwrap(),
                    "-q",
                    "-o",
                    out.to_str().unwrap(),
                ]);
                assert!(read_results(&out).time().len() > 10, "{}", system.display());
            }
            if let Some(flat) = &flat {
                // On the macro grid, and 1.5 macro steps (every other point inside a step).
                for outer in [step, 1.5 * step] {
                    let csv = dir.path().join(format!("fmpy-{e}-{version}-{outer}.csv"));
                    fmpy_jobs.push((fmu.clone(), outer, stop, csv, flat.clone(), system.clone()));
                }
            }
        }
    }
    let Some(py) = py else { return };
    let jobs: Vec<String> = fmpy_jobs
        .iter()
        .map(|(fmu, outer, stop, csv, _, _)| {
            format!("{}\t{outer:e}\t{stop:e}\t{}", fmu.display(), csv.display())
        })
        .collect();
    let list = dir.path().join("jobs.tsv");
    std::fs::write(&list, jobs.join("\n")).unwrap();
    python(&py, SIMULATE_ALL, &[list.to_str().unwrap()]);
    for (fmu, outer, _, csv, flat, system) in &fmpy_jobs {
        let compared = compare(flat, &read_results(csv), 0.0);
        assert!(
            compared >= 10,
            "{} ({}), outer step {outer}: only {compared} values compared",
            system.display(),
            fmu.display()
        );
    }
}

/// FMPy validates and simulates each exported FMU of a list (tab-separated: FMU, outer step,
/// stop time, CSV to write).
const SIMULATE_ALL: &str = r#"
import sys
from fmpy import simulate_fmu
from fmpy.validation import validate_fmu
for line in open(sys.argv[1]).read().splitlines():
    path, interval, stop, out = line.split('\t')
    problems = validate_fmu(path)
    assert not problems, (path, problems)
    result = simulate_fmu(path, fmi_type='CoSimulation', output_interval=float(interval), stop_time=float(stop))
    # Numeric scalars (arrays, strings and binaries are the other tests' subject).
    names = [n for n in result.dtype.names if result.dtype[n].shape == () and result.dtype[n].kind in 'fiub']
    with open(out, 'w') as f:
        f.write(','.join(names) + '\n')
        for row in result:
            f.write(','.join(repr(float(row[n])) for n in names) + '\n')
"#;

/// The start of the FMPy scripts: the exported FMU (argv[1]) instantiated as "outer" and
/// initialised for [0, 1], FMI 2 or FMI 3 as its model description says, in `fmu`.
const OPEN_OUTER: &str = r#"
import sys, shutil
from fmpy import read_model_description, extract
from fmpy.fmi2 import FMU2Slave
from fmpy.fmi3 import FMU3Slave
path = sys.argv[1]
md = read_model_description(path)
unzipped = extract(path)
version = md.fmiVersion
cls = FMU2Slave if version == '2.0' else FMU3Slave
fmu = cls(guid=md.guid, unzipDirectory=unzipped, modelIdentifier=md.coSimulation.modelIdentifier, instanceName='outer')
fmu.instantiate()
if version == '2.0':
    fmu.setupExperiment(startTime=0.0, stopTime=1.0)
    fmu.enterInitializationMode(); fmu.exitInitializationMode()
else:
    fmu.enterInitializationMode(startTime=0.0, stopTime=1.0); fmu.exitInitializationMode()
"#;

/// `script` after [`OPEN_OUTER`].
fn outer_script(script: &str) -> String {
    format!("{OPEN_OUTER}{script}")
}

/// An inner FMU that asks to terminate at t = 0.35: FMI 2 Discard with fmi2Terminated, FMI 3
/// terminateSimulation, both with the last successful time; its message reaches the
/// importer's logger prefixed with the component.
const TERMINATION: &str = r#"
from fmpy.fmi2 import fmi2Terminated, fmi2LastSuccessfulTime
from fmpy.fmi1 import FMICallException
t = 0.0
while True:
    if version == '2.0':
        try:
            fmu.doStep(currentCommunicationPoint=t, communicationStepSize=0.1)
        except FMICallException as e:
            assert e.status == 2, e.status
            assert fmu.getBooleanStatus(fmi2Terminated)
            print('terminated at', fmu.getRealStatus(fmi2LastSuccessfulTime), flush=True)
            break
    else:
        _, terminate, _, last = fmu.doStep(currentCommunicationPoint=t, communicationStepSize=0.1)
        if terminate:
            print('terminated at', last, flush=True)
            break
    t += 0.1
    assert t < 0.95, 'no termination'
fmu.terminate(); fmu.freeInstance()
shutil.rmtree(unzipped, ignore_errors=True)
"#;

#[test]
fn an_inner_termination_request_reaches_the_importer_with_its_message() {
    let Some(py) = fmpy_python() else { return };
    let dir = temp_dir();
    for version in [2, 3] {
        let component = format!("f={}", fmu("Faulty", version).display());
        let out = export(
            &[component.as_str()],
            version,
            &[
                "--start-value",
                "f.failure=4",
                "--start-value",
                "f.fail_at=0.35",
                "--step-size",
                "0.1",
            ],
            dir.path(),
            &format!("t{version}.fmu"),
        );
        let printed = python(&py, &outer_script(TERMINATION), &[out.to_str().unwrap()]);
        // The FMU stops at 0.35; the system's time is the end of that macro step.
        let at: f64 = printed
            .lines()
            .find_map(|l| l.strip_prefix("terminated at "))
            .unwrap_or_else(|| panic!("{printed}"))
            .trim()
            .parse()
            .unwrap();
        assert!((0.35..=0.4 + 1e-12).contains(&at), "{printed}");
        assert!(
            printed.contains("f: ") && printed.contains("termination requested by parameter failure"),
            "the inner message, prefixed with its component, reaches the importer's logger:\n{printed}"
        );
    }
}

/// A system of one Faulty FMU (`f`) that fails with `failure` at t = 0.35, exported as FMI
/// `version` with `extra` (isolation options).
fn faulty_export(failure: u8, version: u8, extra: &[&str], dir: &Path, name: &str) -> PathBuf {
    let component = format!("f={}", fmu("Faulty", version).display());
    let failure = format!("f.failure={failure}");
    let mut args = vec![
        "--start-value",
        failure.as_str(),
        "--start-value",
        "f.fail_at=0.35",
        "--step-size",
        "0.1",
    ];
    args.extend(extra);
    export(&[component.as_str()], version, &args, dir, name)
}

/// `cosimo run` of an exported FMU that fails inside: it ends with an error of its own (an
/// exit code, not a signal) and what it said.
fn run_failing(fmu: &Path) -> (std::time::Duration, String) {
    let started = std::time::Instant::now();
    let output = cosimo([
        "run",
        fmu.to_str().unwrap(),
        "--stop-time",
        "1",
        "-o",
        fmu.with_extension("csv").to_str().unwrap(),
    ]);
    let took = started.elapsed();
    let code = output.status.code();
    assert!(
        code.is_some_and(|c| c != 0),
        "the importer ends with an error of its own, not a signal or success: {}",
        show(&output)
    );
    (took, String::from_utf8_lossy(&output.stderr).into_owned())
}

#[test]
fn an_inner_segfault_in_an_isolated_export_is_an_error_and_the_importer_goes_on() {
    let dir = temp_dir();
    for version in [2, 3] {
        let out = faulty_export(
            5,
            version,
            &["--isolate"],
            dir.path(),
            &format!("s{version}.fmu"),
        );
        let names = zip_names(&out);
        assert!(
            names
                .iter()
                .any(|n| n.starts_with("binaries/")
                    && n.ends_with(&cosimo::export::worker_file_name())),
            "the worker program ships in binaries/: {names:?}"
        );
        let (_, said) = run_failing(&out);
        let step = if version == 2 {
            "fmi2DoStep"
        } else {
            "fmi3DoStep"
        };
        assert!(
            said.contains("\"f\"") && said.contains(step) && said.contains("SIGSEGV"),
            "the error names the inner component, its call and the signal:\n{said}"
        );
    }
}

#[test]
fn an_inner_hang_with_a_call_timeout_is_an_error_within_the_timeout() {
    let dir = temp_dir();
    for version in [2, 3] {
        let out = faulty_export(
            8,
            version,
            &["--call-timeout", "2"],
            dir.path(),
            &format!("h{version}.fmu"),
        );
        let (took, said) = run_failing(&out);
        assert!(
            said.contains("\"f\"") && said.contains("2 s"),
            "the error names the inner component and the timeout:\n{said}"
        );
        assert!(
            took < std::time::Duration::from_secs(20),
            "the hang ends with the call timeout, not later: {took:?}"
        );
    }
}

/// The file names of a zip archive.
fn zip_names(path: &Path) -> Vec<String> {
    let zip = zip::ZipArchive::new(std::fs::File::open(path).unwrap()).unwrap();
    zip.file_names().map(str::to_string).collect()
}

/// Steps of 0.1 until one fails; the failure's status, a second step refused, the instance
/// freed, and the importer still there to say so.
const INNER_FAILURE: &str = r#"
from fmpy.fmi1 import FMICallException
t = 0.0
failed = None
while t < 0.95 and failed is None:
    try:
        fmu.doStep(currentCommunicationPoint=t, communicationStepSize=0.1)
        t += 0.1
    except FMICallException as e:
        failed = e.status
print('failed with status', failed, flush=True)
try:
    fmu.doStep(currentCommunicationPoint=t, communicationStepSize=0.1)
    print('stepped again', flush=True)
except FMICallException as e:
    print('again refused with status', e.status, flush=True)
try:
    fmu.terminate()
except FMICallException:
    pass
fmu.freeInstance()
shutil.rmtree(unzipped, ignore_errors=True)
print('importer goes on', flush=True)
"#;

#[test]
fn fmpy_survives_an_inner_segfault_and_hang_in_an_isolated_export() {
    let Some(py) = fmpy_python() else { return };
    let dir = temp_dir();
    for version in [2, 3] {
        let step = if version == 2 {
            "fmi2DoStep"
        } else {
            "fmi3DoStep"
        };
        for (failure, extra, what) in [
            (5, &["--isolate"][..], "SIGSEGV"),
            (8, &["--call-timeout", "2"][..], "call timeout of 2 s"),
        ] {
            let out = faulty_export(
                failure,
                version,
                extra,
                dir.path(),
                &format!("fmpy-{failure}-{version}.fmu"),
            );
            let printed = python(&py, &outer_script(INNER_FAILURE), &[out.to_str().unwrap()]);
            assert!(
                printed.contains("failed with status 3")
                    && printed.contains("again refused with status 3")
                    && printed.contains("importer goes on"),
                "Error, then Error again, and FMPy goes on:\n{printed}"
            );
            assert!(
                printed.contains("component \"f\"")
                    && printed.contains(step)
                    && printed.contains(what),
                "the importer's logger hears the component, the call and what happened:\n{printed}"
            );
        }
    }
}

/// libcosim (libcosimpy) runs an exported FMI 2 FMU alone with fixed steps: `STEP SECONDS`,
/// `STEPS`; prints whether the steps went through, the time reached and the last value of
/// each variable named after the FMU path.
const LIBCOSIM: &str = r#"
import sys
from libcosimpy.CosimExecution import CosimExecution
from libcosimpy.CosimSlave import CosimLocalSlave
from libcosimpy.CosimObserver import CosimObserver
from libcosimpy.CosimLogging import CosimLogLevel, log_output_level
from libcosimpy._internal import get_last_error_message
log_output_level(CosimLogLevel.FATAL)
path, step, steps, names = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
execution = CosimExecution.from_step_size(round(step * 1e9))
slave = CosimLocalSlave(fmu_path=path, instance_name="exported")
index = execution.add_local_slave(slave)
assert index >= 0, get_last_error_message()
observer = CosimObserver.create_last_value()
execution.add_observer(observer)
ok = execution.step(steps)
print('stepped', ok, 'to', execution.status().current_time, flush=True)
if not ok:
    print('error:', get_last_error_message(), flush=True)
references = {v.name.decode(): v.reference for v in execution.slave_variables(index)}
for name in names:
    print(name, repr(observer.last_real_values(index, [references[name]])[0]), flush=True)
print('importer goes on', flush=True)
"#;

/// The venv's python when it has libcosimpy (`cargo xtask test` installs it with FMPy).
fn libcosim_python() -> Option<PathBuf> {
    let py = fmpy_python()?;
    let found = Command::new(&py)
        .args(["-c", "import libcosimpy"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        common::skip::skipped(
            Skip::Fmpy,
            "libcosimpy is not in COSIMO_FMPY_PYTHON's venv; run `cargo xtask test` to run exported FMUs in libcosim",
        );
        return None;
    }
    Some(py)
}

#[test]
fn libcosim_runs_an_fmi_2_export_like_cosimo_run_and_survives_an_inner_segfault() {
    let Some(py) = libcosim_python() else { return };
    let dir = temp_dir();
    let system = example("two-mass-force-force.json");
    let fmu = export(&[system.to_str().unwrap()], 2, &[], dir.path(), "lc.fmu");
    let flat = run(
        &[system.to_str().unwrap(), "--stop-time", "0.1"],
        dir.path(),
        "flat.csv",
    );
    let printed = python(
        &py,
        LIBCOSIM,
        &[fmu.to_str().unwrap(), "0.001", "100", "mass1.x", "mass2.v"],
    );
    assert!(printed.contains("stepped True to 100000000"), "{printed}");
    // The outer step is the macro step: the bits of `cosimo run`.
    let last = flat.time().len() - 1;
    for name in ["mass1.x", "mass2.v"] {
        let expected = flat.values(flat.column(name).unwrap())[last];
        let got: f64 = printed
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{printed}"))
            .parse()
            .unwrap();
        assert_eq!(got.to_bits(), expected.to_bits(), "{name}: {printed}");
    }
    let crashing = faulty_export(5, 2, &["--isolate"], dir.path(), "lc-segfault.fmu");
    let printed = python(&py, LIBCOSIM, &[crashing.to_str().unwrap(), "0.1", "8"]);
    assert!(
        printed.contains("stepped False to 300000000")
            && printed.contains("component \"f\"")
            && printed.contains("SIGSEGV")
            && printed.contains("importer goes on"),
        "libcosim hears the inner crash as the step's error and goes on:\n{printed}"
    );
}
