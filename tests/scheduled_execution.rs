//! FMI 3 Scheduled Execution through the whole tool: the kit's ScheduledCounter (an SE FMU
//! with a 10 ms partition of priority 1, a 20 ms partition of priority 2 whose output depends
//! on the first, and a countdown partition the FMU schedules through `clockUpdate`) run by the
//! `cosimo` binary alone, in worker processes and coupled to a Co-Simulation FMU; what cannot
//! be honoured is refused by name.
//!
//! The expectations are computed here from the model's documented formulas (its module
//! documentation), never from cosimo's output: fast at 0.01 i, slow at 0.02 j after the fast
//! tick of the same instant, burst at 0.02 j + 0.005 for (j + 1) mod 3 = 0, kick when ticked;
//! `trace` folds the partitions' ids (fast 1, slow 2, burst 3, kick 4) in activation order.

mod common;

use std::path::Path;

use common::{cosimo, cosimo_ok, fmu, read_results, show, temp_dir};

/// Times in units of 0.5 ms, so that instants compare exactly.
const UNIT: f64 = 0.0005;
const FAST: i64 = 20;
const SLOW: i64 = 40;
const BURST_DELAY: i64 = 10;
/// (time in units, priority, id) of every activation up to `until` units, with `kicks` (in
/// units) ticking the triggered partition, in the order the FMI standard asks for: time, then
/// priority (the smaller first).
fn activations(until: i64, kicks: &[i64]) -> Vec<(i64, u32, i32)> {
    let mut all: Vec<(i64, u32, i32)> = kicks
        .iter()
        .filter(|&&k| k <= until)
        .map(|&k| (k, 0, 4))
        .collect();
    for i in 0..=until / FAST {
        all.push((i * FAST, 1, 1));
    }
    for j in 0..=until / SLOW {
        all.push((j * SLOW, 2, 2));
        if (j + 1) % 3 == 0 && j * SLOW + BURST_DELAY <= until {
            all.push((j * SLOW + BURST_DELAY, 3, 3));
        }
    }
    all.sort();
    all
}

/// What the model's variables hold after every activation up to `t` seconds.
struct Expected {
    counter: f64,
    slow_count: f64,
    y: f64,
    bursts: f64,
    total: f64,
    trace: f64,
    fifth: f64,
    kicks: f64,
}

fn expected(t: f64, kicks_at: &[i64]) -> Expected {
    let until = (t / UNIT).round() as i64;
    let (mut counter, mut slow, mut y, mut bursts, mut trace) = (0i64, 0i64, 0i64, 0i64, 0i64);
    let mut kicks = 0i64;
    for (_, _, id) in activations(until, kicks_at) {
        match id {
            1 => counter += 1,
            2 => {
                slow += 1;
                y = counter;
            }
            3 => bursts += 1,
            _ => kicks += 1,
        }
        trace = (trace * 5 + i64::from(id)) % (1 << 30);
    }
    Expected {
        counter: counter as f64,
        slow_count: slow as f64,
        y: y as f64,
        bursts: bursts as f64,
        total: (slow + 10 * bursts) as f64,
        trace: trace as f64,
        fifth: (counter / 5) as f64,
        kicks: kicks as f64,
    }
}

/// Run `target` (an FMU or a system) with `args` and return the results table.
fn run(target: &Path, args: &[&str]) -> cosimo::results::Table {
    let dir = temp_dir();
    let out = dir.path().join("out.csv");
    let mut all = vec![
        "run".to_string(),
        target.display().to_string(),
        "-q".into(),
        "-o".into(),
        out.display().to_string(),
    ];
    all.extend(args.iter().map(|s| s.to_string()));
    cosimo_ok(&all);
    read_results(&out)
}

/// Check every row of a run of ScheduledCounter (columns named with `prefix`), whose
/// triggered partition ticked at `kicks` (in units).
fn check_trace(table: &cosimo::results::Table, prefix: &str, label: &str, kicks: &[i64]) {
    let col = |name: &str| {
        let name = format!("{prefix}{name}");
        let i = table
            .column(&name)
            .unwrap_or_else(|| panic!("{label}: no column {name} in {:?}", table.columns()));
        table.values(i).to_vec()
    };
    let names = [
        "counter",
        "slow_count",
        "y",
        "bursts",
        "total",
        "trace",
        "fifth",
        "kicks",
    ];
    let columns = names.map(col);
    assert!(
        table.time().len() >= 5,
        "{label}: {} rows",
        table.time().len()
    );
    for (row, &t) in table.time().iter().enumerate() {
        let e = expected(t, kicks);
        let want = [
            e.counter,
            e.slow_count,
            e.y,
            e.bursts,
            e.total,
            e.trace,
            e.fifth,
            e.kicks,
        ];
        for ((name, got), want) in names.iter().zip(&columns).zip(want) {
            assert_eq!(got[row], want, "{label}: {name} at t = {t}");
        }
    }
}

#[test]
fn partitions_run_in_time_and_priority_order_and_give_the_models_trace() {
    let se = fmu("ScheduledCounter", 3);
    // A step equal to the fast period, a smaller one and one that divides none of them (the
    // activations inside a step run in order all the same).
    for step in ["0.01", "0.005", "0.03"] {
        let table = run(&se, &["--stop-time", "0.3", "--step-size", step]);
        check_trace(&table, "", &format!("step {step}"), &[]);
        let last = *table.time().last().unwrap();
        assert!((last - 0.3).abs() < 1e-12, "step {step}: ends at {last}");
    }
    // The trace is long enough to see the bursts and the shared total.
    let e = expected(0.3, &[]);
    assert_eq!((e.bursts, e.slow_count), (5.0, 16.0));
}

#[test]
fn partitions_run_the_same_in_a_worker_process() {
    let se = fmu("ScheduledCounter", 3);
    let table = run(
        &se,
        &["--stop-time", "0.2", "--step-size", "0.01", "--isolate"],
    );
    check_trace(&table, "", "--isolate", &[]);
}

/// ScheduledCounter and the Co-Simulation Gain (k = 3) in a loop: se.y -> gain.u,
/// gain.y -> se.u.
fn write_system(dir: &Path, algorithm: &str, extra: serde_json::Value) -> std::path::PathBuf {
    let mut connections = vec![
        serde_json::json!({ "from": "se.y", "to": "gain.u" }),
        serde_json::json!({ "from": "gain.y", "to": "se.u" }),
    ];
    if let Some(more) = extra.as_array() {
        connections.extend(more.iter().cloned());
    }
    let system = serde_json::json!({
        "components": [
            { "name": "se", "fmu": fmu("ScheduledCounter", 3) },
            { "name": "gain", "fmu": fmu("Gain", 3), "parameters": { "k": 3.0 } }
        ],
        "connections": connections,
        "experiment": {
            "startTime": 0,
            "stopTime": 0.2,
            "stepSize": 0.01,
            "algorithm": algorithm
        }
    });
    let path = dir.join("se-gain.json");
    std::fs::write(&path, serde_json::to_string_pretty(&system).unwrap()).unwrap();
    path
}

#[test]
fn a_scheduled_execution_fmu_exchanges_values_with_a_co_simulation_fmu() {
    let dir = temp_dir();
    for algorithm in ["jacobi", "gauss-seidel"] {
        let system = write_system(dir.path(), algorithm, serde_json::json!([]));
        // Inputs too: every output of both, and the inputs the connections set.
        let mut args = Vec::new();
        for name in [
            "se.counter",
            "se.slow_count",
            "se.y",
            "se.bursts",
            "se.total",
            "se.trace",
            "se.fifth",
            "se.kicks",
            "se.acc",
            "se.u",
            "gain.u",
            "gain.y",
        ] {
            args.extend(["--output-variable", name]);
        }
        let table = run(&system, &args);
        check_trace(&table, "se.", algorithm, &[]);
        let col = |name: &str| table.values(table.column(name).unwrap()).to_vec();
        let (y, gain_u, gain_y, u, acc) = (
            col("se.y"),
            col("gain.u"),
            col("gain.y"),
            col("se.u"),
            col("se.acc"),
        );
        for (row, &t) in table.time().iter().enumerate() {
            assert_eq!(gain_u[row], y[row], "{algorithm}: gain.u = se.y at t = {t}");
            assert_eq!(gain_y[row], 3.0 * y[row], "{algorithm}: gain.y at t = {t}");
            assert_eq!(u[row], gain_y[row], "{algorithm}: se.u = gain.y at t = {t}");
            if row > 0 {
                // The one fast activation of the step (t - 0.01, t] read the input held
                // over the step: the value at the step's start.
                assert_eq!(
                    acc[row] - acc[row - 1],
                    u[row - 1],
                    "{algorithm}: acc grows by the held input at t = {t}"
                );
            }
        }
        assert!(
            *acc.last().unwrap() > 0.0,
            "{algorithm}: the input reached the FMU"
        );
    }
}

#[test]
fn an_input_file_ticks_the_triggered_partition() {
    let dir = temp_dir();
    let input = dir.path().join("in.csv");
    // fmusim's convention: the clock ticks where its column turns 1 (at 0.035 and 0.125 s,
    // instants no other partition has).
    std::fs::write(
        &input,
        "time,kick\n0,0\n0.035,1\n0.05,0\n0.1,0\n0.125,1\n0.13,0\n",
    )
    .unwrap();
    let se = fmu("ScheduledCounter", 3);
    for isolate in [false, true] {
        let mut args = vec![
            "--stop-time",
            "0.2",
            "--step-size",
            "0.01",
            "--input-file",
            input.to_str().unwrap(),
        ];
        if isolate {
            args.push("--isolate");
        }
        let table = run(&se, &args);
        check_trace(&table, "", &format!("kicks, isolate {isolate}"), &[70, 250]);
        let kicks = table.values(table.column("kicks").unwrap());
        assert_eq!(*kicks.last().unwrap(), 2.0);
    }
}

fn refused(args: &[&str], needles: &[&str]) {
    let output = cosimo(args);
    assert_eq!(output.status.code(), Some(2), "{}", show(&output));
    let err = String::from_utf8_lossy(&output.stderr);
    for needle in needles {
        assert!(
            err.contains(needle),
            "missing {needle:?}: {}",
            show(&output)
        );
    }
}

#[test]
fn what_scheduled_execution_cannot_honour_is_refused_by_name() {
    let dir = temp_dir();
    let se = fmu("ScheduledCounter", 3);
    // An input file cannot tick a partition the FMU's own interval schedules.
    let input = dir.path().join("in.csv");
    std::fs::write(&input, "time,fast\n0,0\n0.05,1\n").unwrap();
    refused(
        &[
            "run",
            se.to_str().unwrap(),
            "-q",
            "--input-file",
            input.to_str().unwrap(),
        ],
        &["\"fast\"", "Scheduled Execution"],
    );
    // Its output clocks tick between communication points: no clock connection from them.
    let consumer_system = serde_json::json!({
        "components": [
            { "name": "se", "fmu": fmu("ScheduledCounter", 3) },
            { "name": "consumer", "fmu": fmu("ClockConsumer", 3) }
        ],
        "connections": [ { "from": "se.fifth", "to": "consumer.trigger" } ],
        "experiment": { "startTime": 0, "stopTime": 0.1, "stepSize": 0.01 }
    });
    let path = dir.path().join("se-consumer.json");
    std::fs::write(&path, consumer_system.to_string()).unwrap();
    refused(
        &["run", path.to_str().unwrap(), "-q"],
        &["se.fifth", "Scheduled Execution"],
    );
    // An algorithm that repeats steps would run partitions twice.
    let system = write_system(dir.path(), "implicit", serde_json::json!([]));
    refused(&["run", system.to_str().unwrap(), "-q"], &["se"]);
    // Its partitions are activated, not stepped to events: --event-mode would do nothing.
    refused(
        &["run", se.to_str().unwrap(), "-q", "--event-mode"],
        &["--event-mode"],
    );
    // It has one interface: nothing to choose.
    refused(
        &["run", se.to_str().unwrap(), "-q", "--interface", "cs"],
        &["--interface cs"],
    );
}

#[test]
fn validate_checks_the_scheduled_execution_exports() {
    let se = fmu("ScheduledCounter", 3);
    let output = cosimo_ok(["validate", se.to_str().unwrap()]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(text.contains("0 errors, 0 warnings"), "{text}");
}
