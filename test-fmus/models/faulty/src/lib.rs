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
//!
//! The failures from 5 on take the importer's process with them, as foreign code can: in the
//! `doStep` that reaches `fail_at`, 5 dereferences a null pointer (SIGSEGV), 6 calls `abort()`
//! (SIGABRT), 7 calls `exit(3)`, 8 never returns (a busy loop), 11 recurses until the stack
//! overflows (SIGSEGV on the guard page; Rust's handler reports it and aborts). 9 makes the
//! output x NaN from `fail_at` on (the step returns OK); 10 leaks 64 MiB (touched, so resident)
//! in every step from `fail_at` on. 12 dereferences a null pointer when the instance is freed
//! (`fmi*FreeInstance`, after a run that went well), 13 in the library's finaliser (when it is
//! unloaded, or at process exit), as FMUs exported from Python do.

use fmu_kit::{Context, Experiment, Model, Status, StepFailure, Values, Variable};

/// The state, output.
pub const X: u32 = 1;
/// der(x).
pub const DER_X: u32 = 2;
/// Which failure to simulate (0 none, 1 Discard, 2 Error, 3 Fatal, 4 request termination,
/// 5 segfault, 6 abort, 7 exit, 8 endless loop, 9 NaN output, 10 leak, 11 stack overflow,
/// 12 segfault in `fmi*FreeInstance`, 13 segfault in the library's finaliser).
pub const FAILURE: u32 = 3;
/// When to fail.
pub const FAIL_AT: u32 = 4;

/// The failure modes, as values of the parameter `failure`.
pub mod mode {
    pub const DISCARD: i32 = 1;
    pub const ERROR: i32 = 2;
    pub const FATAL: i32 = 3;
    pub const TERMINATE: i32 = 4;
    pub const SEGFAULT: i32 = 5;
    pub const ABORT: i32 = 6;
    pub const EXIT: i32 = 7;
    pub const ENDLESS_LOOP: i32 = 8;
    pub const NAN: i32 = 9;
    pub const LEAK: i32 = 10;
    pub const STACK_OVERFLOW: i32 = 11;
    pub const SEGFAULT_ON_FREE: i32 = 12;
    pub const SEGFAULT_ON_UNLOAD: i32 = 13;
}

/// Bytes leaked per step by the leak mode.
pub const LEAK_PER_STEP: usize = 64 << 20;
/// The faulty model; remembers whether it is to crash when freed.
#[derive(Default)]
pub struct Faulty {
    crash_on_free: std::sync::atomic::AtomicBool,
}

impl Drop for Faulty {
    /// Runs inside `fmi*FreeInstance`.
    fn drop(&mut self) {
        if *self.crash_on_free.get_mut() {
            crash::segfault();
        }
    }
}

/// Set by an instance with `failure = 13`: the library's finaliser crashes.
static CRASH_ON_UNLOAD: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The library's finaliser (run by `dlclose` or at process exit).
extern "C" fn finalise() {
    if CRASH_ON_UNLOAD.load(std::sync::atomic::Ordering::SeqCst) {
        crash::segfault();
    }
}

#[used]
#[link_section = ".fini_array"]
static FINALISE: extern "C" fn() = finalise;

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
                .max(13.0)
                .description(
                    "Failure to simulate: 0 none, 1 Discard, 2 Error, 3 Fatal, \
                     4 request termination, 5 segfault, 6 abort, 7 exit, 8 endless loop, \
                     9 NaN output, 10 leak 64 MiB per step, 11 stack overflow, \
                     12 segfault in fmi*FreeInstance, 13 segfault in the library's finaliser",
                ),
            Variable::float64(FAIL_AT, "fail_at")
                .parameter()
                .start(0.5)
                .unit("s")
                .description("Time of the failure or termination request"),
        ]
    }

    fn initialize(&self, v: &mut Values, _cx: &Context) -> Result<(), String> {
        use std::sync::atomic::Ordering::SeqCst;
        match v.i32(FAILURE) {
            mode::SEGFAULT_ON_FREE => self.crash_on_free.store(true, SeqCst),
            mode::SEGFAULT_ON_UNLOAD => CRASH_ON_UNLOAD.store(true, SeqCst),
            _ => {}
        }
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
        v: &Values,
        _inputs: &fmu_kit::Inputs<'_>,
        t: f64,
        h: f64,
        x: &mut [f64],
    ) -> Result<(), String> {
        let reached = v.f64(FAIL_AT) <= t + h + 1e-9 * v.f64(FAIL_AT).abs().max(1.0);
        match v.i32(FAILURE) {
            mode::NAN if reached => x[0] = f64::NAN,
            mode::LEAK if reached => {
                // Touched, so resident; seen by the optimiser, so not elided.
                let leak = std::hint::black_box(vec![1u8; LEAK_PER_STEP]);
                std::mem::forget(leak);
                x[0] += h;
            }
            _ => x[0] += h,
        }
        Ok(())
    }

    fn step_failure(&self, v: &Values, t: f64, t_end: f64) -> Option<StepFailure> {
        let at = v.f64(FAIL_AT);
        let tol = 1e-9 * at.abs().max(1.0);
        if !(t < at - tol && at <= t_end + tol) {
            return None;
        }
        // `None`: the termination request.
        let status = match v.i32(FAILURE) {
            mode::DISCARD => Some(Status::Discard),
            mode::ERROR => Some(Status::Error),
            mode::FATAL => Some(Status::Fatal),
            mode::TERMINATE => None,
            mode::SEGFAULT => crash::segfault(),
            mode::ABORT => std::process::abort(),
            mode::EXIT => std::process::exit(3),
            mode::ENDLESS_LOOP => crash::endless_loop(),
            mode::STACK_OVERFLOW => crash::overflow_stack(),
            _ => return None,
        };
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

/// The ways foreign code takes its process down.
mod crash {
    /// A store through a null pointer: SIGSEGV.
    pub fn segfault() -> ! {
        let null = std::hint::black_box(std::ptr::null_mut::<u64>());
        // SAFETY: not safe at all, on purpose: the FMU is meant to crash its process here.
        unsafe { null.write_volatile(1) };
        unreachable!("a store through a null pointer returned")
    }

    /// Never returns and keeps a core busy, as a solver stuck in a loop does.
    pub fn endless_loop() -> ! {
        loop {
            std::hint::spin_loop();
        }
    }

    /// Unbounded recursion with a frame the optimiser cannot remove.
    pub fn overflow_stack() -> ! {
        #[allow(unconditional_recursion)]
        fn deeper(depth: u64) -> u64 {
            let frame = std::hint::black_box([depth; 512]);
            deeper(frame[7] + 1) + frame[0]
        }
        let _ = deeper(std::hint::black_box(0));
        unreachable!("infinite recursion returned")
    }
}

fmu_kit::export_fmu!(Faulty);

#[cfg(test)]
mod tests;
