//! Helpers shared by the integration tests: the project's FMUs, the cosimo binary, result files.

#![allow(dead_code)]

pub mod example1;
pub mod skip;
pub mod systems;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use cosimo::results::Table;

/// A packed FMU of the project's test set (built on demand).
pub fn fmu(model: &str, fmi_version: u8) -> PathBuf {
    fmu_pack::fmu_path(model, fmi_version)
}

/// Run the cosimo binary with `args`.
pub fn cosimo<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    Command::new(env!("CARGO_BIN_EXE_cosimo"))
        .args(args)
        .env_remove("COSIMO_LOG")
        .output()
        .expect("the cosimo binary runs")
}

/// stdout and stderr of a finished command, for assertion messages.
pub fn show(output: &Output) -> String {
    format!(
        "status: {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Run cosimo and insist it succeeded.
pub fn cosimo_ok<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let output = cosimo(args);
    assert!(output.status.success(), "cosimo failed:\n{}", show(&output));
    output
}

/// An unpacked copy of a project FMU whose model description has `from` replaced by `to`
/// (e.g. a capability flag turned off).
pub fn unpacked_with_edit(model: &str, fmi_version: u8, from: &str, to: &str) -> tempfile::TempDir {
    let dir = temp_dir();
    let archive = std::fs::File::open(fmu(model, fmi_version)).unwrap();
    zip::ZipArchive::new(archive)
        .unwrap()
        .extract(dir.path())
        .unwrap();
    let md_path = dir.path().join("modelDescription.xml");
    let md = std::fs::read_to_string(&md_path).unwrap();
    assert!(
        md.contains(from),
        "{model} FMI {fmi_version}: no {from} to edit"
    );
    std::fs::write(&md_path, md.replace(from, to)).unwrap();
    dir
}

/// Every example system of `fmus/` (system files and SSPs, not the studies), sorted, with the
/// project's FMUs packed.
pub fn example_systems() -> Vec<PathBuf> {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fmus");
    let mut examples: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("fmus/ lists")
        .map(|e| e.expect("an entry").path())
        .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("json" | "ssp")))
        .filter(|p| !p.to_string_lossy().contains("study"))
        .collect();
    examples.sort();
    assert!(examples.len() >= 16, "the examples are found: {examples:?}");
    examples
}

/// The rows of a run as an observer sees them, for comparing runs bit for bit: Floats as
/// their bits, the other cells as written.
#[derive(Default)]
pub struct BitRows(pub Vec<Vec<String>>);

impl cosimo::master::run::Observer for BitRows {
    fn row(&mut self, row: &cosimo::master::record::Row) -> cosimo::Result<()> {
        use cosimo::master::record::Cell;
        let mut cells = vec![format!("{:x}", row.time.to_bits())];
        for cell in &row.cells {
            cells.push(match cell {
                Cell::Float(x) => format!("{:x}", x.to_bits()),
                other => format!("{other:?}"),
            });
        }
        self.0.push(cells);
        Ok(())
    }
}

/// What a test needs of an example before running it, read as `cosimo run` reads it.
pub struct ExampleOutline {
    /// Its stop time, or the end of its first `steps` macro steps where that comes first.
    pub stop: f64,
    /// Its components' names, in system order.
    pub names: Vec<String>,
    pub algorithm: cosimo::settings::Algorithm,
}

/// The outline of `example` cut to `steps` macro steps.
pub fn example_outline(example: &Path, steps: f64) -> ExampleOutline {
    let request = cosimo::request::RunRequest {
        targets: vec![example.display().to_string()],
        ..Default::default()
    };
    let prepared = cosimo::request::prepare(&request, &mut |_| {})
        .unwrap_or_else(|error| panic!("{}: {error}", example.display()));
    let experiment = &prepared.system.experiment;
    ExampleOutline {
        stop: experiment
            .stop
            .min(experiment.start + steps * experiment.step),
        names: prepared
            .system
            .components
            .iter()
            .map(|c| c.name.clone())
            .collect(),
        algorithm: experiment.algorithm.clone(),
    }
}

/// A partition file's text that deals `names` out over `ranks` ranks in reverse (the last
/// components on rank 0), every rank used when there are as many components.
pub fn reversed_partition(names: &[String], ranks: usize) -> String {
    let n = names.len();
    let lines: Vec<String> = names
        .iter()
        .enumerate()
        .map(|(i, name)| format!("{name} {}", (n - 1 - i) * ranks / n))
        .collect();
    lines.join("\n")
}

/// A fresh temporary folder for one test.
pub fn temp_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary folder")
}

/// Read a result CSV.
pub fn read_results(path: &Path) -> Table {
    Table::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// Position x(t) of m x'' + d x' + c x = f (constant f), underdamped, from x0, v0.
pub fn oscillator_position(m: f64, c: f64, d: f64, f: f64, x0: f64, v0: f64, t: f64) -> f64 {
    let sigma = d / (2.0 * m);
    let omega = (c / m - sigma * sigma).sqrt();
    let a = x0 - f / c;
    let b = (v0 + sigma * a) / omega;
    f / c + (-sigma * t).exp() * (a * (omega * t).cos() + b * (omega * t).sin())
}

/// Largest relative deviation |a - b| / max(|b|, floor) over two equally long slices.
pub fn max_relative_deviation(a: &[f64], b: &[f64], floor: f64) -> f64 {
    assert_eq!(a.len(), b.len(), "compared series differ in length");
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs() / y.abs().max(floor))
        .fold(0.0, f64::max)
}
