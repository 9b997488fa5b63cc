//! Connections between FMI 3 arrays sized by a structural parameter: two ResizableGains
//! (`y[i] = k i u[i]`, `u` and `y` of `n` elements) chained `a.y -> b.u` at two sizes, with an
//! input file of each size, under every algorithm that can carry them, in process and in
//! worker processes, from a system file and from an SSP; and what stays refused (an array to a
//! scalar, an element, an order that would need an array to follow a polynomial).

mod common;

use std::path::{Path, PathBuf};

use common::*;

const STEP: f64 = 0.1;
const K_A: f64 = 1.5;
const K_B: f64 = 2.0;

/// Input element `i` (from 1) of `a.u` at time `t`: distinct per element, linear in time.
fn input(i: usize, t: f64) -> f64 {
    i as f64 + 0.5 * t
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(ToString::to_string).collect()
}

/// An input file for `a.u` with `n` elements in each cell, rows at t = 0 and 1.
fn input_file(dir: &Path, n: usize) -> PathBuf {
    let cell = |t: f64| {
        (1..=n)
            .map(|i| input(i, t).to_string())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let path = dir.join(format!("a.u{n}.csv"));
    std::fs::write(
        &path,
        format!("time,a.u\n0,{}\n1,{}\n", cell(0.0), cell(1.0)),
    )
    .expect("writes the input file");
    path
}

/// The chain `a.y -> b.u` of two ResizableGains of `n` elements, as a system file.
fn chain(dir: &Path, n: usize, connection: &str) -> PathBuf {
    let fmu = fmu("ResizableGain", 3).display().to_string();
    let text = format!(
        r#"{{ "components": [
            {{ "name": "a", "fmu": {fmu:?}, "parameters": {{ "n": {n}, "k": {K_A} }} }},
            {{ "name": "b", "fmu": {fmu:?}, "parameters": {{ "n": {n}, "k": {K_B} }} }}
        ], "connections": [{connection}] }}"#
    );
    let path = dir.join(format!("chain{n}.json"));
    std::fs::write(&path, text).expect("writes the system");
    path
}

const CONNECTION: &str = r#"{ "from": "a.y", "to": "b.u" }"#;

/// Run `system` (a file holding the chain at size `n`) with `extra` options and check every
/// element of `a.y` and `b.y` against the models' formulas.
///
/// The input file's value is set at the start of each step and held, so the row at `t` shows
/// `a.y[i] = k_a i u[i](t - h)` (at t = 0, the inputs at 0). `b.u` is set from `a.y` at each
/// communication point and `b.y` feeds through from `b.u` (the kit evaluates on the read
/// after a set): every algorithm records `b.y[i] = k_b i k_a i u[i](t - h)`, with no further
/// step of delay, because the exchange sets `b.u` before the row is recorded.
fn run_and_check(system: &Path, n: usize, extra: &[&str]) {
    let dir = temp_dir();
    let inputs = input_file(dir.path(), n);
    let csv = dir.path().join("out.csv");
    let mut args = strings(&["run", &system.display().to_string(), "--quiet"]);
    args.extend(strings(&["--stop-time", "1", "--step-size", "0.1"]));
    args.extend(strings(&["--input-file", &inputs.display().to_string()]));
    args.extend(strings(extra));
    for i in 1..=n {
        args.extend(strings(&["--output-variable", &format!("a.y[{i}]")]));
        args.extend(strings(&["--output-variable", &format!("b.y[{i}]")]));
    }
    args.extend(strings(&["-o", &csv.display().to_string()]));
    cosimo_ok(&args);
    let table = read_results(&csv);
    let times = table.time();
    assert_eq!(times.len(), 11, "{extra:?}: rows at 0, 0.1, ..., 1");
    for i in 1..=n {
        let a = table.values(table.column(&format!("a.y[{i}]")).expect("a.y column"));
        let b = table.values(table.column(&format!("b.y[{i}]")).expect("b.y column"));
        for ((&t, &ya), &yb) in times.iter().zip(a).zip(b) {
            let u = input(i, (t - STEP).max(0.0));
            let want_a = K_A * i as f64 * u;
            let want_b = K_B * i as f64 * want_a;
            assert!(
                (ya - want_a).abs() < 1e-9,
                "{extra:?}, n = {n}: a.y[{i}] at t = {t}: {ya}, want {want_a}"
            );
            assert!(
                (yb - want_b).abs() < 1e-9,
                "{extra:?}, n = {n}: b.y[{i}] at t = {t}: {yb}, want k_b i k_a i u[i] = {want_b}"
            );
        }
    }
}

#[test]
fn a_chain_of_arrays_runs_at_two_sizes_under_jacobi_and_gauss_seidel() {
    let dir = temp_dir();
    for n in [2, 5] {
        let system = chain(dir.path(), n, CONNECTION);
        for algorithm in ["jacobi", "gauss-seidel"] {
            run_and_check(&system, n, &["--algorithm", algorithm]);
        }
    }
}

#[test]
fn a_chain_of_arrays_runs_under_the_implicit_algorithm() {
    let dir = temp_dir();
    for n in [2, 5] {
        let system = chain(dir.path(), n, CONNECTION);
        run_and_check(&system, n, &["--algorithm", "implicit"]);
    }
}

#[test]
fn a_chain_of_arrays_runs_in_worker_processes() {
    let dir = temp_dir();
    for n in [2, 5] {
        let system = chain(dir.path(), n, CONNECTION);
        run_and_check(&system, n, &["--isolate"]);
        run_and_check(&system, n, &["--isolate", "--algorithm", "gauss-seidel"]);
    }
}

/// Run cosimo expecting a refusal (exit code 2); its stderr.
fn refused(args: &[String]) -> String {
    let output = cosimo(args);
    assert_eq!(output.status.code(), Some(2), "{}", show(&output));
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn an_array_to_a_scalar_or_an_element_is_refused_by_name() {
    let dir = temp_dir();
    let gain = fmu("ResizableGain", 3).display().to_string();
    // The kit's Gain has a scalar input `u`.
    let scalar = fmu("Gain", 3).display().to_string();
    let system = |connection: &str| {
        let text = format!(
            r#"{{ "components": [
                {{ "name": "a", "fmu": {gain:?}, "parameters": {{ "n": 2 }} }},
                {{ "name": "g", "fmu": {scalar:?} }}
            ], "connections": [{connection}] }}"#
        );
        let path = dir.path().join("system.json");
        std::fs::write(&path, text).expect("writes the system");
        path.display().to_string()
    };
    let stderr = refused(&strings(&[
        "run",
        &system(r#"{ "from": "a.y", "to": "g.u" }"#),
    ]));
    assert!(
        stderr.contains("a.y is an array of 2 element(s) and g.u is a scalar"),
        "{stderr}"
    );
    let stderr = refused(&strings(&[
        "run",
        &system(r#"{ "from": "a.y[2]", "to": "g.u" }"#),
    ]));
    assert!(
        stderr.contains("a.y[2] names an element of array \"y\"")
            && stderr.contains("connect a.y instead"),
        "{stderr}"
    );
}

#[test]
fn an_array_connection_that_would_follow_a_polynomial_is_refused() {
    let dir = temp_dir();
    let system = chain(
        dir.path(),
        2,
        r#"{ "from": "a.y", "to": "b.u", "extrapolationOrder": 1 }"#,
    );
    let stderr = refused(&strings(&["run", &system.display().to_string()]));
    assert!(
        stderr.contains("a.y -> b.u") && stderr.contains("\"extrapolationOrder\": 0"),
        "{stderr}"
    );
}

#[test]
fn an_input_file_column_for_a_connected_array_is_refused() {
    let dir = temp_dir();
    let system = chain(dir.path(), 2, CONNECTION);
    let inputs = dir.path().join("b.csv");
    std::fs::write(&inputs, "time,b.u\n0,1 2\n1,1 2\n").expect("writes the inputs");
    let stderr = refused(&strings(&[
        "run",
        &system.display().to_string(),
        "--input-file",
        &inputs.display().to_string(),
    ]));
    assert!(
        stderr.contains("b.u drives an input that a connection drives already"),
        "{stderr}"
    );
}

/// The chain at size `n` as an unpacked SSP: connectors `u` and `y` of each ResizableGain,
/// `n` and `k` from parameter bindings, the connection `a.y -> b.u`.
fn chain_ssp(dir: &Path, n: usize) -> PathBuf {
    let fmu = fmu("ResizableGain", 3).display().to_string();
    let component = |name: &str, k: f64| {
        format!(
            r#"<ssd:Component name="{name}" type="application/x-fmu-sharedlibrary" source="{fmu}">
  <ssd:Connectors>
    <ssd:Connector name="u" kind="input"><ssc:Real/></ssd:Connector>
    <ssd:Connector name="y" kind="output"><ssc:Real/></ssd:Connector>
  </ssd:Connectors>
  <ssd:ParameterBindings><ssd:ParameterBinding><ssd:ParameterValues>
    <ssv:ParameterSet version="1.0" name="p"><ssv:Parameters>
      <ssv:Parameter name="n"><ssv:Integer value="{n}"/></ssv:Parameter>
      <ssv:Parameter name="k"><ssv:Real value="{k}"/></ssv:Parameter>
    </ssv:Parameters></ssv:ParameterSet>
  </ssd:ParameterValues></ssd:ParameterBinding></ssd:ParameterBindings>
</ssd:Component>"#
        )
    };
    let text = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<ssd:SystemStructureDescription version="1.0" name="chain"
    xmlns:ssd="http://ssp-standard.org/SSP1/SystemStructureDescription"
    xmlns:ssc="http://ssp-standard.org/SSP1/SystemStructureCommon"
    xmlns:ssv="http://ssp-standard.org/SSP1/SystemStructureParameterValues">
<ssd:System name="root">
<ssd:Elements>
{}
{}
</ssd:Elements>
<ssd:Connections>
  <ssd:Connection startElement="a" startConnector="y" endElement="b" endConnector="u"/>
</ssd:Connections>
</ssd:System>
</ssd:SystemStructureDescription>
"#,
        component("a", K_A),
        component("b", K_B)
    );
    let root = dir.join(format!("chain{n}.ssp"));
    std::fs::create_dir_all(&root).expect("creates the SSP folder");
    std::fs::write(root.join("SystemStructure.ssd"), text).expect("writes the SSD");
    root
}

#[test]
fn a_chain_of_arrays_from_an_ssp_runs_at_two_sizes() {
    let dir = temp_dir();
    for n in [2, 5] {
        let ssp = chain_ssp(dir.path(), n);
        run_and_check(&ssp, n, &[]);
    }
}

/// The FMI calls of a run of the chain at size `n` (`--log-fmi-calls`), without values.
fn fmi_calls(dir: &Path, n: usize, algorithm: &str) -> Vec<String> {
    let system = chain(dir, n, CONNECTION);
    let output = cosimo_ok(strings(&[
        "run",
        &system.display().to_string(),
        "--quiet",
        "--stop-time",
        "0.05",
        "--step-size",
        "0.01",
        "--algorithm",
        algorithm,
        "--log-fmi-calls",
        "-o",
        &dir.join("calls.csv").display().to_string(),
    ]));
    String::from_utf8_lossy(&output.stderr)
        .lines()
        .filter(|l| l.contains(": fmi3"))
        .map(|l| l.split('(').next().unwrap_or(l).to_string())
        .collect()
}

#[test]
fn an_array_moves_in_one_fmi_call_whatever_its_size() {
    let dir = temp_dir();
    for algorithm in ["jacobi", "gauss-seidel"] {
        let two = fmi_calls(dir.path(), 2, algorithm);
        let five = fmi_calls(dir.path(), 5, algorithm);
        let sets = two
            .iter()
            .filter(|c| c.ends_with("b: fmi3SetFloat64"))
            .count();
        assert!(sets >= 5, "{algorithm}: b.u set at every step: {two:#?}");
        assert_eq!(
            two, five,
            "{algorithm}: the same calls at 2 and at 5 elements"
        );
    }
}

/// The rows of a run, every cell as text (arrays too).
#[derive(Default)]
struct Rows(Vec<String>);

impl cosimo::master::run::Observer for Rows {
    fn row(&mut self, row: &cosimo::master::record::Row) -> cosimo::Result<()> {
        self.0.push(format!("{} {:?}", row.time, row.cells));
        Ok(())
    }
}

/// The rows of `system` run alone (`None`) or as one rank of `transport`.
fn rows_on(
    system: &Path,
    transport: Option<std::sync::Arc<dyn cosimo::master::transport::Transport>>,
) -> cosimo::Result<Vec<String>> {
    let request = cosimo::request::RunRequest {
        targets: vec![system.display().to_string()],
        ..Default::default()
    };
    let mut prepared = cosimo::request::prepare_on_ranks(&request, transport, &mut |_| {})?;
    let mut rows = Rows::default();
    let mut observers: Vec<&mut dyn cosimo::master::run::Observer> = vec![&mut rows];
    cosimo::master::run::run(&mut prepared.execution, &mut observers)?;
    Ok(rows.0)
}

#[test]
fn a_chain_of_arrays_split_over_two_ranks_gives_the_rows_of_one_process() {
    let dir = temp_dir();
    let fmu = fmu("ResizableGain", 3).display().to_string();
    for n in [2, 5] {
        let u: Vec<String> = (1..=n).map(|i| input(i, 0.0).to_string()).collect();
        let text = format!(
            r#"{{ "components": [
                {{ "name": "a", "fmu": {fmu:?}, "rank": 0,
                   "parameters": {{ "n": {n}, "k": {K_A}, "u": "{}" }} }},
                {{ "name": "b", "fmu": {fmu:?}, "rank": 1, "parameters": {{ "n": {n}, "k": {K_B} }} }}
            ], "connections": [{CONNECTION}] }}"#,
            u.join(" ")
        );
        let system = dir.path().join(format!("ranks{n}.json"));
        std::fs::write(&system, text).expect("writes the system");
        let alone = rows_on(&system, None).expect("runs in one process");
        // b.y[n] in the last row: k_b n k_a n u[n].
        let want = K_B * (n * n) as f64 * K_A * input(n, 0.0);
        let last = alone.last().expect("rows");
        assert!(
            last.contains(&format!("{want:?}")),
            "n = {n}: {last}, want b.y[{n}] = {want}"
        );
        let ranks = cosimo::distribute::threads::in_process(2);
        let outcomes: Vec<_> = std::thread::scope(|scope| {
            let handles: Vec<_> = ranks
                .into_iter()
                .map(|t| {
                    let system = &system;
                    scope.spawn(move || rows_on(system, Some(t)))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a rank ran"))
                .collect()
        });
        for (rank, rows) in outcomes.into_iter().enumerate() {
            let rows = rows.unwrap_or_else(|e| panic!("n = {n}, rank {rank}: {e}"));
            assert_eq!(rows, alone, "n = {n}: rank {rank} saw other rows");
        }
    }
}

#[test]
fn a_chain_of_arrays_exported_as_an_fmu_runs_like_the_system() {
    let library =
        Path::new(env!("CARGO_BIN_EXE_cosimo")).with_file_name(cosimo::export::library_file_name());
    assert!(
        library.is_file(),
        "{} is missing: build it with `cargo build -p cosimo-container` (cargo xtask test does)",
        library.display()
    );
    let dir = temp_dir();
    let gain = fmu("ResizableGain", 3).display().to_string();
    for n in [2, 5] {
        // The inputs that stay inputs of the export take start values of the configured size.
        let zeros = vec!["0"; n].join(" ");
        let falses = vec!["false"; n].join(" ");
        let inputs = format!(r#""m": "{zeros}", "p": "{falses}", "v": "{zeros}""#);
        let text = format!(
            r#"{{ "components": [
                {{ "name": "a", "fmu": {gain:?},
                   "parameters": {{ "n": {n}, "k": {K_A}, "u": "{zeros}", {inputs} }} }},
                {{ "name": "b", "fmu": {gain:?}, "parameters": {{ "n": {n}, "k": {K_B}, {inputs} }} }}
            ], "connections": [{CONNECTION}] }}"#
        );
        let system = dir.path().join(format!("export{n}.json"));
        std::fs::write(&system, text).expect("writes the system");
        let exported = dir.path().join(format!("chain{n}.fmu"));
        cosimo_ok(strings(&[
            "export",
            &system.display().to_string(),
            "-o",
            &exported.display().to_string(),
            "--fmi-version",
            "3",
            "--container-library",
            &library.display().to_string(),
        ]));
        let mut archive = zip::ZipArchive::new(std::fs::File::open(&exported).expect("the export"))
            .expect("a zip");
        let mut md = String::new();
        std::io::Read::read_to_string(
            &mut archive
                .by_name("modelDescription.xml")
                .expect("a model description"),
            &mut md,
        )
        .expect("text");
        assert!(
            md.contains("name=\"a.u\"") && !md.contains("name=\"b.u\""),
            "the connected array is no input of the export: {md}"
        );
        run_and_check(&exported, n, &[]);
    }
}

#[test]
fn int32_boolean_and_float32_arrays_connect_element_by_element() {
    let dir = temp_dir();
    let gain = fmu("ResizableGain", 3).display().to_string();
    for n in [2, 5] {
        let list = |f: &dyn Fn(usize) -> String| (1..=n).map(f).collect::<Vec<_>>().join(" ");
        // m[i] = 10 + i, p[i] = true, v[i] = i / 4 (exact in Float32).
        let (m, p, v) = (
            list(&|i| (10 + i).to_string()),
            list(&|_| "true".to_string()),
            list(&|i| (i as f64 / 4.0).to_string()),
        );
        let text = format!(
            r#"{{ "components": [
                {{ "name": "a", "fmu": {gain:?},
                   "parameters": {{ "n": {n}, "m": "{m}", "p": "{p}", "v": "{v}" }} }},
                {{ "name": "b", "fmu": {gain:?}, "parameters": {{ "n": {n} }} }}
            ], "connections": [
                {{ "from": "a.j", "to": "b.m" }},
                {{ "from": "a.q", "to": "b.p" }},
                {{ "from": "a.w", "to": "b.v" }}
            ] }}"#
        );
        let system = dir.path().join(format!("typed{n}.json"));
        std::fs::write(&system, text).expect("writes the system");
        let csv = dir.path().join("typed.csv");
        let mut args = strings(&["run", &system.display().to_string(), "--quiet"]);
        for i in 1..=n {
            for name in ["b.j", "b.q", "b.w"] {
                args.extend(strings(&["--output-variable", &format!("{name}[{i}]")]));
            }
        }
        args.extend(strings(&["-o", &csv.display().to_string()]));
        cosimo_ok(&args);
        let table = read_results(&csv);
        for i in 1..=n {
            let last = |name: &str| {
                let column = table
                    .column(&format!("{name}[{i}]"))
                    .unwrap_or_else(|| panic!("no column {name}[{i}]"));
                *table.values(column).last().expect("rows")
            };
            let even = i % 2 == 0;
            // j: i (i m[i]); q: (p[i] xor even) xor even = p[i]; w: i (i v[i]).
            let want_j = (i * i * (10 + i)) as f64;
            let want_q = 1.0;
            let want_w = (i * i) as f64 * (i as f64 / 4.0);
            assert_eq!(last("b.j"), want_j, "n = {n}: b.j[{i}]");
            assert_eq!(last("b.q"), want_q, "n = {n}: b.q[{i}] (i even: {even})");
            assert_eq!(last("b.w"), want_w, "n = {n}: b.w[{i}]");
        }
    }
}

#[test]
fn a_scenario_cannot_change_a_connected_array() {
    let dir = temp_dir();
    let system = chain(dir.path(), 2, CONNECTION);
    for variable in ["u", "y"] {
        let model = if variable == "u" { "b" } else { "a" };
        let scenario = dir.path().join("scenario.yaml");
        std::fs::write(
            &scenario,
            format!(
                "events:\n  - time: 0.2\n    model: {model}\n    variable: {variable}\n    action: override\n    value: 1.0\n"
            ),
        )
        .expect("writes the scenario");
        let stderr = refused(&strings(&[
            "run",
            &system.display().to_string(),
            "--scenario",
            &scenario.display().to_string(),
        ]));
        assert!(
            stderr.contains("a connected array cannot be changed by a scenario"),
            "{model}.{variable}: {stderr}"
        );
    }
}

#[test]
fn a_session_cannot_set_an_array_a_connection_drives() {
    let dir = temp_dir();
    let system = chain(dir.path(), 2, CONNECTION);
    let request = cosimo::request::RunRequest {
        targets: vec![system.display().to_string()],
        ..Default::default()
    };
    let prepared =
        cosimo::request::prepare_on_ranks(&request, None, &mut |_| {}).expect("prepares");
    let mut simulation =
        cosimo::master::simulation::Simulation::start(prepared.execution, &mut [] as &mut [Rows])
            .expect("starts");
    let error = simulation
        .set(
            "b.u",
            &cosimo::fmu::description::StartValue::Float(vec![1.0, 2.0]),
        )
        .expect_err("b.u is driven by a.y");
    assert!(
        error
            .to_string()
            .contains("b.u is driven by the connection a.y[1] -> b.u[1]"),
        "{error}"
    );
}
