//! Tests of the modelDescription.xml parser (FMI 2.0 and 3.0) through its public API.

use std::path::{Path, PathBuf};

use cosimo::fmu::description::{
    from_file, from_str, Causality, DependencyKind, Dimension, FmiVersion, Initial,
    ModelDescription, StartValue, Unknown, Variability, VariableType,
};
use cosimo::Error;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/description")
        .join(name)
}

fn fmi2() -> ModelDescription {
    from_file(&data("BouncingBall2.xml")).expect("BouncingBall2.xml parses")
}

fn fmi3() -> ModelDescription {
    from_file(&data("Feedthrough3.xml")).expect("Feedthrough3.xml parses")
}

/// The index of the variable `name`.
fn idx(md: &ModelDescription, name: &str) -> usize {
    md.variable_index(name)
        .unwrap_or_else(|| panic!("no variable {name}"))
}

/// Parse `xml` expecting an error; returns (line, message).
fn parse_err(xml: &str) -> (usize, String) {
    match from_str(xml, Path::new("dir/modelDescription.xml")) {
        Ok(_) => panic!("expected an error"),
        Err(Error::ModelDescription {
            path,
            line,
            message,
        }) => {
            assert_eq!(path, Path::new("dir/modelDescription.xml"));
            (line, message)
        }
        Err(other) => panic!("unexpected error kind: {other}"),
    }
}

/// 1-based line of the first occurrence of `needle` in `text`.
fn line_of(text: &str, needle: &str) -> usize {
    let at = text.find(needle).expect("needle present");
    text[..at].matches('\n').count() + 1
}

// ------------------------------------------------------------------------------------------
// FMI 2

#[test]
fn fmi2_root_and_interfaces() {
    let md = fmi2();
    assert_eq!(md.fmi_version, FmiVersion::Fmi2);
    assert_eq!(md.fmi_version_string, "2.0");
    assert_eq!(md.model_name, "BouncingBall");
    assert_eq!(
        md.instantiation_token,
        "{1AE5E10D-9521-4DE3-80B9-D0EAAA7D5AF1}"
    );
    assert_eq!(
        md.description.as_deref(),
        Some("This model calculates the trajectory, over time, of a ball dropped from a height of 1 m.")
    );
    assert_eq!(md.author.as_deref(), Some("Modelica Association"));
    assert_eq!(md.version.as_deref(), Some("0.1.0"));
    assert_eq!(
        md.copyright.as_deref(),
        Some("Copyright (C) Modelica Association Project FMI")
    );
    assert_eq!(md.license.as_deref(), Some("BSD-2-Clause"));
    assert_eq!(
        md.generation_tool.as_deref(),
        Some("Reference FMUs (hand written)")
    );
    assert_eq!(
        md.generation_date_and_time.as_deref(),
        Some("2024-05-01T12:00:00Z")
    );
    assert_eq!(md.variable_naming_convention.as_deref(), Some("structured"));
    assert_eq!(
        md.model_exchange_identifier.as_deref(),
        Some("BouncingBall_me")
    );
    assert_eq!(md.scheduled_execution_identifier, None);
    assert_eq!(md.co_simulation_identifier(), Some("BouncingBall"));

    let cs = md.co_simulation.as_ref().expect("co-simulation");
    assert_eq!(cs.model_identifier, "BouncingBall");
    assert!(!cs.needs_execution_tool);
    assert!(cs.can_handle_variable_communication_step_size);
    assert!(cs.can_interpolate_inputs);
    assert_eq!(cs.max_output_derivative_order, 2);
    assert!(!cs.can_run_asynchronuously);
    assert!(!cs.can_be_instantiated_only_once_per_process);
    assert!(cs.can_not_use_memory_management_functions);
    assert!(cs.can_get_and_set_fmu_state);
    assert!(cs.can_serialize_fmu_state);
    assert!(cs.provides_directional_derivatives);
    assert_eq!(cs.fixed_internal_step_size, None);
    assert!(!cs.provides_intermediate_update);
    assert!(!cs.has_event_mode);
    assert_eq!(cs.recommended_intermediate_input_smoothness, 0);
}

#[test]
fn fmi2_units_types_categories_experiment() {
    let md = fmi2();
    let names: Vec<&str> = md.units.iter().map(|u| u.name.as_str()).collect();
    assert_eq!(names, ["m", "m/s", "m/s2", "K", "rad/s", "bar", "1"]);
    let ms2 = md.units[2].base_unit.as_ref().expect("base unit");
    assert_eq!((ms2.m, ms2.s, ms2.kg), (1, -2, 0));
    assert_eq!((ms2.factor, ms2.offset), (1.0, 0.0));
    let k = &md.units[3];
    assert_eq!(k.base_unit.as_ref().map(|b| b.k), Some(1));
    assert_eq!(k.display_units.len(), 1);
    assert_eq!(k.display_units[0].name, "degC");
    assert_eq!(k.display_units[0].factor, 1.0);
    assert_eq!(k.display_units[0].offset, -273.15);
    assert!(!k.display_units[0].inverse);
    let rads = &md.units[4];
    assert_eq!(rads.base_unit.as_ref().map(|b| (b.rad, b.s)), Some((1, -1)));
    assert_eq!(rads.display_units[0].factor, 9.549296585513721);
    let bar = md.units[5].base_unit.as_ref().expect("bar");
    assert_eq!((bar.kg, bar.m, bar.s, bar.factor), (1, -1, -2, 1e5));
    assert!(md.units[6].base_unit.is_none());

    assert_eq!(md.type_definitions.len(), 2);
    let pos = &md.type_definitions[0];
    assert_eq!(pos.name, "Position");
    assert_eq!(pos.var_type, VariableType::Float64);
    assert_eq!(pos.quantity.as_deref(), Some("Length"));
    assert_eq!(pos.unit.as_deref(), Some("m"));
    assert_eq!(pos.min.as_deref(), Some("-10"));
    assert_eq!(pos.max.as_deref(), Some("10"));
    assert_eq!(pos.nominal, Some(2.0));
    assert!(pos.items.is_empty());
    let mode = &md.type_definitions[1];
    assert_eq!(mode.var_type, VariableType::Enumeration);
    assert_eq!(mode.description.as_deref(), Some("operating mode"));
    assert_eq!(mode.quantity.as_deref(), Some("Mode"));
    let items: Vec<(&str, i64)> = mode
        .items
        .iter()
        .map(|i| (i.name.as_str(), i.value))
        .collect();
    assert_eq!(items, [("off", 0), ("on", 1), ("broken", -1)]);
    assert_eq!(mode.items[0].description.as_deref(), Some("switched off"));
    assert_eq!(mode.items[1].description, None);
    assert!(mode.clock.is_none());

    let cats: Vec<(&str, Option<&str>)> = md
        .log_categories
        .iter()
        .map(|c| (c.name.as_str(), c.description.as_deref()))
        .collect();
    assert_eq!(
        cats,
        [("logEvents", Some("Log events")), ("logStatusError", None)]
    );

    let de = md.default_experiment.as_ref().expect("default experiment");
    assert_eq!(de.start_time, Some(0.0));
    assert_eq!(de.stop_time, Some(3.0));
    assert_eq!(de.tolerance, Some(1e-6));
    assert_eq!(de.step_size, Some(0.01));
}

/// PythonFMU's component_model names the dimensionless unit "" and variables refer to it with
/// `unit=""` (the MobileCrane FMU of py-crane 0.3.1, issue 14): the schema's normalizedString
/// admits an empty name, and FMPy reads such files.
#[test]
fn fmi2_unit_with_an_empty_name() {
    let xml = r#"<fmiModelDescription fmiVersion="2.0" modelName="M" guid="g">
  <CoSimulation modelIdentifier="M"/>
  <UnitDefinitions>
    <Unit name="meter"><BaseUnit m="1" factor="1"/></Unit>
    <Unit name=""><BaseUnit factor="1"/></Unit>
  </UnitDefinitions>
  <ModelVariables>
    <ScalarVariable name="ratio" valueReference="1" causality="output">
      <Real unit=""/>
    </ScalarVariable>
  </ModelVariables>
  <ModelStructure><Outputs><Unknown index="1"/></Outputs></ModelStructure>
</fmiModelDescription>"#;
    let md = from_str(xml, Path::new("m.xml")).expect("an empty unit name parses");
    let names: Vec<&str> = md.units.iter().map(|u| u.name.as_str()).collect();
    assert_eq!(names, ["meter", ""]);
    let base = md.units[1].base_unit.as_ref().expect("base unit");
    assert_eq!((base.m, base.kg, base.s, base.factor), (0, 0, 0, 1.0));
    assert_eq!(md.variables[0].unit.as_deref(), Some(""));
}

#[test]
fn fmi2_variables() {
    let md = fmi2();
    assert_eq!(md.variables.len(), 13);

    let time = &md.variables[0];
    assert_eq!(time.name, "time");
    assert_eq!(time.value_reference, 0);
    assert_eq!(time.causality, Causality::Independent);
    assert_eq!(time.variability, Variability::Continuous);
    assert_eq!(time.description.as_deref(), Some("Simulation time"));
    assert_eq!(time.start, None);
    assert_eq!(time.effective_initial(), None);

    let h = md.variable("h").expect("h");
    assert_eq!(h.value_reference, 1);
    assert_eq!(h.var_type, VariableType::Float64);
    assert_eq!(h.causality, Causality::Output);
    assert_eq!(h.variability, Variability::Continuous);
    assert_eq!(h.initial, Some(Initial::Exact));
    assert_eq!(h.start, Some(StartValue::Float(vec![1.0])));
    assert_eq!(h.declared_type.as_deref(), Some("Position"));
    // Inherited from the declared type, except the variable's own max.
    assert_eq!(h.quantity.as_deref(), Some("Length"));
    assert_eq!(h.unit.as_deref(), Some("m"));
    assert_eq!(h.min.as_deref(), Some("-10"));
    assert_eq!(h.max.as_deref(), Some("5"));
    assert_eq!(h.nominal, Some(2.0));
    assert!(!h.is_array());
    assert_eq!(h.derivative, None);

    let der_h = md.variable("der(h)").expect("der(h)");
    assert_eq!(der_h.causality, Causality::Local);
    assert_eq!(der_h.derivative, Some(idx(&md, "h")));
    assert_eq!(der_h.unit.as_deref(), Some("m/s"));
    assert_eq!(der_h.initial, None);
    assert_eq!(der_h.effective_initial(), Some(Initial::Calculated));

    let v = md.variable("v").expect("v");
    assert!(v.reinit);
    assert_eq!(v.start, Some(StartValue::Float(vec![0.0])));
    let der_v = md.variable("der(v)").expect("der(v)");
    assert_eq!(der_v.causality, Causality::Local); // the default
    assert_eq!(der_v.derivative, Some(idx(&md, "v")));
    assert!(!der_v.reinit);

    let g = md.variable("g").expect("g");
    assert_eq!(g.causality, Causality::Parameter);
    assert_eq!(g.variability, Variability::Fixed);
    assert_eq!(g.start, Some(StartValue::Float(vec![-9.81])));
    assert_eq!(g.effective_initial(), Some(Initial::Exact));

    let e = md.variable("e").expect("e");
    assert_eq!(e.variability, Variability::Tunable);
    assert_eq!(
        (e.min.as_deref(), e.max.as_deref()),
        (Some("0.5"), Some("1"))
    );

    let v_min = md.variable("v_min").expect("v_min");
    assert_eq!(v_min.variability, Variability::Constant);
    assert_eq!(v_min.effective_initial(), Some(Initial::Exact));

    let count = md.variable("count").expect("count");
    assert_eq!(count.var_type, VariableType::Int32);
    assert_eq!(count.causality, Causality::Input);
    assert_eq!(count.variability, Variability::Discrete); // default for non-Real
    assert_eq!(count.start, Some(StartValue::Int(vec![-3])));
    assert_eq!(count.can_handle_multiple_set_per_time_instant, Some(false));
    assert_eq!(count.effective_initial(), None);

    let flag = md.variable("flag").expect("flag");
    assert_eq!(flag.var_type, VariableType::Boolean);
    assert_eq!(flag.value_reference, 8);
    assert_eq!(flag.start, Some(StartValue::Bool(vec![true])));
    assert_eq!(flag.can_handle_multiple_set_per_time_instant, None);

    let label = md.variable("label").expect("label");
    assert_eq!(label.var_type, VariableType::String);
    assert_eq!(
        label.start,
        Some(StartValue::String(vec!["a & <b>  c".to_string()]))
    );

    let mode = md.variable("mode").expect("mode");
    assert_eq!(mode.var_type, VariableType::Enumeration);
    assert_eq!(mode.variability, Variability::Discrete);
    assert_eq!(mode.start, Some(StartValue::Int(vec![1])));
    assert_eq!(mode.quantity.as_deref(), Some("Mode"));
    assert_eq!(mode.effective_initial(), Some(Initial::Calculated));

    let h_cm = md.variable("h_cm").expect("h_cm");
    assert_eq!(h_cm.value_reference, 1);
    assert_eq!(h_cm.alias.as_deref(), Some("alias"));
    assert_eq!(h_cm.unit.as_deref(), Some("cm"));
    assert_eq!(h_cm.nominal, Some(200.0));
    assert_eq!(h_cm.max.as_deref(), Some("10"));

    for v in &md.variables {
        assert!(v.clocks.is_empty() && v.previous.is_none() && v.clock.is_none());
        assert!(!v.intermediate_update);
        assert!(v.dimensions.is_empty());
    }
}

#[test]
fn fmi2_model_structure() {
    let md = fmi2();
    let ms = &md.model_structure;
    let i = |n: &str| idx(&md, n);
    assert_eq!(
        ms.outputs,
        vec![
            Unknown {
                variable: i("h"),
                dependencies: None,
                dependencies_kind: None
            },
            Unknown {
                variable: i("v"),
                dependencies: None,
                dependencies_kind: None
            },
            Unknown {
                variable: i("mode"),
                dependencies: Some(vec![i("count"), i("flag")]),
                dependencies_kind: Some(vec![DependencyKind::Dependent, DependencyKind::Discrete]),
            },
        ]
    );
    assert_eq!(
        ms.continuous_state_derivatives,
        vec![
            Unknown {
                variable: i("der(h)"),
                dependencies: Some(vec![i("v")]),
                dependencies_kind: Some(vec![DependencyKind::Constant]),
            },
            Unknown {
                variable: i("der(v)"),
                dependencies: Some(vec![]),
                dependencies_kind: None,
            },
        ]
    );
    assert_eq!(
        ms.initial_unknowns,
        vec![
            Unknown {
                variable: i("der(h)"),
                dependencies: None,
                dependencies_kind: None,
            },
            Unknown {
                variable: i("der(v)"),
                dependencies: Some(vec![i("g"), i("e")]),
                dependencies_kind: None,
            },
        ]
    );
    assert!(ms.clocked_states.is_empty());
    assert!(ms.event_indicators.is_empty());
    assert_eq!(md.output_dependencies(i("mode")), Some(&[8, 9][..]));
    assert_eq!(md.output_dependencies(i("h")), None);
}

// ------------------------------------------------------------------------------------------
// FMI 3

#[test]
fn fmi3_root_and_interfaces() {
    let md = fmi3();
    assert_eq!(md.fmi_version, FmiVersion::Fmi3);
    assert_eq!(md.fmi_version_string, "3.0");
    assert_eq!(md.model_name, "Feedthrough");
    assert_eq!(
        md.instantiation_token,
        "{37B954F1-CC86-4D8F-B97F-C7C36F6670D2}"
    );
    assert_eq!(md.variable_naming_convention.as_deref(), Some("flat"));
    assert_eq!(md.author, None);
    assert_eq!(
        md.model_exchange_identifier.as_deref(),
        Some("Feedthrough_me")
    );
    assert_eq!(
        md.scheduled_execution_identifier.as_deref(),
        Some("Feedthrough_se")
    );
    let cs = md.co_simulation.as_ref().expect("co-simulation");
    assert_eq!(cs.model_identifier, "Feedthrough");
    assert!(!cs.needs_execution_tool);
    assert!(cs.can_be_instantiated_only_once_per_process);
    assert!(cs.can_get_and_set_fmu_state);
    assert!(cs.can_serialize_fmu_state);
    assert!(cs.provides_directional_derivatives);
    assert!(cs.provides_adjoint_derivatives);
    assert!(!cs.provides_per_element_dependencies);
    assert!(cs.can_handle_variable_communication_step_size);
    assert_eq!(cs.fixed_internal_step_size, Some(0.001));
    assert_eq!(cs.max_output_derivative_order, 1);
    assert_eq!(cs.recommended_intermediate_input_smoothness, 2);
    assert!(cs.provides_intermediate_update);
    assert!(cs.might_return_early_from_do_step);
    assert!(!cs.can_return_early_after_intermediate_update);
    assert!(cs.has_event_mode);
    assert!(cs.provides_evaluate_discrete_states);
    assert!(!cs.can_interpolate_inputs);

    let s = &md.units[0];
    assert_eq!(s.name, "s");
    assert_eq!(s.display_units.len(), 2);
    assert_eq!(s.display_units[0].name, "Hz");
    assert!(s.display_units[0].inverse);
    assert_eq!(s.display_units[1].factor, 1000.0);
    assert!(!s.display_units[1].inverse);

    assert_eq!(md.log_categories.len(), 1);
    let de = md.default_experiment.as_ref().expect("default experiment");
    assert_eq!(de.stop_time, Some(2.0));
    assert_eq!(de.start_time, None);
}

#[test]
fn fmi3_type_definitions() {
    let md = fmi3();
    let kinds: Vec<(&str, VariableType)> = md
        .type_definitions
        .iter()
        .map(|t| (t.name.as_str(), t.var_type))
        .collect();
    assert_eq!(
        kinds,
        [
            ("Time", VariableType::Float64),
            ("SmallInt", VariableType::Int8),
            ("Option", VariableType::Enumeration),
            ("Bytes", VariableType::Binary),
            ("Periodic", VariableType::Clock),
        ]
    );
    let time = &md.type_definitions[0];
    assert_eq!(time.quantity.as_deref(), Some("Time"));
    assert_eq!(time.unit.as_deref(), Some("s"));
    assert_eq!(time.display_unit.as_deref(), Some("ms"));
    assert_eq!(time.min.as_deref(), Some("0"));
    assert_eq!(time.max, None);
    assert_eq!(time.nominal, Some(10.0));
    let option = &md.type_definitions[2];
    assert_eq!(option.items.len(), 2);
    assert_eq!(option.items[1].name, "Option 2");
    assert_eq!(option.items[1].value, 2);
    assert_eq!(
        option.items[1].description.as_deref(),
        Some("Second option")
    );
    let clock = md.type_definitions[4].clock.as_ref().expect("clock type");
    assert_eq!(clock.interval_variability.as_deref(), Some("constant"));
    assert_eq!(clock.interval_decimal, Some(0.5));
    assert_eq!(clock.priority, Some(3));
    assert!(clock.can_be_deactivated);
}

#[test]
fn fmi3_variables_of_every_type() {
    let md = fmi3();
    assert_eq!(md.variables.len(), 37);
    let types: Vec<VariableType> = md.variables.iter().map(|v| v.var_type).collect();
    for t in [
        VariableType::Float32,
        VariableType::Float64,
        VariableType::Int8,
        VariableType::UInt8,
        VariableType::Int16,
        VariableType::UInt16,
        VariableType::Int32,
        VariableType::UInt32,
        VariableType::Int64,
        VariableType::UInt64,
        VariableType::Boolean,
        VariableType::String,
        VariableType::Binary,
        VariableType::Enumeration,
        VariableType::Clock,
    ] {
        assert!(types.contains(&t), "{t:?} missing");
    }
    let var = |n: &str| md.variable(n).unwrap_or_else(|| panic!("no {n}"));

    let f32_in = var("Float32_continuous_input");
    assert_eq!(f32_in.var_type, VariableType::Float32);
    assert_eq!(f32_in.value_reference, 1);
    assert_eq!(f32_in.causality, Causality::Input);
    assert_eq!(f32_in.variability, Variability::Continuous);
    assert_eq!(f32_in.start, Some(StartValue::Float(vec![1.5])));
    let f32_out = var("Float32_continuous_output");
    assert_eq!(f32_out.start, None);
    assert_eq!(f32_out.initial, None);
    assert_eq!(f32_out.effective_initial(), Some(Initial::Calculated));

    let fixed = var("Float64_fixed_parameter");
    assert_eq!(fixed.causality, Causality::Parameter);
    assert_eq!(fixed.variability, Variability::Fixed);
    assert_eq!(fixed.effective_initial(), Some(Initial::Exact));
    assert_eq!(fixed.declared_type.as_deref(), Some("Time"));
    assert_eq!(fixed.unit.as_deref(), Some("ms")); // own value kept
    assert_eq!(fixed.quantity.as_deref(), Some("Time")); // inherited
    assert_eq!(fixed.display_unit.as_deref(), Some("ms"));
    assert_eq!(fixed.min.as_deref(), Some("0"));
    assert_eq!(fixed.nominal, Some(10.0));

    assert!(var("Float64_continuous_input").intermediate_update);
    assert!(!var("Float64_continuous_output").intermediate_update);
    assert_eq!(
        var("Float64_continuous_output").initial,
        Some(Initial::Calculated)
    );

    let din = var("Float64_discrete_input");
    assert_eq!(din.variability, Variability::Discrete);
    assert_eq!(din.clocks, vec![idx(&md, "inClock")]);
    let dout = var("Float64_discrete_output");
    assert_eq!(dout.previous, Some(idx(&md, "Float64_discrete_input")));
    assert_eq!(dout.effective_initial(), Some(Initial::Exact));

    let i8_in = var("Int8_input");
    assert_eq!(i8_in.var_type, VariableType::Int8);
    assert_eq!(i8_in.variability, Variability::Discrete);
    assert_eq!(i8_in.start, Some(StartValue::Int(vec![-128])));
    assert_eq!(i8_in.min.as_deref(), Some("-5")); // inherited
    assert_eq!(i8_in.max.as_deref(), Some("100")); // own
    assert_eq!(var("Int8_output").start, None);
    assert_eq!(var("UInt8_input").start, Some(StartValue::UInt(vec![255])));
    assert_eq!(
        var("Int16_input").start,
        Some(StartValue::Int(vec![-32768]))
    );
    assert_eq!(
        var("UInt16_input").start,
        Some(StartValue::UInt(vec![65535]))
    );
    assert_eq!(
        var("Int32_input").start,
        Some(StartValue::Int(vec![i32::MIN.into()]))
    );
    assert_eq!(
        var("UInt32_input").start,
        Some(StartValue::UInt(vec![u32::MAX.into()]))
    );
    assert_eq!(
        var("Int64_input").start,
        Some(StartValue::Int(vec![i64::MIN]))
    );
    assert_eq!(
        var("UInt64_input").start,
        Some(StartValue::UInt(vec![u64::MAX]))
    );
    assert_eq!(
        var("Boolean_input").start,
        Some(StartValue::Bool(vec![false]))
    );
    assert_eq!(var("Boolean_output").initial, Some(Initial::Exact));

    let s = var("String_parameter");
    assert_eq!(
        s.start,
        Some(StartValue::String(vec!["Set me!".to_string()]))
    );
    let b = var("Binary_input");
    assert_eq!(b.start, Some(StartValue::Binary(vec![b"foo".to_vec()])));
    assert_eq!(b.declared_type.as_deref(), Some("Bytes"));
    assert_eq!(var("Binary_output").start, None);

    let e = var("Enumeration_input");
    assert_eq!(e.start, Some(StartValue::Int(vec![1])));
    assert_eq!(e.min.as_deref(), Some("1"));
    assert_eq!(e.max.as_deref(), Some("2"));

    let x = var("x");
    let der_x = var("der(x)");
    assert_eq!(der_x.derivative, Some(idx(&md, "x")));
    assert_eq!(x.derivative, None);
    assert_eq!(
        var("z").clocks,
        vec![idx(&md, "inClock"), idx(&md, "outClock")]
    );
    let c = var("c");
    assert_eq!(c.variability, Variability::Constant);
    assert_eq!(c.effective_initial(), Some(Initial::Exact));
    assert_eq!(var("n").causality, Causality::StructuralParameter);
    assert_eq!(var("n").effective_initial(), Some(Initial::Exact));
    assert_eq!(var("time").causality, Causality::Independent);
}

#[test]
fn fmi3_arrays() {
    let md = fmi3();
    let var = |n: &str| md.variable(n).unwrap_or_else(|| panic!("no {n}"));
    let a = var("Float64_array_input");
    assert!(a.is_array());
    assert_eq!(
        a.dimensions,
        vec![
            Dimension {
                start: Some(2),
                value_reference: None
            },
            Dimension {
                start: Some(3),
                value_reference: None
            }
        ]
    );
    assert_eq!(
        a.start,
        Some(StartValue::Float(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]))
    );
    let sized = var("Float64_sized_output");
    assert_eq!(
        sized.dimensions,
        vec![Dimension {
            start: None,
            value_reference: Some(25)
        }]
    );
    assert_eq!(
        var("Boolean_array").start,
        Some(StartValue::Bool(vec![true, false, true, false]))
    );
    assert_eq!(
        var("String_array").start,
        Some(StartValue::String(vec!["a b".to_string(), String::new()]))
    );
    assert_eq!(
        var("Binary_array").start,
        Some(StartValue::Binary(vec![vec![0x00, 0xff], vec![0x0a, 0x0b]]))
    );
}

#[test]
fn fmi3_clocks() {
    let md = fmi3();
    let in_clock = md.variable("inClock").expect("inClock");
    assert_eq!(in_clock.var_type, VariableType::Clock);
    assert_eq!(in_clock.variability, Variability::Discrete);
    assert_eq!(in_clock.start, None);
    let c = in_clock.clock.as_ref().expect("clock attributes");
    assert_eq!(c.priority, Some(1)); // own value wins over the type's 3
    assert!(c.can_be_deactivated); // inherited from ClockType
    assert_eq!(c.interval_variability.as_deref(), Some("constant"));
    assert_eq!(c.interval_decimal, Some(0.5));
    assert_eq!(c.shift_decimal, Some(0.25));
    assert!(c.supports_fraction);
    assert_eq!(c.resolution, Some(1000));
    assert_eq!(c.interval_counter, Some(500));
    assert_eq!(c.shift_counter, Some(250));
    let out = md.variable("outClock").expect("outClock");
    let oc = out.clock.as_ref().expect("clock attributes");
    assert_eq!(oc.interval_variability.as_deref(), Some("triggered"));
    assert!(!oc.can_be_deactivated);
    assert_eq!(oc.priority, None);
    assert!(md.variable("x").and_then(|x| x.clock.as_ref()).is_none());
}

#[test]
fn fmi3_model_structure() {
    let md = fmi3();
    let ms = &md.model_structure;
    let i = |n: &str| idx(&md, n);
    let outputs: Vec<usize> = ms.outputs.iter().map(|u| u.variable).collect();
    assert_eq!(
        outputs,
        [
            i("Float32_continuous_output"),
            i("Float64_continuous_output"),
            i("Float64_discrete_output"),
            i("Int8_output"),
            i("Boolean_output"),
            i("Binary_output"),
            i("Float64_sized_output"),
            i("outClock"),
        ]
    );
    assert_eq!(
        ms.outputs[0],
        Unknown {
            variable: i("Float32_continuous_output"),
            dependencies: Some(vec![i("Float32_continuous_input")]),
            dependencies_kind: Some(vec![DependencyKind::Constant]),
        }
    );
    assert_eq!(
        ms.outputs[2].dependencies_kind,
        Some(vec![DependencyKind::Discrete])
    );
    assert_eq!(ms.outputs[3].dependencies, Some(vec![]));
    assert_eq!(ms.outputs[4].dependencies, None);
    assert_eq!(
        ms.continuous_state_derivatives,
        vec![Unknown {
            variable: i("der(x)"),
            dependencies: Some(vec![i("x")]),
            dependencies_kind: None,
        }]
    );
    assert_eq!(
        ms.clocked_states,
        vec![Unknown {
            variable: i("z"),
            dependencies: None,
            dependencies_kind: None,
        }]
    );
    assert_eq!(ms.initial_unknowns.len(), 2);
    assert_eq!(
        ms.initial_unknowns[1],
        Unknown {
            variable: i("der(x)"),
            dependencies: Some(vec![i("x"), i("Float64_tunable_parameter")]),
            dependencies_kind: Some(vec![DependencyKind::Dependent, DependencyKind::Fixed]),
        }
    );
    assert_eq!(
        ms.event_indicators,
        vec![Unknown {
            variable: i("ei"),
            dependencies: Some(vec![i("x")]),
            dependencies_kind: None,
        }]
    );
    assert_eq!(
        md.output_dependencies(i("Float64_continuous_output")),
        Some(&[i("Float64_continuous_input")][..])
    );
}

// ------------------------------------------------------------------------------------------
// Leniency and versions

const MINIMAL2: &str = r#"<?xml version="1.0"?>
<fmiModelDescription fmiVersion="2.0" modelName="M" guid="{g}">
  <CoSimulation modelIdentifier="M"/>
  <ModelVariables>
    <ScalarVariable name="x" valueReference="1"><Real/></ScalarVariable>
  </ModelVariables>
  <ModelStructure/>
</fmiModelDescription>
"#;

#[test]
fn unknown_elements_and_attributes_are_skipped() {
    let xml = r#"<?xml version="1.0"?>
<!-- a comment -->
<fmiModelDescription fmiVersion="3.0" modelName="M" instantiationToken="t" futureAttribute="x">
  <SomethingNew a="b"><Deep><Deeper/></Deep></SomethingNew>
  <CoSimulation modelIdentifier="M" futureFlag="maybe">
    <Extra/>
  </CoSimulation>
  <Annotations><Annotation type="x"><![CDATA[ anything < > ]]></Annotation></Annotations>
  <ModelVariables>
    <Float64 name="x" valueReference="1" newAttr="1"><Extra/></Float64>
    <FutureType name="y" valueReference="1"/>
  </ModelVariables>
  <ModelStructure><FutureUnknown valueReference="99"/></ModelStructure>
  <Terminals><Terminal name="t"/></Terminals>
</fmiModelDescription>
"#;
    let md = from_str(xml, Path::new("m.xml")).expect("parses");
    assert_eq!(md.variables.len(), 1);
    assert_eq!(md.variables[0].name, "x");
    assert_eq!(md.co_simulation_identifier(), Some("M"));
    assert_eq!(md.model_structure, Default::default());
    assert!(md.units.is_empty() && md.type_definitions.is_empty());
    assert!(md.default_experiment.is_none());
    assert!(md.model_exchange_identifier.is_none());
}

#[test]
fn minimal_fmi2_and_version_strings() {
    let md = from_str(MINIMAL2, Path::new("m.xml")).expect("parses");
    assert_eq!(md.fmi_version, FmiVersion::Fmi2);
    let x = &md.variables[0];
    assert_eq!(x.causality, Causality::Local);
    assert_eq!(x.variability, Variability::Continuous);
    assert_eq!(x.initial, None);
    assert_eq!(x.effective_initial(), Some(Initial::Calculated));
    assert!(md
        .co_simulation
        .as_ref()
        .is_some_and(|cs| !cs.can_get_and_set_fmu_state));

    for v in ["3.0", "3.0-beta.2", "3.1"] {
        let xml = format!(
            r#"<fmiModelDescription fmiVersion="{v}" modelName="M" instantiationToken="t"/>"#
        );
        let md = from_str(&xml, Path::new("m.xml")).expect("parses");
        assert_eq!(md.fmi_version, FmiVersion::Fmi3);
        assert_eq!(md.fmi_version_string, v);
        assert!(md.co_simulation.is_none());
        assert!(md.variables.is_empty());
    }
}

#[test]
fn byte_order_mark_and_latin1_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bom = dir.path().join("bom.xml");
    std::fs::write(&bom, format!("\u{feff}{MINIMAL2}")).expect("write");
    assert_eq!(from_file(&bom).expect("parses").model_name, "M");

    let latin1 = dir.path().join("latin1.xml");
    let mut bytes = br#"<?xml version="1.0" encoding="ISO-8859-1"?>
<fmiModelDescription fmiVersion="2.0" modelName="M" guid="g" description="W"#
        .to_vec();
    bytes.push(0xe4); // 'ä' in ISO-8859-1
    bytes.extend_from_slice(b"rme\"/>\n");
    let md = from_file(&latin1_write(&latin1, &bytes)).expect("parses");
    assert_eq!(md.description.as_deref(), Some("Wärme"));

    let bad = dir.path().join("bad.xml");
    let mut bytes = b"<fmiModelDescription fmiVersion=\"2.0\"\n modelName=\"".to_vec();
    bytes.push(0xff);
    bytes.extend_from_slice(b"\"/>");
    std::fs::write(&bad, &bytes).expect("write");
    match from_file(&bad) {
        Err(Error::ModelDescription { line, message, .. }) => {
            assert_eq!(line, 2);
            assert_eq!(
                message,
                "the file is not valid UTF-8 (byte 50); save it as UTF-8 or declare its encoding as ISO-8859-1"
            );
        }
        other => panic!("unexpected {other:?}"),
    }
}

fn latin1_write(path: &Path, bytes: &[u8]) -> PathBuf {
    std::fs::write(path, bytes).expect("write");
    path.to_path_buf()
}

#[test]
fn missing_file_is_an_io_error() {
    let err = from_file(Path::new("/nonexistent/modelDescription.xml")).expect_err("fails");
    assert!(matches!(err, Error::Io { .. }), "{err}");
    assert!(err
        .to_string()
        .starts_with("/nonexistent/modelDescription.xml: "));
}

// ------------------------------------------------------------------------------------------
// Errors: each with its line and exact message

#[test]
fn error_display_names_file_and_line() {
    let xml = MINIMAL2.replace(r#" valueReference="1""#, "");
    let err = from_str(&xml, Path::new("dir/modelDescription.xml")).expect_err("fails");
    assert_eq!(
        err.to_string(),
        "dir/modelDescription.xml:5: ScalarVariable \"x\": missing attribute \"valueReference\""
    );
}

#[test]
fn missing_mandatory_attributes() {
    let cases: &[(&str, &str, &str, &str)] = &[
        (
            MINIMAL2,
            r#" valueReference="1""#,
            "<ScalarVariable",
            "ScalarVariable \"x\": missing attribute \"valueReference\"",
        ),
        (
            MINIMAL2,
            r#"name="x" "#,
            "<ScalarVariable",
            "ScalarVariable: missing attribute \"name\"",
        ),
        (
            MINIMAL2,
            r#" modelName="M""#,
            "<fmiModelDescription",
            "fmiModelDescription: missing attribute \"modelName\"",
        ),
        (
            MINIMAL2,
            r#" guid="{g}""#,
            "<fmiModelDescription",
            "fmiModelDescription: missing attribute \"guid\"",
        ),
        (
            MINIMAL2,
            r#" fmiVersion="2.0""#,
            "<fmiModelDescription",
            "fmiModelDescription: missing attribute \"fmiVersion\"",
        ),
        (
            MINIMAL2,
            r#" modelIdentifier="M""#,
            "<CoSimulation",
            "CoSimulation: missing attribute \"modelIdentifier\"",
        ),
    ];
    for (base, remove, at, expected) in cases {
        let xml = base.replacen(remove, "", 1);
        assert_ne!(&xml, base, "{remove} not found");
        let (line, message) = parse_err(&xml);
        assert_eq!(message, *expected);
        assert_eq!(line, line_of(&xml, at), "{expected}");
    }

    let xml = r#"<fmiModelDescription fmiVersion="3.0" modelName="M">
</fmiModelDescription>"#;
    assert_eq!(
        parse_err(xml),
        (
            1,
            "fmiModelDescription: missing attribute \"instantiationToken\"".to_string()
        )
    );
    let xml = r#"<fmiModelDescription fmiVersion="3.0" modelName="M" instantiationToken="t">
  <ModelVariables>
    <Float64 name="x" valueReference="1"/>
    <Int32 name="y" />
  </ModelVariables>
</fmiModelDescription>"#;
    assert_eq!(
        parse_err(xml),
        (
            4,
            "Int32 \"y\": missing attribute \"valueReference\"".to_string()
        )
    );
    let xml = r#"<fmiModelDescription fmiVersion="2.0" modelName="M" guid="g">
  <ModelVariables>
    <ScalarVariable name="x" valueReference="1"/>
  </ModelVariables>
</fmiModelDescription>"#;
    assert_eq!(
        parse_err(xml),
        (
            3,
            "ScalarVariable \"x\": no type element (Real, Integer, Boolean, String or Enumeration)"
                .to_string()
        )
    );
}

fn fmi3_with_variables(vars: &str) -> String {
    format!(
        r#"<fmiModelDescription fmiVersion="3.0" modelName="M" instantiationToken="t">
  <ModelVariables>
{vars}
  </ModelVariables>
</fmiModelDescription>"#
    )
}

#[test]
fn bad_values() {
    let cases: &[(&str, &str)] = &[
        (
            r#"    <Float64 name="h" valueReference="1" start="abc"/>"#,
            "Float64 \"h\": attribute \"start\" = \"abc\" is not a number",
        ),
        (
            r#"    <Float64 name="h" valueReference="1" start="1 2 x"><Dimension start="3"/></Float64>"#,
            "Float64 \"h\": attribute \"start\" = \"1 2 x\": \"x\" is not a number",
        ),
        (
            r#"    <Int8 name="i" valueReference="1" start="300"/>"#,
            "Int8 \"i\": attribute \"start\" = \"300\" is out of range for Int8 (-128 to 127)",
        ),
        (
            r#"    <UInt32 name="u" valueReference="1" start="-1"/>"#,
            "UInt32 \"u\": attribute \"start\" = \"-1\" is out of range for UInt32 (0 to 4294967295)",
        ),
        (
            r#"    <Int32 name="i" valueReference="1" max="1.5"/>"#,
            "Int32 \"i\": attribute \"max\" = \"1.5\" is not an integer",
        ),
        (
            r#"    <Boolean name="b" valueReference="1" start="yes"/>"#,
            "Boolean \"b\": attribute \"start\" = \"yes\" is not a boolean (true or false)",
        ),
        (
            r#"    <Float64 name="x" valueReference="1" reinit="maybe"/>"#,
            "Float64 \"x\": attribute \"reinit\" = \"maybe\" is not a boolean (true or false)",
        ),
        (
            r#"    <Binary name="b" valueReference="1"><Start value="abc"/></Binary>"#,
            "Start of Binary \"b\": attribute \"value\" = \"abc\" is not hexadecimal binary data",
        ),
        (
            r#"    <Float64 name="x" valueReference="-1"/>"#,
            "Float64 \"x\": attribute \"valueReference\" = \"-1\" is not a value reference (an unsigned 32-bit integer)",
        ),
        (
            r#"    <Float64 name="x" valueReference="1" causality="inptu"/>"#,
            "Float64 \"x\": attribute \"causality\" = \"inptu\" is not one of parameter, calculatedParameter, input, output, local, independent, structuralParameter",
        ),
        (
            r#"    <Float64 name="x" valueReference="1" variability="sometimes"/>"#,
            "Float64 \"x\": attribute \"variability\" = \"sometimes\" is not one of constant, fixed, tunable, discrete, continuous",
        ),
        (
            r#"    <Float64 name="x" valueReference="1" initial="guess"/>"#,
            "Float64 \"x\": attribute \"initial\" = \"guess\" is not one of exact, approx, calculated",
        ),
        (
            r#"    <Float64 name="x" valueReference="1" declaredType="Nope"/>"#,
            "Float64 \"x\": attribute \"declaredType\" = \"Nope\" names no type in TypeDefinitions",
        ),
        (
            r#"    <Float64 name="x" valueReference="1"><Dimension/></Float64>"#,
            "Dimension of Float64 \"x\": needs attribute \"start\" or \"valueReference\"",
        ),
    ];
    for (var, expected) in cases {
        let xml = fmi3_with_variables(var);
        let (line, message) = parse_err(&xml);
        assert_eq!(message, *expected);
        assert_eq!(line, 3, "{expected}");
    }

    let xml = MINIMAL2.replace("<Real/>", r#"<Real start="1,5"/>"#);
    assert_eq!(
        parse_err(&xml),
        (
            5,
            "ScalarVariable \"x\" (Real): attribute \"start\" = \"1,5\" is not a number"
                .to_string()
        )
    );
    let xml = MINIMAL2.replace(
        r#"<CoSimulation modelIdentifier="M"/>"#,
        r#"<CoSimulation modelIdentifier="M" canGetAndSetFMUstate="yes"/>"#,
    );
    assert_eq!(
        parse_err(&xml),
        (
            3,
            "CoSimulation: attribute \"canGetAndSetFMUstate\" = \"yes\" is not a boolean (true or false)"
                .to_string()
        )
    );
    let xml = MINIMAL2.replace(
        "<ModelStructure/>",
        r#"<DefaultExperiment stopTime="ten"/><ModelStructure/>"#,
    );
    assert_eq!(
        parse_err(&xml).1,
        "DefaultExperiment: attribute \"stopTime\" = \"ten\" is not a number"
    );
}

#[test]
fn malformed_xml_reports_its_line() {
    let xml = "<fmiModelDescription fmiVersion=\"2.0\" modelName=\"M\" guid=\"g\">\n  <ModelVariables>\n    <ScalarVariable name=\"x\" valueReference=\"1\"><Real/>\n  </ModelVariables>\n</fmiModelDescription>\n";
    assert_eq!(
        parse_err(xml),
        (
            4,
            "malformed XML: ill-formed document: expected `</ScalarVariable>`, but `</ModelVariables>` was found"
                .to_string()
        )
    );
    let xml =
        "<fmiModelDescription fmiVersion=\"2.0\" modelName=\"M\" guid=\"g\">\n  <ModelVariables>\n";
    assert_eq!(
        parse_err(xml),
        (
            3,
            "malformed XML: element <ModelVariables> opened on line 2 is never closed".to_string()
        )
    );
    let xml =
        "<fmiModelDescription fmiVersion=\"2.0\"\n  modelName=\"M\" modelName=\"N\" guid=\"g\"/>\n";
    let (line, message) = parse_err(xml);
    assert_eq!(line, 1);
    assert!(
        message.starts_with("malformed XML in <fmiModelDescription>: "),
        "{message}"
    );
    assert_eq!(
        parse_err(""),
        (1, "malformed XML: the file has no root element".to_string())
    );
    assert_eq!(
        parse_err("<?xml version=\"1.0\"?>\n<Other/>"),
        (
            2,
            "the root element is <Other>, expected <fmiModelDescription>".to_string()
        )
    );
}

#[test]
fn unsupported_versions() {
    assert_eq!(
        parse_err(r#"<fmiModelDescription fmiVersion="1.0" modelName="M" guid="g"/>"#),
        (
            1,
            "fmiModelDescription: fmiVersion \"1.0\" is FMI 1.0, which is not supported (cosimo reads FMI 2.0 and 3.0 FMUs)"
                .to_string()
        )
    );
    assert_eq!(
        parse_err(r#"<fmiModelDescription fmiVersion="4.0" modelName="M" guid="g"/>"#),
        (
            1,
            "fmiModelDescription: attribute \"fmiVersion\" = \"4.0\" is not a supported FMI version (expected \"2.0\" or \"3.0\")"
                .to_string()
        )
    );
}

#[test]
fn bad_references() {
    // FMI 2: model structure index and dependency out of range, derivative out of range.
    let structure = |s: &str| MINIMAL2.replace("<ModelStructure/>", s);
    let xml = structure(
        "<ModelStructure>\n    <Outputs>\n      <Unknown index=\"2\"/>\n    </Outputs>\n  </ModelStructure>",
    );
    assert_eq!(
        parse_err(&xml),
        (
            9,
            "Unknown in <Outputs>: attribute \"index\" = \"2\" is not the index of a ScalarVariable (1 to 1)"
                .to_string()
        )
    );
    let xml = structure(
        "<ModelStructure>\n    <Derivatives><Unknown index=\"1\" dependencies=\"1 0\"/></Derivatives>\n  </ModelStructure>",
    );
    assert_eq!(
        parse_err(&xml),
        (
            8,
            "Unknown in <Derivatives> (index 1): attribute \"dependencies\" = \"1 0\": \"0\" is not the index of a ScalarVariable (1 to 1)"
                .to_string()
        )
    );
    let xml =
        structure("<ModelStructure><InitialUnknowns><Unknown/></InitialUnknowns></ModelStructure>");
    assert_eq!(
        parse_err(&xml).1,
        "Unknown in <InitialUnknowns>: missing attribute \"index\""
    );
    let xml = structure(
        "<ModelStructure><Outputs><Unknown index=\"1\" dependencies=\"1\" dependenciesKind=\"linear\"/></Outputs></ModelStructure>",
    );
    assert_eq!(
        parse_err(&xml).1,
        "Unknown in <Outputs> (index 1): attribute \"dependenciesKind\" = \"linear\" is not one of dependent, constant, fixed, tunable, discrete"
    );
    let xml = MINIMAL2.replace("<Real/>", r#"<Real derivative="5"/>"#);
    assert_eq!(
        parse_err(&xml),
        (
            5,
            "ScalarVariable \"x\" (Real): attribute \"derivative\" = \"5\" is not the index of a ScalarVariable (1 to 1)"
                .to_string()
        )
    );

    // FMI 3: value references that name no variable.
    let xml = r#"<fmiModelDescription fmiVersion="3.0" modelName="M" instantiationToken="t">
  <ModelVariables>
    <Float64 name="x" valueReference="1"/>
    <Float64 name="y" valueReference="2" derivative="7"/>
  </ModelVariables>
</fmiModelDescription>"#;
    assert_eq!(
        parse_err(xml),
        (
            4,
            "Float64 \"y\": attribute \"derivative\" = \"7\" is not the value reference of any variable"
                .to_string()
        )
    );
    let fmi3_structure = |s: &str| {
        format!(
            r#"<fmiModelDescription fmiVersion="3.0" modelName="M" instantiationToken="t">
  <ModelVariables>
    <Float64 name="x" valueReference="1"/>
    <Float64 name="y" valueReference="2" causality="output"/>
  </ModelVariables>
  <ModelStructure>
    {s}
  </ModelStructure>
</fmiModelDescription>"#
        )
    };
    assert_eq!(
        parse_err(&fmi3_structure(r#"<Output valueReference="3"/>"#)),
        (
            7,
            "Output: attribute \"valueReference\" = \"3\" is not the value reference of any variable"
                .to_string()
        )
    );
    assert_eq!(
        parse_err(&fmi3_structure(
            r#"<Output valueReference="2" dependencies="1 99"/>"#
        )),
        (
            7,
            "Output (valueReference 2): attribute \"dependencies\" = \"1 99\": \"99\" is not the value reference of any variable"
                .to_string()
        )
    );
    assert_eq!(
        parse_err(&fmi3_structure(
            r#"<InitialUnknown valueReference="2" dependencies="x"/>"#
        ))
        .1,
        "InitialUnknown (valueReference 2): attribute \"dependencies\" = \"x\" is not a value reference (an unsigned 32-bit integer)"
    );
    let xml = fmi3_with_variables(
        r#"    <Float64 name="x" valueReference="1"><Dimension valueReference="4"/></Float64>"#,
    );
    assert_eq!(
        parse_err(&xml).1,
        "Dimension of Float64 \"x\": attribute \"valueReference\" = \"4\" is not the value reference of any variable"
    );
}

#[test]
fn duplicates() {
    let xml = fmi3_with_variables(
        "    <Float64 name=\"x\" valueReference=\"1\"/>\n    <Int32 name=\"x\" valueReference=\"2\"/>",
    );
    assert_eq!(
        parse_err(&xml),
        (
            4,
            "Int32 \"x\": duplicate variable name (first declared on line 3)".to_string()
        )
    );
    let xml = fmi3_with_variables(
        "    <Float64 name=\"x\" valueReference=\"1\"/>\n    <Int32 name=\"y\" valueReference=\"1\"/>",
    );
    assert_eq!(
        parse_err(&xml),
        (
            4,
            "Int32 \"y\": valueReference 1 is already used by \"x\"".to_string()
        )
    );
    let xml = MINIMAL2.replace(
        "</ModelVariables>",
        "<ScalarVariable name=\"x\" valueReference=\"2\"><Integer/></ScalarVariable>\n  </ModelVariables>",
    );
    assert_eq!(
        parse_err(&xml),
        (
            6,
            "ScalarVariable \"x\": duplicate variable name (first declared on line 5)".to_string()
        )
    );
}

// ------------------------------------------------------------------------------------------
// What the schema allows loads, with a warning naming file, line, element and attribute

/// Every warning logged in this test process (a process-wide logger that keeps each message).
fn logged() -> &'static std::sync::Mutex<Vec<String>> {
    struct Keep;
    static LOGGED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    impl log::Log for Keep {
        fn enabled(&self, metadata: &log::Metadata) -> bool {
            metadata.level() <= log::Level::Warn
        }
        fn log(&self, record: &log::Record) {
            if let Ok(mut all) = LOGGED.lock() {
                all.push(format!("{}: {}", record.level(), record.args()));
            }
        }
        fn flush(&self) {}
    }
    static INIT: std::sync::Once = std::sync::Once::new();
    INIT.call_once(|| {
        if log::set_boxed_logger(Box::new(Keep)).is_ok() {
            log::set_max_level(log::LevelFilter::Warn);
        }
    });
    &LOGGED
}

/// Parse `xml` named `origin` (unique per test: the parser says each warning once per process),
/// expecting success; returns the description and the warnings logged for `origin` (without
/// the "WARN: " prefix).
fn parse_warned(xml: &str, origin: &str) -> (ModelDescription, Vec<String>) {
    let logged = logged();
    let md = from_str(xml, Path::new(origin)).unwrap_or_else(|e| panic!("{e}"));
    let prefix = format!("WARN: {origin}:");
    let warnings = logged
        .lock()
        .unwrap()
        .iter()
        .filter(|w| w.starts_with(&prefix))
        .map(|w| w["WARN: ".len()..].to_string())
        .collect();
    (md, warnings)
}

/// Assert that `warnings` are exactly one per `(line, start)`, each beginning with
/// "`origin`:`line`: `start`".
fn assert_warnings(warnings: &[String], origin: &str, expected: &[(usize, &str)]) {
    assert_eq!(warnings.len(), expected.len(), "{warnings:#?}");
    for (line, start) in expected {
        let head = format!("{origin}:{line}: {start}");
        assert!(
            warnings.iter().any(|w| w.starts_with(&head)),
            "no warning starting with\n  {head}\nin {warnings:#?}"
        );
    }
}

/// FMI 2: every name the schema types `xs:normalizedString` (use="required"), empty.
const EMPTY_NAMES2: &str = r#"<?xml version="1.0"?>
<fmiModelDescription fmiVersion="2.0" modelName="M" guid="{g}">
  <ModelExchange modelIdentifier=""/>
  <CoSimulation modelIdentifier="M"/>
  <UnitDefinitions>
    <Unit name="">
      <DisplayUnit name="" factor="2"/>
    </Unit>
  </UnitDefinitions>
  <TypeDefinitions>
    <SimpleType name="">
      <Enumeration>
        <Item name="" value="1"/>
      </Enumeration>
    </SimpleType>
  </TypeDefinitions>
  <LogCategories>
    <Category name=""/>
  </LogCategories>
  <ModelVariables>
    <ScalarVariable name="" valueReference="1"><Real unit="" displayUnit=""/></ScalarVariable>
    <ScalarVariable name="mode" valueReference="1"><Enumeration declaredType=""/></ScalarVariable>
  </ModelVariables>
  <ModelStructure/>
</fmiModelDescription>
"#;

#[test]
fn fmi2_empty_names_load_with_warnings() {
    let origin = "empty-names/fmi2/modelDescription.xml";
    let (md, warnings) = parse_warned(EMPTY_NAMES2, origin);
    assert_eq!(md.model_exchange_identifier.as_deref(), Some(""));
    assert_eq!(md.co_simulation_identifier(), Some("M"));
    assert_eq!(md.units.len(), 1);
    assert_eq!(md.units[0].name, "");
    assert_eq!(md.units[0].display_units[0].name, "");
    assert_eq!(md.units[0].display_units[0].factor, 2.0);
    assert_eq!(md.type_definitions[0].name, "");
    assert_eq!(md.type_definitions[0].items[0].name, "");
    assert_eq!(md.type_definitions[0].items[0].value, 1);
    assert_eq!(md.log_categories[0].name, "");
    assert_eq!(md.variables[0].name, "");
    assert_eq!(md.variables[0].unit.as_deref(), Some(""));
    assert_eq!(md.variables[1].declared_type.as_deref(), Some(""));
    assert_warnings(
        &warnings,
        origin,
        &[
            (3, "ModelExchange: attribute \"modelIdentifier\" is empty (the FMI schema allows it); it names the Model Exchange binary, so that interface cannot be used"),
            (6, "Unit: attribute \"name\" is empty (the FMI schema allows it); variables can only refer to this unit with unit=\"\""),
            (7, "DisplayUnit of Unit \"\": attribute \"name\" is empty (the FMI schema allows it); "),
            (11, "SimpleType: attribute \"name\" is empty (the FMI schema allows it); variables can only declare this type with declaredType=\"\""),
            (13, "Item of SimpleType \"\" (Enumeration): attribute \"name\" is empty (the FMI schema allows it); "),
            (18, "Category: attribute \"name\" is empty (the FMI schema allows it); "),
            (21, "ScalarVariable: attribute \"name\" is empty (the FMI schema allows it); connections, start values, inputs and result columns name variables"),
        ],
    );
    // Said once per process: a second parse (a sweep opens the FMU for every run) is quiet.
    let (_, again) = parse_warned(EMPTY_NAMES2, origin);
    assert_eq!(again.len(), warnings.len());
}

#[test]
fn fmi3_empty_names_load_with_warnings() {
    let xml = r#"<fmiModelDescription fmiVersion="3.0" modelName="M" instantiationToken="t">
  <ModelExchange modelIdentifier=""/>
  <CoSimulation modelIdentifier="M"/>
  <ScheduledExecution modelIdentifier=" "/>
  <UnitDefinitions>
    <Unit name=""><DisplayUnit name="" inverse="true"/></Unit>
  </UnitDefinitions>
  <TypeDefinitions>
    <Float64Type name="" unit=""/>
    <EnumerationType name="Mode"><Item name="" value="-1"/></EnumerationType>
  </TypeDefinitions>
  <LogCategories><Category name=""/></LogCategories>
  <ModelVariables>
    <Float64 name="" valueReference="1" declaredType=""/>
    <Enumeration name="mode" valueReference="2" declaredType="Mode" start="-1"/>
  </ModelVariables>
</fmiModelDescription>"#;
    let origin = "empty-names/fmi3/modelDescription.xml";
    let (md, warnings) = parse_warned(xml, origin);
    assert_eq!(md.model_exchange_identifier.as_deref(), Some(""));
    assert_eq!(md.scheduled_execution_identifier.as_deref(), Some(" "));
    assert_eq!(md.units[0].name, "");
    assert!(md.units[0].display_units[0].inverse);
    assert_eq!(md.type_definitions[0].name, "");
    assert_eq!(md.type_definitions[1].items[0].name, "");
    assert_eq!(md.log_categories[0].name, "");
    let x = &md.variables[0];
    assert_eq!(x.name, "");
    // The type named "" is found, and its unit inherited.
    assert_eq!(x.unit.as_deref(), Some(""));
    assert_eq!(md.variables[1].start, Some(StartValue::Int(vec![-1])));
    assert_warnings(
        &warnings,
        origin,
        &[
            (2, "ModelExchange: attribute \"modelIdentifier\" is empty"),
            (4, "ScheduledExecution: attribute \"modelIdentifier\" is empty (the FMI schema allows it); it names the Scheduled Execution binary"),
            (6, "Unit: attribute \"name\" is empty"),
            (6, "DisplayUnit of Unit \"\": attribute \"name\" is empty"),
            (9, "Float64Type: attribute \"name\" is empty"),
            (10, "Item of EnumerationType \"Mode\": attribute \"name\" is empty"),
            (12, "Category: attribute \"name\" is empty"),
            (14, "Float64: attribute \"name\" is empty"),
        ],
    );
}

#[test]
fn an_empty_co_simulation_model_identifier_is_still_an_error() {
    // The schema allows it, but it names the library cosimo loads: the FMU is unusable.
    let xml = MINIMAL2.replace(r#"modelIdentifier="M""#, r#"modelIdentifier="""#);
    assert_eq!(
        parse_err(&xml),
        (
            3,
            "CoSimulation: attribute \"modelIdentifier\" is empty; it names the FMU's shared \
             library (binaries/<platform>/<modelIdentifier> with .so, .dll or .dylib), without \
             which the Co-Simulation interface cannot be loaded"
                .to_string()
        )
    );
    let xml = r#"<fmiModelDescription fmiVersion="3.0" modelName="M" instantiationToken="t">
  <CoSimulation modelIdentifier=" "/>
</fmiModelDescription>"#;
    let (line, message) = parse_err(xml);
    assert_eq!(line, 2);
    assert!(
        message.starts_with("CoSimulation: attribute \"modelIdentifier\" is empty"),
        "{message}"
    );
}

#[test]
fn dependency_kinds_that_do_not_match_the_dependencies_are_ignored_with_a_warning() {
    // FMI 2: two kinds for one dependency; kinds without dependencies.
    let xml = MINIMAL2.replace(
        "<ModelStructure/>",
        "<ModelStructure>\n    <Outputs><Unknown index=\"1\" dependencies=\"1\" dependenciesKind=\"dependent fixed\"/></Outputs>\n    <Derivatives><Unknown index=\"1\" dependenciesKind=\"constant\"/></Derivatives>\n    <InitialUnknowns><Unknown index=\"1\" dependencies=\"1\" dependenciesKind=\"fixed\"/></InitialUnknowns>\n  </ModelStructure>",
    );
    let origin = "kinds/fmi2/modelDescription.xml";
    let (md, warnings) = parse_warned(&xml, origin);
    let ms = &md.model_structure;
    assert_eq!(ms.outputs[0].dependencies, Some(vec![0]));
    assert_eq!(ms.outputs[0].dependencies_kind, None);
    assert_eq!(ms.continuous_state_derivatives[0].dependencies, None);
    assert_eq!(ms.continuous_state_derivatives[0].dependencies_kind, None);
    // A matching list is kept.
    assert_eq!(
        ms.initial_unknowns[0].dependencies_kind,
        Some(vec![DependencyKind::Fixed])
    );
    assert_warnings(
        &warnings,
        origin,
        &[
            (8, "Unknown in <Outputs> (index 1): attribute \"dependenciesKind\" lists 2 kinds for 1 dependencies; the kinds are ignored (each dependency counts as \"dependent\")"),
            (9, "Unknown in <Derivatives> (index 1): attribute \"dependenciesKind\" lists 1 kinds for 0 dependencies; the kinds are ignored"),
        ],
    );

    // FMI 3.
    let xml = r#"<fmiModelDescription fmiVersion="3.0" modelName="M" instantiationToken="t">
  <ModelVariables>
    <Float64 name="u" valueReference="1" causality="input" start="0"/>
    <Float64 name="y" valueReference="2" causality="output"/>
  </ModelVariables>
  <ModelStructure>
    <Output valueReference="2" dependencies="1" dependenciesKind="constant tunable"/>
  </ModelStructure>
</fmiModelDescription>"#;
    let origin = "kinds/fmi3/modelDescription.xml";
    let (md, warnings) = parse_warned(xml, origin);
    assert_eq!(md.output_dependencies(1), Some(&[0][..]));
    assert_eq!(md.model_structure.outputs[0].dependencies_kind, None);
    assert_warnings(
        &warnings,
        origin,
        &[(
            7,
            "Output (valueReference 2): attribute \"dependenciesKind\" lists 2 kinds for 1 dependencies",
        )],
    );
}

/// Unpack `fmu` into `dir`, rewriting its modelDescription.xml with `edit`.
fn unpack_edited(fmu: &Path, dir: &Path, edit: impl Fn(&str) -> String) {
    let mut zip = zip::ZipArchive::new(std::fs::File::open(fmu).unwrap()).unwrap();
    zip.extract(dir).unwrap();
    let md = dir.join("modelDescription.xml");
    let text = std::fs::read_to_string(&md).unwrap();
    let edited = edit(&text);
    assert_ne!(edited, text, "the edit changed nothing");
    std::fs::write(&md, edited).unwrap();
}

/// Zip the folder `dir` into the archive `fmu`.
fn pack(dir: &Path, fmu: &Path) {
    use std::io::Write;
    let mut zip = zip::ZipWriter::new(std::fs::File::create(fmu).unwrap());
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let name = path
                .strip_prefix(dir)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            zip.start_file(name, zip::write::SimpleFileOptions::default())
                .unwrap();
            zip.write_all(&std::fs::read(&path).unwrap()).unwrap();
        }
    }
    zip.finish().unwrap();
}

/// Run cosimo in `dir`; (exit code, stderr).
fn cosimo_in(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cosimo"))
        .args(args)
        .current_dir(dir)
        .env_remove("COSIMO_LOG")
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn inspect_and_run_take_an_fmu_with_an_empty_unit_name() {
    // As FMUs published on PyPI have it: <Unit name=""/>, used by a variable's unit="".
    let empty_unit = |md: &str| {
        md.replacen(
            "<Unit name=\"s\"/>",
            "<Unit name=\"s\"/>\n    <Unit name=\"\"/>",
            1,
        )
    };
    let warning = "Unit: attribute \"name\" is empty (the FMI schema allows it); variables can \
                   only refer to this unit with unit=\"\"";
    let dir = tempfile::tempdir().unwrap();

    // FMI 2, packed as a .fmu: warnings name the file inside the archive the user gave.
    let unpacked = dir.path().join("unpacked2");
    unpack_edited(&fmu_pack::fmu_path("Dahlquist", 2), &unpacked, |md| {
        empty_unit(md).replacen(
            "<Real start=\"1.0\"/>",
            "<Real unit=\"\" start=\"1.0\"/>",
            1,
        )
    });
    pack(&unpacked, &dir.path().join("empty-unit.fmu"));
    let (code, stderr) = cosimo_in(dir.path(), &["run", "empty-unit.fmu"]);
    assert_eq!(code, Some(0), "{stderr}");
    let expected = format!("empty-unit.fmu/modelDescription.xml:8: {warning}");
    assert_eq!(
        stderr.matches(&expected).count(),
        1,
        "should warn once with\n  {expected}\nbut said:\n{stderr}"
    );
    // Named after the FMU's file, as FMPy names it, not after its modelName.
    assert!(dir.path().join("empty-unit_out.csv").is_file());

    // FMI 3, an unpacked folder.
    unpack_edited(
        &fmu_pack::fmu_path("Dahlquist", 3),
        &dir.path().join("empty-unit3"),
        |md| empty_unit(md).replacen("name=\"x0\"", "name=\"x0\" unit=\"\"", 1),
    );
    let (code, stderr) = cosimo_in(dir.path(), &["inspect", "empty-unit3"]);
    assert_eq!(code, Some(0), "{stderr}");
    let expected = format!(
        "{}:8: {warning}",
        Path::new("empty-unit3")
            .join("modelDescription.xml")
            .display()
    );
    assert!(
        stderr.contains(&expected),
        "should warn with\n  {expected}\nbut said:\n{stderr}"
    );
}

#[test]
fn clocks_that_name_no_clock_are_ignored_with_a_warning() {
    // The schema types "clocks" as a list of value references; one that names a variable of
    // another type is dropped (a name that resolves to nothing stays an error).
    let xml = fmi3_with_variables(
        "    <Clock name=\"c\" valueReference=\"1\" causality=\"input\" intervalVariability=\"triggered\"/>\n    <Float64 name=\"x\" valueReference=\"2\" clocks=\"2 1\"/>",
    );
    let origin = "clocks/fmi3/modelDescription.xml";
    let (md, warnings) = parse_warned(&xml, origin);
    assert_eq!(md.variables[1].clocks, [0]);
    assert_warnings(
        &warnings,
        origin,
        &[(
            4,
            "Float64 \"x\": attribute \"clocks\" refers to \"x\", which is not a Clock; the reference is ignored",
        )],
    );
    let xml = fmi3_with_variables(r#"    <Float64 name="x" valueReference="1" clocks="7"/>"#);
    assert_eq!(
        parse_err(&xml),
        (
            3,
            "Float64 \"x\": attribute \"clocks\" = \"7\" is not the value reference of any variable"
                .to_string()
        )
    );
}

// ------------------------------------------------------------------------------------------
// Hostile files (issue 15)

/// An FMI 2 description with `depth` levels of `<a>` in a vendor annotation on line 4.
fn deeply_annotated(depth: usize) -> String {
    format!(
        "<?xml version=\"1.0\"?>\n<fmiModelDescription fmiVersion=\"2.0\" modelName=\"M\" \
         guid=\"g\">\n  <CoSimulation modelIdentifier=\"M\"/>\n  <VendorAnnotations><Tool \
         name=\"x\">{}{}</Tool></VendorAnnotations>\n  <ModelVariables/>\n</fmiModelDescription>\n",
        "<a>".repeat(depth),
        "</a>".repeat(depth)
    )
}

#[test]
fn nesting_deeper_than_the_parser_takes_is_an_error_naming_the_line() {
    // 150,000 levels used to overflow the stack (the element tree was dropped recursively).
    let expected = (
        4,
        "the elements are nested deeper than 1000 levels, inside <VendorAnnotations> (line 4) \
         and <Tool name=\"x\"> (line 4); cosimo reads at most 1000 levels: remove or flatten \
         the deeply nested content"
            .to_string(),
    );
    assert_eq!(parse_err(&deeply_annotated(150_000)), expected);
    // <fmiModelDescription>, <VendorAnnotations> and <Tool> are three levels.
    assert_eq!(parse_err(&deeply_annotated(1000 - 3 + 1)), expected);
    from_str(&deeply_annotated(1000 - 3), Path::new("m.xml")).expect("as deep as it takes");
}

#[test]
fn an_element_with_fifty_thousand_attributes_parses_in_linear_time() {
    // Repeated attributes used to be found by comparing each with every earlier one: half a
    // minute for this element in a debug build.
    let attrs: Vec<String> = (0..50_000).map(|i| format!("a{i}=\"1\"")).collect();
    let xml = format!(
        "<fmiModelDescription fmiVersion=\"2.0\" modelName=\"M\" guid=\"g\" {}>\n  \
         <CoSimulation modelIdentifier=\"M\"/>\n</fmiModelDescription>\n",
        attrs.join(" ")
    );
    from_str(&xml, Path::new("m.xml")).expect("parses");
    let repeated = xml.replacen("a49999=", "a7=", 1);
    assert_eq!(
        parse_err(&repeated),
        (
            1,
            "malformed XML in <fmiModelDescription>: attribute \"a7\" is given twice".to_string()
        )
    );
}

#[test]
fn inspect_shows_a_variable_name_longer_than_a_format_width_can_be() {
    // Padding with `{:<w$}` panicked for widths past 65,535.
    let name = "n".repeat(70_000);
    let xml = fmi3_with_variables(&format!(
        "    <Float64 name=\"{name}\" valueReference=\"1\"/>\n    <Float64 name=\"y\" valueReference=\"2\"/>"
    ));
    let md = from_str(&xml, Path::new("m.xml")).expect("parses");
    let text = cosimo::fmu::summary::text(&md, Path::new("m.xml"));
    let y = text
        .lines()
        .find(|l| l.trim_start().starts_with("y "))
        .expect("a row for y");
    assert!(
        y.contains(&format!("y{}local", " ".repeat(70_000))),
        "{}",
        &y[..40]
    );
}

#[test]
fn warnings_are_bounded_however_many_tokens_quote_a_long_name() {
    // A warning per token of "clocks", each quoting the long name: 100 KB of file made
    // 400 MB of warnings.
    let name = "n".repeat(100_000);
    let xml = fmi3_with_variables(&format!(
        "    <Float64 name=\"{name}\" valueReference=\"2\" clocks=\"{}\"/>",
        "2 ".repeat(2000)
    ));
    let origin = "bounded/modelDescription.xml";
    let (md, warnings) = parse_warned(&xml, origin);
    assert!(md.variables[0].clocks.is_empty());
    // Said once each (the first 1000 are identical), then the note.
    assert_eq!(warnings.len(), 2, "{}", warnings.len());
    assert!(warnings[0].len() < 1100);
    assert_eq!(
        warnings[1],
        format!("{origin}:3: further warnings are not shown after 1000; fix these first")
    );
}
