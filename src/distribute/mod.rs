//! ONE system over the ranks of `mpirun -n K` (feature `mpi` for the MPI transport): which
//! runs can be spread, which rank owns which component, and the transports: MPI (`mpi`) and
//! ranks as threads of one process (`threads`, for tests).
//!
//! The run itself is the one-process run with a transport (`master::transport`): every rank
//! walks the same loop, steps only the components it owns and holds stand-ins for the others.
//! This first version spreads Jacobi and Gauss-Seidel (hold or extrapolation, fixed steps);
//! the other algorithms are refused by name before anything is loaded.
//!
//! The partition: the user's `"rank"` per component in a system file, or else contiguous runs
//! of the coupling order (the graph's Gauss-Seidel order) with about equal component counts,
//! chosen where the graph is built (`Execution::instantiate`). Balancing by the components'
//! measured step cost is not done yet.

#[cfg(feature = "mpi")]
pub mod mpi;
pub mod threads;

use crate::settings::{Algorithm, Experiment};
use crate::system::System;
use crate::{Error, Result};

/// Refuse what cannot run over `ranks` ranks, before anything is loaded; the owner of each
/// component when the system file gives one (else empty: along the coupling order).
pub fn partition(system: &System, ranks: usize) -> Result<Vec<usize>> {
    refuse_unsupported(&system.experiment, ranks)?;
    let count = system.components.len();
    if ranks > count {
        return Err(Error::Usage(format!(
            "the system has {count} component{} and can use at most {count} MPI rank{}, not {ranks}: \
             run it with mpirun -n {count} or fewer",
            plural(count),
            plural(count),
        )));
    }
    let given: Vec<Option<usize>> = system.components.iter().map(|c| c.rank).collect();
    if given.iter().all(Option::is_none) {
        return Ok(Vec::new());
    }
    let mut owner = Vec::with_capacity(count);
    for (component, rank) in system.components.iter().zip(&given) {
        match rank {
            None => {
                return Err(Error::Usage(format!(
                    "component \"{}\" has no \"rank\" while others have one: give every component a \"rank\" (0 to {}), or none to split the system along its coupling order",
                    component.name,
                    ranks - 1
                )))
            }
            Some(r) if *r >= ranks => {
                return Err(Error::Usage(format!(
                    "component \"{}\" asks for rank {r}, but the run has {ranks} MPI ranks (0 to {}): run with mpirun -n {} or change its \"rank\"",
                    component.name,
                    ranks - 1,
                    r + 1
                )))
            }
            Some(r) => owner.push(*r),
        }
    }
    if let Some(idle) = (0..ranks).find(|r| !owner.contains(r)) {
        return Err(Error::Usage(format!(
            "no component has \"rank\": {idle}, so MPI rank {idle} would have nothing to do: give it a component or run with fewer ranks"
        )));
    }
    Ok(owner)
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// The settings a run over several ranks cannot honour yet, refused by name with the reason.
fn refuse_unsupported(experiment: &Experiment, ranks: usize) -> Result<()> {
    let refuse = |what: &str, why: &str| {
        Err(Error::Usage(format!(
            "{what} does not run over {ranks} MPI ranks yet: {why}. Run it in one process (without mpirun), or choose jacobi or gauss-seidel"
        )))
    };
    match &experiment.algorithm {
        Algorithm::Implicit(_) => {
            return refuse(
                "the implicit algorithm",
                "its corrector solves the coupling equations of all components at once, and the gathering of that interface system over ranks is not built",
            )
        }
        Algorithm::Constraint(_) => {
            return refuse(
                "constraint coupling",
                "its multipliers are solved from every constrained component's interface at once, which is not gathered over ranks yet",
            )
        }
        Algorithm::Rim(_) => {
            return refuse(
                "the reduced interface model (rim)",
                "its interface model is integrated beside the multibody component and is not split over ranks yet",
            )
        }
        Algorithm::Jacobi(_) | Algorithm::GaussSeidel(_) => {}
    }
    if experiment.algorithm.control().is_some() {
        return refuse(
            "macro-step control (stepControl)",
            "the error estimators' norm and the accept / reject decision are not reduced over ranks yet",
        );
    }
    if experiment.parallel {
        return refuse(
            "--parallel",
            "its trial of the components' step costs would load every component on every rank",
        );
    }
    Ok(())
}
