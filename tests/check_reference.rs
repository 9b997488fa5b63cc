//! `cosimo check` trusts a vendor's reference: a coarse FMI-LS-REF reference of a correct FMU
//! passes (compared at the reference's own time points), broken FMI-LS-REF data is one
//! headline (and `cosimo validate` reports it), a reference that does not cover the run is
//! refused, and a FAIL prints the tolerances and how much of them each signal used.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};

use common::{cosimo, fmu, oscillator_position, show, temp_dir};
use cosimo::results::reference::{ls_manifest, LS_REF_FOLDER, LS_REF_MANIFEST};

/// The Oscillator's defaults: m = 1, c = 1, d = 0.1, x0 = 1, v0 = 0, no force.
const M: f64 = 1.0;
const C: f64 = 1.0;
const D: f64 = 0.1;
const X0: f64 = 1.0;

/// Velocity of the free damped oscillator, the derivative of `oscillator_position` (f = 0).
fn oscillator_velocity(t: f64) -> f64 {
    let sigma = D / (2.0 * M);
    let omega = (C / M - sigma * sigma).sqrt();
    let a = X0;
    let b = sigma * a / omega;
    (-sigma * t).exp()
        * ((omega * b - sigma * a) * (omega * t).cos()
            - (omega * a + sigma * b) * (omega * t).sin())
}

/// A vendor's reference of the Oscillator at 1 s rows from 0 to `stop`, from the closed form
/// (not from cosimo), with x scaled by `gain`.
fn vendor_csv(stop: usize, gain: f64) -> String {
    let mut text = String::from("\"time\",\"x\",\"v\"\n");
    for k in 0..=stop {
        let t = k as f64;
        let x = gain * oscillator_position(M, C, D, 0.0, X0, 0.0, t);
        text.push_str(&format!("{t},{x:e},{:e}\n", oscillator_velocity(t)));
    }
    text
}

/// The Oscillator (FMI `version`) unpacked into `dir/name` with FMI-LS-REF data: a manifest
/// naming `source` (role result) and the files `files` in the FMI-LS-REF folder.
fn with_ls_ref(
    dir: &Path,
    name: &str,
    version: u8,
    source: &str,
    files: &[(&str, &str)],
) -> PathBuf {
    let folder = dir.join(name);
    let archive = std::fs::File::open(fmu("Oscillator", version)).unwrap();
    zip::ZipArchive::new(archive)
        .unwrap()
        .extract(&folder)
        .unwrap();
    let ls = folder.join(LS_REF_FOLDER);
    std::fs::create_dir_all(&ls).unwrap();
    std::fs::write(
        ls.join(LS_REF_MANIFEST),
        ls_manifest(&[(source, "result", "the vendor's reference")]),
    )
    .unwrap();
    for (file, text) in files {
        std::fs::write(ls.join(file), text).unwrap();
    }
    folder
}

/// `folder` packed as `folder.fmu` (so that cosimo unpacks it into a temporary folder).
fn pack(folder: &Path) -> PathBuf {
    let path = folder.with_extension("fmu");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    let options = zip::write::SimpleFileOptions::default();
    let mut stack = vec![folder.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let name = p
                .strip_prefix(folder)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            zip.start_file(name, options).unwrap();
            zip.write_all(&std::fs::read(&p).unwrap()).unwrap();
        }
    }
    zip.finish().unwrap();
    path
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_coarse_vendor_reference_of_a_correct_fmu_passes() {
    let dir = temp_dir();
    for version in [2, 3] {
        let csv = vendor_csv(20, 1.0);
        let model = with_ls_ref(
            dir.path(),
            &format!("Oscillator{version}"),
            version,
            "Oscillator_ref.csv",
            &[("Oscillator_ref.csv", &csv)],
        );
        let out = cosimo([Path::new("check").as_os_str(), model.as_os_str()]);
        assert_eq!(out.status.code(), Some(0), "FMI {version}: {}", show(&out));
        let text = stdout(&out);
        assert!(
            text.contains("compared at the reference's 21 time points, t = 0 to 20"),
            "{text}"
        );
        // Every signal's deviation as a share of its tolerance.
        for signal in ["x", "v"] {
            assert!(
                text.lines().any(|l| l
                    .trim_start()
                    .starts_with(&format!("{signal}: max deviation"))
                    && l.contains("% of the tolerance")),
                "{signal}: {text}"
            );
        }

        // The earlier default compares the 0.01 s rows with straight lines between the 1 s
        // rows and fails the same FMU; it stays available.
        let out = cosimo([
            Path::new("check").as_os_str(),
            model.as_os_str(),
            "--compare-at".as_ref(),
            "all".as_ref(),
        ]);
        assert_eq!(out.status.code(), Some(3), "FMI {version}: {}", show(&out));
        assert!(stdout(&out).contains("every result row and every reference row"));
    }
}

#[test]
fn a_fail_prints_the_tolerances_and_the_share_used() {
    let dir = temp_dir();
    let csv = vendor_csv(20, 1.05);
    let model = with_ls_ref(
        dir.path(),
        "Oscillator",
        3,
        "Oscillator_ref.csv",
        &[("Oscillator_ref.csv", &csv)],
    );
    let out = cosimo([
        Path::new("check").as_os_str(),
        model.as_os_str(),
        "--rtol".as_ref(),
        "0.01".as_ref(),
        "--json".as_ref(),
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("FAIL  Oscillator"), "{text}");
    assert!(
        text.contains(
            "tolerances: relative 0.01 (of |reference|), absolute 1.000e-6, range 0.001 \
             (of the reference's max - min), time 0.02 s"
        ),
        "{text}"
    );
    // x is 5 % off: the line says how far beyond its tolerance it went.
    let x = text
        .lines()
        .find(|l| l.trim_start().starts_with("x: "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        x.contains("points outside the tolerance") && x.contains("% of the tolerance"),
        "{x}"
    );
    // v is right, and says how far inside it is.
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let signals = report["cases"][0]["signals"].as_array().unwrap();
    let v = signals.iter().find(|s| s["name"] == "v").unwrap();
    assert_eq!(v["passed"], true);
    assert!(v["toleranceShare"]["share"].as_f64().unwrap() < 0.01, "{v}");
    let x = signals.iter().find(|s| s["name"] == "x").unwrap();
    let share = &x["toleranceShare"];
    let used = share["share"].as_f64().unwrap();
    assert!(used > 1.0, "{x}");
    let ratio = share["deviation"].as_f64().unwrap() / share["tolerance"].as_f64().unwrap();
    assert!((used - ratio).abs() < 1e-9 * ratio, "{x}");
    assert!(x.to_string().contains("\"rel\":0.01"), "{x}");
}

#[test]
fn broken_fmi_ls_ref_data_is_one_headline_and_validate_reports_it() {
    let dir = temp_dir();
    // The manifest names the reference of another model (the bouncing ball's columns).
    let other = "time,h,v_ball,a_ball,e\n0,1,0,-9.81,0.7\n20,0,0,-9.81,0.7\n";
    let wrong_model = pack(&with_ls_ref(
        dir.path(),
        "OtherModel",
        3,
        "BouncingBall_ref.csv",
        &[("BouncingBall_ref.csv", other)],
    ));
    // The manifest names a file the FMU does not have.
    let missing = pack(&with_ls_ref(
        dir.path(),
        "Missing",
        3,
        "Oscillator_ref.csv",
        &[],
    ));

    for (model, what) in [
        (
            &wrong_model,
            "none of its 4 columns is a variable of the model \"Oscillator\" (FMI 3): the file \
             belongs to another model or to the other FMI version",
        ),
        (
            &missing,
            "names no file: the FMU has no extra/org.fmi-standard.fmi-ls-ref/Oscillator_ref.csv",
        ),
    ] {
        let out = cosimo([Path::new("check").as_os_str(), model.as_os_str()]);
        assert_eq!(out.status.code(), Some(2), "{}", show(&out));
        let text = stdout(&out);
        let lines: Vec<&str> = text.lines().collect();
        // One headline naming the FMU and the manifest entry, then the summary.
        assert_eq!(lines.len(), 2, "{text}");
        assert!(lines[0].starts_with("ERROR"), "{text}");
        assert!(
            lines[0].contains(&format!("{}: broken FMI-LS-REF data", model.display())),
            "{text}"
        );
        assert!(lines[0].contains("<Related source=\""), "{text}");
        assert!(lines[0].contains(what), "{text}");
        // No path into the folder the FMU was unpacked into, no "missing column" lines.
        assert!(!text.contains("/extra/org.fmi-standard"), "{text}");
        assert!(!text.contains("missing"), "{text}");

        let out = cosimo([Path::new("validate").as_os_str(), model.as_os_str()]);
        assert_eq!(out.status.code(), Some(2), "{}", show(&out));
        let text = stdout(&out);
        assert!(
            text.lines()
                .any(|l| l.starts_with("error [fmi-ls-ref]") && l.contains(what)),
            "{text}"
        );
    }

    // A sound FMI-LS-REF reference: validate has nothing to say about it.
    let csv = vendor_csv(20, 1.0);
    let sound = with_ls_ref(
        dir.path(),
        "Sound",
        3,
        "Oscillator_ref.csv",
        &[("Oscillator_ref.csv", &csv)],
    );
    let out = cosimo([Path::new("validate").as_os_str(), sound.as_os_str()]);
    assert!(!stdout(&out).contains("fmi-ls-ref"), "{}", show(&out));
}

#[test]
fn a_reference_that_does_not_cover_the_run_is_refused_unless_the_span_is_narrowed() {
    let dir = temp_dir();
    let oscillator = fmu("Oscillator", 3);
    let short = dir.path().join("short.csv");
    let mut text = String::from("time,x\n");
    for k in 0..=11 {
        let t = k as f64 / 100.0;
        text.push_str(&format!(
            "{t},{:e}\n",
            oscillator_position(M, C, D, 0.0, X0, 0.0, t)
        ));
    }
    std::fs::write(&short, text).unwrap();
    let single = dir.path().join("single.csv");
    std::fs::write(&single, "time,x\n0,1\n").unwrap();

    let check = |reference: &Path, stop: &str| {
        cosimo([
            Path::new("check").as_os_str(),
            oscillator.as_os_str(),
            "--reference".as_ref(),
            reference.as_os_str(),
            "--stop-time".as_ref(),
            stop.as_ref(),
        ])
    };
    let out = check(&short, "1");
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(
        stdout(&out).contains("the reference covers t = 0 to 0.11 s, the run t = 0 to 1 s"),
        "{}",
        show(&out)
    );
    assert!(stdout(&out).contains("--stop-time"), "{}", show(&out));

    let out = check(&single, "1");
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(
        stdout(&out).contains("the reference has a single row (t = 0), the run t = 0 to 1 s"),
        "{}",
        show(&out)
    );

    // Narrowed to what the reference covers, the same reference passes.
    let out = check(&short, "0.11");
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(stdout(&out).contains("compared at the reference's 12 time points"));
}

#[test]
fn a_reference_longer_than_the_narrowed_run_is_compared_over_the_run_only() {
    // Dahlquist ships its closed-form solution from t = 0 to 10 s (FMI-LS-REF); a run asked
    // to stop at 1 s is compared at the reference's points up to 1 s, not failed for the rest.
    let dahlquist = fmu("Dahlquist", 2);
    let out = cosimo([
        Path::new("check").as_os_str(),
        dahlquist.as_os_str(),
        "--stop-time".as_ref(),
        "1".as_ref(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        stdout(&out).contains("compared at the reference's 11 time points, t = 0 to 1"),
        "{}",
        show(&out)
    );
}
