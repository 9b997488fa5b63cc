//! The encoding of calls and replies in the channel's regions.
//!
//! A request is a sequence of records `[call: u32][payload bytes: u32][payload]`, each padded
//! to 8 bytes; the worker runs them in order and stops at the first error. Setters are queued as
//! records without waiting (their errors arrive with the next call that waits), so one round
//! trip carries a step's inputs and the step. Payloads are numbers and slices in native layout
//! at 8-byte aligned offsets. The master reads everything the worker wrote as untrusted: a
//! length that runs past its region is an error, not a crash.

use serde::{Deserialize, Serialize};

use crate::error::{Error, FmiStatus};
use crate::fmu::SlaveState;

/// The `Call` enum and the list of its plain calls (codes 1, 2, ... in this order), from one
/// list of names.
macro_rules! calls {
    ($($name:ident),+ $(,)?) => {
        /// The calls a worker understands.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[repr(u32)]
        pub enum Call {
            $($name,)+
            /// Get a numeric type: `Get as u32 + Numeric as u32`.
            Get = 100,
            /// Set a numeric type: `Set as u32 + Numeric as u32`.
            Set = 200,
        }

        /// Every call other than `Get` and `Set`, by code.
        const PLAIN: &[Call] = &[$(Call::$name),+];
    };
}

calls!(
    Instantiate,
    Free,
    EnterConfigurationMode,
    ExitConfigurationMode,
    EnterInitializationMode,
    ExitInitializationMode,
    DoStep,
    EnterEventMode,
    UpdateDiscreteStates,
    EnterStepMode,
    Terminate,
    Reset,
    GetString,
    SetString,
    GetBinary,
    SetBinary,
    SaveState,
    UpdateState,
    RestoreState,
    FreeState,
    SerializeState,
    DeserializeState,
    DirectionalDerivative,
    GetOutputDerivatives,
    SetInputPolynomial,
    SetMacroStep,
    GetClock,
    SetClock,
    GetIntervalDecimal,
);

/// The numeric FMI types, in the order of their call codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Numeric {
    Float64,
    Float32,
    Int8,
    UInt8,
    Int16,
    UInt16,
    Int32,
    UInt32,
    Int64,
    UInt64,
    Boolean,
}

impl Numeric {
    const ALL: [Numeric; 11] = [
        Numeric::Float64,
        Numeric::Float32,
        Numeric::Int8,
        Numeric::UInt8,
        Numeric::Int16,
        Numeric::UInt16,
        Numeric::Int32,
        Numeric::UInt32,
        Numeric::Int64,
        Numeric::UInt64,
        Numeric::Boolean,
    ];

    /// The FMI 2 / FMI 3 name part (`fmi2GetReal`, `fmi3GetFloat64`).
    pub fn fmi_name(self, fmi3: bool) -> &'static str {
        match (self, fmi3) {
            (Numeric::Float64, false) => "Real",
            (Numeric::Int32, false) => "Integer",
            (Numeric::Boolean, _) => "Boolean",
            (Numeric::Float64, true) => "Float64",
            (Numeric::Float32, _) => "Float32",
            (Numeric::Int8, _) => "Int8",
            (Numeric::UInt8, _) => "UInt8",
            (Numeric::Int16, _) => "Int16",
            (Numeric::UInt16, _) => "UInt16",
            (Numeric::Int32, true) => "Int32",
            (Numeric::UInt32, _) => "UInt32",
            (Numeric::Int64, _) => "Int64",
            (Numeric::UInt64, _) => "UInt64",
        }
    }
}

/// A decoded call code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    Plain(Call),
    Get(Numeric),
    Set(Numeric),
}

impl Code {
    /// The wire value.
    pub fn raw(self) -> u32 {
        match self {
            Code::Plain(call) => call as u32,
            Code::Get(t) => Call::Get as u32 + t as u32,
            Code::Set(t) => Call::Set as u32 + t as u32,
        }
    }

    /// Decode a wire value.
    pub fn from_raw(raw: u32) -> Option<Code> {
        match raw {
            200.. => Numeric::ALL
                .get((raw - 200) as usize)
                .copied()
                .map(Code::Set),
            100.. => Numeric::ALL
                .get((raw - 100) as usize)
                .copied()
                .map(Code::Get),
            _ => PLAIN
                .iter()
                .copied()
                .find(|c| *c as u32 == raw)
                .map(Code::Plain),
        }
    }

    /// The FMI function this call makes (for messages): `fmi2DoStep`, `fmi3GetFloat64`.
    pub fn fmi_function(self, fmi3: bool) -> String {
        let prefix = if fmi3 { "fmi3" } else { "fmi2" };
        let name = match self {
            Code::Get(t) => return format!("{prefix}Get{}", t.fmi_name(fmi3)),
            Code::Set(t) => return format!("{prefix}Set{}", t.fmi_name(fmi3)),
            Code::Plain(call) => match (call, fmi3) {
                (Call::Instantiate, false) => "Instantiate",
                (Call::Instantiate, true) => "InstantiateCoSimulation",
                (Call::Free, _) => "FreeInstance",
                (Call::EnterConfigurationMode, _) => "EnterConfigurationMode",
                (Call::ExitConfigurationMode, _) => "ExitConfigurationMode",
                (Call::EnterInitializationMode, _) => "EnterInitializationMode",
                (Call::ExitInitializationMode, _) => "ExitInitializationMode",
                (Call::DoStep, _) => "DoStep",
                (Call::EnterEventMode, _) => "EnterEventMode",
                (Call::UpdateDiscreteStates, _) => "UpdateDiscreteStates",
                (Call::EnterStepMode, _) => "EnterStepMode",
                (Call::Terminate, _) => "Terminate",
                (Call::Reset, _) => "Reset",
                (Call::GetString, _) => "GetString",
                (Call::SetString, _) => "SetString",
                (Call::GetBinary, _) => "GetBinary",
                (Call::SetBinary, _) => "SetBinary",
                (Call::SaveState, false) => "GetFMUstate",
                (Call::SaveState | Call::UpdateState, true) => "GetFMUState",
                (Call::UpdateState, false) => "GetFMUstate",
                (Call::RestoreState, false) => "SetFMUstate",
                (Call::RestoreState, true) => "SetFMUState",
                (Call::FreeState, false) => "FreeFMUstate",
                (Call::FreeState, true) => "FreeFMUState",
                (Call::SerializeState, false) => "SerializeFMUstate",
                (Call::SerializeState, true) => "SerializeFMUState",
                (Call::DeserializeState, false) => "DeSerializeFMUstate",
                (Call::DeserializeState, true) => "DeserializeFMUState",
                (Call::DirectionalDerivative, false) => "GetDirectionalDerivative",
                (Call::DirectionalDerivative, true) => "GetDirectionalDerivative",
                (Call::GetOutputDerivatives, false) => "GetRealOutputDerivatives",
                (Call::GetOutputDerivatives, true) => "GetOutputDerivatives",
                (Call::SetInputPolynomial, false) => "SetRealInputDerivatives",
                (Call::SetInputPolynomial, true) => "SetFloat64 (input polynomial)",
                (Call::SetMacroStep, _) => "DoStep (the macro step of the next steps)",
                (Call::GetClock, _) => "GetClock",
                (Call::SetClock, _) => "SetClock",
                (Call::GetIntervalDecimal, _) => "GetIntervalDecimal",
                (Call::Get | Call::Set, _) => "?",
            },
        };
        format!("{prefix}{name}")
    }
}

/// A flag on a record's call code: a getter the master will most likely call right after the
/// preceding step (it did after the last one), run ahead so that the step's reply carries its
/// values. Its output is a word 1 followed by the values, or a word 0 when it failed: its error
/// is not the request's (the master then makes the call itself and gets the error).
pub const READ_AHEAD: u32 = 1 << 31;

/// Plain numbers that can be copied to and from the regions byte for byte.
///
/// # Safety
/// Every bit pattern must be a valid value (no `bool`, no references, no padding).
pub unsafe trait Pod: Copy + Default + 'static {}
unsafe impl Pod for u8 {}
unsafe impl Pod for i8 {}
unsafe impl Pod for u16 {}
unsafe impl Pod for i16 {}
unsafe impl Pod for u32 {}
unsafe impl Pod for i32 {}
unsafe impl Pod for u64 {}
unsafe impl Pod for i64 {}
unsafe impl Pod for f32 {}
unsafe impl Pod for f64 {}

/// A malformed message: a length past the region's end, an unknown code.
#[derive(Debug)]
pub struct Malformed(pub String);

/// Writes records into a region from an offset.
pub struct Writer<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl<'a> Writer<'a> {
    pub fn new(buf: &'a mut [u8], pos: usize) -> Writer<'a> {
        Writer { buf, pos }
    }

    /// Start again from the region's beginning.
    pub fn reset(&mut self) {
        self.pos = 0;
    }

    /// `n` values to be filled in place, with their length written before them.
    pub fn slice_mut<T: Pod>(&mut self, n: usize) -> Result<&mut [T], Malformed> {
        let bytes = n.saturating_mul(std::mem::size_of::<T>());
        let at = self.reserve(bytes.saturating_add(8))?;
        self.buf[at..at + 8].copy_from_slice(&(n as u64).to_ne_bytes());
        let target = &mut self.buf[at + 8..at + 8 + bytes];
        if !(target.as_ptr() as usize).is_multiple_of(std::mem::align_of::<T>()) {
            return Err(Malformed("a misaligned region".into()));
        }
        // SAFETY: aligned (checked), `bytes` long, inside the buffer; any bit pattern is a T.
        Ok(unsafe { std::slice::from_raw_parts_mut(target.as_mut_ptr().cast::<T>(), n) })
    }

    /// Bytes written so far (the offset of the next write).
    pub fn position(&self) -> usize {
        self.pos
    }

    fn reserve(&mut self, bytes: usize) -> Result<usize, Malformed> {
        let start = self.pos;
        let end = bytes
            .checked_add(7)
            .and_then(|b| start.checked_add(b & !7))
            .filter(|&end| end <= self.buf.len())
            .ok_or_else(|| {
                Malformed(format!(
                    "a call's data ({bytes} bytes) do not fit into the worker channel ({} bytes)",
                    self.buf.len()
                ))
            })?;
        self.pos = end;
        Ok(start)
    }

    pub fn u64(&mut self, value: u64) -> Result<(), Malformed> {
        let at = self.reserve(8)?;
        self.buf[at..at + 8].copy_from_slice(&value.to_ne_bytes());
        Ok(())
    }

    pub fn f64(&mut self, value: f64) -> Result<(), Malformed> {
        self.u64(value.to_bits())
    }

    /// A slice with its length.
    pub fn slice<T: Pod>(&mut self, values: &[T]) -> Result<(), Malformed> {
        let bytes = std::mem::size_of_val(values);
        let at = self.reserve(8 + bytes)?;
        self.buf[at..at + 8].copy_from_slice(&(values.len() as u64).to_ne_bytes());
        // SAFETY: `values` is plain data of `bytes` bytes; the target range was reserved.
        let source = unsafe { std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), bytes) };
        self.buf[at + 8..at + 8 + bytes].copy_from_slice(source);
        Ok(())
    }

    /// Booleans as bytes 0 / 1.
    pub fn bools(&mut self, values: &[bool]) -> Result<(), Malformed> {
        let at = self.reserve(8 + values.len())?;
        self.buf[at..at + 8].copy_from_slice(&(values.len() as u64).to_ne_bytes());
        for (target, &value) in self.buf[at + 8..].iter_mut().zip(values) {
            *target = u8::from(value);
        }
        Ok(())
    }

    /// Byte strings, each with its length.
    pub fn byte_strings<B: AsRef<[u8]>>(&mut self, values: &[B]) -> Result<(), Malformed> {
        self.u64(values.len() as u64)?;
        for value in values {
            self.slice(value.as_ref())?;
        }
        Ok(())
    }

    /// Start a record: returns the position of its header, to be finished with `end_record`.
    pub fn begin_record(&mut self, code: Code) -> Result<usize, Malformed> {
        self.begin(code.raw())
    }

    /// Start a read-ahead record (see [`READ_AHEAD`]).
    pub fn begin_read_ahead(&mut self, code: Code) -> Result<usize, Malformed> {
        self.begin(code.raw() | READ_AHEAD)
    }

    fn begin(&mut self, raw: u32) -> Result<usize, Malformed> {
        let at = self.reserve(8)?;
        self.buf[at..at + 4].copy_from_slice(&raw.to_ne_bytes());
        Ok(at)
    }

    /// Forget what was written from `position` on.
    pub fn truncate(&mut self, position: usize) {
        self.pos = self.pos.min(position);
    }

    /// Write the payload length into the record header at `at`.
    pub fn end_record(&mut self, at: usize) {
        let len = (self.pos - at - 8) as u32;
        self.buf[at + 4..at + 8].copy_from_slice(&len.to_ne_bytes());
    }
}

/// Reads what the other side wrote, checking every length.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, pos: 0 }
    }

    pub fn is_at_end(&self) -> bool {
        self.pos >= self.buf.len()
    }

    fn take(&mut self, bytes: usize) -> Result<&'a [u8], Malformed> {
        let end = self
            .pos
            .checked_add(bytes)
            .filter(|&end| end <= self.buf.len())
            .ok_or_else(|| {
                Malformed(format!(
                    "{bytes} bytes at offset {} run past the message's {} bytes",
                    self.pos,
                    self.buf.len()
                ))
            })?;
        let taken = &self.buf[self.pos..end];
        // `end` is within the buffer, so far below usize::MAX.
        self.pos = ((end + 7) & !7).min(self.buf.len());
        Ok(taken)
    }

    pub fn u64(&mut self) -> Result<u64, Malformed> {
        let bytes = self.take(8)?;
        let mut word = [0u8; 8];
        word.copy_from_slice(bytes);
        Ok(u64::from_ne_bytes(word))
    }

    pub fn f64(&mut self) -> Result<f64, Malformed> {
        self.u64().map(f64::from_bits)
    }

    fn count(&mut self) -> Result<usize, Malformed> {
        let n = self.u64()?;
        usize::try_from(n).map_err(|_| Malformed(format!("a count of {n}")))
    }

    /// A slice written by [`Writer::slice`], copied into `target` (whose length it must have).
    pub fn slice_into<T: Pod>(&mut self, target: &mut [T]) -> Result<(), Malformed> {
        let n = self.count()?;
        if n != target.len() {
            return Err(Malformed(format!(
                "{n} values where {} were asked for",
                target.len()
            )));
        }
        let bytes = self.take(n.saturating_mul(std::mem::size_of::<T>()))?;
        // SAFETY: `bytes` holds exactly size_of_val(target) bytes; every bit pattern is a valid T.
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                target.as_mut_ptr().cast::<u8>(),
                bytes.len(),
            )
        };
        Ok(())
    }

    /// A slice written by [`Writer::slice`], borrowed from the region when it is aligned.
    pub fn slice<T: Pod>(&mut self) -> Result<std::borrow::Cow<'a, [T]>, Malformed> {
        let n = self.count()?;
        let bytes = self.take(n.saturating_mul(std::mem::size_of::<T>()))?;
        if (bytes.as_ptr() as usize).is_multiple_of(std::mem::align_of::<T>()) {
            // SAFETY: aligned, `n` elements long, every bit pattern valid; borrowed from `buf`.
            Ok(std::borrow::Cow::Borrowed(unsafe {
                std::slice::from_raw_parts(bytes.as_ptr().cast::<T>(), n)
            }))
        } else {
            let mut copy = vec![T::default(); n];
            // SAFETY: as in `slice_into`.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    bytes.as_ptr(),
                    copy.as_mut_ptr().cast::<u8>(),
                    bytes.len(),
                )
            };
            Ok(std::borrow::Cow::Owned(copy))
        }
    }

    /// Step over a slice of `count` values of `size` bytes each.
    pub fn skip_values(&mut self, size: usize, count: usize) -> Result<(), Malformed> {
        let n = self.count()?;
        if n != count {
            return Err(Malformed(format!(
                "{n} values where {count} were asked for"
            )));
        }
        self.take(n.saturating_mul(size)).map(|_| ())
    }

    /// Booleans written by [`Writer::bools`] into `target`.
    pub fn bools_into(&mut self, target: &mut [bool]) -> Result<(), Malformed> {
        let n = self.count()?;
        if n != target.len() {
            return Err(Malformed(format!(
                "{n} values where {} were asked for",
                target.len()
            )));
        }
        for (value, &byte) in target.iter_mut().zip(self.take(n)?) {
            *value = byte != 0;
        }
        Ok(())
    }

    /// Booleans written by [`Writer::bools`].
    pub fn bools(&mut self) -> Result<Vec<bool>, Malformed> {
        let n = self.count()?;
        Ok(self.take(n)?.iter().map(|&b| b != 0).collect())
    }

    /// Byte strings written by [`Writer::byte_strings`].
    pub fn byte_strings(&mut self) -> Result<Vec<&'a [u8]>, Malformed> {
        let n = self.count()?;
        // Each string takes at least 8 bytes: a count beyond that is a lie, not an allocation.
        if n > self.buf.len() / 8 {
            return Err(Malformed(format!(
                "{n} strings in {} bytes",
                self.buf.len()
            )));
        }
        (0..n)
            .map(|_| {
                let len = self.count()?;
                self.take(len)
            })
            .collect()
    }

    /// The next record: its code, whether it is a read-ahead, and its payload.
    pub fn record(&mut self) -> Result<(Code, bool, Reader<'a>), Malformed> {
        let header = self.take(8)?;
        let raw = u32::from_ne_bytes([header[0], header[1], header[2], header[3]]);
        let len = u32::from_ne_bytes([header[4], header[5], header[6], header[7]]) as usize;
        let code = Code::from_raw(raw & !READ_AHEAD)
            .ok_or_else(|| Malformed(format!("unknown call {raw}")))?;
        let payload = self.take(len)?;
        Ok((code, raw & READ_AHEAD != 0, Reader::new(payload)))
    }

    /// The current offset.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// A reader of the same bytes from `position` (for values read ahead).
    pub fn at(&self, position: usize) -> Reader<'a> {
        Reader {
            buf: self.buf,
            pos: position.min(self.buf.len()),
        }
    }
}

/// An [`Error`] as it crosses the channel (JSON in the reply region; errors are not hot).
#[derive(Debug, Serialize, Deserialize)]
pub enum WireError {
    Io {
        path: String,
        kind: String,
        message: String,
    },
    Archive {
        path: String,
        message: String,
    },
    ModelDescription {
        path: String,
        line: usize,
        message: String,
    },
    Binary {
        path: String,
        message: String,
    },
    Fmi {
        instance: String,
        function: String,
        status: i32,
        log: Vec<String>,
    },
    Discard {
        instance: String,
        current_time: f64,
        step_size: f64,
        last_successful_time: f64,
        log: Vec<String>,
    },
    Unsupported {
        instance: String,
        message: String,
    },
    WrongState {
        instance: String,
        function: String,
        state: String,
    },
    Usage(String),
    Numerics(String),
    Internal(String),
    Worker {
        component: String,
        message: String,
    },
    Simulation {
        time: f64,
        source: Box<WireError>,
    },
}

fn status_code(status: FmiStatus) -> i32 {
    match status {
        FmiStatus::Ok => 0,
        FmiStatus::Warning => 1,
        FmiStatus::Discard => 2,
        FmiStatus::Error => 3,
        FmiStatus::Fatal => 4,
        FmiStatus::Pending => 5,
        FmiStatus::Unknown(v) => v,
    }
}

fn status_of(code: i32) -> FmiStatus {
    match code {
        0 => FmiStatus::Ok,
        1 => FmiStatus::Warning,
        2 => FmiStatus::Discard,
        3 => FmiStatus::Error,
        4 => FmiStatus::Fatal,
        5 => FmiStatus::Pending,
        v => FmiStatus::Unknown(v),
    }
}

/// The FMI function names of errors as `&'static str`: each distinct name is leaked once.
fn intern(name: &str) -> &'static str {
    use std::collections::HashSet;
    use std::sync::Mutex;
    static NAMES: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);
    let mut guard = NAMES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let names = guard.get_or_insert_with(HashSet::new);
    if let Some(&known) = names.get(name) {
        return known;
    }
    let leaked: &'static str = Box::leak(name.to_string().into_boxed_str());
    names.insert(leaked);
    leaked
}

impl From<&Error> for WireError {
    fn from(error: &Error) -> WireError {
        match error {
            Error::Io { path, source } => WireError::Io {
                path: path.display().to_string(),
                kind: format!("{:?}", source.kind()),
                message: source.to_string(),
            },
            Error::Archive { path, message } => WireError::Archive {
                path: path.display().to_string(),
                message: message.clone(),
            },
            Error::ModelDescription {
                path,
                line,
                message,
            } => WireError::ModelDescription {
                path: path.display().to_string(),
                line: *line,
                message: message.clone(),
            },
            Error::Binary { path, message } => WireError::Binary {
                path: path.display().to_string(),
                message: message.clone(),
            },
            Error::Fmi {
                instance,
                function,
                status,
                log,
            } => WireError::Fmi {
                instance: instance.clone(),
                function: function.to_string(),
                status: status_code(*status),
                log: log.clone(),
            },
            Error::Discard {
                instance,
                current_time,
                step_size,
                last_successful_time,
                log,
            } => WireError::Discard {
                instance: instance.clone(),
                current_time: *current_time,
                step_size: *step_size,
                last_successful_time: *last_successful_time,
                log: log.clone(),
            },
            Error::Unsupported { instance, message } => WireError::Unsupported {
                instance: instance.clone(),
                message: message.clone(),
            },
            Error::WrongState {
                instance,
                function,
                state,
            } => WireError::WrongState {
                instance: instance.clone(),
                function: function.to_string(),
                state: state.clone(),
            },
            Error::Usage(m) => WireError::Usage(m.clone()),
            Error::Numerics(m) => WireError::Numerics(m.clone()),
            Error::Internal(m) => WireError::Internal(m.clone()),
            // A worker runs inside one rank: it never sees another rank's failure.
            Error::OnRank { .. } => WireError::Internal(error.to_string()),
            Error::Worker { component, message } => WireError::Worker {
                component: component.clone(),
                message: message.clone(),
            },
            Error::Simulation { time, source } => WireError::Simulation {
                time: *time,
                source: Box::new(WireError::from(source.as_ref())),
            },
        }
    }
}

impl From<WireError> for Error {
    fn from(error: WireError) -> Error {
        match error {
            WireError::Io {
                path,
                kind: _,
                message,
            } => Error::io(path, std::io::Error::other(message)),
            WireError::Archive { path, message } => Error::Archive {
                path: path.into(),
                message,
            },
            WireError::ModelDescription {
                path,
                line,
                message,
            } => Error::ModelDescription {
                path: path.into(),
                line,
                message,
            },
            WireError::Binary { path, message } => Error::Binary {
                path: path.into(),
                message,
            },
            WireError::Fmi {
                instance,
                function,
                status,
                log,
            } => Error::Fmi {
                instance,
                function: intern(&function),
                status: status_of(status),
                log,
            },
            WireError::Discard {
                instance,
                current_time,
                step_size,
                last_successful_time,
                log,
            } => Error::Discard {
                instance,
                current_time,
                step_size,
                last_successful_time,
                log,
            },
            WireError::Unsupported { instance, message } => {
                Error::Unsupported { instance, message }
            }
            WireError::WrongState {
                instance,
                function,
                state,
            } => Error::WrongState {
                instance,
                function: intern(&function),
                state,
            },
            WireError::Usage(m) => Error::Usage(m),
            WireError::Numerics(m) => Error::Numerics(m),
            WireError::Internal(m) => Error::Internal(m),
            WireError::Worker { component, message } => Error::Worker { component, message },
            WireError::Simulation { time, source } => Error::Simulation {
                time,
                source: Box::new(Error::from(*source)),
            },
        }
    }
}

/// The instance settings a worker instantiates with (the master's `InstanceOptions` minus the
/// sinks, which stay in the master: the worker forwards messages to them).
#[derive(Debug, Serialize, Deserialize)]
pub struct Instantiation {
    /// The unpacked FMU folder (the master's extraction: the worker does not unpack again).
    pub fmu: std::path::PathBuf,
    pub name: String,
    pub logging_on: bool,
    pub log_fmi_calls: bool,
    pub event_mode: bool,
    pub early_return: bool,
    pub sub_steps: usize,
    pub force_sub_steps: bool,
    pub debug_categories: Vec<String>,
    /// The interface the master sees the FMU through (`None`: the FMU's default).
    pub interface: Option<crate::fmu::Interface>,
    pub solver: crate::fmu::model_exchange::SolverOptions,
}

/// What the worker tells after instantiating (the slave's answers that need no call).
#[derive(Debug, Serialize, Deserialize)]
pub struct Instantiated {
    pub can_save_state: bool,
    pub provides_directional_derivatives: bool,
    pub max_output_derivative_order: u32,
    pub pid: u32,
}

/// A forwarded event: a traced call or a log message of the FMU.
pub const EVENT_CALL: u64 = 1;
pub const EVENT_LOG: u64 = 2;

pub fn status_to_wire(status: FmiStatus) -> u64 {
    status_code(status) as u32 as u64
}

pub fn status_from_wire(code: u64) -> FmiStatus {
    status_of(code as u32 as i32)
}

/// A lifecycle state as a number.
pub fn state_to_wire(state: SlaveState) -> u32 {
    match state {
        SlaveState::Instantiated => 0,
        SlaveState::ConfigurationMode => 1,
        SlaveState::InitializationMode => 2,
        SlaveState::StepMode => 3,
        SlaveState::EventMode => 4,
        SlaveState::Terminated => 5,
        SlaveState::Error => 6,
        SlaveState::Fatal => 7,
        SlaveState::ContinuousTimeMode => 8,
    }
}

/// A lifecycle state from a number (`None` for a number no state has).
pub fn state_from_wire(code: u32) -> Option<SlaveState> {
    Some(match code {
        0 => SlaveState::Instantiated,
        1 => SlaveState::ConfigurationMode,
        2 => SlaveState::InitializationMode,
        8 => SlaveState::ContinuousTimeMode,
        3 => SlaveState::StepMode,
        4 => SlaveState::EventMode,
        5 => SlaveState::Terminated,
        6 => SlaveState::Error,
        7 => SlaveState::Fatal,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        let mut buf = vec![0u8; 256];
        let mut w = Writer::new(&mut buf, 0);
        let at = w.begin_record(Code::Set(Numeric::Float64)).unwrap();
        w.slice(&[1u32, 2]).unwrap();
        w.slice(&[0.5f64, -1.5]).unwrap();
        w.end_record(at);
        let at = w.begin_read_ahead(Code::Get(Numeric::Int16)).unwrap();
        w.slice(&[3u32]).unwrap();
        w.end_record(at);
        let len = w.position();
        let mut r = Reader::new(&buf[..len]);
        let (code, ahead, mut p) = r.record().unwrap();
        assert_eq!((code, ahead), (Code::Set(Numeric::Float64), false));
        assert_eq!(&*p.slice::<u32>().unwrap(), &[1, 2]);
        assert_eq!(&*p.slice::<f64>().unwrap(), &[0.5, -1.5]);
        let (code, ahead, _) = r.record().unwrap();
        assert_eq!((code, ahead), (Code::Get(Numeric::Int16), true));
        assert!(r.is_at_end());
    }

    /// Lengths the other side wrote are checked: a lie is an error, never a panic or an
    /// allocation of its size.
    #[test]
    fn lying_lengths_are_errors() {
        let mut buf = vec![0u8; 64];
        buf[..8].copy_from_slice(&u64::MAX.to_ne_bytes());
        assert!(Reader::new(&buf).slice::<f64>().is_err());
        assert!(Reader::new(&buf).byte_strings().is_err());
        assert!(Reader::new(&buf).bools().is_err());
        let mut values = [0.0; 2];
        assert!(Reader::new(&buf).slice_into(&mut values).is_err());
        // A record whose payload runs past the message.
        let mut record = vec![0u8; 16];
        record[..4].copy_from_slice(&(Call::DoStep as u32).to_ne_bytes());
        record[4..8].copy_from_slice(&1000u32.to_ne_bytes());
        assert!(Reader::new(&record).record().is_err());
        // An unknown call.
        record[..4].copy_from_slice(&77u32.to_ne_bytes());
        record[4..8].copy_from_slice(&0u32.to_ne_bytes());
        assert!(Reader::new(&record).record().is_err());
        // A writer refuses what does not fit instead of overrunning.
        let mut small = vec![0u8; 16];
        assert!(Writer::new(&mut small, 0).slice(&[0u64; 4]).is_err());
        assert!(Writer::new(&mut small, 0)
            .slice_mut::<f64>(usize::MAX)
            .is_err());
    }

    #[test]
    fn codes_and_errors_cross() {
        for raw in 0..400 {
            if let Some(code) = Code::from_raw(raw) {
                assert_eq!(code.raw(), raw);
            }
        }
        let error = Error::Fmi {
            instance: "a".into(),
            function: "fmi2DoStep",
            status: FmiStatus::Error,
            log: vec!["boom".into()],
        };
        let json = serde_json::to_vec(&WireError::from(&error)).unwrap();
        let back = Error::from(serde_json::from_slice::<WireError>(&json).unwrap());
        assert_eq!(back.to_string(), error.to_string());
    }
}
