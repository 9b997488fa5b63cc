//! A system being run: its slaves, the values of its coupling variables and their history.
//!
//! The coupling variables are the connections: `u_c = scale_c * (source output) + shift_c`.
//! At every communication point [`Execution::exchange`] evaluates them in the coupling graph's
//! order, setting an input before any output that feeds through from it is read, and solving
//! algebraic loops (`loops.rs`). The history of past values feeds the extrapolation polynomials
//! of the stepping algorithms (`zoh.rs`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use super::exchange::{set_targets, ExchangePlan};
use super::inputs::TableInputs;
use super::neighbours::Neighbours;
use super::polynomial::MAX_DEGREE;
use super::pool::{split, Layout, Placement, Unit};
use super::record::{Cell, Recording, Row};
use crate::fmu::description::{Causality, VariableType};
use crate::fmu::instance::InstanceOptions;
use crate::fmu::values::apply_start_values;
use crate::fmu::worker::{self, WorkerOptions, WorkerProcess};
use crate::fmu::{Fmu, Interface, Slave, SlaveState, StateId, ValueReference};
use crate::system::graph::{self, CouplingGraph};
use crate::system::resolve::{resolve, ResolvedSystem};
use crate::system::System;
use crate::table::Table;
use crate::{Error, Result};

/// Number of past communication points kept per coupling variable.
pub const HISTORY: usize = MAX_DEGREE + 1;

/// Options of a run that are not part of the system itself.
#[derive(Clone, Default)]
pub struct RunOptions {
    /// Options for every instance (logging, FMI call tracing, event mode, ...).
    pub instance: InstanceOptions,
    /// Threads of a `parallel` run: 0 lets a trial of the components' step costs choose (up to
    /// one per core, or none where threads do not pay); N uses N, capped by the component count
    /// (see `parallel.rs`).
    pub threads: usize,
    /// Variables to record as `component.variable` (empty: every output of every component).
    pub record: Vec<String>,
    /// One FMU run alone (fmusim's convention): result columns, `record` names and input
    /// columns are the FMU's variable names, without the component prefix.
    pub bare_names: bool,
    /// Inputs driven from a table, its columns named `component.variable` (or the variable
    /// alone with `bare_names`).
    pub inputs: Option<Arc<Table>>,
    /// FMUs the caller has opened already, reused instead of opening their files again.
    pub opened: Vec<Arc<Fmu>>,
    /// Record and pass on outputs that are NaN or infinite instead of ending the run.
    pub allow_non_finite: bool,
    /// Host every component in a worker process (`--isolate`).
    pub isolate: bool,
    /// How worker processes are started and watched; a call timeout here applies to every
    /// component without its own and puts every component into a worker.
    pub worker: WorkerOptions,
    /// Spread the isolated components without a `workerGroup` over this many worker processes
    /// (`--worker-processes`; `None`: a process each).
    pub worker_processes: Option<usize>,
    /// The interface of the FMUs that have both, for components that choose none
    /// (`--interface`; `None`: Co-Simulation).
    pub interface: Option<Interface>,
    /// Under `mpirun`: the ranks and which of them owns each component (`None`: one process).
    pub ranks: Option<super::transport::Ranks>,
    /// Under `mpirun`: time every component's steps over the whole run on its owner
    /// (`RunStatistics::component_seconds`; `--partition-out`).
    pub time_components: bool,
}

/// `--interface` and the solver options take effect or are refused: `--interface` needs an
/// FMU with both interfaces to choose between, the solver options a Model Exchange component.
fn refuse_idle_interface_options(
    system: &System,
    fmus: &[Arc<Fmu>],
    options: &RunOptions,
) -> Result<()> {
    if let Some(interface) = options.interface {
        let chooses = fmus.iter().zip(&system.components).any(|(fmu, component)| {
            let file = fmu.file_description();
            let interfaces = [
                file.co_simulation.is_some(),
                file.model_exchange.is_some(),
                file.scheduled_execution.is_some(),
            ];
            component.interface.is_none() && interfaces.iter().filter(|&&has| has).count() > 1
        });
        if !chooses {
            return Err(Error::Usage(format!(
                "--interface {} chooses between the interfaces of FMUs that have both, and no \
                 component here has both (or each names its own): drop --interface",
                match interface {
                    Interface::CoSimulation => "cs",
                    Interface::ModelExchange => "me",
                    Interface::ScheduledExecution => "se",
                }
            )));
        }
    }
    if options.instance.solver.given()
        && !fmus
            .iter()
            .any(|f| f.interface() == Some(Interface::ModelExchange))
    {
        return Err(Error::Usage(
            "--solver, --solver-rtol and --solver-atol set the integrator of Model Exchange \
             components, and this run has none (add --interface me for FMUs that have both)"
                .into(),
        ));
    }
    Ok(())
}

/// Where a component runs when it runs in a worker process.
struct Hosting {
    /// Index into the worker processes of the run.
    process: usize,
    /// The component's slot in that process.
    slot: usize,
    /// The component's call timeout (and the process's program, memory limit and spin).
    options: WorkerOptions,
}

/// The components (indices) of each worker process of a run.
type WorkerGroups = Vec<Vec<usize>>;

/// Where each component runs (`None`: in this process) and the components of each worker
/// process (see [`crate::system::Component::isolate`] and
/// [`crate::system::Component::worker_group`]).
fn hosts(
    system: &System,
    fmus: &[Arc<Fmu>],
    options: &RunOptions,
) -> Result<(Vec<Option<Hosting>>, WorkerGroups)> {
    let mut instances: HashMap<&PathBuf, usize> = HashMap::new();
    for component in &system.components {
        *instances.entry(&component.fmu).or_default() += 1;
    }
    let once_per_process = |i: usize| {
        fmus[i]
            .description()
            .co_simulation
            .as_ref()
            .is_some_and(|cs| cs.can_be_instantiated_only_once_per_process)
    };
    let mut isolated = Vec::with_capacity(system.components.len());
    let mut timeouts = Vec::with_capacity(system.components.len());
    for (i, component) in system.components.iter().enumerate() {
        let shared = once_per_process(i) && instances[&component.fmu] > 1;
        let timeout = match component.call_timeout {
            Some(seconds) => Some(crate::settings::call_timeout(seconds).map_err(|why| {
                Error::Usage(format!(
                    "component \"{}\": callTimeout {seconds}: {why}",
                    component.name
                ))
            })?),
            None => options.worker.call_timeout,
        };
        let wanted = timeout.is_some() || component.worker_group.is_some();
        let in_worker = match component.isolate {
            _ if options.isolate => true,
            Some(false) if component.call_timeout.is_some() => {
                return Err(Error::Usage(format!(
                    "component \"{}\": a callTimeout is enforced by killing the component's worker process, but isolate is false; drop one of them",
                    component.name
                )))
            }
            Some(false) if component.worker_group.is_some() => {
                return Err(Error::Usage(format!(
                    "component \"{}\": workerGroup names a worker process to host it, but isolate is false; drop one of them",
                    component.name
                )))
            }
            Some(false) if shared => {
                return Err(Error::Usage(format!(
                    "component \"{}\": {} declares canBeInstantiatedOnlyOncePerProcess and the system has {} instances of it, so each needs a worker process, but isolate is false",
                    component.name,
                    component.fmu.display(),
                    instances[&component.fmu]
                )))
            }
            Some(isolate) => isolate || wanted,
            None => shared || wanted,
        };
        isolated.push(in_worker);
        timeouts.push(timeout);
    }
    let groups = worker_groups(system, &isolated, &once_per_process, options)?;
    let mut hosts: Vec<Option<Hosting>> = (0..system.components.len()).map(|_| None).collect();
    // Workers spin for the next call only while each, and the master, has a core to itself.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let spin = if groups.len() < cores {
        worker::MAX_SPIN
    } else {
        std::time::Duration::ZERO
    };
    for (process, members) in groups.iter().enumerate() {
        for (slot, &i) in members.iter().enumerate() {
            let mut worker = WorkerOptions {
                call_timeout: timeouts[i],
                ..options.worker.clone()
            };
            worker.worker_spin.get_or_insert(spin);
            hosts[i] = Some(Hosting {
                process,
                slot,
                options: worker,
            });
        }
    }
    Ok((hosts, groups))
}

/// The components of each worker process: the components naming one `workerGroup` together,
/// the other isolated ones each alone or, with `--worker-processes N`, spread in turn over N
/// processes (never two instances of an FMU that may be instantiated only once per process in
/// one; such an instance that fits none of the N gets a process of its own).
fn worker_groups(
    system: &System,
    isolated: &[bool],
    once_per_process: &dyn Fn(usize) -> bool,
    options: &RunOptions,
) -> Result<WorkerGroups> {
    let components = &system.components;
    let clashes = |group: &[usize], i: usize| {
        once_per_process(i)
            && group
                .iter()
                .any(|&j| components[j].fmu == components[i].fmu)
    };
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut named: HashMap<&str, usize> = HashMap::new();
    let mut spread: Vec<usize> = Vec::new();
    let mut next = 0;
    let isolated_count = isolated.iter().filter(|x| **x).count();
    for (i, component) in components.iter().enumerate() {
        if !isolated[i] {
            continue;
        }
        let target = match (&component.worker_group, options.worker_processes) {
            (Some(name), _) => {
                let g = *named.entry(name.as_str()).or_insert_with(|| {
                    groups.push(Vec::new());
                    groups.len() - 1
                });
                if clashes(&groups[g], i) {
                    return Err(Error::Usage(format!(
                        "component \"{}\": {} declares canBeInstantiatedOnlyOncePerProcess, so its instances cannot share the worker process \"{name}\"; give them different workerGroup names",
                        component.name,
                        component.fmu.display()
                    )));
                }
                g
            }
            (None, Some(n)) => {
                // The n processes, made as components need them, taken in turn.
                while spread.len() < n.min(isolated_count) {
                    groups.push(Vec::new());
                    spread.push(groups.len() - 1);
                }
                let fitting = (0..spread.len())
                    .map(|k| spread[(next + k) % spread.len()])
                    .find(|&g| !clashes(&groups[g], i));
                next = (next + 1) % spread.len().max(1);
                match fitting {
                    Some(g) => g,
                    None => {
                        groups.push(Vec::new());
                        groups.len() - 1
                    }
                }
            }
            (None, None) => {
                groups.push(Vec::new());
                groups.len() - 1
            }
        };
        groups[target].push(i);
        if groups[target].len() > worker::MAX_SLOTS {
            return Err(Error::Usage(format!(
                "component \"{}\": a worker process hosts at most {} components; use more worker processes",
                component.name,
                worker::MAX_SLOTS
            )));
        }
    }
    groups.retain(|g| !g.is_empty());
    if groups.is_empty() {
        for (flag, what) in [
            (
                options.worker.memory_limit.is_some(),
                "--worker-memory limits",
            ),
            (
                options.worker_processes.is_some(),
                "--worker-processes spreads components over",
            ),
        ] {
            if flag {
                return Err(Error::Usage(format!(
                    "{what} worker processes, but no component runs in one: add --isolate (or \"isolate\": true to a component)"
                )));
            }
        }
    } else if options.worker_processes.is_some() && spread.is_empty() {
        return Err(Error::Usage(
            "--worker-processes spreads the isolated components over worker processes, but every one names its workerGroup".into(),
        ));
    }
    Ok(groups)
}

/// Values of the coupling variables at the last communication points, newest first.
pub struct History {
    times: [f64; HISTORY],
    len: usize,
    values: Vec<[f64; HISTORY]>,
}

impl History {
    fn new(connections: usize) -> History {
        History {
            times: [0.0; HISTORY],
            len: 0,
            values: vec![[0.0; HISTORY]; connections],
        }
    }

    /// Overwrite the latest point when it is at `time` (values changed at a clock tick), else
    /// add one.
    fn replace_latest(&mut self, time: f64, values: &[f64]) {
        if self.len == 0 || self.times[0] != time {
            return self.push(time, values);
        }
        for (row, &value) in self.values.iter_mut().zip(values) {
            row[0] = value;
        }
    }

    fn push(&mut self, time: f64, values: &[f64]) {
        self.times.copy_within(0..HISTORY - 1, 1);
        self.times[0] = time;
        for (row, &value) in self.values.iter_mut().zip(values) {
            row.copy_within(0..HISTORY - 1, 1);
            row[0] = value;
        }
        self.len = (self.len + 1).min(HISTORY);
    }

    /// Number of stored points.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True before the first point.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The stored times, newest first.
    pub fn times(&self) -> &[f64] {
        &self.times[..self.len]
    }

    /// The stored values of one connection, newest first.
    pub fn values(&self, connection: usize) -> &[f64] {
        &self.values[connection][..self.len]
    }
}

/// One input of a component driven by a connection.
#[derive(Debug, Clone)]
pub struct InputBinding {
    pub connection: usize,
    pub vr: ValueReference,
    pub var_type: VariableType,
    pub order: u8,
}

/// What the master does with one component every macro step.
#[derive(Debug, Clone, Default)]
pub struct ComponentPlan {
    /// Float64 inputs grouped by extrapolation order: (order, value references, connections).
    pub float_groups: Vec<(u8, Vec<ValueReference>, Vec<usize>)>,
    /// Inputs of other types (held between communication points).
    pub other_inputs: Vec<InputBinding>,
    /// Float64 outputs that are sources of connections, read right after each step.
    pub float_outputs: Vec<ValueReference>,
    /// The connections fed by `float_outputs` (same order).
    pub float_output_connections: Vec<usize>,
    /// Sources of other types: (connection, value reference, type).
    pub other_outputs: Vec<(usize, ValueReference, VariableType)>,
    /// The part of `float_outputs` (and their connections) and of `other_outputs` a Jacobi
    /// step reads: the sources that are not read again at the communication point anyway
    /// (`Execution::fresh_read`), so that a Jacobi step makes no FMI call whose answer it
    /// drops.
    pub jacobi_float_outputs: Vec<ValueReference>,
    pub jacobi_float_output_connections: Vec<usize>,
    pub jacobi_other_outputs: Vec<(usize, ValueReference, VariableType)>,
    /// Sub-steps per macro step.
    pub sub_steps: u32,
    /// Scratch floats this component needs (Taylor coefficients and output values).
    pub scratch: usize,
    /// Pass on NaN and infinite sources instead of failing (`RunOptions::allow_non_finite`).
    pub allow_non_finite: bool,
    /// FMI 3 output clocks (with their names), checked when a step stops for an event:
    /// cosimo ticks clocks at communication points only (`clocks.rs`).
    pub output_clocks: (Vec<ValueReference>, Vec<String>),
}

/// A system instantiated and ready to step.
pub struct Execution {
    pub resolved: ResolvedSystem,
    pub graph: CouplingGraph,
    pub placement: Placement,
    pub plans: Vec<ComponentPlan>,
    /// Current value of each coupling variable (consistent at communication points).
    pub values: Vec<f64>,
    /// Source values read right after the last step (f64 bits), written by the step tasks.
    pub after_step: Vec<AtomicU64>,
    /// For each connection: its source output feeds through from a connected input, so it must
    /// be read again after those inputs are set at a communication point.
    pub fresh_read: Vec<bool>,
    pub history: History,
    /// Set by a step task when an FMU asks to terminate.
    pub terminate_requested: AtomicBool,
    /// Current time.
    pub time: f64,
    /// Recorded variables, per component (index, recording).
    pub(crate) recordings: Vec<(usize, Recording)>,
    /// The exchange after a step, resolved into accesses per component.
    pub(crate) exchange_plan: ExchangePlan,
    /// Result columns without the component prefix (one FMU run alone).
    bare_names: bool,
    /// Outputs may be NaN or infinite (`RunOptions::allow_non_finite`).
    pub allow_non_finite: bool,
    /// Inputs from a table, per component (mostly empty).
    pub(crate) table_inputs: Vec<TableInputs>,
    /// Saved FMU states for repeating a macro step, per component (allocated on first use).
    state_ids: Vec<Option<StateId>>,
    /// Step control sets the extrapolation order of every Float64 input.
    pub order_override: Option<u8>,
    /// A fixed-step implicit macro step whose corrector does not converge is repeated as four
    /// steps of H / 4 (the paper's remedy); off, it is an error (the stability analyser measures
    /// the one-step map of H, which a split step is not).
    pub split_unconverged_steps: bool,
    /// The implicit corrector goes on after meeting its tolerance while the residual still
    /// halves, to rounding (the stability analyser: the map of the scheme, not of its
    /// tolerance).
    pub corrector_to_rounding: bool,
    /// Gauss-Seidel: which components already stepped in the current macro step.
    pub(crate) stepped: Vec<bool>,
    /// A startup macro step taken in parts ([`Execution::step_part`]): the coupling values at
    /// its end from the corrector passes before the last, which the parts interpolate through.
    pub(crate) part_corrector: Option<Vec<f64>>,
    /// State variables the error estimators read: (component, value reference).
    pub probes: Vec<(usize, ValueReference)>,
    /// The implicit scheme's reusable interface Jacobian.
    pub implicit_state: super::implicit::ImplicitState,
    /// Newton iterations of the implicit corrector so far.
    pub corrector_iterations: u64,
    /// Event iterations (FMI 3 event mode) and early returns inside macro steps so far.
    pub events: AtomicU64,
    pub early_returns: AtomicU64,
    /// How a `parallel` run was placed on threads, and why.
    pub parallel: Option<super::parallel::ParallelPlacement>,
    /// Every component steps in a worker process (checked once, not every step).
    pub(crate) all_in_background: bool,
    /// Under `mpirun`: the ranks, and which owns each component (see `transport.rs`).
    pub(crate) ranks: Option<super::transport::Ranks>,
    /// Under `mpirun`, where only the targets' owners need the coupling values: what this rank
    /// sends and receives point to point (`neighbours.rs`; `None`: the collectives).
    pub(crate) neighbours: Option<super::neighbours::Neighbours>,
    /// The FMI 3 clocks of the system (`None` without clocks: nothing to tick).
    pub(crate) clocks: Option<super::clocks::Clocks>,
}

impl Execution {
    /// Open every FMU once (one unpack and one library per file), the view of each component
    /// through its interface, in component order.
    pub(crate) fn open_fmus(system: &System, options: &RunOptions) -> Result<Vec<Arc<Fmu>>> {
        // Systems built in code skip the readers' checks: make the same ones here.
        system
            .experiment
            .check(crate::settings::Labels::default())
            .map_err(Error::Usage)?;
        let mut opened: HashMap<PathBuf, Arc<Fmu>> = options
            .opened
            .iter()
            .map(|fmu| (fmu.source().to_path_buf(), fmu.clone()))
            .collect();
        let mut fmus = Vec::with_capacity(system.components.len());
        let mut views: HashMap<(PathBuf, Interface), Arc<Fmu>> = HashMap::new();
        for component in &system.components {
            let fmu = match opened.get(&component.fmu) {
                Some(fmu) => fmu.clone(),
                None => {
                    let fmu = Arc::new(
                        Fmu::open(&component.fmu).map_err(|e| in_component(&component.name, e))?,
                    );
                    opened.insert(component.fmu.clone(), fmu.clone());
                    fmu
                }
            };
            // The component's own choice must be there; --interface only picks between two.
            let file = fmu.file_description();
            let has_both = file.co_simulation.is_some() && file.model_exchange.is_some();
            let wanted = component
                .interface
                .or(options.interface.filter(|_| has_both));
            let fmu = match wanted {
                Some(interface) if fmu.interface() != Some(interface) => {
                    match views.get(&(component.fmu.clone(), interface)) {
                        Some(view) => view.clone(),
                        None => {
                            // Naming an interface the FMU lacks is the user's choice to fix.
                            let view = Arc::new(fmu.through(interface).map_err(|e| {
                                Error::Usage(format!("component \"{}\": {e}", component.name))
                            })?);
                            views.insert((component.fmu.clone(), interface), view.clone());
                            view
                        }
                    }
                }
                _ => fmu,
            };
            fmus.push(fmu);
        }
        refuse_idle_interface_options(system, &fmus, options)?;
        if options.instance.event_mode
            && !fmus.iter().any(|f| {
                f.description()
                    .co_simulation
                    .as_ref()
                    // A Scheduled Execution component's Event Mode is cosimo's own.
                    .is_some_and(|cs| cs.has_event_mode && !cs.schedules_own_clocks)
            })
        {
            return Err(Error::Usage(
                "--event-mode asks FMI 3 FMUs to return early for events, but no component is an FMI 3 FMU with hasEventMode=\"true\"".into(),
            ));
        }
        Ok(fmus)
    }

    /// Whether any component runs in a worker process (isolated, with a call timeout or a
    /// worker group).
    pub(crate) fn hosts_any(
        system: &System,
        fmus: &[Arc<Fmu>],
        options: &RunOptions,
    ) -> Result<bool> {
        Ok(hosts(system, fmus, options)?.0.iter().any(Option::is_some))
    }

    /// Resolve the system against the model descriptions of `fmus` (from
    /// [`Execution::open_fmus`]) and instantiate every component where `layout` puts it.
    pub(crate) fn instantiate_on(
        system: &System,
        options: &RunOptions,
        fmus: &[Arc<Fmu>],
        layout: &Layout,
    ) -> Result<Execution> {
        let descriptions = fmus.iter().map(|f| f.description().clone()).collect();
        let resolved = resolve(system, descriptions)?;
        let graph = graph::build(&resolved);
        let fresh_read = fresh_reads(&resolved);
        let mut plans = plan_components(&resolved);
        for plan in &mut plans {
            plan.allow_non_finite = options.allow_non_finite;
            for (&vr, &c) in plan
                .float_outputs
                .iter()
                .zip(&plan.float_output_connections)
            {
                if !fresh_read[c] {
                    plan.jacobi_float_outputs.push(vr);
                    plan.jacobi_float_output_connections.push(c);
                }
            }
            plan.jacobi_other_outputs = plan
                .other_outputs
                .iter()
                .filter(|(c, _, _)| !fresh_read[*c])
                .copied()
                .collect();
        }
        if options.bare_names && resolved.components.len() != 1 {
            return Err(Error::Usage(format!(
                "bare variable names need exactly one component, not {}",
                resolved.components.len()
            )));
        }
        let recordings = recordings(&resolved, &options.record, options.bare_names)?;
        let table_inputs = match &options.inputs {
            Some(table) => table_inputs(&resolved, table, options.bare_names)?,
            None => vec![TableInputs::none(); resolved.components.len()],
        };
        let clocks = super::clocks::Clocks::new(&resolved, options.ranks.is_some(), &table_inputs)?;

        let (hosts, groups) = hosts(system, fmus, options)?;
        let mut processes = Vec::with_capacity(groups.len());
        for members in &groups {
            let names: Vec<String> = members
                .iter()
                .map(|&i| resolved.components[i].name.clone())
                .collect();
            let hosting = hosts[members[0]].as_ref().map(|h| &h.options);
            processes.push(WorkerProcess::spawn(
                &names,
                hosting.unwrap_or(&options.worker),
            )?);
        }
        // Under mpirun without the user's partition: contiguous runs of the coupling order.
        let ranks = options.ranks.clone().map(|mut ranks| {
            if ranks.owner.is_empty() {
                let count = resolved.components.len();
                let size = ranks.transport.size();
                ranks.owner = split(&graph.gauss_seidel_order, &vec![1.0; count], size);
            }
            ranks
        });
        let factory = |i: usize| -> Result<Box<dyn Slave>> {
            let name = &resolved.components[i].name;
            if ranks.as_ref().is_some_and(|r| !r.owns(i)) {
                let description = fmus[i].description().clone();
                return Ok(Box::new(super::stand_in::StandIn::new(name, description)));
            }
            match &hosts[i] {
                None => fmus[i].instantiate(name, options.instance.clone()),
                Some(hosting) => processes[hosting.process]
                    .instantiate(
                        hosting.slot,
                        &fmus[i],
                        options.instance.clone(),
                        &hosting.options,
                    )
                    .map(|slave| Box::new(slave) as Box<dyn Slave>),
            }
            .and_then(|slave| crate::system::resolve::with_elements(slave, &resolved.components[i]))
            .map_err(|e| in_component(name, e))
        };
        let count = resolved.components.len();
        let names: Vec<String> = resolved.components.iter().map(|c| c.name.clone()).collect();
        let layout = match layout {
            Layout::Spread { threads } => Layout::Threads {
                threads: *threads,
                thread_of: split(&graph.gauss_seidel_order, &vec![1.0; count], *threads),
            },
            other => other.clone(),
        };
        let mut placement = Placement::new(&names, &layout, &factory)?;
        let sizes: Vec<usize> = plans.iter().map(|p| p.scratch).collect();
        placement.run_all(&|i, unit: &mut Unit| {
            unit.floats = vec![0.0; sizes[i]];
            Ok(())
        })?;
        let all_in_background = match &placement {
            Placement::Local(units) => units.iter().all(|u| u.slave.steps_in_background()),
            _ => false,
        };
        let connections = resolved.connections.len();
        let exchange_plan = ExchangePlan::new(&resolved, &graph, &fresh_read, &recordings, &|c| {
            placement.thread_of(c)
        })?;
        let neighbours = ranks.as_ref().and_then(|ranks| {
            let (me, size) = (ranks.rank(), ranks.transport.size());
            Neighbours::plan(&resolved, &graph, &exchange_plan, (me, size, &ranks.owner))
        });
        Ok(Execution {
            exchange_plan,
            time: system.experiment.start,
            values: vec![0.0; connections],
            after_step: (0..connections).map(|_| AtomicU64::new(0)).collect(),
            history: History::new(connections),
            terminate_requested: AtomicBool::new(false),
            fresh_read,
            plans,
            placement,
            graph,
            state_ids: vec![None; count],
            order_override: None,
            split_unconverged_steps: true,
            corrector_to_rounding: false,
            stepped: vec![false; count],
            part_corrector: None,
            probes: Vec::new(),
            implicit_state: Default::default(),
            corrector_iterations: 0,
            events: AtomicU64::new(0),
            early_returns: AtomicU64::new(0),
            resolved,
            recordings,
            bare_names: options.bare_names,
            allow_non_finite: options.allow_non_finite,
            table_inputs,
            parallel: None,
            all_in_background,
            ranks,
            neighbours,
            clocks,
        })
    }

    /// Whether every component can save and restore its state (macro-step repetition).
    pub fn can_roll_back(&self) -> bool {
        self.resolved.components.iter().all(|c| {
            c.description
                .co_simulation
                .as_ref()
                .is_some_and(|cs| cs.can_get_and_set_fmu_state)
        })
    }

    /// Highest extrapolation order of any Float64 input.
    pub fn max_extrapolation_order(&self) -> usize {
        self.plans
            .iter()
            .flat_map(|p| {
                p.float_groups
                    .iter()
                    .map(|(order, _, _)| usize::from(*order))
            })
            .max()
            .unwrap_or(0)
    }

    /// Save every component's state (reusing the state saved last time).
    pub fn save_states(&mut self) -> Result<()> {
        let since = self.ranks.as_ref().map(|_| std::time::Instant::now());
        let saved = self.save_states_here();
        if let (Some(since), Some(ranks)) = (since, &self.ranks) {
            ranks.clock.saving_states(since);
        }
        self.agree(saved)
    }

    /// [`Execution::save_states`] of this process's slaves.
    fn save_states_here(&mut self) -> Result<()> {
        for i in 0..self.state_ids.len() {
            let previous = self.state_ids[i];
            let id = self.placement.run_one(i, move |unit| match previous {
                Some(id) => unit.slave.update_state(id).map(|()| id),
                None => unit.slave.save_state(),
            })?;
            self.state_ids[i] = Some(id);
        }
        Ok(())
    }

    /// The state of component `i` saved by the last `save_states`.
    pub(crate) fn saved_state(&self, i: usize) -> Option<StateId> {
        self.state_ids[i]
    }

    /// Restore every component to the state saved by `save_states`. A termination request
    /// made after that state is withdrawn with it (a repeated step asks again).
    pub fn restore_states(&mut self) -> Result<()> {
        self.terminate_requested.store(false, Ordering::Relaxed);
        let since = self.ranks.as_ref().map(|_| std::time::Instant::now());
        let restored = self.restore_states_here();
        if let (Some(since), Some(ranks)) = (since, &self.ranks) {
            ranks.clock.saving_states(since);
        }
        self.agree(restored)
    }

    /// [`Execution::restore_states`] of this process's slaves.
    fn restore_states_here(&mut self) -> Result<()> {
        for i in 0..self.state_ids.len() {
            let Some(id) = self.state_ids[i] else {
                return Err(Error::Worker {
                    component: self.component_name(i).to_string(),
                    message: "no saved state to restore (restore before save)".into(),
                });
            };
            self.placement
                .run_one(i, move |unit| unit.slave.restore_state(id))?;
        }
        Ok(())
    }

    /// Name of a component.
    pub fn component_name(&self, index: usize) -> &str {
        &self.resolved.components[index].name
    }

    /// `component.variable` of a connection's source and target.
    pub fn connection_names(&self, c: usize) -> (String, String) {
        let conn = &self.resolved.connections[c];
        let name = |component: usize, variable: usize| {
            let comp = &self.resolved.components[component];
            format!(
                "{}.{}",
                comp.name, comp.description.variables[variable].name
            )
        };
        (
            name(conn.from_component, conn.from_variable),
            name(conn.to_component, conn.to_variable),
        )
    }

    /// Back to the state right after instantiation (`fmi*Reset` on every slave), with an empty
    /// history: `initialize` may follow, e.g. with other start values in `resolved`.
    pub fn reset(&mut self) -> Result<()> {
        self.placement
            .run_all(&|_, unit: &mut Unit| unit.slave.reset())?;
        self.time = self.resolved.system.experiment.start;
        self.history = History::new(self.values.len());
        self.values.iter_mut().for_each(|v| *v = 0.0);
        self.terminate_requested.store(false, Ordering::Relaxed);
        // Saved states belonged to the old run; the FMUs freed nothing, so keep the handles.
        Ok(())
    }

    /// Start values, initialization mode, consistent coupling values (loops solved), exit, and
    /// FMI 3 event iteration where initialization ends in event mode.
    pub fn initialize(&mut self) -> Result<()> {
        let experiment = self.resolved.system.experiment.clone();
        let start_values: Vec<Vec<(usize, crate::fmu::description::StartValue)>> = self
            .resolved
            .components
            .iter()
            .map(|c| c.start_values.clone())
            .collect();
        let descriptions: Vec<_> = self
            .resolved
            .components
            .iter()
            .map(|c| c.description.clone())
            .collect();
        let table_inputs = &self.table_inputs;
        let entered = self.placement.run_all(&|i, unit: &mut Unit| {
            // FMI 3 structural parameters first, in configuration mode; then the others.
            apply_start_values(
                unit.slave.as_mut(),
                start_values[i]
                    .iter()
                    .map(|(variable, value)| (&descriptions[i].variables[*variable], value)),
            )?;
            unit.slave.enter_initialization_mode(
                experiment.tolerance,
                experiment.start,
                Some(experiment.stop),
            )?;
            table_inputs[i].apply(unit.slave.as_mut(), experiment.start)
        });
        self.agree(entered)?;
        self.exchange(true)?;
        let terminate = &self.terminate_requested;
        let exited = self.placement.run_all(&|_, unit: &mut Unit| {
            unit.slave.exit_initialization_mode()?;
            if unit.slave.state() == SlaveState::EventMode {
                if event_iteration(unit.slave.as_mut())? {
                    terminate.store(true, Ordering::Relaxed);
                }
                unit.slave.enter_step_mode()?;
            }
            Ok(())
        });
        self.agree(exited)?;
        if let Some(clocks) = &mut self.clocks {
            let names: Vec<String> = self
                .resolved
                .components
                .iter()
                .map(|c| c.name.clone())
                .collect();
            clocks.start(&mut self.placement, &names)?;
            let tolerance = clock_tolerance(self.time);
            clocks.tick(
                &mut self.placement,
                &self.table_inputs,
                self.time,
                tolerance,
                &self.terminate_requested,
            )?;
        }
        // Outputs may change when initialization ends; take the coupling values from step mode.
        self.read_all_sources()?;
        self.exchange(false)?;
        self.history.push(self.time, &self.values);
        Ok(())
    }

    /// The next tick of a time-based FMI 3 input clock (macro steps land on it).
    pub fn next_clock_tick(&self) -> Option<f64> {
        self.clocks.as_ref().and_then(|c| c.next_tick())
    }

    /// Tick the FMI 3 clocks due at the current time (see `clocks.rs`); when any ticked, the
    /// coupling values are read again and replace the history's latest point, so the next step
    /// and the row at this time see the values after the tick.
    pub fn tick_clocks(&mut self) -> Result<()> {
        let Some(clocks) = &mut self.clocks else {
            return Ok(());
        };
        let tolerance = clock_tolerance(self.time);
        if !clocks.tick(
            &mut self.placement,
            &self.table_inputs,
            self.time,
            tolerance,
            &self.terminate_requested,
        )? {
            return Ok(());
        }
        self.read_all_sources()?;
        self.exchange(false)?;
        self.history.replace_latest(self.time, &self.values);
        Ok(())
    }

    /// Read every connection's source into `after_step` (as the step tasks do after stepping).
    fn read_all_sources(&mut self) -> Result<()> {
        let plans = &self.plans;
        let resolved = &self.resolved;
        let after = &self.after_step;
        let read = self
            .placement
            .run_all(&|i, unit: &mut Unit| read_outputs(&plans[i], resolved, unit, after, false));
        self.share_sources(read)
    }

    /// Evaluate the coupling variables at the current time in graph order. In `initial` mode
    /// every source is read fresh and every target set (inputs must be set before
    /// initialization ends); otherwise values read after the step are used where no input
    /// feeds through, and only inputs that feed through are set now.
    pub fn exchange(&mut self, initial: bool) -> Result<()> {
        if !initial {
            return self.exchange_after_step();
        }
        let mut failed = Ok(());
        // Indices, not a copy of the blocks.
        for b in 0..self.graph.blocks.len() {
            if self.graph.blocks[b].is_loop {
                super::loops::solve(self, b)?;
                continue;
            }
            for k in 0..self.graph.blocks[b].connections.len() {
                let c = self.graph.blocks[b].connections[k];
                let value = if initial || self.fresh_read[c] {
                    let value = self.read_source(c)?;
                    if !value.is_finite() && !self.allow_non_finite {
                        return Err(non_finite(
                            &self.resolved,
                            &self.resolved.connections[c],
                            value,
                        ));
                    }
                    value
                } else {
                    f64::from_bits(self.after_step[c].load(Ordering::Relaxed))
                };
                self.values[c] = value;
                if initial || self.graph.propagates[c] {
                    let set = self.set_target(c, value);
                    if self.ranks.is_none() {
                        set?;
                    } else if failed.is_ok() {
                        // Told when every rank has walked the exchange (see `agree`).
                        failed = set;
                    }
                }
            }
        }
        self.agree(failed)
    }

    /// Read the source of connection `c` now, transformed (value map, `scale * y + shift`).
    pub fn read_source(&mut self, c: usize) -> Result<f64> {
        let component = self.resolved.connections[c].from_component;
        self.read_on_owner(component, |exec| exec.read_source_here(c))
    }

    /// [`Execution::read_source`] from this process's slave (a stand-in reads nothing).
    pub(crate) fn read_source_here(&mut self, c: usize) -> Result<f64> {
        let conn = &self.resolved.connections[c];
        let comp = &self.resolved.components[conn.from_component];
        let variable = &comp.description.variables[conn.from_variable];
        let (vr, var_type) = (variable.value_reference, variable.var_type);
        let fmi3 = comp.description.fmi_version == crate::fmu::FmiVersion::Fmi3;
        let y = self.placement.run_one(conn.from_component, move |unit| {
            get_scalar(unit.slave.as_mut(), vr, var_type, fmi3)
        })?;
        Ok(self.resolved.connections[c].transform(y))
    }

    /// Set the target input of connection `c` to `value`.
    pub fn set_target(&mut self, c: usize, value: f64) -> Result<()> {
        let conn = &self.resolved.connections[c];
        let comp = &self.resolved.components[conn.to_component];
        let variable = &comp.description.variables[conn.to_variable];
        let (vr, var_type) = (variable.value_reference, variable.var_type);
        let fmi3 = comp.description.fmi_version == crate::fmu::FmiVersion::Fmi3;
        self.placement.run_one(conn.to_component, move |unit| {
            set_scalar(unit.slave.as_mut(), vr, var_type, fmi3, value)
        })
    }

    /// Replace the history with `past` (oldest first: time and one value per connection)
    /// followed by the current point: a run that continues from known earlier coupling values
    /// (e.g. a restart, or a study of one macro step from exact data).
    pub fn seed_history(&mut self, past: &[(f64, Vec<f64>)]) -> Result<()> {
        let connections = self.values.len();
        if let Some((t, values)) = past.iter().find(|(_, v)| v.len() != connections) {
            return Err(Error::Internal(format!(
                "history at t = {t} has {} values for {connections} connections",
                values.len()
            )));
        }
        self.history = History::new(connections);
        for (t, values) in past {
            self.history.push(*t, values);
        }
        self.history.push(self.time, &self.values);
        Ok(())
    }

    /// Read the probed state variables now, in probe order: every one on every process,
    /// except where values go point to point, where a process holds its own components' only
    /// (it reads 0 for the others).
    pub fn read_probes(&mut self) -> Result<Vec<f64>> {
        let probes = self.probes.clone();
        let mut values = Vec::with_capacity(probes.len());
        let mut read = Ok(());
        for (i, vr) in probes {
            // Under mpirun each rank reads its own components' probes (a stand-in reads 0).
            let value = self.placement.run_one(i, move |unit| {
                let mut v = [0.0];
                unit.slave.get_float64(&[vr], &mut v)?;
                Ok(v[0])
            });
            match value {
                Ok(v) => values.push(v),
                Err(error) if self.ranks.is_some() => {
                    read = Err(error);
                    values.push(0.0);
                }
                Err(error) => return Err(error),
            }
        }
        if self.point_to_point_ranks().is_some() {
            // The owners add their probes' terms to the norms (`Execution::state_norm`).
            self.agree(read)?;
        } else {
            self.share_probes(&mut values, read)?;
        }
        Ok(values)
    }

    /// Component index and value reference of a Float64 variable `component.variable`.
    pub fn locate(&self, name: &str) -> Result<(usize, ValueReference)> {
        let endpoint = crate::system::Endpoint::parse(name)
            .ok_or_else(|| Error::Usage(format!("{name}: expected component.variable")))?;
        let (i, comp) = self
            .resolved
            .components
            .iter()
            .enumerate()
            .find(|(_, c)| c.name == endpoint.component)
            .ok_or_else(|| {
                Error::Usage(format!("{name}: no component \"{}\"", endpoint.component))
            })?;
        let variable = comp
            .description
            .variable(&endpoint.variable)
            .ok_or_else(|| {
                Error::Usage(format!(
                    "{name}: {} has no variable \"{}\"",
                    comp.name, endpoint.variable
                ))
            })?;
        if variable.var_type != VariableType::Float64 {
            return Err(Error::Usage(format!("{name}: is not a Float64 variable")));
        }
        Ok((i, variable.value_reference))
    }

    /// Every continuous state of every component (the variables a `derivative` points at).
    pub fn continuous_states(&self) -> Vec<(usize, ValueReference)> {
        let mut states = Vec::new();
        for (i, comp) in self.resolved.components.iter().enumerate() {
            for v in &comp.description.variables {
                if let Some(state) = v.derivative {
                    let s = &comp.description.variables[state];
                    if s.var_type == VariableType::Float64 && !s.is_array() {
                        states.push((i, s.value_reference));
                    }
                }
            }
        }
        states
    }

    /// Read a Float64 variable `component.variable` now.
    pub fn float_value(&mut self, name: &str) -> Result<f64> {
        let endpoint = crate::system::Endpoint::parse(name)
            .ok_or_else(|| Error::Usage(format!("{name}: expected component.variable")))?;
        let (i, comp) = self
            .resolved
            .components
            .iter()
            .enumerate()
            .find(|(_, c)| c.name == endpoint.component)
            .ok_or_else(|| {
                Error::Usage(format!("{name}: no component \"{}\"", endpoint.component))
            })?;
        let vr = comp
            .description
            .variable(&endpoint.variable)
            .ok_or_else(|| {
                Error::Usage(format!(
                    "{name}: {} has no variable \"{}\"",
                    comp.name, endpoint.variable
                ))
            })?
            .value_reference;
        self.placement.run_one(i, move |unit| {
            let mut v = [0.0];
            unit.slave.get_float64(&[vr], &mut v)?;
            Ok(v[0])
        })
    }

    /// Record the coupling values of the current communication point for extrapolation.
    pub fn push_history(&mut self) {
        self.history.push(self.time, &self.values);
    }

    /// Set the inputs of `component` that a result row sets before it reads (those that do not
    /// feed through are otherwise set just before the next step), so that a value read between
    /// steps is the one a row at this point records.
    pub fn settle_inputs(&mut self, component: usize) -> Result<()> {
        let sets = &self.exchange_plan.row_sets[component];
        if sets.is_empty() {
            return Ok(());
        }
        let values = &self.values;
        self.placement
            .run_one(component, |unit| set_targets(unit, sets, values))
    }

    /// After input `variable` of `component` was set from outside between steps (a session,
    /// an exported FMU's importer): the coupling values whose source output feeds through from
    /// it are read again and passed on, as if that input had arrived through a connection, so
    /// the next step sees the same values as in a system where a component drives it.
    pub fn refresh_after_input(&mut self, component: usize, variable: usize) -> Result<()> {
        let description = self.resolved.components[component].description.clone();
        for c in 0..self.resolved.connections.len() {
            let conn = &self.resolved.connections[c];
            if conn.from_component != component
                || !crate::system::graph::feeds_through(&description, conn.from_variable, variable)
            {
                continue;
            }
            let value = self.read_source(c)?;
            self.values[c] = value;
            self.after_step[c].store(value.to_bits(), Ordering::Relaxed);
            if self.history.len > 0 && self.history.times[0] == self.time {
                self.history.values[c][0] = value;
            }
            self.set_target(c, value)?;
        }
        Ok(())
    }

    /// Column names of the result file.
    pub fn column_names(&self) -> Vec<String> {
        self.recordings
            .iter()
            .flat_map(|(i, recording)| {
                let prefix = if self.bare_names {
                    String::new()
                } else {
                    format!("{}.", self.resolved.components[*i].name)
                };
                recording.column_names(&prefix)
            })
            .collect()
    }

    /// What each result column holds (name, type, unit, description, aliases), in column order.
    pub fn result_columns(&self) -> Vec<super::record::ResultColumn> {
        self.recordings
            .iter()
            .flat_map(|(i, recording)| {
                let prefix = if self.bare_names {
                    String::new()
                } else {
                    format!("{}.", self.resolved.components[*i].name)
                };
                recording.result_columns(&prefix, *i)
            })
            .collect()
    }

    /// An empty row with one cell per result column, to fill with [`Execution::read_row`].
    pub fn new_row(&self) -> Row {
        let cells = self.recordings.iter().map(|(_, r)| r.len()).sum();
        Row {
            time: self.time,
            cells: vec![Cell::Float(f64::NAN); cells],
        }
    }

    /// Read the recorded variables at the current time into `row` (made by `new_row`).
    ///
    /// Inputs that feed no output are normally set when the next step starts; at an output
    /// point they are set first, so a recorded input (or anything computed from it) shows its
    /// value at this communication point, not the previous one's.
    pub fn read_row(&mut self, row: &mut Row) -> Result<()> {
        // Inputs that do not feed through are set before the next step; set them now, so
        // that recorded inputs show the values at this point. Then every component's cells,
        // all components at once (one hand-over per worker thread).
        let total: usize = self.recordings.iter().map(|(_, r)| r.len()).sum();
        if row.cells.len() != total {
            return Err(Error::Internal(format!(
                "a row of {} cells for {total} recorded values",
                row.cells.len()
            )));
        }
        row.time = self.time;
        let read = self.read_cells(row);
        self.share_cells(&mut row.cells, read)?;
        if let Some(clocks) = &self.clocks {
            // Clock columns hold the ticks so far, which cosimo counts.
            let mut offset = 0;
            for (i, recording) in &self.recordings {
                for (k, vr) in recording.clock_cells() {
                    row.cells[offset + k] = Cell::UInt(clocks.ticks(*i, vr));
                }
                offset += recording.len();
            }
        }
        Ok(())
    }

    /// The cells of the components of this process into `row`.
    fn read_cells(&mut self, row: &mut Row) -> Result<()> {
        let plan = &self.exchange_plan;
        let values = &self.values;
        let cells = Disjoint(row.cells.as_mut_ptr());
        let recordings = Disjoint(self.recordings.as_mut_ptr());
        self.placement.run_all(&|i, unit: &mut Unit| {
            set_targets(unit, &plan.row_sets[i], values)?;
            if let Some((k, offset)) = plan.record_at[i] {
                // SAFETY: component i alone owns recording k and the cells from `offset` (the
                // offsets partition the row, whose length was checked), and `run_all` hands
                // each component to one thread once; both outlive the call.
                let (recording, cells) = unsafe {
                    let (_, recording) = &mut *recordings.base().add(k);
                    let cells =
                        std::slice::from_raw_parts_mut(cells.base().add(offset), recording.len());
                    (recording, cells)
                };
                recording.read_cells(unit.slave.as_mut(), cells)?;
            }
            Ok(())
        })
    }

    /// Total FMI calls made by all slaves.
    pub fn fmi_calls(&mut self) -> u64 {
        let mut total = 0;
        for i in 0..self.placement.len() {
            total += self
                .placement
                .run_one(i, |unit| Ok(unit.slave.call_count()))
                .unwrap_or(0);
        }
        self.sum_over_ranks(total)
    }

    /// What the integrators of the Model Exchange components did, summed (`None`: there are
    /// none in this process).
    pub fn integrator_statistics(&mut self) -> Option<crate::fmu::model_exchange::Statistics> {
        let mut total: Option<crate::fmu::model_exchange::Statistics> = None;
        for i in 0..self.placement.len() {
            let one = self
                .placement
                .run_one(i, |unit| Ok(unit.slave.integrator_statistics()))
                .unwrap_or(None);
            if let Some(one) = one {
                let sum = total.get_or_insert_with(Default::default);
                sum.steps += one.steps;
                sum.rhs_evaluations += one.rhs_evaluations;
                sum.events += one.events;
            }
        }
        if self.ranks.is_none() {
            return total;
        }
        // Over ranks: summed where any rank has Model Exchange components.
        let any = self.sum_over_ranks(u64::from(total.is_some()));
        let one = total.unwrap_or_default();
        (any > 0).then(|| crate::fmu::model_exchange::Statistics {
            steps: self.sum_over_ranks(one.steps),
            rhs_evaluations: self.sum_over_ranks(one.rhs_evaluations),
            events: self.sum_over_ranks(one.events),
        })
    }

    /// Terminate every slave.
    pub fn terminate(&mut self) -> Result<()> {
        let terminated = self
            .placement
            .run_all(&|_, unit: &mut Unit| unit.slave.terminate());
        self.agree(terminated)
    }
}

/// The master's coupling state between macro steps, as a snapshot keeps it (the FMU states
/// are saved beside it).
#[derive(serde::Serialize, serde::Deserialize)]
pub struct ExecutionState {
    values: Vec<f64>,
    after_step: Vec<u64>,
    history_times: Vec<f64>,
    history_values: Vec<Vec<f64>>,
    history_len: usize,
    terminate_requested: bool,
    implicit_state: super::implicit::SavedImplicitState,
    corrector_iterations: u64,
    events: u64,
    early_returns: u64,
    /// Each connection's (scale, shift): scenario events change them.
    transforms: Vec<(f64, f64)>,
    part_corrector: Option<Vec<f64>>,
}

impl Execution {
    /// The coupling values, their history and the run's counters, for a snapshot.
    pub(crate) fn save_master_state(&self) -> ExecutionState {
        ExecutionState {
            values: self.values.clone(),
            after_step: self
                .after_step
                .iter()
                .map(|v| v.load(Ordering::Relaxed))
                .collect(),
            history_times: self.history.times.to_vec(),
            history_values: self.history.values.iter().map(|v| v.to_vec()).collect(),
            history_len: self.history.len,
            terminate_requested: self.terminate_requested.load(Ordering::Relaxed),
            implicit_state: self.implicit_state.save(),
            corrector_iterations: self.corrector_iterations,
            events: self.events.load(Ordering::Relaxed),
            early_returns: self.early_returns.load(Ordering::Relaxed),
            transforms: self
                .resolved
                .connections
                .iter()
                .map(|c| (c.scale, c.shift))
                .collect(),
            part_corrector: self.part_corrector.clone(),
        }
    }

    /// Back to the state saved by `save_master_state` at `time` (after the FMUs' states).
    pub(crate) fn restore_master_state(&mut self, time: f64, state: ExecutionState) -> Result<()> {
        let connections = self.values.len();
        let fits = state.values.len() == connections
            && state.after_step.len() == connections
            && state.history_values.len() == connections
            && state.history_times.len() == HISTORY
            && state.history_values.iter().all(|v| v.len() == HISTORY)
            && state.history_len <= HISTORY
            && state.transforms.len() == connections
            && state
                .part_corrector
                .as_ref()
                .is_none_or(|v| v.len() == connections);
        if !fits {
            return Err(Error::Usage(format!(
                "a snapshot of {} coupling values for a system of {connections} connections",
                state.values.len()
            )));
        }
        self.time = time;
        self.values = state.values;
        for (cell, bits) in self.after_step.iter().zip(state.after_step) {
            cell.store(bits, Ordering::Relaxed);
        }
        self.history.times.copy_from_slice(&state.history_times);
        for (row, saved) in self.history.values.iter_mut().zip(&state.history_values) {
            row.copy_from_slice(saved);
        }
        self.history.len = state.history_len;
        self.terminate_requested
            .store(state.terminate_requested, Ordering::Relaxed);
        self.implicit_state = super::implicit::ImplicitState::restored(state.implicit_state);
        self.corrector_iterations = state.corrector_iterations;
        self.events.store(state.events, Ordering::Relaxed);
        self.early_returns
            .store(state.early_returns, Ordering::Relaxed);
        self.stepped.iter_mut().for_each(|s| *s = false);
        self.part_corrector = state.part_corrector;
        for (connection, (scale, shift)) in
            self.resolved.connections.iter_mut().zip(state.transforms)
        {
            connection.scale = scale;
            connection.shift = shift;
        }
        Ok(())
    }

    /// Give connection `c` the transform `scale * y + shift` from now on (a scenario event):
    /// its value, the history its extrapolation reads (the past seen through the new
    /// transform, or the new value where the old transform kept nothing of the source) and
    /// the target input are updated at once.
    pub(crate) fn retransform(&mut self, c: usize, scale: f64, shift: f64) -> Result<()> {
        let (old_scale, old_shift) = {
            let connection = &self.resolved.connections[c];
            (connection.scale, connection.shift)
        };
        {
            let connection = &mut self.resolved.connections[c];
            connection.scale = scale;
            connection.shift = shift;
        }
        let value = self.read_source(c)?;
        let len = self.history.len;
        for past in &mut self.history.values[c][..len] {
            *past = if old_scale != 0.0 && scale != 0.0 {
                scale * (*past - old_shift) / old_scale + shift
            } else {
                value
            };
        }
        self.values[c] = value;
        self.after_step[c].store(value.to_bits(), Ordering::Relaxed);
        // Over ranks only the target's owner sets it: every rank learns how that went.
        let set = self.set_target(c, value);
        self.agree(set)
    }

    /// Whether component `i` can save and restore its FMU state.
    pub fn can_save_state(&mut self, i: usize) -> bool {
        self.placement
            .run_one(i, |unit| Ok(unit.slave.can_save_state()))
            .unwrap_or(false)
    }

    /// Whether component `i` can serialise a saved FMU state into bytes.
    pub fn can_serialize_state(&self, i: usize) -> bool {
        let description = &self.resolved.components[i].description;
        description
            .co_simulation
            .as_ref()
            .is_some_and(|cs| cs.can_serialize_fmu_state)
    }

    /// What identifies the system for a serialised snapshot: its components (name, model,
    /// instantiation token) and connections.
    pub fn fingerprint(&self) -> String {
        let mut text = String::new();
        for component in &self.resolved.components {
            text.push_str(&format!(
                "{}|{}|{}\n",
                component.name,
                component.description.model_name,
                component.description.instantiation_token
            ));
        }
        for c in 0..self.resolved.connections.len() {
            let (from, to) = self.connection_names(c);
            text.push_str(&format!("{from}->{to}\n"));
        }
        text
    }

    /// Component and variable index of a variable named as in results: `component.variable`,
    /// or the variable alone when one FMU runs alone.
    pub fn find_variable(&self, name: &str) -> Result<(usize, usize)> {
        let (component, variable) = if self.bare_names && self.resolved.components.len() == 1 {
            (0, name.to_string())
        } else {
            let endpoint = crate::system::Endpoint::parse(name)
                .ok_or_else(|| Error::Usage(format!("{name}: expected component.variable")))?;
            let component = self
                .resolved
                .components
                .iter()
                .position(|c| c.name == endpoint.component)
                .ok_or_else(|| {
                    let names: Vec<&str> = self
                        .resolved
                        .components
                        .iter()
                        .map(|c| c.name.as_str())
                        .collect();
                    Error::Usage(format!(
                        "{name}: no component \"{}\"; the components are {}",
                        endpoint.component,
                        names.join(", ")
                    ))
                })?;
            (component, endpoint.variable)
        };
        let description = &self.resolved.components[component].description;
        let variable = crate::fmu::values::find_variable(description, &variable, "")?;
        let index = description
            .variables
            .iter()
            .position(|v| std::ptr::eq(v, variable))
            .ok_or_else(|| Error::Internal(format!("{name}: variable not in its description")))?;
        Ok((component, index))
    }
}

/// Parts of a vector that the tasks of one `run_all` write, each its own (see `read_row`).
struct Disjoint<T>(*mut T);
// SAFETY: each task touches only the elements that belong to its component.
unsafe impl<T: Send> Send for Disjoint<T> {}
unsafe impl<T: Send> Sync for Disjoint<T> {}

impl<T> Disjoint<T> {
    /// The base pointer (a method, so that closures capture the whole `Sync` wrapper).
    fn base(&self) -> *mut T {
        self.0
    }
}

/// Attach the component's name to errors that do not carry an instance name yet.
pub fn in_component(name: &str, error: Error) -> Error {
    match error {
        Error::Usage(message) => Error::Usage(format!("component \"{name}\": {message}")),
        other => other,
    }
}

/// Event iteration until the discrete states settle; true when the FMU asks to terminate.
pub fn event_iteration(slave: &mut dyn Slave) -> Result<bool> {
    const MAX_EVENT_ITERATIONS: usize = 1000;
    for _ in 0..MAX_EVENT_ITERATIONS {
        let update = slave.update_discrete_states()?;
        if update.terminate_simulation {
            return Ok(true);
        }
        if !update.discrete_states_need_update {
            return Ok(false);
        }
    }
    Err(Error::Unsupported {
        instance: slave.name().to_string(),
        message: format!("the event iteration did not settle after {MAX_EVENT_ITERATIONS} calls of fmi3UpdateDiscreteStates"),
    })
}

/// Read the component's connection sources into `after_step` (`jacobi`: only those a Jacobi
/// step needs, see [`ComponentPlan::jacobi_float_outputs`]).
pub fn read_outputs(
    plan: &ComponentPlan,
    resolved: &ResolvedSystem,
    unit: &mut Unit,
    after: &[AtomicU64],
    jacobi: bool,
) -> Result<()> {
    let (float_outputs, float_connections, other_outputs) = if jacobi {
        (
            &plan.jacobi_float_outputs,
            &plan.jacobi_float_output_connections,
            &plan.jacobi_other_outputs,
        )
    } else {
        (
            &plan.float_outputs,
            &plan.float_output_connections,
            &plan.other_outputs,
        )
    };
    let n = float_outputs.len();
    if n > 0 {
        let len = unit.floats.len();
        let (_, outputs) = unit.floats.split_at_mut(len - n);
        unit.slave.get_float64(float_outputs, outputs)?;
        for (&c, &y) in float_connections.iter().zip(outputs.iter()) {
            let conn = &resolved.connections[c];
            if !y.is_finite() && !plan.allow_non_finite {
                return Err(non_finite(resolved, conn, y));
            }
            after[c].store(conn.transform(y).to_bits(), Ordering::Relaxed);
        }
    }
    for &(c, vr, var_type) in other_outputs {
        let conn = &resolved.connections[c];
        let fmi3 = resolved.components[conn.from_component]
            .description
            .fmi_version
            == crate::fmu::FmiVersion::Fmi3;
        let y = get_scalar(unit.slave.as_mut(), vr, var_type, fmi3)?;
        after[c].store(conn.transform(y).to_bits(), Ordering::Relaxed);
    }
    Ok(())
}

/// Read a scalar numeric or Boolean variable as f64 (exact for integers up to 2^53).
pub fn get_scalar(
    slave: &mut dyn Slave,
    vr: ValueReference,
    var_type: VariableType,
    fmi3: bool,
) -> Result<f64> {
    let vrs = [vr];
    // One scalar through the typed getter, widened to f64 (`as` for 64-bit integers, which
    // have no lossless conversion).
    macro_rules! read {
        ($get:ident, $zero:expr) => {{
            let mut v = [$zero];
            slave.$get(&vrs, &mut v)?;
            v[0]
        }};
    }
    Ok(match var_type {
        VariableType::Float64 => read!(get_float64, 0.0f64),
        VariableType::Float32 => f64::from(read!(get_float32, 0.0f32)),
        VariableType::Int8 => f64::from(read!(get_int8, 0i8)),
        VariableType::UInt8 => f64::from(read!(get_uint8, 0u8)),
        VariableType::Int16 => f64::from(read!(get_int16, 0i16)),
        VariableType::UInt16 => f64::from(read!(get_uint16, 0u16)),
        VariableType::Int32 => f64::from(read!(get_int32, 0i32)),
        VariableType::UInt32 => f64::from(read!(get_uint32, 0u32)),
        VariableType::Int64 => read!(get_int64, 0i64) as f64,
        VariableType::UInt64 => read!(get_uint64, 0u64) as f64,
        VariableType::Enumeration if !fmi3 => f64::from(read!(get_int32, 0i32)),
        VariableType::Enumeration => read!(get_int64, 0i64) as f64,
        VariableType::Boolean => f64::from(u8::from(read!(get_boolean, false))),
        other => return Err(unsupported_type(slave, other)),
    })
}

/// Write a scalar numeric or Boolean variable from f64 (integers rounded, Booleans != 0).
pub fn set_scalar(
    slave: &mut dyn Slave,
    vr: ValueReference,
    var_type: VariableType,
    fmi3: bool,
    value: f64,
) -> Result<()> {
    let vrs = [vr];
    if var_type == VariableType::Float64 {
        return slave.set_float64(&vrs, &[value]);
    }
    let int = value.round();
    match var_type {
        VariableType::Float64 => slave.set_float64(&vrs, &[value]),
        VariableType::Float32 => slave.set_float32(&vrs, &[value as f32]),
        VariableType::Int8 => slave.set_int8(&vrs, &[int as i8]),
        VariableType::UInt8 => slave.set_uint8(&vrs, &[int as u8]),
        VariableType::Int16 => slave.set_int16(&vrs, &[int as i16]),
        VariableType::UInt16 => slave.set_uint16(&vrs, &[int as u16]),
        VariableType::Int32 => slave.set_int32(&vrs, &[int as i32]),
        VariableType::UInt32 => slave.set_uint32(&vrs, &[int as u32]),
        VariableType::Int64 => slave.set_int64(&vrs, &[int as i64]),
        VariableType::UInt64 => slave.set_uint64(&vrs, &[int as u64]),
        VariableType::Enumeration if !fmi3 => slave.set_int32(&vrs, &[int as i32]),
        VariableType::Enumeration => slave.set_int64(&vrs, &[int as i64]),
        VariableType::Boolean => slave.set_boolean(&vrs, &[value != 0.0]),
        other => Err(unsupported_type(slave, other)),
    }
}

fn unsupported_type(slave: &dyn Slave, var_type: VariableType) -> Error {
    Error::Unsupported {
        instance: slave.name().to_string(),
        message: format!(
            "{var_type:?} variables cannot be connected yet (numbers and Booleans can)"
        ),
    }
}

/// Which connections must read their source again at communication points: the source output
/// depends on an input that some connection drives.
fn fresh_reads(resolved: &ResolvedSystem) -> Vec<bool> {
    // Driven inputs and components with one, as sets: O(connections) for any system size.
    let driven_inputs: std::collections::HashSet<(usize, usize)> = resolved
        .connections
        .iter()
        .map(|other| (other.to_component, other.to_variable))
        .collect();
    let mut has_driven_input = vec![false; resolved.components.len()];
    for other in &resolved.connections {
        if let Some(flag) = has_driven_input.get_mut(other.to_component) {
            *flag = true;
        }
    }
    resolved
        .connections
        .iter()
        .map(|conn| {
            let md = &resolved.components[conn.from_component].description;
            let driven = |input: usize| driven_inputs.contains(&(conn.from_component, input));
            match md
                .model_structure
                .outputs
                .iter()
                .find(|u| u.variable == conn.from_variable)
            {
                Some(unknown) => match &unknown.dependencies {
                    Some(deps) => deps.iter().any(|&d| driven(d)),
                    None => md
                        .variables
                        .iter()
                        .enumerate()
                        .any(|(i, v)| v.causality == Causality::Input && driven(i)),
                },
                // Not an output listed in the model structure: be safe.
                None => has_driven_input
                    .get(conn.from_component)
                    .copied()
                    .unwrap_or(false),
            }
        })
        .collect()
}

/// Group each component's inputs and sources once, so stepping only walks flat lists.
fn plan_components(resolved: &ResolvedSystem) -> Vec<ComponentPlan> {
    let mut plans: Vec<ComponentPlan> = resolved
        .components
        .iter()
        .map(|c| {
            let clocks =
                c.description.variables.iter().filter(|v| {
                    v.var_type == VariableType::Clock && v.causality == Causality::Output
                });
            ComponentPlan {
                sub_steps: c.sub_steps.max(1),
                output_clocks: (
                    clocks.clone().map(|v| v.value_reference).collect(),
                    clocks.map(|v| v.name.clone()).collect(),
                ),
                ..ComponentPlan::default()
            }
        })
        .collect();
    for (c, conn) in resolved.connections.iter().enumerate() {
        let target =
            &resolved.components[conn.to_component].description.variables[conn.to_variable];
        let plan = &mut plans[conn.to_component];
        if target.var_type == VariableType::Float64 {
            let order = conn.extrapolation_order.min(3);
            match plan.float_groups.iter_mut().find(|(o, _, _)| *o == order) {
                Some((_, vrs, conns)) => {
                    vrs.push(target.value_reference);
                    conns.push(c);
                }
                None => plan
                    .float_groups
                    .push((order, vec![target.value_reference], vec![c])),
            }
        } else {
            plan.other_inputs.push(InputBinding {
                connection: c,
                vr: target.value_reference,
                var_type: target.var_type,
                order: 0,
            });
        }
        let source = &resolved.components[conn.from_component]
            .description
            .variables[conn.from_variable];
        let plan = &mut plans[conn.from_component];
        if source.var_type == VariableType::Float64 {
            plan.float_outputs.push(source.value_reference);
            plan.float_output_connections.push(c);
        } else {
            plan.other_outputs
                .push((c, source.value_reference, source.var_type));
        }
    }
    for plan in &mut plans {
        let taylor: usize = plan
            .float_groups
            .iter()
            // Room for the highest degree, so step control may raise the order at run time.
            .map(|(_, vrs, _)| vrs.len() * (MAX_DEGREE + 1))
            .sum();
        plan.scratch = taylor + plan.float_outputs.len();
    }
    plans
}

/// The variables to record, per component: every output by default, or `component.variable`s.
fn recordings(
    resolved: &ResolvedSystem,
    selected: &[String],
    bare_names: bool,
) -> Result<Vec<(usize, Recording)>> {
    use super::record::{resolve_output_name, RecordedColumn};
    // Per component: the columns, in order.
    let mut chosen: Vec<Vec<RecordedColumn>> = vec![Vec::new(); resolved.components.len()];
    let whole = |md: &crate::fmu::ModelDescription, j: usize, name: &str| RecordedColumn {
        variable: md.variables[j].clone(),
        element: None,
        name: name.to_string(),
    };
    if selected.is_empty() {
        // FMPy's rule for default outputs (fmpy/simulation.py, `_get_output_variables` and
        // `Recorder`): every model variable of causality output, by name, except one named
        // `time` (the first column is the time). FMI 2 aliases are variables of their own and
        // so recorded under each name; FMPy turns each FMI 3 `<Alias>` into a variable appended
        // after all declared ones, so an output's aliases (e.g. `h_ft` of `h`) are recorded
        // too, after the declared outputs, in the order of their variables.
        for (i, comp) in resolved.components.iter().enumerate() {
            let md = &comp.description;
            let outputs: Vec<usize> = md
                .variables
                .iter()
                .enumerate()
                .filter(|(_, v)| v.causality == Causality::Output)
                .map(|(j, _)| j)
                .collect();
            let declared = outputs.iter().map(|&j| (j, md.variables[j].name.as_str()));
            let aliases = outputs.iter().flat_map(|&j| {
                md.variables[j]
                    .aliases
                    .iter()
                    .map(move |a| (j, a.name.as_str()))
            });
            chosen[i] = declared
                .chain(aliases)
                .filter(|(_, name)| !(bare_names && *name == "time"))
                .map(|(j, name)| whole(md, j, name))
                .collect();
        }
    } else {
        // What each column reads (component, variable, element) and the name that asked for it.
        // (component, variable, element) of each column so far.
        type Reads = (usize, usize, Option<usize>);
        let mut seen: Vec<(Reads, &str)> = Vec::new();
        for name in selected {
            let (i, variable) = if bare_names {
                if name == "time" {
                    return Err(Error::Usage(
                        "--output-variable time: the time is always the first column of the results; leave it out"
                            .to_string(),
                    ));
                }
                (0, name.clone())
            } else {
                let endpoint = crate::system::Endpoint::parse(name).ok_or_else(|| {
                    Error::Usage(if name == "time" {
                        "--output-variable time: the time is always the first column of the results; leave it out".to_string()
                    } else {
                        format!("--output-variable {name}: expected component.variable")
                    })
                })?;
                let i = resolved
                    .components
                    .iter()
                    .position(|c| c.name == endpoint.component)
                    .ok_or_else(|| {
                        let names: Vec<&str> =
                            resolved.components.iter().map(|c| c.name.as_str()).collect();
                        Error::Usage(format!(
                            "--output-variable {name}: there is no component \"{}\"; the components are: {}",
                            endpoint.component,
                            names.join(", ")
                        ))
                    })?;
                (i, endpoint.variable)
            };
            let variable = variable.as_str();
            let comp = &resolved.components[i];
            let md = &comp.description;
            let found = resolve_output_name(md, variable)
                .map_err(|e| Error::Usage(format!("--output-variable {e}")))?
                .ok_or_else(|| {
                    Error::Usage(if bare_names {
                        format!(
                            "--output-variable {name}: {} has no variable \"{name}\" (`cosimo inspect` lists them all)",
                            md.model_name
                        )
                    } else {
                        format!(
                            "--output-variable {name}: component \"{}\" ({}) has no variable \"{variable}\"",
                            comp.name, md.model_name
                        )
                    })
                })?;
            let key = (i, found.variable, found.element);
            if let Some((_, earlier)) = seen.iter().find(|(k, _)| *k == key) {
                return Err(Error::Usage(if *earlier == name.as_str() {
                    format!("--output-variable {name} is given twice; each column is recorded once")
                } else {
                    format!(
                        "--output-variable {name} and --output-variable {earlier} name the same variable \
                         (one is an alias of the other), which would record the same values twice; keep one"
                    )
                }));
            }
            seen.push((key, name.as_str()));
            let mut column = whole(md, found.variable, variable);
            column.element = found.element;
            chosen[i].push(column);
        }
    }
    chosen
        .into_iter()
        .enumerate()
        .filter(|(_, columns)| !columns.is_empty())
        .map(|(i, columns)| {
            let md = &resolved.components[i].description;
            Ok((i, Recording::columns(md, columns)?))
        })
        .collect()
}

/// Bind the table's columns to the components' inputs: `component.variable`, or the variable
/// alone when `bare_names` (one component).
fn table_inputs(
    resolved: &ResolvedSystem,
    table: &Arc<Table>,
    bare_names: bool,
) -> Result<Vec<TableInputs>> {
    let mut columns: Vec<Vec<(usize, &str)>> = vec![Vec::new(); resolved.components.len()];
    for (column, name) in table.columns().iter().enumerate() {
        if bare_names {
            columns[0].push((column, name.as_str()));
            continue;
        }
        let component = crate::system::Endpoint::parse(name).and_then(|e| {
            resolved
                .components
                .iter()
                .position(|c| c.name == e.component)
                .map(|i| (i, &name[e.component.len() + 1..]))
        });
        let Some((i, variable)) = component else {
            let names: Vec<&str> = resolved
                .components
                .iter()
                .map(|c| c.name.as_str())
                .collect();
            return Err(Error::Usage(format!(
                "{}: column \"{name}\" names no component input; in a system the columns are component.input (components: {})",
                table.path().display(),
                names.join(", ")
            )));
        };
        columns[i].push((column, variable));
    }
    let inputs: Vec<TableInputs> = resolved
        .components
        .iter()
        .zip(&columns)
        .map(|(c, cols)| TableInputs::new(&c.description, table, cols))
        .collect::<Result<_>>()?;
    // An input has one source: a connection or the table, not both.
    for conn in &resolved.connections {
        let component = &resolved.components[conn.to_component];
        let name =
            &component.description.variables[component.declared_variable(conn.to_variable)].name;
        if columns[conn.to_component].iter().any(|(_, v)| v == name) {
            return Err(Error::Usage(format!(
                "{}: column for {}.{name} drives an input that a connection drives already; remove the column or the connection",
                table.path().display(),
                component.name
            )));
        }
    }
    Ok(inputs)
}

/// A coupling source that is NaN or infinite: named, with where it would have gone.
pub(crate) fn non_finite(
    resolved: &ResolvedSystem,
    conn: &crate::system::resolve::ResolvedConnection,
    y: f64,
) -> Error {
    let from = &resolved.components[conn.from_component];
    let to = &resolved.components[conn.to_component];
    Error::Numerics(format!(
        "{}.{} is {y}, which would be fed to {}.{}: an FMU output is not a finite number; check \
         the model, its parameters and the step size (--allow-non-finite passes such values on)",
        from.name,
        from.description.variables[conn.from_variable].name,
        to.name,
        to.description.variables[conn.to_variable].name
    ))
}

/// How close to a time a clock tick counts as due (macro steps land on ticks to rounding).
fn clock_tolerance(time: f64) -> f64 {
    1e-9 * time.abs().max(1.0)
}
