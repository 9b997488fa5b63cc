//! What changes the numerics is said, not done silently (issue 34): macro steps shortened to
//! land on output points, inputs connected to nothing, a run interrupted by Ctrl-C.

mod common;

use std::path::PathBuf;

use common::*;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn two_mass() -> PathBuf {
    fmu_pack::packed_fmus().expect("the project's FMUs pack");
    root().join("fmus/two-mass-force-force.json")
}

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn output_points_that_shorten_macro_steps_are_announced() {
    let dir = temp_dir();
    let csv = dir.path().join("out.csv");
    let system = two_mass();
    let run = |interval: &str| {
        cosimo_ok([
            "run".as_ref(),
            system.as_os_str(),
            "--output-interval".as_ref(),
            interval.as_ref(),
            "-o".as_ref(),
            csv.as_os_str(),
        ])
    };
    // 1 ms steps, output every 1.5 ms: every second output point falls inside a step.
    let text = stderr(&run("0.0015"));
    assert!(
        text.contains(
            "note: 333 macro steps were shortened to land on output points (output interval 0.0015 s is not a multiple of the step 0.001 s)"
        ),
        "{text}"
    );
    assert!(text.contains("in 1333 macro steps"), "{text}");
    // A multiple of the step changes nothing, and says nothing.
    let text = stderr(&run("0.002"));
    assert!(!text.contains("shortened"), "{text}");
    assert!(text.contains("in 1000 macro steps"), "{text}");
}

/// `fmus/two-mass-force-force.json` in `dir` with the FMUs' absolute paths and `edit` applied.
fn two_mass_edited(dir: &std::path::Path, edit: impl Fn(String) -> String) -> PathBuf {
    let text = std::fs::read_to_string(two_mass()).expect("reads the system file");
    let text = text.replace(
        "../target/fmus/",
        &format!("{}/", fmu_pack::fmus_dir().display()),
    );
    let path = dir.join("system.json");
    std::fs::write(&path, edit(text)).expect("writes the system file");
    path
}

#[test]
fn inputs_connected_to_nothing_are_named_once_before_the_run() {
    let dir = temp_dir();
    let csv = dir.path().join("out.csv");
    let system = two_mass_edited(dir.path(), |text| {
        text.replace(
            ",\n    { \"from\": \"spring.F2\", \"to\": \"mass2.F\" }",
            "",
        )
    });
    let run = |extra: &[&std::ffi::OsStr]| {
        let mut args = vec![
            "run".as_ref(),
            system.as_os_str(),
            "--stop-time".as_ref(),
            "0.01".as_ref(),
            "-o".as_ref(),
            csv.as_os_str(),
        ];
        args.extend_from_slice(extra);
        stderr(&cosimo_ok(args))
    };
    // The oscillators' displacement inputs (x_in, v_in) are unused by force coupling, and
    // the force on mass 2 is now connected to nothing.
    let text = run(&[]);
    let warning = "warning: 5 inputs are connected to nothing and stay at their start values: mass1.x_in (0), mass1.v_in (0), mass2.F (0), mass2.x_in (0), mass2.v_in (0)\n";
    assert!(text.contains(warning), "{text}");
    assert_eq!(text.matches("connected to nothing").count(), 1, "{text}");
    // Before the run: ahead of the summary.
    assert!(
        text.find(warning) < text.find("macro steps"),
        "the warning comes first:\n{text}"
    );
    // An input file that drives the input: it is not named.
    let inputs = dir.path().join("in.csv");
    std::fs::write(&inputs, "time,mass2.F\n0,1\n1,1\n").expect("writes");
    let text = run(&["--input-file".as_ref(), inputs.as_os_str()]);
    assert!(
        text.contains("warning: 4 inputs are connected to nothing and stay at their start values: mass1.x_in (0), mass1.v_in (0), mass2.x_in (0), mass2.v_in (0)\n"),
        "{text}"
    );
    // Every connection gone and a third mass: ten inputs are named, with their start values, the rest counted.
    let bare = two_mass_edited(dir.path(), |text| {
        let start = text.find("\"connections\"").expect("has connections");
        let end = start + text[start..].find(']').expect("closes");
        let text = format!("{}\"connections\": []{}", &text[..start], &text[end + 1..]);
        // A third oscillator: thirteen inputs.
        let fmu = format!("{}/Oscillator-fmi2.fmu", fmu_pack::fmus_dir().display());
        text.replace(
            "\"components\": [",
            &format!("\"components\": [\n    {{ \"name\": \"mass3\", \"fmu\": \"{fmu}\" }},"),
        )
    });
    let text = stderr(&cosimo_ok([
        "run".as_ref(),
        bare.as_os_str(),
        "--stop-time".as_ref(),
        "0.01".as_ref(),
        "-o".as_ref(),
        csv.as_os_str(),
    ]));
    let line = text
        .lines()
        .find(|l| l.contains("connected to nothing"))
        .unwrap_or_else(|| panic!("no warning:\n{text}"));
    assert!(
        line.starts_with("warning: 13 inputs are connected to nothing and stay at their start values: mass3.F (0), mass3.x_in (0), mass3.v_in (0), mass1.F (0)"),
        "{line}"
    );
    assert!(line.ends_with(", spring.v2 (0) and 3 more"), "{line}");
    assert_eq!(line.matches(" (0)").count(), 10, "{line}");
}

#[test]
fn one_fmu_alone_has_no_word_about_its_inputs() {
    let dir = temp_dir();
    let csv = dir.path().join("out.csv");
    let oscillator = fmu("Oscillator", 2);
    let text = stderr(&cosimo_ok([
        "run".as_ref(),
        oscillator.as_os_str(),
        "-o".as_ref(),
        csv.as_os_str(),
    ]));
    assert!(!text.contains("connected to nothing"), "{text}");
}

#[cfg(unix)]
#[test]
fn ctrl_c_stops_the_run_keeps_the_rows_and_says_where() {
    let dir = temp_dir();
    let csv = dir.path().join("out.csv");
    let system = two_mass();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_cosimo"))
        .args(["run".as_ref(), system.as_os_str()])
        .args(["--stop-time", "1000", "-o"])
        .arg(&csv)
        .env_remove("COSIMO_LOG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("cosimo starts");
    // Until the run writes rows (not while it loads the FMUs), then a while longer.
    let started = std::time::Instant::now();
    while std::fs::metadata(&csv).map_or(0, |m| m.len()) < 2000 {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "no rows after a minute"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    let pid = i32::try_from(child.id()).expect("a pid");
    // SAFETY: signals our own child, which has not been waited for.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let output = child.wait_with_output().expect("cosimo ends");
    let text = stderr(&output);
    // Ended by the signal itself after saying so, as without a handler: a shell reports 130.
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        output.status.signal(),
        Some(libc::SIGINT),
        "{}",
        show(&output)
    );
    let line = text
        .lines()
        .last()
        .unwrap_or_else(|| panic!("nothing said:\n{text}"));
    let rest = line
        .strip_prefix("interrupted at t = ")
        .unwrap_or_else(|| panic!("last line: {line}"));
    let (end, rest) = rest.split_once(", rows up to t = ").expect("rows named");
    let (rows_to, file) = rest.split_once(" kept in ").expect("file named");
    assert_eq!(file, csv.display().to_string());
    let end: f64 = end.parse().expect("a time");
    let said_rows_to = rows_to;
    let rows_to: f64 = rows_to.parse().expect("a time");
    assert!(0.0 < rows_to && rows_to <= end && end < 1000.0, "{line}");
    assert!(text.contains("(interrupted)"), "{text}");
    // Every row up to that time is on disk, the last one at it: the message names its time as
    // messages print times (23.24 for a row at 23.240000000000002, the sum of 2324 steps).
    let table = read_results(&csv);
    let time = table.time();
    let last = time.last().copied().expect("rows on disk");
    assert_eq!(cosimo::numbers::number(last), said_rows_to, "{line}");
    assert_eq!(time.len(), (rows_to / 0.01).round() as usize + 1, "{line}");
}

#[cfg(unix)]
#[test]
fn a_co_simulation_of_hours_names_the_model_exchange_interface() {
    use std::io::BufRead;
    let dir = temp_dir();
    let csv = dir.path().join("out.csv");
    let robertson = fmu("Robertson", 2);
    // Steps of 10 s (the default experiment's) to 1e12 s: 1e11 of them.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_cosimo"))
        .args(["run".as_ref(), robertson.as_os_str()])
        .args(["--stop-time", "1e12", "--output-interval", "1e10"])
        .arg("-o")
        .arg(&csv)
        .env_remove("COSIMO_LOG")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("cosimo starts");
    let mut lines = std::io::BufReader::new(child.stderr.take().expect("stderr")).lines();
    let first = lines.next().and_then(Result::ok).unwrap_or_default();
    let pid = i32::try_from(child.id()).expect("a pid");
    // SAFETY: signals our own child, which has not been waited for.
    unsafe { libc::kill(pid, libc::SIGINT) };
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    child.wait().expect("cosimo ends");
    assert_eq!(
        first,
        "warning: Robertson as Co-Simulation takes about 1e11 internal steps of 10 s to t = 1e12 s, which may take hours; it also has Model Exchange: --interface me integrates it with cosimo's variable-step solver",
        "{rest:?}"
    );
}
