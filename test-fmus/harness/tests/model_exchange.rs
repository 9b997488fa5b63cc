//! The Model Exchange interface of every packed FMU that has one (FMI 2 and FMI 3), loaded raw:
//! the call sequence with an importer-side integrator of this harness (RK4, event location by
//! bisection, time events landed on) returns OK throughout and gives the Co-Simulation
//! interface's results; derivatives are the model's equations; directional derivatives match
//! finite differences of the derivatives; BouncingBall's indicator crosses at the closed-form
//! bounce time and the event iteration reverses the velocity; Stair announces its time events
//! through nextEventTime; FMU states round trip; misuse is refused with Error.

mod common;

use common::me::{Api, Me};
use common::{close, experiment, for_each_fmu, Cs, Extracted, ModelDescription, ERROR, OK};

/// Largest horizon simulated (s) and number of output points in it.
const HORIZON: f64 = 3.0;
const OUTPUTS: usize = 30;
/// The harness integrator's step (stable for Robertson's stiffness, ~1.1e4 1/s).
const H_INT: f64 = 1e-4;

fn me_fmus() -> Vec<&'static common::Packed> {
    let fmus: Vec<_> = common::packed()
        .iter()
        .filter(|p| {
            Extracted::new(p)
                .map(|f| f.md.has_model_exchange)
                .unwrap_or(false)
        })
        .collect();
    for model in [
        "Dahlquist",
        "VanDerPol",
        "BouncingBall",
        "Stair",
        "Oscillator",
        "Robertson",
    ] {
        for v in [2, 3] {
            assert!(
                fmus.iter().any(|p| p.model == model && p.fmi_version == v),
                "{model} (FMI {v}) has no Model Exchange interface"
            );
        }
    }
    fmus
}

/// The sizes from the model description.
fn sizes(md: &ModelDescription) -> (usize, usize) {
    let nz = match md.fmi_version {
        2 => md.number_of_event_indicators.unwrap_or(0),
        _ => md.event_indicators.len(),
    };
    (md.derivatives.len(), nz)
}

/// Value references of the states, in the order of the derivatives.
fn state_vrs(md: &ModelDescription) -> Vec<u32> {
    md.derivatives
        .iter()
        .map(|d| {
            md.by_vr(d.vr)
                .and_then(|v| v.derivative_of)
                .expect("a derivative names its state")
        })
        .collect()
}

fn crossed(a: f64, b: f64) -> bool {
    (a > 0.0 && b <= 0.0) || (a < 0.0 && b >= 0.0)
}

/// What the harness integrator saw: the state events (time, indicators before the step).
#[derive(Clone, Debug, Default, PartialEq)]
struct Log {
    events: Vec<f64>,
    next_times: Vec<Option<f64>>,
}

/// An importer-side integrator driving one Model Exchange instance in Continuous-Time Mode.
#[derive(Clone)]
struct Driver {
    t: f64,
    x: Vec<f64>,
    z: Vec<f64>,
    next: Option<f64>,
    log: Log,
}

impl Driver {
    /// Initialises the instance at t0, runs the first event iteration and enters
    /// Continuous-Time Mode.
    fn start(me: &Me, t0: f64) -> Result<Driver, String> {
        me.initialize(t0)?;
        let u = me.iterate()?;
        me.ok(
            me.enter_continuous_time_mode(),
            "EnterContinuousTimeMode",
            0,
        )?;
        let (st, x) = me.states();
        me.ok(st, "GetContinuousStates", 0)?;
        Ok(Driver {
            t: t0,
            x,
            z: me.z()?,
            next: u.next_time,
            log: Log {
                events: Vec::new(),
                next_times: vec![u.next_time],
            },
        })
    }

    fn rk4(&self, me: &Me, h: f64) -> Result<Vec<f64>, String> {
        let n = self.x.len();
        if n == 0 {
            return Ok(Vec::new());
        }
        let add = |k: &[f64], a: f64| -> Vec<f64> {
            self.x.iter().zip(k).map(|(x, k)| x + a * h * k).collect()
        };
        let k1 = me.rhs(self.t, &self.x)?;
        let k2 = me.rhs(self.t + h / 2.0, &add(&k1, 0.5))?;
        let k3 = me.rhs(self.t + h / 2.0, &add(&k2, 0.5))?;
        let k4 = me.rhs(self.t + h, &add(&k3, 1.0))?;
        Ok((0..n)
            .map(|i| self.x[i] + h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]))
            .collect())
    }

    /// Sets time and states, returns the indicators there.
    fn at(&self, me: &Me, t: f64, x: &[f64]) -> Result<Vec<f64>, String> {
        me.ok(me.set_time(t), "SetTime", 0)?;
        me.ok(me.set_states(x), "SetContinuousStates", 0)?;
        me.z()
    }

    /// Event Mode at the current point: iterate, back to Continuous-Time Mode, reread.
    fn event(&mut self, me: &Me) -> Result<(), String> {
        me.ok(me.enter_event_mode(), "EnterEventMode", 0)?;
        let u = me.iterate()?;
        if u.terminate {
            return Err(format!("unexpected terminateSimulation at t = {}", self.t));
        }
        me.ok(
            me.enter_continuous_time_mode(),
            "EnterContinuousTimeMode",
            0,
        )?;
        let (st, x) = me.states();
        me.ok(st, "GetContinuousStates", 0)?;
        if !u.values_changed && x != self.x {
            return Err("states changed without valuesOfContinuousStatesChanged".into());
        }
        self.x = x;
        self.z = me.z()?;
        self.next = u.next_time;
        self.log.next_times.push(u.next_time);
        Ok(())
    }

    /// Integrates to `t_end`: steps of at most H_INT, time events landed on, crossings
    /// located by bisection to 1e-13 s.
    fn run_to(&mut self, me: &Me, t_end: f64) -> Result<(), String> {
        while self.t < t_end - 1e-13 {
            let mut target = t_end;
            if let Some(te) = self.next.filter(|&te| te > self.t) {
                target = target.min(te);
            }
            let h = H_INT.min(target - self.t);
            let x1 = self.rk4(me, h)?;
            let z1 = self.at(me, self.t + h, &x1)?;
            let hit = self.z.iter().zip(&z1).any(|(&a, &b)| crossed(a, b));
            let (h, x1) = if hit {
                let (mut lo, mut hi) = (0.0, h);
                while hi - lo > 1e-13 {
                    let mid = 0.5 * (lo + hi);
                    let xm = self.rk4(me, mid)?;
                    let zm = self.at(me, self.t + mid, &xm)?;
                    if self.z.iter().zip(&zm).any(|(&a, &b)| crossed(a, b)) {
                        hi = mid;
                    } else {
                        lo = mid;
                    }
                }
                let xe = self.rk4(me, hi)?;
                self.at(me, self.t + hi, &xe)?;
                (hi, xe)
            } else {
                (h, x1)
            };
            let (st, enter, terminate) = me.completed_step();
            me.ok(st, "CompletedIntegratorStep", 0)?;
            if enter || terminate {
                return Err(format!(
                    "CompletedIntegratorStep: enterEventMode {enter}, terminateSimulation \
                     {terminate} at t = {}",
                    self.t + h
                ));
            }
            self.t += h;
            self.x = x1;
            let time_event = self.next.is_some_and(|te| te <= self.t + 1e-12);
            if hit {
                self.log.events.push(self.t);
            }
            if hit || time_event {
                self.event(me)?;
            } else {
                self.z = me.z()?;
            }
        }
        Ok(())
    }
}

/// The outputs (scalar Float64 and Int32, in description order) as f64.
fn outputs(md: &ModelDescription) -> (Vec<u32>, Vec<u32>) {
    let pick = |ty: &str| -> Vec<u32> {
        md.variables
            .iter()
            .filter(|v| v.causality == "output" && v.ty == ty && v.is_scalar())
            .map(|v| v.vr)
            .collect()
    };
    (pick("Float64"), pick("Int32"))
}

fn me_row(me: &Me, md: &ModelDescription) -> Result<Vec<f64>, String> {
    let (f, i) = outputs(md);
    let mut row = me.get_f64(&f)?;
    row.extend(me.get_i32(&i)?.into_iter().map(f64::from));
    Ok(row)
}

/// The horizon and output step of the comparison.
fn grid(md: &ModelDescription) -> (f64, f64, f64) {
    let (t0, h) = experiment(md);
    let stop = md.stop_time.unwrap_or(t0 + HORIZON).min(t0 + HORIZON);
    (t0, stop, h.min((stop - t0) / OUTPUTS as f64))
}

/// The Model Exchange run on the output grid, with a state round trip in the middle.
fn me_run(fmu: &Extracted, api: &Api) -> Result<(Vec<Vec<f64>>, Log), String> {
    let md = &fmu.md;
    let (nx, nz) = sizes(md);
    let me = Me::new(api, fmu, nx, nz)?;
    if me.sizes()? != (nx, nz) {
        return Err(format!(
            "the instance reports {:?} states / indicators, the description ({nx}, {nz})",
            me.sizes()?
        ));
    }
    let (t0, stop, dt) = grid(md);
    let mut d = Driver::start(&me, t0)?;
    let mut rows = vec![me_row(&me, md)?];
    let n = ((stop - t0) / dt).round() as usize;
    let half = n / 2;
    for k in 1..=half {
        d.run_to(&me, t0 + k as f64 * dt)?;
        rows.push(me_row(&me, md)?);
    }
    // FMU state round trip: the second half twice, the second time from the saved state.
    let saved = me.get_state()?;
    let at_save = d.clone();
    let second = |d: &mut Driver| -> Result<Vec<Vec<f64>>, String> {
        let mut r = Vec::new();
        for k in half + 1..=n {
            d.run_to(&me, t0 + k as f64 * dt)?;
            r.push(me_row(&me, md)?);
        }
        Ok(r)
    };
    let first = second(&mut d)?;
    let log = d.log.clone();
    me.set_state(saved)?;
    let mut again = at_save;
    let repeat = second(&mut again)?;
    me.free_state(saved)?;
    let bits = |r: &[Vec<f64>]| -> Vec<Vec<u64>> {
        r.iter()
            .map(|row| row.iter().map(|x| x.to_bits()).collect())
            .collect()
    };
    if bits(&first) != bits(&repeat) || log != again.log {
        return Err("after GetFMUState / SetFMUState the run differs".into());
    }
    rows.extend(first);
    me.ok(me.terminate(), "Terminate", 0)?;
    Ok((rows, log))
}

/// The Co-Simulation run on the same grid.
fn cs_run(fmu: &Extracted) -> Result<Vec<Vec<f64>>, String> {
    let md = &fmu.md;
    let (t0, stop, dt) = grid(md);
    let n = ((stop - t0) / dt).round() as usize;
    let (f, i) = outputs(md);
    let row = |inst: &dyn Cs, ints: &dyn Fn(&[u32]) -> Vec<i32>| -> Result<Vec<f64>, String> {
        let mut r = inst.get_f64(&f)?;
        r.extend(ints(&i).into_iter().map(f64::from));
        Ok(r)
    };
    let mut rows = Vec::new();
    match md.fmi_version {
        2 => {
            let api = common::fmi2::Api::load(fmu)?;
            let inst = common::fmi2::Instance::new(&api, fmu, "cs")?;
            assert_eq!(inst.setup_experiment(t0), OK);
            assert_eq!(inst.enter_initialization_mode(), OK);
            assert_eq!(inst.exit_initialization_mode(), OK);
            let ints = |vrs: &[u32]| {
                let mut v = vec![0; vrs.len()];
                assert_eq!(inst.get_integer(vrs, &mut v), OK);
                v
            };
            rows.push(row(&inst, &ints)?);
            for k in 0..n {
                inst.step(t0 + k as f64 * dt, dt)?;
                rows.push(row(&inst, &ints)?);
            }
        }
        _ => {
            let api = common::fmi3::Api::load(fmu)?;
            let inst = common::fmi3::Instance::new(&api, fmu, "cs")?;
            assert_eq!(inst.enter_initialization_mode(t0), OK);
            assert_eq!(inst.exit_initialization_mode(), OK);
            let ints = |vrs: &[u32]| {
                let mut v = vec![0; vrs.len()];
                assert_eq!(inst.get_int32(vrs, &mut v), OK);
                v
            };
            rows.push(row(&inst, &ints)?);
            for k in 0..n {
                inst.step(t0 + k as f64 * dt, dt)?;
                rows.push(row(&inst, &ints)?);
            }
        }
    }
    Ok(rows)
}

#[test]
fn model_exchange_runs_agree_with_co_simulation() {
    for_each_fmu(&me_fmus(), |fmu| {
        let api = Api::load(fmu)?;
        let (me_rows, log) = me_run(fmu, &api)?;
        let cs_rows = cs_run(fmu)?;
        if me_rows.len() != cs_rows.len() {
            return Err(format!(
                "{} ME rows, {} CS rows",
                me_rows.len(),
                cs_rows.len()
            ));
        }
        let (t0, _, dt) = grid(&fmu.md);
        for (k, (a, b)) in me_rows.iter().zip(&cs_rows).enumerate() {
            for (j, (x, y)) in a.iter().zip(b).enumerate() {
                if !close(*x, *y, 1e-6) {
                    return Err(format!(
                        "t = {}: output {j} is {x} (ME) vs {y} (CS)",
                        t0 + k as f64 * dt
                    ));
                }
            }
        }
        match fmu.packed.model.as_str() {
            "BouncingBall" => {
                let first = (2.0f64 / 9.81).sqrt();
                match log.events.first() {
                    Some(&t) if (t - first).abs() < 1e-9 => {}
                    other => return Err(format!("first bounce at {other:?}, closed form {first}")),
                }
            }
            "Stair" => {
                let want: Vec<Option<f64>> = (1..=4).map(|k| Some(f64::from(k))).collect();
                if log.next_times != want {
                    return Err(format!(
                        "nextEventTime announcements {:?}, want {want:?}",
                        log.next_times
                    ));
                }
            }
            _ => {}
        }
        eprintln!(
            "  {}: {} rows agree with CS; {} state events",
            fmu.label(),
            me_rows.len(),
            log.events.len()
        );
        Ok(())
    });
}

/// The model's equations at states `x` (derivatives' order) and the parameters' defaults.
fn equations(model: &str, x: &[f64], inputs: &[f64]) -> Vec<f64> {
    match model {
        "Dahlquist" => vec![-x[0]],
        "VanDerPol" => vec![x[1], (1.0 - x[0] * x[0]) * x[1] - x[0]],
        "BouncingBall" => vec![x[1], -9.81],
        // x, v, x_int, Fc_int with m = 1, c = 1, d = 0.1, cc = dc = 0; inputs F, x_in, v_in.
        "Oscillator" => vec![x[1], inputs[0] - x[0] - 0.1 * x[1], x[0], 0.0],
        "Robertson" => {
            let (r1, r2, r3) = (0.04 * x[0], 1e4 * x[1] * x[2], 3e7 * x[1] * x[1]);
            vec![-r1 + r2, r1 - r2 - r3, r3]
        }
        _ => Vec::new(),
    }
}

#[test]
fn derivatives_are_the_equations_and_jacobians_match_finite_differences() {
    for_each_fmu(&me_fmus(), |fmu| {
        let md = &fmu.md;
        let api = Api::load(fmu)?;
        let (nx, nz) = sizes(md);
        let me = Me::new(&api, fmu, nx, nz)?;
        let (t0, _) = experiment(md);
        Driver::start(&me, t0)?;
        let model = fmu.packed.model.as_str();
        let x: Vec<f64> = (0..nx)
            .map(|i| match model {
                "Robertson" => [0.9, 2e-5, 0.09998][i],
                _ => 0.7 - 0.4 * i as f64,
            })
            .collect();
        // Inputs set in Continuous-Time Mode act at once.
        let inputs: Vec<u32> = ["F", "x_in", "v_in"]
            .iter()
            .filter_map(|n| md.var(n).filter(|v| v.causality == "input").map(|v| v.vr))
            .collect();
        let u = [2.0, 0.3, 0.1];
        if !inputs.is_empty() {
            me.ok(me.set_f64(&inputs, &u[..inputs.len()]), "set inputs", 0)?;
        }
        let dx = me.rhs(t0 + 0.25, &x)?;
        let want = equations(model, &x, &u);
        if dx.len() != want.len() || dx.iter().zip(&want).any(|(a, b)| !close(*a, *b, 1e-12)) {
            return Err(format!("derivatives at {x:?}: {dx:?}, equations {want:?}"));
        }
        let (st, nominals) = me.nominals();
        me.ok(st, "GetNominalsOfContinuousStates", 0)?;
        if nominals.iter().any(|n| n.is_nan() || *n <= 0.0) {
            return Err(format!("nominals {nominals:?}"));
        }
        // Jacobian column by column against central differences of GetDerivatives.
        let ders: Vec<u32> = md.derivatives.iter().map(|d| d.vr).collect();
        for (j, &s) in state_vrs(md).iter().enumerate() {
            me.rhs(t0 + 0.25, &x)?;
            let col = me.directional_derivative(&ders, &[s], &[1.0])?;
            let h = 1e-6 * x[j].abs().max(nominals[j]);
            let (mut xp, mut xm) = (x.clone(), x.clone());
            xp[j] += h;
            xm[j] -= h;
            let (fp, fm) = (me.rhs(t0 + 0.25, &xp)?, me.rhs(t0 + 0.25, &xm)?);
            for i in 0..nx {
                let fd = (fp[i] - fm[i]) / (2.0 * h);
                if (col[i] - fd).abs() > 1e-5 * fd.abs().max(1.0) {
                    return Err(format!(
                        "d der {i} / d state {j}: {} vs finite differences {fd}",
                        col[i]
                    ));
                }
            }
        }
        Ok(())
    });
}

#[test]
fn bouncing_ball_event_iteration_reverses_the_velocity() {
    let fmus: Vec<_> = me_fmus()
        .into_iter()
        .filter(|p| p.model == "BouncingBall")
        .collect();
    for_each_fmu(&fmus, |fmu| {
        let api = Api::load(fmu)?;
        let me = Me::new(&api, fmu, 2, 1)?;
        let mut d = Driver::start(&me, 0.0)?;
        let z0 = d.z[0];
        // To just past the landing: the indicator has crossed, the event is not handled yet.
        let t1 = (2.0f64 / 9.81).sqrt() + 1e-7;
        let x1 = vec![1.0 - 0.5 * 9.81 * t1 * t1, -9.81 * t1];
        let z1 = d.at(&me, t1, &x1)?;
        if !(z0 > 0.0 && z1[0] < 0.0) {
            return Err(format!("indicator {z0} -> {:?} does not cross", z1));
        }
        d.t = t1;
        d.x = x1.clone();
        let (st, _, _) = me.completed_step();
        me.ok(st, "CompletedIntegratorStep", 0)?;
        d.event(&me)?;
        let e = me.get_f64(&[fmu.md.vr("e")])?[0];
        if d.x != vec![0.0, -e * x1[1]] {
            return Err(format!(
                "after the bounce (h, v) = {:?}, want (0, {})",
                d.x,
                -e * x1[1]
            ));
        }
        Ok(())
    });
}

#[test]
fn model_exchange_misuse_is_refused() {
    for_each_fmu(&me_fmus(), |fmu| {
        let md = &fmu.md;
        let api = Api::load(fmu)?;
        let (nx, nz) = sizes(md);
        let me = Me::new(&api, fmu, nx, nz)?;
        let refused = |st: i32, what: &str, from: usize| -> Result<(), String> {
            if st != ERROR {
                return Err(format!("{what} returned {st}, want Error"));
            }
            if me.log.len() == from {
                return Err(format!("{what} returned Error without a log message"));
            }
            Ok(())
        };
        let from = me.log.len();
        refused(
            me.derivatives().0,
            "GetDerivatives before initialization",
            from,
        )?;
        me.initialize(0.0)?;
        let from = me.log.len();
        refused(
            me.set_states(&vec![0.0; nx]),
            "SetContinuousStates in Event Mode",
            from,
        )?;
        let from = me.log.len();
        refused(
            me.do_step(0.0, 0.1),
            "DoStep on a Model Exchange instance",
            from,
        )?;
        let from = me.log.len();
        refused(me.enter_event_mode(), "EnterEventMode in Event Mode", from)?;
        me.iterate()?;
        me.ok(
            me.enter_continuous_time_mode(),
            "EnterContinuousTimeMode",
            0,
        )?;
        let from = me.log.len();
        refused(
            me.update().0,
            "event iteration in Continuous-Time Mode",
            from,
        )?;
        let from = me.log.len();
        refused(
            me.set_states(&vec![0.0; nx + 1]),
            "SetContinuousStates with nx + 1 states",
            from,
        )?;
        let from = me.log.len();
        refused(me.set_time(f64::NAN), "SetTime(NaN)", from)?;
        Ok(())
    });
}
