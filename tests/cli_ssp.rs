//! `cosimo run` and `cosimo inspect` on SSP files.

mod common;

use common::*;

fn root() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn an_ssp_runs_like_its_json_twin_and_can_be_inspected() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let dir = temp_dir();
    let (ssp_csv, json_csv) = (dir.path().join("ssp.csv"), dir.path().join("json.csv"));
    let ssp = root().join("fmus/two-mass-force-force.ssp");
    let json = root().join("fmus/two-mass-force-force.json");
    cosimo_ok([
        "run".as_ref(),
        ssp.as_os_str(),
        "-o".as_ref(),
        ssp_csv.as_os_str(),
        "--quiet".as_ref(),
    ]);
    cosimo_ok([
        "run".as_ref(),
        json.as_os_str(),
        "-o".as_ref(),
        json_csv.as_os_str(),
        "--quiet".as_ref(),
    ]);
    assert_eq!(
        std::fs::read(&ssp_csv).unwrap(),
        std::fs::read(&json_csv).unwrap(),
        "bit-identical results"
    );

    let out = cosimo_ok(["inspect".as_ref(), ssp.as_os_str()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Components (3)") && text.contains("spring.F1 -> mass1.F"),
        "{text}"
    );
    let out = cosimo_ok(["inspect".as_ref(), "--json".as_ref(), ssp.as_os_str()]);
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(value["components"].as_array().map(Vec::len), Some(3));
}

#[test]
fn a_missing_system_structure_is_a_usage_error() {
    let dir = temp_dir();
    let empty = dir.path().join("empty.ssp");
    std::fs::create_dir(&empty).unwrap();
    let out = cosimo(["run".as_ref(), empty.as_os_str()]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("SystemStructure.ssd"), "{stderr}");
}
