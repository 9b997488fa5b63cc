//! Result files in every format from one run (`-o/--output` repeated, the extension picking
//! CSV, MAT, Arrow or Parquet): the same numbers bit for bit read back, what each format keeps
//! (types in Arrow and Parquet, aliases and parameters in MAT), a killed run's files readable,
//! a failing writer ending the run with the other files kept, and bad files refused with
//! messages that name them.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{cosimo, cosimo_ok, fmu, show, temp_dir};
use cosimo::results::compare::{SignalTable, Values};
use cosimo::results::read::{read_result, Data, ResultData};

const FORMATS: [&str; 4] = ["csv", "mat", "arrow", "parquet"];

/// An input file for the Feedthrough FMU: Floats that are no short decimals after
/// interpolation, integers of every width, Booleans, a String.
fn feedthrough_inputs(dir: &Path) -> PathBuf {
    let path = dir.join("in.csv");
    std::fs::write(
        &path,
        "time,Float64_continuous_input,Float32_continuous_input,Int8_input,UInt64_input,Int32_input,Boolean_input,String_input,Enumeration_input\n\
         0,0.1,0.5,-7,1099511627776,-2147483648,true,a,1\n\
         0.3,0.7333333333333333,1e-3,100,3,7,false,b c,2\n\
         2,-1e-300,2.5,-128,0,2147483647,true,\"d,e\",1\n",
    )
    .unwrap();
    path
}

/// Run the Feedthrough FMU (FMI 3: every type) into `name.<format>` for every format; the
/// result files and stderr.
fn run_feedthrough(dir: &Path, name: &str, extra: &[&str]) -> (Vec<PathBuf>, String) {
    let files: Vec<PathBuf> = FORMATS
        .iter()
        .map(|f| dir.join(format!("{name}.{f}")))
        .collect();
    let mut args = vec![
        "run".to_string(),
        fmu("Feedthrough", 3).display().to_string(),
        "--input-file".into(),
        feedthrough_inputs(dir).display().to_string(),
        "--step-size".into(),
        "0.05".into(),
    ];
    for file in &files {
        args.push("--output".into());
        args.push(file.display().to_string());
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    let output = cosimo_ok(&args);
    (files, String::from_utf8_lossy(&output.stderr).into_owned())
}

fn read(path: &Path) -> ResultData {
    read_result(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

fn column<'a>(data: &'a ResultData, name: &str) -> &'a Data {
    &data
        .columns
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("{}: no column {name}", data.path.display()))
        .values
}

/// The numbers of every numeric signal (array elements as `name[i]`), as bits.
fn signal_bits(path: &Path) -> Vec<(String, Vec<u64>)> {
    let table = SignalTable::read(path).unwrap_or_else(|e| panic!("{e}"));
    let mut signals = vec![(
        "time".to_string(),
        table.time().iter().map(|t| t.to_bits()).collect(),
    )];
    for signal in table.signals() {
        if let Values::Numbers(values) = &signal.values {
            signals.push((
                signal.name.clone(),
                values.iter().map(|x| x.to_bits()).collect(),
            ));
        }
    }
    signals
}

#[test]
fn every_format_holds_the_same_numbers_bit_for_bit() {
    let dir = temp_dir();
    let (files, stderr) = run_feedthrough(dir.path(), "r", &[]);
    let csv = signal_bits(&files[0]);
    assert!(
        csv.len() > 15,
        "{:?}",
        csv.iter().map(|s| &s.0).collect::<Vec<_>>()
    );
    assert!(
        csv.iter()
            .any(|(name, _)| name == "Float64_array_output[6]"),
        "arrays are split into elements"
    );
    for file in &files[1..] {
        let other = signal_bits(file);
        for (name, bits) in &csv {
            let found = other
                .iter()
                .find(|(n, _)| n == name)
                .unwrap_or_else(|| panic!("{}: no signal {name}", file.display()));
            assert_eq!(&found.1, bits, "{name} in {}", file.display());
        }
    }
    // The interpolated inputs make doubles that are no short decimals.
    let data = read(&files[2]);
    let Data::Float(values) = column(&data, "Float64_continuous_output") else {
        panic!("Float64 is Float64 in Arrow")
    };
    assert!(
        values.iter().any(|x| x.to_string().len() > 12),
        "{values:?}"
    );
    // MAT holds numbers only: the String and the Binary output are left out, with one warning.
    assert!(
        stderr.contains("MAT files hold numbers only: String_output, Binary_output left out"),
        "{stderr}"
    );
    assert_eq!(
        stderr.matches("left out").count(),
        1,
        "one warning: {stderr}"
    );
    let mat = read(&files[1]);
    assert!(mat.columns.iter().all(|c| c.name != "String_output"));
    // Arrow and Parquet keep text, bytes and types; the same in both.
    for file in &files[2..] {
        let data = read(file);
        let text = column(&data, "String_output");
        assert_eq!(
            text,
            column(&read(&files[0]), "String_output"),
            "{}",
            file.display()
        );
        assert!(matches!(text, Data::Text(t) if t.contains(&"b c".to_string())));
        assert!(matches!(column(&data, "Binary_output"), Data::Bytes(b) if b[0] == b"foo"));
        assert!(
            matches!(column(&data, "Int8_output"), Data::Int(v) if v.contains(&-7) && v.contains(&100))
        );
        assert!(
            matches!(column(&data, "UInt64_output"), Data::UInt(v) if v[0] == 1 << 40),
            "UInt64 stays UInt64 in {}",
            file.display()
        );
        assert!(matches!(column(&data, "Boolean_output"), Data::Bool(v) if v[0] && !v[10]));
        assert!(matches!(
            column(&data, "Float64_array_output"),
            Data::FloatArrays(rows) if rows[0].len() == 6
        ));
        assert_eq!(data.time, read(&files[0]).time);
    }
}

#[test]
fn mat_keeps_parameters_and_array_elements_in_the_dsres_layout() {
    let dir = temp_dir();
    let (files, _) = run_feedthrough(
        dir.path(),
        "p",
        &[
            "--start-value",
            "Float64_fixed_parameter=2.5",
            "--output-variable",
            "Float64_continuous_input",
            "--output-variable",
            "Float64_fixed_parameter",
            "--output-variable",
            "Float64_array_output[2,3]",
        ],
    );
    let bytes = std::fs::read(&files[1]).unwrap();
    // dataInfo: time, the input in data_2, the parameter in data_1, the element in data_2.
    let info_at = find(&bytes, b"dataInfo\0") + 9;
    let info: Vec<i32> = bytes[info_at..info_at + 4 * 4 * 4]
        .chunks(4)
        .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    assert_eq!(
        info,
        [0, 1, 0, -1, 2, 2, 0, 0, 1, 2, 0, 0, 2, 3, 0, 0],
        "time; the input; the parameter in data_1; the element"
    );
    let data = read(&files[1]);
    assert_eq!(
        column(&data, "Float64_fixed_parameter"),
        &Data::Float(vec![2.5; data.time.len()])
    );
    assert_eq!(
        column(&data, "Float64_array_output[2,3]"),
        column(&read(&files[0]), "Float64_array_output[2,3]")
    );
}

fn find(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .position(|w| w == needle)
        .unwrap_or_else(|| panic!("{:?} not found", String::from_utf8_lossy(needle)))
}

#[test]
fn a_killed_run_leaves_readable_csv_mat_and_arrow() {
    let dir = temp_dir();
    let files: Vec<PathBuf> = ["csv", "mat", "arrow"]
        .iter()
        .map(|f| dir.path().join(format!("k.{f}")))
        .collect();
    // Every step busy for 5 ms: 10,000 steps would take a minute.
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_cosimo"));
    command.args([
        "run",
        &fmu("Gain", 2).display().to_string(),
        "--start-value",
        "cost=0.005",
        "--start-value",
        "u=0.3",
        "--start-value",
        "k=3",
        "--stop-time",
        "100",
        "--step-size",
        "0.01",
        "--progress",
        "none",
    ]);
    for file in &files {
        command.arg("--output").arg(file);
    }
    let mut child = command.spawn().unwrap();
    let started = Instant::now();
    while std::fs::read_to_string(&files[0]).map_or(0, |t| t.lines().count()) < 40 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no rows after a minute"
        );
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(150));
    child.kill().unwrap(); // SIGKILL: no handler runs, nothing is flushed at the end.
    child.wait().unwrap();
    let tables: Vec<ResultData> = files.iter().map(|f| read(f)).collect();
    let rows: Vec<usize> = tables.iter().map(|t| t.time.len()).collect();
    assert!(rows.iter().all(|&n| n >= 39), "{rows:?}");
    for table in &tables {
        let common = rows.iter().min().copied().unwrap_or(0);
        assert_eq!(table.time[..common], tables[0].time[..common]);
        assert_eq!(
            column(table, "y"),
            &Data::Float(vec![0.3 * 3.0; table.time.len()]),
            "{}",
            table.path.display()
        );
    }
}

/// A writer that fails once `limit` bytes were written (a full disk).
struct FullAfter {
    limit: usize,
    written: usize,
}

impl Write for FullAfter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.written + buf.len() > self.limit {
            return Err(std::io::Error::other("no space left on the device"));
        }
        self.written += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn an_unwritable_file_ends_the_run_and_the_other_files_keep_the_rows() {
    use cosimo::master::execution::{Execution, RunOptions};
    use cosimo::observe::{ArrowWriter, CsvWriter, MatWriter};
    let dir = temp_dir();
    let fmu_path = fmu("Dahlquist", 2);
    let opened = cosimo::fmu::Fmu::open(&fmu_path).unwrap();
    let system = cosimo::system::System::single_fmu(
        &fmu_path,
        opened.description(),
        Vec::new(),
        &cosimo::settings::Overrides {
            stop: Some(10.0),
            step: Some(0.01),
            ..Default::default()
        },
    )
    .unwrap();
    let mut execution = Execution::instantiate(
        &system,
        &RunOptions {
            bare_names: true,
            ..RunOptions::default()
        },
    )
    .unwrap();
    let columns = execution.result_columns();
    let names: Vec<String> = columns.iter().map(|c| c.name.clone()).collect();
    // The CSV file's disk fills after about 100 rows; its buffer flushes every row here.
    let mut full = CsvWriter::new(
        std::io::LineWriter::new(FullAfter {
            limit: 2000,
            written: 0,
        }),
        Path::new("full.csv"),
        &names,
    )
    .unwrap();
    let mat = dir.path().join("kept.mat");
    let arrow = dir.path().join("kept.arrow");
    let mut mat_writer = MatWriter::create(&mat, &columns, &mut |w| panic!("{w}")).unwrap();
    let mut arrow_writer = ArrowWriter::create(&arrow, &columns).unwrap();
    let error = cosimo::master::run::run(
        &mut execution,
        &mut [&mut full, &mut mat_writer, &mut arrow_writer],
    )
    .unwrap_err()
    .to_string();
    assert!(
        error.contains("full.csv") && error.contains("no space left"),
        "{error}"
    );
    let (mat, arrow) = (read(&mat), read(&arrow));
    assert!(
        mat.time.len() > 50 && mat.time.len() < 1001,
        "{}",
        mat.time.len()
    );
    assert_eq!(mat.time, arrow.time);
    assert_eq!(column(&mat, "x"), column(&arrow, "x"));
}

#[test]
fn bad_files_and_names_get_messages_that_name_them() {
    let dir = temp_dir();
    let output = cosimo([
        "run",
        &fmu("Dahlquist", 2).display().to_string(),
        "--output",
        &dir.path().join("r.xlsx").display().to_string(),
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", show(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("r.xlsx: has the extension .xlsx, which names no result format; end the file name in .csv, .mat, .arrow or .parquet"),
        "{stderr}"
    );
    assert!(!dir.path().join("r.xlsx").exists());
    // A device without an extension takes CSV, as before.
    cosimo_ok([
        "run",
        &fmu("Dahlquist", 2).display().to_string(),
        "--output",
        "/dev/null",
    ]);

    // A cut Arrow stream: the rows before the cut are named, and what to do.
    let (files, _) = run_feedthrough(dir.path(), "t", &[]);
    let bytes = std::fs::read(&files[2]).unwrap();
    let cut = dir.path().join("cut.arrow");
    std::fs::write(&cut, &bytes[..bytes.len() - 100]).unwrap();
    let message = read_result(&cut).unwrap_err().to_string();
    assert!(
        message.starts_with(&format!(
            "{}: the Arrow stream ends inside a message",
            cut.display()
        )),
        "{message}"
    );
    assert!(message.contains("run the simulation again"), "{message}");

    // A MAT header that claims more than the file holds, through `cosimo plot`.
    let mut bytes = std::fs::read(&files[1]).unwrap();
    let name_at = find(&bytes, b"name\0");
    bytes[name_at - 12..name_at - 8].copy_from_slice(&i32::MAX.to_le_bytes());
    let broken = dir.path().join("broken.mat");
    std::fs::write(&broken, &bytes).unwrap();
    let output = cosimo([
        "plot",
        &broken.display().to_string(),
        "--variable",
        "Int8_output",
        "-o",
        &dir.path().join("p.png").display().to_string(),
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", show(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "{}: not a readable MAT result file: the matrix after Aclass",
            broken.display()
        )) && stderr.contains("a broken or cut file"),
        "{stderr}"
    );
}

#[test]
fn plot_and_check_read_every_format() {
    let dir = temp_dir();
    let (files, _) = run_feedthrough(dir.path(), "c", &[]);
    for file in &files {
        let png = dir.path().join("p.png");
        cosimo_ok([
            "plot",
            &file.display().to_string(),
            "--variable",
            "Float64_continuous_output",
            "-o",
            &png.display().to_string(),
        ]);
        assert!(std::fs::metadata(&png).unwrap().len() > 1000);
        // The run checked against its own results in this format passes.
        let output = cosimo([
            "check",
            &fmu("Feedthrough", 3).display().to_string(),
            "--input-file",
            &dir.path().join("in.csv").display().to_string(),
            "--reference",
            &file.display().to_string(),
            "--step-size",
            "0.05",
        ]);
        assert!(
            output.status.success(),
            "{}:\n{}",
            file.display(),
            show(&output)
        );
    }
}

#[test]
fn a_study_keeps_each_runs_results_in_the_format_it_names() {
    let dir = temp_dir();
    let study = dir.path().join("study.json");
    std::fs::write(
        &study,
        format!(
            r#"{{"system": {:?}, "experiment": {{"stopTime": 1, "stepSize": 0.1}},
                "grid": [{{"name": "x0", "values": [1, 2]}}],
                "keep": {{"results": true, "format": "arrow"}}}}"#,
            fmu("Dahlquist", 2).display().to_string()
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    cosimo_ok([
        "sweep",
        &study.display().to_string(),
        "--output-dir",
        &out.display().to_string(),
    ]);
    let second = read(&out.join("runs/run-000001.arrow"));
    assert_eq!(second.time.len(), 11);
    assert!(matches!(column(&second, "x"), Data::Float(x) if x[0] == 2.0));
    std::fs::write(
        &study,
        format!(
            r#"{{"system": {:?}, "grid": [{{"name": "x0", "values": [1]}}],
                "keep": {{"format": "mat"}}}}"#,
            fmu("Dahlquist", 2).display().to_string()
        ),
    )
    .unwrap();
    let output = cosimo([
        "sweep",
        &study.display().to_string(),
        "--output-dir",
        &dir.path().join("out2").display().to_string(),
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", show(&output));
    assert!(String::from_utf8_lossy(&output.stderr)
        .contains("keep.format applies to the runs' result files: set keep.results to true"));
}

#[test]
fn mutated_mat_and_arrow_files_are_an_error_or_a_table_never_a_panic() {
    use rand_chacha::rand_core::{RngCore, SeedableRng};
    let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/results");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(31);
    let mut read = 0;
    for name in [
        "feedthrough.mat",
        "dahlquist.mat",
        "feedthrough.arrow",
        "dahlquist.arrow",
    ] {
        let original = std::fs::read(seeds.join(name)).unwrap();
        for _ in 0..1500 {
            let mut bytes = original.clone();
            // Flip bytes, overwrite a 4-byte field with an extreme, or cut the file.
            match rng.next_u32() % 3 {
                0 => {
                    for _ in 0..1 + rng.next_u32() % 4 {
                        let at = rng.next_u32() as usize % bytes.len();
                        bytes[at] ^= 1 << (rng.next_u32() % 8);
                    }
                }
                1 => {
                    let at = rng.next_u32() as usize % (bytes.len() - 4);
                    let value = [i32::MAX, i32::MIN, -1, 0, 1 << 20][rng.next_u32() as usize % 5];
                    bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
                }
                _ => bytes.truncate(rng.next_u32() as usize % bytes.len()),
            }
            let path = Path::new(name);
            let result = if name.ends_with(".mat") {
                cosimo::results::read::mat::parse(&bytes, path)
            } else {
                cosimo::results::read::arrow::parse_ipc(bytes, path)
            };
            if let Ok(data) = result {
                read += 1;
                for column in &data.columns {
                    assert_eq!(column.values.len(), data.time.len());
                }
            }
        }
    }
    assert!(read > 100, "some mutations leave a readable file: {read}");
}
