//! The reduced interface model (Peiret et al. 2018): the multibody component, its interfaces
//! and how the master integrates the reduced model.

/// One interface direction of the multibody FMU: `component.variable` names.
#[derive(Debug, Clone, PartialEq)]
pub struct RimInterface {
    /// Interface position output (e.g. the actuator length).
    pub position: String,
    /// Interface velocity output.
    pub velocity: String,
    /// Interface acceleration output, with direct feedthrough from the forces.
    pub acceleration: String,
    /// Interface force input.
    pub force: String,
}

/// Where the effective mass and force come from.
#[derive(Debug, Clone, PartialEq)]
pub enum EffectiveMass {
    /// `W = d a_i / d lambda_i` from the FMU's directional derivatives.
    DirectionalDerivatives,
    /// `W` from p + 1 evaluations of the accelerations with perturbed forces (no doStep).
    Perturbation,
    /// Read from outputs of the FMU: `mass` row-major p x p, `force` p entries.
    Outputs {
        mass: Vec<String>,
        force: Vec<String>,
    },
}

/// How the master integrates the reduced model over a fast step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RimIntegrator {
    /// The paper's Eq. 39: v += h a; s += h v (new v).
    SemiImplicitEuler,
    /// Exact for the force held over the fast step: s += h v + h^2 / 2 a; v += h a.
    HeldForceExact,
}

/// Which forces the multibody FMU receives for its macro step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MultibodyForce {
    /// The forces at the synchronisation point (the multibody FMU can step in parallel).
    Held,
    /// The average of the fast forces over the macro step (the multibody FMU steps after them).
    Averaged,
}

/// Settings of the reduced-interface-model algorithm.
#[derive(Debug, Clone, PartialEq)]
pub struct RimSettings {
    /// The multibody component.
    pub multibody: String,
    pub interfaces: Vec<RimInterface>,
    /// The fast step H2 (the macro step H1 is divided into round(H1 / H2) fast steps).
    pub fast_step_size: f64,
    pub effective_mass: EffectiveMass,
    pub integrator: RimIntegrator,
    pub multibody_force: MultibodyForce,
}
