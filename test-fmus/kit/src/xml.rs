//! `modelDescription.xml` for FMI 2.0 and FMI 3.0, both generated from the variable table.

use std::collections::BTreeSet;
use std::fmt::Write;

use crate::instance::CATEGORIES;
use crate::model::Model;
use crate::variable::{Causality, EnumerationType, Start, Table, VarType, Variable};

/// Escapes text for an XML attribute value.
fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            '\n' => o.push_str("&#10;"),
            c if (c as u32) < 0x20 && c != '\t' => {}
            c => o.push(c),
        }
    }
    o
}

/// A float as the shortest text that reads back to the same value.
fn num(x: f64) -> String {
    if x.is_finite() {
        format!("{x:?}")
    } else if x.is_nan() {
        "NaN".into()
    } else if x > 0.0 {
        "INF".into()
    } else {
        "-INF".into()
    }
}

/// A bound in the variable's type (integer types print as integers).
fn bound(v: &Variable, x: f64) -> String {
    if v.ty.is_integer() {
        format!("{}", x as i128)
    } else {
        num(x)
    }
}

/// Bytes as hexBinary text.
fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The start value as an attribute text (space-separated for arrays).
fn start_text(s: &Start) -> String {
    let join = |it: Vec<String>| it.join(" ");
    match s {
        Start::Float(v) => join(v.iter().map(|&x| num(x)).collect()),
        Start::Int(v) => join(v.iter().map(|x| x.to_string()).collect()),
        Start::Bool(v) => join(v.iter().map(|b| b.to_string()).collect()),
        Start::Str(v) => v.first().map_or(String::new(), |s| esc(s)),
        Start::Binary(v) => join(v.iter().map(|b| hex(b)).collect()),
    }
}

fn common_attrs(v: &Variable, fmi2: bool, o: &mut String) {
    let _ = write!(o, " name=\"{}\" valueReference=\"{}\"", esc(&v.name), v.vr);
    if let Some(d) = &v.description {
        let _ = write!(o, " description=\"{}\"", esc(d));
    }
    let _ = write!(o, " causality=\"{}\"", v.causality_xml(fmi2));
    if v.causality != Causality::Independent {
        let _ = write!(o, " variability=\"{}\"", v.variability_xml());
    }
    if let Some(i) = v.initial_xml() {
        let _ = write!(o, " initial=\"{i}\"");
    }
}

fn type_attrs(v: &Variable, o: &mut String) {
    if let Some(u) = &v.unit {
        let _ = write!(o, " unit=\"{}\"", esc(u));
    }
    if let Some(m) = v.min {
        let _ = write!(o, " min=\"{}\"", bound(v, m));
    }
    if let Some(m) = v.max {
        let _ = write!(o, " max=\"{}\"", bound(v, m));
    }
    if let Some(n) = v.nominal {
        if v.ty.is_float() {
            let _ = write!(o, " nominal=\"{}\"", num(n));
        }
    }
}

fn units(table: &Table, fmi2: bool) -> String {
    let units: BTreeSet<&str> = table
        .vars
        .iter()
        .filter(|v| !fmi2 || v.in_fmi2())
        .filter_map(|v| v.unit.as_deref())
        .collect();
    if units.is_empty() {
        return String::new();
    }
    let mut o = String::from("  <UnitDefinitions>\n");
    for u in units {
        let _ = writeln!(o, "    <Unit name=\"{}\"/>", esc(u));
    }
    o.push_str("  </UnitDefinitions>\n");
    o
}

/// The enumeration types of the variables shown in one FMI version, first use first.
fn enumeration_types(table: &Table, fmi2: bool) -> Vec<&EnumerationType> {
    let mut seen = BTreeSet::new();
    table
        .vars
        .iter()
        .filter(|v| !fmi2 || v.in_fmi2())
        .filter_map(|v| v.declared_type.as_ref())
        .filter(|t| seen.insert(t.name.as_str()))
        .collect()
}

/// `TypeDefinitions` (FMI 2 `SimpleType` + `Enumeration`, FMI 3 `EnumerationType`).
fn type_definitions(table: &Table, fmi2: bool) -> String {
    let types = enumeration_types(table, fmi2);
    if types.is_empty() {
        return String::new();
    }
    let mut o = String::from("  <TypeDefinitions>\n");
    for t in types {
        let (open, close, indent) = if fmi2 {
            (
                format!(
                    "    <SimpleType name=\"{}\">\n      <Enumeration>\n",
                    esc(&t.name)
                ),
                "      </Enumeration>\n    </SimpleType>\n",
                "        ",
            )
        } else {
            (
                format!("    <EnumerationType name=\"{}\">\n", esc(&t.name)),
                "    </EnumerationType>\n",
                "      ",
            )
        };
        o.push_str(&open);
        for (name, value) in &t.items {
            let _ = writeln!(
                o,
                "{indent}<Item name=\"{}\" value=\"{value}\"/>",
                esc(name)
            );
        }
        o.push_str(close);
    }
    o.push_str("  </TypeDefinitions>\n");
    o
}

/// `declaredType` of an Enumeration variable.
fn declared_type(v: &Variable, o: &mut String) {
    if let Some(t) = &v.declared_type {
        let _ = write!(o, " declaredType=\"{}\"", esc(&t.name));
    }
}

fn log_categories() -> String {
    let mut o = String::from("  <LogCategories>\n");
    for c in CATEGORIES {
        let _ = writeln!(o, "    <Category name=\"{c}\"/>");
    }
    o.push_str("  </LogCategories>\n");
    o
}

/// The XML declaration and the root element's start tag; `extra` are further attributes
/// (each with a leading space).
fn header<M: Model>(version: &str, id_attr: &str, token: &str, extra: &str) -> String {
    let mut o = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        o,
        "<fmiModelDescription fmiVersion=\"{version}\" modelName=\"{}\" {id_attr}=\"{token}\" description=\"{}\" generationTool=\"fmu-kit {}\" variableNamingConvention=\"structured\"{extra}>",
        esc(M::NAME),
        esc(M::DESCRIPTION),
        env!("CARGO_PKG_VERSION"),
    );
    o
}

fn experiment<M: Model>() -> String {
    let e = M::EXPERIMENT;
    format!(
        "  <DefaultExperiment startTime=\"{}\" stopTime=\"{}\" stepSize=\"{}\"/>\n",
        num(e.start),
        num(e.stop),
        num(e.step)
    )
}

/// The FMI 2.0 model description.
pub fn fmi2<M: Model>(table: &Table) -> String {
    let vars: Vec<(usize, &Variable)> = table
        .vars
        .iter()
        .enumerate()
        .filter(|(_, v)| v.in_fmi2())
        .collect();
    // 1-based FMI 2 index of each table index.
    let index_of = |i: usize| vars.iter().position(|&(j, _)| j == i).map(|p| p + 1);
    let vr_index = |vr: u32| table.index_of(vr).and_then(index_of);
    // Model Exchange: the event indicator count on the root, and the interface's element
    // before CoSimulation (the order of the FMI 2.0 schema).
    let extra = if M::MODEL_EXCHANGE {
        format!(" numberOfEventIndicators=\"{}\"", M::NUM_EVENT_INDICATORS)
    } else {
        String::new()
    };
    let mut o = header::<M>("2.0", "guid", &table.token, &extra);
    if M::MODEL_EXCHANGE {
        let _ = writeln!(
            o,
            "  <ModelExchange modelIdentifier=\"{}\" needsExecutionTool=\"false\" completedIntegratorStepNotNeeded=\"false\" canBeInstantiatedOnlyOncePerProcess=\"false\" canNotUseMemoryManagementFunctions=\"true\" canGetAndSetFMUstate=\"true\" canSerializeFMUstate=\"true\" providesDirectionalDerivative=\"true\"/>",
            esc(M::NAME)
        );
    }
    let _ = writeln!(
        o,
        "  <CoSimulation modelIdentifier=\"{}\" needsExecutionTool=\"false\" canHandleVariableCommunicationStepSize=\"true\" canInterpolateInputs=\"true\" maxOutputDerivativeOrder=\"{}\" canRunAsynchronuously=\"false\" canBeInstantiatedOnlyOncePerProcess=\"false\" canNotUseMemoryManagementFunctions=\"true\" canGetAndSetFMUstate=\"true\" canSerializeFMUstate=\"true\" providesDirectionalDerivative=\"true\"/>",
        esc(M::NAME),
        M::MAX_OUTPUT_DERIVATIVE_ORDER
    );
    o.push_str(&units(table, true));
    o.push_str(&type_definitions(table, true));
    o.push_str(&log_categories());
    o.push_str(&experiment::<M>());
    o.push_str("  <ModelVariables>\n");
    for (k, &(i, v)) in vars.iter().enumerate() {
        let _ = write!(o, "    <!-- index {} -->\n    <ScalarVariable", k + 1);
        common_attrs(v, true, &mut o);
        o.push_str(">\n");
        let _ = write!(o, "      <{}", v.ty.fmi2_name().unwrap_or("Real"));
        declared_type(v, &mut o);
        if matches!(
            v.ty,
            VarType::Float64 | VarType::Int32 | VarType::Enumeration
        ) {
            type_attrs(v, &mut o);
        }
        if let Some(s) = &v.start {
            let _ = write!(o, " start=\"{}\"", start_text(s));
        }
        if let Some(d) = v.derivative_of.and_then(vr_index) {
            let _ = write!(o, " derivative=\"{d}\"");
        }
        if v.reinit {
            o.push_str(" reinit=\"true\"");
        }
        let _ = i;
        o.push_str("/>\n    </ScalarVariable>\n");
    }
    o.push_str("  </ModelVariables>\n  <ModelStructure>\n");
    let unknown = |o: &mut String, i: usize, deps: Option<Vec<u32>>| {
        let Some(idx) = index_of(i) else { return };
        let _ = write!(o, "      <Unknown index=\"{idx}\"");
        if let Some(d) = deps {
            let mut d: Vec<usize> = d.into_iter().filter_map(vr_index).collect();
            d.sort_unstable();
            d.dedup();
            let kinds = vec!["dependent"; d.len()].join(" ");
            let list: Vec<String> = d.iter().map(ToString::to_string).collect();
            let _ = write!(
                o,
                " dependencies=\"{}\" dependenciesKind=\"{kinds}\"",
                list.join(" ")
            );
        }
        o.push_str("/>\n");
    };
    let outputs: Vec<usize> = vars
        .iter()
        .filter(|(_, v)| v.causality == Causality::Output)
        .map(|&(i, _)| i)
        .collect();
    if !outputs.is_empty() {
        o.push_str("    <Outputs>\n");
        for &i in &outputs {
            unknown(&mut o, i, Some(table.dependencies_of(i)));
        }
        o.push_str("    </Outputs>\n");
    }
    // Array states (FMI 3 only) have no FMI 2 index.
    let mut ders: Vec<usize> = table
        .states
        .iter()
        .map(|s| s.1)
        .filter(|&i| index_of(i).is_some())
        .collect();
    ders.sort_by_key(|&i| index_of(i));
    if !ders.is_empty() {
        o.push_str("    <Derivatives>\n");
        for &i in &ders {
            unknown(&mut o, i, Some(table.dependencies_of(i)));
        }
        o.push_str("    </Derivatives>\n");
    }
    let inits: Vec<usize> = table
        .initial_unknowns()
        .into_iter()
        .filter(|&i| table.vars[i].in_fmi2())
        .collect();
    if !inits.is_empty() {
        o.push_str("    <InitialUnknowns>\n");
        for &i in &inits {
            unknown(&mut o, i, None);
        }
        o.push_str("    </InitialUnknowns>\n");
    }
    o.push_str("  </ModelStructure>\n</fmiModelDescription>\n");
    o
}

/// The FMI 3.0 model description.
pub fn fmi3<M: Model>(table: &Table) -> String {
    let events = crate::fmi3::has_events::<M>();
    let mut o = header::<M>("3.0", "instantiationToken", &table.token, "");
    if M::MODEL_EXCHANGE {
        let _ = writeln!(
            o,
            "  <ModelExchange modelIdentifier=\"{}\" needsExecutionTool=\"false\" canBeInstantiatedOnlyOncePerProcess=\"false\" canGetAndSetFMUState=\"true\" canSerializeFMUState=\"true\" providesDirectionalDerivatives=\"true\" providesAdjointDerivatives=\"true\" providesPerElementDependencies=\"false\" needsCompletedIntegratorStep=\"true\" providesEvaluateDiscreteStates=\"false\"/>",
            esc(M::NAME)
        );
    }
    if M::SCHEDULED_EXECUTION {
        let _ = writeln!(
            o,
            "  <ScheduledExecution modelIdentifier=\"{}\" needsExecutionTool=\"false\" canBeInstantiatedOnlyOncePerProcess=\"false\" canGetAndSetFMUState=\"false\" canSerializeFMUState=\"false\" providesDirectionalDerivatives=\"false\" providesAdjointDerivatives=\"false\" providesPerElementDependencies=\"false\"/>",
            esc(M::NAME)
        );
    } else {
        let _ = writeln!(
            o,
            "  <CoSimulation modelIdentifier=\"{}\" needsExecutionTool=\"false\" canBeInstantiatedOnlyOncePerProcess=\"false\" canGetAndSetFMUState=\"true\" canSerializeFMUState=\"true\" providesDirectionalDerivatives=\"true\" providesAdjointDerivatives=\"true\" providesPerElementDependencies=\"false\" maxOutputDerivativeOrder=\"{}\" providesIntermediateUpdate=\"true\" mightReturnEarlyFromDoStep=\"{events}\" canReturnEarlyAfterIntermediateUpdate=\"false\" hasEventMode=\"{events}\" providesEvaluateDiscreteStates=\"false\" canHandleVariableCommunicationStepSize=\"true\"/>",
            esc(M::NAME),
            M::MAX_OUTPUT_DERIVATIVE_ORDER
        );
    }
    o.push_str(&units(table, false));
    o.push_str(&type_definitions(table, false));
    o.push_str(&log_categories());
    o.push_str(&experiment::<M>());
    o.push_str("  <ModelVariables>\n");
    for v in &table.vars {
        let _ = write!(o, "    <{}", v.ty.fmi3_name());
        common_attrs(v, false, &mut o);
        declared_type(v, &mut o);
        if v.intermediate_update {
            o.push_str(" intermediateUpdate=\"true\"");
        }
        if v.ty != VarType::String && v.ty != VarType::Binary && v.ty != VarType::Boolean {
            type_attrs(v, &mut o);
        }
        let element_starts = matches!(v.ty, VarType::String | VarType::Binary);
        if let (Some(s), false) = (&v.start, element_starts) {
            let _ = write!(o, " start=\"{}\"", start_text(s));
        }
        if let Some(d) = v.derivative_of {
            let _ = write!(o, " derivative=\"{d}\"");
        }
        if v.reinit {
            o.push_str(" reinit=\"true\"");
        }
        if !v.clocks.is_empty() {
            let list: Vec<String> = v.clocks.iter().map(ToString::to_string).collect();
            let _ = write!(o, " clocks=\"{}\"", list.join(" "));
        }
        let starts: Vec<String> = match &v.start {
            Some(Start::Str(s)) => s.iter().map(|x| esc(x)).collect(),
            Some(Start::Binary(b)) => b.iter().map(|x| hex(x)).collect(),
            _ => Vec::new(),
        };
        if v.dims.is_empty() && starts.is_empty() && v.aliases.is_empty() {
            o.push_str("/>\n");
            continue;
        }
        o.push_str(">\n");
        // The FMI 3.0 schema's order (as FMPy validates it): Dimension, Start, then Alias.
        match v.sized_by {
            Some(p) => {
                let _ = writeln!(o, "      <Dimension valueReference=\"{p}\"/>");
            }
            None => {
                for d in &v.dims {
                    let _ = writeln!(o, "      <Dimension start=\"{d}\"/>");
                }
            }
        }
        for s in starts {
            let _ = writeln!(o, "      <Start value=\"{s}\"/>");
        }
        for a in &v.aliases {
            let _ = writeln!(o, "      <Alias name=\"{}\"/>", esc(a));
        }
        let _ = writeln!(o, "    </{}>", v.ty.fmi3_name());
    }
    let clocks = M::default().clocks();
    for c in &clocks {
        let causality = if c.output { "output" } else { "input" };
        let _ = write!(
            o,
            "    <Clock name=\"{}\" valueReference=\"{}\" causality=\"{causality}\" variability=\"discrete\" intervalVariability=\"{}\"",
            esc(&c.name),
            c.vr,
            c.variability.xml()
        );
        if let Some(d) = &c.description {
            let _ = write!(o, " description=\"{}\"", esc(d));
        }
        if let Some(p) = c.priority {
            let _ = write!(o, " priority=\"{p}\"");
        }
        if c.variability.is_periodic() {
            if let Some(i) = c.interval {
                let _ = write!(o, " intervalDecimal=\"{}\"", num(i));
            }
            if c.shift != 0.0 {
                let _ = write!(o, " shiftDecimal=\"{}\"", num(c.shift));
            }
        }
        o.push_str("/>\n");
    }
    o.push_str("  </ModelVariables>\n  <ModelStructure>\n");
    let unknown = |o: &mut String, tag: &str, vr: u32, deps: Option<Vec<u32>>| {
        let _ = write!(o, "    <{tag} valueReference=\"{vr}\"");
        if let Some(mut d) = deps {
            d.sort_unstable();
            d.dedup();
            let kinds = vec!["dependent"; d.len()].join(" ");
            let list: Vec<String> = d.iter().map(ToString::to_string).collect();
            let _ = write!(
                o,
                " dependencies=\"{}\" dependenciesKind=\"{kinds}\"",
                list.join(" ")
            );
        }
        o.push_str("/>\n");
    };
    for (i, v) in table.vars.iter().enumerate() {
        if v.causality == Causality::Output {
            unknown(&mut o, "Output", v.vr, Some(table.dependencies_of(i)));
        }
    }
    for c in clocks.iter().filter(|c| c.output) {
        unknown(&mut o, "Output", c.vr, None);
    }
    for &(_, d) in &table.states {
        unknown(
            &mut o,
            "ContinuousStateDerivative",
            table.vars[d].vr,
            Some(table.dependencies_of(d)),
        );
    }
    for i in table.initial_unknowns() {
        unknown(&mut o, "InitialUnknown", table.vars[i].vr, None);
    }
    // Output clocks are outputs computed in initialization (as FMPy's validation reads it).
    for c in clocks.iter().filter(|c| c.output) {
        unknown(&mut o, "InitialUnknown", c.vr, None);
    }
    if M::MODEL_EXCHANGE {
        for &vr in M::EVENT_INDICATOR_VARIABLES {
            unknown(&mut o, "EventIndicator", vr, None);
        }
    }
    o.push_str("  </ModelStructure>\n</fmiModelDescription>\n");
    o
}
