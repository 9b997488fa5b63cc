//! The implicit predictor / corrector scheme: its corrector and the extended coupling.

/// Settings of the corrector.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ImplicitSettings {
    /// Newton iterations allowed per macro step before it counts as not converged.
    pub max_iterations: u32,
    /// Converged when WRMS(u* - phi(u*)) <= 1 with weights atol + rtol |u*|.
    pub abs_tolerance: f64,
    pub rel_tolerance: f64,
    /// Keep the interface Jacobian across iterations and steps (recomputed when a step fails).
    pub reuse_jacobian: bool,
    /// How the interface Jacobian is computed.
    pub jacobian: JacobianMethod,
    /// Extended coupling: half-step values for the connections marked `half_step`, with the
    /// extra condition this names (see `master::extended`).
    pub extension: Extension,
}

/// How the implicit scheme computes the interface Jacobian `dG/du*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum JacobianMethod {
    /// One repeated macro step of the whole system per coupling variable, perturbed.
    #[default]
    SystemSteps,
    /// Assembled by the chain rule along the coupling graph: each component repeats only its
    /// own step once per own coupling input (in parallel on the worker pool), and the direct
    /// feedthrough of outputs from inputs set at the communication point comes from the FMUs'
    /// directional derivatives (finite differences of set / get where an FMU offers none).
    /// Systems with algebraic loops fall back to `SystemSteps`.
    Components,
}

impl JacobianMethod {
    /// The names the command line and the Python module take, in the order of [`Self::parse`].
    pub const NAMES: [&'static str; 2] = ["system", "components"];

    /// The method with this name (`system`, `components`).
    pub fn parse(name: &str) -> Option<JacobianMethod> {
        match name {
            "system" => Some(JacobianMethod::SystemSteps),
            "components" => Some(JacobianMethod::Components),
            _ => None,
        }
    }
}

impl Default for ImplicitSettings {
    fn default() -> Self {
        ImplicitSettings {
            max_iterations: 5,
            abs_tolerance: 1e-8,
            rel_tolerance: 1e-6,
            reuse_jacobian: false,
            jacobian: JacobianMethod::SystemSteps,
            extension: Extension::None,
        }
    }
}

/// Which condition the extended coupling adds for a half-step value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum Extension {
    /// None: the original implicit scheme (half-step marks are not allowed).
    #[default]
    None,
    /// D-extension: the coupling condition's time derivative at the new point.
    Derivative,
    /// I-extension: the coupling condition's integral over the macro step.
    Integral,
}

impl Extension {
    /// The names the command line and the Python module take.
    pub const NAMES: [&'static str; 3] = ["none", "derivative", "integral"];

    /// The extension with this name (`none`, `derivative`, `integral`).
    pub fn parse(name: &str) -> Option<Extension> {
        match name {
            "none" => Some(Extension::None),
            "derivative" => Some(Extension::Derivative),
            "integral" => Some(Extension::Integral),
            _ => None,
        }
    }
}
