//! The one-step map of a linear system, measured on the real master, and the studies built on
//! it: spectral radius, largest stable macro step, maps over two parameters, scans over H.
//!
//! For a linear system the co-simulation is a linear map from one macro point to the next on
//! `z = (FMU states, past coupling values the master keeps for extrapolation, multipliers the
//! constraint coupling carries)`. [`LinearAnalyser`] builds it column by column: for every unit
//! vector it resets the FMUs, starts them from the vector's states (through the start values
//! the study names), seeds the master's history with the vector's past coupling values, runs
//! ONE macro step of the system's own algorithm and reads the new vector. Nothing is re-derived
//! by hand, so what is analysed is exactly what runs. The system and its state vector are
//! inputs ([`super::study`]); nothing here knows a particular FMU.

use std::path::Path;

use nalgebra::DMatrix;

use super::study::Study;
use crate::fmu::description::StartValue;
use crate::fmu::values::check_start_value_allowed;
use crate::master::constraint::{
    ConstraintCoupling, ConstraintMethod, ConstraintState, ResolvedConstraints,
};
use crate::master::execution::{Execution, RunOptions};
use crate::settings::Algorithm;
use crate::system::System;
use crate::{Error, Result};

/// A start value the analyser sets: (component index, variable index).
type Slot = (usize, usize);

/// The constraint coupling of a constrained system, and how many multipliers the state vector
/// carries (index-1 with cubic multipliers keeps them continuous: they are state).
struct Constraints {
    coupling: ConstraintCoupling,
    resolved: ResolvedConstraints,
    carried: usize,
}

/// Grid points per decade of the step in the search for the largest stable step: a window of
/// instability narrower than a ratio of 10^(1/100) (2.3 %) between two of them can be missed.
pub const SCAN_PER_DECADE: f64 = 100.0;

/// The implicit corrector's iterations per macro step in the analyser's maps, at least.
pub const ANALYSIS_ITERATIONS: u32 = 10;

/// The one-step map of a system at its macro step, ready to evaluate at many parameters.
pub struct LinearAnalyser {
    exec: Execution,
    study: Study,
    /// Per FMU state: its name (read after the step) and the start value that sets it.
    states: Vec<(String, Slot)>,
    /// Past coupling values in the state vector, in its order: (connection, j), the value j
    /// macro steps before the current point.
    past: Vec<(usize, usize)>,
    constraints: Option<Constraints>,
    h: f64,
}

impl LinearAnalyser {
    /// Instantiate the system once, at its experiment's macro step. Refuses what has no
    /// fixed-step one-step map: macro-step control and the reduced interface model.
    pub fn new(system: &System, study: &Study) -> Result<LinearAnalyser> {
        let algorithm = &system.experiment.algorithm;
        if algorithm.control().is_some() {
            return Err(Error::Usage(
                "the stability analysis studies fixed macro steps; remove the step control (experiment.stepControl) from the system"
                    .into(),
            ));
        }
        if let Algorithm::Rim(_) = algorithm {
            return Err(Error::Usage(
                "the stability analysis does not cover the reduced interface model (its interface model is a state of the master it cannot seed); choose another algorithm"
                    .into(),
            ));
        }
        // The implicit corrector solved to rounding: for a linear system its fixed point is
        // the scheme's one-step map, and one Newton step with a finite-difference Jacobian
        // stops within the run's tolerance of it (1e-6: spectral radii off by up to 1e-5 at
        // stiff points). A step that does not converge is refused, not split into another map.
        let mut system = system.clone();
        if let Some(corrector) = system.experiment.algorithm.corrector_mut() {
            corrector.max_iterations = corrector.max_iterations.max(ANALYSIS_ITERATIONS);
        }
        let system = &system;
        let mut exec = Execution::instantiate(system, &RunOptions::default())?;
        exec.corrector_to_rounding = true;
        exec.split_unconverged_steps = false;
        let mut states = Vec::with_capacity(study.states.len());
        for s in &study.states {
            exec.locate(&s.variable)
                .map_err(|e| Error::Usage(format!("stability.states: {e}")))?;
            let slot = start_slot(&exec, &s.start)
                .map_err(|e| Error::Usage(format!("stability.states: {e}")))?;
            states.push((s.variable.clone(), slot));
        }
        for p in &study.parameters {
            for target in &p.targets {
                start_slot(&exec, target)
                    .map_err(|e| Error::Usage(format!("stability.parameters.{}: {e}", p.name)))?;
            }
        }
        // Each coupled Float64 connection keeps as many past values as its extrapolation order.
        let mut orders: Vec<(usize, usize)> = exec
            .plans
            .iter()
            .flat_map(|p| {
                p.float_groups.iter().flat_map(|(order, _, connections)| {
                    connections.iter().map(move |&c| (c, usize::from(*order)))
                })
            })
            .collect();
        orders.sort_unstable();
        let depth = orders.iter().map(|o| o.1).max().unwrap_or(0);
        let past = (1..=depth)
            .flat_map(|j| {
                orders
                    .iter()
                    .filter(move |o| o.1 >= j)
                    .map(move |&(c, _)| (c, j))
            })
            .collect();
        let constraints = match algorithm {
            Algorithm::Constraint(coupling) => Some(Constraints {
                resolved: exec.resolve_constraints(coupling)?,
                carried: match coupling.method {
                    ConstraintMethod::Index1 { order: 3, .. } => coupling.equations.len(),
                    _ => 0,
                },
                coupling: coupling.clone(),
            }),
            _ => None,
        };
        Ok(LinearAnalyser {
            h: system.experiment.step,
            exec,
            study: study.clone(),
            states,
            past,
            constraints,
        })
    }

    /// Dimension of the state vector.
    pub fn dimension(&self) -> usize {
        self.states.len() + self.past.len() + self.multipliers()
    }

    fn multipliers(&self) -> usize {
        self.constraints.as_ref().map_or(0, |c| c.carried)
    }

    /// What the state vector holds, in words.
    pub fn describe(&self) -> String {
        let names: Vec<&str> = self.states.iter().map(|s| s.0.as_str()).collect();
        let mut text = format!(
            "{} = {} FMU states ({})",
            self.dimension(),
            names.len(),
            names.join(", ")
        );
        if !self.past.is_empty() {
            let mut connections: Vec<usize> = self.past.iter().map(|p| p.0).collect();
            connections.sort_unstable();
            connections.dedup();
            let depth = self.past.iter().map(|p| p.1).max().unwrap_or(0);
            text.push_str(&format!(
                " + {} past coupling values ({} connections, up to {depth} macro steps back)",
                self.past.len(),
                connections.len()
            ));
        }
        if self.multipliers() > 0 {
            text.push_str(&format!(" + {} multipliers", self.multipliers()));
        }
        text
    }

    /// The study the analyser was built for.
    pub fn study(&self) -> &Study {
        &self.study
    }

    /// The macro step H of the map.
    pub fn step(&self) -> f64 {
        self.h
    }

    /// Analyse at macro step `h` (the FMUs stay instantiated).
    pub fn set_step(&mut self, h: f64) {
        self.h = h;
        let experiment = &mut self.exec.resolved.system.experiment;
        experiment.step = h;
        // One macro step must lie inside the experiment the FMUs are told about.
        experiment.stop = experiment.stop.max(experiment.start + 2.0 * h);
    }

    /// Set a parameter for the next maps: a named parameter of the study or an FMU's own,
    /// `component.variable`.
    pub fn set_parameter(&mut self, name: &str, value: f64) -> Result<()> {
        let targets: Vec<Slot> = match self.study.parameter(name) {
            Some(p) => p
                .targets
                .iter()
                .map(|t| start_slot(&self.exec, t))
                .collect::<Result<_>>()?,
            None if name.contains('.') => vec![start_slot(&self.exec, name)?],
            None => {
                let known: Vec<&str> = self
                    .study
                    .parameters
                    .iter()
                    .map(|p| p.name.as_str())
                    .collect();
                return Err(Error::Usage(format!(
                    "{name}: neither component.parameter nor a named parameter of the study (stability.parameters: {})",
                    if known.is_empty() { "none".to_string() } else { known.join(", ") }
                )));
            }
        };
        for slot in targets {
            self.set_start(slot, value);
        }
        Ok(())
    }

    fn set_start(&mut self, (component, variable): Slot, value: f64) {
        let list = &mut self.exec.resolved.components[component].start_values;
        let value = StartValue::Float(vec![value]);
        match list.iter_mut().find(|(v, _)| *v == variable) {
            Some(entry) => entry.1 = value,
            None => list.push((variable, value)),
        }
    }

    /// One macro step of the system's algorithm from the state vector `z`: the state vector
    /// at the next macro point.
    pub fn advance(&mut self, z: &[f64]) -> Result<Vec<f64>> {
        let n = self.dimension();
        if z.len() != n {
            return Err(Error::Usage(format!(
                "a state vector of {} values for a map of dimension {n}",
                z.len()
            )));
        }
        let (ns, np) = (self.states.len(), self.past.len());
        self.exec.reset()?;
        // A Jacobian kept for reuse belongs to another column (or step size, or parameters).
        self.exec.implicit_state = Default::default();
        for (k, &value) in z[..ns].iter().enumerate() {
            self.set_start(self.states[k].1, value);
        }
        self.exec.initialize()?;
        // Past coupling values u_(N-depth) .. u_(N-1), oldest first.
        let depth = self.past.iter().map(|p| p.1).max().unwrap_or(0);
        let start = self.exec.resolved.system.experiment.start;
        let connections = self.exec.values.len();
        let mut past: Vec<(f64, Vec<f64>)> = (1..=depth)
            .rev()
            .map(|j| (start - j as f64 * self.h, vec![0.0; connections]))
            .collect();
        for (p, &(c, j)) in self.past.iter().enumerate() {
            past[depth - j].1[c] = z[ns + p];
        }
        self.exec.seed_history(&past)?;
        let multipliers = match &self.constraints {
            Some(c) => {
                let lambda = (0..c.coupling.equations.len())
                    .map(|e| if e < c.carried { z[ns + np + e] } else { 0.0 })
                    .collect();
                let mut state = ConstraintState::at(lambda);
                self.exec
                    .constraint_step(&c.coupling, &c.resolved, &mut state, self.h)?;
                Execution::multipliers(&state)[..c.carried].to_vec()
            }
            None => {
                self.exec.step(self.h)?;
                Vec::new()
            }
        };
        let mut next = Vec::with_capacity(n);
        for k in 0..ns {
            next.push(self.exec.float_value(&self.states[k].0)?);
        }
        // After the step the history holds u_(N+1), u_N, ...: the new past is u_N, ...
        for &(c, j) in &self.past {
            next.push(self.exec.history.values(c)[j]);
        }
        next.extend(multipliers);
        Ok(next)
    }

    /// The map z_N -> z_(N+1) of one macro step at the current parameters.
    pub fn map(&mut self) -> Result<DMatrix<f64>> {
        let n = self.dimension();
        let mut map = DMatrix::zeros(n, n);
        let mut z = vec![0.0; n];
        for column in 0..n {
            z.fill(0.0);
            z[column] = 1.0;
            let next = self.advance(&z)?;
            map.column_mut(column).copy_from_slice(&next);
        }
        Ok(map)
    }

    /// Spectral radius of the one-step map at the current parameters.
    pub fn spectral_radius(&mut self) -> Result<f64> {
        spectral_radius(self.map()?)
    }

    /// Whether the map is stable (spectral radius at most 1, to rounding) at macro step `h`.
    fn stable_at(&mut self, h: f64) -> Result<bool> {
        self.set_step(h);
        Ok(self.spectral_radius()? <= 1.0 + 1e-12)
    }

    /// The largest stable macro step above `low` (stable): the first loss of stability on a
    /// geometric grid of [`SCAN_PER_DECADE`] points per decade from `low` to `high`, then
    /// bisection between the last stable and the first unstable grid point to a relative width
    /// `tolerance`; `high` when every grid point is stable. Stability need not be monotone in
    /// the step (a scheme may be unstable in a window and stable again above it): what is
    /// returned is the edge of the interval of stable steps that starts at `low`. The
    /// analyser's step is left as it was.
    pub fn max_stable_step(&mut self, low: f64, high: f64, tolerance: f64) -> Result<f64> {
        if !(low > 0.0 && low < high && high.is_finite()) {
            return Err(Error::Usage(format!(
                "the step bounds must satisfy 0 < low < high, not low = {low}, high = {high}"
            )));
        }
        let h = self.h;
        let found = self.first_crossing(low, high, tolerance);
        self.set_step(h);
        found
    }

    fn first_crossing(&mut self, low: f64, high: f64, tolerance: f64) -> Result<f64> {
        if !self.stable_at(low)? {
            return Err(Error::Usage(format!(
                "the scheme is unstable already at the lower bound H = {low}; lower it"
            )));
        }
        let points = (SCAN_PER_DECADE * (high / low).log10()).ceil().max(1.0) as usize;
        let mut stable = low;
        for k in 1..=points {
            let h = if k == points {
                high
            } else {
                low * (high / low).powf(k as f64 / points as f64)
            };
            if !self.stable_at(h)? {
                return self.bisect(stable, h, tolerance);
            }
            stable = h;
        }
        Ok(high)
    }

    /// Bisection between `low` (stable) and `high` (unstable) to a relative width `tolerance`.
    fn bisect(&mut self, mut low: f64, mut high: f64, tolerance: f64) -> Result<f64> {
        while (high - low) > tolerance * high {
            let mid = 0.5 * (low + high);
            if self.stable_at(mid)? {
                low = mid;
            } else {
                high = mid;
            }
        }
        Ok(low)
    }

    /// The spectral radius at `points` macro steps spaced geometrically over [low, high]: (H,
    /// spectral radius). The analyser's step is left as it was.
    pub fn step_scan(&mut self, low: f64, high: f64, points: usize) -> Result<Vec<(f64, f64)>> {
        if !(low > 0.0 && low <= high && high.is_finite()) {
            return Err(Error::Usage(format!(
                "the step bounds must satisfy 0 < low <= high, not low = {low}, high = {high}"
            )));
        }
        check_points(points).map_err(Error::Usage)?;
        let h = self.h;
        let n = points.max(2);
        let scan = (0..n)
            .map(|i| {
                let step = low * (high / low).powf(i as f64 / (n - 1) as f64);
                self.set_step(step);
                Ok((step, self.spectral_radius()?))
            })
            .collect();
        self.set_step(h);
        scan
    }

    /// The spectral radius over a grid of two parameters (`points` per axis), at the
    /// analyser's macro step; the parameters are set back to their values before the map.
    pub fn parameter_map(&mut self, x: &Axis, y: &Axis, points: usize) -> Result<Vec<MapPoint>> {
        let saved: Vec<_> = self
            .exec
            .resolved
            .components
            .iter()
            .map(|c| c.start_values.clone())
            .collect();
        let map = grid((x.low, x.high), (y.low, y.high), points, |a, b| {
            self.set_parameter(&x.parameter, a)?;
            self.set_parameter(&y.parameter, b)?;
            self.spectral_radius()
        });
        for (component, values) in self.exec.resolved.components.iter_mut().zip(saved) {
            component.start_values = values;
        }
        map
    }
}

/// The start value `component.variable` names: a scalar Float64 that accepts a start value.
fn start_slot(exec: &Execution, name: &str) -> Result<Slot> {
    // The master's lookup of a Float64 `component.variable`, with its messages.
    let (i, _) = exec.locate(name)?;
    let component = &exec.resolved.components[i];
    let description = &component.description;
    // A component name has no '.', so the variable's name follows the first one.
    let v = description
        .variable_index(&name[component.name.len() + 1..])
        .ok_or_else(|| Error::Usage(format!("{name}: no such variable")))?;
    let variable = &description.variables[v];
    if variable.is_array() {
        return Err(Error::Usage(format!(
            "{name}: the analyser sets scalar Float64 start values only"
        )));
    }
    check_start_value_allowed(description, variable)
        .map_err(|e| Error::Usage(format!("{name}: {e}")))?;
    Ok((i, v))
}

/// One axis of a parameter map: a parameter and its range.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// `component.parameter`, or a named parameter of the study.
    pub parameter: String,
    pub low: f64,
    pub high: f64,
}

impl Axis {
    /// Read `PARAMETER=LOW:HIGH`, e.g. `mass1.c=100:2000`.
    pub fn parse(text: &str) -> std::result::Result<Axis, String> {
        let bad = || format!("\"{text}\": expected PARAMETER=LOW:HIGH, e.g. mass1.c=100:2000");
        let (parameter, range) = text.split_once('=').ok_or_else(bad)?;
        let (low, high) = range.split_once(':').ok_or_else(bad)?;
        let number = |s: &str| s.trim().parse::<f64>().ok().filter(|x| x.is_finite());
        match (number(low), number(high)) {
            (Some(low), Some(high)) if !parameter.trim().is_empty() && low < high => Ok(Axis {
                parameter: parameter.trim().to_string(),
                low,
                high,
            }),
            (Some(_), Some(_)) if !parameter.trim().is_empty() => Err(format!(
                "\"{text}\": the range must go from a lower to a higher value"
            )),
            _ => Err(bad()),
        }
    }
}

/// One point of a stability map.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MapPoint {
    pub x: f64,
    pub y: f64,
    pub spectral_radius: f64,
}

impl MapPoint {
    /// Stable: spectral radius at most 1 (to rounding).
    pub fn stable(&self) -> bool {
        is_stable(self.spectral_radius)
    }
}

/// The largest spectral radius counted as stable: 1, to the rounding of a measured map.
pub const STABILITY_LIMIT: f64 = 1.0 + 1e-9;

/// Whether a spectral radius means stable: at most 1, to the rounding of a measured map.
pub fn is_stable(spectral_radius: f64) -> bool {
    spectral_radius <= STABILITY_LIMIT
}

/// Most points per axis of a map (and step sizes of a scan): a 1000 x 1000 map is already a
/// million one-step maps, hours of work.
pub const MAX_POINTS: usize = 1000;

/// Why `points` per axis are too many, if they are.
pub fn check_points(points: usize) -> std::result::Result<(), String> {
    if points < 2 {
        return Err(format!(
            "at least 2 points per axis, not {points} (a map or a scan needs both ends of its range)"
        ));
    }
    if points > MAX_POINTS {
        return Err(format!(
            "at most {MAX_POINTS} points per axis, not {points} (a map of {MAX_POINTS} x {MAX_POINTS} points is already a million one-step maps); choose fewer points"
        ));
    }
    Ok(())
}

/// `rho(x, y)` over a grid with `points` (at least 2, at most [`MAX_POINTS`]) per axis, x in
/// `x` and y in `y`, x-major.
pub fn grid(
    x: (f64, f64),
    y: (f64, f64),
    points: usize,
    mut rho: impl FnMut(f64, f64) -> Result<f64>,
) -> Result<Vec<MapPoint>> {
    check_points(points).map_err(Error::Usage)?;
    let n = points.max(2);
    let mut map = Vec::with_capacity(n * n);
    for i in 0..n {
        for j in 0..n {
            let a = x.0 + (x.1 - x.0) * i as f64 / (n - 1) as f64;
            let b = y.0 + (y.1 - y.0) * j as f64 / (n - 1) as f64;
            map.push(MapPoint {
                x: a,
                y: b,
                spectral_radius: rho(a, b)?,
            });
        }
    }
    Ok(map)
}

/// Write a map as CSV: a header with the two axes' names and `spectral_radius`, a row per
/// point.
pub fn write_map_csv(path: &Path, axes: (&str, &str), map: &[MapPoint]) -> Result<()> {
    let mut text = format!("\"{}\",\"{}\",\"spectral_radius\"\n", axes.0, axes.1);
    for p in map {
        text.push_str(&format!("{},{},{}\n", p.x, p.y, p.spectral_radius));
    }
    std::fs::write(path, text).map_err(|e| Error::io(path, e))
}

/// Spectral radius of a one-step map: the largest eigenvalue modulus (Schur decomposition with
/// a bounded number of iterations). A map that is not finite is unstable; one whose
/// decomposition does not converge is reported as an error rather than looping.
pub fn spectral_radius(mut map: DMatrix<f64>) -> Result<f64> {
    if map.iter().any(|x| !x.is_finite()) {
        return Ok(f64::INFINITY);
    }
    // rho <= ||A||_inf: a map that has decayed to (nearly) nothing is stable, and the Schur
    // iteration does not converge on a zero matrix.
    let norm = map
        .row_iter()
        .map(|row| row.iter().map(|x| x.abs()).sum::<f64>())
        .fold(0.0, f64::max);
    if norm < 1e-200 {
        return Ok(norm);
    }
    let schur = match balanced_schur(map.clone()) {
        Some(schur) => schur,
        // Entries hundreds of orders of magnitude below the largest (a heavily damped map's)
        // can keep the QR iteration from deflating. Below rounding of the norm they are noise
        // of the measured map, so they go and the decomposition is tried again.
        None => {
            map.iter_mut()
                .filter(|x| x.abs() < f64::EPSILON * norm)
                .for_each(|x| *x = 0.0);
            balanced_schur(map).ok_or_else(|| {
                Error::Numerics(
                    "the eigenvalues of the one-step map did not converge (Schur decomposition)"
                        .into(),
                )
            })?
        }
    };
    Ok(schur
        .complex_eigenvalues()
        .iter()
        .map(|e| e.norm())
        .fold(0.0, f64::max))
}

/// The Schur decomposition after balancing (a similarity by powers of two, exact, that evens out
/// rows and columns of very different sizes, as LAPACK's eigenvalue drivers do); `None` when
/// the QR iteration does not converge.
fn balanced_schur(mut map: DMatrix<f64>) -> Option<nalgebra::linalg::Schur<f64, nalgebra::Dyn>> {
    nalgebra::linalg::balancing::balance_parlett_reinsch(&mut map);
    nalgebra::linalg::Schur::try_new(map, f64::EPSILON, 100_000)
}

/// Write a scan over macro steps as CSV: `step`, `spectral_radius`, a row per step.
pub fn write_scan_csv(path: &Path, scan: &[(f64, f64)]) -> Result<()> {
    let mut text = String::from("\"step\",\"spectral_radius\"\n");
    for (h, rho) in scan {
        text.push_str(&format!("{h},{rho}\n"));
    }
    std::fs::write(path, text).map_err(|e| Error::io(path, e))
}
