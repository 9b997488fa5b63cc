//! `cosimo run --real-time [FACTOR]` and `--progress jsonl` on the project's FMUs: pacing to
//! the wall clock within the tolerances, the rolling factor through an occasional slow
//! step, results unchanged by pacing, bounded JSON progress lines, bad factors refused.
//!
//! Timing tests run one at a time (a lock): two paced runs at once on a 2-core machine would
//! measure each other.

mod common;

use std::path::Path;
use std::time::Instant;

use common::*;

static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn alone() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The figures of the summary's real-time line.
#[derive(Debug)]
struct RealTimeLine {
    simulated: f64,
    wall: f64,
    total: f64,
    rolling: f64,
    line: String,
}

/// The number after `before` in `text`.
fn number_after(text: &str, before: &str) -> f64 {
    let rest = &text[text
        .find(before)
        .unwrap_or_else(|| panic!("no '{before}' in {text}"))
        + before.len()..];
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
        .unwrap_or(rest.len());
    rest[..end]
        .parse()
        .unwrap_or_else(|e| panic!("'{}' after '{before}': {e}", &rest[..end]))
}

fn real_time_line(stderr: &str) -> RealTimeLine {
    let line = stderr
        .lines()
        .find(|l| l.starts_with("real time x"))
        .unwrap_or_else(|| panic!("no real-time line in:\n{stderr}"))
        .to_owned();
    RealTimeLine {
        simulated: number_after(&line, ": "),
        wall: number_after(&line, "simulated in "),
        total: number_after(&line, "real-time factor "),
        rolling: number_after(&line, "(rolling "),
        line,
    }
}

/// Run Gain (FMI 3) for `stop` s with steps of `step` s and the extra arguments; the
/// process's wall time and its stderr.
fn run_gain(dir: &Path, stop: f64, step: f64, extra: &[&str]) -> (f64, String) {
    let gain = fmu("Gain", 3);
    let out = dir.join("gain.csv");
    let mut args = vec![
        "run".to_owned(),
        gain.display().to_string(),
        "--stop-time".into(),
        stop.to_string(),
        "--step-size".into(),
        step.to_string(),
        "-o".into(),
        out.display().to_string(),
    ];
    args.extend(extra.iter().map(|a| a.to_string()));
    let begin = Instant::now();
    let output = cosimo_ok(&args);
    let wall = begin.elapsed().as_secs_f64();
    (wall, String::from_utf8_lossy(&output.stderr).into_owned())
}

#[test]
fn real_time_1_takes_one_second_and_2_half_a_second() {
    let _alone = alone();
    let dir = temp_dir();
    for (factor, expected) in [(1.0, 1.0), (2.0, 0.5)] {
        let (process, stderr) =
            run_gain(dir.path(), 1.0, 0.01, &["--real-time", &factor.to_string()]);
        let paced = real_time_line(&stderr);
        eprintln!(
            "--real-time {factor}: process {process:.4} s; {}",
            paced.line
        );
        assert!((paced.simulated - 1.0).abs() < 1e-9, "{}", paced.line);
        assert!(
            (paced.wall - expected).abs() <= 0.02 * expected,
            "--real-time {factor}: {} s of wall time, expected {expected} s within 2 %\n{stderr}",
            paced.wall
        );
        assert!(
            (paced.total - factor).abs() <= 0.02 * factor,
            "factor {} reported for --real-time {factor}\n{stderr}",
            paced.total
        );
        // Measured from outside: the process cannot have been faster than the pacing.
        assert!(process >= 0.98 * expected, "{process} s for {expected} s");
    }
}

#[test]
fn the_rolling_factor_follows_the_true_one_through_an_occasional_slow_step() {
    let _alone = alone();
    let dir = temp_dir();
    let progress = dir.path().join("progress.jsonl");
    // 5 ms steps costing 0.5 ms, every hundredth 50 times as much (25 ms, 20 ms late): the run
    // keeps up with real time on average (0.7 ms of work per 5 ms), so pacing is meaningful.
    // 280 steps: two slow ones, and the run ends after the second has been caught up.
    let (_, stderr) = run_gain(
        dir.path(),
        1.4,
        0.005,
        &[
            "--real-time",
            "1",
            "--start-value",
            "cost=0.0005",
            "--start-value",
            "slow_every=100",
            "--start-value",
            "slow_cost=0.025",
            "--progress-file",
            progress.to_str().unwrap(),
        ],
    );
    let paced = real_time_line(&stderr);
    eprintln!("{}", paced.line);
    assert!(
        paced.line.contains("finished late"),
        "the slow steps finish late: {}",
        paced.line
    );
    assert!((paced.total - 1.0).abs() <= 0.02, "{}", paced.line);
    assert!(
        (paced.rolling - paced.total).abs() <= 0.05 * paced.total,
        "{}",
        paced.line
    );
    // Every progress line once a full window has passed, right after slow steps too.
    let lines = json_lines(&std::fs::read_to_string(&progress).unwrap());
    let mut checked = 0;
    let mut worst: f64 = 0.0;
    for line in &lines {
        if line["wall"].as_f64().unwrap_or(0.0) < 1.0 {
            continue;
        }
        let rolling = line["rolling_factor"].as_f64().expect("a rolling factor");
        worst = worst.max((rolling - paced.total).abs() / paced.total);
        checked += 1;
    }
    eprintln!(
        "rolling factor within {:.2} % of the true one in {checked} lines",
        100.0 * worst
    );
    assert!(checked >= 3, "{lines:?}");
    assert!(worst <= 0.05, "rolling factor off by {worst} in {lines:?}");
}

fn json_lines(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

#[test]
fn results_are_identical_with_and_without_pacing() {
    let _alone = alone();
    let dir = temp_dir();
    let oscillator = fmu("Oscillator", 2);
    let run = |name: &str, extra: &[&str]| {
        let out = dir.path().join(name);
        let mut args = vec![
            oscillator.display().to_string(),
            "--stop-time".into(),
            "0.5".into(),
            "--step-size".into(),
            "0.001".into(),
            "-o".into(),
            out.display().to_string(),
        ];
        args.insert(0, "run".into());
        args.extend(extra.iter().map(|a| a.to_string()));
        cosimo_ok(&args);
        std::fs::read(&out).unwrap()
    };
    let plain = run("plain.csv", &[]);
    let paced = run("paced.csv", &["--real-time", "2"]);
    assert!(plain.len() > 1000);
    assert!(plain == paced, "pacing changed the results");
}

#[test]
fn progress_jsonl_lines_parse_rise_to_one_and_are_rate_bounded() {
    let _alone = alone();
    let dir = temp_dir();
    // 0.6 s of wall time at 1000 steps a second.
    let (_, stderr) = run_gain(
        dir.path(),
        1.2,
        0.001,
        &["--real-time=2", "--progress", "jsonl"],
    );
    let lines = json_lines(&stderr);
    assert!(lines.len() >= 3, "{stderr}");
    let first = &lines[0];
    let last = lines.last().unwrap();
    assert_eq!(first["status"], "running", "{stderr}");
    assert_eq!(first["fraction"], 0.0, "{stderr}");
    assert_eq!(first["steps"], 0, "{stderr}");
    assert_eq!(last["status"], "finished", "{stderr}");
    assert_eq!(last["fraction"], 1.0, "{stderr}");
    assert_eq!(last["steps"], 1200, "{stderr}");
    let fractions: Vec<f64> = lines
        .iter()
        .map(|l| l["fraction"].as_f64().unwrap())
        .collect();
    assert!(
        fractions.windows(2).all(|w| w[0] <= w[1]),
        "fractions rise: {fractions:?}"
    );
    for line in &lines {
        for key in ["time", "wall", "steps"] {
            assert!(line[key].is_number(), "{key} in {line}");
        }
    }
    // At most ten lines a second between the first and the last.
    let wall = last["wall"].as_f64().unwrap();
    let between = lines.len() - 2;
    assert!(
        between as f64 <= 10.0 * wall + 1.0,
        "{between} lines in {wall} s:\n{stderr}"
    );
    let walls: Vec<f64> = lines[1..lines.len() - 1]
        .iter()
        .map(|l| l["wall"].as_f64().unwrap())
        .collect();
    assert!(
        walls.windows(2).all(|w| w[1] - w[0] >= 0.099),
        "lines 100 ms apart: {walls:?}"
    );
    // Paced at twice real time, the factors say so.
    let factor = last["real_time_factor"].as_f64().unwrap();
    assert!((factor - 2.0).abs() < 0.1, "{last}");
    // Unpaced, a fast run still writes its first and last line.
    let (_, stderr) = run_gain(dir.path(), 1.0, 0.01, &["--progress", "jsonl"]);
    let lines = json_lines(&stderr);
    assert!(lines.len() >= 2, "{stderr}");
    assert_eq!(lines.last().unwrap()["fraction"], 1.0);
}

#[test]
fn bad_real_time_factors_are_refused_naming_the_option() {
    let gain = fmu("Gain", 3);
    // ("--real-time -inf" reads as short options -i -n -f: refused by clap too, exit 2.)
    let spaced =
        ["0", "-1", "nan", "inf", "fast"].map(|bad| vec!["--real-time".to_owned(), bad.into()]);
    let joined =
        ["0", "-1", "nan", "inf", "-inf", "fast"].map(|bad| vec![format!("--real-time={bad}")]);
    for option in spaced.iter().chain(&joined) {
        let args: Vec<String> = ["run".to_owned(), gain.display().to_string()]
            .into_iter()
            .chain(option.iter().cloned())
            .collect();
        {
            let output = cosimo(&args);
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(2), "{args:?}: {}", show(&output));
            assert!(stderr.contains("--real-time"), "{args:?}: {stderr}");
            assert!(stderr.contains("real-time factor"), "{args:?}: {stderr}");
        }
    }
    // --progress-file with a progress kind that writes no lines is refused, not ignored.
    let output = cosimo([
        "run",
        &gain.display().to_string(),
        "--progress",
        "bar",
        "--progress-file",
        "p.jsonl",
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", show(&output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--progress-file"));
}
