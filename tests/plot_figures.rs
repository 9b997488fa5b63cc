//! Figures people read: `cosimo plot` with several variables of several runs in one PNG or SVG
//! with the files' units on the value axis, and the stability map's heat map with the
//! spectral radius = 1 contour where the closed form puts it (Euler's methods on Dahlquist's
//! test equation).

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;

use arrow_array::{Float64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};

fn cosimo(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cosimo"))
        .args(args)
        .current_dir(dir)
        .env_remove("COSIMO_LOG")
        .output()
        .expect("the cosimo binary runs")
}

fn show(output: &Output) -> String {
    format!(
        "status: {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// An Arrow IPC stream of five rows: time, x and y in metres, v in metres per second, each
/// column scaled by `scale` (two runs that differ).
fn write_arrow(path: &Path, scale: f64) {
    let field = |name: &str, unit: &str| {
        Field::new(name, DataType::Float64, false).with_metadata(std::collections::HashMap::from([
            ("unit".to_string(), unit.to_string()),
        ]))
    };
    let schema = Arc::new(Schema::new(vec![
        field("time", "s"),
        field("x", "m"),
        field("y", "m"),
        field("v", "m/s"),
    ]));
    let time = [0.0, 0.5, 1.0, 1.5, 2.0];
    let column = |f: fn(f64) -> f64| {
        Arc::new(Float64Array::from(
            time.iter().map(|&t| scale * f(t)).collect::<Vec<_>>(),
        )) as arrow_array::ArrayRef
    };
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Float64Array::from(time.to_vec())),
            column(f64::sin),
            column(f64::cos),
            column(|t| 2.0 * t),
        ],
    )
    .expect("a batch");
    let file = std::fs::File::create(path).expect("creates the Arrow file");
    let mut writer =
        arrow_ipc::writer::StreamWriter::try_new(file, &schema).expect("an Arrow stream");
    writer.write(&batch).expect("writes the batch");
    writer.finish().expect("ends the stream");
}

/// The elements `<NAME ...>` (or `<NAME .../>`) of an SVG text: each as its attribute text
/// and its content (empty for a self-closed element).
fn elements<'a>(svg: &'a str, name: &str) -> Vec<(&'a str, &'a str)> {
    let open = format!("<{name} ");
    let mut found = Vec::new();
    let mut rest = svg;
    while let Some(at) = rest.find(&open) {
        let after = &rest[at + open.len()..];
        let end = after.find('>').expect("a closed tag");
        let (attributes, closed) = (&after[..end], after[..end].ends_with('/'));
        let content = if closed {
            ""
        } else {
            let close = format!("</{name}>");
            let stop = after[end + 1..].find(&close).unwrap_or(0);
            &after[end + 1..end + 1 + stop]
        };
        found.push((attributes, content));
        rest = &after[end..];
    }
    found
}

/// The value of attribute `name` in an element's attribute text.
fn attribute<'a>(attributes: &'a str, name: &str) -> Option<&'a str> {
    let key = format!(" {name}=\"");
    let padded = attributes;
    let at = if padded.starts_with(&key[1..]) {
        key.len() - 1
    } else {
        padded.find(&key)? + key.len()
    };
    let rest = &padded[at..];
    Some(&rest[..rest.find('"')?])
}

/// The points of a `<polyline>`.
fn points(attributes: &str) -> Vec<(f64, f64)> {
    attribute(attributes, "points")
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| {
            let (x, y) = p.split_once(',')?;
            Some((x.parse().ok()?, y.parse().ok()?))
        })
        .collect()
}

fn texts(svg: &str) -> Vec<String> {
    elements(svg, "text")
        .into_iter()
        .map(|(_, content)| content.trim().to_string())
        .collect()
}

#[test]
fn several_variables_of_several_runs_share_one_svg_with_the_unit_on_the_axis() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    write_arrow(&dir.path().join("a.arrow"), 1.0);
    write_arrow(&dir.path().join("b.arrow"), 0.5);
    let out = cosimo(
        dir.path(),
        &[
            "plot",
            "a.arrow",
            "b.arrow",
            "--variable",
            "x",
            "--variable",
            "y",
            "-o",
            "xy.svg",
        ],
    );
    assert!(out.status.success(), "{}", show(&out));
    assert!(out.stderr.is_empty() || !String::from_utf8_lossy(&out.stderr).contains("warning"));
    let svg = std::fs::read_to_string(dir.path().join("xy.svg")).expect("the SVG");
    // One line of five points per run and variable (the legend's samples have two).
    let lines: Vec<_> = elements(&svg, "polyline")
        .into_iter()
        .filter(|(a, _)| points(a).len() == 5)
        .collect();
    assert_eq!(lines.len(), 4, "{svg}");
    let texts = texts(&svg);
    for entry in ["a.arrow: x", "a.arrow: y", "b.arrow: x", "b.arrow: y"] {
        assert!(texts.iter().any(|t| t == entry), "{entry} in {texts:?}");
    }
    assert!(texts.iter().any(|t| t == "x, y [m]"), "{texts:?}");
    assert!(texts.iter().any(|t| t == "time [s]"), "{texts:?}");
}

#[test]
fn variables_of_different_units_carry_them_in_the_legend_with_a_warning() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    write_arrow(&dir.path().join("a.arrow"), 1.0);
    let out = cosimo(
        dir.path(),
        &[
            "plot",
            "a.arrow",
            "--variable",
            "x",
            "--variable",
            "v",
            "-o",
            "xv.svg",
        ],
    );
    assert!(out.status.success(), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warning: the plotted variables have different units (x [m], v [m/s])"),
        "{stderr}"
    );
    let svg = std::fs::read_to_string(dir.path().join("xv.svg")).expect("the SVG");
    let texts = texts(&svg);
    // One run: the legend names the variables, each with its unit; the axis has none.
    for entry in ["x [m]", "v [m/s]", "x, v"] {
        assert!(texts.iter().any(|t| t == entry), "{entry} in {texts:?}");
    }
    assert!(!texts.iter().any(|t| t == "x, v [m]"), "{texts:?}");
}

#[test]
fn png_is_still_written_and_other_extensions_are_refused() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    std::fs::write(
        dir.path().join("a.csv"),
        "time,x,v\n0,0,1\n1,1,0.5\n2,0.5,0\n",
    )
    .expect("writes the CSV");
    let out = cosimo(
        dir.path(),
        &[
            "plot",
            "a.csv",
            "--variable",
            "x",
            "--variable",
            "v",
            "-o",
            "a.png",
        ],
    );
    assert!(out.status.success(), "{}", show(&out));
    let png = std::fs::read(dir.path().join("a.png")).expect("the PNG");
    let decoder = png::Decoder::new(png.as_slice());
    let reader = decoder.read_info().expect("a PNG");
    assert_eq!((reader.info().width, reader.info().height), (1000, 600));
    for name in ["a.jpg", "a", "a.svgz"] {
        let out = cosimo(
            dir.path(),
            &["plot", "a.csv", "--variable", "x", "-o", name],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {}", show(&out));
        assert!(
            stderr.contains(name) && stderr.contains("end the file name in .png or .svg"),
            "{stderr}"
        );
        assert!(!dir.path().join(name).exists(), "{name} was written");
    }
}

/// The amplification factor of explicit Euler on y' = λy at z = Hλ = x + iy: |1 + z|, stable
/// inside the circle of radius 1 around -1.
fn explicit_euler(x: f64, y: f64) -> f64 {
    (1.0 + x).hypot(y)
}

/// Implicit Euler: 1 / |1 - z|, unstable inside the circle of radius 1 around 1.
fn implicit_euler(x: f64, y: f64) -> f64 {
    1.0 / (1.0 - x).hypot(y)
}

/// A map of `rho` on `n` x `n` points of [lo, hi]², listed x-major as the stability maps are.
fn map(n: usize, lo: f64, hi: f64, rho: fn(f64, f64) -> f64) -> Vec<(f64, f64, f64)> {
    let at = |k: usize| lo + (hi - lo) * k as f64 / (n - 1) as f64;
    let mut points = Vec::new();
    for i in 0..n {
        for j in 0..n {
            points.push((at(i), at(j), rho(at(i), at(j))));
        }
    }
    points
}

#[test]
fn the_contour_lies_on_the_closed_form_stability_limits_of_euler_methods() {
    use cosimo::results::contour::{contour, Grid};
    let (n, lo, hi) = (61, -2.5, 2.5);
    let spacing = (hi - lo) / (n - 1) as f64;
    for (name, rho, centre) in [
        (
            "explicit Euler",
            explicit_euler as fn(f64, f64) -> f64,
            -1.0,
        ),
        ("implicit Euler", implicit_euler, 1.0),
    ] {
        let grid = Grid::from_points(&map(n, lo, hi, rho)).expect("a grid");
        let lines = contour(&grid, 1.0);
        assert_eq!(lines.len(), 1, "{name}: one closed boundary");
        let line = &lines[0];
        assert_eq!(line.first(), line.last(), "{name}: closed");
        // Every crossing lies on the circle |z - centre| = 1, to a fraction of the spacing
        // (linear interpolation of a smooth function between two grid points).
        for &(x, y) in line {
            let off = ((x - centre).hypot(y) - 1.0).abs();
            assert!(off < 0.1 * spacing, "{name}: ({x}, {y}) is {off} off");
        }
        // And it goes all the way round.
        let leftmost = line.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
        let top = line.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
        assert!(
            (leftmost - (centre - 1.0)).abs() < spacing,
            "{name}: {leftmost}"
        );
        assert!((top - 1.0).abs() < spacing, "{name}: {top}");
    }
}

/// The pixel transform of a chart from its tick labels: (data value, pixel) pairs of the tick
/// labels of one axis, fitted by a line through the first and last.
fn axis(ticks: &[(f64, f64)]) -> impl Fn(f64) -> f64 {
    let (a, b) = (ticks[0], ticks[ticks.len() - 1]);
    let scale = (b.1 - a.1) / (b.0 - a.0);
    move |pixel| a.0 + (pixel - a.1) / scale
}

#[test]
fn the_stability_map_svg_draws_the_contour_where_the_spectral_radius_crosses_1() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("map.svg");
    let (n, lo, hi) = (41, -2.5, 0.5);
    cosimo::results::stability_map::plot_stability_map(
        &path,
        "explicit Euler",
        ("Re(Hλ)", "Im(Hλ)"),
        &map(n, lo, hi, explicit_euler),
        1.0,
    )
    .expect("draws the map");
    let svg = std::fs::read_to_string(&path).expect("the SVG");
    // The heat map: rectangles of the scale's colours; the colour bar; the contour on top.
    assert!(elements(&svg, "rect").len() > 100, "a heat map of cells");
    let texts = texts(&svg);
    assert!(
        texts.iter().any(|t| t.starts_with("spectral radius")),
        "{texts:?}"
    );
    let contours: Vec<Vec<(f64, f64)>> = elements(&svg, "polyline")
        .into_iter()
        .filter(|(a, _)| attribute(a, "stroke") == Some("#000000"))
        .map(|(a, _)| points(a))
        .filter(|p| p.len() > 2)
        .collect();
    assert_eq!(contours.len(), 1, "one closed contour");
    // Pixels to data through the tick labels: x ticks share the lowest row of labels, y
    // ticks the leftmost column.
    let labels: Vec<(f64, f64, f64)> = elements(&svg, "text")
        .into_iter()
        .filter_map(|(a, content)| {
            let value: f64 = content.trim().replace('−', "-").parse().ok()?;
            Some((
                value,
                attribute(a, "x")?.parse().ok()?,
                attribute(a, "y")?.parse().ok()?,
            ))
        })
        .collect();
    let bottom = labels.iter().map(|l| l.2).fold(f64::NEG_INFINITY, f64::max);
    let left = labels.iter().map(|l| l.1).fold(f64::INFINITY, f64::min);
    let x_ticks: Vec<(f64, f64)> = labels
        .iter()
        .filter(|l| l.2 == bottom)
        .map(|l| (l.0, l.1))
        .collect();
    let y_ticks: Vec<(f64, f64)> = labels
        .iter()
        .filter(|l| l.1 == left)
        .map(|l| (l.0, l.2))
        .collect();
    assert!(x_ticks.len() >= 2 && y_ticks.len() >= 2, "{labels:?}");
    let (to_x, to_y) = (axis(&x_ticks), axis(&y_ticks));
    // A pixel is 3 / 600 of the axis or so; the grid spacing 3 / 40.
    let spacing = (hi - lo) / (n - 1) as f64;
    let mut off_most: f64 = 0.0;
    for &(px, py) in &contours[0] {
        let (x, y) = (to_x(px), to_y(py));
        off_most = off_most.max(((1.0 + x).hypot(y) - 1.0).abs());
    }
    assert!(
        off_most < 0.5 * spacing,
        "the contour is {off_most} off the circle |1 + Hλ| = 1 (grid spacing {spacing})"
    );
}

#[test]
fn the_units_a_run_records_in_mat_arrow_and_parquet_reach_the_value_axis() {
    let fmu = fmu_pack::fmu_path("Oscillator", 3);
    let dir = tempfile::tempdir().expect("a temporary folder");
    let fmu = fmu.display().to_string();
    let out = cosimo(
        dir.path(),
        &[
            "run",
            &fmu,
            "--stop-time",
            "1",
            "--start-value",
            "F=1",
            "--output-file",
            "r.mat",
            "--output-file",
            "r.arrow",
            "--output-file",
            "r.parquet",
            "--output-file",
            "r.csv",
        ],
    );
    assert!(out.status.success(), "{}", show(&out));
    // A CSV file carries no units.
    for (file, unit) in [
        ("r.mat", true),
        ("r.arrow", true),
        ("r.parquet", true),
        ("r.csv", false),
    ] {
        let out = cosimo(
            dir.path(),
            &["plot", file, "--variable", "x", "-o", "x.svg"],
        );
        assert!(out.status.success(), "{file}: {}", show(&out));
        let svg = std::fs::read_to_string(dir.path().join("x.svg")).expect("the SVG");
        let texts = texts(&svg);
        assert_eq!(
            texts.iter().any(|t| t == "x [m]"),
            unit,
            "{file}: the axis in {texts:?}"
        );
    }
}
