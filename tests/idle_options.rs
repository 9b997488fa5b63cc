//! Options that used to be accepted and quietly replaced are refused with the option's own
//! message (issue 34): `stability --points 0 / 1` and `plot --y-min` above `--y-max`.

mod common;

use common::*;

#[test]
fn stability_refuses_fewer_than_two_points() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    for points in ["0", "1"] {
        let output = cosimo(["stability", "--decomposition", "dd", "--points", points]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{points}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "--points: at least 2 points per axis, not {points}"
            )),
            "{points}: {stderr}"
        );
    }
}

#[test]
fn plot_refuses_an_empty_value_axis() {
    let dir = temp_dir();
    let results = dir.path().join("results.csv");
    std::fs::write(&results, "time,x\n0,1\n1,2\n").expect("written");
    let png = dir.path().join("plot.png");
    for (low, high) in [("2", "1"), ("1", "1")] {
        let output = cosimo([
            "plot",
            &results.display().to_string(),
            "--variable",
            "x",
            "--output",
            &png.display().to_string(),
            "--y-min",
            low,
            "--y-max",
            high,
        ]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{low} {high}: {stderr}");
        assert!(stderr.contains("--y-min below --y-max"), "{stderr}");
        assert!(!png.exists());
    }
}
