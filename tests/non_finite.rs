//! An output that is NaN or infinite ends the run with an error naming the variable and the
//! time, keeping every row before it; `--allow-non-finite` records and passes such values on.
//! The Dahlquist FMU with k = -1000 grows as e^(1000 t) and overflows before t = 1.

mod common;

use common::{cosimo, fmu};
use cosimo::table::Table;

fn run(args: &[&str]) -> (Option<i32>, String, Option<Table>) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let out = dir.path().join("out.csv");
    let mut all = vec!["run"];
    all.extend(args);
    let out_text = out.display().to_string();
    all.extend(["--stop-time", "1", "--quiet", "-o", &out_text]);
    let output = cosimo(&all);
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).to_string(),
        Table::read(&out).ok(),
    )
}

#[test]
fn a_non_finite_output_ends_the_run_unless_allowed() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    for version in [2u8, 3] {
        let dahlquist = fmu("Dahlquist", version).display().to_string();
        let (code, stderr, table) = run(&[&dahlquist, "--start-value", "k=-1000"]);
        assert_eq!(code, Some(1), "FMI {version}: {stderr}");
        assert!(
            stderr.contains("error: simulation failed at t = 0.8: x is inf: an FMU output is not a finite number"),
            "FMI {version}: {stderr}"
        );
        let table = table.expect("the rows before are kept");
        assert_eq!(table.time().len(), 8, "FMI {version}: rows 0 .. 0.7");
        let (code, stderr, table) =
            run(&[&dahlquist, "--start-value", "k=-1000", "--allow-non-finite"]);
        assert_eq!(code, Some(0), "FMI {version}: {stderr}");
        let x = table.expect("written");
        assert!(
            x.values(0)[x.time().len() - 1].is_infinite(),
            "FMI {version}"
        );

        // Coupled: the value is stopped before it reaches the next FMU.
        let driver = format!("d={dahlquist}");
        let driven = format!("o={}", fmu("Oscillator", version).display());
        let (code, stderr, _) = run(&[
            &driver,
            &driven,
            "--connect",
            "d.x=o.F",
            "--start-value",
            "d.k=-1000",
            "--step-size",
            "0.1",
        ]);
        assert_eq!(code, Some(1), "FMI {version}: {stderr}");
        assert!(
            stderr.contains("d.x is inf, which would be fed to o.F"),
            "FMI {version}: {stderr}"
        );
    }
}
