//! Resolving systems against model descriptions, unit conversion, and the coupling graph:
//! evaluation order, algebraic loops, propagation and Gauss-Seidel order.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use cosimo::fmu::description::{from_str, ModelDescription, StartValue, VariableType};
use cosimo::settings::{Algorithm, AlgorithmKind, Experiment};
use cosimo::system::graph::{build, describe_block, Block, CouplingGraph};
use cosimo::system::resolve::{resolve, ResolvedSystem};
use cosimo::system::{config, units, Component, Connection, Endpoint, System};

/// How an output of a hand-written model depends on the inputs.
enum Deps {
    /// `dependencies` lists these inputs (empty: none).
    On(&'static [&'static str]),
    /// Listed without a `dependencies` attribute: may depend on every known.
    All,
    /// Not listed in the model structure at all.
    Unlisted,
}

/// An FMI 3 model with Float64 inputs and outputs.
fn model(name: &str, inputs: &[&str], outputs: &[(&str, Deps)]) -> Arc<ModelDescription> {
    let mut vars = String::new();
    let vr = |n: &str| {
        inputs
            .iter()
            .position(|i| *i == n)
            .map(|p| p + 1)
            .or_else(|| {
                outputs
                    .iter()
                    .position(|(o, _)| *o == n)
                    .map(|p| p + 1 + inputs.len())
            })
            .unwrap()
    };
    for i in inputs {
        vars += &format!(
            "<Float64 name=\"{i}\" valueReference=\"{}\" causality=\"input\" start=\"0\"/>\n",
            vr(i)
        );
    }
    for (o, _) in outputs {
        vars += &format!(
            "<Float64 name=\"{o}\" valueReference=\"{}\" causality=\"output\"/>\n",
            vr(o)
        );
    }
    let mut structure = String::new();
    for (o, deps) in outputs {
        match deps {
            Deps::On(list) => {
                let list: Vec<String> = list.iter().map(|d| vr(d).to_string()).collect();
                structure += &format!(
                    "<Output valueReference=\"{}\" dependencies=\"{}\"/>\n",
                    vr(o),
                    list.join(" ")
                );
            }
            Deps::All => structure += &format!("<Output valueReference=\"{}\"/>\n", vr(o)),
            Deps::Unlisted => {}
        }
    }
    let xml = format!(
        r#"<?xml version="1.0"?>
<fmiModelDescription fmiVersion="3.0" modelName="{name}" instantiationToken="t">
  <CoSimulation modelIdentifier="{name}"/>
  <ModelVariables>
{vars}  </ModelVariables>
  <ModelStructure>
{structure}  </ModelStructure>
</fmiModelDescription>"#
    );
    Arc::new(from_str(&xml, Path::new("test.xml")).expect("the test model parses"))
}

/// A system of named components (model descriptions given) and `from -> to` connections.
fn system(
    components: &[(&str, &Arc<ModelDescription>)],
    connections: &[(&str, &str)],
) -> cosimo::Result<ResolvedSystem> {
    let system = System {
        components: components
            .iter()
            .map(|(name, _)| Component {
                name: name.to_string(),
                fmu: PathBuf::from(format!("{name}.fmu")),
                start_values: vec![],
                sub_steps: 1,
                isolate: None,
                call_timeout: None,
                worker_group: None,
                interface: None,
                rank: None,
            })
            .collect(),
        connections: connections
            .iter()
            .map(|(f, t)| Connection::new(Endpoint::parse(f).unwrap(), Endpoint::parse(t).unwrap()))
            .collect(),
        experiment: Experiment::default(),
    };
    resolve(
        &system,
        components.iter().map(|(_, d)| Arc::clone(d)).collect(),
    )
}

fn block(connections: &[usize], is_loop: bool) -> Block {
    Block {
        connections: connections.to_vec(),
        is_loop,
    }
}

/// A packed FMU's model description.
fn fmu(model: &str, version: u8) -> Arc<ModelDescription> {
    let path = fmu_pack::fmu_path(model, version);
    cosimo::fmu::Fmu::open(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .description()
        .clone()
}

fn passthrough(name: &str) -> Arc<ModelDescription> {
    model(name, &["u"], &[("y", Deps::On(&["u"]))])
}

// ------------------------------------------------------------------------------------------
// The coupling graph

#[test]
fn a_chain_is_evaluated_from_its_source_without_loops() {
    let end = model("End", &["u"], &[]);
    let mid = passthrough("Mid");
    let src = model("Src", &[], &[("y", Deps::On(&[]))]);
    // Declared backwards: the graph must still evaluate src -> mid before mid -> end.
    let s = system(
        &[("end", &end), ("mid", &mid), ("src", &src)],
        &[("mid.y", "end.u"), ("src.y", "mid.u")],
    )
    .unwrap();
    let g = build(&s);
    assert_eq!(
        g,
        CouplingGraph {
            blocks: vec![block(&[1], false), block(&[0], false)],
            gauss_seidel_order: vec![2, 1, 0],
            propagates: vec![false, true],
        }
    );
}

#[test]
fn two_masses_coupled_force_force_have_no_algebraic_loop() {
    let (osc2, spring, osc3) = (
        fmu("Oscillator", 2),
        fmu("CouplingSpring", 2),
        fmu("Oscillator", 3),
    );
    let s = system(
        &[("mass1", &osc2), ("spring", &spring), ("mass2", &osc3)],
        &[
            ("mass1.x", "spring.x1"),
            ("mass1.v", "spring.v1"),
            ("mass2.x", "spring.x2"),
            ("mass2.v", "spring.v2"),
            ("spring.F1", "mass1.F"),
            ("spring.F2", "mass2.F"),
        ],
    )
    .unwrap();
    let g = build(&s);
    assert!(g.blocks.iter().all(|b| !b.is_loop), "{:?}", g.blocks);
    let order: Vec<usize> = g
        .blocks
        .iter()
        .flat_map(|b| b.connections.clone())
        .collect();
    assert_eq!(order, [0, 1, 2, 3, 4, 5]);
    // The spring's inputs feed through to F1 and F2; the masses' F reaches only a.
    assert_eq!(g.propagates, [true, true, true, true, false, false]);
    assert_eq!(g.gauss_seidel_order, [0, 1, 2]);
    for c in &s.connections {
        assert_eq!(
            (c.scale, c.shift, c.var_type),
            (1.0, 0.0, VariableType::Float64)
        );
    }
}

#[test]
fn the_two_mass_force_force_system_with_acceleration_output_still_has_no_loop() {
    // A tail on a's feedthrough: mass1.a depends on F, but nothing reads it back.
    let (osc, spring) = (fmu("Oscillator", 3), fmu("CouplingSpring", 3));
    let probe = model("Probe", &["u"], &[]);
    let s = system(
        &[("mass1", &osc), ("spring", &spring), ("probe", &probe)],
        &[
            ("spring.F1", "mass1.F"),
            ("mass1.a", "probe.u"),
            ("mass1.x", "spring.x1"),
        ],
    )
    .unwrap();
    let g = build(&s);
    assert_eq!(
        g.blocks,
        [block(&[2], false), block(&[0], false), block(&[1], false)]
    );
    assert_eq!(g.propagates, [true, false, true]);
}

#[test]
fn a_feedthrough_loop_between_two_components_is_one_block() {
    let (a, b) = (passthrough("A"), passthrough("B"));
    let s = system(&[("a", &a), ("b", &b)], &[("a.y", "b.u"), ("b.y", "a.u")]).unwrap();
    let g = build(&s);
    assert_eq!(g.blocks, [block(&[0, 1], true)]);
    assert_eq!(describe_block(&s, &g.blocks[0]), "a.y -> b.u, b.y -> a.u");
    assert_eq!(g.propagates, [true, true]);
    assert_eq!(g.gauss_seidel_order, [0, 1]);
}

#[test]
fn a_loop_with_a_head_and_a_tail_is_ordered_between_them() {
    let src = model("Src", &[], &[("y", Deps::On(&[]))]);
    let a = model("A", &["u", "w"], &[("y", Deps::On(&["u", "w"]))]);
    let b = model(
        "B",
        &["u"],
        &[("y", Deps::On(&["u"])), ("z", Deps::On(&["u"]))],
    );
    let c = passthrough("C");
    let d = model("D", &["u"], &[]);
    let s = system(
        &[("d", &d), ("c", &c), ("b", &b), ("a", &a), ("src", &src)],
        &[
            ("c.y", "d.u"),   // 0: tail end
            ("b.z", "c.u"),   // 1: tail start
            ("b.y", "a.u"),   // 2: loop
            ("src.y", "a.w"), // 3: head
            ("a.y", "b.u"),   // 4: loop
        ],
    )
    .unwrap();
    let g = build(&s);
    assert_eq!(
        g.blocks,
        [
            block(&[3], false),
            block(&[2, 4], true),
            block(&[1], false),
            block(&[0], false)
        ]
    );
    assert_eq!(describe_block(&s, &g.blocks[1]), "b.y -> a.u, a.y -> b.u");
    assert_eq!(describe_block(&s, &g.blocks[0]), "src.y -> a.w");
    assert_eq!(g.propagates, [false, true, true, true, true]);
    // Components: src -> a <-> b -> c -> d.
    assert_eq!(g.gauss_seidel_order, [4, 2, 3, 1, 0]);
}

#[test]
fn a_component_connected_to_itself_through_feedthrough_is_a_loop() {
    let a = passthrough("A");
    let s = system(&[("a", &a)], &[("a.y", "a.u")]).unwrap();
    let g = build(&s);
    assert_eq!(g.blocks, [block(&[0], true)]);
    assert_eq!(describe_block(&s, &g.blocks[0]), "a.y -> a.u");

    let state = model("State", &["u"], &[("y", Deps::On(&[]))]);
    let s = system(&[("a", &state)], &[("a.y", "a.u")]).unwrap();
    let g = build(&s);
    assert_eq!(g.blocks, [block(&[0], false)]);
    assert_eq!(g.propagates, [false]);
    assert_eq!(g.gauss_seidel_order, [0]);
}

#[test]
fn missing_dependencies_are_taken_conservatively() {
    let all = model("All", &["u"], &[("y", Deps::All)]);
    let unlisted = model("Unlisted", &["u"], &[("y", Deps::Unlisted)]);
    let none = model("None", &["u"], &[("y", Deps::On(&[]))]);
    for (m, expect_loop) in [(&all, true), (&unlisted, true), (&none, false)] {
        let s = system(&[("a", m), ("b", m)], &[("a.y", "b.u"), ("b.y", "a.u")]).unwrap();
        let g = build(&s);
        assert_eq!(
            g.blocks.iter().any(|b| b.is_loop),
            expect_loop,
            "{}: {:?}",
            m.model_name,
            g.blocks
        );
    }
}

#[test]
fn gauss_seidel_keeps_declaration_order_in_cycles_and_between_independent_parts() {
    let p = passthrough("P");
    let state = model("S", &["u"], &[("y", Deps::On(&[]))]);
    // a <-> b is a component cycle (through a state, so no algebraic loop), c -> e -> d a
    // chain: the cycle first (declaration order inside), then c, e, d.
    let s = system(
        &[
            ("a", &state),
            ("b", &p),
            ("c", &state),
            ("d", &state),
            ("e", &p),
        ],
        &[
            ("c.y", "e.u"),
            ("b.y", "a.u"),
            ("a.y", "b.u"),
            ("e.y", "d.u"),
        ],
    )
    .unwrap();
    let g = build(&s);
    assert!(g.blocks.iter().all(|b| !b.is_loop));
    assert_eq!(g.gauss_seidel_order, [0, 1, 2, 4, 3]);
}

#[test]
fn an_empty_system_has_an_empty_graph() {
    let a = passthrough("A");
    let s = system(&[("a", &a), ("b", &a)], &[]).unwrap();
    let g = build(&s);
    assert!(g.blocks.is_empty() && g.propagates.is_empty());
    assert_eq!(g.gauss_seidel_order, [0, 1]);
}

// ------------------------------------------------------------------------------------------
// The example systems

/// Resolve a system file against its FMUs.
fn resolve_file(path: &Path) -> ResolvedSystem {
    fmu_pack::packed_fmus().expect("the project's FMUs pack");
    let system = config::from_file(path).unwrap_or_else(|e| panic!("{e}"));
    let descriptions = system
        .components
        .iter()
        .map(|c| {
            cosimo::fmu::Fmu::open(&c.fmu)
                .unwrap_or_else(|e| panic!("{e}"))
                .description()
                .clone()
        })
        .collect();
    resolve(&system, descriptions).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fmus")
        .join(name)
}

#[test]
fn the_two_mass_example_resolves_without_loops() {
    let s = resolve_file(&example("two-mass-force-force.json"));
    let g = build(&s);
    assert_eq!(g.blocks.len(), 6);
    assert!(g.blocks.iter().all(|b| !b.is_loop));
    let mass1 = &s.components[0];
    let x0 = mass1.description.variable_index("x0").unwrap();
    assert!(mass1
        .start_values
        .contains(&(x0, StartValue::Float(vec![0.1]))));
}

#[test]
fn the_conformance_chain_resolves_every_type_without_loops() {
    let s = resolve_file(&example("conformance-chain.json"));
    let g = build(&s);
    assert!(g.blocks.iter().all(|b| !b.is_loop), "{:?}", g.blocks);
    let types: Vec<VariableType> = s.connections.iter().map(|c| c.var_type).collect();
    for t in [
        VariableType::Float32,
        VariableType::Float64,
        VariableType::Int8,
        VariableType::Int32,
        VariableType::UInt16,
        VariableType::Boolean,
        VariableType::Enumeration,
    ] {
        assert!(types.contains(&t), "{t:?} is not exercised: {types:?}");
    }
    // F = -0.5 (2 x + 1) + 0.5 = -x: the transformations compose.
    let (a, b) = (&s.connections[1], &s.connections[11]);
    assert_eq!((a.scale, a.shift), (2.0, 1.0));
    assert_eq!((b.scale, b.shift), (-0.5, 0.5));
    // Non-Float connections are held, never extrapolated.
    assert!(s
        .connections
        .iter()
        .all(|c| c.var_type.is_float() || c.extrapolation_order == 0));
    let first = &s.components[1];
    let array = first
        .description
        .variable_index("Float64_array_input")
        .unwrap();
    assert!(first
        .start_values
        .contains(&(array, StartValue::Float(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.5]))));
    let mode = first
        .description
        .variable_index("Enumeration_input")
        .unwrap();
    assert!(first
        .start_values
        .contains(&(mode, StartValue::Int(vec![2]))));
}

// ------------------------------------------------------------------------------------------
// Resolving: precise errors

fn resolve_error(
    components: &[(&str, &Arc<ModelDescription>)],
    connections: &[(&str, &str)],
) -> String {
    match system(components, connections) {
        Ok(_) => panic!("resolved"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn connection_errors_are_precise() {
    let ft = fmu("Feedthrough", 3);
    let ft2 = fmu("Feedthrough", 2);
    let c = [("a", &ft), ("b", &ft)];
    assert_eq!(
        resolve_error(
            &c,
            &[("a.Float64_continuos_output", "b.Float64_continuous_input")]
        ),
        "connection a.Float64_continuos_output -> b.Float64_continuous_input: component \"a\": \
         variable \"Float64_continuos_output\" does not exist in Feedthrough; did you mean \
         \"Float64_continuous_output\"?"
    );
    assert_eq!(
        resolve_error(&c, &[("a.nothing", "b.Float64_continuous_input")]),
        "connection a.nothing -> b.Float64_continuous_input: component \"a\": variable \
         \"nothing\" does not exist in Feedthrough; run `cosimo inspect a.fmu` to list its variables"
    );
    assert_eq!(
        resolve_error(
            &c,
            &[("a.Float64_continuous_input", "b.Float64_continuous_output")]
        ),
        "connection a.Float64_continuous_input -> b.Float64_continuous_output: the source \
         a.Float64_continuous_input is an input; a connection goes from an output to an input \
         (did you swap from and to?)"
    );
    assert_eq!(
        resolve_error(
            &c,
            &[("a.Float64_fixed_parameter", "b.Float64_continuous_input")]
        ),
        "connection a.Float64_fixed_parameter -> b.Float64_continuous_input: the source \
         a.Float64_fixed_parameter is a parameter and cannot be a connection source; connect \
         an output"
    );
    assert_eq!(
        resolve_error(
            &c,
            &[("a.Float64_continuous_output", "b.Float64_tunable_parameter")]
        ),
        "connection a.Float64_continuous_output -> b.Float64_tunable_parameter: the target \
         b.Float64_tunable_parameter is a parameter, not an input; only inputs can be \
         connection targets (set parameters with \"parameters\")"
    );
    assert_eq!(
        resolve_error(&c, &[("a.Boolean_output", "b.Float64_continuous_input")]),
        "connection a.Boolean_output -> b.Float64_continuous_input: types do not match: \
         Boolean_output is Boolean but Float64_continuous_input is Float64; connect Float with \
         Float, integers and enumerations with each other, Boolean with Boolean"
    );
    assert_eq!(
        resolve_error(
            &[("a", &ft2), ("b", &ft2)],
            &[("a.Int32_output", "b.Float64_continuous_input")]
        ),
        "connection a.Int32_output -> b.Float64_continuous_input: types do not match: \
         Int32_output is Integer but Float64_continuous_input is Real; connect Float with \
         Float, integers and enumerations with each other, Boolean with Boolean"
    );
    assert_eq!(
        resolve_error(
            &c,
            &[("a.Float64_array_output", "b.Float64_continuous_input")]
        ),
        "connection a.Float64_array_output -> b.Float64_continuous_input: a.Float64_array_output \
         is an array of 6 element(s) and b.Float64_continuous_input is a scalar: a connection \
         joins an array to an array of the same size (connections address no single element)"
    );
    assert_eq!(
        resolve_error(
            &c,
            &[("a.Float64_array_output[2]", "b.Float64_continuous_input")]
        ),
        "connection a.Float64_array_output[2] -> b.Float64_continuous_input: \
         a.Float64_array_output[2] names an element of array \"Float64_array_output\": \
         connections join whole arrays (element by element, to an array of the same size); \
         connect a.Float64_array_output instead"
    );
    // Arrays connect element by element: one scalar connection per element, between element
    // variables named by flat index, the output's elements depending on the input's.
    let arrays = system(&c, &[("a.Float64_array_output", "b.Float64_array_input")]).unwrap();
    assert_eq!(arrays.connections.len(), 6);
    for (k, conn) in arrays.connections.iter().enumerate() {
        let name = |component: usize, variable: usize| {
            arrays.components[component].description.variables[variable]
                .name
                .clone()
        };
        assert_eq!(
            (
                name(conn.from_component, conn.from_variable),
                name(conn.to_component, conn.to_variable)
            ),
            (
                format!("Float64_array_output[{}]", k + 1),
                format!("Float64_array_input[{}]", k + 1)
            )
        );
        let b = &arrays.components[1];
        assert_eq!(
            b.declared_variable(conn.to_variable),
            b.description.variable_index("Float64_array_input").unwrap()
        );
    }
    assert_eq!(
        resolve_error(
            &c,
            &[
                ("a.Float64_continuous_output", "b.Float64_continuous_input"),
                ("b.Float32_continuous_output", "a.Float32_continuous_input"),
                ("a.Float64_discrete_output", "b.Float64_continuous_input"),
            ]
        ),
        "connection a.Float64_discrete_output -> b.Float64_continuous_input: input \
         b.Float64_continuous_input is connected twice, from a.Float64_continuous_output and \
         from a.Float64_discrete_output; an input takes exactly one source: remove one of the \
         two connections"
    );
    // Allowed: across Float and integer widths, enumerations with integers, FMI 2 with FMI 3.
    let ok = system(
        &[("a", &ft), ("b", &ft2)],
        &[
            ("a.Float32_continuous_output", "b.Float64_continuous_input"),
            ("a.UInt64_output", "b.Int32_input"),
            ("a.Enumeration_output", "b.Enumeration_input"),
            ("b.Enumeration_output", "a.Int16_input"),
            ("b.Int32_output", "a.Enumeration_input"),
        ],
    )
    .unwrap();
    // The master exchanges numbers and Booleans only: String and Binary are refused up front.
    assert_eq!(
        resolve_error(
            &[("a", &ft), ("b", &ft2)],
            &[("b.String_output", "b.String_input")]
        ),
        "connection b.String_output -> b.String_input: String_output is String and String_input \
         is String: String and Binary connections are not supported yet (cosimo exchanges \
         numbers and Booleans between FMUs); set such inputs with a start value"
    );
    assert_eq!(ok.connections[0].var_type, VariableType::Float32);
    assert_eq!(ok.connections[2].var_type, VariableType::Enumeration);
}

#[test]
fn factors_need_numeric_types_and_start_values_are_checked() {
    let ft = fmu("Feedthrough", 3);
    let mut sys = System {
        components: ["a", "b"]
            .iter()
            .map(|n| Component {
                name: n.to_string(),
                fmu: PathBuf::from("Feedthrough.fmu"),
                start_values: vec![],
                sub_steps: 1,
                isolate: None,
                call_timeout: None,
                worker_group: None,
                interface: None,
                rank: None,
            })
            .collect(),
        connections: vec![Connection {
            factor: 2.0,
            ..Connection::new(
                Endpoint::parse("a.Boolean_output").unwrap(),
                Endpoint::parse("b.Boolean_input").unwrap(),
            )
        }],
        experiment: Experiment {
            algorithm: Algorithm::with_order(AlgorithmKind::Jacobi, 2).expect("jacobi"),
            ..Experiment::default()
        },
    };
    let run = |s: &System| resolve(s, vec![ft.clone(), ft.clone()]);
    assert_eq!(
        run(&sys).unwrap_err().to_string(),
        "connection a.Boolean_output -> b.Boolean_input: factor and offset need numeric \
         variables, but a.Boolean_output is Boolean and b.Boolean_input is Boolean"
    );
    sys.connections = vec![
        Connection {
            factor: 3.0,
            offset: 1.0,
            ..Connection::new(
                Endpoint::parse("a.Int8_output").unwrap(),
                Endpoint::parse("b.Int64_input").unwrap(),
            )
        },
        Connection::new(
            Endpoint::parse("a.Float64_continuous_output").unwrap(),
            Endpoint::parse("b.Float64_continuous_input").unwrap(),
        ),
        Connection {
            extrapolation_order: Some(1),
            ..Connection::new(
                Endpoint::parse("a.Float64_discrete_output").unwrap(),
                Endpoint::parse("b.Float64_discrete_input").unwrap(),
            )
        },
    ];
    let r = run(&sys).unwrap();
    let c = &r.connections;
    assert_eq!(
        (c[0].scale, c[0].shift, c[0].extrapolation_order),
        (3.0, 1.0, 0)
    );
    assert_eq!(c[1].extrapolation_order, 2);
    assert_eq!(c[2].extrapolation_order, 1);

    let with_start = |name: &str, value: &str| {
        let mut s = sys.clone();
        s.components[1].start_values = vec![(name.to_string(), value.to_string())];
        run(&s)
    };
    let r = with_start("Float64_tunable_parameter", "1.5").unwrap();
    let index = ft.variable_index("Float64_tunable_parameter").unwrap();
    assert_eq!(
        r.components[1].start_values,
        [(index, StartValue::Float(vec![1.5]))]
    );
    assert_eq!(
        with_start("Float64_tunable_paramter", "1")
            .unwrap_err()
            .to_string(),
        "component \"b\": parameter \"Float64_tunable_paramter\" does not exist in Feedthrough; \
         did you mean \"Float64_tunable_parameter\"?"
    );
    assert_eq!(
        with_start("Float64_tunable_parameter", "fast")
            .unwrap_err()
            .to_string(),
        "component \"b\": Feedthrough: \"fast\" is not a valid value for Float64 variable \
         \"Float64_tunable_parameter\" (expected a number)"
    );
    assert_eq!(
        with_start("Float64_continuous_output", "1")
            .unwrap_err()
            .to_string(),
        "component \"b\": Feedthrough: cannot set a start value for \
         \"Float64_continuous_output\": it is calculated by the FMU; only parameters, inputs \
         and variables with a start value can be set"
    );
}

#[test]
fn resolve_needs_one_description_per_component() {
    let a = passthrough("A");
    let sys =
        config::from_command_line(&["a=A.fmu".to_string()], &[], Experiment::default()).unwrap();
    let e = resolve(&sys, vec![a.clone(), a]).unwrap_err().to_string();
    assert_eq!(e, "internal: 2 model descriptions given for 1 components");
}

// ------------------------------------------------------------------------------------------
// Units

/// An FMI 3 model with one Float64 variable `v` of `unit` and the given unit definitions.
fn with_unit(unit: &str, definitions: &str) -> ModelDescription {
    let xml = format!(
        r#"<?xml version="1.0"?>
<fmiModelDescription fmiVersion="3.0" modelName="U" instantiationToken="t">
  <UnitDefinitions>{definitions}</UnitDefinitions>
  <ModelVariables>
    <Float64 name="v" valueReference="1" causality="output" unit="{unit}"/>
  </ModelVariables>
</fmiModelDescription>"#
    );
    from_str(&xml, Path::new("u.xml")).expect("parses")
}

#[test]
fn units_convert_through_si() {
    let defs = r#"
      <Unit name="m"><BaseUnit m="1"/></Unit>
      <Unit name="mm"><BaseUnit m="1" factor="0.001"/></Unit>
      <Unit name="degC"><BaseUnit K="1" offset="273.15"/></Unit>
      <Unit name="degF"><BaseUnit K="1" factor="0.5555555555555556" offset="255.3722222222222"/></Unit>
      <Unit name="s"><BaseUnit s="1"/></Unit>
      <Unit name="opaque"/>"#;
    let md = |u: &str| with_unit(u, defs);
    let conv = |a: &str, b: &str| {
        let (ma, mb) = (md(a), md(b));
        units::conversion((&ma, &ma.variables[0]), (&mb, &mb.variables[0]))
    };
    assert_eq!(conv("m", "m"), Ok((1.0, 0.0)));
    assert_eq!(conv("mm", "m"), Ok((0.001, 0.0)));
    assert_eq!(conv("m", "mm"), Ok((1000.0, 0.0)));
    let (scale, shift) = conv("degC", "degF").unwrap();
    assert!(
        (scale * 100.0 + shift - 212.0).abs() < 1e-9,
        "{scale} {shift}"
    );
    assert!((scale * 0.0 + shift - 32.0).abs() < 1e-9, "{scale} {shift}");
    // No BaseUnit: only the same name is known to agree; otherwise passed unchanged.
    assert_eq!(conv("opaque", "m"), Ok((1.0, 0.0)));
    assert_eq!(
        conv("m", "s"),
        Err(
            "unit \"m\" of v (U) and unit \"s\" of v (U) have different dimensions (m vs s); \
             connect variables of compatible units"
                .to_string()
        )
    );
}

#[test]
fn connections_apply_unit_conversion_before_factor_and_offset() {
    let defs = r#"<Unit name="m"><BaseUnit m="1"/></Unit>
                  <Unit name="mm"><BaseUnit m="1" factor="0.001"/></Unit>
                  <Unit name="N"><BaseUnit kg="1" m="1" s="-2"/></Unit>"#;
    let model = |unit: &str, causality: &str, name: &str| {
        let xml = format!(
            r#"<?xml version="1.0"?>
<fmiModelDescription fmiVersion="3.0" modelName="{name}" instantiationToken="t">
  <UnitDefinitions>{defs}</UnitDefinitions>
  <ModelVariables>
    <Float64 name="p" valueReference="1" causality="{causality}" unit="{unit}"/>
  </ModelVariables>
</fmiModelDescription>"#
        );
        Arc::new(from_str(&xml, Path::new("m.xml")).expect("parses"))
    };
    let (src, dst, force) = (
        model("mm", "output", "Src"),
        model("m", "input", "Dst"),
        model("N", "input", "Force"),
    );
    let mut sys = config::from_command_line(
        &["src=S.fmu".to_string(), "dst=D.fmu".to_string()],
        &["src.p=dst.p".to_string()],
        Experiment::default(),
    )
    .unwrap();
    sys.connections[0].factor = 2.0;
    sys.connections[0].offset = 1.0;
    let r = resolve(&sys, vec![src.clone(), dst]).unwrap();
    // to = 2 * (0.001 * from) + 1
    assert_eq!(
        (r.connections[0].scale, r.connections[0].shift),
        (0.002, 1.0)
    );
    let e = resolve(&sys, vec![src.clone(), force.clone()])
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "connection src.p -> dst.p: unit \"mm\" of p (Src) and unit \"N\" of p (Force) have \
         different dimensions (m vs kg.m.s-2); connect variables of compatible units, or mark \
         the connection \"ignoreUnits\": true (SSP: suppressUnitConversion=\"true\"; command \
         line: --ignore-units src.p=dst.p) to pass the value unchanged"
    );
    // The override: the value passes unchanged (then factor and offset), with a warning.
    sys.connections[0].ignore_units = true;
    let r = resolve(&sys, vec![src.clone(), force]).unwrap();
    assert_eq!((r.connections[0].scale, r.connections[0].shift), (2.0, 1.0));
    // It also suppresses a conversion between units of the same dimension.
    let dst = model("m", "input", "Dst");
    let r = resolve(&sys, vec![src, dst]).unwrap();
    assert_eq!((r.connections[0].scale, r.connections[0].shift), (2.0, 1.0));
}

#[test]
fn describe_block_names_every_connection() {
    let (a, b) = (passthrough("A"), passthrough("B"));
    let s = system(&[("x", &a), ("y", &b)], &[("x.y", "y.u"), ("y.y", "x.u")]).unwrap();
    assert_eq!(describe_block(&s, &block(&[1], false)), "y.y -> x.u");
    // Out-of-range indices are skipped rather than panicking.
    assert_eq!(describe_block(&s, &block(&[7], false)), "");
}

#[test]
fn locals_as_sources_feed_through_conservatively_calculated_parameters_do_not() {
    let xml = r#"<?xml version="1.0"?>
<fmiModelDescription fmiVersion="3.0" modelName="L" instantiationToken="t">
  <ModelVariables>
    <Float64 name="u" valueReference="1" causality="input" start="0"/>
    <Float64 name="l" valueReference="2" causality="local" variability="continuous"/>
    <Float64 name="cp" valueReference="3" causality="calculatedParameter" variability="fixed"/>
  </ModelVariables>
</fmiModelDescription>"#;
    let md = Arc::new(from_str(xml, Path::new("l.xml")).expect("parses"));
    let s = system(&[("a", &md), ("b", &md)], &[("a.l", "b.u"), ("b.l", "a.u")]).unwrap();
    assert_eq!(build(&s).blocks, [block(&[0, 1], true)]);
    let s = system(
        &[("a", &md), ("b", &md)],
        &[("a.cp", "b.u"), ("b.cp", "a.u")],
    )
    .unwrap();
    assert_eq!(build(&s).blocks, [block(&[0], false), block(&[1], false)]);
}
