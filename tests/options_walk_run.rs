//! Every option of `cosimo run` (as `cosimo run --help` lists them), every setting of the step
//! control under each of the five estimators, and the settings of each algorithm in a system
//! file, walked: each changes what the run gives, compared with the same run without it (the
//! results' bytes, the FMI calls, a file or message only it makes), or is refused with a message
//! naming it. (`tests/cli_options.rs` checks the options against every input kind.)

mod common;
mod walk;

use std::path::Path;

use serde_json::{json, Value};
use walk::{example, example_json, oscillator_with_base_units, s, Effect, Ran, Walker};

use Effect::{Calls, Holds, Refused, Results};

fn fmu(model: &str, version: u8) -> String {
    common::fmu(model, version).display().to_string()
}

/// `run` on the two-mass example for 0.05 s, plus `extra`.
fn two_mass(extra: &[&str]) -> Vec<String> {
    let mut args = s(&[
        "run",
        &example("two-mass-force-force.json"),
        "--stop-time",
        "0.05",
    ]);
    args.extend(s(extra));
    args
}

/// `run` on one FMU, plus `extra`.
fn one(model: &str, version: u8, extra: &[&str]) -> Vec<String> {
    let mut args = s(&["run", &fmu(model, version)]);
    args.extend(s(extra));
    args
}

fn stderr_has(ran: &Ran, text: &str) -> bool {
    ran.stderr.contains(text)
}

/// Only the run with the option says `text` on stderr, and both finish.
macro_rules! only_with_says {
    ($text:expr) => {
        Holds(|without, with| {
            if !(without.finished() && with.finished()) {
                return Err("expected both runs to finish".into());
            }
            match (stderr_has(without, $text), stderr_has(with, $text)) {
                (false, true) => Ok(()),
                _ => Err(format!("expected \"{}\" on stderr only with it", $text)),
            }
        })
    };
}

#[test]
fn every_run_option_changes_the_run_or_is_refused() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let mut w = Walker::new();
    let tm = two_mass(&[]);
    let rigid = s(&["run", &example("rigid-link.json"), "--stop-time", "0.05"]);

    // Systems built on the command line.
    let (m1, m2) = (
        format!("m1={}", fmu("Oscillator", 2)),
        format!("m2={}", fmu("Oscillator", 3)),
    );
    let pair = s(&[
        "run",
        &m1,
        &m2,
        "--stop-time",
        "0.05",
        "--start-value",
        "m2.cc=1000",
    ]);
    w.walk("--connect", &pair, &["--connect", "m1.x=m2.x_in"], Results);
    // Units with base units: metres do not convert to newtons.
    let dimensioned = oscillator_with_base_units(&w);
    let units = s(&[
        "run",
        &format!("m1={dimensioned}"),
        &format!("m2={dimensioned}"),
        "--stop-time",
        "0.05",
        "--connect",
        "m1.x=m2.F",
    ]);
    w.walk(
        "--ignore-units",
        &units,
        &["--ignore-units", "m1.x=m2.F"],
        Holds(units_refused_only_without),
    );
    // --ssd: an SSP folder with a second structure whose mass 1 starts elsewhere.
    let ssp = ssp_with_second_structure(&w);
    w.walk(
        "--ssd",
        &s(&["run", &ssp, "--stop-time", "0.05"]),
        &["--ssd", "Other.ssd"],
        Results,
    );

    // Algorithms and their options.
    w.walk(
        "--algorithm",
        &tm,
        &["--algorithm", "gauss-seidel"],
        Results,
    );
    w.walk("--algorithm", &tm, &["--algorithm", "implicit"], Results);
    w.walk("--algorithm", &rigid, &["--algorithm", "jacobi"], Results);
    w.walk(
        "--algorithm",
        &tm,
        &["--algorithm", "constraint"],
        Refused("the constraint algorithm needs"),
    );
    w.walk(
        "--algorithm",
        &tm,
        &["--algorithm", "rim"],
        Refused("the rim algorithm needs"),
    );
    w.walk(
        "--jacobian",
        &two_mass(&["--algorithm", "implicit"]),
        &["--jacobian", "components"],
        Results,
    );
    w.walk(
        "--jacobian",
        &tm,
        &["--jacobian", "components"],
        Refused("--jacobian applies to the implicit algorithm only"),
    );
    let extended = s(&[
        "run",
        &example("two-mass-extended.json"),
        "--stop-time",
        "0.02",
    ]);
    w.walk(
        "--extension",
        &extended,
        &["--extension", "integral"],
        Results,
    );
    w.walk(
        "--extension",
        &extended,
        &["--extension", "none"],
        Refused("halfStep needs the extended implicit coupling"),
    );
    w.walk(
        "--extrapolation-order",
        &tm,
        &["--extrapolation-order", "2"],
        Results,
    );
    w.walk(
        "--extrapolation-order",
        &two_mass(&["--adaptive"]),
        &["--extrapolation-order", "1"],
        Results,
    );

    // Step control (each estimator's settings: `step_control_settings_act_under_every_estimator`).
    let adaptive = two_mass(&["--adaptive"]);
    let implicit_adaptive = two_mass(&["--adaptive", "--algorithm", "implicit"]);
    let milne = two_mass(&["--adaptive", "--estimator", "ExMilne"]);
    w.walk("--adaptive", &tm, &["--adaptive"], Results);
    w.walk(
        "--estimator",
        &adaptive,
        &["--estimator", "ExLocal"],
        Results,
    );
    w.walk(
        "--estimator",
        &adaptive,
        &["--estimator", "ExMilne"],
        Results,
    );
    w.walk(
        "--estimator",
        &implicit_adaptive,
        &["--estimator", "ImMilne"],
        Results,
    );
    w.walk(
        "--estimator",
        &adaptive,
        &["--estimator", "ImSLocal"],
        Refused("belongs to the implicit scheme"),
    );
    w.walk(
        "--estimator",
        &implicit_adaptive,
        &["--estimator", "ExSLocal"],
        Refused("belongs to the explicit scheme"),
    );
    w.walk(
        "--estimator",
        &tm,
        &["--estimator", "ExMilne"],
        Refused("--estimator tunes the macro-step control"),
    );
    w.walk(
        "--fixed-order",
        &two_mass(&["--adaptive", "--extrapolation-order", "2"]),
        &["--fixed-order"],
        Results,
    );
    w.walk("--rtol", &milne, &["--rtol", "1e-3"], Results);
    w.walk(
        "--rtol",
        &adaptive,
        &["--rtol", "1e-3"],
        Refused("measures the coupling variables, weighed by --rtol-coupling"),
    );
    w.walk(
        "--rtol",
        &implicit_adaptive,
        &["--rtol", "1e-3"],
        Refused("measures the coupling variables"),
    );
    let positions = system_file(&w, "positions.json", |x| {
        x["stepControl"] = json!({
            "estimator": "ExMilne",
            "positions": ["mass1.x", "mass2.x"],
            "velocities": ["mass1.v", "mass2.v"]
        });
    });
    w.walk(
        "--atol-position",
        &s(&["run", &positions, "--stop-time", "0.05"]),
        &["--atol-position", "1e-14"],
        Results,
    );
    w.walk(
        "--atol-position",
        &milne,
        &["--atol-position", "1e-4"],
        Refused("names none"),
    );
    w.walk(
        "--atol-position",
        &adaptive,
        &["--atol-position", "1e-4"],
        Refused("measures the coupling variables"),
    );
    w.walk(
        "--atol-velocity",
        &milne,
        &["--atol-velocity", "1e-3"],
        Results,
    );
    w.walk(
        "--atol-velocity",
        &adaptive,
        &["--atol-velocity", "1e-3"],
        Refused("measures the coupling variables"),
    );
    w.walk(
        "--rtol-coupling",
        &adaptive,
        &["--rtol-coupling", "1e-5"],
        Results,
    );
    w.walk(
        "--rtol-coupling",
        &implicit_adaptive,
        &["--rtol-coupling", "1e-5"],
        Results,
    );
    w.walk(
        "--rtol-coupling",
        &two_mass(&[
            "--adaptive",
            "--algorithm",
            "implicit",
            "--estimator",
            "ImMilne",
            "--fixed-order",
        ]),
        &["--rtol-coupling", "1e-5"],
        Refused("but the order is fixed (--fixed-order)"),
    );
    w.walk(
        "--atol-coupling",
        &adaptive,
        &["--atol-coupling", "1e-4"],
        Results,
    );
    w.walk("--max-step", &adaptive, &["--max-step", "0.0015"], Results);
    w.walk(
        "--safety-factor",
        &adaptive,
        &["--safety-factor", "1"],
        Results,
    );
    for option in ["--max-step", "--safety-factor", "--fixed-order"] {
        let extra: &[&str] = if option == "--fixed-order" {
            &[option]
        } else {
            &[option, "1"]
        };
        w.walk(option, &tm, extra, Refused("tunes the macro-step control"));
    }

    // Threads and processes: the same results, made another way.
    w.walk(
        "--parallel",
        &tm,
        &["--parallel"],
        Holds(|without, with| {
            same_results(without, with)?;
            match (
                stderr_has(without, "--parallel"),
                stderr_has(with, "--parallel"),
            ) {
                (false, true) => Ok(()),
                _ => Err("expected the placement of the components on threads only with it".into()),
            }
        }),
    );
    w.walk(
        "--parallel",
        &tm,
        &["--parallel", "--algorithm", "gauss-seidel"],
        Refused("cannot step in parallel"),
    );
    w.walk(
        "--threads",
        &two_mass(&["--parallel"]),
        &["--threads", "2"],
        Holds(|without, with| {
            same_results(without, with)?;
            let placement = |r: &Ran| {
                r.stderr
                    .lines()
                    .find(|l| l.starts_with("--parallel"))
                    .map(str::to_string)
            };
            match (placement(without), placement(with)) {
                (Some(a), Some(b)) if a != b && b.contains("2 threads") && !b.contains("trial") => {
                    Ok(())
                }
                (a, b) => Err(format!(
                    "expected 2 threads without a trial, got {a:?} and {b:?}"
                )),
            }
        }),
    );
    w.walk(
        "--threads",
        &tm,
        &["--threads", "2"],
        Refused("--threads sets the worker threads of --parallel"),
    );
    let faulty = |failure: &str, extra: &[&str]| {
        let mut args = one(
            "Faulty",
            2,
            &["--stop-time", "0.05", "--start-value", "fail_at=0.01"],
        );
        args.extend(s(&["--start-value", &format!("failure={failure}")]));
        args.extend(s(extra));
        args
    };
    w.walk(
        "--isolate",
        &faulty("6", &[]),
        &["--isolate"],
        Holds(|without, with| {
            if stderr_has(without, "run with --isolate")
                && stderr_has(with, "the worker process")
                && stderr_has(with, "SIGABRT")
            {
                Ok(())
            } else {
                Err(
                    "expected the abort to end cosimo without it and a worker process with it"
                        .into(),
                )
            }
        }),
    );
    // An endless loop: without a timeout the run would never end.
    w.walk_alone(
        "run",
        "--call-timeout",
        &faulty("8", &["--call-timeout", "0.3"]),
        |with| {
            if with.code == Some(1)
                && with
                    .stderr
                    .contains("did not return within the call timeout of 0.3 s")
            {
                Ok(())
            } else {
                Err("expected the endless call killed at the timeout".into())
            }
        },
    );
    let leak = one(
        "Faulty",
        2,
        &[
            "--stop-time",
            "0.05",
            "--step-size",
            "0.01",
            "--start-value",
            "failure=10",
            "--start-value",
            "fail_at=0",
            "--isolate",
        ],
    );
    w.walk(
        "--worker-memory",
        &leak,
        &["--worker-memory", "150M"],
        Holds(|without, with| {
            if without.finished()
                && with.code == Some(1)
                && stderr_has(with, "memory limit of 150 MiB")
            {
                Ok(())
            } else {
                Err("expected the leaking worker to die at the limit only with it".into())
            }
        }),
    );
    let crash_pair = s(&[
        "run",
        &format!("f={}", fmu("Faulty", 2)),
        &format!("osc={}", fmu("Oscillator", 2)),
        "--stop-time",
        "0.05",
        "--start-value",
        "f.failure=5",
        "--start-value",
        "f.fail_at=0.01",
        "--isolate",
    ]);
    w.walk(
        "--worker-processes",
        &crash_pair,
        &["--worker-processes", "1"],
        Holds(|without, with| {
            let shared = "hosting it and \"osc\"";
            if stderr_has(without, "SIGSEGV")
                && !stderr_has(without, shared)
                && stderr_has(with, shared)
            {
                Ok(())
            } else {
                Err(
                    "expected the crash to take the oscillator's shared process only with it"
                        .into(),
                )
            }
        }),
    );

    // The experiment.
    w.walk(
        "--start-time",
        &tm,
        &["--start-time", "0.02"],
        Holds(|without, with| first_times(without, with, 0.0, 0.02)),
    );
    w.walk(
        "--stop-time",
        &s(&["run", &example("two-mass-force-force.json")]),
        &["--stop-time", "0.03"],
        Holds(|without, with| {
            let last = |r: &Ran| r.summary.as_ref().and_then(|s| s["end_time"].as_f64());
            match (last(without), last(with)) {
                (Some(a), Some(b)) if a == 1.0 && b == 0.03 => Ok(()),
                (a, b) => Err(format!(
                    "expected the run to end at 1 (the file's) without and 0.03 with it, not {a:?} and {b:?}"
                )),
            }
        }),
    );
    w.walk("--step-size", &tm, &["--step-size", "0.002"], Results);
    w.walk(
        "--output-interval",
        &tm,
        &["--output-interval", "0.005"],
        Results,
    );
    w.walk(
        "--max-rows",
        &tm,
        &["--max-rows", "3"],
        Refused("more than the limit of 3"),
    );
    w.walk(
        "--divergence-limit",
        &tm,
        &["--divergence-limit", "0.01"],
        Holds(|without, with| {
            if without.finished()
                && with.code == Some(1)
                && stderr_has(with, "exceeds the divergence limit")
            {
                Ok(())
            } else {
                Err("expected the run to stop at the limit only with it".into())
            }
        }),
    );
    let me = one("VanDerPol", 2, &["--stop-time", "1", "--interface", "me"]);
    w.walk("--tolerance", &me, &["--tolerance", "1e-2"], Results);
    w.walk(
        "--start-value",
        &tm,
        &["--start-value", "mass1.x0=0.3"],
        Results,
    );
    let inputs = w.write("inputs.csv", "time,F\n0,0\n1,100\n");
    w.walk(
        "--input-file",
        &one("Oscillator", 2, &["--stop-time", "0.05"]),
        &["--input-file", &inputs],
        Results,
    );

    // What is written, and where.
    check_output_file(&mut w);
    w.walk(
        "--output-variable",
        &tm,
        &["--output-variable", "mass2.v"],
        Results,
    );
    w.walk(
        "--fmi-version",
        &one("Oscillator", 3, &["--stop-time", "0.05"]),
        &["--fmi-version", "2"],
        Refused("but --fmi-version 2 asks for FMI 2"),
    );
    w.walk(
        "--log-fmi-calls",
        &tm,
        &["--log-fmi-calls"],
        only_with_says!("fmi2DoStep"),
    );
    w.walk(
        "--debug-logging",
        &one("BouncingBall", 2, &["--stop-time", "1"]),
        &["--debug-logging"],
        only_with_says!("logEvents"),
    );
    w.walk(
        "--event-mode",
        &one("Stair", 3, &["--stop-time", "3", "--step-size", "0.3"]),
        &["--event-mode"],
        Calls,
    );
    w.walk(
        "--event-mode",
        &one("Stair", 2, &["--stop-time", "3"]),
        &["--event-mode"],
        Refused("--event-mode asks FMI 3 FMUs to return early"),
    );
    let cs = one("VanDerPol", 2, &["--stop-time", "1"]);
    w.walk("--interface", &cs, &["--interface", "me"], Results);
    w.walk("--solver", &me, &["--solver", "rk45"], Results);
    w.walk("--solver-rtol", &me, &["--solver-rtol", "1e-3"], Results);
    w.walk("--solver-atol", &me, &["--solver-atol", "1e-2"], Results);
    w.walk("--solver", &cs, &["--solver", "rk45"], Refused("--solver"));
    let nan = faulty("9", &[]);
    w.walk(
        "--allow-non-finite",
        &nan,
        &["--allow-non-finite"],
        Holds(|without, with| {
            let recorded = with.text().is_some_and(|r| r.contains("nan"));
            if without.code == Some(1)
                && stderr_has(without, "is NaN")
                && with.finished()
                && recorded
            {
                Ok(())
            } else {
                Err("expected the NaN to stop the run without it and be recorded with it".into())
            }
        }),
    );
    w.walk(
        "--real-time",
        &tm,
        &["--real-time=0.5"],
        Holds(|without, with| {
            same_results(without, with)?;
            let wall = |r: &Ran| {
                r.summary
                    .as_ref()
                    .and_then(|s| s["wall_seconds"].as_f64())
                    .unwrap_or(0.0)
            };
            let paced = with
                .summary
                .as_ref()
                .is_some_and(|s| s["real_time"]["target_factor"] == 0.5);
            // 0.05 s simulated at half speed take 0.1 s.
            if paced
                && wall(with) >= 0.099
                && without
                    .summary
                    .as_ref()
                    .is_some_and(|s| s.get("real_time").is_none())
            {
                Ok(())
            } else {
                Err(format!(
                    "expected 0.1 s of wall time and the pacing figures with it, got {} s",
                    wall(with)
                ))
            }
        }),
    );
    w.walk(
        "--progress",
        &tm,
        &["--progress", "jsonl"],
        Holds(|without, with| {
            same_results(without, with)?;
            let lines = |r: &Ran| {
                r.stderr
                    .lines()
                    .filter(|l| l.starts_with('{') && l.contains("\"fraction\""))
                    .count()
            };
            if lines(without) == 0 && lines(with) >= 2 {
                Ok(())
            } else {
                Err("expected JSON progress lines only with it".into())
            }
        }),
    );
    w.walk(
        "--progress",
        &tm,
        &["--progress", "none", "--progress-file", "p.jsonl"],
        Refused("--progress-file takes the JSON progress lines"),
    );
    w.walk(
        "--progress-file",
        &tm,
        &["--progress-file", "progress.jsonl"],
        Holds(same_results),
    );
    w.run_pending();
    let progress = std::fs::read_to_string(w.path("progress.jsonl")).unwrap_or_default();
    let written = if progress.lines().count() >= 2 && progress.contains("\"status\"") {
        Ok(())
    } else {
        Err(format!(
            "expected the progress lines in the file, got {progress:?}"
        ))
    };
    w.mark("run", "--progress-file", written);
    w.walk(
        "--scenario",
        &s(&[
            "run",
            &example("two-mass-force-force.json"),
            "--stop-time",
            "0.3",
        ]),
        &["--scenario", &example("scenarios/two-mass-scenario.json")],
        Results,
    );
    check_summary_json(&mut w);
    w.walk(
        "--quiet",
        &tm,
        &["--quiet"],
        Holds(|without, with| {
            same_results(without, with)?;
            if !without.stderr.is_empty() && with.stderr.is_empty() {
                Ok(())
            } else {
                Err("expected a summary without it and nothing on stderr with it".into())
            }
        }),
    );
    // One process has nothing to split (over MPI ranks: tests/run_mpi.rs).
    let split = w.write("split.txt", "mass1 0\nspring 0\nmass2 1\n");
    w.walk(
        "--partition",
        &tm,
        &["--partition", &split],
        Refused("but this run is one process"),
    );
    w.walk(
        "--partition-out",
        &tm,
        &["--partition-out", "split-out.txt"],
        Refused("but this run is one process"),
    );
    w.covers_help_of("run");
    w.finish("run option");
}

/// Two runs gave the same results.
fn same_results(without: &Ran, with: &Ran) -> Result<(), String> {
    if !(without.finished() && with.finished()) {
        return Err("expected both runs to finish".into());
    }
    if without.results.is_some() && without.results == with.results {
        Ok(())
    } else {
        Err("expected the same results with and without it".into())
    }
}

/// The first result rows are at `a` without and `b` with the option.
fn first_times(without: &Ran, with: &Ran, a: f64, b: f64) -> Result<(), String> {
    let first = |r: &Ran| {
        r.text().and_then(|t| {
            t.lines()
                .nth(1)
                .and_then(|l| l.split(',').next())
                .and_then(|x| x.parse::<f64>().ok())
        })
    };
    match (first(without), first(with)) {
        (Some(x), Some(y)) if x == a && y == b => Ok(()),
        (x, y) => Err(format!(
            "expected the results to start at {a} and {b}, not {x:?} and {y:?}"
        )),
    }
}

/// `--output`: the results go to the file named instead of the default name, and they are
/// the same results.
fn check_output_file(w: &mut Walker) {
    let osc = fmu("Oscillator", 2);
    let without = w.raw(&s(&["run", &osc, "--stop-time", "0.05"]));
    let with = w.raw(&s(&[
        "run",
        &osc,
        "--stop-time",
        "0.05",
        "--output",
        "chosen.csv",
    ]));
    let default = std::fs::read(w.path("Oscillator-fmi2_out.csv"));
    let chosen = std::fs::read(w.path("chosen.csv"));
    let check = match (&default, &chosen) {
        (Ok(a), Ok(b)) if a == b && !a.is_empty() && without.status.success() && with.status.success() => Ok(()),
        _ => Err(format!(
            "expected the default file without it and chosen.csv with it, the same results (read: {:?}, {:?})",
            default.as_ref().map(Vec::len),
            chosen.as_ref().map(Vec::len)
        )),
    };
    w.mark("run", "--output", check);
}

/// `--json-file`: written only when asked, with the run's figures; `--json`: the same summary
/// on stdout.
fn check_summary_json(w: &mut Walker) {
    let file = w.path("summary.json");
    let osc = fmu("Oscillator", 2);
    let args = s(&["run", &osc, "--stop-time", "0.05", "--output", "o.csv"]);
    let without = w.raw(&args);
    let with = w.raw(&[args.clone(), s(&["--json-file", "summary.json"])].concat());
    let summary: Value = std::fs::read_to_string(&file)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    let written = if without.status.success()
        && with.status.success()
        && summary["end_time"] == 0.05
        && summary["status"] == "finished"
    {
        Ok(())
    } else {
        Err(format!(
            "expected the run's figures in the file, got {summary}"
        ))
    };
    w.mark("run", "--json-file", written);
    let printed = w.raw(&[args, s(&["--json"])].concat());
    let stdout: Value = serde_json::from_slice(&printed.stdout).unwrap_or_default();
    let json = if without.stdout.is_empty() && stdout["end_time"] == 0.05 {
        Ok(())
    } else {
        Err(format!(
            "expected the summary as JSON on stdout only with it, got {:?}",
            String::from_utf8_lossy(&printed.stdout)
        ))
    };
    w.mark("run", "--json", json);
}

/// A copy of the two-mass SSP folder (FMU paths made absolute) with a second structure,
/// Other.ssd, in which mass 1 starts at 0.3 m instead of 0.1 m.
fn ssp_with_second_structure(w: &Walker) -> String {
    let folder = w.path("two-mass.ssp");
    std::fs::create_dir_all(&folder).expect("creates the SSP folder");
    let text = std::fs::read_to_string(example("two-mass-force-force.ssp/SystemStructure.ssd"))
        .expect("reads the SSD")
        .replace(
            "../../target/fmus",
            &fmu_pack::fmus_dir().display().to_string(),
        );
    let moved = r#"<ssv:Parameter name="x0"><ssv:Real value="0.3""#;
    let other = text.replacen(
        r#"<ssv:Parameter name="x0"><ssv:Real value="0.1""#,
        moved,
        1,
    );
    assert!(other.contains(moved), "the SSD sets mass 1's x0 to 0.1");
    std::fs::write(folder.join("SystemStructure.ssd"), text).expect("writes the SSD");
    std::fs::write(folder.join("Other.ssd"), other).expect("writes the second SSD");
    folder.display().to_string()
}

/// The two-mass example with its experiment changed by `edit`, written to the walk's folder.
fn system_file(w: &Walker, name: &str, edit: impl FnOnce(&mut Value)) -> String {
    let mut system = example_json("two-mass-force-force.json");
    edit(&mut system["experiment"]);
    w.write(name, &system.to_string())
}

/// The connection of metres to newtons is refused without `--ignore-units` (naming the
/// system file's `ignoreUnits`) and made with it, by `run` and `export` alike.
fn units_refused_only_without(without: &Ran, with: &Ran) -> Result<(), String> {
    if without.code == Some(2) && without.stderr.contains("ignoreUnits") && with.finished() {
        Ok(())
    } else {
        Err(
            "expected the connection of metres to newtons refused without it and made with it"
                .into(),
        )
    }
}

/// `export` of the two-mass example, plus `extra` (the walker names the FMU to write).
fn export_two_mass(extra: &[&str]) -> Vec<String> {
    let mut args = s(&["export", &example("two-mass-force-force.json")]);
    args.extend(s(extra));
    args
}

/// Both exports were written and the run they store differs (the model description and
/// `resources/cosimo-export.json`; that the container runs what is stored, as `run` would,
/// `exported_fmus_run_the_options_they_store` shows).
const STORED: Effect = Results;

#[test]
fn every_export_option_changes_the_exported_fmu_or_is_refused() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let mut w = Walker::new();
    let tm = export_two_mass(&[]);
    let adaptive = export_two_mass(&["--adaptive"]);
    let (m1, m2) = (
        format!("m1={}", fmu("Oscillator", 2)),
        format!("m2={}", fmu("Oscillator", 3)),
    );
    let pair = s(&["export", &m1, &m2]);
    w.walk("--connect", &pair, &["--connect", "m1.x=m2.x_in"], STORED);
    let dimensioned = oscillator_with_base_units(&w);
    let units = s(&[
        "export",
        &format!("m1={dimensioned}"),
        &format!("m2={dimensioned}"),
        "--connect",
        "m1.x=m2.F",
    ]);
    w.walk(
        "--ignore-units",
        &units,
        &["--ignore-units", "m1.x=m2.F"],
        Holds(units_refused_only_without),
    );
    let ssp = ssp_with_second_structure(&w);
    w.walk(
        "--ssd",
        &s(&["export", &ssp]),
        &["--ssd", "Other.ssd"],
        STORED,
    );
    for (option, value) in [
        ("--start-time", "0.02"),
        ("--stop-time", "0.5"),
        ("--step-size", "0.002"),
        ("--output-interval", "0.005"),
        ("--start-value", "mass1.m=2"),
        ("--algorithm", "gauss-seidel"),
        ("--extrapolation-order", "2"),
        ("--divergence-limit", "0.01"),
    ] {
        w.walk(option, &tm, &[option, value], STORED);
    }
    w.walk(
        "--jacobian",
        &export_two_mass(&["--algorithm", "implicit"]),
        &["--jacobian", "components"],
        STORED,
    );
    w.walk(
        "--extension",
        &s(&["export", &example("two-mass-extended.json")]),
        &["--extension", "integral"],
        STORED,
    );
    w.walk("--adaptive", &tm, &["--adaptive"], STORED);
    w.walk("--parallel", &tm, &["--parallel"], STORED);
    w.walk(
        "--threads",
        &export_two_mass(&["--parallel"]),
        &["--threads", "2"],
        STORED,
    );
    let milne = export_two_mass(&["--adaptive", "--estimator", "ExMilne"]);
    w.walk(
        "--estimator",
        &adaptive,
        &["--estimator", "ExMilne"],
        STORED,
    );
    w.walk(
        "--fixed-order",
        &export_two_mass(&["--adaptive", "--extrapolation-order", "2"]),
        &["--fixed-order"],
        STORED,
    );
    w.walk("--rtol", &milne, &["--rtol", "1e-3"], STORED);
    w.walk(
        "--atol-velocity",
        &milne,
        &["--atol-velocity", "1e-3"],
        STORED,
    );
    let positions = system_file(&w, "positions.json", |x| {
        x["stepControl"] = json!({
            "estimator": "ExMilne",
            "positions": ["mass1.x", "mass2.x"],
            "velocities": ["mass1.v", "mass2.v"]
        });
    });
    w.walk(
        "--atol-position",
        &s(&["export", &positions]),
        &["--atol-position", "1e-14"],
        STORED,
    );
    w.walk(
        "--rtol-coupling",
        &adaptive,
        &["--rtol-coupling", "1e-5"],
        STORED,
    );
    w.walk(
        "--atol-coupling",
        &adaptive,
        &["--atol-coupling", "1e-4"],
        STORED,
    );
    w.walk("--max-step", &adaptive, &["--max-step", "0.0015"], STORED);
    w.walk(
        "--safety-factor",
        &adaptive,
        &["--safety-factor", "1"],
        STORED,
    );
    // What run refuses, export refuses the same way (the same checks before anything is
    // written).
    w.walk(
        "--estimator",
        &tm,
        &["--estimator", "ExMilne"],
        Refused("--estimator tunes the macro-step control"),
    );
    // One FMU, as Model Exchange.
    let vdp = s(&["export", &fmu("VanDerPol", 2)]);
    let me = s(&["export", &fmu("VanDerPol", 2), "--interface", "me"]);
    w.walk("--interface", &vdp, &["--interface", "me"], STORED);
    w.walk("--solver", &me, &["--solver", "rk45"], STORED);
    w.walk("--solver-rtol", &me, &["--solver-rtol", "1e-3"], STORED);
    w.walk("--solver-atol", &me, &["--solver-atol", "1e-2"], STORED);
    w.walk("--tolerance", &me, &["--tolerance", "1e-2"], STORED);
    w.walk(
        "--event-mode",
        &s(&["export", &fmu("Stair", 3)]),
        &["--event-mode"],
        STORED,
    );
    for flag in ["--allow-non-finite", "--log-fmi-calls", "--debug-logging"] {
        w.walk(flag, &tm, &[flag], STORED);
    }
    // Worker processes inside the FMU: the settings are stored (and the worker program
    // shipped, see --container-worker below).
    w.walk("--isolate", &tm, &["--isolate"], STORED);
    w.walk("--call-timeout", &tm, &["--call-timeout", "1"], STORED);
    let isolated = export_two_mass(&["--isolate"]);
    w.walk(
        "--worker-memory",
        &isolated,
        &["--worker-memory", "150M"],
        STORED,
    );
    w.walk(
        "--worker-processes",
        &isolated,
        &["--worker-processes", "1"],
        STORED,
    );
    // What an importer drives: refused with the reason.
    w.write("inputs.csv", "time,mass1.F\n0,0\n1,1\n");
    w.write("split.txt", "mass1 0\nspring 0\nmass2 1\n");
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fmus/scenarios/two-mass-scenario.yaml")
        .display()
        .to_string();
    for (option, extra) in [
        ("--input-file", &["--input-file", "inputs.csv"][..]),
        ("--max-rows", &["--max-rows", "3"]),
        ("--output-variable", &["--output-variable", "mass1.x"]),
        ("--real-time", &["--real-time"]),
        ("--progress", &["--progress", "none"]),
        ("--progress-file", &["--progress-file", "progress.jsonl"]),
        ("--scenario", &["--scenario", &scenario]),
        ("--json", &["--json"]),
        ("--json-file", &["--json-file", "summary.json"]),
        ("--partition", &["--partition", "split.txt"]),
        ("--partition-out", &["--partition-out", "split.txt"]),
    ] {
        w.walk(option, &tm, extra, Refused("cosimo export does not take"));
    }
    w.walk(
        "--fmi-version",
        &tm,
        &["--fmi-version", "3"],
        Holds(|without, with| {
            let version = |r: &Ran| r.text().map(|t| t.contains("fmiVersion=\"3.0\""));
            match (version(without), version(with)) {
                (Some(false), Some(true)) => Ok(()),
                _ => Err("expected an FMI 3 model description only with it".into()),
            }
        }),
    );
    w.walk("--expose", &tm, &["--expose", "mass1.m"], STORED);
    w.walk("--hide", &tm, &["--hide", "mass1.x"], STORED);
    w.walk(
        "--quiet",
        &tm,
        &["--quiet"],
        Holds(|without, with| {
            let said = |r: &Ran| format!("{}{}", r.stdout, r.stderr);
            if without.finished()
                && with.finished()
                && !said(without).is_empty()
                && said(with).is_empty()
            {
                Ok(())
            } else {
                Err("expected a summary without it and nothing with it".into())
            }
        }),
    );
    // The FMU written, and the library it ships: by hand.
    let named = w.raw(&s(&[
        "export",
        &example("two-mass-force-force.json"),
        "--output",
        "named.fmu",
    ]));
    w.mark(
        "export",
        "--output",
        if named.status.success() && walk::exported_description(&w.path("named.fmu")).is_some() {
            Ok(())
        } else {
            Err("expected the FMU written where --output names".into())
        },
    );
    let library = w.write("not-a-library.so", "the container library's stand-in");
    let shipped = w.raw(&s(&[
        "export",
        &example("two-mass-force-force.json"),
        "--output",
        "shipped.fmu",
        "--container-library",
        &library,
    ]));
    let binary = zip::ZipArchive::new(
        std::fs::File::open(w.path("shipped.fmu")).expect("the export with --container-library"),
    )
    .ok()
    .and_then(|mut zip| {
        use std::io::Read;
        let name = (0..zip.len())
            .filter_map(|i| zip.by_index(i).ok().map(|f| f.name().to_string()))
            .find(|n| n.starts_with("binaries/") && !n.ends_with('/'))?;
        let mut text = String::new();
        zip.by_name(&name).ok()?.read_to_string(&mut text).ok()?;
        Some(text)
    });
    w.mark(
        "export",
        "--container-library",
        if shipped.status.success() && binary.as_deref() == Some("the container library's stand-in")
        {
            Ok(())
        } else {
            Err(format!(
                "expected the named library shipped as the FMU's binary: {}",
                String::from_utf8_lossy(&shipped.stderr)
            ))
        },
    );
    let worker = w.write("not-a-worker", "the worker program's stand-in");
    let with_worker = |extra: &[&str], name: &str| {
        let mut args = s(&[
            "export",
            &example("two-mass-force-force.json"),
            "--output",
            name,
            "--container-worker",
            &worker,
        ]);
        args.extend(s(extra));
        w.raw(&args)
    };
    let shipped = with_worker(&["--isolate"], "worker.fmu");
    let unused = with_worker(&[], "no-worker.fmu");
    let program = zip::ZipArchive::new(
        std::fs::File::open(w.path("worker.fmu")).expect("the export with --container-worker"),
    )
    .ok()
    .and_then(|mut zip| {
        use std::io::Read;
        let name = (0..zip.len())
            .filter_map(|i| zip.by_index(i).ok().map(|f| f.name().to_string()))
            .find(|n| {
                n.starts_with("binaries/") && n.ends_with(&cosimo::export::worker_file_name())
            })?;
        let mut text = String::new();
        zip.by_name(&name).ok()?.read_to_string(&mut text).ok()?;
        Some(text)
    });
    w.mark(
        "export",
        "--container-worker",
        if shipped.status.success()
            && program.as_deref() == Some("the worker program's stand-in")
            && unused.status.code() == Some(2)
            && String::from_utf8_lossy(&unused.stderr).contains("no inner FMU")
        {
            Ok(())
        } else {
            Err(format!(
                "expected the named worker shipped with --isolate and refused without: {} / {}",
                String::from_utf8_lossy(&shipped.stderr),
                String::from_utf8_lossy(&unused.stderr)
            ))
        },
    );
    w.covers_help_of("export");
    w.finish("export option");
}

/// The exported FMU runs what it stores: `cosimo run` of the export made with an option gives
/// the results of `cosimo run` of the system with that option (compared where both have a row
/// and a column), and not those of the export made without it.
#[test]
fn exported_fmus_run_the_options_they_store() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let w = Walker::new();
    let system = example("two-mass-force-force.json");
    let table = |args: &[&str], name: &str| {
        let mut all = s(args);
        all.extend(s(&[
            "--stop-time",
            "0.05",
            "--step-size",
            "0.001",
            "-q",
            "-o",
            name,
        ]));
        let ran = w.raw(&all);
        assert!(
            ran.status.success(),
            "{all:?}: {}",
            String::from_utf8_lossy(&ran.stderr)
        );
        common::read_results(&w.path(name))
    };
    let plain_export = |options: &[&str], name: &str| {
        let mut args = s(&["export", &system, "-q", "-o", name]);
        args.extend(s(options));
        let ran = w.raw(&args);
        assert!(
            ran.status.success(),
            "{}",
            String::from_utf8_lossy(&ran.stderr)
        );
        w.path(name).display().to_string()
    };
    let bare = plain_export(&[], "bare.fmu");
    let bare_results = table(&["run", &bare], "bare.csv");
    for (i, option) in [
        &["--algorithm", "gauss-seidel"][..],
        &["--extrapolation-order", "2"],
        &["--start-value", "mass1.x0=0.2"],
        &["--algorithm", "implicit"],
    ]
    .into_iter()
    .enumerate()
    {
        let exported = plain_export(option, &format!("with-{i}.fmu"));
        let inside = table(&["run", &exported], &format!("inside-{i}.csv"));
        let mut direct_args = vec!["run", system.as_str()];
        direct_args.extend(option);
        let direct = table(&direct_args, &format!("direct-{i}.csv"));
        let (same, differs) = (
            agree(&direct, &inside, 1e-12),
            agree(&bare_results, &inside, 1e-12),
        );
        assert!(
            same.0 > 0 && same.1 == 0,
            "{option:?}: the export's run differs from cosimo run's in {} of {} values",
            same.1,
            same.0
        );
        assert!(differs.1 > 0, "{option:?}: the export ran as without it");
    }
    // Step control inside an export chooses its steps between the importer's communication
    // points, so it runs as no `cosimo run` does: only unlike the export without it.
    let adaptive = plain_export(&["--adaptive"], "adaptive.fmu");
    let inside = table(&["run", &adaptive], "adaptive.csv");
    assert!(
        agree(&bare_results, &inside, 1e-12).1 > 0,
        "--adaptive: the export ran as without it"
    );
}

/// (values compared, values further apart than `tolerance` relative) of the columns and times
/// both tables have; the exported FMU names `mass1.x` as the system does.
fn agree(a: &cosimo::results::Table, b: &cosimo::results::Table, tolerance: f64) -> (usize, usize) {
    let (mut compared, mut apart) = (0, 0);
    for (c, name) in a.columns().iter().enumerate() {
        let Some(d) = b.column(name) else { continue };
        for (i, &t) in a.time().iter().enumerate() {
            let Some(j) = b.time().iter().position(|&u| (u - t).abs() <= 1e-9) else {
                continue;
            };
            let (x, y) = (a.values(c)[i], b.values(d)[j]);
            compared += 1;
            if (x - y).abs() > tolerance * x.abs().max(1.0) {
                apart += 1;
            }
        }
    }
    (compared, apart)
}
