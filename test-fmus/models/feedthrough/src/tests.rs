//! Tests through the exported C functions: every type round-trips in both versions.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::ptr::{null, null_mut};

use super::*;
use fmu_kit::fmi2::CallbackFunctions;
use fmu_kit::Table;

const OK: c_int = 0;
const ERROR: c_int = 3;

fn token() -> CString {
    let table = Table::new(Feedthrough::NAME, Feedthrough.variables()).expect("valid table");
    CString::new(table.token).expect("token")
}

unsafe fn fmi2_ready() -> *mut c_void {
    let tok = token();
    let cb = CallbackFunctions {
        logger: None,
        allocate_memory: None,
        free_memory: None,
        step_finished: None,
        component_environment: null_mut(),
    };
    let c = fmi2Instantiate(c"ft".as_ptr(), 1, tok.as_ptr(), null(), &cb, 0, 0);
    assert!(!c.is_null());
    assert_eq!(fmi2SetupExperiment(c, 0, 0.0, 0.0, 0, 0.0), OK);
    assert_eq!(fmi2EnterInitializationMode(c), OK);
    assert_eq!(fmi2ExitInitializationMode(c), OK);
    c
}

unsafe fn fmi3_ready() -> *mut c_void {
    let tok = token();
    let c = fmi3InstantiateCoSimulation(
        c"ft3".as_ptr(),
        tok.as_ptr(),
        null(),
        false,
        false,
        false,
        false,
        null(),
        0,
        null_mut(),
        None,
        None,
    );
    assert!(!c.is_null());
    assert_eq!(
        fmi3EnterInitializationMode(c, false, 0.0, 0.0, false, 0.0),
        OK
    );
    assert_eq!(fmi3ExitInitializationMode(c), OK);
    c
}

#[test]
fn fmi2_every_type_round_trips() {
    unsafe {
        let c = fmi2_ready();
        let reals = [FLOAT64_CONTINUOUS_INPUT, FLOAT64_DISCRETE_INPUT];
        assert_eq!(fmi2SetReal(c, reals.as_ptr(), 2, [1.25, -3.5].as_ptr()), OK);
        let ints = [INT32_INPUT, ENUMERATION_INPUT];
        assert_eq!(fmi2SetInteger(c, ints.as_ptr(), 2, [-7, 2].as_ptr()), OK);
        assert_eq!(
            fmi2SetBoolean(c, [BOOLEAN_INPUT].as_ptr(), 1, [1].as_ptr()),
            OK
        );
        let text = c"Hello, FMI 2!";
        assert_eq!(
            fmi2SetString(c, [STRING_INPUT].as_ptr(), 1, [text.as_ptr()].as_ptr()),
            OK
        );
        // Direct feedthrough: visible before the step.
        let mut r = [0.0; 2];
        let outs = [FLOAT64_CONTINUOUS_OUTPUT, FLOAT64_DISCRETE_OUTPUT];
        assert_eq!(fmi2GetReal(c, outs.as_ptr(), 2, r.as_mut_ptr()), OK);
        assert_eq!(r, [1.25, -3.5]);
        assert_eq!(fmi2DoStep(c, 0.0, 0.1, 1), OK);
        assert_eq!(fmi2GetReal(c, outs.as_ptr(), 2, r.as_mut_ptr()), OK);
        assert_eq!(r, [1.25, -3.5]);
        let mut i = [0; 2];
        let outs = [INT32_OUTPUT, ENUMERATION_OUTPUT];
        assert_eq!(fmi2GetInteger(c, outs.as_ptr(), 2, i.as_mut_ptr()), OK);
        assert_eq!(i, [-7, 2]);
        let mut b = [0];
        assert_eq!(
            fmi2GetBoolean(c, [BOOLEAN_OUTPUT].as_ptr(), 1, b.as_mut_ptr()),
            OK
        );
        assert_eq!(b, [1]);
        let mut s: [*const c_char; 1] = [null()];
        assert_eq!(
            fmi2GetString(c, [STRING_OUTPUT].as_ptr(), 1, s.as_mut_ptr()),
            OK
        );
        assert_eq!(CStr::from_ptr(s[0]), text);
        // An enumeration value that is no item, FMI 3-only types and a Real read as Integer.
        assert_eq!(
            fmi2SetInteger(c, [ENUMERATION_INPUT].as_ptr(), 1, [3].as_ptr()),
            ERROR
        );
        assert_eq!(
            fmi2GetInteger(c, [INT8_OUTPUT].as_ptr(), 1, i.as_mut_ptr()),
            ERROR
        );
        assert_eq!(
            fmi2GetReal(c, [FLOAT64_ARRAY_OUTPUT].as_ptr(), 1, r.as_mut_ptr()),
            ERROR
        );
        assert_eq!(
            fmi2GetInteger(c, [ENUMERATION_OUTPUT].as_ptr(), 1, i.as_mut_ptr()),
            OK
        );
        assert_eq!(i[0], 2, "a refused set changes nothing");
        // Tunable parameter after initialisation, fixed one not.
        assert_eq!(
            fmi2SetReal(c, [FLOAT64_TUNABLE_PARAMETER].as_ptr(), 1, [2.0].as_ptr()),
            OK
        );
        assert_eq!(
            fmi2SetReal(c, [FLOAT64_FIXED_PARAMETER].as_ptr(), 1, [2.0].as_ptr()),
            ERROR
        );
        fmi2FreeInstance(c);
    }
}

#[test]
fn fmi3_every_type_round_trips() {
    unsafe {
        let c = fmi3_ready();
        macro_rules! typed {
            ($set:ident, $get:ident, $t:ty, $in:expr, $out:expr, $x:expr) => {{
                let x: $t = $x;
                assert_eq!(
                    $set(c, [$in].as_ptr(), 1, [x].as_ptr(), 1),
                    OK,
                    stringify!($set)
                );
                assert_eq!(
                    fmi3DoStep(
                        c,
                        0.0,
                        0.0,
                        true,
                        null_mut(),
                        null_mut(),
                        null_mut(),
                        null_mut()
                    ),
                    OK
                );
                let mut y = [<$t>::default()];
                assert_eq!(
                    $get(c, [$out].as_ptr(), 1, y.as_mut_ptr(), 1),
                    OK,
                    stringify!($get)
                );
                assert_eq!(y[0], x, stringify!($get));
            }};
        }
        typed!(
            fmi3SetFloat32,
            fmi3GetFloat32,
            f32,
            FLOAT32_CONTINUOUS_INPUT,
            FLOAT32_CONTINUOUS_OUTPUT,
            1.5
        );
        typed!(
            fmi3SetFloat32,
            fmi3GetFloat32,
            f32,
            FLOAT32_DISCRETE_INPUT,
            FLOAT32_DISCRETE_OUTPUT,
            -2.25
        );
        typed!(
            fmi3SetFloat64,
            fmi3GetFloat64,
            f64,
            FLOAT64_CONTINUOUS_INPUT,
            FLOAT64_CONTINUOUS_OUTPUT,
            1e300
        );
        typed!(
            fmi3SetFloat64,
            fmi3GetFloat64,
            f64,
            FLOAT64_DISCRETE_INPUT,
            FLOAT64_DISCRETE_OUTPUT,
            -0.1
        );
        typed!(
            fmi3SetInt8,
            fmi3GetInt8,
            i8,
            INT8_INPUT,
            INT8_OUTPUT,
            i8::MIN
        );
        typed!(
            fmi3SetUInt8,
            fmi3GetUInt8,
            u8,
            UINT8_INPUT,
            UINT8_OUTPUT,
            u8::MAX
        );
        typed!(
            fmi3SetInt16,
            fmi3GetInt16,
            i16,
            INT16_INPUT,
            INT16_OUTPUT,
            i16::MIN
        );
        typed!(
            fmi3SetUInt16,
            fmi3GetUInt16,
            u16,
            UINT16_INPUT,
            UINT16_OUTPUT,
            u16::MAX
        );
        typed!(
            fmi3SetInt32,
            fmi3GetInt32,
            i32,
            INT32_INPUT,
            INT32_OUTPUT,
            i32::MIN
        );
        typed!(
            fmi3SetUInt32,
            fmi3GetUInt32,
            u32,
            UINT32_INPUT,
            UINT32_OUTPUT,
            u32::MAX
        );
        typed!(
            fmi3SetInt64,
            fmi3GetInt64,
            i64,
            INT64_INPUT,
            INT64_OUTPUT,
            i64::MIN
        );
        typed!(
            fmi3SetUInt64,
            fmi3GetUInt64,
            u64,
            UINT64_INPUT,
            UINT64_OUTPUT,
            u64::MAX
        );
        typed!(
            fmi3SetBoolean,
            fmi3GetBoolean,
            bool,
            BOOLEAN_INPUT,
            BOOLEAN_OUTPUT,
            true
        );
        typed!(
            fmi3SetInt64,
            fmi3GetInt64,
            i64,
            ENUMERATION_INPUT,
            ENUMERATION_OUTPUT,
            2
        );
        // Strings and binaries.
        let text = c"Grüße, FMI 3";
        assert_eq!(
            fmi3SetString(c, [STRING_INPUT].as_ptr(), 1, [text.as_ptr()].as_ptr(), 1),
            OK
        );
        let bytes = [0u8, 255, 7, 0, 42];
        assert_eq!(
            fmi3SetBinary(
                c,
                [BINARY_INPUT].as_ptr(),
                1,
                [bytes.len()].as_ptr(),
                [bytes.as_ptr()].as_ptr(),
                1
            ),
            OK
        );
        let matrix = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        assert_eq!(
            fmi3SetFloat64(c, [FLOAT64_ARRAY_INPUT].as_ptr(), 1, matrix.as_ptr(), 6),
            OK
        );
        let (mut ehn, mut term, mut early, mut lst) = (true, true, true, 0.0);
        assert_eq!(
            fmi3DoStep(c, 0.0, 0.1, true, &mut ehn, &mut term, &mut early, &mut lst),
            OK
        );
        assert!(!ehn && !term && !early && lst == 0.1);
        let mut s: [*const c_char; 1] = [null()];
        assert_eq!(
            fmi3GetString(c, [STRING_OUTPUT].as_ptr(), 1, s.as_mut_ptr(), 1),
            OK
        );
        assert_eq!(CStr::from_ptr(s[0]), text);
        let (mut size, mut p) = ([0usize], [null::<u8>()]);
        assert_eq!(
            fmi3GetBinary(
                c,
                [BINARY_OUTPUT].as_ptr(),
                1,
                size.as_mut_ptr(),
                p.as_mut_ptr(),
                1
            ),
            OK
        );
        assert_eq!(std::slice::from_raw_parts(p[0], size[0]), bytes);
        let mut m = [0.0; 6];
        assert_eq!(
            fmi3GetFloat64(c, [FLOAT64_ARRAY_OUTPUT].as_ptr(), 1, m.as_mut_ptr(), 6),
            OK
        );
        assert_eq!(m, matrix);
        // Refused: no item, the wrong element count, the wrong type.
        assert_eq!(
            fmi3SetInt64(c, [ENUMERATION_INPUT].as_ptr(), 1, [0].as_ptr(), 1),
            ERROR
        );
        assert_eq!(
            fmi3SetFloat64(c, [FLOAT64_ARRAY_INPUT].as_ptr(), 1, matrix.as_ptr(), 3),
            ERROR
        );
        assert_eq!(
            fmi3GetInt32(c, [ENUMERATION_OUTPUT].as_ptr(), 1, [0].as_mut_ptr(), 1),
            ERROR
        );
        fmi3FreeInstance(c);
    }
}

#[test]
fn float64_directional_derivatives_are_the_identity() {
    unsafe {
        let c = fmi3_ready();
        let unknowns = [FLOAT64_CONTINUOUS_OUTPUT, FLOAT64_DISCRETE_OUTPUT];
        let knowns = [FLOAT64_CONTINUOUS_INPUT, FLOAT64_DISCRETE_INPUT];
        let mut out = [0.0; 2];
        assert_eq!(
            fmi3GetDirectionalDerivative(
                c,
                unknowns.as_ptr(),
                2,
                knowns.as_ptr(),
                2,
                [3.0, -5.0].as_ptr(),
                2,
                out.as_mut_ptr(),
                2
            ),
            OK
        );
        assert_eq!(out, [3.0, -5.0]);
        fmi3FreeInstance(c);
    }
}

#[test]
fn model_descriptions_declare_the_enumeration_type() {
    let x2 = unsafe { CStr::from_ptr(fmu_kit_model_description(2)) }.to_string_lossy();
    let x3 = unsafe { CStr::from_ptr(fmu_kit_model_description(3)) }.to_string_lossy();
    assert!(x2.contains("<SimpleType name=\"Option\">"), "{x2}");
    assert!(
        x2.contains("<Enumeration declaredType=\"Option\" start=\"1\"/>"),
        "{x2}"
    );
    assert!(!x2.contains("Int8") && !x2.contains("Binary") && !x2.contains("array"));
    assert!(x3.contains("<EnumerationType name=\"Option\">"), "{x3}");
    assert!(x3.contains("<Item name=\"Option 2\" value=\"2\"/>"), "{x3}");
    assert!(x3.contains("<Dimension start=\"2\"/>") && x3.contains("<Dimension start=\"3\"/>"));
}
