//! Constraint coupling (Meyer et al. 2018): interface points, constraint equations, the forces
//! the multipliers drive, and the method.

/// One interface point: outputs on position, velocity and acceleration level (the acceleration
/// with direct feedthrough from the forces).
#[derive(Debug, Clone, PartialEq)]
pub struct InterfacePoint {
    pub position: String,
    pub velocity: String,
    pub acceleration: String,
}

/// A force input driven by the multipliers: `input = sum (coefficient * lambda_equation)`.
#[derive(Debug, Clone, PartialEq)]
pub struct DrivenForce {
    pub input: String,
    pub terms: Vec<(f64, usize)>,
}

/// How the constraints are enforced.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ConstraintMethod {
    /// The index-1 approach with multiplier polynomials of order k = 2 or 3.
    Index1 { order: u8, newton_iterations: u32 },
    /// Baumgarte stabilisation at macro points; `corrector` repeats each step once.
    Baumgarte {
        alpha: f64,
        beta: f64,
        corrector: bool,
    },
}

/// Constraint coupling of a system.
#[derive(Debug, Clone, PartialEq)]
pub struct ConstraintCoupling {
    pub points: Vec<InterfacePoint>,
    /// Per equation: (coefficient, point index).
    pub equations: Vec<Vec<(f64, usize)>>,
    pub forces: Vec<DrivenForce>,
    pub method: ConstraintMethod,
}
