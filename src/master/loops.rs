//! Algebraic loops at communication points: connections whose values depend on each other
//! through direct feedthrough, solved for `u = phi(u)` where `phi(u)` sets the loop's inputs to
//! `u` and reads the loop's sources back.
//!
//! Newton uses the interface Jacobian `I - dphi/du`, from the FMUs' directional derivatives
//! when every component in the loop provides them, from finite differences otherwise; plain
//! fixed-point iteration is an option. A loop that does not converge fails with a message that
//! names its variables.
//!
//! Under `mpirun` (`transport.rs`), a loop whose components one rank owns is solved by that
//! rank alone, as one process solves it, and its coupling values and status reach the other
//! ranks in one broadcast. A loop whose components span ranks is solved by every rank: each
//! evaluation of phi is made by the owners of the loop's components (each sets its inputs and
//! reads its sources, in one process' order) and shared in one all-gather, and so are the
//! entries of the Jacobian (directional derivatives, or every finite-difference evaluation at
//! once: an owner's sources depend only on its own inputs), so that every rank takes the same
//! Newton steps and decisions from the same bits. Two collectives per Newton iteration.

use nalgebra::{DMatrix, DVector};

use super::divergence;
use super::execution::Execution;
use super::transport::failure_of;
use crate::fmu::description::VariableType;
use crate::settings::LoopSolver;
use crate::system::graph::{describe_block, Block};
use crate::{Error, Result};

/// Where a loop's phi and Jacobian are evaluated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Over {
    /// On this process: every component of the loop steps here (one process, or a loop that
    /// one rank owns whole).
    Here,
    /// On the owners of the loop's components, shared with every rank.
    Ranks,
}

/// Solve one loop block at the current time; afterwards its inputs hold the solution (on
/// every rank, under `mpirun`).
pub fn solve(exec: &mut Execution, block: usize) -> Result<()> {
    match exec.ranks.is_some() {
        false => solve_on(exec, block, Over::Here),
        true => solve_over_ranks(exec, block),
    }
}

/// [`solve`] under `mpirun`: by the loop's one owner, whose values and status then reach
/// every rank in one broadcast, or by every rank together (see the module documentation).
fn solve_over_ranks(exec: &mut Execution, b: usize) -> Result<()> {
    let Some(ranks) = exec.ranks.clone() else {
        return solve_on(exec, b, Over::Here);
    };
    let connections = exec.graph.blocks[b].connections.clone();
    let owners: Vec<usize> = members(exec, &connections)
        .iter()
        .map(|&i| ranks.owner[i])
        .collect();
    let Some(&owner) = owners.first() else {
        return Ok(());
    };
    if owners.iter().any(|&r| r != owner) {
        return solve_on(exec, b, Over::Ranks);
    }
    let me = ranks.rank();
    let mut message = vec![0u8; 1 + 8 * connections.len()];
    let mut solved = Ok(());
    if owner == me {
        solved = solve_on(exec, b, Over::Here);
        message[0] = u8::from(solved.is_err());
        for (bytes, &c) in message[1..].chunks_exact_mut(8).zip(&connections) {
            bytes.copy_from_slice(&exec.values[c].to_le_bytes());
        }
    }
    ranks.transport.broadcast_known(owner, &mut message);
    if message[0] != 0 {
        return Err(failure_of(ranks.transport.as_ref(), owner, solved));
    }
    if owner != me {
        for (bytes, &c) in message[1..].chunks_exact(8).zip(&connections) {
            exec.values[c] = f64::from_le_bytes(bytes.try_into().unwrap_or_default());
        }
    }
    Ok(())
}

/// The components of a loop through `connections`, each once, in index order.
fn members(exec: &Execution, connections: &[usize]) -> Vec<usize> {
    let mut members: Vec<usize> = connections
        .iter()
        .flat_map(|&c| {
            let conn = &exec.resolved.connections[c];
            [conn.from_component, conn.to_component]
        })
        .collect();
    members.sort_unstable();
    members.dedup();
    members
}

/// Solve loop block `block`, its phi and Jacobian evaluated `over` this process or the ranks.
fn solve_on(exec: &mut Execution, block: usize, over: Over) -> Result<()> {
    // A loop solve allocates its Newton matrices anyway; a copy of the block is noise.
    let block = &exec.graph.blocks[block].clone();
    let settings = exec.resolved.system.experiment.loops;
    let connections = &block.connections;
    let m = connections.len();
    let mut u = DVector::from_iterator(m, connections.iter().map(|&c| exec.values[c]));
    let use_directional = settings.solver == LoopSolver::Newton
        && provides_directional_derivatives(exec, connections);
    let mut phi = evaluate(exec, connections, &u, over)?;
    let mut worst = (0usize, f64::INFINITY);
    // Iterations in a row in which the largest scaled residual grew (by LOOP_GROWTH_FACTOR).
    let mut growing = 0;
    for iteration in 0..settings.max_iterations.max(1) {
        let residual = &u - &phi;
        if u.iter().chain(phi.iter()).any(|x| !x.is_finite()) {
            return Err(failure(
                exec,
                block,
                "it did not converge: the iteration diverged (a loop value is no longer finite); check the loop is solvable, or use Newton",
                &residual,
            ));
        }
        let previous = worst.1;
        worst = residual
            .iter()
            .enumerate()
            .map(|(j, r)| {
                (
                    j,
                    r.abs() / (settings.abs_tolerance + settings.rel_tolerance * u[j].abs()),
                )
            })
            .fold(
                (0, 0.0),
                |best, next| if next.1 > best.1 { next } else { best },
            );
        if worst.1 <= 1.0 {
            for (j, &c) in connections.iter().enumerate() {
                exec.values[c] = u[j];
            }
            return Ok(());
        }
        growing = if worst.1 >= divergence::LOOP_GROWTH_FACTOR * previous {
            growing + 1
        } else {
            0
        };
        if growing >= divergence::LOOP_GROWTH_ITERATIONS {
            let (_, worst_target) = exec.connection_names(connections[worst.0]);
            return Err(divergence::diverged(format_args!(
                "algebraic loop {} at t = {}: it did not converge: its largest residual (at {worst_target}) grew {growing} iterations in a row, to {:.3e} ({:.3e} times its tolerance), after {} of at most {} {} iterations; check the loop is solvable, or use Newton; {TRY}",
                describe_block(&exec.resolved, block),
                crate::numbers::number(exec.time),
                residual[worst.0].abs(),
                worst.1,
                iteration + 1,
                settings.max_iterations,
                method_name(settings.solver, use_directional),
            )));
        }
        if settings.solver == LoopSolver::FixedPoint {
            u.copy_from(&phi);
        } else {
            let dphi = if use_directional {
                directional_jacobian(exec, connections, over)?
            } else {
                finite_difference_jacobian(exec, connections, &u, &phi, over)?
            };
            let identity = DMatrix::identity(m, m);
            let terms = identity.abs() + dphi.abs();
            let jacobian = identity - dphi;
            // Finite differences blur an exactly singular Jacobian into a barely regular one
            // whose Newton step flies off (to u = 1e10, where the relative tolerance swallows
            // a residual that stays 1); judge singularity on the Jacobian with its rows and
            // columns scaled by the size of the terms that formed it (coupling variables of
            // different units, N and m, must not look singular; 1 - 0.999999999 must), with a
            // margin that covers the differencing error.
            let lu = jacobian.clone().lu();
            let margin = if use_directional { 1e-12 } else { 1e-6 };
            let singular = equilibrated_min_pivot(&jacobian, &terms) <= margin;
            let step = (!singular).then(|| lu.solve(&(-&residual))).flatten().ok_or_else(|| {
                failure(
                    exec,
                    block,
                    "its Jacobian I - d(outputs)/d(inputs) is singular and the residual stays: the loop has no unique solution, perhaps none",
                    &residual,
                )
            })?;
            u += step;
        }
        phi = evaluate(exec, connections, &u, over)?;
    }
    let method = method_name(settings.solver, use_directional);
    Err(failure(
        exec,
        block,
        &format!(
            "it did not converge in {} {method} iterations; check the loop is solvable, or raise algebraicLoops.maxIterations",
            settings.max_iterations
        ),
        &(&u - &phi),
    ))
}

/// What a user can try when a loop has no solution the solver finds.
const TRY: &str = "try a different initial guess (start values of the loop's inputs nearer a solution), break the loop with a delay (a component without direct feedthrough on one of its connections), or --algorithm implicit";

/// The loop solver's name for messages.
fn method_name(solver: LoopSolver, use_directional: bool) -> &'static str {
    match solver {
        LoopSolver::FixedPoint => "fixed-point",
        _ if use_directional => "Newton (directional derivatives)",
        _ => "Newton (finite differences)",
    }
}

/// The error of a loop that was not solved: its connections, the time, why, its largest
/// residual (input minus the value its source gives back) and what to try.
fn failure(exec: &Execution, block: &Block, why: &str, residual: &DVector<f64>) -> Error {
    let worst = residual
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))
        .map(|(j, r)| {
            let (_, target) = exec.connection_names(block.connections[j]);
            format!("; largest residual {:.3e} at {target}", r.abs())
        })
        .unwrap_or_default();
    Error::Numerics(format!(
        "algebraic loop {} at t = {}: {why}{worst}; {TRY}",
        describe_block(&exec.resolved, block),
        crate::numbers::number(exec.time)
    ))
}

/// phi(u): set every loop input to u, then read every loop source (over the ranks: each
/// owner its own, shared).
fn evaluate(
    exec: &mut Execution,
    connections: &[usize],
    u: &DVector<f64>,
    over: Over,
) -> Result<DVector<f64>> {
    let mut phi = DVector::zeros(connections.len());
    let evaluated = evaluate_here(exec, connections, u, &mut phi, over);
    if over == Over::Here {
        return evaluated.map(|()| phi);
    }
    let sources = sources(exec, connections);
    exec.share_by_owner(&sources, phi.as_mut_slice(), evaluated)?;
    Ok(phi)
}

/// phi(u) on this process: its loop inputs set to u, its loop sources read into `phi` (the
/// entries of components that step elsewhere left as they are, over the ranks). Every slave
/// sees the calls one process makes to it, in the same order.
fn evaluate_here(
    exec: &mut Execution,
    connections: &[usize],
    u: &DVector<f64>,
    phi: &mut DVector<f64>,
    over: Over,
) -> Result<()> {
    let here = |exec: &Execution, i: usize| over == Over::Here || exec.steps_here(i);
    for (j, &c) in connections.iter().enumerate() {
        if here(exec, exec.resolved.connections[c].to_component) {
            exec.set_target(c, u[j])?;
        }
    }
    for (j, &c) in connections.iter().enumerate() {
        if here(exec, exec.resolved.connections[c].from_component) {
            phi[j] = exec.read_source_here(c)?;
        }
    }
    Ok(())
}

/// The component whose output is the source of each connection.
fn sources(exec: &Execution, connections: &[usize]) -> Vec<usize> {
    connections
        .iter()
        .map(|&c| exec.resolved.connections[c].from_component)
        .collect()
}

/// Whether every component of the loop provides directional derivatives for every loop
/// variable: FMUs give them for Float64 variables only (an Int32 or Float32 loop is
/// differenced instead of failing in `GetDirectionalDerivative`).
fn provides_directional_derivatives(exec: &Execution, connections: &[usize]) -> bool {
    connections.iter().all(|&c| {
        let conn = &exec.resolved.connections[c];
        [
            (conn.from_component, conn.from_variable),
            (conn.to_component, conn.to_variable),
        ]
        .iter()
        .all(|&(i, v)| {
            let description = &exec.resolved.components[i].description;
            description
                .co_simulation
                .as_ref()
                .is_some_and(|cs| cs.provides_directional_derivatives)
                && description
                    .variables
                    .get(v)
                    .is_some_and(|v| v.var_type == VariableType::Float64)
        })
    })
}

/// dphi_j / du_l = scale_j * d(source of j) / d(target of l), non-zero only when both ends sit
/// on the same component; one directional derivative per loop input (over the ranks: by the
/// input's owner, the entries shared).
fn directional_jacobian(
    exec: &mut Execution,
    connections: &[usize],
    over: Over,
) -> Result<DMatrix<f64>> {
    let m = connections.len();
    let mut dphi = DMatrix::zeros(m, m);
    // Over the ranks: each entry's place and component, and its value where computed here.
    let mut places = Vec::new();
    let mut owners = Vec::new();
    let mut entries = Vec::new();
    let mut derived = Ok(());
    for (l, &cl) in connections.iter().enumerate() {
        let target = &exec.resolved.connections[cl];
        let component = target.to_component;
        let md = &exec.resolved.components[component].description;
        let known = md.variables[target.to_variable].value_reference;
        let rows: Vec<(usize, u32, f64)> = connections
            .iter()
            .enumerate()
            .filter_map(|(j, &cj)| {
                let source = &exec.resolved.connections[cj];
                (source.from_component == component).then(|| {
                    (
                        j,
                        md.variables[source.from_variable].value_reference,
                        source.scale,
                    )
                })
            })
            .collect();
        if rows.is_empty() {
            continue;
        }
        let here = over == Over::Here || exec.steps_here(component);
        let mut sensitivity = vec![0.0; rows.len()];
        if here && derived.is_ok() {
            let unknowns: Vec<u32> = rows.iter().map(|r| r.1).collect();
            let asked = exec.placement.run_one(component, |unit| {
                let mut out = vec![0.0; unknowns.len()];
                unit.slave
                    .directional_derivative(&unknowns, &[known], &[1.0], &mut out)?;
                Ok(out)
            });
            match asked {
                Ok(out) => sensitivity = out,
                Err(error) if over == Over::Here => return Err(error),
                Err(error) => derived = Err(error),
            }
        }
        for ((j, _, scale), ds) in rows.iter().zip(sensitivity) {
            places.push((*j, l));
            owners.push(component);
            entries.push(scale * ds);
        }
    }
    if over == Over::Ranks {
        exec.share_by_owner(&owners, &mut entries, derived)?;
    }
    for (place, entry) in places.into_iter().zip(entries) {
        dphi[place] = entry;
    }
    Ok(dphi)
}

/// Forward differences: one extra evaluation of phi per loop input (over the ranks: every
/// evaluation by the owners first, then one all-gather of them all).
fn finite_difference_jacobian(
    exec: &mut Execution,
    connections: &[usize],
    u: &DVector<f64>,
    phi: &DVector<f64>,
    over: Over,
) -> Result<DMatrix<f64>> {
    let m = connections.len();
    let mut dphi = DMatrix::zeros(m, m);
    let mut perturbed = u.clone();
    let deltas: Vec<f64> = u.iter().map(|x| 1e-7 * (1.0 + x.abs())).collect();
    if over == Over::Here {
        for l in 0..m {
            perturbed[l] = u[l] + deltas[l];
            let phi_l = evaluate(exec, connections, &perturbed, over)?;
            perturbed[l] = u[l];
            dphi.set_column(l, &((phi_l - phi) / deltas[l]));
        }
        // Leave the inputs at u, as the caller expects.
        evaluate(exec, connections, u, over)?;
        return Ok(dphi);
    }
    // Column l of `columns` is phi at u + delta_l e_l.
    let mut columns = DMatrix::zeros(m, m);
    let mut scratch = DVector::zeros(m);
    let mut evaluated = (0..m).try_for_each(|l| {
        perturbed[l] = u[l] + deltas[l];
        evaluate_here(exec, connections, &perturbed, &mut scratch, over)?;
        perturbed[l] = u[l];
        columns.set_column(l, &scratch);
        Ok(())
    });
    if evaluated.is_ok() {
        evaluated = evaluate_here(exec, connections, u, &mut scratch, over);
    }
    let sources = sources(exec, connections);
    let owners: Vec<usize> = (0..m).flat_map(|_| sources.iter().copied()).collect();
    exec.share_by_owner(&owners, columns.as_mut_slice(), evaluated)?;
    for (l, delta) in deltas.iter().enumerate() {
        dphi.set_column(l, &((columns.column(l) - phi) / *delta));
    }
    Ok(dphi)
}

/// The smallest pivot of the LU factorisation of `matrix` with every row, then every column
/// scaled by the largest entry of `terms` there (the magnitudes of what was added to form each
/// entry, so that cancellation shows): a measure of singularity that does not depend on the
/// units of the coupling variables. A zero row or column gives 0.
fn equilibrated_min_pivot(matrix: &DMatrix<f64>, terms: &DMatrix<f64>) -> f64 {
    let mut scaled = matrix.clone();
    let mut sizes = terms.abs();
    for (mut row, mut size) in scaled.row_iter_mut().zip(sizes.row_iter_mut()) {
        let largest = size.amax();
        if largest > 0.0 {
            row /= largest;
            size /= largest;
        }
    }
    for (mut column, size) in scaled.column_iter_mut().zip(sizes.column_iter()) {
        let largest = size.amax();
        if largest > 0.0 {
            column /= largest;
        }
    }
    scaled.lu().u().diagonal().amin()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn singularity_does_not_depend_on_the_units_of_the_coupling_variables() {
        // [[I, 0], [-S, I]] with spring entries of 1000 (N per m): determinant 1.
        let coupled = DMatrix::from_row_slice(
            4,
            4,
            &[
                1.0, 0.0, 0.0, 0.0, //
                0.0, 1.0, 0.0, 0.0, //
                -1000.0, -10.0, 1.0, 0.0, //
                1000.0, 10.0, 0.0, 1.0,
            ],
        );
        // Unscaled, partial pivoting leaves a pivot of 1e-3 next to entries of 1000; scaled,
        // the matrix is as regular as the identity.
        let unscaled: f64 = coupled.clone().lu().u().diagonal().amin();
        assert!((unscaled - 1e-3).abs() < 1e-12, "{unscaled}");
        assert!((pivot(&coupled) - 1.0).abs() < 1e-12);
        // Scaling a variable (m -> mm) does not change the verdict.
        let terms =
            |j: &DMatrix<f64>| DMatrix::identity(4, 4).abs() + (DMatrix::identity(4, 4) - j).abs();
        let (mut mm, mut mm_terms) = (coupled.clone(), terms(&coupled));
        mm.column_mut(0).scale_mut(1e-3);
        mm_terms.column_mut(0).scale_mut(1e-3);
        assert!((equilibrated_min_pivot(&mm, &mm_terms) - pivot(&coupled)).abs() < 1e-12);
        // A singular Jacobian (two equal rows) stays singular, whatever the scale.
        let singular = DMatrix::from_row_slice(2, 2, &[1000.0, -1000.0, 1000.0, -1000.0]);
        assert!(pivot(&singular) <= 1e-12);
        let zero_row = DMatrix::from_row_slice(2, 2, &[1.0, 0.0, 0.0, 0.0]);
        assert_eq!(pivot(&zero_row), 0.0);
    }

    /// The pivot of `I - dphi` for the Jacobian `jacobian`.
    fn pivot(jacobian: &DMatrix<f64>) -> f64 {
        let identity = DMatrix::identity(jacobian.nrows(), jacobian.ncols());
        let dphi = &identity - jacobian;
        equilibrated_min_pivot(jacobian, &(identity.abs() + dphi.abs()))
    }

    #[test]
    fn a_jacobian_that_is_zero_up_to_differencing_error_is_singular() {
        // y = u (+ 1): the finite-difference loop gain is 1 up to rounding, and I - dphi a
        // tiny number that scaled by itself would look as regular as 1.
        let dphi = DMatrix::from_element(1, 1, 1.0 - 1.2e-9);
        let jacobian = DMatrix::identity(1, 1) - &dphi;
        assert!(pivot(&jacobian) < 1e-6, "{}", pivot(&jacobian));
        // A loop gain of 0.5 is as regular as can be.
        let half = DMatrix::from_element(1, 1, 0.5);
        assert!((pivot(&half) - 1.0 / 3.0).abs() < 1e-12, "{}", pivot(&half));
    }
}
