//! Plots: PNG plots of a failing signal (the reference, its tolerance tube, the result and the
//! points outside the tube), and `cosimo plot`'s charts of series over time or points over a
//! parameter in PNG or SVG (by the file's extension). The font is embedded (DejaVu Sans), so no
//! system fonts are needed.

use std::path::Path;
use std::sync::OnceLock;

use plotters::prelude::*;

use super::compare::{SignalComparison, Trace};
use crate::error::{Error, Result};

/// Width and height of a plot in pixels.
pub const SIZE: (u32, u32) = (1000, 600);

pub(crate) fn register_font() -> bool {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    *REGISTERED.get_or_init(|| {
        plotters::style::register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular())
            .is_ok()
    })
}

/// A file name for a signal: characters other than letters, digits, `-`, `_` and `.` become `_`.
pub fn file_name(signal: &str) -> String {
    let mut name: String = signal
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    name.push_str(".png");
    name
}

/// Plot a compared signal that kept its trace to a PNG at `path`.
pub fn plot_signal(path: &Path, title: &str, signal: &SignalComparison) -> Result<()> {
    let Some(trace) = &signal.trace else {
        return Err(Error::Internal(format!(
            "signal \"{}\" has no trace to plot",
            signal.name
        )));
    };
    writable(path)?;
    draw(path, title, signal, trace).map_err(|e| not_drawn(path, e))
}

/// Create (or empty) the PNG file first: a folder that does not exist or cannot be written is
/// then an error naming the file and the system's reason, not the image library's debug text.
pub(crate) fn writable(path: &Path) -> Result<()> {
    std::fs::File::create(path)
        .map(drop)
        .map_err(|e| Error::io(path, e))
}

/// A plot that could not be drawn: no half-written file is left behind.
pub(crate) fn not_drawn(path: &Path, error: Box<dyn std::error::Error>) -> Error {
    let _ = std::fs::remove_file(path);
    Error::io(
        path,
        std::io::Error::other(format!("cannot draw the plot: {error}")),
    )
}

fn bounds(trace: &Trace) -> (f64, f64, f64, f64) {
    let mut t = (f64::INFINITY, f64::NEG_INFINITY);
    let mut y = (f64::INFINITY, f64::NEG_INFINITY);
    let mut take = |ti: f64, yi: f64| {
        if ti.is_finite() {
            t = (t.0.min(ti), t.1.max(ti));
        }
        if yi.is_finite() {
            y = (y.0.min(yi), y.1.max(yi));
        }
    };
    for &(ti, yi) in trace.reference.iter().chain(&trace.result) {
        take(ti, yi);
    }
    for &(ti, lo, hi) in &trace.tube {
        take(ti, lo);
        take(ti, hi);
    }
    if !t.0.is_finite() {
        t = (0.0, 1.0);
    }
    if !y.0.is_finite() {
        y = (-1.0, 1.0);
    }
    if t.1 <= t.0 {
        t.1 = t.0 + 1.0;
    }
    let pad = if y.1 > y.0 {
        0.05 * (y.1 - y.0)
    } else {
        0.5 * y.0.abs().max(1.0)
    };
    let (t0, t1) = finite_span(t.0, t.1);
    let (y0, y1) = finite_span(y.0 - pad, y.1 + pad);
    (t0, t1, y0, y1)
}

/// The largest half-width of an axis whose data spans more than the largest double: its span
/// stays finite, so that the plotting library can divide it into ticks (an infinite span never
/// finishes).
const LARGEST_HALF_SPAN: f64 = f64::MAX / 4.0;

/// `lo..hi` as an axis range with finite ends and a finite span: padding that overflowed stops
/// at the largest double, and data spanning more than the largest double (-1e308 to 1e308) gets
/// a range centred on it with a half-width of [`LARGEST_HALF_SPAN`] (points beyond are clipped
/// to the edge).
pub(crate) fn finite_span(lo: f64, hi: f64) -> (f64, f64) {
    let clamp = |x: f64| {
        if x.is_nan() {
            0.0
        } else {
            x.clamp(-f64::MAX, f64::MAX)
        }
    };
    let (lo, hi) = (clamp(lo), clamp(hi));
    if (hi - lo).is_finite() {
        return (lo, hi);
    }
    let centre = 0.5 * lo + 0.5 * hi;
    let half = (0.5 * hi - 0.5 * lo).min(LARGEST_HALF_SPAN);
    (centre - half, centre + half)
}

fn draw(
    path: &Path,
    title: &str,
    signal: &SignalComparison,
    trace: &Trace,
) -> std::result::Result<(), Box<dyn std::error::Error>> {
    let text = register_font();
    let root = BitMapBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    let (t0, t1, y0, y1) = bounds(trace);
    let mut builder = ChartBuilder::on(&root);
    builder.margin(15);
    if text {
        builder
            .caption(title, ("sans-serif", 22))
            .x_label_area_size(40)
            .y_label_area_size(80);
    }
    let mut chart = builder.build_cartesian_2d(t0..t1, y0..y1)?;
    if text {
        chart
            .configure_mesh()
            .x_desc("time [s]")
            .y_desc(signal.name.as_str())
            .label_style(("sans-serif", 14))
            .draw()?;
    }
    let tube_color = RGBColor(170, 200, 255);
    // The tube as a filled band: upper bound forward, lower bound backward.
    let band: Vec<(f64, f64)> = trace
        .tube
        .iter()
        .map(|&(t, _, hi)| (t, hi.clamp(y0, y1)))
        .chain(
            trace
                .tube
                .iter()
                .rev()
                .map(|&(t, lo, _)| (t, lo.clamp(y0, y1))),
        )
        .filter(|(t, y)| t.is_finite() && y.is_finite())
        .collect();
    if band.len() > 2 {
        chart
            .draw_series(std::iter::once(Polygon::new(
                band,
                tube_color.mix(0.6).filled(),
            )))?
            .label("tolerance tube")
            .legend(move |(x, y)| {
                Rectangle::new([(x, y - 5), (x + 20, y + 5)], tube_color.filled())
            });
    }
    let finite = |p: &&(f64, f64)| p.0.is_finite() && p.1.is_finite();
    chart
        .draw_series(LineSeries::new(
            trace.reference.iter().filter(finite).copied(),
            BLUE.stroke_width(2),
        ))?
        .label("reference")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLUE.stroke_width(2)));
    chart
        .draw_series(LineSeries::new(
            trace.result.iter().filter(finite).copied(),
            RED.stroke_width(2),
        ))?
        .label("result")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], RED.stroke_width(2)));
    chart
        .draw_series(
            trace
                .violations
                .iter()
                .filter(finite)
                .map(|&(t, y)| Cross::new((t, y.clamp(y0, y1)), 5, BLACK.stroke_width(2))),
        )?
        .label("outside the tube")
        .legend(|(x, y)| Cross::new((x + 10, y), 5, BLACK.stroke_width(2)));
    if text {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .label_font(("sans-serif", 14))
            .draw()?;
    }
    root.present()?;
    Ok(())
}

/// The image formats of `cosimo plot` and `cosimo stability`, picked by the file's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageFormat {
    Png,
    Svg,
}

impl ImageFormat {
    /// The format of `path` by its extension (`.png` or `.svg`, any case); anything else is
    /// refused with a message naming the file and the extensions.
    pub fn of_path(path: &Path) -> Result<ImageFormat> {
        let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        match extension.to_ascii_lowercase().as_str() {
            "png" => Ok(ImageFormat::Png),
            "svg" => Ok(ImageFormat::Svg),
            _ => Err(Error::Usage(format!(
                "{}: {}, which names no image format; end the file name in .png or .svg",
                path.display(),
                if extension.is_empty() {
                    "has no extension".to_string()
                } else {
                    format!("has the extension .{extension}")
                }
            ))),
        }
    }
}

/// Draw on a new image at `path` in the format its extension names: `$draw` is called with the
/// root drawing area of the PNG or SVG backend. A plot that cannot be drawn leaves no file.
macro_rules! render {
    ($path:expr, $size:expr, |$root:ident| $draw:expr) => {{
        use plotters::prelude::IntoDrawingArea as _;
        use $crate::results::plot::{not_drawn, writable, ImageFormat};
        let path: &std::path::Path = $path;
        let format = ImageFormat::of_path(path)?;
        writable(path)?;
        let drawn: std::result::Result<(), Box<dyn std::error::Error>> = match format {
            ImageFormat::Png => {
                let $root = plotters::prelude::BitMapBackend::new(path, $size).into_drawing_area();
                $draw
            }
            ImageFormat::Svg => {
                let $root = plotters::prelude::SVGBackend::new(path, $size).into_drawing_area();
                $draw
            }
        };
        drawn.map_err(|e| not_drawn(path, e))
    }};
}
pub(crate) use render;

/// One named line of a [`plot_series`] chart.
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
}

/// Plot several series over time (or over the first column of a table), `axes` naming
/// (x, y), into a PNG or SVG at `path` (by its extension; non-finite points are left out, and
/// the value axis is clipped to `y_range` when given, so a diverging run does not flatten the
/// others).
pub fn plot_series(
    path: &Path,
    title: &str,
    axes: (&str, &str),
    series: &[Series],
    y_range: Option<(f64, f64)>,
) -> Result<()> {
    render!(path, SIZE, |root| draw_series(
        root, title, axes, series, y_range, false
    ))
}

/// Plot several series of one quantity over another (points, not lines: e.g. a sweep's summary
/// over a sampled parameter) into a PNG or SVG at `path`, `axes` naming (x, y).
pub fn plot_points(
    path: &Path,
    title: &str,
    axes: (&str, &str),
    series: &[Series],
    y_range: Option<(f64, f64)>,
) -> Result<()> {
    render!(path, SIZE, |root| draw_series(
        root, title, axes, series, y_range, true
    ))
}

/// The value axis' label and each series' legend suffix for `series` (variable, unit), one
/// entry per line drawn: `x [m]` when every one has the same unit (`x, y [m]` for several
/// variables, `value [m]` when their names are long); else the names alone and each legend
/// entry with its own unit (` [m/s]`, nothing where the file gives none). The third element is
/// true when the units differ.
pub fn value_axis(series: &[(&str, Option<&str>)]) -> (String, Vec<String>, bool) {
    let mut names: Vec<&str> = Vec::new();
    for (name, _) in series {
        if !names.contains(name) {
            names.push(name);
        }
    }
    let names = names.join(", ");
    let names = if names.chars().count() > 60 {
        "value".to_string()
    } else {
        names
    };
    let first = series.first().and_then(|v| v.1);
    let no_suffix = vec![String::new(); series.len()];
    if series.iter().all(|v| v.1 == first) {
        return match first {
            Some(unit) => (format!("{names} [{unit}]"), no_suffix, false),
            None => (names, no_suffix, false),
        };
    }
    let suffixes = series
        .iter()
        .map(|v| v.1.map(|u| format!(" [{u}]")).unwrap_or_default())
        .collect();
    (names, suffixes, true)
}

fn draw_series<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    (x_label, y_label): (&str, &str),
    series: &[Series],
    y_range: Option<(f64, f64)>,
    markers: bool,
) -> std::result::Result<(), Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    let text = register_font();
    let finite = |p: &&(f64, f64)| p.0.is_finite() && p.1.is_finite();
    let (mut t0, mut t1, mut y0, mut y1) = (
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
    );
    for s in series {
        for &(t, y) in s.points.iter().filter(finite) {
            t0 = t0.min(t);
            t1 = t1.max(t);
            y0 = y0.min(y);
            y1 = y1.max(y);
        }
    }
    if let Some((lo, hi)) = y_range {
        (y0, y1) = (lo, hi);
    }
    if !t0.is_finite() || !t1.is_finite() || t1 <= t0 {
        (t0, t1) = (0.0, 1.0);
    }
    if !y0.is_finite() || !y1.is_finite() || y1 <= y0 {
        (y0, y1) = (y0.min(0.0) - 1.0, y1.max(0.0) + 1.0);
    }
    let pad = 0.05 * (y1 - y0);
    let (t0, t1) = finite_span(t0, t1);
    let (y0, y1) = finite_span(y0 - pad, y1 + pad);
    root.fill(&WHITE)?;
    let mut builder = ChartBuilder::on(&root);
    builder.margin(15);
    if text {
        builder
            .caption(title, ("sans-serif", 22))
            .x_label_area_size(40)
            .y_label_area_size(80);
    }
    let mut chart = builder.build_cartesian_2d(t0..t1, y0..y1)?;
    if text {
        chart
            .configure_mesh()
            .x_desc(x_label)
            .y_desc(y_label)
            .label_style(("sans-serif", 14))
            .draw()?;
    }
    let colors = [
        RGBColor(31, 119, 180),
        RGBColor(214, 39, 40),
        RGBColor(44, 160, 44),
        RGBColor(255, 127, 14),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
        RGBColor(188, 189, 34),
        RGBColor(23, 190, 207),
    ];
    for (i, s) in series.iter().enumerate() {
        let color = colors[i % colors.len()];
        let clipped = s
            .points
            .iter()
            .filter(finite)
            .map(|&(t, y)| (t, y.clamp(y0, y1)));
        let line = if markers {
            chart.draw_series(clipped.map(|p| Circle::new(p, 4, color.filled())))?
        } else {
            chart.draw_series(LineSeries::new(clipped, color.stroke_width(2)))?
        };
        if text {
            line.label(s.label.as_str()).legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        }
    }
    if text {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .label_font(("sans-serif", 14))
            .draw()?;
    }
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Run `draw` on a thread; fail if it does not finish within a minute.
    fn finishes(what: &str, draw: impl FnOnce() -> Result<()> + Send + 'static) {
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = done.send(draw());
        });
        match finished.recv_timeout(std::time::Duration::from_secs(60)) {
            Ok(result) => assert!(result.is_ok(), "{what}: {result:?}"),
            Err(_) => panic!("{what}: the plot did not finish"),
        }
    }

    #[test]
    fn the_value_axis_carries_a_shared_unit_and_the_legend_carries_different_ones() {
        let (axis, suffixes, differ) = value_axis(&[("x", Some("m")), ("y", Some("m"))]);
        assert_eq!((axis.as_str(), differ), ("x, y [m]", false));
        assert_eq!(suffixes, vec!["", ""]);
        let (axis, suffixes, differ) = value_axis(&[("x", Some("m")), ("v", Some("m/s"))]);
        assert_eq!((axis.as_str(), differ), ("x, v", true));
        assert_eq!(suffixes, vec![" [m]", " [m/s]"]);
        // A file without units (CSV) next to one with them: the units go to the legend.
        let (axis, suffixes, differ) = value_axis(&[("x", None), ("x", Some("m"))]);
        assert_eq!((axis.as_str(), differ), ("x", true));
        assert_eq!(suffixes, vec!["", " [m]"]);
        assert_eq!(value_axis(&[("x", None), ("x", None)]).0, "x");
    }

    #[test]
    fn only_png_and_svg_are_image_formats() {
        assert_eq!(
            ImageFormat::of_path(Path::new("a.PNG")).ok(),
            Some(ImageFormat::Png)
        );
        assert_eq!(
            ImageFormat::of_path(Path::new("a.svg")).ok(),
            Some(ImageFormat::Svg)
        );
        let message = ImageFormat::of_path(Path::new("a.jpg"))
            .expect_err("jpg")
            .to_string();
        assert!(
            message.contains("a.jpg") && message.contains(".png or .svg"),
            "{message}"
        );
    }

    #[test]
    fn axis_ranges_stay_finite_for_data_near_the_largest_double() {
        for (lo, hi) in [
            (-f64::MAX, f64::MAX),
            (-1e308, 1e308),
            (0.99 * f64::MAX, f64::MAX),
            (f64::MAX, f64::MAX),
        ] {
            let pad = 0.05 * (hi - lo);
            let (a, b) = finite_span(lo - pad, hi + pad);
            assert!(
                a.is_finite() && b.is_finite() && (b - a).is_finite() && a <= b,
                "{lo}..{hi}: {a}..{b}"
            );
        }
        // Ordinary ranges are left as they are.
        assert_eq!(finite_span(-1.5, 2.5), (-1.5, 2.5));
    }

    #[test]
    fn a_signal_spanning_more_than_the_largest_double_is_plotted() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let series = vec![Series {
            label: "huge".into(),
            points: vec![(0.0, -1.7e308), (1.0, 1.7e308), (2.0, 0.0)],
        }];
        let path = dir.path().join("series.png");
        finishes("plot_series", move || {
            plot_series(&path, "huge", ("time [s]", "y"), &series, None)
        });
        let path = dir.path().join("map.png");
        finishes("plot_stability_map", move || {
            crate::results::stability_map::plot_stability_map(
                &path,
                "huge",
                ("x", "y"),
                &[
                    (-1.7e308, 0.0, 0.5),
                    (-1.7e308, 1.7e308, 0.5),
                    (1.7e308, 0.0, 2.0),
                    (1.7e308, 1.7e308, 0.5),
                ],
                1.0,
            )
        });
    }
}
