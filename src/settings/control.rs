//! Macro-step size and order control: the estimators and the controller's settings (the
//! variable-order paper, Sects. 4 and 5).

/// The five error estimators of the paper.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Estimator {
    /// Explicit: a second run with extrapolation of degree k + 1 (Sect. 4.1).
    ExLocal,
    /// Explicit: Milne device with the degree-(k+1) predicted value (Sect. 4.2).
    ExMilne,
    /// Explicit: predicted minus updated coupling variables (Sect. 4.3).
    ExSLocal,
    /// Implicit: Milne device on predictor vs corrector states (Sect. 4.4).
    ImMilne,
    /// Implicit: predicted minus corrected coupling variables (Sect. 4.5).
    ImSLocal,
}

impl Estimator {
    /// The names the command line and the Python module take (the paper's).
    pub const NAMES: [&'static str; 5] = ["ExLocal", "ExMilne", "ExSLocal", "ImMilne", "ImSLocal"];

    /// The estimator with this name.
    pub fn parse(name: &str) -> Option<Estimator> {
        match name {
            "ExLocal" => Some(Estimator::ExLocal),
            "ExMilne" => Some(Estimator::ExMilne),
            "ExSLocal" => Some(Estimator::ExSLocal),
            "ImMilne" => Some(Estimator::ImMilne),
            "ImSLocal" => Some(Estimator::ImSLocal),
            _ => None,
        }
    }
}

impl Estimator {
    /// Whether the estimator measures states (positions / velocities) rather than coupling
    /// variables.
    pub fn is_state_based(self) -> bool {
        matches!(
            self,
            Estimator::ExLocal | Estimator::ExMilne | Estimator::ImMilne
        )
    }

    /// Whether it belongs to the implicit (predictor / corrector) scheme.
    pub fn is_implicit(self) -> bool {
        matches!(self, Estimator::ImMilne | Estimator::ImSLocal)
    }
}

/// Settings of the step-size controller (Sect. 5.3).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepSizeSettings {
    /// Safety factor SF (the paper recommends 2..6).
    pub safety: f64,
    pub r_min: f64,
    pub r_max: f64,
    /// Abort when the step would fall to or below this.
    pub h_min: f64,
}

impl Default for StepSizeSettings {
    fn default() -> Self {
        StepSizeSettings {
            safety: 6.0,
            r_min: 0.5,
            r_max: 2.0,
            h_min: 1e-12,
        }
    }
}

/// Settings of macro-step size and order control (plain data of the experiment).
#[derive(Debug, Clone, PartialEq)]
pub struct StepControl {
    pub estimator: Estimator,
    pub step: StepSizeSettings,
    /// Largest macro step.
    pub h_max: f64,
    /// State-based estimators: weights atol + rtol |x|.
    pub rtol: f64,
    pub atol_position: f64,
    pub atol_velocity: f64,
    /// Coupling-based estimators and the order controller.
    pub rtol_coupling: f64,
    pub atol_coupling: f64,
    /// Let the order controller choose k (else k stays the experiment's extrapolation order).
    pub variable_order: bool,
    pub max_order: u8,
    /// `component.variable` measured as positions / velocities by the state-based estimators.
    /// Both empty: every continuous state of every FMU, counted as a velocity.
    pub positions: Vec<String>,
    pub velocities: Vec<String>,
    /// Keep (t, H, k) of every accepted step in the statistics (for studies; allocates).
    pub trace: bool,
}

impl Default for StepControl {
    fn default() -> Self {
        StepControl {
            estimator: Estimator::ExSLocal,
            step: StepSizeSettings::default(),
            h_max: f64::INFINITY,
            rtol: 1e-5,
            atol_position: 1e-8,
            atol_velocity: 1e-5,
            rtol_coupling: 1e-3,
            atol_coupling: 1e-1,
            variable_order: true,
            max_order: 3,
            positions: Vec::new(),
            velocities: Vec::new(),
            trace: false,
        }
    }
}
