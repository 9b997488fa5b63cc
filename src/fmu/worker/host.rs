//! The worker's side: `cosimo worker` maps the channel, instantiates the FMU in its own process
//! and answers calls until the master frees the instance or goes away.

use std::borrow::Cow;
use std::collections::HashMap;
use std::os::fd::RawFd;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::channel::{
    publish, wait_for_change, Channel, GroupHeader, Mapping, Patience, REGION_SIZE,
};
use super::wire::{
    self, Call, Code, Instantiated, Instantiation, Malformed, Numeric, Pod, Reader, WireError,
    Writer,
};
use crate::error::{Error, FmiStatus, Result};
use crate::fmu::instance::{lock, CallSink, InstanceOptions, LogSink};
use crate::fmu::{Fmu, IntervalQualifier, PolynomialInputMode, Slave, StateId};

/// Reply kinds (the header's `reply_kind`).
pub const REPLY_OK: u32 = 0;
pub const REPLY_ERROR: u32 = 1;

/// Messages collected while a call runs, forwarded with its reply.
type Events = Arc<Mutex<Vec<(u64, FmiStatus, String, String)>>>;

/// Serve the instances whose shared memory was handed over as descriptor `fd` until the
/// master has freed every one (then the process ends with `_exit(0)`, skipping library
/// finalizers that crash some FMUs at exit) or is gone.
pub fn serve(fd: RawFd) -> Result<()> {
    let mapping = Mapping::open(fd).map_err(|e| {
        Error::Usage(format!(
            "cosimo worker: {e}; the worker is started by cosimo itself (--isolate), not by hand"
        ))
    })?;
    // A crash kills the worker by its signal, which the master reports (the Python module,
    // imported by a worker, installed the in-process report).
    crate::fmu::crash::uninstall();
    // The master handles Ctrl-C and ends its workers; a worker must not die first of it.
    // SAFETY: setting a signal disposition to "ignore" is always sound.
    unsafe { libc::signal(libc::SIGINT, libc::SIG_IGN) };
    let master = unsafe { libc::getppid() };
    let group = mapping.group();
    let mut slots: Vec<Slot> = (0..mapping.slots())
        .map(|k| Slot {
            channel: Channel::new(&mapping, k),
            host: Host {
                slave: None,
                events: Arc::default(),
            },
            seen: 0,
            freed: false,
        })
        .collect();
    let mut opened: HashMap<PathBuf, Arc<Fmu>> = HashMap::new();
    // How long to spin for the next request: known once the master's first request (which it
    // publishes after writing the limit) has arrived.
    let mut patience: Option<Patience> = None;
    let mut idle_since = std::time::Instant::now();
    loop {
        // Read the doorbell before looking at the slots: a request published after the look
        // has rung it since.
        let bell = group.doorbell.load(Ordering::SeqCst);
        let mut served = false;
        for (k, slot) in slots.iter_mut().enumerate() {
            let request = slot.channel.header().request.load(Ordering::Acquire);
            if slot.freed || request == slot.seen {
                continue;
            }
            if !served {
                let waited = idle_since.elapsed();
                patience
                    .get_or_insert_with(|| {
                        let limit = group.worker_spin_ns.load(Ordering::Relaxed);
                        Patience::new(Duration::from_nanos(limit))
                    })
                    .record(waited);
            }
            served = true;
            slot.seen = request;
            group.running_slot.store(k as u32 + 1, Ordering::Relaxed);
            slot.serve(group, &mut opened);
            group.running_slot.store(0, Ordering::Relaxed);
        }
        if slots.iter().all(|s| s.freed) {
            // SAFETY: ends this process at once; every instance was freed.
            unsafe { libc::_exit(0) };
        }
        if served {
            idle_since = std::time::Instant::now();
            continue;
        }
        let spin = patience.map_or(Duration::ZERO, |p| p.spin());
        let waited = wait_for_change(
            &group.doorbell,
            &group.worker_sleeping,
            bell,
            spin,
            Duration::from_secs(1),
            // SAFETY: getppid cannot fail.
            || match unsafe { libc::getppid() } == master {
                true => Ok(()),
                false => Err(()),
            },
        );
        if waited.is_err() {
            // The master is gone (it was killed): nobody will free the instances.
            // SAFETY: ends this process at once.
            unsafe { libc::_exit(0) };
        }
    }
}

/// One hosted instance: its channel, its instance and the last request served.
struct Slot {
    channel: Channel,
    host: Host,
    seen: u32,
    freed: bool,
}

impl Slot {
    /// Run the request just published on this slot and publish the reply.
    fn serve(&mut self, group: &GroupHeader, opened: &mut HashMap<PathBuf, Arc<Fmu>>) {
        let header = self.channel.header();
        let len = (header.request_len.load(Ordering::Relaxed) as usize).min(REGION_SIZE);
        // SAFETY: the master published a request: the worker owns both regions until it replies.
        let (request, reply) = unsafe {
            (
                &self.channel.request_region()[..len],
                self.channel.reply_region(),
            )
        };
        let mut writer = Writer::new(reply, 0);
        let (kind, free) = match self
            .host
            .run(Reader::new(request), &mut writer, group, opened)
        {
            Ok(free) => (REPLY_OK, free),
            Err(error) => {
                writer.reset();
                let json = serde_json::to_vec(&WireError::from(&error)).unwrap_or_default();
                // An error too large for the region is cut to what fits (and then not valid
                // JSON, which the master reports as such).
                let _ = writer.slice(&json[..json.len().min(REGION_SIZE / 2)]);
                (REPLY_ERROR, false)
            }
        };
        let payload_len = writer.position();
        let taken: Vec<_> = std::mem::take(&mut *lock(&self.host.events));
        let _ = writer.u64(taken.len() as u64);
        for (kind, status, category, message) in &taken {
            let _ = writer.u64(*kind);
            let _ = writer.u64(wire::status_to_wire(*status));
            let _ = writer.slice(category.as_bytes());
            let _ = writer.slice(message.as_bytes());
        }
        let events_len = writer.position() - payload_len;
        use std::sync::atomic::Ordering::Relaxed;
        header.reply_kind.store(kind, Relaxed);
        header.reply_len.store(payload_len as u64, Relaxed);
        header.events_len.store(events_len as u64, Relaxed);
        let (state, calls) = self.host.slave.as_ref().map_or(
            (wire::state_to_wire(crate::fmu::SlaveState::Terminated), 0),
            |s| (wire::state_to_wire(s.state()), s.call_count()),
        );
        header.reply_state.store(state, Relaxed);
        header.call_count.store(calls, Relaxed);
        self.freed = free;
        publish(&header.reply, &header.master_sleeping, self.seen);
    }
}

struct Host {
    slave: Option<Box<dyn Slave>>,
    events: Events,
}

fn malformed(e: Malformed) -> Error {
    Error::Internal(format!("the worker received a malformed request: {}", e.0))
}

impl Host {
    /// Run every record of a request; returns whether the instance was freed.
    fn run(
        &mut self,
        mut request: Reader<'_>,
        reply: &mut Writer<'_>,
        group: &GroupHeader,
        opened: &mut HashMap<PathBuf, Arc<Fmu>>,
    ) -> Result<bool> {
        // Each record appends its output: a step's result, then the values read ahead.
        while !request.is_at_end() {
            let (code, read_ahead, payload) = request.record().map_err(malformed)?;
            group.running_call.store(code.raw(), Ordering::Relaxed);
            if code == Code::Plain(Call::Free) {
                self.slave = None;
                return Ok(true);
            }
            if read_ahead {
                let at = reply.position();
                reply.u64(1).map_err(malformed)?;
                if self.one(code, payload, reply, opened).is_err() {
                    reply.truncate(at);
                    reply.u64(0).map_err(malformed)?;
                }
            } else {
                self.one(code, payload, reply, opened)?;
            }
        }
        Ok(false)
    }

    fn slave(&mut self) -> Result<&mut Box<dyn Slave>> {
        self.slave
            .as_mut()
            .ok_or_else(|| Error::Internal("the worker has no instance yet".into()))
    }

    fn one(
        &mut self,
        code: Code,
        mut p: Reader<'_>,
        out: &mut Writer<'_>,
        opened: &mut HashMap<PathBuf, Arc<Fmu>>,
    ) -> Result<()> {
        let m = malformed;
        match code {
            Code::Get(t) => get(self.slave()?.as_mut(), t, &mut p, out),
            Code::Set(t) => set(self.slave()?.as_mut(), t, &mut p),
            Code::Plain(call) => match call {
                Call::Instantiate => {
                    let json = p.slice::<u8>().map_err(m)?;
                    let spec: Instantiation = serde_json::from_slice(&json).map_err(|e| {
                        Error::Internal(format!("the worker received bad instance settings: {e}"))
                    })?;
                    // Instances of one FMU in one worker share its library, as in the master.
                    let fmu = match opened.get(&spec.fmu) {
                        Some(fmu) => fmu.clone(),
                        None => {
                            let fmu = Arc::new(Fmu::open(&spec.fmu)?);
                            opened.insert(spec.fmu.clone(), fmu.clone());
                            fmu
                        }
                    };
                    // The master chose the interface; a second view has its own library.
                    let fmu = match spec.interface {
                        Some(interface) if fmu.interface() != Some(interface) => {
                            let key = spec.fmu.join(format!("#{interface}"));
                            match opened.get(&key) {
                                Some(view) => view.clone(),
                                None => {
                                    let view = Arc::new(fmu.through(interface)?);
                                    opened.insert(key, view.clone());
                                    view
                                }
                            }
                        }
                        _ => fmu,
                    };
                    let events = self.events.clone();
                    let call_sink: CallSink = Arc::new(move |_, line| {
                        lock(&events).push((
                            wire::EVENT_CALL,
                            FmiStatus::Ok,
                            String::new(),
                            line.to_string(),
                        ))
                    });
                    let events = self.events.clone();
                    let log_sink: LogSink = Arc::new(move |m| {
                        lock(&events).push((
                            wire::EVENT_LOG,
                            m.status,
                            m.category.clone(),
                            m.message.clone(),
                        ))
                    });
                    let options = InstanceOptions {
                        logging_on: spec.logging_on,
                        log_fmi_calls: spec.log_fmi_calls,
                        call_sink: Some(call_sink),
                        log_sink: Some(log_sink),
                        event_mode: spec.event_mode,
                        early_return: spec.early_return,
                        sub_steps: spec.sub_steps,
                        force_sub_steps: spec.force_sub_steps,
                        debug_categories: spec.debug_categories,
                        keep_alive: None,
                        solver: spec.solver,
                    };
                    let slave = fmu.instantiate(&spec.name, options)?;
                    let answer = Instantiated {
                        can_save_state: slave.can_save_state(),
                        provides_directional_derivatives: slave.provides_directional_derivatives(),
                        max_output_derivative_order: slave.max_output_derivative_order(),
                        pid: std::process::id(),
                    };
                    self.slave = Some(slave);
                    let json =
                        serde_json::to_vec(&answer).map_err(|e| Error::Internal(e.to_string()))?;
                    out.slice(&json).map_err(m)
                }
                Call::Free => Ok(()),
                Call::EnterConfigurationMode => self.slave()?.enter_configuration_mode(),
                Call::ExitConfigurationMode => self.slave()?.exit_configuration_mode(),
                Call::EnterInitializationMode => {
                    let tolerance = optional(&mut p)?;
                    let start = p.f64().map_err(m)?;
                    let stop = optional(&mut p)?;
                    self.slave()?
                        .enter_initialization_mode(tolerance, start, stop)
                }
                Call::ExitInitializationMode => self.slave()?.exit_initialization_mode(),
                Call::DoStep => {
                    let t = p.f64().map_err(m)?;
                    let h = p.f64().map_err(m)?;
                    let r = self.slave()?.do_step(t, h)?;
                    out.f64(r.reached_time).map_err(m)?;
                    out.u64(
                        u64::from(r.early_return)
                            | u64::from(r.event_handling_needed) << 1
                            | u64::from(r.terminate_simulation) << 2,
                    )
                    .map_err(m)
                }
                Call::EnterEventMode => self.slave()?.enter_event_mode(),
                Call::UpdateDiscreteStates => {
                    let u = self.slave()?.update_discrete_states()?;
                    out.u64(
                        u64::from(u.discrete_states_need_update)
                            | u64::from(u.terminate_simulation) << 1
                            | u64::from(u.nominals_of_continuous_states_changed) << 2
                            | u64::from(u.values_of_continuous_states_changed) << 3
                            | u64::from(u.next_event_time.is_some()) << 4,
                    )
                    .map_err(m)?;
                    out.f64(u.next_event_time.unwrap_or(0.0)).map_err(m)
                }
                Call::EnterStepMode => self.slave()?.enter_step_mode(),
                Call::Terminate => self.slave()?.terminate(),
                Call::Reset => self.slave()?.reset(),
                Call::GetString => {
                    let vrs = p.slice::<u32>().map_err(m)?;
                    let values = self.slave()?.get_string(&vrs)?;
                    out.byte_strings(&values).map_err(m)
                }
                Call::SetString => {
                    let vrs = p.slice::<u32>().map_err(m)?;
                    let values = p.byte_strings().map_err(m)?;
                    let texts = values
                        .iter()
                        .map(|v| std::str::from_utf8(v))
                        .collect::<std::result::Result<Vec<&str>, _>>()
                        .map_err(|e| {
                            Error::Internal(format!("a String value is not UTF-8: {e}"))
                        })?;
                    self.slave()?.set_string(&vrs, &texts)
                }
                Call::GetBinary => {
                    let vrs = p.slice::<u32>().map_err(m)?;
                    let values = self.slave()?.get_binary(&vrs)?;
                    out.byte_strings(&values).map_err(m)
                }
                Call::SetBinary => {
                    let vrs = p.slice::<u32>().map_err(m)?;
                    let values = p.byte_strings().map_err(m)?;
                    self.slave()?.set_binary(&vrs, &values)
                }
                Call::SaveState => {
                    let id = self.slave()?.save_state()?;
                    out.u64(id.0 as u64).map_err(m)
                }
                Call::UpdateState => {
                    let id = state_id(&mut p)?;
                    self.slave()?.update_state(id)
                }
                Call::RestoreState => {
                    let id = state_id(&mut p)?;
                    self.slave()?.restore_state(id)
                }
                Call::FreeState => {
                    let id = state_id(&mut p)?;
                    self.slave()?.free_state(id)
                }
                Call::SerializeState => {
                    let id = state_id(&mut p)?;
                    let bytes = self.slave()?.serialize_state(id)?;
                    out.slice(&bytes).map_err(m)
                }
                Call::DeserializeState => {
                    let bytes = p.slice::<u8>().map_err(m)?;
                    let id = self.slave()?.deserialize_state(&bytes)?;
                    out.u64(id.0 as u64).map_err(m)
                }
                Call::DirectionalDerivative => {
                    let unknowns = p.slice::<u32>().map_err(m)?;
                    let knowns = p.slice::<u32>().map_err(m)?;
                    let seed = p.slice::<f64>().map_err(m)?;
                    let n = count(&mut p)?;
                    let sensitivity = out.slice_mut::<f64>(n).map_err(m)?;
                    let slave = self.slave.as_mut().ok_or_else(no_instance)?;
                    slave.directional_derivative(&unknowns, &knowns, &seed, sensitivity)
                }
                Call::GetOutputDerivatives => {
                    let vrs = p.slice::<u32>().map_err(m)?;
                    let order = p.u64().map_err(m)? as u32;
                    let n = count(&mut p)?;
                    let values = out.slice_mut::<f64>(n).map_err(m)?;
                    let slave = self.slave.as_mut().ok_or_else(no_instance)?;
                    slave.get_output_derivatives(&vrs, order, values)
                }
                Call::SetInputPolynomial => {
                    let vrs = p.slice::<u32>().map_err(m)?;
                    let order = p.u64().map_err(m)? as usize;
                    let taylor = p.slice::<f64>().map_err(m)?;
                    let mode = self.slave()?.set_input_polynomial(&vrs, order, &taylor)?;
                    out.u64(match mode {
                        PolynomialInputMode::InputDerivatives => 0,
                        PolynomialInputMode::IntermediateUpdate => 1,
                        PolynomialInputMode::SubSteps => 2,
                        PolynomialInputMode::Evaluated => 3,
                    })
                    .map_err(m)
                }
                Call::SetMacroStep => {
                    let given = p.u64().map_err(m)? == 1;
                    let (start, end) = (p.f64().map_err(m)?, p.f64().map_err(m)?);
                    self.slave()?.set_macro_step(given.then_some((start, end)))
                }
                Call::GetClock => {
                    let vrs = p.slice::<u32>().map_err(m)?;
                    let mut active = vec![false; vrs.len()];
                    self.slave()?.get_clock(&vrs, &mut active)?;
                    out.bools(&active).map_err(m)
                }
                Call::SetClock => {
                    let vrs = p.slice::<u32>().map_err(m)?;
                    let active = p.bools().map_err(m)?;
                    self.slave()?.set_clock(&vrs, &active)
                }
                Call::GetIntervalDecimal => {
                    let vrs = p.slice::<u32>().map_err(m)?;
                    let mut intervals = vec![0.0; vrs.len()];
                    let mut qualifiers = vec![IntervalQualifier::default(); vrs.len()];
                    self.slave()?
                        .get_interval_decimal(&vrs, &mut intervals, &mut qualifiers)?;
                    out.slice(&intervals).map_err(m)?;
                    let raw: Vec<i32> = qualifiers.iter().map(|q| q.raw()).collect();
                    out.slice(&raw).map_err(m)
                }
                Call::Get | Call::Set => Err(malformed(Malformed("bare Get / Set".into()))),
            },
        }
    }
}

fn no_instance() -> Error {
    Error::Internal("the worker has no instance yet".into())
}

/// A number of values to answer with, bounded by what the reply region holds.
fn count(p: &mut Reader<'_>) -> Result<usize> {
    let n = p.u64().map_err(malformed)?;
    usize::try_from(n)
        .ok()
        .filter(|&n| n <= REGION_SIZE / 8)
        .ok_or_else(|| malformed(Malformed(format!("{n} values to answer with"))))
}

fn optional(p: &mut Reader<'_>) -> Result<Option<f64>> {
    let present = p.u64().map_err(malformed)?;
    let value = p.f64().map_err(malformed)?;
    Ok((present != 0).then_some(value))
}

fn state_id(p: &mut Reader<'_>) -> Result<StateId> {
    let id = p.u64().map_err(malformed)?;
    usize::try_from(id)
        .map(StateId)
        .map_err(|_| malformed(Malformed(format!("state id {id}"))))
}

/// A numeric get: the values go straight into the reply region.
fn get(slave: &mut dyn Slave, t: Numeric, p: &mut Reader<'_>, out: &mut Writer<'_>) -> Result<()> {
    let vrs = p.slice::<u32>().map_err(malformed)?;
    let n = count(p)?;
    fn into<T: Pod>(
        out: &mut Writer<'_>,
        n: usize,
        read: impl FnOnce(&mut [T]) -> Result<()>,
    ) -> Result<()> {
        read(out.slice_mut::<T>(n).map_err(malformed)?)
    }
    match t {
        Numeric::Float64 => into(out, n, |v| slave.get_float64(&vrs, v)),
        Numeric::Float32 => into(out, n, |v| slave.get_float32(&vrs, v)),
        Numeric::Int8 => into(out, n, |v| slave.get_int8(&vrs, v)),
        Numeric::UInt8 => into(out, n, |v| slave.get_uint8(&vrs, v)),
        Numeric::Int16 => into(out, n, |v| slave.get_int16(&vrs, v)),
        Numeric::UInt16 => into(out, n, |v| slave.get_uint16(&vrs, v)),
        Numeric::Int32 => into(out, n, |v| slave.get_int32(&vrs, v)),
        Numeric::UInt32 => into(out, n, |v| slave.get_uint32(&vrs, v)),
        Numeric::Int64 => into(out, n, |v| slave.get_int64(&vrs, v)),
        Numeric::UInt64 => into(out, n, |v| slave.get_uint64(&vrs, v)),
        Numeric::Boolean => {
            let mut values = vec![false; n];
            slave.get_boolean(&vrs, &mut values)?;
            out.bools(&values).map_err(malformed)
        }
    }
}

/// A numeric set, from values read in place from the request region.
fn set(slave: &mut dyn Slave, t: Numeric, p: &mut Reader<'_>) -> Result<()> {
    let vrs = p.slice::<u32>().map_err(malformed)?;
    fn values<'a, T: Pod>(p: &mut Reader<'a>) -> Result<Cow<'a, [T]>> {
        p.slice::<T>().map_err(malformed)
    }
    match t {
        Numeric::Float64 => slave.set_float64(&vrs, &values(p)?),
        Numeric::Float32 => slave.set_float32(&vrs, &values(p)?),
        Numeric::Int8 => slave.set_int8(&vrs, &values(p)?),
        Numeric::UInt8 => slave.set_uint8(&vrs, &values(p)?),
        Numeric::Int16 => slave.set_int16(&vrs, &values(p)?),
        Numeric::UInt16 => slave.set_uint16(&vrs, &values(p)?),
        Numeric::Int32 => slave.set_int32(&vrs, &values(p)?),
        Numeric::UInt32 => slave.set_uint32(&vrs, &values(p)?),
        Numeric::Int64 => slave.set_int64(&vrs, &values(p)?),
        Numeric::UInt64 => slave.set_uint64(&vrs, &values(p)?),
        Numeric::Boolean => slave.set_boolean(&vrs, &p.bools().map_err(malformed)?),
    }
}
