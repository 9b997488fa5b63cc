//! Every `cosimo run` option against every input kind (one FMU, a JSON system file, an SSP):
//! each either takes effect (asserted on the results or the summary) or is refused with exit
//! code 2 and a message naming it. Nothing is accepted and ignored.

mod common;

use std::path::{Path, PathBuf};

use common::{cosimo, fmu};
use cosimo::results::Table;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Fmu,
    Json,
    Ssp,
}

const KINDS: [Kind; 3] = [Kind::Fmu, Kind::Json, Kind::Ssp];

/// What running with the option must give.
enum Expect {
    /// Exit 0 and this holds for the results table and stderr.
    Effect(fn(Kind, &Table, &str) -> Result<(), String>),
    /// Exit 2 and stderr contains this.
    Refused(&'static str),
}

struct Case {
    /// The options, per input kind (a system names its component).
    args: fn(Kind, &Path) -> Vec<String>,
    expect: fn(Kind) -> Expect,
}

fn target(kind: Kind) -> String {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fmus");
    match kind {
        Kind::Fmu => fmu("Oscillator", 2).display().to_string(),
        Kind::Json => root.join("two-mass-force-force.json").display().to_string(),
        Kind::Ssp => root.join("two-mass-force-force.ssp").display().to_string(),
    }
}

/// `mass1.x` in a system, `x` for the FMU alone.
fn var(kind: Kind, name: &str) -> String {
    match kind {
        Kind::Fmu => name.to_string(),
        _ => format!("mass1.{name}"),
    }
}

fn s(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn rows(n: usize) -> fn(Kind, &Table, &str) -> Result<(), String> {
    match n {
        6 => |_, t, _| {
            check(
                t.time().len() == 6,
                format!("6 rows, got {}", t.time().len()),
            )
        },
        11 => |_, t, _| {
            check(
                t.time().len() == 11,
                format!("11 rows, got {}", t.time().len()),
            )
        },
        51 => |_, t, _| {
            check(
                t.time().len() == 51,
                format!("51 rows, got {}", t.time().len()),
            )
        },
        _ => unreachable!("no such row count in the table"),
    }
}

fn check(ok: bool, what: String) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(what)
    }
}

fn stderr_has(needle: &'static str) -> fn(Kind, &Table, &str) -> Result<(), String> {
    match needle {
        "step control:" => {
            |_, _, e| check(e.contains("step control:"), "a step-control summary".into())
        }
        "corrector:" => |k, _, e| {
            // One FMU has no coupling variables: its corrector has nothing to iterate on.
            check(
                k == Kind::Fmu || e.contains("corrector:"),
                "a corrector summary".into(),
            )
        },
        "DoStep" => |_, _, e| check(e.contains("fmi2DoStep"), "traced fmi2DoStep calls".into()),
        "loggingOn=true" => |_, _, e| {
            check(
                e.contains("loggingOn=true"),
                "loggingOn=true in the trace".into(),
            )
        },
        "tolerance=1e-7" => |_, _, e| {
            check(
                e.contains("tolerance=0.0000001") || e.contains("tolerance=1e-7"),
                "the tolerance in the trace".into(),
            )
        },
        _ => unreachable!("no such check"),
    }
}

fn cases() -> Vec<(&'static str, Case)> {
    use Expect::*;
    vec![
        (
            "--stop-time",
            Case {
                args: |_, _| s(&["--stop-time", "0.02"]),
                expect: |_| {
                    Effect(|_, t, _| {
                        check(
                            (t.time().last().copied().unwrap_or(0.0) - 0.02).abs() < 1e-12,
                            "ends at 0.02".into(),
                        )
                    })
                },
            },
        ),
        (
            "--start-time",
            Case {
                args: |_, _| s(&["--start-time", "0.01", "--stop-time", "0.05"]),
                expect: |_| {
                    Effect(|_, t, _| {
                        check((t.time()[0] - 0.01).abs() < 1e-12, "starts at 0.01".into())
                    })
                },
            },
        ),
        (
            "--step-size",
            Case {
                args: |_, _| s(&["--stop-time", "0.05", "--step-size", "0.005"]),
                expect: |_| Effect(rows(11)),
            },
        ),
        (
            "--output-interval",
            Case {
                args: |_, _| {
                    s(&[
                        "--stop-time",
                        "0.05",
                        "--step-size",
                        "0.001",
                        "--output-interval",
                        "0.01",
                    ])
                },
                expect: |_| Effect(rows(6)),
            },
        ),
        (
            "--tolerance",
            Case {
                args: |_, _| {
                    s(&[
                        "--stop-time",
                        "0.002",
                        "--tolerance",
                        "1e-7",
                        "--log-fmi-calls",
                    ])
                },
                expect: |_| Effect(stderr_has("tolerance=1e-7")),
            },
        ),
        (
            "--algorithm gauss-seidel",
            Case {
                args: |_, _| {
                    s(&[
                        "--stop-time",
                        "0.05",
                        "--step-size",
                        "0.001",
                        "--algorithm",
                        "gauss-seidel",
                    ])
                },
                expect: |_| Effect(rows(51)),
            },
        ),
        (
            "--algorithm implicit",
            Case {
                args: |_, _| {
                    s(&[
                        "--stop-time",
                        "0.01",
                        "--step-size",
                        "0.001",
                        "--algorithm",
                        "implicit",
                    ])
                },
                expect: |_| Effect(stderr_has("corrector:")),
            },
        ),
        (
            "--algorithm constraint",
            Case {
                args: |_, _| s(&["--stop-time", "0.01", "--algorithm", "constraint"]),
                expect: |_| Refused("the constraint algorithm needs"),
            },
        ),
        (
            "--algorithm rim",
            Case {
                args: |_, _| s(&["--stop-time", "0.01", "--algorithm", "rim"]),
                expect: |_| Refused("the rim algorithm needs"),
            },
        ),
        (
            "--jacobian",
            Case {
                args: |_, _| s(&["--stop-time", "0.01", "--jacobian", "components"]),
                expect: |_| Refused("--jacobian applies to the implicit algorithm only"),
            },
        ),
        (
            "--jacobian with implicit",
            Case {
                args: |_, _| {
                    s(&[
                        "--stop-time",
                        "0.01",
                        "--algorithm",
                        "implicit",
                        "--jacobian",
                        "components",
                    ])
                },
                expect: |_| Effect(stderr_has("corrector:")),
            },
        ),
        (
            "--extension",
            Case {
                args: |_, _| s(&["--stop-time", "0.01", "--extension", "derivative"]),
                expect: |_| Refused("--extension applies to the implicit algorithm only"),
            },
        ),
        (
            "--extension with implicit",
            Case {
                args: |_, _| {
                    s(&[
                        "--stop-time",
                        "0.01",
                        "--algorithm",
                        "implicit",
                        "--extension",
                        "derivative",
                    ])
                },
                expect: |_| Refused("no connection is marked halfStep"),
            },
        ),
        (
            "--extrapolation-order",
            Case {
                args: |_, _| {
                    s(&[
                        "--stop-time",
                        "0.05",
                        "--step-size",
                        "0.001",
                        "--extrapolation-order",
                        "2",
                    ])
                },
                expect: |_| Effect(rows(51)),
            },
        ),
        (
            "--adaptive",
            Case {
                args: |_, _| s(&["--stop-time", "0.01", "--adaptive"]),
                expect: |_| Effect(stderr_has("step control:")),
            },
        ),
        (
            "--adaptive --estimator",
            Case {
                args: |_, _| {
                    s(&[
                        "--stop-time",
                        "0.01",
                        "--adaptive",
                        "--estimator",
                        "ExMilne",
                        "--rtol",
                        "1e-4",
                        "--max-step",
                        "0.002",
                        "--safety-factor",
                        "3",
                        "--fixed-order",
                    ])
                },
                expect: |_| Effect(stderr_has("step control:")),
            },
        ),
        (
            "--estimator implicit with explicit algorithm",
            Case {
                args: |_, _| {
                    s(&[
                        "--stop-time",
                        "0.01",
                        "--adaptive",
                        "--estimator",
                        "ImSLocal",
                    ])
                },
                expect: |_| Refused("belongs to the implicit scheme"),
            },
        ),
        (
            "--adaptive with implicit",
            Case {
                args: |_, _| {
                    s(&[
                        "--stop-time",
                        "0.01",
                        "--adaptive",
                        "--algorithm",
                        "implicit",
                    ])
                },
                expect: |_| Effect(stderr_has("step control:")),
            },
        ),
        (
            "--estimator",
            Case {
                args: |_, _| s(&["--estimator", "ExMilne"]),
                expect: |_| Refused("--estimator tunes the macro-step control"),
            },
        ),
        (
            "--fixed-order",
            Case {
                args: |_, _| s(&["--fixed-order"]),
                expect: |_| Refused("--fixed-order tunes the macro-step control"),
            },
        ),
        (
            "--rtol",
            Case {
                args: |_, _| s(&["--rtol", "1e-4"]),
                expect: |_| Refused("--rtol tunes the macro-step control"),
            },
        ),
        (
            "--atol-position",
            Case {
                args: |_, _| s(&["--atol-position", "1e-4"]),
                expect: |_| Refused("--atol-position tunes the macro-step control"),
            },
        ),
        (
            "--atol-velocity",
            Case {
                args: |_, _| s(&["--atol-velocity", "1e-4"]),
                expect: |_| Refused("--atol-velocity tunes the macro-step control"),
            },
        ),
        (
            "--rtol-coupling",
            Case {
                args: |_, _| s(&["--rtol-coupling", "1e-4"]),
                expect: |_| Refused("--rtol-coupling tunes the macro-step control"),
            },
        ),
        (
            "--atol-coupling",
            Case {
                args: |_, _| s(&["--atol-coupling", "1e-4"]),
                expect: |_| Refused("--atol-coupling tunes the macro-step control"),
            },
        ),
        (
            "--max-step",
            Case {
                args: |_, _| s(&["--max-step", "1e-2"]),
                expect: |_| Refused("--max-step tunes the macro-step control"),
            },
        ),
        (
            "--safety-factor",
            Case {
                args: |_, _| s(&["--safety-factor", "3"]),
                expect: |_| Refused("--safety-factor tunes the macro-step control"),
            },
        ),
        (
            "--parallel",
            Case {
                args: |_, _| {
                    s(&[
                        "--stop-time",
                        "0.05",
                        "--step-size",
                        "0.001",
                        "--parallel",
                        "--threads",
                        "2",
                    ])
                },
                expect: |_| Effect(rows(51)),
            },
        ),
        (
            "--parallel with gauss-seidel",
            Case {
                args: |_, _| {
                    s(&[
                        "--stop-time",
                        "0.01",
                        "--parallel",
                        "--algorithm",
                        "gauss-seidel",
                    ])
                },
                expect: |_| Refused("cannot step in parallel"),
            },
        ),
        (
            "--threads",
            Case {
                args: |_, _| s(&["--threads", "2"]),
                expect: |_| Refused("--threads sets the worker threads of --parallel"),
            },
        ),
        (
            "--start-value",
            Case {
                args: |k, _| {
                    vec![
                        "--stop-time".into(),
                        "0.01".into(),
                        "--start-value".into(),
                        format!("{}=0.25", var(k, "x0")),
                        "--output-variable".into(),
                        var(k, "x"),
                    ]
                },
                expect: |_| {
                    Effect(|_, t, _| {
                        check(
                            (t.values(0)[0] - 0.25).abs() < 1e-12,
                            "x starts at 0.25".into(),
                        )
                    })
                },
            },
        ),
        (
            "--output-variable",
            Case {
                args: |k, _| {
                    vec![
                        "--stop-time".into(),
                        "0.01".into(),
                        "--output-variable".into(),
                        var(k, "v"),
                    ]
                },
                expect: |_| {
                    Effect(|k, t, _| {
                        check(
                            t.columns() == [var(k, "v")],
                            format!("one column {}, got {:?}", var(k, "v"), t.columns()),
                        )
                    })
                },
            },
        ),
        (
            "--input-file",
            Case {
                args: |k, dir| {
                    let file = dir.join("inputs.csv");
                    std::fs::write(&file, format!("time,{}\n0,0\n1,100\n", var(k, "F")))
                        .expect("writes the inputs");
                    vec![
                        "--stop-time".into(),
                        "0.01".into(),
                        "--input-file".into(),
                        file.display().to_string(),
                        "--output-variable".into(),
                        var(k, "F"),
                    ]
                },
                expect: |k| match k {
                    // The force of mass 1 comes from the spring in the systems.
                    Kind::Fmu => Expect::Effect(|_, t, _| {
                        check(
                            (t.values(0)[t.time().len() - 1] - 0.9).abs() < 1e-9,
                            "F follows the table (0.9 N set at the last step's start, 0.009 s)"
                                .into(),
                        )
                    }),
                    _ => Expect::Refused("drives an input that a connection drives already"),
                },
            },
        ),
        (
            "--fmi-version",
            Case {
                args: |_, _| s(&["--stop-time", "0.01", "--fmi-version", "2"]),
                expect: |k| match k {
                    Kind::Fmu => Expect::Effect(rows(11)),
                    _ => Expect::Refused("--fmi-version checks the version of one FMU"),
                },
            },
        ),
        (
            "--log-fmi-calls",
            Case {
                args: |_, _| s(&["--stop-time", "0.002", "--log-fmi-calls"]),
                expect: |_| Effect(stderr_has("DoStep")),
            },
        ),
        (
            "--debug-logging",
            Case {
                args: |_, _| s(&["--stop-time", "0.002", "--debug-logging", "--log-fmi-calls"]),
                expect: |_| Effect(stderr_has("loggingOn=true")),
            },
        ),
        (
            "--event-mode",
            Case {
                args: |_, _| s(&["--stop-time", "0.01", "--event-mode"]),
                expect: |_| Refused("--event-mode asks FMI 3 FMUs to return early"),
            },
        ),
        (
            "--quiet",
            Case {
                args: |_, _| s(&["--stop-time", "0.01", "--quiet"]),
                expect: |_| {
                    Effect(|_, _, e| check(e.is_empty(), format!("nothing on stderr, got {e:?}")))
                },
            },
        ),
        (
            "--connect",
            Case {
                args: |_, _| s(&["--connect", "a.y=b.u"]),
                expect: |k| match k {
                    // One FMU and --connect: a command-line system whose names must resolve.
                    Kind::Fmu => Expect::Refused("there is no component \"a\""),
                    _ => Expect::Refused(
                        "--connect builds a system from FMUs named on the command line",
                    ),
                },
            },
        ),
        (
            "--max-rows (too few)",
            Case {
                args: |_, _| s(&["--stop-time", "0.01", "--max-rows", "10"]),
                expect: |_| Expect::Refused("makes 11 result rows, more than the limit of 10"),
            },
        ),
        (
            "--max-rows (enough)",
            Case {
                args: |_, _| s(&["--stop-time", "0.01", "--max-rows", "11"]),
                expect: |_| Expect::Effect(rows(11)),
            },
        ),
        (
            "--ssd",
            Case {
                args: |_, _| s(&["--stop-time", "0.01", "--ssd", "SystemStructure.ssd"]),
                expect: |k| match k {
                    Kind::Ssp => Expect::Effect(rows(11)),
                    _ => Expect::Refused("--ssd chooses the .ssd file of an SSP"),
                },
            },
        ),
    ]
}

#[test]
fn every_run_option_takes_effect_or_is_refused_for_every_input_kind() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let dir = tempfile::tempdir().expect("a temporary folder");
    let mut failures = Vec::new();
    for (name, case) in cases() {
        for kind in KINDS {
            let out = dir.path().join("out.csv");
            let _ = std::fs::remove_file(&out);
            let mut args = vec!["run".to_string(), target(kind)];
            args.extend((case.args)(kind, dir.path()));
            args.extend(["--output-file".to_string(), out.display().to_string()]);
            // The examples' own grids differ: rows on every step unless the case says otherwise.
            let given = |args: &[String], flag: &str| args.iter().position(|a| a == flag);
            if given(&args, "--adaptive").is_none() {
                let step = match given(&args, "--step-size") {
                    Some(i) => args[i + 1].clone(),
                    None => {
                        args.extend(["--step-size".to_string(), "0.001".to_string()]);
                        "0.001".to_string()
                    }
                };
                if given(&args, "--output-interval").is_none() {
                    args.extend(["--output-interval".to_string(), step]);
                }
            }
            let output = cosimo(&args);
            let stderr = String::from_utf8_lossy(&output.stderr).to_string();
            let code = output.status.code();
            let label = format!("{name} ({kind:?})");
            match (case.expect)(kind) {
                Expect::Refused(message) => {
                    if code != Some(2) || !stderr.contains(message) {
                        failures.push(format!(
                            "{label}: expected exit 2 with \"{message}\", got {code:?}: {stderr}"
                        ));
                    }
                }
                Expect::Effect(holds) => {
                    if code != Some(0) {
                        failures.push(format!("{label}: expected success, got {code:?}: {stderr}"));
                        continue;
                    }
                    let table = Table::read(&out).expect("the results read");
                    if let Err(what) = holds(kind, &table, &stderr) {
                        failures.push(format!("{label}: expected {what}"));
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of the option checks failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// `cosimo check` over an FMU with its own reference, a case folder of a system file and one
/// of an SSP.
fn check_target(kind: Kind) -> String {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fmus/references");
    match kind {
        Kind::Fmu => fmu("Dahlquist", 2).display().to_string(),
        Kind::Json => root.join("two-mass-force-force").display().to_string(),
        Kind::Ssp => root.join("two-mass-force-force-ssp").display().to_string(),
    }
}

/// What a check run left: exit code, stdout, stderr and the results table (from --results).
struct Checked {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    results: Option<Table>,
}

enum CheckExpect {
    /// This holds for what the run left.
    Effect(fn(Kind, &Checked, &Path) -> Result<(), String>),
    /// Exit 2 and this in the output.
    Refused(&'static str),
}

struct CheckCase {
    args: fn(Kind, &Path) -> Vec<String>,
    expect: fn(Kind) -> CheckExpect,
}

fn last_time(c: &Checked) -> f64 {
    c.results
        .as_ref()
        .and_then(|t| t.time().last().copied())
        .unwrap_or(f64::NAN)
}

fn check_cases() -> Vec<(&'static str, CheckCase)> {
    use CheckExpect::*;
    vec![
        (
            "--stop-time",
            CheckCase {
                args: |_, _| s(&["--stop-time", "0.5"]),
                expect: |_| {
                    Effect(|_, c, _| {
                        check(
                            (last_time(c) - 0.5).abs() < 1e-12,
                            format!("results end at 0.5, not {}", last_time(c)),
                        )
                    })
                },
            },
        ),
        (
            "--start-time",
            CheckCase {
                args: |_, _| s(&["--start-time", "0.2", "--stop-time", "0.5"]),
                expect: |_| {
                    Effect(|_, c, _| {
                        let first = c.results.as_ref().map_or(f64::NAN, |t| t.time()[0]);
                        check(
                            (first - 0.2).abs() < 1e-12,
                            format!("results start at 0.2, not {first}"),
                        )
                    })
                },
            },
        ),
        (
            "--step-size --output-interval",
            CheckCase {
                args: |_, _| {
                    s(&[
                        "--stop-time",
                        "0.5",
                        "--step-size",
                        "0.001",
                        "--output-interval",
                        "0.05",
                    ])
                },
                expect: |_| {
                    Effect(|_, c, _| {
                        let n = c.results.as_ref().map_or(0, |t| t.time().len());
                        check(n == 11, format!("11 rows, got {n}"))
                    })
                },
            },
        ),
        (
            "--rel-tol --abs-tol --range-tol --time-tol",
            CheckCase {
                args: |_, _| {
                    s(&[
                        "--rel-tol",
                        "0",
                        "--abs-tol",
                        "0",
                        "--range-tol",
                        "0",
                        "--time-tol",
                        "0",
                    ])
                },
                expect: |_| {
                    Effect(|_, c, _| {
                        check(
                            c.code == Some(3),
                            format!("exit 3 with zero tolerances, got {:?}", c.code),
                        )
                    })
                },
            },
        ),
        (
            "--junit",
            CheckCase {
                args: |_, d| vec!["--junit".into(), d.join("junit.xml").display().to_string()],
                expect: |_| {
                    Effect(|_, _, d| {
                        check(
                            std::fs::read_to_string(d.join("junit.xml"))
                                .is_ok_and(|x| x.contains("<testsuite")),
                            "a JUnit report".into(),
                        )
                    })
                },
            },
        ),
        (
            "--json",
            CheckCase {
                args: |_, d| vec!["--json".into(), d.join("report.json").display().to_string()],
                expect: |_| {
                    Effect(|_, _, d| {
                        check(
                            std::fs::read_to_string(d.join("report.json"))
                                .is_ok_and(|x| x.contains("\"cases\"")),
                            "a JSON report".into(),
                        )
                    })
                },
            },
        ),
        (
            "--plot",
            CheckCase {
                args: |_, d| {
                    vec![
                        "--plot".into(),
                        d.join("plots").display().to_string(),
                        "--rel-tol".into(),
                        "0".into(),
                        "--abs-tol".into(),
                        "0".into(),
                        "--range-tol".into(),
                        "0".into(),
                        "--time-tol".into(),
                        "0".into(),
                    ]
                },
                expect: |_| {
                    Effect(|_, _, d| {
                        // One folder per case, a PNG per failing signal in it.
                        let pngs = std::fs::read_dir(d.join("plots"))
                            .into_iter()
                            .flatten()
                            .flatten()
                            .flat_map(|case| {
                                std::fs::read_dir(case.path())
                                    .into_iter()
                                    .flatten()
                                    .flatten()
                            })
                            .filter(|e| e.path().extension().is_some_and(|x| x == "png"))
                            .count();
                        check(pngs > 0, "a plot of a failing signal".into())
                    })
                },
            },
        ),
        (
            "--quiet",
            CheckCase {
                args: |_, _| s(&["--quiet"]),
                expect: |_| {
                    Effect(|_, c, _| {
                        check(
                            c.stdout.is_empty(),
                            format!("no summary, got {:?}", c.stdout),
                        )
                    })
                },
            },
        ),
        (
            "--reference",
            CheckCase {
                args: |_, d| {
                    let file = d.join("wrong.csv");
                    std::fs::write(&file, "time,x\n0,5\n10,5\n").expect("writes a reference");
                    vec!["--reference".into(), file.display().to_string()]
                },
                expect: |k| match k {
                    Kind::Fmu => Effect(|_, c, _| {
                        check(
                            c.code == Some(3),
                            format!("exit 3 against a wrong reference, got {:?}", c.code),
                        )
                    }),
                    _ => Refused("apply to one model given directly"),
                },
            },
        ),
        (
            "--settings",
            CheckCase {
                args: |_, d| {
                    let file = d.join("settings.json");
                    std::fs::write(&file, r#"{"experiment": {"stopTime": 0.5}}"#)
                        .expect("writes settings");
                    vec!["--settings".into(), file.display().to_string()]
                },
                expect: |k| match k {
                    // Settings without a reference: the FMU's own (FMI-LS-REF) stays in use.
                    Kind::Fmu => Effect(|_, c, _| {
                        check(
                            (last_time(c) - 0.5).abs() < 1e-12,
                            format!("results end at 0.5, not {}", last_time(c)),
                        )
                    }),
                    _ => Refused("apply to one model given directly"),
                },
            },
        ),
        (
            "--input-file",
            CheckCase {
                args: |_, d| {
                    let file = d.join("inputs.csv");
                    std::fs::write(&file, "time,u\n0,1\n10,1\n").expect("writes inputs");
                    vec!["--input-file".into(), file.display().to_string()]
                },
                expect: |k| match k {
                    Kind::Fmu => Refused("column \"u\" matches no input of Dahlquist"),
                    _ => Refused("apply to one model given directly"),
                },
            },
        ),
        (
            "--html",
            CheckCase {
                args: |_, d| vec!["--html".into(), d.join("report").display().to_string()],
                expect: |_| {
                    Effect(|_, _, d| {
                        // An index, and a page per case in a folder of its own.
                        let report = d.join("report");
                        let case_pages = std::fs::read_dir(&report)
                            .into_iter()
                            .flatten()
                            .flatten()
                            .filter(|case| case.path().join("index.html").is_file())
                            .count();
                        check(
                            report.join("index.html").is_file() && case_pages == 1,
                            format!("an index and one case page, {case_pages} case pages"),
                        )
                    })
                },
            },
        ),
    ]
}

#[test]
fn every_check_option_takes_effect_or_is_refused_for_every_input_kind() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let mut failures = Vec::new();
    for (name, case) in check_cases() {
        for kind in KINDS {
            let dir = tempfile::tempdir().expect("a temporary folder");
            let results = dir.path().join("results");
            let mut args = vec!["check".to_string(), check_target(kind)];
            args.extend((case.args)(kind, dir.path()));
            args.extend(["--results".to_string(), results.display().to_string()]);
            let output = cosimo(&args);
            let table = std::fs::read_dir(&results).ok().and_then(|entries| {
                entries
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .find(|p| p.extension().is_some_and(|x| x == "csv"))
                    .and_then(|p| Table::read(&p).ok())
            });
            let checked = Checked {
                code: output.status.code(),
                stdout: String::from_utf8_lossy(&output.stdout).to_string(),
                stderr: String::from_utf8_lossy(&output.stderr).to_string(),
                results: table,
            };
            let label = format!("check {name} ({kind:?})");
            match (case.expect)(kind) {
                CheckExpect::Refused(message) => {
                    let said = format!("{}{}", checked.stdout, checked.stderr);
                    if checked.code != Some(2) || !said.contains(message) {
                        failures.push(format!(
                            "{label}: expected exit 2 with \"{message}\", got {:?}: {said}",
                            checked.code
                        ));
                    }
                }
                CheckExpect::Effect(holds) => {
                    if !matches!(checked.code, Some(0 | 3)) {
                        failures.push(format!(
                            "{label}: expected a finished check, got {:?}: {}{}",
                            checked.code, checked.stdout, checked.stderr
                        ));
                        continue;
                    }
                    if let Err(what) = holds(kind, &checked, dir.path()) {
                        failures.push(format!("{label}: expected {what}"));
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of the check option checks failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// `inspect` and `plot` refuse what they would otherwise ignore.
#[test]
fn inspect_and_plot_refuse_options_that_would_not_take_effect() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let dir = tempfile::tempdir().expect("a temporary folder");
    let osc = fmu("Oscillator", 2).display().to_string();
    let refused = |args: &[&str], message: &str| {
        let output = cosimo(args);
        let stderr = String::from_utf8_lossy(&output.stderr).to_string();
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    };
    refused(
        &["inspect", &osc, "--ssd", "SystemStructure.ssd"],
        "--ssd chooses the .ssd file of an SSP",
    );
    let csv = dir.path().join("r.csv");
    std::fs::write(&csv, "time,x\n0,1\n1,2\n").expect("writes a result file");
    let csv = csv.display().to_string();
    let png = dir.path().join("p.png").display().to_string();
    refused(
        &["plot", &csv, "--variable", "x", "-o", &png, "--y-min", "0"],
        "give both or neither",
    );
    refused(
        &[
            "plot",
            &csv,
            "--variable",
            "x",
            "-o",
            &png,
            "--label",
            "a",
            "--label",
            "b",
        ],
        "one label per file at most",
    );
    let output = cosimo([
        "plot",
        &csv,
        "--variable",
        "x",
        "-o",
        &png,
        "--y-min",
        "0",
        "--y-max",
        "3",
        "--label",
        "a",
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(std::path::Path::new(&png).is_file(), "the plot is written");
}

/// `--ignore-units FROM=TO` marks a connection of any system; one FMU alone has none.
#[test]
fn ignore_units_marks_a_connection_or_is_refused() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let dir = tempfile::tempdir().expect("a temporary folder");
    let out = dir.path().join("out.csv").display().to_string();
    let osc2 = fmu("Oscillator", 2).display().to_string();
    let osc3 = fmu("Oscillator", 3).display().to_string();
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "--stop-time", "0.01", "--output-file", &out];
        args.extend(extra);
        let output = cosimo(&args);
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).to_string(),
        )
    };
    let (code, stderr) = run(&[&osc2, "--ignore-units", "a.x=b.F"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("one FMU alone has none"), "{stderr}");
    let m1 = format!("m1={osc2}");
    let m2 = format!("m2={osc3}");
    let (code, stderr) = run(&[
        &m1,
        &m2,
        "--connect",
        "m1.x=m2.F",
        "--ignore-units",
        "m1.v=m2.F",
    ]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("no such connection FROM=TO; its connections are: m1.x=m2.F"),
        "{stderr}"
    );
    let (code, stderr) = run(&[
        &m1,
        &m2,
        "--connect",
        "m1.x=m2.F",
        "--ignore-units",
        "m1.x=m2.F",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
}

/// `--output-file` never overwrites an input of the run: the FMU, the system file, the input
/// file.
#[test]
fn the_results_never_overwrite_an_input_of_the_run() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let dir = tempfile::tempdir().expect("a temporary folder");
    let copy = dir.path().join("Oscillator.fmu");
    std::fs::copy(fmu("Oscillator", 2), &copy).expect("copies the FMU");
    let before = std::fs::read(&copy).expect("reads");
    let inputs = dir.path().join("in.csv");
    std::fs::write(&inputs, "time,F\n0,1\n").expect("writes");
    let refused = |args: &[&str], what: &str| {
        let output = cosimo(args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("an input of the run"), "{args:?}: {stderr}");
        assert!(stderr.contains(what), "{args:?}: {stderr}");
    };
    let fmu_path = copy.display().to_string();
    let input_path = inputs.display().to_string();
    refused(
        &["run", &fmu_path, "--output-file", &fmu_path],
        "Oscillator.fmu",
    );
    refused(
        &[
            "run",
            &fmu_path,
            "--input-file",
            &input_path,
            "--output-file",
            &input_path,
        ],
        "in.csv",
    );
    let system = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fmus/two-mass-force-force.json");
    let system_copy = dir.path().join("system.json");
    let text = std::fs::read_to_string(&system).expect("reads").replace(
        "../target/fmus/",
        &format!("{}/", fmu_pack::fmus_dir().display()),
    );
    std::fs::write(&system_copy, text).expect("writes");
    let system_path = system_copy.display().to_string();
    refused(
        &["run", &system_path, "--output-file", &system_path],
        "system.json",
    );
    assert_eq!(
        std::fs::read(&copy).expect("reads"),
        before,
        "the FMU is untouched"
    );
}
