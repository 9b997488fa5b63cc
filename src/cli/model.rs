//! The options that decide how a model runs, shared by `cosimo run` and `cosimo check`: one
//! spelling and one meaning in both (docs/vocabulary.md).

use clap::Args;

use cosimo::fmu::description::Interface;
use cosimo::fmu::instance::InstanceOptions;
use cosimo::fmu::model_exchange::{SolverMethod, SolverOptions};
use cosimo::fmu::worker::WorkerOptions;
use cosimo::settings::control::Estimator;
use cosimo::settings::{AlgorithmKind, Overrides};
use cosimo::Error;

#[derive(Args)]
pub(crate) struct ModelArgs {
    /// Start time [s] (default: the FMU's default experiment, else 0).
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) start_time: Option<f64>,
    /// Stop time [s] (default: the FMU's default experiment, else start + 1).
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) stop_time: Option<f64>,
    /// Communication step size [s] (default: the default experiment's, else (stop - start) / 500).
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) step_size: Option<f64>,
    /// Interval between result rows [s] (default: the step size).
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) output_interval: Option<f64>,
    /// Most result rows the output grid may make; a run that would write more is refused
    /// before it starts [default: 100000000].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..), allow_negative_numbers = true)]
    pub(crate) max_rows: Option<u64>,
    /// A magnitude no coupling value, constraint multiplier or recorded Float value may
    /// exceed: a run that passes it has diverged and stops with a message naming the value
    /// (default: no bound; NaN and infinity, and correctors that diverge, stop a run anyway).
    #[arg(long, value_name = "X", allow_negative_numbers = true)]
    pub(crate) divergence_limit: Option<f64>,
    /// Relative tolerance passed to the FMU (default: the default experiment's).
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) tolerance: Option<f64>,
    /// Start value or parameter, NAME=VALUE (repeatable; in systems component.NAME=VALUE).
    /// Arrays: space-separated elements.
    #[arg(long = "start-value", value_name = "NAME=VALUE")]
    pub(crate) start_values: Vec<String>,
    /// Master algorithm for systems: jacobi, gauss-seidel, or implicit (predictor / corrector
    /// repeating each macro step from saved FMU states until the coupling equations hold).
    #[arg(long, value_parser = ["jacobi", "gauss-seidel", "implicit", "constraint", "rim"])]
    pub(crate) algorithm: Option<String>,
    /// Interface Jacobian of --algorithm implicit: system (one repeated macro step of every
    /// component per coupling variable) or components (each component repeats only its own
    /// step per own input, in parallel; direct feedthrough from the FMUs' directional
    /// derivatives; composed along the coupling graph).
    #[arg(long, value_parser = ["system", "components"])]
    pub(crate) jacobian: Option<String>,
    /// Extended coupling of --algorithm implicit (the stability thesis, Sect. 3.4) for the
    /// connections the system file marks "halfStep": derivative (the coupling condition's time
    /// derivative at each point, from the sources' output derivatives) or integral (its
    /// integral over each step, from the outputs the connections name as "sourceIntegral").
    #[arg(long, value_parser = ["none", "derivative", "integral"])]
    pub(crate) extension: Option<String>,
    /// Extrapolation order k of Float inputs in systems: 0 (hold) to 3 (with --adaptive: the
    /// highest order the order controller may choose).
    #[arg(long, visible_alias = "order", value_parser = clap::value_parser!(u8).range(0..=3), allow_negative_numbers = true)]
    pub(crate) extrapolation_order: Option<u8>,
    /// Control the macro-step size (and, unless --fixed-order, the order) with an error
    /// estimator; --step-size is the first step.
    #[arg(long)]
    pub(crate) adaptive: bool,
    /// Error estimator for --adaptive: ExLocal, ExMilne, ExSLocal (explicit), ImMilne, ImSLocal
    /// (implicit). Default: ExSLocal, or ImSLocal with --algorithm implicit.
    #[arg(long, value_parser = ["ExLocal", "ExMilne", "ExSLocal", "ImMilne", "ImSLocal"])]
    pub(crate) estimator: Option<String>,
    /// With --adaptive: keep the order given by --extrapolation-order instead of controlling it.
    #[arg(long)]
    pub(crate) fixed_order: bool,
    /// With --adaptive: largest macro step [s].
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub(crate) max_step: Option<f64>,
    /// With --adaptive: safety factor of the step-size controller (the paper recommends 2..6).
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) safety_factor: Option<f64>,
    /// Step components in parallel, each FMU on one thread for life: a short trial times the
    /// components' steps first and the run uses threads only where they pay (else it runs
    /// sequentially and says why).
    #[arg(long)]
    pub(crate) parallel: bool,
    /// Threads for --parallel, used without a trial (default: chosen by the trial, at most one
    /// per core).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    pub(crate) threads: usize,
    /// Host every FMU in a worker process (its own, unless --worker-processes): a crash, abort or
    /// exit of an FMU then ends the run (under check: fails its case alone) with a message
    /// naming the component, call and time, with the results so far kept.
    #[arg(long)]
    pub(crate) isolate: bool,
    /// Seconds an FMI call may take before its worker process is killed and the run ends with
    /// a message naming the call (puts every component into a worker process; a component's
    /// own callTimeout in a system file wins).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub(crate) call_timeout: Option<f64>,
    /// Memory limit of each worker process (address space), e.g. 512M or 2G; a worker that
    /// exceeds it dies and the run ends with a message saying so.
    #[arg(long, value_name = "SIZE")]
    pub(crate) worker_memory: Option<String>,
    /// Spread the FMUs that run in worker processes over N processes instead of one each
    /// (components naming a workerGroup keep theirs): with more FMUs than cores, fewer
    /// processes step much faster. A crash ends the run either way.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=4096), allow_negative_numbers = true)]
    pub(crate) worker_processes: Option<u64>,
    /// FMI 3: ask the FMU to return early at events and handle them in event mode.
    #[arg(long)]
    pub(crate) event_mode: bool,
    /// The interface of FMUs that have more than one: cs (Co-Simulation, the default), me
    /// (Model Exchange: cosimo integrates the model with --solver) or se (FMI 3 Scheduled
    /// Execution: cosimo activates the model partitions). A system file's component may
    /// choose its own ("interface").
    #[arg(long, value_parser = ["cs", "me", "se"])]
    pub(crate) interface: Option<String>,
    /// Integrator of Model Exchange components: bdf (variable-order BDF, for stiff models;
    /// the default) or rk45 (Tsitouras 5(4), explicit).
    #[arg(long, value_parser = ["bdf", "rk45"])]
    pub(crate) solver: Option<String>,
    /// Relative tolerance of the Model Exchange integrator (default: the experiment's
    /// tolerance, else 1e-6). Not `run --rtol`, which is the step-size controller's of
    /// --adaptive.
    #[arg(long, value_name = "RTOL", allow_negative_numbers = true)]
    pub(crate) solver_rtol: Option<f64>,
    /// Absolute tolerance of the Model Exchange integrator, times each state's nominal value
    /// (default: 1e-3 of the relative tolerance).
    #[arg(long, value_name = "ATOL", allow_negative_numbers = true)]
    pub(crate) solver_atol: Option<f64>,
    /// Record and pass on outputs that are NaN or infinite (by default such a value ends the
    /// run with an error naming the variable and the time).
    #[arg(long)]
    pub(crate) allow_non_finite: bool,
}

impl ModelArgs {
    /// The experiment options as library overrides (clap has checked their syntax); the
    /// step-size controller's tolerances are `run`'s own and come from the caller.
    pub(crate) fn overrides(&self) -> Overrides {
        use cosimo::settings::implicit::{Extension, JacobianMethod};
        Overrides {
            start: self.start_time,
            stop: self.stop_time,
            step: self.step_size,
            output_interval: self.output_interval,
            tolerance: self.tolerance,
            algorithm: self.algorithm.as_deref().and_then(AlgorithmKind::parse),
            extrapolation_order: self.extrapolation_order,
            parallel: self.parallel,
            jacobian: self.jacobian.as_deref().and_then(JacobianMethod::parse),
            extension: self.extension.as_deref().and_then(Extension::parse),
            adaptive: self.adaptive,
            estimator: self.estimator.as_deref().and_then(Estimator::parse),
            fixed_order: self.fixed_order,
            max_step: self.max_step,
            safety_factor: self.safety_factor,
            max_rows: self.max_rows,
            divergence_limit: self.divergence_limit,
            ..Overrides::default()
        }
    }

    /// The options of every FMU instance these options set (event mode, the Model Exchange
    /// integrator).
    pub(crate) fn instance(&self) -> InstanceOptions {
        InstanceOptions {
            event_mode: self.event_mode,
            solver: SolverOptions {
                method: self.solver.as_deref().and_then(SolverMethod::parse),
                rtol: self.solver_rtol,
                atol: self.solver_atol,
            },
            ..InstanceOptions::default()
        }
    }

    /// `--interface` as the library names it.
    pub(crate) fn interface(&self) -> Option<Interface> {
        self.interface.as_deref().and_then(Interface::parse)
    }

    /// `--call-timeout` and `--worker-memory` as worker options.
    pub(crate) fn worker(&self) -> Result<WorkerOptions, Error> {
        cosimo::request::worker_options(self.call_timeout, self.worker_memory.as_deref())
    }

    /// `--worker-processes` as a count.
    pub(crate) fn worker_processes(&self) -> Option<usize> {
        self.worker_processes
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
    }
}
