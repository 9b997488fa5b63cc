//! SVG pictures of a compared signal for the HTML report: above, the reference, its tolerance
//! tube, the result and the points outside the tube; below, on the same time axis, the
//! deviation (result - reference) inside the tube's half-widths.
//!
//! Curves are reduced to at most four points per pixel column (the first, lowest, highest and
//! last sample), so a file stays small for a million rows and a one-sample spike stays
//! visible. Colours and fonts are presentation attributes: an SVG shown through `<img>` loads
//! no stylesheet, and a content security policy without inline styles allows them.

use std::fmt::Write as _;

use quick_xml::escape::escape;

use super::compare::{linear, SignalComparison, SignalKind, Trace};
use super::plot::finite_span;

/// Width and height of the picture in pixels.
pub const SIZE: (u32, u32) = (1000, 680);

const LEFT: f64 = 90.0;
const RIGHT: f64 = 980.0;
/// Top and bottom of the upper (values) and the lower (deviation) panel.
const VALUES: (f64, f64) = (70.0, 420.0);
const DEVIATION: (f64, f64) = (460.0, 620.0);

const REFERENCE: &str = "#1f77b4";
const RESULT: &str = "#d62728";
const TUBE: &str = "#aac8ff";
const DEVIATION_LINE: &str = "#6a3d9a";
const GRID: &str = "#e0e0e0";
const AXIS: &str = "#444444";

/// The SVG of a failing signal that kept its trace (None without a trace).
pub fn signal_plot(title: &str, signal: &SignalComparison) -> Option<String> {
    let trace = signal.trace.as_ref()?;
    let discrete = signal.kind == SignalKind::Discrete;
    let (t0, t1) = time_span(trace);
    let columns = (RIGHT - LEFT) as usize;

    let reference = maybe_steps(&trace.reference, discrete);
    let result = maybe_steps(&trace.result, discrete);
    let values_range = value_span(
        reference
            .iter()
            .chain(&result)
            .map(|p| p.1)
            .chain(trace.tube.iter().flat_map(|&(_, lo, hi)| [lo, hi])),
    );
    // The tube's half-widths around the reference, at the checked times.
    let (ref_times, ref_values): (Vec<f64>, Vec<f64>) = trace.reference.iter().copied().unzip();
    let band: Vec<(f64, f64, f64)> = if discrete {
        Vec::new()
    } else {
        trace
            .tube
            .iter()
            .map(|&(t, lo, hi)| {
                let r = linear(&ref_times, &ref_values, t);
                (t, lo - r, hi - r)
            })
            .collect()
    };
    let deviation_range = value_span(
        trace
            .deviation
            .iter()
            .map(|p| p.1)
            .chain(band.iter().flat_map(|&(_, lo, hi)| [lo, hi]))
            .chain([0.0]),
    );
    let top = Panel {
        t: (t0, t1),
        v: values_range,
        y: VALUES,
    };
    let bottom = Panel {
        t: (t0, t1),
        v: deviation_range,
        y: DEVIATION,
    };

    let mut svg = String::with_capacity(64 * 1024);
    let (width, height) = SIZE;
    let _ = write!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         viewBox=\"0 0 {width} {height}\" font-family=\"DejaVu Sans, Arial, sans-serif\" \
         font-size=\"13\">\n<title>{}</title>\n\
         <rect x=\"0\" y=\"0\" width=\"{width}\" height=\"{height}\" fill=\"#ffffff\"/>\n\
         <text x=\"{LEFT}\" y=\"28\" font-size=\"17\">{}</text>\n",
        escape(title),
        escape(title)
    );

    let time_ticks = ticks(t0, t1);
    top.grid(&mut svg, &time_ticks, false);
    bottom.grid(&mut svg, &time_ticks, true);

    for part in reduce_band(&trace.tube, (t0, t1), columns) {
        top.band(&mut svg, &part, TUBE);
    }
    for line in reduce(&reference, (t0, t1), columns) {
        top.line(&mut svg, &line, REFERENCE, 2.0);
    }
    for line in reduce(&result, (t0, t1), columns) {
        top.line(&mut svg, &line, RESULT, 1.5);
    }
    top.crosses(
        &mut svg,
        &reduce_markers(&trace.violations, (t0, t1), columns),
    );

    for part in reduce_band(&band, (t0, t1), columns) {
        bottom.band(&mut svg, &part, TUBE);
    }
    bottom.line(&mut svg, &[(t0, 0.0), (t1, 0.0)], AXIS, 0.8);
    for line in reduce(&trace.deviation, (t0, t1), columns) {
        bottom.line(&mut svg, &line, DEVIATION_LINE, 1.5);
    }

    top.frame(&mut svg, &signal.name);
    bottom.frame(&mut svg, "result \u{2212} reference");
    legend(&mut svg);
    let _ = write!(
        svg,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">time [s]</text>\n</svg>\n",
        (LEFT + RIGHT) / 2.0,
        DEVIATION.1 + 48.0
    );
    Some(svg)
}

/// The time axis: every finite time of the trace.
fn time_span(trace: &Trace) -> (f64, f64) {
    let times = trace
        .reference
        .iter()
        .chain(&trace.result)
        .map(|p| p.0)
        .chain(trace.tube.iter().map(|p| p.0))
        .filter(|t| t.is_finite());
    let (lo, hi) = times.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), t| {
        (lo.min(t), hi.max(t))
    });
    if lo < hi {
        finite_span(lo, hi)
    } else if lo.is_finite() {
        (lo - 0.5, lo + 0.5)
    } else {
        (0.0, 1.0)
    }
}

/// A value axis over the finite values, padded by 5 %.
fn value_span(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if !lo.is_finite() {
        return (-1.0, 1.0);
    }
    if lo == hi {
        let pad = 0.5 * lo.abs().max(1.0);
        return finite_span(lo - pad, hi + pad);
    }
    // 5 % of the span, computed from halves: the span itself may exceed the largest double.
    let pad = 0.1 * (0.5 * hi - 0.5 * lo);
    finite_span(lo - pad, hi + pad)
}

/// Discrete values held until the next sample: a step before each new value.
fn maybe_steps(points: &[(f64, f64)], discrete: bool) -> Vec<(f64, f64)> {
    if !discrete {
        return points.to_vec();
    }
    let mut out = Vec::with_capacity(2 * points.len());
    for (i, &p) in points.iter().enumerate() {
        if i > 0 && points[i - 1].1 != p.1 {
            out.push((p.0, points[i - 1].1));
        }
        out.push(p);
    }
    out
}

/// The pixel column of `t` among `columns` over `span`.
fn column(t: f64, (t0, t1): (f64, f64), columns: usize) -> usize {
    let f = (t - t0) / (t1 - t0);
    let f = if f.is_finite() {
        f
    } else {
        t / (t1 - t0) - t0 / (t1 - t0)
    };
    (f * columns as f64).clamp(0.0, (columns.max(1) - 1) as f64) as usize
}

/// Polylines through `points`, split where a time or value is not finite, with at most four
/// points per pixel column: the first, the lowest, the highest and the last, in time order.
fn reduce(points: &[(f64, f64)], span: (f64, f64), columns: usize) -> Vec<Vec<(f64, f64)>> {
    let mut lines = Vec::new();
    let mut line: Vec<(f64, f64)> = Vec::new();
    // Indices of the current column's first, lowest, highest and last point.
    let mut bucket: Option<(usize, [usize; 4])> = None;
    let flush = |bucket: &mut Option<(usize, [usize; 4])>, line: &mut Vec<(f64, f64)>| {
        if let Some((_, mut picked)) = bucket.take() {
            picked.sort_unstable();
            let mut previous = usize::MAX;
            for i in picked {
                if i != previous {
                    line.push(points[i]);
                    previous = i;
                }
            }
        }
    };
    for (i, &(t, v)) in points.iter().enumerate() {
        if !(t.is_finite() && v.is_finite()) {
            flush(&mut bucket, &mut line);
            if !line.is_empty() {
                lines.push(std::mem::take(&mut line));
            }
            continue;
        }
        let c = column(t, span, columns);
        match &mut bucket {
            Some((current, picked)) if *current == c => {
                if v < points[picked[1]].1 {
                    picked[1] = i;
                }
                if v > points[picked[2]].1 {
                    picked[2] = i;
                }
                picked[3] = i;
            }
            _ => {
                flush(&mut bucket, &mut line);
                bucket = Some((c, [i; 4]));
            }
        }
    }
    flush(&mut bucket, &mut line);
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// A band (time, lower, upper) reduced to its envelope per pixel column (the column's first
/// and last time, its lowest lower and highest upper bound), split where it is not finite.
fn reduce_band(
    band: &[(f64, f64, f64)],
    span: (f64, f64),
    columns: usize,
) -> Vec<Vec<(f64, f64, f64)>> {
    let mut parts = Vec::new();
    let mut part: Vec<(f64, f64, f64)> = Vec::new();
    // The current column: (column, first time, last time, lowest, highest).
    let mut bucket: Option<(usize, f64, f64, f64, f64)> = None;
    let flush = |bucket: &mut Option<(usize, f64, f64, f64, f64)>,
                 part: &mut Vec<(f64, f64, f64)>| {
        if let Some((_, first, last, lo, hi)) = bucket.take() {
            part.push((first, lo, hi));
            if last > first {
                part.push((last, lo, hi));
            }
        }
    };
    for &(t, lo, hi) in band {
        if !(t.is_finite() && lo.is_finite() && hi.is_finite()) {
            flush(&mut bucket, &mut part);
            if !part.is_empty() {
                parts.push(std::mem::take(&mut part));
            }
            continue;
        }
        let c = column(t, span, columns);
        match &mut bucket {
            Some((current, _, last, low, high)) if *current == c => {
                *last = t;
                *low = low.min(lo);
                *high = high.max(hi);
            }
            _ => {
                flush(&mut bucket, &mut part);
                bucket = Some((c, t, t, lo, hi));
            }
        }
    }
    flush(&mut bucket, &mut part);
    if !part.is_empty() {
        parts.push(part);
    }
    parts
}

/// Markers: at most four per pixel column, the lowest and the highest among them.
fn reduce_markers(points: &[(f64, f64)], span: (f64, f64), columns: usize) -> Vec<(f64, f64)> {
    reduce(points, span, columns)
        .into_iter()
        .flatten()
        .collect()
}

/// About six round tick values (1, 2 or 5 times a power of ten) inside `lo..=hi`.
fn ticks(lo: f64, hi: f64) -> Vec<f64> {
    let span = hi - lo;
    if !(span.is_finite() && span > 0.0) {
        return vec![lo, hi];
    }
    let raw = span / 6.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * magnitude);
    let first = (lo / step).ceil();
    (0..20)
        .map(|k| (first + k as f64) * step)
        .take_while(|&t| t <= hi + 1e-9 * step)
        .collect()
}

/// A tick label with as many decimals as the step between ticks needs.
fn tick_label(value: f64, step: f64) -> String {
    // A tick at zero computed as 1e-17 is zero.
    let value = if value.abs() < 1e-9 * step.abs() {
        0.0
    } else {
        value
    };
    let largest = value.abs().max(step.abs());
    if (1e-4..1e6).contains(&step.abs()) && largest < 1e6 {
        let decimals = (-step.abs().log10().floor()).max(0.0) as usize;
        format!("{value:.decimals$}")
    } else if value == 0.0 {
        "0".into()
    } else {
        format!("{value:.2e}")
    }
}

/// One panel: a time range and a value range drawn between two heights.
struct Panel {
    t: (f64, f64),
    v: (f64, f64),
    y: (f64, f64),
}

impl Panel {
    fn x(&self, t: f64) -> f64 {
        LEFT + (RIGHT - LEFT) * fraction(t, self.t).clamp(-0.01, 1.01)
    }

    fn y(&self, v: f64) -> f64 {
        self.y.1 - (self.y.1 - self.y.0) * fraction(v, self.v).clamp(-0.02, 1.02)
    }

    fn grid(&self, svg: &mut String, time_ticks: &[f64], time_labels: bool) {
        let step = tick_step(time_ticks);
        for &t in time_ticks {
            let x = self.x(t);
            let _ = writeln!(
                svg,
                "<line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"{GRID}\"/>",
                self.y.0, self.y.1
            );
            if time_labels {
                let _ = writeln!(
                    svg,
                    "<text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                    self.y.1 + 18.0,
                    tick_label(t, step)
                );
            }
        }
        let value_ticks = ticks(self.v.0, self.v.1);
        let step = tick_step(&value_ticks);
        for &v in &value_ticks {
            let y = self.y(v);
            let _ = writeln!(
                svg,
                "<line x1=\"{LEFT}\" y1=\"{y:.1}\" x2=\"{RIGHT}\" y2=\"{y:.1}\" stroke=\"{GRID}\"/>\n\
                 <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                LEFT - 6.0,
                y + 4.0,
                tick_label(v, step)
            );
        }
    }

    fn frame(&self, svg: &mut String, label: &str) {
        let (top, bottom) = self.y;
        let middle = (top + bottom) / 2.0;
        let _ = writeln!(
            svg,
            "<rect x=\"{LEFT}\" y=\"{top}\" width=\"{}\" height=\"{}\" fill=\"none\" \
             stroke=\"{AXIS}\"/>\n<text x=\"20\" y=\"{middle}\" text-anchor=\"middle\" \
             transform=\"rotate(-90 20 {middle})\">{}</text>",
            RIGHT - LEFT,
            bottom - top,
            escape(label)
        );
    }

    fn line(&self, svg: &mut String, points: &[(f64, f64)], color: &str, width: f64) {
        if points.is_empty() {
            return;
        }
        svg.push_str("<path d=\"");
        for (i, &(t, v)) in points.iter().enumerate() {
            let _ = write!(
                svg,
                "{}{:.1} {:.1}",
                if i == 0 { "M" } else { " L" },
                self.x(t),
                self.y(v)
            );
        }
        if points.len() == 1 {
            svg.push_str(" h0.1");
        }
        let _ = writeln!(
            svg,
            "\" fill=\"none\" stroke=\"{color}\" stroke-width=\"{width}\" \
             stroke-linejoin=\"round\" stroke-linecap=\"round\"/>"
        );
    }

    fn band(&self, svg: &mut String, part: &[(f64, f64, f64)], color: &str) {
        if part.is_empty() {
            return;
        }
        svg.push_str("<path d=\"");
        let upper = part.iter().map(|&(t, _, hi)| (t, hi));
        let lower = part.iter().rev().map(|&(t, lo, _)| (t, lo));
        for (i, (t, v)) in upper.chain(lower).enumerate() {
            let _ = write!(
                svg,
                "{}{:.1} {:.1}",
                if i == 0 { "M" } else { " L" },
                self.x(t),
                self.y(v)
            );
        }
        // A band of one column is a vertical bar: give it a pixel of width.
        let _ = writeln!(
            svg,
            " Z\" fill=\"{color}\" stroke=\"{color}\" stroke-width=\"1\"/>"
        );
    }

    fn crosses(&self, svg: &mut String, points: &[(f64, f64)]) {
        if points.is_empty() {
            return;
        }
        svg.push_str("<path d=\"");
        for &(t, v) in points {
            let (x, y) = (self.x(t), self.y(v));
            let _ = write!(svg, "M{:.1} {:.1} l8 8 m0 -8 l-8 8 ", x - 4.0, y - 4.0);
        }
        let _ = writeln!(
            svg,
            "\" fill=\"none\" stroke=\"#000000\" stroke-width=\"1.5\"/>"
        );
    }
}

/// Where `v` lies in `lo..hi` as a fraction, finite also when `v - lo` overflows.
fn fraction(v: f64, (lo, hi): (f64, f64)) -> f64 {
    let f = (v - lo) / (hi - lo);
    if f.is_finite() {
        f
    } else {
        v / (hi - lo) - lo / (hi - lo)
    }
}

fn tick_step(ticks: &[f64]) -> f64 {
    match ticks {
        [a, b, ..] => b - a,
        _ => 1.0,
    }
}

/// How a legend entry is drawn.
enum Mark {
    Band,
    Line(&'static str, f64),
    Cross,
}

/// The legend in one row above the upper panel.
fn legend(svg: &mut String) {
    let y = 50.0;
    let mut x = LEFT;
    for (mark, label) in [
        (Mark::Band, "tolerance tube"),
        (Mark::Line(REFERENCE, 2.0), "reference"),
        (Mark::Line(RESULT, 1.5), "result"),
        (Mark::Cross, "outside the tube"),
        (Mark::Line(DEVIATION_LINE, 1.5), "deviation (below)"),
    ] {
        let _ = match mark {
            Mark::Band => writeln!(
                svg,
                "<rect x=\"{x}\" y=\"{}\" width=\"24\" height=\"10\" fill=\"{TUBE}\"/>",
                y - 5.0
            ),
            Mark::Line(color, width) => writeln!(
                svg,
                "<line x1=\"{x}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"{color}\" \
                 stroke-width=\"{width}\"/>",
                x + 24.0
            ),
            Mark::Cross => writeln!(
                svg,
                "<path d=\"M{} {} l8 8 m0 -8 l-8 8\" fill=\"none\" stroke=\"#000000\" \
                 stroke-width=\"1.5\"/>",
                x + 8.0,
                y - 4.0
            ),
        };
        let _ = writeln!(
            svg,
            "<text x=\"{}\" y=\"{}\">{label}</text>",
            x + 30.0,
            y + 4.0
        );
        x += 40.0 + 7.5 * label.len() as f64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_one_sample_spike_survives_the_reduction() {
        let mut points: Vec<(f64, f64)> = (0..1_000_000).map(|i| (i as f64, 0.0)).collect();
        points[654_321].1 = 7.0;
        points[123_456].1 = -3.0;
        let lines = reduce(&points, (0.0, 999_999.0), 890);
        let kept: Vec<(f64, f64)> = lines.into_iter().flatten().collect();
        assert!(kept.len() <= 4 * 890, "{} points", kept.len());
        assert!(kept.contains(&(654_321.0, 7.0)));
        assert!(kept.contains(&(123_456.0, -3.0)));
        assert_eq!(kept.first(), Some(&(0.0, 0.0)));
        assert_eq!(kept.last(), Some(&(999_999.0, 0.0)));
        assert!(kept.windows(2).all(|w| w[0].0 <= w[1].0), "in time order");
    }

    #[test]
    fn lines_break_where_values_are_not_finite() {
        let points = [
            (0.0, 1.0),
            (1.0, 2.0),
            (2.0, f64::NAN),
            (3.0, 1.0),
            (4.0, f64::INFINITY),
        ];
        let lines = reduce(&points, (0.0, 4.0), 100);
        assert_eq!(lines, vec![vec![(0.0, 1.0), (1.0, 2.0)], vec![(3.0, 1.0)]]);
    }

    #[test]
    fn a_band_keeps_its_envelope_per_column() {
        let band: Vec<(f64, f64, f64)> = (0..1000)
            .map(|i| {
                let t = i as f64;
                let spike = if i == 500 { 10.0 } else { 0.0 };
                (t, -1.0 - spike, 1.0)
            })
            .collect();
        let parts = reduce_band(&band, (0.0, 999.0), 10);
        assert_eq!(parts.len(), 1);
        assert!(parts[0].len() <= 20);
        assert!(parts[0].iter().any(|&(_, lo, _)| lo == -11.0));
    }

    #[test]
    fn ticks_are_round_and_inside_the_range() {
        assert_eq!(ticks(0.0, 10.0), [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        let t = ticks(-0.013, 0.021);
        assert!(t.iter().all(|&v| (-0.013..=0.021).contains(&v)), "{t:?}");
        assert_eq!(tick_label(0.005, 0.005), "0.005");
        assert_eq!(tick_label(2.0, 2.0), "2");
        assert_eq!(tick_label(1e-17, 0.2), "0.0");
        assert_eq!(tick_label(3e7, 1e7), "3.00e7");
    }

    #[test]
    fn huge_values_map_inside_the_picture() {
        let span = value_span([-1.7e308, 1.7e308].into_iter());
        let panel = Panel {
            t: (0.0, 1.0),
            v: span,
            y: VALUES,
        };
        for v in [-1.7e308, 0.0, 1.7e308, f64::MAX] {
            let y = panel.y(v);
            assert!(
                y.is_finite() && (VALUES.0 - 10.0..=VALUES.1 + 10.0).contains(&y),
                "{v}: {y}"
            );
        }
    }
}
