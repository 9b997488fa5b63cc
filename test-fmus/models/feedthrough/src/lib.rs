//! Feedthrough: every variable type of FMI 2 and FMI 3, each input copied to its output with
//! direct feedthrough (after the Feedthrough of the Modelica Reference FMUs).
//!
//! FMI 2 shows the Real (continuous and discrete), Integer, Boolean, String and Enumeration
//! pairs and the two parameters; FMI 3 adds Float32, the eight integer types, Binary and a
//! 2×3 Float64 matrix. Enumerations are of the type `Option` (items "Option 1" = 1 and
//! "Option 2" = 2): FMI 2 reads and writes them with `fmi2Get/SetInteger`, FMI 3 with
//! `fmi3Get/SetInt64`. The parameters (`Float64_fixed_parameter`, `Float64_tunable_parameter`)
//! only carry values. Directional derivatives of the Float64 outputs are the identity.

use fmu_kit::{EnumerationType, Experiment, Model, Values, VarType, Variable};

/// Float32 continuous input.
pub const FLOAT32_CONTINUOUS_INPUT: u32 = 1;
/// Float32 continuous output.
pub const FLOAT32_CONTINUOUS_OUTPUT: u32 = 2;
/// Float32 discrete input.
pub const FLOAT32_DISCRETE_INPUT: u32 = 3;
/// Float32 discrete output.
pub const FLOAT32_DISCRETE_OUTPUT: u32 = 4;
/// Fixed Float64 parameter.
pub const FLOAT64_FIXED_PARAMETER: u32 = 5;
/// Tunable Float64 parameter.
pub const FLOAT64_TUNABLE_PARAMETER: u32 = 6;
/// Float64 continuous input.
pub const FLOAT64_CONTINUOUS_INPUT: u32 = 7;
/// Float64 continuous output.
pub const FLOAT64_CONTINUOUS_OUTPUT: u32 = 8;
/// Float64 discrete input.
pub const FLOAT64_DISCRETE_INPUT: u32 = 9;
/// Float64 discrete output.
pub const FLOAT64_DISCRETE_OUTPUT: u32 = 10;
/// Int8 input.
pub const INT8_INPUT: u32 = 11;
/// Int8 output.
pub const INT8_OUTPUT: u32 = 12;
/// UInt8 input.
pub const UINT8_INPUT: u32 = 13;
/// UInt8 output.
pub const UINT8_OUTPUT: u32 = 14;
/// Int16 input.
pub const INT16_INPUT: u32 = 15;
/// Int16 output.
pub const INT16_OUTPUT: u32 = 16;
/// UInt16 input.
pub const UINT16_INPUT: u32 = 17;
/// UInt16 output.
pub const UINT16_OUTPUT: u32 = 18;
/// Int32 input.
pub const INT32_INPUT: u32 = 19;
/// Int32 output.
pub const INT32_OUTPUT: u32 = 20;
/// UInt32 input.
pub const UINT32_INPUT: u32 = 21;
/// UInt32 output.
pub const UINT32_OUTPUT: u32 = 22;
/// Int64 input.
pub const INT64_INPUT: u32 = 23;
/// Int64 output.
pub const INT64_OUTPUT: u32 = 24;
/// UInt64 input.
pub const UINT64_INPUT: u32 = 25;
/// UInt64 output.
pub const UINT64_OUTPUT: u32 = 26;
/// Boolean input.
pub const BOOLEAN_INPUT: u32 = 27;
/// Boolean output.
pub const BOOLEAN_OUTPUT: u32 = 28;
/// String input.
pub const STRING_INPUT: u32 = 29;
/// String output.
pub const STRING_OUTPUT: u32 = 30;
/// Binary input.
pub const BINARY_INPUT: u32 = 31;
/// Binary output.
pub const BINARY_OUTPUT: u32 = 32;
/// Enumeration input.
pub const ENUMERATION_INPUT: u32 = 33;
/// Enumeration output.
pub const ENUMERATION_OUTPUT: u32 = 34;
/// 2×3 Float64 matrix input (FMI 3).
pub const FLOAT64_ARRAY_INPUT: u32 = 35;
/// 2×3 Float64 matrix output (FMI 3).
pub const FLOAT64_ARRAY_OUTPUT: u32 = 36;

/// Dimensions of the Float64 matrix.
pub const MATRIX: [usize; 2] = [2, 3];

/// Every (input, output) pair, in declaration order.
pub const PAIRS: [(u32, u32); 16] = [
    (FLOAT32_CONTINUOUS_INPUT, FLOAT32_CONTINUOUS_OUTPUT),
    (FLOAT32_DISCRETE_INPUT, FLOAT32_DISCRETE_OUTPUT),
    (FLOAT64_CONTINUOUS_INPUT, FLOAT64_CONTINUOUS_OUTPUT),
    (FLOAT64_DISCRETE_INPUT, FLOAT64_DISCRETE_OUTPUT),
    (INT8_INPUT, INT8_OUTPUT),
    (UINT8_INPUT, UINT8_OUTPUT),
    (INT16_INPUT, INT16_OUTPUT),
    (UINT16_INPUT, UINT16_OUTPUT),
    (INT32_INPUT, INT32_OUTPUT),
    (UINT32_INPUT, UINT32_OUTPUT),
    (INT64_INPUT, INT64_OUTPUT),
    (UINT64_INPUT, UINT64_OUTPUT),
    (BOOLEAN_INPUT, BOOLEAN_OUTPUT),
    (STRING_INPUT, STRING_OUTPUT),
    (BINARY_INPUT, BINARY_OUTPUT),
    (ENUMERATION_INPUT, ENUMERATION_OUTPUT),
];

/// The enumeration type of `Enumeration_input` / `Enumeration_output`.
pub fn option_type() -> EnumerationType {
    EnumerationType::new("Option", &[("Option 1", 1), ("Option 2", 2)])
}

/// The feedthrough model.
#[derive(Default)]
pub struct Feedthrough;

/// An input and its output of the same type: `<prefix>_input` / `<prefix>_output`.
fn pair(vr: u32, ty: VarType, prefix: &str) -> [Variable; 2] {
    let input = Variable::new(vr, &format!("{prefix}_input"), ty).input();
    let output = Variable::new(vr + 1, &format!("{prefix}_output"), ty)
        .output()
        .depends_on(&[vr]);
    [input, output]
}

impl Model for Feedthrough {
    const NAME: &'static str = "Feedthrough";
    const DESCRIPTION: &'static str = "Every input copied to the output of the same type";
    const EXPERIMENT: Experiment = Experiment {
        start: 0.0,
        stop: 2.0,
        step: 0.1,
    };

    fn variables(&self) -> Vec<Variable> {
        let option = option_type();
        let mut vars = Vec::new();
        let [i, o] = pair(1, VarType::Float32, "Float32_continuous");
        vars.extend([i.start(0.0f32), o]);
        let [i, o] = pair(3, VarType::Float32, "Float32_discrete");
        vars.extend([i.discrete().start(0.0f32), o.discrete()]);
        vars.push(
            Variable::float64(FLOAT64_FIXED_PARAMETER, "Float64_fixed_parameter")
                .parameter()
                .start(0.0)
                .description("A fixed parameter"),
        );
        vars.push(
            Variable::float64(FLOAT64_TUNABLE_PARAMETER, "Float64_tunable_parameter")
                .tunable()
                .start(0.0)
                .description("A tunable parameter"),
        );
        let [i, o] = pair(7, VarType::Float64, "Float64_continuous");
        // Aliases on inputs only: FMPy 0.3.32's validation expects an output's aliases in
        // ModelStructure, where FMI 3.0 lists no alias.
        vars.extend([i.start(0.0).alias("u"), o]);
        let [i, o] = pair(9, VarType::Float64, "Float64_discrete");
        vars.extend([i.discrete().start(0.0), o.discrete()]);
        for (vr, ty, name) in [
            (11, VarType::Int8, "Int8"),
            (13, VarType::UInt8, "UInt8"),
            (15, VarType::Int16, "Int16"),
            (17, VarType::UInt16, "UInt16"),
            (19, VarType::Int32, "Int32"),
            (21, VarType::UInt32, "UInt32"),
            (23, VarType::Int64, "Int64"),
            (25, VarType::UInt64, "UInt64"),
        ] {
            let [i, o] = pair(vr, ty, name);
            vars.extend([i.start(fmu_kit::Start::Int(vec![0])), o]);
        }
        let [i, o] = pair(27, VarType::Boolean, "Boolean");
        vars.extend([i.start(false), o]);
        let [i, o] = pair(29, VarType::String, "String");
        vars.extend([i.start(""), o]);
        let [i, o] = pair(31, VarType::Binary, "Binary");
        vars.extend([i.start_binary(b"foo"), o]);
        vars.push(
            Variable::enumeration(ENUMERATION_INPUT, "Enumeration_input", &option)
                .input()
                .start(1i64),
        );
        vars.push(
            Variable::enumeration(ENUMERATION_OUTPUT, "Enumeration_output", &option)
                .output()
                .depends_on(&[ENUMERATION_INPUT]),
        );
        let n = MATRIX.iter().product();
        vars.push(
            Variable::float64(FLOAT64_ARRAY_INPUT, "Float64_array_input")
                .input()
                .alias("matrix_input")
                .dims(&MATRIX)
                .start(vec![0.0; n]),
        );
        vars.push(
            Variable::float64(FLOAT64_ARRAY_OUTPUT, "Float64_array_output")
                .output()
                .dims(&MATRIX)
                .depends_on(&[FLOAT64_ARRAY_INPUT]),
        );
        vars
    }

    fn evaluate(&self, v: &mut Values, _time: f64) -> Result<(), String> {
        fn copy<T: fmu_kit::Element>(v: &mut Values, from: u32, to: u32) {
            let x = v.get::<T>(from).to_vec();
            v.get_mut::<T>(to).copy_from_slice(&x);
        }
        copy::<f32>(v, FLOAT32_CONTINUOUS_INPUT, FLOAT32_CONTINUOUS_OUTPUT);
        copy::<f32>(v, FLOAT32_DISCRETE_INPUT, FLOAT32_DISCRETE_OUTPUT);
        copy::<f64>(v, FLOAT64_CONTINUOUS_INPUT, FLOAT64_CONTINUOUS_OUTPUT);
        copy::<f64>(v, FLOAT64_DISCRETE_INPUT, FLOAT64_DISCRETE_OUTPUT);
        copy::<i8>(v, INT8_INPUT, INT8_OUTPUT);
        copy::<u8>(v, UINT8_INPUT, UINT8_OUTPUT);
        copy::<i16>(v, INT16_INPUT, INT16_OUTPUT);
        copy::<u16>(v, UINT16_INPUT, UINT16_OUTPUT);
        copy::<i32>(v, INT32_INPUT, INT32_OUTPUT);
        copy::<u32>(v, UINT32_INPUT, UINT32_OUTPUT);
        copy::<i64>(v, INT64_INPUT, INT64_OUTPUT);
        copy::<u64>(v, UINT64_INPUT, UINT64_OUTPUT);
        copy::<bool>(v, BOOLEAN_INPUT, BOOLEAN_OUTPUT);
        copy::<i64>(v, ENUMERATION_INPUT, ENUMERATION_OUTPUT);
        copy::<f64>(v, FLOAT64_ARRAY_INPUT, FLOAT64_ARRAY_OUTPUT);
        let s = v.string(STRING_INPUT, 0).into_owned();
        v.set_string(STRING_OUTPUT, 0, &s);
        let b = v.binary(BINARY_INPUT, 0).to_vec();
        v.set_binary(BINARY_OUTPUT, 0, &b);
        Ok(())
    }

    fn partial(&self, _v: &Values, _time: f64, of: u32, wrt: u32) -> Option<f64> {
        let feeds = |input: u32| f64::from(u8::from(wrt == input));
        match of {
            FLOAT64_CONTINUOUS_OUTPUT => Some(feeds(FLOAT64_CONTINUOUS_INPUT)),
            FLOAT64_DISCRETE_OUTPUT => Some(feeds(FLOAT64_DISCRETE_INPUT)),
            _ => None,
        }
    }
}

fmu_kit::export_fmu!(Feedthrough);

#[cfg(test)]
mod tests;
