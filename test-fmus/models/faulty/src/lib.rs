//! Faulty: a model for testing how an importer reports failing FMUs.
//!
//! A state `x' = 1` (output x, start 0). The Int32 parameter `failure` selects what happens
//! in the first `doStep` whose end reaches `fail_at` (default 0.5 s): 0 nothing (default),
//! 1 Discard (the step stops at `fail_at`, which FMI 2 `fmi2GetRealStatus(fmi2LastSuccessfulTime)`
//! and FMI 3 `lastSuccessfulTime` report; the instance may continue from there), 2 Error
//! (the instance is then unusable until reset or a state is restored; `fmi*Terminate` is refused),
//! 3 Fatal (every later call returns Fatal and is counted as the importer's misuse, freeing
//! included: see `fmu_kit::ffi::calls_after_fatal`), 4 request termination (the step stops at `fail_at`; FMI 2
//! returns Discard with `fmi2GetBooleanStatus(fmi2Terminated)` true, FMI 3 returns OK with
//! `terminateSimulation`, `lastSuccessfulTime = fail_at` and `earlyReturn` when `fail_at` is
//! before the step's end; outputs stay readable, further steps are refused until
//! `fmi*Terminate`, reset or restoring an earlier FMU state). Failures are logged as
//! "simulated failure (<status>) requested by parameter failure at t = <fail_at>", the
//! request as "termination requested by parameter failure at t = <fail_at>".

use fmu_kit::{Context, Experiment, Model, Status, StepFailure, Values, Variable};

/// The state, output.
pub const X: u32 = 1;
/// der(x).
pub const DER_X: u32 = 2;
/// Which failure to simulate (0 none, 1 Discard, 2 Error, 3 Fatal, 4 request termination).
pub const FAILURE: u32 = 3;
/// When to fail.
pub const FAIL_AT: u32 = 4;

/// The faulty model.
#[derive(Default)]
pub struct Faulty;

impl Model for Faulty {
    const NAME: &'static str = "Faulty";
    const DESCRIPTION: &'static str =
        "x' = 1; fails with the status chosen by the parameter failure at t = fail_at, or requests termination there";
    const EXACT_STEP: bool = true;
    const EXPERIMENT: Experiment = Experiment {
        start: 0.0,
        stop: 1.0,
        step: 0.1,
    };

    fn variables(&self) -> Vec<Variable> {
        vec![
            Variable::float64(X, "x")
                .output()
                .start(0.0)
                .description("Time integral of 1")
                .depends_on(&[]),
            Variable::float64(DER_X, "der(x)")
                .derivative_of(X)
                .depends_on(&[]),
            Variable::int32(FAILURE, "failure")
                .parameter()
                .start(0i32)
                .min(0.0)
                .max(4.0)
                .description(
                    "Failure to simulate: 0 none, 1 Discard, 2 Error, 3 Fatal, \
                     4 request termination",
                ),
            Variable::float64(FAIL_AT, "fail_at")
                .parameter()
                .start(0.5)
                .unit("s")
                .description("Time of the failure or termination request"),
        ]
    }

    fn initialize(&self, _v: &mut Values, _cx: &Context) -> Result<(), String> {
        Ok(())
    }

    fn evaluate(&self, v: &mut Values, _time: f64) -> Result<(), String> {
        v.set_f64(DER_X, 1.0);
        Ok(())
    }

    fn partial(&self, _v: &Values, _time: f64, of: u32, wrt: u32) -> Option<f64> {
        match of {
            X => Some(f64::from(u8::from(wrt == X))),
            DER_X => Some(0.0),
            _ => None,
        }
    }

    fn exact_step(
        &self,
        _v: &Values,
        _inputs: &fmu_kit::Inputs<'_>,
        _t: f64,
        h: f64,
        x: &mut [f64],
    ) -> Result<(), String> {
        x[0] += h;
        Ok(())
    }

    fn step_failure(&self, v: &Values, t: f64, t_end: f64) -> Option<StepFailure> {
        // `None`: the termination request.
        let status = match v.i32(FAILURE) {
            1 => Some(Status::Discard),
            2 => Some(Status::Error),
            3 => Some(Status::Fatal),
            4 => None,
            _ => return None,
        };
        let at = v.f64(FAIL_AT);
        let tol = 1e-9 * at.abs().max(1.0);
        if !(t < at - tol && at <= t_end + tol) {
            return None;
        }
        Some(match status {
            Some(status) => StepFailure::new(
                status,
                at,
                format!(
                    "simulated failure ({status:?}) requested by parameter failure at t = {at}"
                ),
            ),
            None => StepFailure::termination(
                at,
                format!("termination requested by parameter failure at t = {at}"),
            ),
        })
    }
}

fmu_kit::export_fmu!(Faulty);

#[cfg(test)]
mod tests;
