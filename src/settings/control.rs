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
///
/// The tolerances and the highest order are `None` where nobody set them (the defaults below
/// apply), so that a setting the chosen estimator does not read can be refused by name
/// ([`StepControl::unused_setting`]) instead of being accepted and ignored.
#[derive(Debug, Clone, PartialEq)]
pub struct StepControl {
    pub estimator: Estimator,
    pub step: StepSizeSettings,
    /// Largest macro step.
    pub h_max: f64,
    /// State-based estimators (ExLocal, ExMilne, ImMilne): weights atol + rtol |x| of the
    /// positions and velocities (default [`DEFAULT_RTOL`], [`DEFAULT_ATOL_POSITION`],
    /// [`DEFAULT_ATOL_VELOCITY`]).
    pub rtol: Option<f64>,
    pub atol_position: Option<f64>,
    pub atol_velocity: Option<f64>,
    /// Coupling-based estimators (ExSLocal, ImSLocal), the start-up steps of ExLocal and
    /// ExMilne, and the order controller: weights of the coupling variables (default
    /// [`DEFAULT_RTOL_COUPLING`], [`DEFAULT_ATOL_COUPLING`]).
    pub rtol_coupling: Option<f64>,
    pub atol_coupling: Option<f64>,
    /// Let the order controller choose k (else k stays the experiment's extrapolation order).
    pub variable_order: bool,
    /// The highest order the order controller may choose (default: the experiment's
    /// extrapolation order when it is above 0, else [`DEFAULT_MAX_ORDER`]).
    pub max_order: Option<u8>,
    /// `component.variable` measured as positions / velocities by the state-based estimators.
    /// Both empty: every continuous state of every FMU, counted as a velocity.
    pub positions: Vec<String>,
    pub velocities: Vec<String>,
    /// Keep (t, H, k) of every accepted step in the statistics (for studies; allocates).
    pub trace: bool,
}

/// Relative tolerance of the states (the variable-order paper's Example 1).
pub const DEFAULT_RTOL: f64 = 1e-5;
/// Absolute tolerance of the positions.
pub const DEFAULT_ATOL_POSITION: f64 = 1e-8;
/// Absolute tolerance of the velocities.
pub const DEFAULT_ATOL_VELOCITY: f64 = 1e-5;
/// Relative tolerance of the coupling variables.
pub const DEFAULT_RTOL_COUPLING: f64 = 1e-3;
/// Absolute tolerance of the coupling variables.
pub const DEFAULT_ATOL_COUPLING: f64 = 1e-1;
/// The highest order the order controller chooses unless told.
pub const DEFAULT_MAX_ORDER: u8 = 3;

impl Default for StepControl {
    fn default() -> Self {
        StepControl {
            estimator: Estimator::ExSLocal,
            step: StepSizeSettings::default(),
            h_max: f64::INFINITY,
            rtol: None,
            atol_position: None,
            atol_velocity: None,
            rtol_coupling: None,
            atol_coupling: None,
            variable_order: true,
            max_order: None,
            positions: Vec::new(),
            velocities: Vec::new(),
            trace: false,
        }
    }
}

/// How a reader spells each setting of the step control, so that a refusal names it as the
/// user wrote it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ControlLabels {
    pub estimator: &'static str,
    pub rtol: &'static str,
    pub atol_position: &'static str,
    pub atol_velocity: &'static str,
    pub rtol_coupling: &'static str,
    pub atol_coupling: &'static str,
    pub variable_order: &'static str,
    pub max_order: &'static str,
    pub positions: &'static str,
    pub velocities: &'static str,
}

impl StepControl {
    /// The weights of the states: (rtol, atol of positions, atol of velocities).
    pub fn state_tolerances(&self) -> (f64, f64, f64) {
        (
            self.rtol.unwrap_or(DEFAULT_RTOL),
            self.atol_position.unwrap_or(DEFAULT_ATOL_POSITION),
            self.atol_velocity.unwrap_or(DEFAULT_ATOL_VELOCITY),
        )
    }

    /// The weights of the coupling variables: (rtol, atol).
    pub fn coupling_tolerances(&self) -> (f64, f64) {
        (
            self.rtol_coupling.unwrap_or(DEFAULT_RTOL_COUPLING),
            self.atol_coupling.unwrap_or(DEFAULT_ATOL_COUPLING),
        )
    }

    /// The highest order the order controller may choose, with the experiment's extrapolation
    /// order `k` (which stands for it when given and the control names none).
    pub fn highest_order(&self, k: u8) -> u8 {
        self.max_order
            .unwrap_or(if k > 0 { k } else { DEFAULT_MAX_ORDER })
    }

    /// The first setting that this estimator (with this order control) never reads, and why,
    /// naming the settings as `l` spells them: a setting accepted and ignored would let a user
    /// believe it acted.
    pub fn unused_setting(&self, l: &ControlLabels) -> Option<String> {
        let e = self.estimator;
        let estimator = format!("the estimator {e:?} ({})", l.estimator);
        if !e.is_state_based() {
            let state_settings = [
                (self.rtol.is_some(), l.rtol),
                (self.atol_position.is_some(), l.atol_position),
                (self.atol_velocity.is_some(), l.atol_velocity),
                (!self.positions.is_empty(), l.positions),
                (!self.velocities.is_empty(), l.velocities),
            ];
            if let Some((_, label)) = state_settings.iter().find(|(given, _)| *given) {
                return Some(format!(
                    "{label} weighs or names states, but {estimator} measures the coupling variables, weighed by {} and {}: use those, or choose a state-based estimator (ExLocal, ExMilne{})",
                    l.rtol_coupling,
                    l.atol_coupling,
                    if e.is_implicit() { ", ImMilne" } else { "" }
                ));
            }
        } else {
            let (positions, velocities) = (!self.positions.is_empty(), !self.velocities.is_empty());
            if self.atol_position.is_some() && !positions {
                let measured = if velocities {
                    format!("only the velocities of {}", l.velocities)
                } else {
                    "every continuous state, as a velocity".to_string()
                };
                return Some(format!(
                    "{} weighs the states named as positions, but {} names none: {estimator} measures {measured}, weighed by {}; use that, or name the positions",
                    l.atol_position, l.positions, l.atol_velocity
                ));
            }
            if self.atol_velocity.is_some() && positions && !velocities {
                return Some(format!(
                    "{} weighs the states named as velocities, but {} names none: {estimator} measures only the positions of {}, weighed by {}; use that, or name the velocities",
                    l.atol_velocity, l.velocities, l.positions, l.atol_position
                ));
            }
            // ImMilne never falls back to the coupling estimate (ExLocal and ExMilne do in
            // their first steps), so with a fixed order nothing reads the coupling weights.
            if e == Estimator::ImMilne && !self.variable_order {
                for (given, label) in [
                    (self.rtol_coupling.is_some(), l.rtol_coupling),
                    (self.atol_coupling.is_some(), l.atol_coupling),
                ] {
                    if given {
                        return Some(format!(
                            "{label} weighs the coupling variables for the order controller and the coupling-based estimators, but the order is fixed ({}) and {estimator} measures states: drop it, let the order vary, or choose ImSLocal",
                            l.variable_order
                        ));
                    }
                }
            }
        }
        if self.max_order.is_some() && !self.variable_order {
            return Some(format!(
                "{} is the highest order the order controller may choose, but the order is fixed ({}): drop it, or let the order vary",
                l.max_order, l.variable_order
            ));
        }
        None
    }
}
