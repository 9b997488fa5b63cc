//! The input file reader (`--input-file`): the CSV table, its values at any time, and binding
//! its columns to inputs of every type a table can drive. An error is a fine answer; a panic, a
//! hang, a stack overflow or running out of memory is a bug.
#![no_main]

use std::path::Path;
use std::sync::{Arc, OnceLock};

use cosimo::fmu::ModelDescription;
use cosimo::master::inputs::TableInputs;
use cosimo::table::{Interpolation, Table};
use libfuzzer_sys::fuzz_target;

/// Inputs of every kind: scalars of each type, an array, and types a table cannot drive.
const DESCRIPTION: &str = r#"<fmiModelDescription fmiVersion="3.0" modelName="M" instantiationToken="t">
  <CoSimulation modelIdentifier="M"/>
  <ModelVariables>
    <Float64 name="time" valueReference="0" causality="independent" variability="continuous"/>
    <Float64 name="u" valueReference="1" causality="input" start="0"/>
    <Float64 name="d" valueReference="2" causality="input" variability="discrete" start="0"/>
    <Int32 name="i" valueReference="3" causality="input" variability="discrete" start="0"/>
    <UInt8 name="n" valueReference="4" causality="input" variability="discrete" start="0"/>
    <Boolean name="b" valueReference="5" causality="input" variability="discrete" start="false"/>
    <String name="s" valueReference="6" causality="input" variability="discrete"><Start value=""/></String>
    <Float64 name="a" valueReference="7" causality="input" start="0 0 0"><Dimension start="3"/></Float64>
    <Binary name="bin" valueReference="8" causality="input" variability="discrete"/>
    <Float64 name="y" valueReference="9" causality="output"/>
  </ModelVariables>
  <ModelStructure><Output valueReference="9"/></ModelStructure>
</fmiModelDescription>"#;

const NAMES: &[&str] = &["u", "d", "i", "n", "b", "s", "a", "bin", "y", "nothing"];

fn description() -> &'static ModelDescription {
    static MD: OnceLock<ModelDescription> = OnceLock::new();
    MD.get_or_init(|| {
        cosimo::fmu::description::from_str(DESCRIPTION, Path::new("fuzz.xml"))
            .expect("the fuzz target's own model description parses")
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(table) = Table::parse(text, Path::new("fuzz/input.csv")) else {
        return;
    };
    // Values at the rows' times, between them and outside them.
    let mut probes: Vec<f64> = table.time().iter().take(16).copied().collect();
    probes.extend([
        f64::NEG_INFINITY,
        -1.0,
        0.0,
        0.5,
        1e300,
        f64::INFINITY,
        f64::NAN,
    ]);
    let mut array = Vec::new();
    for column in 0..table.columns().len().min(16) {
        for &t in &probes {
            let _ = table.value_at(column, t, Interpolation::Linear);
            let _ = table.value_at(column, t, Interpolation::Hold);
            table.array_at(column, t, Interpolation::Linear, &mut array);
            let _ = table.text_at(column, t);
        }
    }
    // Each column bound alone to the input named like it, else to one chosen by its index.
    let table = Arc::new(table);
    for (column, name) in table.columns().iter().enumerate().take(16) {
        let target = if NAMES.contains(&name.as_str()) {
            name.as_str()
        } else {
            NAMES[column % NAMES.len()]
        };
        let _ = TableInputs::new(description(), &table, &[(column, target)]);
    }
});
