//! Contour lines of a function sampled on a rectangular grid (marching squares): where a
//! stability map's spectral radius crosses 1. Crossings are placed on the grid's edges by
//! linear interpolation; a cell whose four corners alternate (a saddle) is resolved by the mean
//! of its corners. Segments are joined into polylines through the edges they share, so a
//! closed boundary comes out as one closed line.

use std::collections::HashMap;

/// Values sampled on a rectangular grid: `values[i * ys.len() + j]` at `(xs[i], ys[j])`, the
/// axes in increasing order (the order of `analysis::linear::grid`).
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    pub xs: Vec<f64>,
    pub ys: Vec<f64>,
    pub values: Vec<f64>,
}

impl Grid {
    /// The grid of points `(x, y, value)` listed x-major (every y of the first x, then of the
    /// next), as stability maps list them; None when they do not form such a grid.
    pub fn from_points(points: &[(f64, f64, f64)]) -> Option<Grid> {
        let first_x = points.first()?.0;
        let ny = points.iter().take_while(|p| p.0 == first_x).count();
        if ny == 0 || !points.len().is_multiple_of(ny) {
            return None;
        }
        let ys: Vec<f64> = points[..ny].iter().map(|p| p.1).collect();
        let xs: Vec<f64> = points.iter().step_by(ny).map(|p| p.0).collect();
        let aligned = points.iter().enumerate().all(|(k, p)| {
            let (i, j) = (k / ny, k % ny);
            p.0 == xs[i] && p.1 == ys[j]
        });
        let increasing = |v: &[f64]| v.windows(2).all(|w| w[0] < w[1]);
        (aligned
            && increasing(&xs)
            && increasing(&ys)
            && xs.iter().chain(&ys).all(|v| v.is_finite()))
        .then(|| Grid {
            xs,
            ys,
            values: points.iter().map(|p| p.2).collect(),
        })
    }

    /// The value at node (i, j).
    pub fn at(&self, i: usize, j: usize) -> f64 {
        self.values[i * self.ys.len() + j]
    }
}

/// A grid edge by its lower node: the one from (i, j) to (i + 1, j) or to (i, j + 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Edge {
    AlongX(usize, usize),
    AlongY(usize, usize),
}

/// The polylines where the sampled function crosses `level` (a value above `level`, or NaN,
/// is outside; at most `level` inside). Each polyline is a list of points; a closed one ends
/// where it starts.
pub fn contour(grid: &Grid, level: f64) -> Vec<Vec<(f64, f64)>> {
    let (nx, ny) = (grid.xs.len(), grid.ys.len());
    if nx < 2 || ny < 2 || grid.values.len() != nx * ny {
        return Vec::new();
    }
    let above = |v: f64| v.is_nan() || v > level;
    let mut segments: Vec<(Edge, Edge)> = Vec::new();
    for i in 0..nx - 1 {
        for j in 0..ny - 1 {
            let corners = [
                grid.at(i, j),
                grid.at(i + 1, j),
                grid.at(i + 1, j + 1),
                grid.at(i, j + 1),
            ];
            let case = corners
                .iter()
                .enumerate()
                .fold(0, |case, (k, &v)| case | (usize::from(above(v)) << k));
            let (bottom, right, top, left) = (
                Edge::AlongX(i, j),
                Edge::AlongY(i + 1, j),
                Edge::AlongX(i, j + 1),
                Edge::AlongY(i, j),
            );
            // Corners: 1 bottom-left, 2 bottom-right, 4 top-right, 8 top-left.
            match case {
                0 | 15 => {}
                1 | 14 => segments.push((bottom, left)),
                2 | 13 => segments.push((bottom, right)),
                4 | 11 => segments.push((right, top)),
                8 | 7 => segments.push((top, left)),
                3 | 12 => segments.push((left, right)),
                6 | 9 => segments.push((bottom, top)),
                5 | 10 => {
                    // A saddle: the corners on one diagonal are outside, on the other inside.
                    // The centre (the mean) says which diagonal is connected through the cell.
                    let centre_above = above(corners.iter().sum::<f64>() / 4.0);
                    let bottom_left_above = case == 5;
                    if centre_above == bottom_left_above {
                        // Bottom-left and top-right connected: cut off the other two corners.
                        segments.push((bottom, right));
                        segments.push((top, left));
                    } else {
                        segments.push((bottom, left));
                        segments.push((right, top));
                    }
                }
                _ => unreachable!("four corners give cases 0 to 15"),
            }
        }
    }
    join(&segments)
        .into_iter()
        .map(|edges| {
            edges
                .into_iter()
                .map(|e| crossing(grid, e, level))
                .collect()
        })
        .collect()
}

/// Where the function crosses `level` on an edge: linear between its two nodes (the middle
/// when one of them is not finite).
fn crossing(grid: &Grid, edge: Edge, level: f64) -> (f64, f64) {
    let (i0, j0, i1, j1) = match edge {
        Edge::AlongX(i, j) => (i, j, i + 1, j),
        Edge::AlongY(i, j) => (i, j, i, j + 1),
    };
    let (v0, v1) = (grid.at(i0, j0), grid.at(i1, j1));
    let t = if v0.is_finite() && v1.is_finite() && v1 != v0 {
        ((level - v0) / (v1 - v0)).clamp(0.0, 1.0)
    } else {
        0.5
    };
    let (x0, y0, x1, y1) = (grid.xs[i0], grid.ys[j0], grid.xs[i1], grid.ys[j1]);
    (x0 + t * (x1 - x0), y0 + t * (y1 - y0))
}

/// Segments chained into polylines through their shared edges (every crossed edge belongs to
/// at most two segments: one per cell beside it).
fn join(segments: &[(Edge, Edge)]) -> Vec<Vec<Edge>> {
    let mut at: HashMap<Edge, Vec<usize>> = HashMap::new();
    for (k, (a, b)) in segments.iter().enumerate() {
        at.entry(*a).or_default().push(k);
        at.entry(*b).or_default().push(k);
    }
    let mut used = vec![false; segments.len()];
    // The unused segment at `edge` other than `from`, marked used.
    let next = |edge: Edge, used: &mut [bool]| -> Option<Edge> {
        let k = *at.get(&edge)?.iter().find(|&&k| !used[k])?;
        used[k] = true;
        let (a, b) = segments[k];
        Some(if a == edge { b } else { a })
    };
    let mut lines = Vec::new();
    for start in 0..segments.len() {
        if used[start] {
            continue;
        }
        used[start] = true;
        let (a, b) = segments[start];
        let mut forward = vec![a, b];
        while let Some(edge) = next(*forward.last().unwrap_or(&b), &mut used) {
            forward.push(edge);
        }
        // An open line may go on behind its first segment.
        let mut backward = Vec::new();
        while let Some(edge) = next(*backward.last().unwrap_or(&a), &mut used) {
            backward.push(edge);
        }
        backward.reverse();
        backward.extend(forward);
        lines.push(backward);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(n: usize, f: impl Fn(f64, f64) -> f64) -> Grid {
        let axis: Vec<f64> = (0..n)
            .map(|k| -1.0 + 2.0 * k as f64 / (n - 1) as f64)
            .collect();
        let mut values = Vec::new();
        for &x in &axis {
            for &y in &axis {
                values.push(f(x, y));
            }
        }
        Grid {
            xs: axis.clone(),
            ys: axis,
            values,
        }
    }

    #[test]
    fn a_circle_is_one_closed_line_on_the_circle() {
        let g = grid(41, |x, y| (x * x + y * y).sqrt() / 0.5);
        let lines = contour(&g, 1.0);
        assert_eq!(lines.len(), 1, "{lines:?}");
        let line = &lines[0];
        assert_eq!(line.first(), line.last(), "closed");
        assert!(line.len() > 20);
        for &(x, y) in line {
            let r = (x * x + y * y).sqrt();
            // Linear interpolation of r on edges of 0.05: within a fraction of the spacing.
            assert!((r - 0.5).abs() < 0.01, "({x}, {y}) at r = {r}");
        }
    }

    #[test]
    fn a_straight_boundary_is_one_open_line_across_the_grid() {
        let g = grid(11, |x, _| 1.0 + x - 0.33);
        let lines = contour(&g, 1.0);
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].len(), 11);
        assert!(lines[0].iter().all(|p| (p.0 - 0.33).abs() < 1e-12));
    }

    #[test]
    fn no_crossing_gives_no_line_and_nan_counts_as_outside() {
        assert!(contour(&grid(5, |_, _| 0.5), 1.0).is_empty());
        assert!(contour(&grid(5, |_, _| 2.0), 1.0).is_empty());
        let g = grid(5, |x, y| if x > 0.6 && y > 0.6 { f64::NAN } else { 0.5 });
        assert_eq!(contour(&g, 1.0).len(), 1);
    }

    #[test]
    fn points_listed_x_major_form_a_grid() {
        let points = [
            (0.0, 0.0, 1.0),
            (0.0, 1.0, 2.0),
            (1.0, 0.0, 3.0),
            (1.0, 1.0, 4.0),
        ];
        let g = Grid::from_points(&points).expect("a grid");
        assert_eq!(
            (g.xs.clone(), g.ys.clone()),
            (vec![0.0, 1.0], vec![0.0, 1.0])
        );
        assert_eq!(g.at(1, 0), 3.0);
        assert!(Grid::from_points(&points[..3]).is_none());
    }
}
