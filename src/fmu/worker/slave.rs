//! The master's side: [`WorkerSlave`], a [`Slave`] whose FMU runs in a worker process.

use std::any::Any;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::channel::{wait_for, Channel, Patience, MAX_SPIN, REGION_SIZE};
use super::host::{REPLY_ERROR, REPLY_OK};
use super::wire::{self, Call, Code, Instantiated, Malformed, Numeric, Pod, Reader, Writer};
use super::WorkerProcess;
use crate::error::{Error, Result};
use crate::fmu::description::{ModelDescription, ValueReference};
use crate::fmu::instance::{lock, CallSink, FmuLogMessage, LogSink};
use crate::fmu::slave::{
    DiscreteStatesUpdate, IntervalQualifier, PolynomialInputMode, Slave, SlaveState, StateId,
    StepResult,
};

/// How often a waiting master looks whether its worker still lives (and the call's deadline).
const LIVENESS_SLICE: Duration = Duration::from_millis(10);

/// A [`Slave`] hosted by a `cosimo worker` process.
///
/// Setters are queued in the channel and sent with the next call that returns something, so a
/// step's inputs, the step and its outputs cost two round trips. An error of a queued setter is
/// returned by that next call (it names the setter's FMI function). A worker that dies or
/// overruns the call timeout ends every later call with [`Error::Worker`] naming the call, the
/// time and the cause; the instance is then in state `Fatal` (nothing can be called any more).
pub struct WorkerSlave {
    name: String,
    description: Arc<ModelDescription>,
    fmi3: bool,
    /// The worker process (shared with the other components it hosts) and this component's
    /// slot in its shared memory.
    process: Arc<WorkerProcess>,
    channel: Channel,
    /// An FMI call that takes longer kills the worker process.
    call_timeout: Option<Duration>,
    /// Number of the last request published.
    seq: u32,
    /// Bytes of queued records in the request region.
    queued: usize,
    state: SlaveState,
    calls: u64,
    answers: Instantiated,
    /// The simulation time of the last step (for messages).
    time: f64,
    /// Why the worker is gone, once it is.
    gone: Option<String>,
    call_sink: Option<CallSink>,
    log_sink: Option<LogSink>,
    /// Getters that followed the last step, run ahead with the next one.
    read_ahead: ReadAhead,
    /// How long the master spins for this worker's replies.
    patience: Patience,
    /// A request was published and its reply not yet received (a step in the background).
    in_flight: bool,
    /// When the last request was published (the call timeout counts from there).
    sent_at: Instant,
    /// The call the last reply answered (for messages about a malformed reply).
    last_call: Code,
    _keep_alive: Option<Arc<dyn Any + Send + Sync>>,
}

/// The getters a master calls right after every step (its outputs), learned after one step and
/// then sent with the next step (see [`wire::READ_AHEAD`]), so that a step with its inputs and
/// outputs costs one round trip. A value read ahead is served only to the identical getter
/// called in the same order with no other call in between: exactly what the FMU would answer
/// then.
#[derive(Default)]
struct ReadAhead {
    /// (getter, value references, value count) after the last step, in call order.
    learned: Vec<(Code, Vec<ValueReference>, usize)>,
    /// Recording the getters after a step.
    learning: bool,
    /// Where the values read ahead start in the reply region (`None`: that getter failed).
    offsets: Vec<Option<usize>>,
    /// The next read-ahead getter to serve, while `live`.
    next: usize,
    /// The reply region still holds values read ahead that have not been served.
    live: bool,
}

impl WorkerSlave {
    /// A slave over a freshly spawned worker whose channel is `channel`; sends the instantiation.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn start(
        name: &str,
        description: Arc<ModelDescription>,
        (process, channel): (Arc<WorkerProcess>, Channel),
        call_timeout: Option<Duration>,
        instantiation: &wire::Instantiation,
        sinks: (Option<CallSink>, Option<LogSink>),
        keep_alive: Option<Arc<dyn Any + Send + Sync>>,
    ) -> Result<WorkerSlave> {
        let fmi3 = description.fmi_version == crate::fmu::FmiVersion::Fmi3;
        let mut slave = WorkerSlave {
            name: name.to_string(),
            description,
            fmi3,
            process,
            channel,
            call_timeout,
            seq: 0,
            queued: 0,
            state: SlaveState::Instantiated,
            calls: 0,
            answers: Instantiated {
                can_save_state: false,
                provides_directional_derivatives: false,
                max_output_derivative_order: 0,
                pid: 0,
            },
            time: 0.0,
            gone: None,
            call_sink: sinks.0,
            log_sink: sinks.1,
            read_ahead: ReadAhead::default(),
            patience: Patience::new(MAX_SPIN),
            in_flight: false,
            sent_at: Instant::now(),
            last_call: Code::Plain(Call::Instantiate),
            _keep_alive: keep_alive,
        };
        let json = serde_json::to_vec(instantiation).map_err(|e| Error::Internal(e.to_string()))?;
        slave.call(Code::Plain(Call::Instantiate), |w| w.slice(&json))?;
        let answer = slave.reply(|r| r.slice::<u8>().map(|b| b.into_owned()))?;
        slave.answers = serde_json::from_slice(&answer).map_err(|e| {
            slave.protocol_error(Code::Plain(Call::Instantiate), &format!("bad answer: {e}"))
        })?;
        Ok(slave)
    }

    /// The worker's process id.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    fn fmi(&self, code: Code) -> String {
        code.fmi_function(self.fmi3)
    }

    fn protocol_error(&self, code: Code, message: &str) -> Error {
        Error::Worker {
            component: self.name.clone(),
            message: format!(
                "the worker process (pid {}) answered {} with a malformed message: {message}",
                self.process.pid(),
                self.fmi(code)
            ),
        }
    }

    fn refuse_if_gone(&self, code: Code) -> Result<()> {
        if self.in_flight {
            return Err(Error::Internal(format!(
                "component \"{}\": {} while a step runs in the background",
                self.name,
                self.fmi(code)
            )));
        }
        match &self.gone {
            None => Ok(()),
            Some(reason) => Err(Error::Worker {
                component: self.name.clone(),
                message: format!("{} not called: {reason}", self.fmi(code)),
            }),
        }
    }

    /// Before any call: refuse it when the worker is gone or busy, and end the values read
    /// ahead (any call may change what the FMU would answer).
    fn begin(&mut self, code: Code) -> Result<()> {
        self.refuse_if_gone(code)?;
        self.read_ahead.live = false;
        self.read_ahead.learning = false;
        Ok(())
    }

    /// Queue a record without waiting (setters).
    fn queue(
        &mut self,
        code: Code,
        encode: impl Fn(&mut Writer<'_>) -> std::result::Result<(), Malformed>,
    ) -> Result<()> {
        self.begin(code)?;
        self.append(code, &encode)
    }

    /// Queue `code` behind the queued setters, send them all and wait for the reply.
    fn call(
        &mut self,
        code: Code,
        encode: impl Fn(&mut Writer<'_>) -> std::result::Result<(), Malformed>,
    ) -> Result<()> {
        self.begin(code)?;
        self.append(code, &encode)?;
        self.exchange(code)
    }

    /// Write a record behind the queued ones; when it does not fit, send the queued ones first.
    fn append(
        &mut self,
        code: Code,
        encode: &dyn Fn(&mut Writer<'_>) -> std::result::Result<(), Malformed>,
    ) -> Result<()> {
        loop {
            // SAFETY: between calls the master owns the regions (the worker waits).
            let region = unsafe { self.channel.request_region() };
            let mut writer = Writer::new(region, self.queued);
            let written = writer.begin_record(code).and_then(|at| {
                encode(&mut writer)?;
                writer.end_record(at);
                Ok(())
            });
            match written {
                Ok(()) => {
                    self.queued = writer.position();
                    return Ok(());
                }
                Err(_) if self.queued > 0 => self.exchange(code)?,
                Err(_) => {
                    return Err(Error::Usage(format!(
                    "component \"{}\": the data of {} do not fit into the worker channel ({} MiB)",
                    self.name,
                    self.fmi(code),
                    REGION_SIZE >> 20
                )))
                }
            }
        }
    }

    /// Queue a getter to run ahead after the step queued before it.
    fn append_read_ahead(
        &mut self,
        getter: Code,
        vrs: &[ValueReference],
        count: usize,
    ) -> Result<()> {
        // SAFETY: between calls the master owns the regions.
        let region = unsafe { self.channel.request_region() };
        let mut writer = Writer::new(region, self.queued);
        let written = writer.begin_read_ahead(getter).and_then(|at| {
            writer.slice(vrs)?;
            writer.u64(count as u64)?;
            writer.end_record(at);
            Ok(())
        });
        // A read-ahead that does not fit is left out (the getter is then called for real).
        if written.is_ok() {
            self.queued = writer.position();
        }
        Ok(())
    }

    /// Publish the queued records and wait for the reply.
    fn exchange(&mut self, code: Code) -> Result<()> {
        self.send();
        self.receive(code)
    }

    /// Publish the queued records (the worker starts on them).
    fn send(&mut self) {
        let header = self.channel.header();
        header
            .request_len
            .store(self.queued as u64, Ordering::Relaxed);
        self.queued = 0;
        self.seq = self.seq.wrapping_add(1);
        self.sent_at = Instant::now();
        self.in_flight = true;
        self.channel.publish_request(self.seq);
    }

    /// Wait for the reply to what `send` published.
    fn receive(&mut self, code: Code) -> Result<()> {
        self.in_flight = false;
        self.last_call = code;
        let header = self.channel.header();
        let seq = self.seq;
        let started = self.sent_at;
        let deadline = self.call_timeout;
        let process = &self.process;
        let waited = wait_for(
            &header.reply,
            &header.master_sleeping,
            seq,
            self.patience.spin(),
            LIVENESS_SLICE,
            || -> std::result::Result<(), Ended> {
                if let Some(status) = process.exited() {
                    return Err(Ended::Died(status));
                }
                match deadline {
                    Some(limit) if started.elapsed() >= limit => Err(Ended::TimedOut(limit)),
                    _ => Ok(()),
                }
            },
        );
        match waited {
            Ok(waited) => self.patience.record(waited),
            Err(ended) => return Err(self.ended(code, ended)),
        }
        self.after_reply(code)
    }

    fn after_reply(&mut self, code: Code) -> Result<()> {
        let header = self.channel.header();
        let kind = header.reply_kind.load(Ordering::Relaxed);
        let state = header.reply_state.load(Ordering::Relaxed);
        self.calls = header.call_count.load(Ordering::Relaxed);
        let payload = header.reply_len.load(Ordering::Relaxed) as usize;
        let events = header.events_len.load(Ordering::Relaxed) as usize;
        if payload
            .checked_add(events)
            .is_none_or(|end| end > REGION_SIZE)
        {
            return Err(self.protocol_error(code, "lengths past the reply region"));
        }
        self.state = wire::state_from_wire(state)
            .ok_or_else(|| self.protocol_error(code, &format!("unknown state {state}")))?;
        if events > 0 {
            self.replay_events(code, payload, events)?;
        }
        match kind {
            REPLY_OK => Ok(()),
            REPLY_ERROR => {
                let json = self.reply(|r| r.slice::<u8>().map(|b| b.into_owned()))?;
                let error: wire::WireError = serde_json::from_slice(&json).map_err(|e| {
                    self.protocol_error(code, &format!("an error that does not decode: {e}"))
                })?;
                Err(Error::from(error))
            }
            other => Err(self.protocol_error(code, &format!("reply kind {other}"))),
        }
    }

    /// Read the reply's payload.
    fn reply<T>(
        &self,
        read: impl FnOnce(&mut Reader<'_>) -> std::result::Result<T, Malformed>,
    ) -> Result<T> {
        let len =
            (self.channel.header().reply_len.load(Ordering::Relaxed) as usize).min(REGION_SIZE);
        // SAFETY: after a reply the master owns the regions.
        let region = unsafe { &self.channel.reply_region()[..len] };
        read(&mut Reader::new(region)).map_err(|e| self.protocol_error(self.last_call, &e.0))
    }

    /// Hand the worker's traced calls and FMU log messages to the sinks (and the `log` crate),
    /// as the in-process instance does.
    fn replay_events(&self, code: Code, at: usize, len: usize) -> Result<()> {
        // SAFETY: after a reply the master owns the regions; the range was checked.
        let region = unsafe { &self.channel.reply_region()[at..at + len] };
        let mut reader = Reader::new(region);
        let mut decode = || -> std::result::Result<(), Malformed> {
            let count = reader.u64()?;
            for _ in 0..count {
                let kind = reader.u64()?;
                let status = wire::status_from_wire(reader.u64()?);
                let category = String::from_utf8_lossy(&reader.slice::<u8>()?).into_owned();
                let message = String::from_utf8_lossy(&reader.slice::<u8>()?).into_owned();
                if kind == wire::EVENT_CALL {
                    match &self.call_sink {
                        Some(sink) => sink(&self.name, &message),
                        None => log::info!(target: "fmi_calls", "{}: {message}", self.name),
                    }
                } else {
                    crate::fmu::instance::log_fmu_message(&self.name, status, &category, &message);
                    if let Some(sink) = &self.log_sink {
                        sink(&FmuLogMessage {
                            instance: self.name.clone(),
                            status,
                            category,
                            message,
                        });
                    }
                }
            }
            Ok(())
        };
        decode().map_err(|e| self.protocol_error(code, &e.0))
    }

    /// The worker died or overran its time: reap it, and describe what happened (and, for the
    /// other components it hosted, what ended it).
    fn ended(&mut self, code: Code, ended: Ended) -> Error {
        let pid = self.process.pid();
        let others: Vec<String> = self
            .process
            .members()
            .iter()
            .filter(|m| **m != self.name)
            .cloned()
            .collect();
        let hosting = match others.as_slice() {
            [] => "hosting it".to_string(),
            [other] => format!("hosting it and \"{other}\""),
            _ => format!("hosting it and {} other components", others.len()),
        };
        let reason = match ended {
            Ended::Died(status) => match lock(&self.process.ended).clone() {
                // Another component of this worker found out first (its call timed out).
                Some((component, reason)) if component != self.name => {
                    format!("the worker process (pid {pid}) {hosting} is gone: \"{component}\": {reason}")
                }
                _ => {
                    let during = match self.process.running() {
                        Some((component, call)) if component != self.name => format!(
                            "\"{component}\"'s {}",
                            call.map_or("call".to_string(), |c| c.fmi_function(self.fmi3))
                        ),
                        _ => self.during(code),
                    };
                    format!(
                        "the worker process (pid {pid}) {hosting} {} during {during}{}",
                        describe_exit(status),
                        match self.process.memory_limit {
                            Some(limit) if died_of_memory(status) => format!(
                                "; it may have reached its memory limit of {} MiB (--worker-memory)",
                                limit >> 20
                            ),
                            _ => String::new(),
                        }
                    )
                }
            },
            Ended::TimedOut(limit) => {
                self.kill();
                format!(
                    "{} did not return within the call timeout of {} s; its worker process (pid {pid}){} was killed",
                    self.during(code),
                    limit.as_secs_f64(),
                    match others.len() {
                        0 => String::new(),
                        1 => format!(", hosting \"{}\" too,", others[0]),
                        n => format!(", hosting {n} other components too,"),
                    }
                )
            }
        };
        lock(&self.process.ended).get_or_insert_with(|| (self.name.clone(), reason.clone()));
        self.state = SlaveState::Fatal;
        self.gone = Some(reason.clone());
        Error::Worker {
            component: self.name.clone(),
            message: reason,
        }
    }

    /// "fmi2DoStep from t = 1", "fmi2GetReal at t = 2".
    fn during(&self, code: Code) -> String {
        match code {
            Code::Plain(Call::DoStep) => {
                format!(
                    "{} from t = {}",
                    self.fmi(code),
                    crate::numbers::number(self.time)
                )
            }
            Code::Plain(Call::Instantiate) => self.fmi(code),
            _ => format!(
                "{} at t = {}",
                self.fmi(code),
                crate::numbers::number(self.time)
            ),
        }
    }

    fn kill(&mut self) {
        self.process.kill();
    }

    fn get<T: Pod>(&mut self, t: Numeric, vrs: &[ValueReference], values: &mut [T]) -> Result<()> {
        if let Some(at) = self.served(Code::Get(t), vrs, values.len()) {
            return self.reply_at(at, |r| r.slice_into(values));
        }
        let learning = self.read_ahead.learning;
        // FMI 3 arrays: one value reference stands for many values.
        self.call(Code::Get(t), |w| {
            w.slice(vrs)?;
            w.u64(values.len() as u64)
        })?;
        self.learn(learning, Code::Get(t), vrs, values.len());
        self.reply(|r| r.slice_into(values))
    }

    /// Where the values of this getter, read ahead, are in the reply region, if they are.
    fn served(&mut self, code: Code, vrs: &[ValueReference], count: usize) -> Option<usize> {
        let ra = &mut self.read_ahead;
        if !ra.live {
            return None;
        }
        let next = ra.next;
        match ra.learned.get(next) {
            Some((c, v, n)) if *c == code && v.as_slice() == vrs && *n == count => {
                ra.next += 1;
                // `None` when it failed ahead: the call itself then gets the error.
                ra.offsets.get(next).copied().flatten()
            }
            // Another pattern: learn it from here.
            _ => {
                ra.learned.truncate(next);
                ra.live = false;
                ra.learning = true;
                None
            }
        }
    }

    /// After a getter called for real: record it if the getters after a step are being learned.
    fn learn(&mut self, learning: bool, code: Code, vrs: &[ValueReference], count: usize) {
        if learning && self.read_ahead.learned.len() < 64 {
            self.read_ahead.learned.push((code, vrs.to_vec(), count));
            self.read_ahead.learning = true;
        }
    }

    /// Read from the reply region at `at` (values read ahead).
    fn reply_at<T>(
        &self,
        at: usize,
        read: impl FnOnce(&mut Reader<'_>) -> std::result::Result<T, Malformed>,
    ) -> Result<T> {
        let len =
            (self.channel.header().reply_len.load(Ordering::Relaxed) as usize).min(REGION_SIZE);
        // SAFETY: after a reply the master owns the regions.
        let region = unsafe { &self.channel.reply_region()[..len] };
        read(&mut Reader::new(region).at(at))
            .map_err(|e| self.protocol_error(Code::Plain(Call::DoStep), &e.0))
    }

    fn set<T: Pod>(&mut self, t: Numeric, vrs: &[ValueReference], values: &[T]) -> Result<()> {
        self.queue(Code::Set(t), |w| {
            w.slice(vrs)?;
            w.slice(values)
        })
    }

    fn plain(&mut self, call: Call) -> Result<()> {
        self.call(Code::Plain(call), |_| Ok(()))
    }

    fn with_state(&mut self, call: Call, state: StateId) -> Result<()> {
        self.call(Code::Plain(call), |w| w.u64(state.0 as u64))
    }

    fn state_id(&self) -> Result<StateId> {
        let id = self.reply(|r| r.u64())?;
        usize::try_from(id)
            .map(StateId)
            .map_err(|_| self.protocol_error(Code::Plain(Call::SaveState), "a state id"))
    }
}

/// Bytes of one value of a getter's type.
fn value_size(getter: Code) -> usize {
    match getter {
        Code::Get(Numeric::Float64 | Numeric::Int64 | Numeric::UInt64) => 8,
        Code::Get(Numeric::Float32 | Numeric::Int32 | Numeric::UInt32) => 4,
        Code::Get(Numeric::Int16 | Numeric::UInt16) => 2,
        _ => 1,
    }
}

/// Why a wait for the worker ended without a reply.
enum Ended {
    Died(std::process::ExitStatus),
    TimedOut(Duration),
}

/// "was killed by signal 11 (SIGSEGV)", "exited with code 3".
fn describe_exit(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.signal(), status.code()) {
        (Some(signal), _) => format!(
            "was killed by signal {signal} ({}){}",
            signal_name(signal),
            if status.core_dumped() {
                ", core dumped"
            } else {
                ""
            }
        ),
        (None, Some(code)) => format!("exited with code {code} (the FMU ended the process)"),
        (None, None) => format!("ended ({status})"),
    }
}

fn died_of_memory(status: std::process::ExitStatus) -> bool {
    use std::os::unix::process::ExitStatusExt;
    matches!(
        status.signal(),
        Some(libc::SIGABRT | libc::SIGKILL | libc::SIGSEGV)
    )
}

fn signal_name(signal: i32) -> &'static str {
    crate::fmu::crash::signal_name(signal)
}

impl Drop for WorkerSlave {
    fn drop(&mut self) {
        // Whatever waits below ends within the call timeout, or 10 s.
        if self.call_timeout.is_none() {
            self.call_timeout = Some(Duration::from_secs(10));
        }
        if self.in_flight && self.gone.is_none() {
            // A step started in the background (another component failed meanwhile): let it
            // end before freeing.
            let _ = self.receive(Code::Plain(Call::DoStep));
        }
        if self.gone.is_none() {
            // Free the instance (the worker exits once all its instances are freed, and the
            // last member's `WorkerProcess` reaps it); a worker that does not answer is killed.
            self.queued = 0;
            match self.call(Code::Plain(Call::Free), |_| Ok(())) {
                Ok(()) => return,
                // The FMU crashed as it was freed: what the run gave stands.
                Err(error) if self.process.exited().is_some() => {
                    log::warn!("{error}; the instance was being freed, after its last call");
                }
                Err(_) => {}
            }
        }
        self.kill();
    }
}

macro_rules! numeric {
    ($get:ident, $set:ident, $t:ty, $n:expr) => {
        fn $get(&mut self, vrs: &[ValueReference], values: &mut [$t]) -> Result<()> {
            self.get($n, vrs, values)
        }
        fn $set(&mut self, vrs: &[ValueReference], values: &[$t]) -> Result<()> {
            self.set($n, vrs, values)
        }
    };
}

impl Slave for WorkerSlave {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &Arc<ModelDescription> {
        &self.description
    }
    fn state(&self) -> SlaveState {
        self.state
    }
    fn enter_configuration_mode(&mut self) -> Result<()> {
        self.plain(Call::EnterConfigurationMode)
    }
    fn exit_configuration_mode(&mut self) -> Result<()> {
        self.plain(Call::ExitConfigurationMode)
    }
    fn enter_initialization_mode(
        &mut self,
        tolerance: Option<f64>,
        start_time: f64,
        stop_time: Option<f64>,
    ) -> Result<()> {
        self.time = start_time;
        self.call(Code::Plain(Call::EnterInitializationMode), |w| {
            w.u64(u64::from(tolerance.is_some()))?;
            w.f64(tolerance.unwrap_or(0.0))?;
            w.f64(start_time)?;
            w.u64(u64::from(stop_time.is_some()))?;
            w.f64(stop_time.unwrap_or(0.0))
        })
    }
    fn exit_initialization_mode(&mut self) -> Result<()> {
        self.plain(Call::ExitInitializationMode)
    }
    fn do_step(&mut self, current_time: f64, step_size: f64) -> Result<StepResult> {
        self.start_step(current_time, step_size)?;
        self.finish_step()
    }
    fn steps_in_background(&self) -> bool {
        true
    }
    fn start_step(&mut self, current_time: f64, step_size: f64) -> Result<()> {
        self.time = current_time;
        let code = Code::Plain(Call::DoStep);
        self.begin(code)?;
        self.append(code, &|w: &mut Writer<'_>| {
            w.f64(current_time)?;
            w.f64(step_size)
        })?;
        let learned = std::mem::take(&mut self.read_ahead.learned);
        for (getter, vrs, count) in &learned {
            self.append_read_ahead(*getter, vrs, *count)?;
        }
        self.read_ahead.learned = learned;
        self.send();
        Ok(())
    }
    fn finish_step(&mut self) -> Result<StepResult> {
        let code = Code::Plain(Call::DoStep);
        if !self.in_flight {
            return Err(Error::Internal(format!(
                "component \"{}\": finish_step without a step started in the background",
                self.name
            )));
        }
        self.receive(code)?;
        let learned = std::mem::take(&mut self.read_ahead.learned);
        let mut offsets = std::mem::take(&mut self.read_ahead.offsets);
        offsets.clear();
        let reply = self.reply(|r| {
            let result = (r.f64()?, r.u64()?);
            for (getter, _, count) in &learned {
                if r.u64()? == 1 {
                    offsets.push(Some(r.position()));
                    r.skip_values(value_size(*getter), *count)?;
                } else {
                    offsets.push(None);
                }
            }
            Ok(result)
        });
        let ra = &mut self.read_ahead;
        ra.learned = learned;
        ra.offsets = offsets;
        let (reached_time, flags) = reply?;
        ra.next = 0;
        ra.live = !ra.learned.is_empty();
        // Nothing learned yet: learn from the getters that follow this step.
        ra.learning = ra.learned.is_empty();
        self.time = reached_time;
        Ok(StepResult {
            reached_time,
            early_return: flags & 1 != 0,
            event_handling_needed: flags & 2 != 0,
            terminate_simulation: flags & 4 != 0,
        })
    }
    fn enter_event_mode(&mut self) -> Result<()> {
        self.plain(Call::EnterEventMode)
    }
    fn get_clock(&mut self, vrs: &[ValueReference], active: &mut [bool]) -> Result<()> {
        self.call(Code::Plain(Call::GetClock), |w| w.slice(vrs))?;
        self.reply(|r| r.bools_into(active))
    }
    fn set_clock(&mut self, vrs: &[ValueReference], active: &[bool]) -> Result<()> {
        self.call(Code::Plain(Call::SetClock), |w| {
            w.slice(vrs)?;
            w.bools(active)
        })
    }
    fn get_interval_decimal(
        &mut self,
        vrs: &[ValueReference],
        intervals: &mut [f64],
        qualifiers: &mut [IntervalQualifier],
    ) -> Result<()> {
        self.call(Code::Plain(Call::GetIntervalDecimal), |w| w.slice(vrs))?;
        let raw = self.reply(|r| {
            r.slice_into(intervals)?;
            r.slice::<i32>().map(|v| v.into_owned())
        })?;
        for (q, &r) in qualifiers.iter_mut().zip(&raw) {
            *q = IntervalQualifier::from_raw(r).ok_or_else(|| {
                self.protocol_error(
                    Code::Plain(Call::GetIntervalDecimal),
                    "an interval qualifier",
                )
            })?;
        }
        Ok(())
    }
    fn update_discrete_states(&mut self) -> Result<DiscreteStatesUpdate> {
        self.plain(Call::UpdateDiscreteStates)?;
        let (flags, next) = self.reply(|r| Ok((r.u64()?, r.f64()?)))?;
        Ok(DiscreteStatesUpdate {
            discrete_states_need_update: flags & 1 != 0,
            terminate_simulation: flags & 2 != 0,
            nominals_of_continuous_states_changed: flags & 4 != 0,
            values_of_continuous_states_changed: flags & 8 != 0,
            next_event_time: (flags & 16 != 0).then_some(next),
        })
    }
    fn enter_step_mode(&mut self) -> Result<()> {
        self.plain(Call::EnterStepMode)
    }
    fn terminate(&mut self) -> Result<()> {
        self.plain(Call::Terminate)
    }
    fn reset(&mut self) -> Result<()> {
        self.plain(Call::Reset)
    }

    numeric!(get_float64, set_float64, f64, Numeric::Float64);
    numeric!(get_float32, set_float32, f32, Numeric::Float32);
    numeric!(get_int8, set_int8, i8, Numeric::Int8);
    numeric!(get_uint8, set_uint8, u8, Numeric::UInt8);
    numeric!(get_int16, set_int16, i16, Numeric::Int16);
    numeric!(get_uint16, set_uint16, u16, Numeric::UInt16);
    numeric!(get_int32, set_int32, i32, Numeric::Int32);
    numeric!(get_uint32, set_uint32, u32, Numeric::UInt32);
    numeric!(get_int64, set_int64, i64, Numeric::Int64);
    numeric!(get_uint64, set_uint64, u64, Numeric::UInt64);

    fn get_boolean(&mut self, vrs: &[ValueReference], values: &mut [bool]) -> Result<()> {
        let code = Code::Get(Numeric::Boolean);
        if let Some(at) = self.served(code, vrs, values.len()) {
            return self.reply_at(at, |r| r.bools_into(values));
        }
        let learning = self.read_ahead.learning;
        self.call(code, |w| {
            w.slice(vrs)?;
            w.u64(values.len() as u64)
        })?;
        self.learn(learning, code, vrs, values.len());
        self.reply(|r| r.bools_into(values))
    }
    fn set_boolean(&mut self, vrs: &[ValueReference], values: &[bool]) -> Result<()> {
        self.queue(Code::Set(Numeric::Boolean), |w| {
            w.slice(vrs)?;
            w.bools(values)
        })
    }
    fn get_string(&mut self, vrs: &[ValueReference]) -> Result<Vec<String>> {
        self.call(Code::Plain(Call::GetString), |w| w.slice(vrs))?;
        self.reply(|r| {
            Ok(r.byte_strings()?
                .into_iter()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .collect())
        })
    }
    fn set_string(&mut self, vrs: &[ValueReference], values: &[&str]) -> Result<()> {
        self.queue(Code::Plain(Call::SetString), |w| {
            w.slice(vrs)?;
            w.byte_strings(values)
        })
    }
    fn get_binary(&mut self, vrs: &[ValueReference]) -> Result<Vec<Vec<u8>>> {
        self.call(Code::Plain(Call::GetBinary), |w| w.slice(vrs))?;
        self.reply(|r| Ok(r.byte_strings()?.into_iter().map(<[u8]>::to_vec).collect()))
    }
    fn set_binary(&mut self, vrs: &[ValueReference], values: &[&[u8]]) -> Result<()> {
        self.queue(Code::Plain(Call::SetBinary), |w| {
            w.slice(vrs)?;
            w.byte_strings(values)
        })
    }

    fn can_save_state(&self) -> bool {
        self.answers.can_save_state
    }
    fn save_state(&mut self) -> Result<StateId> {
        self.plain(Call::SaveState)?;
        self.state_id()
    }
    fn update_state(&mut self, state: StateId) -> Result<()> {
        self.with_state(Call::UpdateState, state)
    }
    fn restore_state(&mut self, state: StateId) -> Result<()> {
        self.with_state(Call::RestoreState, state)
    }
    fn free_state(&mut self, state: StateId) -> Result<()> {
        self.with_state(Call::FreeState, state)
    }
    fn serialize_state(&mut self, state: StateId) -> Result<Vec<u8>> {
        self.with_state(Call::SerializeState, state)?;
        self.reply(|r| r.slice::<u8>().map(|b| b.into_owned()))
    }
    fn deserialize_state(&mut self, bytes: &[u8]) -> Result<StateId> {
        self.call(Code::Plain(Call::DeserializeState), |w| w.slice(bytes))?;
        self.state_id()
    }

    fn provides_directional_derivatives(&self) -> bool {
        self.answers.provides_directional_derivatives
    }
    fn directional_derivative(
        &mut self,
        unknowns: &[ValueReference],
        knowns: &[ValueReference],
        seed: &[f64],
        sensitivity: &mut [f64],
    ) -> Result<()> {
        self.call(Code::Plain(Call::DirectionalDerivative), |w| {
            w.slice(unknowns)?;
            w.slice(knowns)?;
            w.slice(seed)?;
            w.u64(sensitivity.len() as u64)
        })?;
        self.reply(|r| r.slice_into(sensitivity))
    }

    fn max_output_derivative_order(&self) -> u32 {
        self.answers.max_output_derivative_order
    }
    fn get_output_derivatives(
        &mut self,
        vrs: &[ValueReference],
        order: u32,
        values: &mut [f64],
    ) -> Result<()> {
        self.call(Code::Plain(Call::GetOutputDerivatives), |w| {
            w.slice(vrs)?;
            w.u64(u64::from(order))?;
            w.u64(values.len() as u64)
        })?;
        self.reply(|r| r.slice_into(values))
    }

    fn set_input_polynomial(
        &mut self,
        vrs: &[ValueReference],
        order: usize,
        taylor: &[f64],
    ) -> Result<PolynomialInputMode> {
        self.call(Code::Plain(Call::SetInputPolynomial), |w| {
            w.slice(vrs)?;
            w.u64(order as u64)?;
            w.slice(taylor)
        })?;
        match self.reply(|r| r.u64())? {
            0 => Ok(PolynomialInputMode::InputDerivatives),
            1 => Ok(PolynomialInputMode::IntermediateUpdate),
            2 => Ok(PolynomialInputMode::SubSteps),
            3 => Ok(PolynomialInputMode::Evaluated),
            other => Err(self.protocol_error(
                Code::Plain(Call::SetInputPolynomial),
                &format!("input mode {other}"),
            )),
        }
    }

    fn set_macro_step(&mut self, span: Option<(f64, f64)>) -> Result<()> {
        self.call(Code::Plain(Call::SetMacroStep), |w| {
            w.u64(u64::from(span.is_some()))?;
            let (start, end) = span.unwrap_or((0.0, 0.0));
            w.f64(start)?;
            w.f64(end)
        })
    }

    fn call_count(&self) -> u64 {
        self.calls
    }
}

/// Statuses are forwarded as numbers: keep the conversion honest.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::FmiStatus;

    #[test]
    fn statuses_cross_the_channel() {
        for status in [
            FmiStatus::Ok,
            FmiStatus::Warning,
            FmiStatus::Discard,
            FmiStatus::Error,
            FmiStatus::Fatal,
            FmiStatus::Pending,
            FmiStatus::Unknown(-7),
        ] {
            assert_eq!(wire::status_from_wire(wire::status_to_wire(status)), status);
        }
    }
}
