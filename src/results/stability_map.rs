//! Stability maps as the stability thesis draws them: the spectral radius of the coupled
//! scheme over a plane of two parameters as a heat map, with the stability limit (the
//! contour where the spectral radius crosses 1) drawn on top and a colour bar beside it; PNG or
//! SVG by the file's extension.

use std::path::Path;

use plotters::prelude::*;

use super::contour::{contour, Grid};
use super::plot::{finite_span, register_font, render};
use crate::error::{Error, Result};

/// Width and height of a map in pixels.
pub const SIZE: (u32, u32) = (900, 700);

/// The top of the colour scale: larger spectral radii (up to infinity) take its colour.
pub const RHO_TOP: f64 = 2.0;

/// Colours of the scale: steps of RHO_TOP / LEVELS, so that neighbouring cells of one colour
/// are drawn as one rectangle (a 1000 x 1000 map stays a small SVG).
const LEVELS: usize = 64;

/// Stops of the colour scale at 0, 0.5, 1, 1.5 and 2: blue (stable, the smaller the faster
/// perturbations decay), pale yellow at the limit, red (unstable).
const STOPS: [(u8, u8, u8); 5] = [
    (49, 54, 149),
    (145, 191, 219),
    (255, 255, 191),
    (252, 141, 89),
    (165, 0, 38),
];

/// The colour of points whose spectral radius is not a number.
const NOT_A_NUMBER: RGBColor = RGBColor(150, 150, 150);

/// Draw the map of `points` (x, y, spectral radius), listed x-major on a rectangular grid (as
/// `analysis::linear::grid` lists them), into a PNG or SVG at `path`; `axes` names (x, y), and
/// the contour is drawn where the spectral radius crosses `limit` (1, to the rounding a
/// measured map allows).
pub fn plot_stability_map(
    path: &Path,
    title: &str,
    axes: (&str, &str),
    points: &[(f64, f64, f64)],
    limit: f64,
) -> Result<()> {
    let grid = Grid::from_points(points).ok_or_else(|| {
        Error::Internal(format!(
            "the {} points of the stability map do not form a grid with increasing axes",
            points.len()
        ))
    })?;
    if grid.xs.len() < 2 || grid.ys.len() < 2 {
        return Err(Error::Usage(
            "a stability map needs at least 2 points per axis (--points 2 or more)".into(),
        ));
    }
    render!(path, SIZE, |root| draw(root, title, axes, &grid, limit))
}

/// The colour of the scale at level `k` of [`LEVELS`].
fn level_colour(k: usize) -> RGBColor {
    let s = (k as f64 + 0.5) / LEVELS as f64 * (STOPS.len() - 1) as f64;
    let i = (s.floor() as usize).min(STOPS.len() - 2);
    let f = s - i as f64;
    let mix = |a: u8, b: u8| (f64::from(a) + f * (f64::from(b) - f64::from(a))).round() as u8;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// The level of the scale a spectral radius falls on (None: not a number).
fn level(rho: f64) -> Option<usize> {
    if rho.is_nan() {
        return None;
    }
    let k = (rho.max(0.0) / RHO_TOP * LEVELS as f64).floor();
    Some((k as usize).min(LEVELS - 1))
}

/// The cell of each node along an axis: from the middle to the previous node to the middle to
/// the next (half a spacing beyond the first and last), clamped to `range`.
fn cells(nodes: &[f64], range: (f64, f64)) -> Vec<(f64, f64)> {
    let n = nodes.len();
    let middle = |k: usize| 0.5 * nodes[k] + 0.5 * nodes[k + 1];
    (0..n)
        .map(|k| {
            let lo = if k == 0 {
                nodes[0] - (middle(0) - nodes[0])
            } else {
                middle(k - 1)
            };
            let hi = if k + 1 == n {
                nodes[n - 1] + (nodes[n - 1] - middle(n - 2))
            } else {
                middle(k)
            };
            let clamp = |v: f64| {
                if v.is_nan() {
                    range.0
                } else {
                    v.clamp(range.0, range.1)
                }
            };
            (clamp(lo), clamp(hi))
        })
        .collect()
}

/// The span of the cells of an axis, finite.
fn extent(nodes: &[f64]) -> (f64, f64) {
    let n = nodes.len();
    let (first, last) = (nodes[0], nodes[n - 1]);
    let lo = first - (0.5 * nodes[1] - 0.5 * first);
    let hi = last + (0.5 * last - 0.5 * nodes[n - 2]);
    finite_span(lo, hi)
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    axes: (&str, &str),
    grid: &Grid,
    limit: f64,
) -> std::result::Result<(), Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    let text = register_font();
    root.fill(&WHITE)?;
    let root = if text {
        root.titled(title, ("sans-serif", 20))?
    } else {
        root
    };
    let (left, right) = root.split_horizontally(SIZE.0 - 140);
    let (x0, x1) = extent(&grid.xs);
    let (y0, y1) = extent(&grid.ys);
    let mut builder = ChartBuilder::on(&left);
    builder.margin(15);
    if text {
        builder.x_label_area_size(45).y_label_area_size(70);
    }
    let mut chart = builder.build_cartesian_2d(x0..x1, y0..y1)?;
    if text {
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc(axes.0)
            .y_desc(axes.1)
            .label_style(("sans-serif", 14))
            .draw()?;
    }
    // The heat map: per column of the grid, runs of cells of one colour as one rectangle.
    let (xcells, ycells) = (cells(&grid.xs, (x0, x1)), cells(&grid.ys, (y0, y1)));
    let mut rectangles = Vec::new();
    for (i, &(left_edge, right_edge)) in xcells.iter().enumerate() {
        let mut j = 0;
        while j < ycells.len() {
            let colour = level(grid.at(i, j));
            let mut end = j;
            while end + 1 < ycells.len() && level(grid.at(i, end + 1)) == colour {
                end += 1;
            }
            let fill = colour.map_or(NOT_A_NUMBER, level_colour);
            rectangles.push(Rectangle::new(
                [(left_edge, ycells[j].0), (right_edge, ycells[end].1)],
                fill.filled(),
            ));
            j = end + 1;
        }
    }
    chart.draw_series(rectangles)?;
    // The stability limit on top.
    let boundary = BLACK.stroke_width(2);
    for (k, line) in contour(grid, limit).into_iter().enumerate() {
        let drawn = chart.draw_series(std::iter::once(PathElement::new(line, boundary)))?;
        if k == 0 && text {
            drawn
                .label("spectral radius = 1 (stability limit)")
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], boundary));
        }
    }
    if text {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 14))
            .draw()?;
    }
    // The colour bar, its value axis on the right.
    let mut builder = ChartBuilder::on(&right);
    builder.margin_top(15).margin_bottom(15).margin_right(10);
    if text {
        builder.x_label_area_size(45).right_y_label_area_size(70);
    }
    let mut bar = builder.build_cartesian_2d(0.0..1.0, 0.0..RHO_TOP)?;
    bar.draw_series((0..LEVELS).map(|k| {
        let step = RHO_TOP / LEVELS as f64;
        Rectangle::new(
            [(0.0, k as f64 * step), (1.0, (k + 1) as f64 * step)],
            level_colour(k).filled(),
        )
    }))?;
    bar.draw_series(std::iter::once(PathElement::new(
        [(0.0, 1.0), (1.0, 1.0)],
        boundary,
    )))?;
    if text {
        bar.configure_mesh()
            .disable_mesh()
            .disable_x_axis()
            .y_labels(5)
            .y_desc(format!("spectral radius (≥ {RHO_TOP} at the top)"))
            .label_style(("sans-serif", 14))
            .draw()?;
    }
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scale_runs_from_blue_through_the_limit_to_red() {
        assert_eq!(level(0.0), Some(0));
        assert_eq!(level(-1.0), Some(0));
        assert_eq!(level(f64::INFINITY), Some(LEVELS - 1));
        assert_eq!(level(f64::NAN), None);
        // Just below and above 1: the two levels on either side of the limit's colour.
        assert_eq!(level(0.999), Some(LEVELS / 2 - 1));
        assert_eq!(level(1.001), Some(LEVELS / 2));
        let (blue, red) = (level_colour(0), level_colour(LEVELS - 1));
        assert!(blue.2 > blue.0 && red.0 > red.2, "{blue:?} {red:?}");
    }

    #[test]
    fn cells_tile_the_axis_between_the_middles() {
        let c = cells(&[0.0, 1.0, 3.0], (-0.5, 4.0));
        assert_eq!(c, vec![(-0.5, 0.5), (0.5, 2.0), (2.0, 4.0)]);
        assert_eq!(extent(&[0.0, 1.0, 3.0]), (-0.5, 4.0));
    }
}
