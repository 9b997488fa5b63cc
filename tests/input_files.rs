//! `--input-file` in the FMPy / fmusim convention, through the CLI on the Feedthrough FMU
//! (every input copied to the output of its type): continuous Float inputs interpolated,
//! discrete ones held, integers, Booleans, Strings and FMI 3 arrays read, and a cell that does
//! not fit named by its line and column.

mod common;

use common::{cosimo, fmu};
use cosimo::table::{Column, Table};

fn run(version: u8, inputs: &str, outputs: &[&str]) -> Result<Table, (Option<i32>, String)> {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let dir = tempfile::tempdir().expect("a temporary folder");
    let input = dir.path().join("in.csv");
    std::fs::write(&input, inputs).expect("writes the inputs");
    let out = dir.path().join("out.csv");
    let feedthrough = fmu("Feedthrough", version).display().to_string();
    let mut args = vec![
        "run".to_string(),
        feedthrough,
        "--stop-time".into(),
        "1".into(),
        "--step-size".into(),
        "0.25".into(),
        "--input-file".into(),
        input.display().to_string(),
        "-o".into(),
        out.display().to_string(),
    ];
    for o in outputs {
        args.extend(["--output-variable".to_string(), o.to_string()]);
    }
    let output = cosimo(&args);
    if !output.status.success() {
        return Err((
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).to_string(),
        ));
    }
    Ok(Table::read(&out).expect("the results read"))
}

/// The output of a row: a step's input is set at its start, so the row at t shows the input
/// at t - h (as FMPy records it).
fn column(table: &Table, name: &str) -> Vec<f64> {
    table.values(table.column(name).expect("recorded")).to_vec()
}

#[test]
fn continuous_floats_are_interpolated_and_discrete_ones_held() {
    for version in [2u8, 3] {
        let table = run(
            version,
            "time,Float64_continuous_input,Float64_discrete_input,Int32_input,Boolean_input\n0,0,0,0,0\n1,4,4,4,1\n",
            &[
                "Float64_continuous_output",
                "Float64_discrete_output",
                "Int32_output",
                "Boolean_output",
            ],
        )
        .unwrap_or_else(|(c, e)| panic!("FMI {version}: {c:?} {e}"));
        // Rows at 0, 0.25, ..., 1 show the inputs set at 0, 0, 0.25, 0.5, 0.75.
        assert_eq!(
            column(&table, "Float64_continuous_output"),
            [0.0, 0.0, 1.0, 2.0, 3.0],
            "FMI {version}: linear"
        );
        assert_eq!(
            column(&table, "Float64_discrete_output"),
            [0.0; 5],
            "FMI {version}: a discrete Float input is held until the next row"
        );
        assert_eq!(column(&table, "Int32_output"), [0.0; 5], "FMI {version}");
        assert_eq!(column(&table, "Boolean_output"), [0.0; 5], "FMI {version}");
    }
}

#[test]
fn strings_are_read_from_text_columns() {
    for version in [2u8, 3] {
        let table = run(
            version,
            "time,String_input\n0,hello\n0.5,world\n",
            &["String_output"],
        )
        .unwrap_or_else(|(c, e)| panic!("FMI {version}: {c:?} {e}"));
        let Column::Text(cells) = table.data(table.column("String_output").expect("recorded"))
        else {
            panic!("FMI {version}: a text column")
        };
        assert_eq!(
            cells,
            &["hello", "hello", "hello", "world", "world"],
            "FMI {version}: held; set at initialization and at each step's start"
        );
    }
}

#[test]
fn arrays_are_read_from_cells_of_space_separated_values() {
    let table = run(
        3,
        "time,Float64_array_input\n0,1 2 3 4 5 6\n1,3 4 5 6 7 8\n",
        &["Float64_array_output"],
    )
    .unwrap_or_else(|(c, e)| panic!("{c:?} {e}"));
    let Column::Arrays(rows) = table.data(table.column("Float64_array_output").expect("recorded"))
    else {
        panic!("an array column")
    };
    assert_eq!(
        rows[2],
        [1.5, 2.5, 3.5, 4.5, 5.5, 6.5],
        "interpolated elementwise"
    );
}

#[test]
fn a_cell_that_does_not_fit_its_input_is_named_by_line_and_column() {
    let refused = |version: u8, inputs: &str, message: &str| {
        let (code, stderr) = run(version, inputs, &[]).expect_err("refused");
        assert_eq!(code, Some(2), "{stderr}");
        assert!(stderr.contains(message), "FMI {version}: {stderr}");
    };
    for version in [2u8, 3] {
        refused(
            version,
            "time,Float64_continuous_input\n0,1\n1,x\n",
            "line 3, column \"Float64_continuous_input\": \"x\" is not a number",
        );
        refused(
            version,
            "time,Int32_input\n0,1\n1,2 3\n",
            "line 3, column \"Int32_input\": 2 values, but input \"Int32_input\" takes one Int32 value",
        );
    }
    refused(
        3,
        "time,Binary_input\n0,1\n",
        "which an input file cannot drive",
    );
    refused(
        3,
        "time,Float64_array_input\n0,1 2 3 4 5 6\n1,1 2\n",
        "line 3, column \"Float64_array_input\": 2 values, but input \"Float64_array_input\" takes 6 space-separated values",
    );
}

/// Two columns for one input are refused with both positions (issue 33): by the same name, or
/// by a name and an alias of the same variable.
#[test]
fn two_columns_for_one_input_are_refused_with_both_positions() {
    for version in [2u8, 3] {
        let (code, stderr) = run(
            version,
            "time,Int32_input,Float64_continuous_input,Int32_input\n0,1,0,2\n1,1,0,2\n",
            &[],
        )
        .expect_err("refused");
        assert_eq!(code, Some(2), "{stderr}");
        assert!(
            stderr.contains(
                "in.csv: line 1: columns 2 and 4 are both named \"Int32_input\"; an input takes one column: remove or rename one"
            ),
            "FMI {version}: {stderr}"
        );
    }
    // "u" is an FMI 3 <Alias> of Float64_continuous_input.
    let (code, stderr) =
        run(3, "time,Float64_continuous_input,u\n0,1,2\n", &[]).expect_err("refused");
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "in.csv: line 1: columns 2 and 3 (\"Float64_continuous_input\" and \"u\") both drive input \"Float64_continuous_input\""
        ),
        "{stderr}"
    );
}

/// A value that its input's type cannot hold is refused with the file, line and column (issue
/// 33): it used to be rounded or wrapped without a word.
#[test]
fn a_value_that_does_not_fit_the_inputs_type_is_refused() {
    let refused = |version: u8, inputs: &str, message: &str| {
        let (code, stderr) = run(version, inputs, &[]).expect_err("refused");
        assert_eq!(code, Some(2), "{stderr}");
        assert!(stderr.contains(message), "FMI {version}: {stderr}");
    };
    for version in [2u8, 3] {
        refused(
            version,
            "time,Int32_input\n0,1\n1,1.5\n",
            "in.csv: line 3, column \"Int32_input\": 1.5 is not a whole number: input \"Int32_input\" takes one Int32 value",
        );
        refused(
            version,
            "time,Int32_input\n0,3000000000\n",
            "in.csv: line 2, column \"Int32_input\": 3000000000 is out of range for Int32 (-2147483648 to 2147483647)",
        );
        refused(
            version,
            "time,Boolean_input\n0,true\n1,2\n",
            "in.csv: line 3, column \"Boolean_input\": 2 is not a Boolean (true, false, 1 or 0)",
        );
        refused(
            version,
            "time,Float64_continuous_input\n0,1\n1,text\n",
            "in.csv: line 3, column \"Float64_continuous_input\": \"text\" is not a number",
        );
    }
    refused(
        3,
        "time,UInt8_input\n0,255\n1,300\n",
        "in.csv: line 3, column \"UInt8_input\": 300 is out of range for UInt8 (0 to 255)",
    );
    refused(
        3,
        "time,UInt8_input\n0,-1\n",
        "in.csv: line 2, column \"UInt8_input\": -1 is out of range for UInt8 (0 to 255)",
    );
    refused(
        3,
        "time,Float32_continuous_input\n0,1e39\n",
        "in.csv: line 2, column \"Float32_continuous_input\": 1e39 is beyond the largest Float32",
    );
    // What fits runs: whole numbers written with a fraction, the ends of the range.
    let table = run(
        3,
        "time,UInt8_input,Int32_input,Boolean_input\n0,255,2.0,1\n1,0,-2147483648,false\n",
        &["UInt8_output", "Int32_output"],
    )
    .unwrap_or_else(|(c, e)| panic!("{c:?} {e}"));
    assert_eq!(column(&table, "UInt8_output")[1], 255.0);
    assert_eq!(column(&table, "Int32_output")[1], 2.0);
}
