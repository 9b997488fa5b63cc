//! Every setting of a system file (as `schemas/system.schema.json` lists them), walked under the
//! algorithms and estimators it belongs to: each changes what the run gives, compared with the
//! same file without it (the results' bytes, the FMI calls, a message only it makes), or is
//! refused with a message naming it. The step control's settings are walked under each of the
//! five estimators, also as `<cosimo:StepControl>` attributes of an SSP.

mod common;
mod walk;

use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{json, Value};
use walk::{example, example_json, oscillator_with_base_units, s, Effect, Ran, Walker};

use Effect::{Holds, Refused, Results};

const FILE: &str = "system file";

/// The FMU `model` of the project's set, FMI `version`.
fn fmu(model: &str, version: u8) -> String {
    common::fmu(model, version).display().to_string()
}

/// `run` on a copy of the example `name` changed by `edit`.
fn variant(w: &Walker, name: &str, edit: impl FnOnce(&mut Value)) -> Vec<String> {
    static COUNT: AtomicUsize = AtomicUsize::new(0);
    let mut system = example_json(name);
    edit(&mut system);
    let file = w.write(
        &format!("system-{}.json", COUNT.fetch_add(1, Ordering::Relaxed)),
        &system.to_string(),
    );
    s(&["run", &file])
}

/// A system file of its own.
fn system(w: &Walker, value: Value) -> Vec<String> {
    static COUNT: AtomicUsize = AtomicUsize::new(0);
    let file = w.write(
        &format!("own-{}.json", COUNT.fetch_add(1, Ordering::Relaxed)),
        &value.to_string(),
    );
    s(&["run", &file])
}

/// The settings of a system file a user chooses (not names, paths and structure), as the
/// schema lists them: `experiment.stepControl.rMin`, `component.subSteps`, ...
fn schema_settings() -> Vec<String> {
    let schema: Value =
        serde_json::from_str(include_str!("../schemas/system.schema.json")).expect("the schema");
    let structure = [
        "component.name",
        "component.fmu",
        "component.description",
        "connection.from",
        "connection.to",
        "connection.description",
        "experiment.rim.multibody",
        "experiment.rim.interfaces",
        "experiment.constraints.points",
        "experiment.constraints.equations",
        "experiment.constraints.forces",
    ];
    let mut settings = Vec::new();
    fn leaves(node: &Value, path: &str, out: &mut Vec<String>) {
        let Some(properties) = node.get("properties").and_then(Value::as_object) else {
            return;
        };
        for (key, child) in properties {
            let name = format!("{path}.{key}");
            if child.get("properties").is_some() {
                leaves(child, &name, out);
            } else {
                out.push(name);
            }
        }
    }
    let definitions = schema
        .get("definitions")
        .or_else(|| schema.get("$defs"))
        .and_then(Value::as_object)
        .expect("the schema's definitions");
    for kind in ["component", "connection", "experiment"] {
        leaves(&definitions[kind], kind, &mut settings);
    }
    settings.retain(|n| !structure.iter().any(|s| n.starts_with(s)));
    assert!(
        settings.len() > 40,
        "the schema lists the settings: {settings:?}"
    );
    settings
}

fn stderr_has(ran: &Ran, text: &str) -> bool {
    ran.stderr.contains(text)
}

/// Both finish, the FMI calls differ (the results may or may not).
fn calls_differ(without: &Ran, with: &Ran) -> Result<(), String> {
    if !(without.finished() && with.finished()) {
        return Err("expected both runs to finish".into());
    }
    match (without.calls(), with.calls()) {
        (Some(a), Some(b)) if a != b => Ok(()),
        (a, b) => Err(format!("FMI calls {a:?} without and {b:?} with it")),
    }
}

/// The run changed: its results or its ending differ.
fn changed(without: &Ran, with: &Ran) -> Result<(), String> {
    if !without.finished() {
        return Err("expected the run without it to finish".into());
    }
    if with.code != without.code || with.results != without.results {
        Ok(())
    } else {
        Err("the same results and ending with and without it".into())
    }
}

#[test]
fn every_setting_of_the_experiment_and_its_algorithms_changes_the_run_or_is_refused() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let mut w = Walker::new();
    let tm = "two-mass-force-force.json";
    let short = |x: &mut Value| x["experiment"]["stopTime"] = json!(0.05);
    let base = variant(&w, tm, short);
    let set = |w: &mut Walker, label: &str, edit: &dyn Fn(&mut Value), effect: Effect| {
        let with = variant(w, tm, |x| {
            short(x);
            edit(x)
        });
        w.compare(FILE, label, &base, &with, effect);
    };
    set(
        &mut w,
        "experiment.startTime",
        &|x| x["experiment"]["startTime"] = json!(0.02),
        Results,
    );
    set(
        &mut w,
        "experiment.stopTime",
        &|x| x["experiment"]["stopTime"] = json!(0.03),
        Results,
    );
    set(
        &mut w,
        "experiment.stepSize",
        &|x| x["experiment"]["stepSize"] = json!(0.002),
        Results,
    );
    set(
        &mut w,
        "experiment.outputInterval",
        &|x| x["experiment"]["outputInterval"] = json!(0.005),
        Results,
    );
    set(
        &mut w,
        "experiment.algorithm",
        &|x| x["experiment"]["algorithm"] = json!("gauss-seidel"),
        Results,
    );
    set(
        &mut w,
        "experiment.extrapolationOrder",
        &|x| x["experiment"]["extrapolationOrder"] = json!(2),
        Results,
    );
    set(
        &mut w,
        "experiment.parallel",
        &|x| x["experiment"]["parallel"] = json!(true),
        Holds(|without, with| {
            if without.finished()
                && with.results == without.results
                && !stderr_has(without, "--parallel")
                && stderr_has(with, "--parallel")
            {
                Ok(())
            } else {
                Err("expected the same results, placed on threads only with it".into())
            }
        }),
    );
    set(
        &mut w,
        "experiment.parallel",
        &|x| {
            x["experiment"]["parallel"] = json!(true);
            x["experiment"]["algorithm"] = json!("gauss-seidel");
        },
        Refused("cannot step in parallel"),
    );
    set(
        &mut w,
        "experiment.divergenceLimit",
        &|x| x["experiment"]["divergenceLimit"] = json!(0.01),
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
    set(
        &mut w,
        "experiment.algebraicLoops.solver",
        &|x| x["experiment"]["algebraicLoops"] = json!({"solver": "fixed-point"}),
        Holds(|without, with| {
            if without.finished()
                && with.finished()
                && with.results == without.results
                && stderr_has(with, "no algebraic loop")
                && !stderr_has(without, "no algebraic loop")
            {
                Ok(())
            } else {
                Err("expected the warning that the system has no loop only with it".into())
            }
        }),
    );
    set(
        &mut w,
        "experiment.corrector.maxIterations",
        &|x| x["experiment"]["corrector"] = json!({"maxIterations": 3}),
        Refused("applies to the implicit algorithm only"),
    );
    set(
        &mut w,
        "experiment.rim.fastStepSize",
        &|x| {
            x["experiment"]["rim"] =
                json!({"multibody": "mass1", "interfaces": [], "fastStepSize": 1e-4})
        },
        Refused("applies to the rim algorithm only"),
    );
    set(
        &mut w,
        "experiment.constraints.method",
        &|x| x["experiment"]["constraints"] = json!({"points": [], "equations": [], "forces": []}),
        Refused("applies to the constraint algorithm only"),
    );
    // The FMUs' tolerance reaches a component integrated by cosimo (Model Exchange).
    let me = |x: &mut Value| {
        short(x);
        x["components"][0]["interface"] = json!("me");
    };
    let me_base = variant(&w, tm, me);
    let tolerant = variant(&w, tm, |x| {
        me(x);
        x["experiment"]["tolerance"] = json!(1e-2);
    });
    w.compare(FILE, "experiment.tolerance", &me_base, &tolerant, Results);

    algebraic_loops(&mut w);
    corrector(&mut w);
    constraints(&mut w);
    rim(&mut w);
    components(&mut w);
    connections(&mut w);
    let mut required = schema_settings();
    // The step control has a walk of its own, under every estimator.
    required.retain(|n| !n.starts_with("experiment.stepControl"));
    w.covers(FILE, &required);
    w.finish("system file setting");
}

/// Two CubicGain FMUs in a loop (a.y -> b.u, b.y -> a.u) that Newton solves and fixed-point
/// iteration does not (loop gain about 16 at the solution).
fn algebraic_loops(w: &mut Walker) {
    let cubic = fmu("CubicGain", 2);
    let loop_system = |loops: Value| {
        let mut value = json!({
            "components": [
                {"name": "a", "fmu": cubic, "parameters": {"offset": 1.0, "gain": 0.5, "cubic": 0.1}},
                {"name": "b", "fmu": cubic, "parameters": {"offset": 2.0, "gain": -0.3, "cubic": 0.05}}
            ],
            "connections": [{"from": "a.y", "to": "b.u"}, {"from": "b.y", "to": "a.u"}],
            "experiment": {"stopTime": 0.01, "stepSize": 0.005}
        });
        if !loops.is_null() {
            value["experiment"]["algebraicLoops"] = loops;
        }
        value
    };
    let base = system(w, loop_system(Value::Null));
    for (label, loops, effect) in [
        (
            "experiment.algebraicLoops.solver",
            json!({"solver": "fixed-point"}),
            Holds(changed),
        ),
        (
            "experiment.algebraicLoops.solver",
            json!({"solver": "newton-finite-differences"}),
            Holds(changed),
        ),
        (
            "experiment.algebraicLoops.absoluteTolerance",
            json!({"absoluteTolerance": 0.5, "relativeTolerance": 0}),
            Results,
        ),
        (
            "experiment.algebraicLoops.relativeTolerance",
            json!({"relativeTolerance": 0.5, "absoluteTolerance": 0}),
            Results,
        ),
        (
            "experiment.algebraicLoops.maxIterations",
            json!({"maxIterations": 1}),
            Holds(changed),
        ),
    ] {
        let with = system(w, loop_system(loops));
        w.compare(FILE, label, &base, &with, effect);
    }
}

/// The implicit corrector, on the nonlinear contact oscillator (several Newton iterations).
fn corrector(w: &mut Walker) {
    let contact = "contact-oscillator.json";
    let implicit = |x: &mut Value| {
        let e = &mut x["experiment"];
        e.as_object_mut()
            .expect("an experiment")
            .remove("stepControl");
        e["algorithm"] = json!("implicit");
        e["stopTime"] = json!(2e-3);
        e["stepSize"] = json!(2e-5);
        e["outputInterval"] = json!(1e-4);
    };
    let base = variant(w, contact, implicit);
    for (label, corrector, effect) in [
        (
            "experiment.corrector.maxIterations",
            json!({"maxIterations": 1}),
            Holds(changed),
        ),
        (
            "experiment.corrector.absoluteTolerance",
            json!({"absoluteTolerance": 1e-2}),
            Results,
        ),
        (
            "experiment.corrector.relativeTolerance",
            json!({"relativeTolerance": 1e-1}),
            Results,
        ),
        (
            "experiment.corrector.reuseJacobian",
            json!({"reuseJacobian": true}),
            Holds(calls_differ),
        ),
        (
            "experiment.corrector.jacobian",
            json!({"jacobian": "components"}),
            Holds(calls_differ),
        ),
    ] {
        let with = variant(w, contact, |x| {
            implicit(x);
            x["experiment"]["corrector"] = corrector.clone();
        });
        w.compare(FILE, label, &base, &with, effect);
    }
    // The extension, on the extended example.
    let short = |x: &mut Value| x["experiment"]["stopTime"] = json!(0.02);
    let base = variant(w, "two-mass-extended.json", short);
    let integral = variant(w, "two-mass-extended.json", |x| {
        short(x);
        x["experiment"]["corrector"]["extension"] = json!("integral");
    });
    w.compare(
        FILE,
        "experiment.corrector.extension",
        &base,
        &integral,
        Results,
    );
}

/// Constraint coupling: the index-1 method's settings on the rigid link and the double pendulum,
/// Baumgarte's on the rigid link; each method refuses the other's.
fn constraints(w: &mut Walker) {
    let short = |x: &mut Value| x["experiment"]["stopTime"] = json!(0.05);
    let rigid = "rigid-link.json";
    let with_settings = |w: &Walker, name: &str, settings: Value| {
        variant(w, name, |x| {
            short(x);
            let c = x["experiment"]["constraints"]
                .as_object_mut()
                .expect("constraints");
            c.remove("method");
            c.remove("order");
            for (k, v) in settings.as_object().expect("settings") {
                c.insert(k.clone(), v.clone());
            }
        })
    };
    let index1 = with_settings(w, rigid, json!({}));
    let baumgarte = with_settings(w, rigid, json!({"method": "baumgarte"}));
    let pendulum = with_settings(w, "double-pendulum.json", json!({}));
    let cases: Vec<(&str, &Vec<String>, &str, Value, Effect)> = vec![
        (
            "experiment.constraints.method",
            &index1,
            rigid,
            json!({"method": "baumgarte"}),
            Results,
        ),
        (
            "experiment.constraints.order",
            &index1,
            rigid,
            json!({"order": 2}),
            Results,
        ),
        (
            "experiment.constraints.newtonIterations",
            &pendulum,
            "double-pendulum.json",
            json!({"newtonIterations": 3}),
            Results,
        ),
        (
            "experiment.constraints.newtonIterations",
            &index1,
            rigid,
            json!({"newtonIterations": 0}),
            Refused("at least 1 Newton iteration"),
        ),
        (
            "experiment.constraints.alpha",
            &baumgarte,
            rigid,
            json!({"method": "baumgarte", "alpha": 5}),
            Results,
        ),
        (
            "experiment.constraints.beta",
            &baumgarte,
            rigid,
            json!({"method": "baumgarte", "beta": 20}),
            Results,
        ),
        (
            "experiment.constraints.corrector",
            &baumgarte,
            rigid,
            json!({"method": "baumgarte", "corrector": true}),
            Results,
        ),
        (
            "experiment.constraints.alpha",
            &index1,
            rigid,
            json!({"alpha": 1e9}),
            Refused("constraints.alpha belongs to the baumgarte method"),
        ),
        (
            "experiment.constraints.beta",
            &baumgarte,
            rigid,
            json!({"method": "baumgarte", "beta": -5}),
            Refused("constraints.beta is -5"),
        ),
        (
            "experiment.constraints.corrector",
            &index1,
            rigid,
            json!({"corrector": true}),
            Refused("belongs to the baumgarte method"),
        ),
        (
            "experiment.constraints.order",
            &baumgarte,
            rigid,
            json!({"method": "baumgarte", "order": 7}),
            Refused("constraints.order belongs to the index1 method"),
        ),
        (
            "experiment.constraints.newtonIterations",
            &baumgarte,
            rigid,
            json!({"method": "baumgarte", "newtonIterations": 2}),
            Refused("belongs to the index1 method"),
        ),
    ];
    for (label, base, name, settings, effect) in cases {
        let with = with_settings(w, name, settings);
        w.compare(FILE, label, base, &with, effect);
    }
}

/// The reduced interface model on the single crane, its cylinder pushing off equilibrium from
/// the start (so that the interface accelerates).
fn rim(w: &mut Walker) {
    let crane = "crane-single.json";
    let moving = |x: &mut Value| {
        x["experiment"]["stopTime"] = json!(0.05);
        x["components"][1]["parameters"]["f_eq"] = json!(8000.0);
    };
    let base = variant(w, crane, moving);
    let with_rim = |w: &Walker, settings: Value| {
        variant(w, crane, |x| {
            moving(x);
            for (k, v) in settings.as_object().expect("settings") {
                x["experiment"]["rim"][k] = v.clone();
            }
        })
    };
    let outputs = json!({"effectiveMass": "outputs", "massOutputs": ["crane.M11"], "forceOutputs": ["crane.ft1"]});
    let from_outputs = with_rim(w, outputs.clone());
    let cases: Vec<(&str, &Vec<String>, Value, Effect)> = vec![
        (
            "experiment.rim.fastStepSize",
            &base,
            json!({"fastStepSize": 1e-4}),
            Results,
        ),
        (
            "experiment.rim.effectiveMass",
            &base,
            json!({"effectiveMass": "perturbation"}),
            Holds(calls_differ),
        ),
        (
            "experiment.rim.effectiveMass",
            &base,
            outputs.clone(),
            Holds(calls_differ),
        ),
        (
            "experiment.rim.massOutputs",
            &from_outputs,
            json!({"effectiveMass": "outputs", "massOutputs": ["crane.sd1"], "forceOutputs": ["crane.ft1"]}),
            Holds(changed),
        ),
        (
            "experiment.rim.forceOutputs",
            &from_outputs,
            json!({"effectiveMass": "outputs", "massOutputs": ["crane.M11"], "forceOutputs": ["crane.sd1"]}),
            Holds(changed),
        ),
        (
            "experiment.rim.massOutputs",
            &base,
            json!({"massOutputs": ["crane.M11"]}),
            Refused("rim.massOutputs is read only with rim.effectiveMass \"outputs\""),
        ),
        (
            "experiment.rim.forceOutputs",
            &base,
            json!({"effectiveMass": "perturbation", "forceOutputs": ["crane.ft1"]}),
            Refused("rim.forceOutputs is read only with"),
        ),
        (
            "experiment.rim.massOutputs",
            &from_outputs,
            json!({"effectiveMass": "outputs", "massOutputs": ["crane.nothing"], "forceOutputs": ["crane.ft1"]}),
            Refused("has no variable"),
        ),
        (
            "experiment.rim.integrator",
            &base,
            json!({"integrator": "held-force-exact"}),
            Results,
        ),
        (
            "experiment.rim.multibodyForce",
            &base,
            json!({"multibodyForce": "averaged"}),
            Results,
        ),
    ];
    for (label, base, settings, effect) in cases {
        let with = with_rim(w, settings);
        w.compare(FILE, label, base, &with, effect);
    }
    // Under rim no component takes sub-steps and no connection extrapolates.
    let sub_steps = variant(w, crane, |x| {
        moving(x);
        x["components"][1]["subSteps"] = json!(4);
    });
    w.compare(
        FILE,
        "component.subSteps",
        &base,
        &sub_steps,
        Refused("the rim algorithm steps the multibody component once per macro step"),
    );
    let order = variant(w, crane, |x| {
        moving(x);
        x["connections"][2]["extrapolationOrder"] = json!(1);
    });
    w.compare(
        FILE,
        "connection.extrapolationOrder",
        &base,
        &order,
        Refused("the rim algorithm holds every value"),
    );
}

/// A component's own settings.
fn components(w: &mut Walker) {
    let tm = "two-mass-force-force.json";
    let short = |x: &mut Value| x["experiment"]["stopTime"] = json!(0.05);
    let base = variant(w, tm, short);
    let edited = |w: &Walker, edit: &dyn Fn(&mut Value)| {
        variant(w, tm, |x| {
            short(x);
            edit(&mut x["components"][0]);
        })
    };
    let parameters = edited(w, &|c| c["parameters"]["x0"] = json!(0.3));
    w.compare(FILE, "component.parameters", &base, &parameters, Results);
    let sub_steps = edited(w, &|c| c["subSteps"] = json!(4));
    w.compare(FILE, "component.subSteps", &base, &sub_steps, Results);
    let me = edited(w, &|c| c["interface"] = json!("me"));
    w.compare(FILE, "component.interface", &base, &me, Results);

    // Isolation, the call timeout and worker groups, shown on an FMU that fails.
    let faulty = fmu("Faulty", 2);
    let osc = fmu("Oscillator", 2);
    let crashing = |failure: i32, f: Value, o: Value| {
        let mut value = json!({
            "components": [
                {"name": "f", "fmu": faulty, "parameters": {"failure": failure, "fail_at": 0.01}},
                {"name": "osc", "fmu": osc}
            ],
            "connections": [],
            "experiment": {"stopTime": 0.05, "stepSize": 0.01}
        });
        for (k, v) in f.as_object().expect("settings") {
            value["components"][0][k] = v.clone();
        }
        for (k, v) in o.as_object().expect("settings") {
            value["components"][1][k] = v.clone();
        }
        value
    };
    let in_process = system(w, crashing(6, json!({}), json!({})));
    let isolated = system(w, crashing(6, json!({"isolate": true}), json!({})));
    w.compare(
        FILE,
        "component.isolate",
        &in_process,
        &isolated,
        Holds(|without, with| {
            if stderr_has(without, "run with --isolate") && stderr_has(with, "the worker process") {
                Ok(())
            } else {
                Err("expected the abort to end cosimo without it and the worker with it".into())
            }
        }),
    );
    let apart = system(
        w,
        crashing(5, json!({"isolate": true}), json!({"isolate": true})),
    );
    let grouped = system(
        w,
        crashing(5, json!({"workerGroup": "g"}), json!({"workerGroup": "g"})),
    );
    w.compare(
        FILE,
        "component.workerGroup",
        &apart,
        &grouped,
        Holds(|without, with| {
            let shared = "hosting it and \"osc\"";
            if stderr_has(without, "SIGSEGV")
                && !stderr_has(without, shared)
                && stderr_has(with, shared)
            {
                Ok(())
            } else {
                Err(
                    "expected the crash to take the shared process of the group only with it"
                        .into(),
                )
            }
        }),
    );
    // The MPI rank: its effect (which rank steps the component) shows only under mpirun,
    // where tests/run_mpi.rs compares partitions; here the partition is checked.
    let partial = edited(w, &|c| c["rank"] = json!(1));
    w.walk_alone(FILE, "component.rank", &partial, |with| {
        if with.code == Some(2)
            && with
                .stderr
                .contains("has no \"rank\" while 1 other has one")
        {
            Ok(())
        } else {
            Err("expected a partition that leaves components out refused".into())
        }
    });
    // An endless loop: without a timeout the run would never end.
    let hanging = system(w, crashing(8, json!({"callTimeout": 0.3}), json!({})));
    w.walk_alone(FILE, "component.callTimeout", &hanging, |with| {
        if with.code == Some(1)
            && with
                .stderr
                .contains("did not return within the call timeout of 0.3 s")
        {
            Ok(())
        } else {
            Err("expected the endless call killed at the timeout".into())
        }
    });
}

/// A connection's own settings.
fn connections(w: &mut Walker) {
    let tm = "two-mass-force-force.json";
    let short = |x: &mut Value| x["experiment"]["stopTime"] = json!(0.05);
    let base = variant(w, tm, short);
    let edited = |w: &Walker, edit: &dyn Fn(&mut Value)| {
        variant(w, tm, |x| {
            short(x);
            edit(x);
        })
    };
    let factor = edited(w, &|x| x["connections"][4]["factor"] = json!(2.0));
    w.compare(FILE, "connection.factor", &base, &factor, Results);
    let offset = edited(w, &|x| x["connections"][4]["offset"] = json!(1.0));
    w.compare(FILE, "connection.offset", &base, &offset, Results);
    let order = edited(w, &|x| x["connections"][4]["extrapolationOrder"] = json!(2));
    w.compare(
        FILE,
        "connection.extrapolationOrder",
        &base,
        &order,
        Results,
    );
    let controlled = edited(w, &|x| x["experiment"]["stepControl"] = json!({}));
    let controlled_order = edited(w, &|x| {
        x["experiment"]["stepControl"] = json!({});
        x["connections"][4]["extrapolationOrder"] = json!(2);
    });
    w.compare(
        FILE,
        "connection.extrapolationOrder",
        &controlled,
        &controlled_order,
        Refused("under step control one order holds for every connection"),
    );
    let integral = edited(w, &|x| {
        x["connections"][0]["sourceIntegral"] = json!("x_int")
    });
    w.compare(
        FILE,
        "connection.sourceIntegral",
        &base,
        &integral,
        Refused("sourceIntegral is read by the integral extension"),
    );
    let half = edited(w, &|x| x["connections"][4]["halfStep"] = json!(true));
    w.compare(
        FILE,
        "connection.halfStep",
        &base,
        &half,
        Refused("halfStep needs the extended implicit coupling"),
    );

    // On the extended example: one force fewer on half steps, another integral named.
    let extended = "two-mass-extended.json";
    let ext = |x: &mut Value| {
        x["experiment"]["stopTime"] = json!(0.02);
        x["experiment"]["corrector"]["extension"] = json!("integral");
    };
    let ext_base = variant(w, extended, ext);
    let whole = variant(w, extended, |x| {
        ext(x);
        x["connections"][5]["halfStep"] = json!(false);
    });
    w.compare(FILE, "connection.halfStep", &ext_base, &whole, Results);
    let other = variant(w, extended, |x| {
        ext(x);
        x["connections"][0]["sourceIntegral"] = json!("Fc_int");
    });
    w.compare(
        FILE,
        "connection.sourceIntegral",
        &ext_base,
        &other,
        Results,
    );
    let derivative = variant(w, extended, |x| x["experiment"]["stopTime"] = json!(0.02));
    let without_integrals = variant(w, extended, |x| {
        x["experiment"]["stopTime"] = json!(0.02);
        for c in x["connections"].as_array_mut().expect("connections") {
            c.as_object_mut()
                .expect("a connection")
                .remove("sourceIntegral");
        }
    });
    // The derivative extension does not read them: said once.
    w.compare(
        FILE,
        "connection.sourceIntegral",
        &without_integrals,
        &derivative,
        Holds(|without, with| {
            if without.finished()
                && with.results == without.results
                && stderr_has(with, "only the integral extension reads")
            {
                Ok(())
            } else {
                Err("expected the same results and the warning that nothing reads them".into())
            }
        }),
    );

    // A value map, on an Integer connection: the stair's counter into the feedthrough model.
    let mapped = |map: Value| {
        let mut connection = json!({"from": "stair.counter", "to": "through.Int32_input"});
        if !map.is_null() {
            connection["valueMap"] = map;
        }
        json!({
            "components": [
                {"name": "stair", "fmu": fmu("Stair", 2)},
                {"name": "through", "fmu": fmu("Feedthrough", 2)}
            ],
            "connections": [connection],
            "experiment": {"stopTime": 2.5, "stepSize": 0.5}
        })
    };
    let plain = system(w, mapped(Value::Null));
    let map = system(
        w,
        mapped(json!([{"from": 1, "to": 10}, {"from": 2, "to": 20}])),
    );
    w.compare(FILE, "connection.valueMap", &plain, &map, Results);
    // Units: metres do not convert to newtons once the units have base units.
    let si = oscillator_with_base_units(w);
    let joined = |ignore: bool| {
        json!({
            "components": [{"name": "m1", "fmu": si}, {"name": "m2", "fmu": si}],
            "connections": [{"from": "m1.x", "to": "m2.F", "ignoreUnits": ignore}],
            "experiment": {"stopTime": 0.05}
        })
    };
    let strict = system(w, joined(false));
    let ignoring = system(w, joined(true));
    w.compare(
        FILE,
        "connection.ignoreUnits",
        &strict,
        &ignoring,
        Holds(|without, with| {
            if without.code == Some(2) && stderr_has(without, "ignoreUnits") && with.finished() {
                Ok(())
            } else {
                Err("expected metres to newtons refused without it and passed with it".into())
            }
        }),
    );
}

/// The estimators and the algorithm each belongs to.
const ESTIMATORS: [(&str, &str); 5] = [
    ("ExLocal", "jacobi"),
    ("ExMilne", "jacobi"),
    ("ExSLocal", "jacobi"),
    ("ImMilne", "implicit"),
    ("ImSLocal", "implicit"),
];

/// Every setting of the step control under every estimator: the state tolerances and the
/// states named act under the state-based estimators and are refused by the coupling-based
/// ones; the rest act under all.
#[test]
fn step_control_settings_act_under_every_estimator() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let mut w = Walker::new();
    let states = json!({"positions": ["mass1.x", "mass2.x"], "velocities": ["mass1.v", "mass2.v"]});
    for (estimator, algorithm) in ESTIMATORS {
        let state_based = !estimator.ends_with("SLocal");
        let control = |extra: &Value| {
            let mut control = json!({"estimator": estimator});
            if state_based {
                control["positions"] = states["positions"].clone();
                control["velocities"] = states["velocities"].clone();
            }
            for (k, v) in extra.as_object().expect("settings") {
                control[k] = v.clone();
            }
            control
        };
        let file = |w: &Walker, extra: Value| {
            variant(w, "two-mass-force-force.json", |x| {
                x["experiment"]["stopTime"] = json!(0.05);
                x["experiment"]["algorithm"] = json!(algorithm);
                x["experiment"]["stepControl"] = control(&extra);
            })
        };
        let base = file(&w, json!({}));
        let refused_here = "measures the coupling variables";
        let state = |value: Value| {
            if state_based {
                (value, Results)
            } else {
                (value, Refused(refused_here))
            }
        };
        let cases: Vec<(&str, (Value, Effect))> = vec![
            (
                "relativeTolerance",
                state(json!({"relativeTolerance": 1e-3})),
            ),
            (
                "positionTolerance",
                state(json!({"positionTolerance": 1e-14})),
            ),
            (
                "velocityTolerance",
                state(json!({"velocityTolerance": 1e-3})),
            ),
            (
                "positions",
                state(
                    json!({"positions": ["mass1.v", "mass2.v"], "velocities": ["mass1.x", "mass2.x"]}),
                ),
            ),
            ("velocities", state(json!({"velocities": ["mass1.v"]}))),
            // Against a small absolute tolerance, which would dominate the weights otherwise.
            (
                "couplingRelativeTolerance",
                (
                    json!({"couplingAbsoluteTolerance": 1e-6, "couplingRelativeTolerance": 1e-6}),
                    Results,
                ),
            ),
            (
                "couplingAbsoluteTolerance",
                (json!({"couplingAbsoluteTolerance": 1e-4}), Results),
            ),
            ("safetyFactor", (json!({"safetyFactor": 1}), Results)),
            ("rMin", (json!({"rMin": 0.9}), Results)),
            ("rMax", (json!({"rMax": 4}), Results)),
            ("maxStepSize", (json!({"maxStepSize": 0.0015}), Results)),
            ("variableOrder", (json!({"variableOrder": false}), Results)),
            ("maxOrder", (json!({"maxOrder": 1}), Results)),
        ];
        let small_atol = file(&w, json!({"couplingAbsoluteTolerance": 1e-6}));
        for (setting, (extra, effect)) in cases {
            let with = file(&w, extra);
            let label = format!("experiment.stepControl.{setting} ({estimator})");
            let without = if setting == "couplingRelativeTolerance" {
                &small_atol
            } else {
                &base
            };
            w.compare(FILE, &label, without, &with, effect);
        }
        // The estimator itself, against the algorithm's default (ExSLocal, ImSLocal).
        let default = variant(&w, "two-mass-force-force.json", |x| {
            x["experiment"]["stopTime"] = json!(0.05);
            x["experiment"]["algorithm"] = json!(algorithm);
            x["experiment"]["stepControl"] = json!({});
        });
        let effect = if state_based {
            Results
        } else {
            Holds(|without, with| {
                if without.finished() && without.results == with.results {
                    Ok(())
                } else {
                    Err("expected the algorithm's default estimator to give the same run".into())
                }
            })
        };
        w.compare(
            FILE,
            &format!("experiment.stepControl.estimator ({estimator})"),
            &default,
            &base,
            effect,
        );
    }
    // At a fixed order the highest order and, under ImMilne, the coupling tolerances do nothing.
    let fixed = |w: &Walker, extra: Value| {
        variant(w, "two-mass-force-force.json", |x| {
            x["experiment"]["stopTime"] = json!(0.05);
            x["experiment"]["algorithm"] = json!("implicit");
            let mut control = json!({"estimator": "ImMilne", "variableOrder": false});
            for (k, v) in extra.as_object().expect("settings") {
                control[k] = v.clone();
            }
            x["experiment"]["stepControl"] = control;
        })
    };
    let base = fixed(&w, json!({}));
    for (setting, extra, message) in [
        (
            "maxOrder",
            json!({"maxOrder": 2}),
            "experiment.stepControl.maxOrder is the highest order",
        ),
        (
            "couplingRelativeTolerance",
            json!({"couplingRelativeTolerance": 1e-5}),
            "but the order is fixed (experiment.stepControl.variableOrder)",
        ),
        (
            "couplingAbsoluteTolerance",
            json!({"couplingAbsoluteTolerance": 1e-4}),
            "but the order is fixed",
        ),
    ] {
        let with = fixed(&w, extra);
        w.compare(
            FILE,
            &format!("experiment.stepControl.{setting} (fixed order)"),
            &base,
            &with,
            Refused(message),
        );
    }
    // The experiment's extrapolation order is the highest order under variable order.
    let order = |w: &Walker, extra: Value| {
        variant(w, "two-mass-force-force.json", |x| {
            x["experiment"]["stopTime"] = json!(0.05);
            x["experiment"]["stepControl"] = json!({});
            for (k, v) in extra.as_object().expect("settings") {
                x["experiment"][k] = v.clone();
            }
        })
    };
    let base = order(&w, json!({}));
    let highest = order(&w, json!({"extrapolationOrder": 1}));
    w.compare(
        FILE,
        "experiment.extrapolationOrder (variable order)",
        &base,
        &highest,
        Results,
    );
    let clash = variant(&w, "two-mass-force-force.json", |x| {
        x["experiment"]["stopTime"] = json!(0.05);
        x["experiment"]["extrapolationOrder"] = json!(1);
        x["experiment"]["stepControl"] = json!({"maxOrder": 3});
    });
    w.compare(
        FILE,
        "experiment.extrapolationOrder (variable order)",
        &base,
        &clash,
        Refused("disagree"),
    );
    // Every setting of the schema's stepControl under every estimator.
    let required: Vec<String> = schema_settings()
        .into_iter()
        .filter_map(|n| {
            n.strip_prefix("experiment.stepControl.")
                .map(str::to_string)
        })
        .flat_map(|setting| {
            ESTIMATORS.map(|(e, _)| format!("experiment.stepControl.{setting} ({e})"))
        })
        .collect();
    w.covers(FILE, &required);
    step_control_in_an_ssp(&mut w);
    w.finish("step control setting");
}

/// The same settings as `<cosimo:StepControl>` attributes of an SSP, under ImMilne (which reads
/// them all); the coupling-based ImSLocal refuses the state settings.
fn step_control_in_an_ssp(w: &mut Walker) {
    let folder = w.path("adaptive.ssp");
    std::fs::create_dir_all(&folder).expect("creates the SSP folder");
    let text = std::fs::read_to_string(example(
        "two-mass-implicit-adaptive.ssp/SystemStructure.ssd",
    ))
    .expect("reads the SSD")
    .replace(
        "../../target/fmus",
        &fmu_pack::fmus_dir().display().to_string(),
    );
    let original = r#"<cosimo:StepControl estimator="ImSLocal" couplingRelativeTolerance="1e-4" couplingAbsoluteTolerance="1e-3" maxOrder="3"/>"#;
    assert!(text.contains(original), "the SSD has its step control");
    let ssd = |name: &str, attributes: &str| {
        let file = folder.join(name);
        std::fs::write(
            &file,
            text.replace(original, &format!("<cosimo:StepControl {attributes}/>")),
        )
        .expect("writes the SSD");
        s(&[
            "run",
            &file.display().to_string(),
            "--stop-time",
            "0.05",
            "--step-size",
            "1e-3",
        ])
    };
    let names = r#"estimator="ImMilne" positions="mass1.x mass2.x" velocities="mass1.v mass2.v""#;
    let base = ssd("base.ssd", names);
    for (attribute, value) in [
        ("relativeTolerance", "1e-3"),
        ("positionTolerance", "1e-14"),
        ("velocityTolerance", "1e-3"),
        ("couplingAbsoluteTolerance", "1e-6"),
        ("safetyFactor", "1"),
        ("rMin", "0.9"),
        ("rMax", "4"),
        ("maxStepSize", "0.0015"),
        ("variableOrder", "false"),
        ("maxOrder", "1"),
    ] {
        let with = ssd(
            &format!("{attribute}.ssd"),
            &format!(r#"{names} {attribute}="{value}""#),
        );
        w.compare(
            "SSP",
            &format!("<cosimo:StepControl {attribute}>"),
            &base,
            &with,
            Results,
        );
    }
    // The coupling relative tolerance against a small absolute one.
    let small = ssd(
        "small.ssd",
        &format!(r#"{names} couplingAbsoluteTolerance="1e-6""#),
    );
    let relative = ssd(
        "relative.ssd",
        &format!(r#"{names} couplingAbsoluteTolerance="1e-6" couplingRelativeTolerance="1e-6""#),
    );
    w.compare(
        "SSP",
        "<cosimo:StepControl couplingRelativeTolerance>",
        &small,
        &relative,
        Results,
    );
    let fewer = ssd(
        "positions.ssd",
        r#"estimator="ImMilne" positions="mass1.v mass2.v" velocities="mass1.x mass2.x""#,
    );
    w.compare(
        "SSP",
        "<cosimo:StepControl positions>",
        &base,
        &fewer,
        Results,
    );
    let fewer = ssd(
        "velocities.ssd",
        r#"estimator="ImMilne" positions="mass1.x mass2.x" velocities="mass1.v""#,
    );
    w.compare(
        "SSP",
        "<cosimo:StepControl velocities>",
        &base,
        &fewer,
        Results,
    );
    let coupling = ssd("coupling.ssd", r#"estimator="ImSLocal""#);
    let refused = ssd(
        "refused.ssd",
        r#"estimator="ImSLocal" relativeTolerance="1e-3""#,
    );
    w.compare(
        "SSP",
        "<cosimo:StepControl estimator>",
        &coupling,
        &refused,
        Refused("<cosimo:StepControl relativeTolerance> weighs or names states"),
    );
    w.compare(
        "SSP",
        "<cosimo:StepControl estimator>",
        &coupling,
        &base,
        Results,
    );
}
