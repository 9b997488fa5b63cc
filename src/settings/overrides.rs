//! Changes asked for on top of an experiment read from a file: the command line, a script, a
//! study. Each one either takes effect or is refused with a message that names it.

use super::control::{Estimator, StepControl};
use super::implicit::{Extension, ImplicitSettings, JacobianMethod};
use super::{AlgorithmKind, Experiment, Labels};

/// Settings that win over the file's, as the command line names them.
// Serialisable: an exported FMU stores the overrides it was exported with (`export::manifest`).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Overrides {
    pub start: Option<f64>,
    pub stop: Option<f64>,
    pub step: Option<f64>,
    pub output_interval: Option<f64>,
    pub tolerance: Option<f64>,
    pub algorithm: Option<AlgorithmKind>,
    /// The extrapolation order; with step control also the highest order it may choose.
    pub extrapolation_order: Option<u8>,
    pub parallel: bool,
    pub jacobian: Option<JacobianMethod>,
    pub extension: Option<Extension>,
    /// Turn macro-step control on (with the algorithm's default estimator).
    pub adaptive: bool,
    pub estimator: Option<Estimator>,
    pub fixed_order: bool,
    pub rtol: Option<f64>,
    pub atol_position: Option<f64>,
    pub atol_velocity: Option<f64>,
    pub rtol_coupling: Option<f64>,
    pub atol_coupling: Option<f64>,
    pub max_step: Option<f64>,
    pub safety_factor: Option<f64>,
    /// Most result rows the run may write.
    pub max_rows: Option<u64>,
    /// The magnitude beyond which the run counts as diverged.
    pub divergence_limit: Option<f64>,
}

impl Overrides {
    /// The experiment with these changes, checked as a whole. `labels` name the settings as
    /// the experiment's file spells them; the changed ones are named as the command line does.
    pub fn apply(&self, experiment: &Experiment, labels: Labels) -> Result<Experiment, String> {
        let cli = Labels::COMMAND_LINE;
        let mut spec = experiment.to_spec(labels);
        macro_rules! set {
            ($field:ident) => {
                if let Some(value) = self.$field {
                    spec.$field = Some(value);
                    spec.labels.$field = cli.$field;
                }
            };
        }
        set!(start);
        set!(stop);
        set!(step);
        set!(output_interval);
        set!(tolerance);
        set!(extrapolation_order);
        set!(divergence_limit);
        if self.max_rows.is_some() {
            spec.max_rows = self.max_rows;
        }
        if self.parallel {
            spec.parallel = Some(true);
            spec.labels.parallel = cli.parallel;
        }
        if let Some(kind) = self.algorithm {
            if spec.algorithm != Some(kind) {
                // The file's settings of the algorithm it named give way to the one asked
                // for here; settings shared by both (order, step control) stay and are checked.
                spec.corrector = None;
                spec.rim = None;
                spec.constraints = None;
            }
            spec.algorithm = Some(kind);
            spec.labels.algorithm = cli.algorithm;
        }
        let kind = spec.algorithm.unwrap_or(AlgorithmKind::Jacobi);
        for (given, option) in [
            (self.jacobian.is_some(), "--jacobian"),
            (self.extension.is_some(), "--extension"),
        ] {
            if given && kind != AlgorithmKind::Implicit {
                return Err(format!(
                    "{option} applies to the implicit algorithm only, but the algorithm is {kind}: add --algorithm implicit or drop {option}"
                ));
            }
        }
        if self.jacobian.is_some() || self.extension.is_some() {
            let corrector = spec.corrector.get_or_insert_with(ImplicitSettings::default);
            if let Some(jacobian) = self.jacobian {
                corrector.jacobian = jacobian;
            }
            if let Some(extension) = self.extension {
                corrector.extension = extension;
            }
            spec.labels.corrector = cli.corrector;
        }
        if self.adaptive && spec.control.is_none() {
            spec.control = Some(StepControl {
                estimator: if kind == AlgorithmKind::Implicit {
                    Estimator::ImSLocal
                } else {
                    Estimator::ExSLocal
                },
                ..StepControl::default()
            });
            spec.labels.control = cli.control;
            spec.labels.control_settings = cli.control_settings;
        }
        let tuning = [
            (self.estimator.is_some(), "--estimator"),
            (self.fixed_order, "--fixed-order"),
            (self.rtol.is_some(), "--rtol"),
            (self.atol_position.is_some(), "--atol-position"),
            (self.atol_velocity.is_some(), "--atol-velocity"),
            (self.rtol_coupling.is_some(), "--rtol-coupling"),
            (self.atol_coupling.is_some(), "--atol-coupling"),
            (self.max_step.is_some(), "--max-step"),
            (self.safety_factor.is_some(), "--safety-factor"),
        ];
        let Some(control) = &mut spec.control else {
            if let Some((_, option)) = tuning.iter().find(|(given, _)| *given) {
                return Err(format!(
                    "{option} tunes the macro-step control: add --adaptive (or a stepControl in the system file), or drop {option}"
                ));
            }
            return spec.build();
        };
        let given = &mut spec.labels.control_settings;
        if let Some(estimator) = self.estimator {
            control.estimator = estimator;
            given.estimator = cli.control_settings.estimator;
        }
        if self.fixed_order {
            control.variable_order = false;
            given.variable_order = cli.control_settings.variable_order;
        }
        // With variable order the extrapolation order is the highest the controller may
        // choose; with a fixed order it is that order.
        if let Some(order) = self.extrapolation_order.filter(|_| control.variable_order) {
            control.max_order = Some(order);
            given.max_order = cli.control_settings.max_order;
        }
        for (target, value, label, option) in [
            (
                &mut control.rtol,
                self.rtol,
                &mut given.rtol,
                cli.control_settings.rtol,
            ),
            (
                &mut control.atol_position,
                self.atol_position,
                &mut given.atol_position,
                cli.control_settings.atol_position,
            ),
            (
                &mut control.atol_velocity,
                self.atol_velocity,
                &mut given.atol_velocity,
                cli.control_settings.atol_velocity,
            ),
            (
                &mut control.rtol_coupling,
                self.rtol_coupling,
                &mut given.rtol_coupling,
                cli.control_settings.rtol_coupling,
            ),
            (
                &mut control.atol_coupling,
                self.atol_coupling,
                &mut given.atol_coupling,
                cli.control_settings.atol_coupling,
            ),
        ] {
            if value.is_some() {
                *target = value;
                *label = option;
            }
        }
        if let Some(h) = self.max_step {
            control.h_max = h;
        }
        if let Some(safety) = self.safety_factor {
            control.step.safety = safety;
        }
        if tuning.iter().any(|(given, _)| *given) {
            spec.labels.control = cli.control;
        }
        spec.build()
    }
}
