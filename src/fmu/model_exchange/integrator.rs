//! One integration of a Model Exchange FMU's continuous states from `t0` towards `t_stop`
//! with diffsol (BDF or Tsitouras 5(4)), stopping early at a state event (a sign change of an
//! event indicator, located by diffsol's root finder) or a step event (the FMU asks for event
//! mode in `fmi*CompletedIntegratorStep`).
//!
//! The FMU is the right-hand side: every evaluation sets the time, the inputs (following their
//! polynomials exactly) and the states, then gets the derivatives. diffsol's closures are
//! `Fn`, so the instance sits in a `RefCell`; an FMI error inside an evaluation is kept and
//! turns the evaluation into NaN, which stops the solver, and is returned instead of the
//! solver's own complaint.

use std::cell::{Cell, RefCell};

use diffsol::{
    BdfState, NalgebraLU, NalgebraMat, NalgebraVec, OdeBuilder, OdeEquations, OdeSolverMethod,
    OdeSolverState, OdeSolverStopReason, RkState, Vector,
};

use super::{InputPolynomials, SolverMethod, Statistics};
use crate::error::{Error, Result};
use crate::fmu::instance::ModelExchangeInstance;

type M = NalgebraMat<f64>;
type LinearSolver = NalgebraLU<f64>;

/// Why an integration stopped.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Stop {
    /// `t_stop` was reached.
    Reached,
    /// An event indicator changed sign at this time.
    StateEvent,
    /// The FMU asked for event mode after an integrator step (`fmi*CompletedIntegratorStep`).
    StepEvent,
    /// The FMU asked to terminate after an integrator step.
    Terminate,
}

/// The solver's own state (its history, order and step size) at the end of an integration,
/// to go on from where nothing has changed since (no input set, no event).
#[derive(Clone)]
pub(crate) enum Carry {
    Bdf(BdfState<NalgebraVec<f64>>),
    Rk(RkState<NalgebraVec<f64>>),
}

impl Carry {
    fn time(&self) -> f64 {
        match self {
            Carry::Bdf(state) => state.as_ref().t,
            Carry::Rk(state) => state.as_ref().t,
        }
    }
}

/// What one integration needs and leaves behind.
pub(super) struct Integration<'a> {
    pub fmu: &'a mut dyn ModelExchangeInstance,
    pub inputs: &'a InputPolynomials,
    pub method: SolverMethod,
    pub rtol: f64,
    /// Absolute tolerance per state.
    pub atol: &'a [f64],
    /// The states at `t0` on entry, at the time reached on return.
    pub x: &'a mut [f64],
    pub t0: f64,
    pub t_stop: f64,
    /// A first step size to try (the last accepted one), or `None`: diffsol estimates it.
    pub h0: Option<f64>,
    pub event_indicators: usize,
    pub completed_integrator_step: bool,
    pub statistics: &'a mut Statistics,
    /// In: the solver's state to go on from (used when it is at `t0`); out: its state at
    /// `t_stop` when that was reached.
    pub carry: &'a mut Option<Carry>,
}

/// The FMU as diffsol's right-hand side and root function.
struct Model<'a> {
    fmu: RefCell<&'a mut dyn ModelExchangeInstance>,
    inputs: &'a InputPolynomials,
    nx: usize,
    /// The first FMI error of an evaluation.
    failure: RefCell<Option<Error>>,
    /// f(t, x) of the last evaluation, for the finite-difference Jacobian products.
    last: RefCell<(f64, Vec<f64>, Vec<f64>)>,
    scratch: RefCell<(Vec<f64>, Vec<f64>)>,
    evaluations: Cell<u64>,
}

impl Model<'_> {
    /// Set time, inputs and states on the FMU.
    /// `x` is the solver's vector: one padding entry when the FMU has no states.
    fn load(&self, fmu: &mut dyn ModelExchangeInstance, t: f64, x: &[f64]) -> Result<()> {
        fmu.set_time(t)?;
        self.inputs.apply(fmu, t)?;
        fmu.set_continuous_states(&x[..self.nx])
    }

    fn derivatives(&self, x: &[f64], t: f64, dx: &mut [f64]) {
        if self.failure.borrow().is_some() {
            dx.fill(f64::NAN);
            return;
        }
        if self.nx == 0 {
            // The padding state of a model without states stands still.
            dx.fill(0.0);
            return;
        }
        self.evaluations.set(self.evaluations.get() + 1);
        let result = {
            let mut fmu = self.fmu.borrow_mut();
            self.load(&mut **fmu, t, x)
                .and_then(|()| fmu.get_derivatives(dx))
        };
        match result {
            Ok(()) => {
                let mut last = self.last.borrow_mut();
                last.0 = t;
                last.1.clear();
                last.1.extend_from_slice(x);
                last.2.clear();
                last.2.extend_from_slice(dx);
            }
            Err(e) => {
                *self.failure.borrow_mut() = Some(e);
                dx.fill(f64::NAN);
            }
        }
    }

    /// `J v` by a forward difference along `v`.
    fn jacobian_times(&self, x: &[f64], t: f64, v: &[f64], jv: &mut [f64]) {
        let norm_v = v.iter().fold(0.0f64, |m, a| m.max(a.abs()));
        if norm_v == 0.0 || self.nx == 0 {
            jv.fill(0.0);
            return;
        }
        let fresh = {
            let last = self.last.borrow();
            last.0 == t && last.1 == x
        };
        // The scratch vectors keep their capacity: no allocation per column.
        let mut f0 = std::mem::take(&mut self.scratch.borrow_mut().1);
        if fresh {
            f0.clone_from(&self.last.borrow().2);
        } else {
            f0.resize(self.nx, 0.0);
            self.derivatives(x, t, &mut f0);
        }
        let norm_x = x.iter().fold(0.0f64, |m, a| m.max(a.abs()));
        let eps = f64::EPSILON.sqrt() * norm_x.max(1.0) / norm_v;
        let mut xp = std::mem::take(&mut self.scratch.borrow_mut().0);
        xp.clear();
        xp.extend(x.iter().zip(v).map(|(a, b)| a + eps * b));
        self.derivatives(&xp, t, jv);
        for (j, f) in jv.iter_mut().zip(&f0) {
            *j = (*j - f) / eps;
        }
        // The base point stays the last evaluation, so the next column reuses it.
        {
            let mut last = self.last.borrow_mut();
            last.0 = t;
            last.1.clear();
            last.1.extend_from_slice(x);
            last.2.clone_from(&f0);
        }
        let mut scratch = self.scratch.borrow_mut();
        scratch.0 = xp;
        scratch.1 = f0;
    }

    fn indicators(&self, x: &[f64], t: f64, z: &mut [f64], count: usize) {
        if count == 0 {
            // diffsol's root function needs one entry: a constant never crosses zero.
            z.fill(1.0);
            return;
        }
        if self.failure.borrow().is_some() {
            z.fill(f64::NAN);
            return;
        }
        let result = {
            let mut fmu = self.fmu.borrow_mut();
            self.load(&mut **fmu, t, x)
                .and_then(|()| fmu.get_event_indicators(z))
        };
        match result {
            // FMI's domains are z > 0 and z <= 0: an exact zero is on the negative side. diffsol
            // counts an exact zero as a root, which would stop every step of an indicator that
            // rests at zero (a ball lying on the floor).
            Ok(()) => {
                for zi in z.iter_mut().filter(|zi| **zi == 0.0) {
                    *zi = -f64::MIN_POSITIVE;
                }
            }
            Err(e) => {
                *self.failure.borrow_mut() = Some(e);
                z.fill(f64::NAN);
            }
        }
    }
}

/// Integrate; returns why it stopped, the time reached and the last accepted step size.
///
/// A panic inside the solver (an assertion on values an FMU made, say) becomes an error.
pub(super) fn integrate(run: Integration<'_>) -> Result<(Stop, f64, f64)> {
    let t0 = run.t0;
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| integrate_inner(run))).unwrap_or_else(
        |panic| {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(Error::Numerics(format!(
                "the Model Exchange integrator failed from t = {}: {what}",
                crate::numbers::number(t0)
            )))
        },
    )
}

fn integrate_inner(run: Integration<'_>) -> Result<(Stop, f64, f64)> {
    let nx = run.x.len();
    let nz = run.event_indicators;
    // diffsol needs one state: a model without states integrates a constant.
    let x0 = if nx == 0 { vec![0.0] } else { run.x.to_vec() };
    let n = x0.len();
    let model = Model {
        fmu: RefCell::new(run.fmu),
        inputs: run.inputs,
        nx,
        failure: RefCell::new(None),
        last: RefCell::new((f64::NAN, Vec::with_capacity(nx), Vec::with_capacity(nx))),
        scratch: RefCell::new((Vec::with_capacity(nx), Vec::with_capacity(nx))),
        evaluations: Cell::new(0),
    };
    let mut builder = OdeBuilder::<M>::new()
        .t0(run.t0)
        .rtol(run.rtol)
        .atol(if nx == 0 {
            vec![1.0]
        } else {
            run.atol.to_vec()
        });
    if let Some(h0) = run.h0.filter(|h| h.is_finite() && *h > 0.0) {
        builder = builder.h0(h0.min(run.t_stop - run.t0));
    }
    let problem = builder
        .rhs_implicit(
            |x: &[f64], _p: &[f64], t: f64, dx: &mut [f64]| model.derivatives(x, t, dx),
            |x: &[f64], _p: &[f64], t: f64, v: &[f64], jv: &mut [f64]| {
                model.jacobian_times(x, t, v, jv)
            },
        )
        .init(
            move |_p: &[f64], _t: f64, x: &mut [f64]| x.copy_from_slice(&x0),
            n,
        )
        .root(
            |x: &[f64], _p: &[f64], t: f64, z: &mut [f64]| model.indicators(x, t, z, nz),
            nz.max(1),
        )
        .build()
        .map_err(|e| solver_error(&model, run.t0, &e.to_string()))?;
    let carried = run.carry.take().filter(|c| c.time() == run.t0 && nx > 0);
    let fail = |e: diffsol::DiffsolError| solver_error(&model, run.t0, &e.to_string());
    let outcome = match run.method {
        SolverMethod::Bdf => {
            let solver = match carried {
                Some(Carry::Bdf(state)) => problem.bdf_solver::<LinearSolver>(state),
                _ => problem.bdf::<LinearSolver>(),
            }
            .map_err(fail)?;
            drive(
                solver,
                &model,
                run.x,
                run.t_stop,
                run.completed_integrator_step,
            )
            .map(|d| d.map_state(Carry::Bdf))
        }
        SolverMethod::Tsit45 => {
            let solver = match carried {
                Some(Carry::Rk(state)) => problem.tsit45_solver(state),
                _ => problem.tsit45(),
            }
            .map_err(fail)?;
            drive(
                solver,
                &model,
                run.x,
                run.t_stop,
                run.completed_integrator_step,
            )
            .map(|d| d.map_state(Carry::Rk))
        }
    };
    run.statistics.rhs_evaluations += model.evaluations.get();
    let driven = outcome?;
    run.statistics.steps += driven.steps;
    *run.carry = driven.state;
    Ok((driven.stop, driven.t, driven.h))
}

/// How [`drive`] ended: why, where, the last step size, the steps made, and the solver's
/// state when `t_stop` was reached.
struct Driven<State> {
    stop: Stop,
    t: f64,
    h: f64,
    steps: u64,
    state: Option<State>,
}

impl<State> Driven<State> {
    fn map_state<Other>(self, f: impl FnOnce(State) -> Other) -> Driven<Other> {
        Driven {
            stop: self.stop,
            t: self.t,
            h: self.h,
            steps: self.steps,
            state: self.state.map(f),
        }
    }
}

/// Step `solver` until `t_stop`, an event, or a failure; leaves the states in `x`.
fn drive<'a, Eqn, S>(
    mut solver: S,
    model: &Model<'_>,
    x: &mut [f64],
    t_stop: f64,
    completed_integrator_step: bool,
) -> Result<Driven<S::State>>
where
    Eqn: OdeEquations<T = f64, V = <M as diffsol::MatrixCommon>::V> + 'a,
    S: OdeSolverMethod<'a, Eqn>,
{
    let start = solver.state().t;
    solver
        .set_stop_time(t_stop)
        .map_err(|e| solver_error(model, start, &e.to_string()))?;
    let mut steps = 0u64;
    loop {
        let reason = solver.step();
        let state_t = solver.state().t;
        let h = solver.state().h;
        let reason = reason.map_err(|e| solver_error(model, state_t, &e.to_string()))?;
        if let Some(e) = model.failure.borrow_mut().take() {
            return Err(e);
        }
        steps += 1;
        match reason {
            OdeSolverStopReason::TstopReached => {
                copy_out(solver.state().y, x);
                return Ok(Driven {
                    stop: Stop::Reached,
                    t: t_stop,
                    h,
                    steps,
                    state: Some(solver.into_state()),
                });
            }
            OdeSolverStopReason::RootFound(t_root, _) => {
                let y = solver
                    .interpolate(t_root)
                    .map_err(|e| solver_error(model, t_root, &e.to_string()))?;
                copy_out(&y, x);
                return Ok(Driven {
                    stop: Stop::StateEvent,
                    t: t_root,
                    h,
                    steps,
                    state: None,
                });
            }
            OdeSolverStopReason::InternalTimestep => {
                if completed_integrator_step {
                    copy_out(solver.state().y, x);
                    let (event, terminate) = {
                        let mut fmu = model.fmu.borrow_mut();
                        model.load(&mut **fmu, state_t, x)?;
                        fmu.completed_integrator_step()?
                    };
                    if terminate {
                        return Ok(Driven {
                            stop: Stop::Terminate,
                            t: state_t,
                            h,
                            steps,
                            state: None,
                        });
                    }
                    if event {
                        return Ok(Driven {
                            stop: Stop::StepEvent,
                            t: state_t,
                            h,
                            steps,
                            state: None,
                        });
                    }
                }
            }
        }
    }
}

fn copy_out<V: Vector<T = f64>>(y: &V, x: &mut [f64]) {
    for (i, xi) in x.iter_mut().enumerate() {
        *xi = y.get_index(i);
    }
}

/// The FMU's own error if an evaluation failed, else the solver's.
fn solver_error(model: &Model<'_>, t: f64, message: &str) -> Error {
    if let Some(e) = model.failure.borrow_mut().take() {
        return e;
    }
    let name = model.fmu.borrow().name().to_string();
    Error::Numerics(format!(
        "{name}: the Model Exchange integrator failed at t = {}: {message} (try --solver bdf for a \
         stiff model, or other --solver-rtol / --solver-atol)",
        crate::numbers::number(t)
    ))
}
