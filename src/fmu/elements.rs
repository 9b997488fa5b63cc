//! A slave whose FMI 3 arrays are connected element by element.
//!
//! `system::resolve` gives each connected array element a scalar *element variable* with a
//! value reference above the FMU's own (consecutive from the first), so that every master
//! algorithm reads and sets scalars as for any other connection. [`ArrayElements`] stands
//! between the master and the slave and turns those references into whole-array FMI calls:
//! elements are read from one read of their array, made again only after a call that may
//! change the FMU's values (a write, a step, ...); written elements are kept and each
//! array written once, with all its elements, before the next call that could see it (any
//! other call of the slave): so the master may set the n elements one by one and the FMU still
//! gets one call of n values, not n calls. The elements no call has given yet stay as the FMU
//! had them (the array is read before its first write). References of the FMU's own pass
//! through unchanged, gathered into one call. Buffers grow to the largest call and are reused:
//! the per-step path allocates nothing.

use super::description::{ModelDescription, ValueReference, VariableType};
use super::slave::{
    DiscreteStatesUpdate, IntervalQualifier, PolynomialInputMode, Slave, StateId, StepResult,
};
use crate::{Error, Result};

/// One array of the FMU with connected elements, and its values.
struct ConnectedArray {
    vr: ValueReference,
    values: Buffer,
    /// The epoch (see [`ArrayElements::epoch`]) in which the array was read.
    read: u64,
    /// `values` holds what the FMU has (else read the array before writing some elements).
    known: bool,
    /// Elements were written that the FMU has not been given yet.
    pending: bool,
}

/// An array's values in its FMI type.
enum Buffer {
    F64(Vec<f64>),
    F32(Vec<f32>),
    I8(Vec<i8>),
    U8(Vec<u8>),
    I16(Vec<i16>),
    U16(Vec<u16>),
    I32(Vec<i32>),
    U32(Vec<u32>),
    I64(Vec<i64>),
    U64(Vec<u64>),
    Bool(Vec<bool>),
}

/// The FMU's own references of a mixed call, and their positions in it.
#[derive(Default)]
struct Own<T> {
    vrs: Vec<ValueReference>,
    positions: Vec<usize>,
    values: Vec<T>,
}

#[derive(Default)]
struct Scratch {
    f64: Own<f64>,
    f32: Own<f32>,
    i8: Own<i8>,
    u8: Own<u8>,
    i16: Own<i16>,
    u16: Own<u16>,
    i32: Own<i32>,
    u32: Own<u32>,
    i64: Own<i64>,
    u64: Own<u64>,
    bool: Own<bool>,
}

/// A value type of the FMI getters and setters.
trait Value: Copy + Default {
    fn buffer(buffer: &mut Buffer) -> Option<&mut Vec<Self>>;
    fn own(scratch: &mut Scratch) -> &mut Own<Self>;
}

macro_rules! values {
    ($($t:ty, $variant:ident, $field:ident;)*) => {$(
        impl Value for $t {
            fn buffer(buffer: &mut Buffer) -> Option<&mut Vec<$t>> {
                match buffer {
                    Buffer::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn own(scratch: &mut Scratch) -> &mut Own<$t> {
                &mut scratch.$field
            }
        }
    )*};
}

values! {
    f64, F64, f64;
    f32, F32, f32;
    i8, I8, i8;
    u8, U8, u8;
    i16, I16, i16;
    u16, U16, u16;
    i32, I32, i32;
    u32, U32, u32;
    i64, I64, i64;
    u64, U64, u64;
    bool, Bool, bool;
}

/// The slave of a component with connected array elements.
pub struct ArrayElements {
    inner: Box<dyn Slave>,
    /// The first element variable's value reference.
    first: ValueReference,
    /// Per element variable, from `first`: (index into `arrays`, flat index in the array).
    elements: Vec<(usize, usize)>,
    arrays: Vec<ConnectedArray>,
    /// Some array has `pending` elements.
    pending: bool,
    /// Counts the calls that may change the FMU's values (every call but a read): an array
    /// read since the last such call is not read again (the master reads the n elements one
    /// by one where it reads scalars one by one).
    epoch: u64,
    scratch: Scratch,
}

/// An element variable of `description`: its value reference, the array's index and the
/// element's flat index (from 0).
pub struct Element {
    pub value_reference: ValueReference,
    pub array: usize,
    pub index: usize,
}

impl ArrayElements {
    /// Wrap `inner`; `elements` are the element variables of `description` (the resolved one,
    /// arrays at their configured sizes), their value references consecutive.
    pub fn new(
        inner: Box<dyn Slave>,
        description: &ModelDescription,
        elements: &[Element],
    ) -> Result<ArrayElements> {
        let first = elements.first().map_or(0, |e| e.value_reference);
        let mut arrays: Vec<(usize, ConnectedArray)> = Vec::new();
        let mut map = Vec::with_capacity(elements.len());
        for (k, e) in elements.iter().enumerate() {
            if e.value_reference.checked_sub(first) != Some(k as ValueReference) {
                return Err(Error::Internal(format!(
                    "{}: element value references are not consecutive",
                    inner.name()
                )));
            }
            let slot = match arrays.iter().position(|(a, _)| *a == e.array) {
                Some(slot) => slot,
                None => {
                    let variable = &description.variables[e.array];
                    let n = super::values::element_count(description, variable)?;
                    let values = buffer(variable.var_type, n).ok_or_else(|| {
                        Error::Internal(format!(
                            "{}: array \"{}\" of type {:?} cannot be connected",
                            inner.name(),
                            variable.name,
                            variable.var_type
                        ))
                    })?;
                    arrays.push((
                        e.array,
                        ConnectedArray {
                            vr: variable.value_reference,
                            values,
                            read: 0,
                            known: false,
                            pending: false,
                        },
                    ));
                    arrays.len() - 1
                }
            };
            map.push((slot, e.index));
        }
        Ok(ArrayElements {
            inner,
            first,
            elements: map,
            arrays: arrays.into_iter().map(|(_, a)| a).collect(),
            pending: false,
            epoch: 0,
            scratch: Scratch::default(),
        })
    }

    fn is_element(&self, vr: ValueReference) -> bool {
        vr >= self.first && ((vr - self.first) as usize) < self.elements.len()
    }

    /// The array slot and flat index of element reference `vr`.
    fn element(&self, vr: ValueReference) -> (usize, usize) {
        self.elements[(vr - self.first) as usize]
    }

    fn mismatch(&self, vr: ValueReference) -> Error {
        Error::Internal(format!(
            "{}: value reference {vr} (an array element) read or written with another type than its array's",
            self.inner.name()
        ))
    }

    fn get<T: Value>(
        &mut self,
        vrs: &[ValueReference],
        values: &mut [T],
        get: fn(&mut dyn Slave, &[ValueReference], &mut [T]) -> Result<()>,
    ) -> Result<()> {
        self.flush()?;
        if !vrs.iter().any(|&vr| self.is_element(vr)) {
            return get(self.inner.as_mut(), vrs, values);
        }
        if vrs.len() != values.len() {
            return Err(Error::Internal(format!(
                "{}: {} values for {} value references",
                self.inner.name(),
                values.len(),
                vrs.len()
            )));
        }
        let own = T::own(&mut self.scratch);
        own.vrs.clear();
        own.positions.clear();
        for (k, &vr) in vrs.iter().enumerate() {
            if !(vr >= self.first && ((vr - self.first) as usize) < self.elements.len()) {
                own.vrs.push(vr);
                own.positions.push(k);
            }
        }
        if !own.vrs.is_empty() {
            own.values.clear();
            own.values.resize(own.vrs.len(), T::default());
            get(self.inner.as_mut(), &own.vrs, &mut own.values)?;
            for (&k, &v) in own.positions.iter().zip(&own.values) {
                values[k] = v;
            }
        }
        for (k, &vr) in vrs.iter().enumerate() {
            if !self.is_element(vr) {
                continue;
            }
            let (slot, index) = self.element(vr);
            let epoch = self.epoch;
            let array = &mut self.arrays[slot];
            let array_vr = array.vr;
            let Some(buffer) = T::buffer(&mut array.values) else {
                return Err(self.mismatch(vr));
            };
            if array.read != epoch {
                get(self.inner.as_mut(), &[array_vr], buffer)?;
                array.read = epoch;
                array.known = true;
            }
            values[k] = buffer[index];
        }
        Ok(())
    }

    fn set<T: Value>(
        &mut self,
        vrs: &[ValueReference],
        values: &[T],
        get: fn(&mut dyn Slave, &[ValueReference], &mut [T]) -> Result<()>,
        set: fn(&mut dyn Slave, &[ValueReference], &[T]) -> Result<()>,
    ) -> Result<()> {
        self.epoch += 1;
        if !vrs.iter().any(|&vr| self.is_element(vr)) {
            return set(self.inner.as_mut(), vrs, values);
        }
        if vrs.len() != values.len() {
            return Err(Error::Internal(format!(
                "{}: {} values for {} value references",
                self.inner.name(),
                values.len(),
                vrs.len()
            )));
        }
        let own = T::own(&mut self.scratch);
        own.vrs.clear();
        own.values.clear();
        for (&vr, &v) in vrs.iter().zip(values) {
            if !(vr >= self.first && ((vr - self.first) as usize) < self.elements.len()) {
                own.vrs.push(vr);
                own.values.push(v);
            }
        }
        if !own.vrs.is_empty() {
            set(self.inner.as_mut(), &own.vrs, &own.values)?;
        }
        for (&vr, &v) in vrs.iter().zip(values) {
            if !self.is_element(vr) {
                continue;
            }
            let (slot, index) = self.element(vr);
            let array = &mut self.arrays[slot];
            let array_vr = array.vr;
            let Some(buffer) = T::buffer(&mut array.values) else {
                return Err(self.mismatch(vr));
            };
            if !array.known {
                get(self.inner.as_mut(), &[array_vr], buffer)?;
                array.known = true;
            }
            buffer[index] = v;
            array.pending = true;
            self.pending = true;
        }
        Ok(())
    }

    /// Before a call other than a read or a write: a new epoch, the written elements given.
    fn before(&mut self) -> Result<()> {
        self.epoch += 1;
        self.flush()
    }

    /// Give the FMU the arrays whose elements were written since: before any other call.
    fn flush(&mut self) -> Result<()> {
        if !self.pending {
            return Ok(());
        }
        self.pending = false;
        for array in &mut self.arrays {
            if !array.pending {
                continue;
            }
            array.pending = false;
            let vrs = [array.vr];
            let inner = self.inner.as_mut();
            match &array.values {
                Buffer::F64(v) => inner.set_float64(&vrs, v),
                Buffer::F32(v) => inner.set_float32(&vrs, v),
                Buffer::I8(v) => inner.set_int8(&vrs, v),
                Buffer::U8(v) => inner.set_uint8(&vrs, v),
                Buffer::I16(v) => inner.set_int16(&vrs, v),
                Buffer::U16(v) => inner.set_uint16(&vrs, v),
                Buffer::I32(v) => inner.set_int32(&vrs, v),
                Buffer::U32(v) => inner.set_uint32(&vrs, v),
                Buffer::I64(v) => inner.set_int64(&vrs, v),
                Buffer::U64(v) => inner.set_uint64(&vrs, v),
                Buffer::Bool(v) => inner.set_boolean(&vrs, v),
            }?;
        }
        Ok(())
    }

    /// The FMU's references for `vrs` with an array's elements as the whole array (listed
    /// once), for each entry of `vrs` its position among the FMU's values, and their count
    /// (for the calls that take vectors over all elements: directional and output
    /// derivatives).
    fn expand(&self, vrs: &[ValueReference]) -> (Vec<ValueReference>, Vec<usize>, usize) {
        let mut expanded = Vec::with_capacity(vrs.len());
        let mut positions = Vec::with_capacity(vrs.len());
        let mut count = 0;
        // Each array once: (slot, position of its first element).
        let mut listed: Vec<(usize, usize)> = Vec::new();
        for &vr in vrs {
            if self.is_element(vr) {
                let (slot, index) = self.element(vr);
                let start = match listed.iter().find(|(s, _)| *s == slot) {
                    Some(&(_, start)) => start,
                    None => {
                        let array = &self.arrays[slot];
                        expanded.push(array.vr);
                        listed.push((slot, count));
                        count += buffer_len(&array.values);
                        count - buffer_len(&array.values)
                    }
                };
                positions.push(start + index);
            } else {
                expanded.push(vr);
                positions.push(count);
                count += 1;
            }
        }
        (expanded, positions, count)
    }

    /// Forget the arrays' values (the FMU's state changed under them).
    fn forget(&mut self) {
        self.epoch += 1;
        self.pending = false;
        for array in &mut self.arrays {
            array.known = false;
            array.pending = false;
        }
    }
}

fn buffer(var_type: VariableType, n: usize) -> Option<Buffer> {
    Some(match var_type {
        VariableType::Float64 => Buffer::F64(vec![0.0; n]),
        VariableType::Float32 => Buffer::F32(vec![0.0; n]),
        VariableType::Int8 => Buffer::I8(vec![0; n]),
        VariableType::UInt8 => Buffer::U8(vec![0; n]),
        VariableType::Int16 => Buffer::I16(vec![0; n]),
        VariableType::UInt16 => Buffer::U16(vec![0; n]),
        VariableType::Int32 => Buffer::I32(vec![0; n]),
        VariableType::UInt32 => Buffer::U32(vec![0; n]),
        // FMI 3 enumerations are read and written as Int64.
        VariableType::Int64 | VariableType::Enumeration => Buffer::I64(vec![0; n]),
        VariableType::UInt64 => Buffer::U64(vec![0; n]),
        VariableType::Boolean => Buffer::Bool(vec![false; n]),
        _ => return None,
    })
}

fn buffer_len(buffer: &Buffer) -> usize {
    match buffer {
        Buffer::F64(v) => v.len(),
        Buffer::F32(v) => v.len(),
        Buffer::I8(v) => v.len(),
        Buffer::U8(v) => v.len(),
        Buffer::I16(v) => v.len(),
        Buffer::U16(v) => v.len(),
        Buffer::I32(v) => v.len(),
        Buffer::U32(v) => v.len(),
        Buffer::I64(v) => v.len(),
        Buffer::U64(v) => v.len(),
        Buffer::Bool(v) => v.len(),
    }
}

macro_rules! typed {
    ($($get:ident, $set:ident, $t:ty;)*) => {$(
        fn $get(&mut self, vrs: &[ValueReference], values: &mut [$t]) -> Result<()> {
            self.get(vrs, values, |s, v, x| s.$get(v, x))
        }
        fn $set(&mut self, vrs: &[ValueReference], values: &[$t]) -> Result<()> {
            self.set(vrs, values, |s, v, x| s.$get(v, x), |s, v, x| s.$set(v, x))
        }
    )*};
}

impl Slave for ArrayElements {
    crate::fmu::slave::forward_slave!(inner:
        name, description, state, steps_in_background, can_save_state, provides_directional_derivatives, max_output_derivative_order, call_count,
    );

    typed! {
        get_float64, set_float64, f64;
        get_float32, set_float32, f32;
        get_int8, set_int8, i8;
        get_uint8, set_uint8, u8;
        get_int16, set_int16, i16;
        get_uint16, set_uint16, u16;
        get_int32, set_int32, i32;
        get_uint32, set_uint32, u32;
        get_int64, set_int64, i64;
        get_uint64, set_uint64, u64;
        get_boolean, set_boolean, bool;
    }

    fn enter_configuration_mode(&mut self) -> Result<()> {
        self.before()?;
        self.inner.enter_configuration_mode()
    }
    fn exit_configuration_mode(&mut self) -> Result<()> {
        self.before()?;
        self.inner.exit_configuration_mode()
    }
    fn enter_initialization_mode(
        &mut self,
        tolerance: Option<f64>,
        start_time: f64,
        stop_time: Option<f64>,
    ) -> Result<()> {
        self.before()?;
        self.inner
            .enter_initialization_mode(tolerance, start_time, stop_time)
    }
    fn exit_initialization_mode(&mut self) -> Result<()> {
        self.before()?;
        self.inner.exit_initialization_mode()
    }
    fn do_step(&mut self, current_time: f64, step_size: f64) -> Result<StepResult> {
        self.before()?;
        self.inner.do_step(current_time, step_size)
    }
    fn start_step(&mut self, current_time: f64, step_size: f64) -> Result<()> {
        self.before()?;
        self.inner.start_step(current_time, step_size)
    }
    fn finish_step(&mut self) -> Result<StepResult> {
        self.before()?;
        self.inner.finish_step()
    }
    fn enter_event_mode(&mut self) -> Result<()> {
        self.before()?;
        self.inner.enter_event_mode()
    }
    fn update_discrete_states(&mut self) -> Result<DiscreteStatesUpdate> {
        self.before()?;
        self.inner.update_discrete_states()
    }
    fn enter_step_mode(&mut self) -> Result<()> {
        self.before()?;
        self.inner.enter_step_mode()
    }
    fn get_clock(&mut self, vrs: &[ValueReference], active: &mut [bool]) -> Result<()> {
        self.before()?;
        self.inner.get_clock(vrs, active)
    }
    fn set_clock(&mut self, vrs: &[ValueReference], active: &[bool]) -> Result<()> {
        self.before()?;
        self.inner.set_clock(vrs, active)
    }
    fn get_interval_decimal(
        &mut self,
        vrs: &[ValueReference],
        intervals: &mut [f64],
        qualifiers: &mut [IntervalQualifier],
    ) -> Result<()> {
        self.before()?;
        self.inner.get_interval_decimal(vrs, intervals, qualifiers)
    }
    fn terminate(&mut self) -> Result<()> {
        self.before()?;
        self.inner.terminate()
    }
    fn reset(&mut self) -> Result<()> {
        // Writes before a reset are undone by it.
        self.forget();
        self.inner.reset()
    }
    fn get_string(&mut self, vrs: &[ValueReference]) -> Result<Vec<String>> {
        self.before()?;
        self.inner.get_string(vrs)
    }
    fn set_string(&mut self, vrs: &[ValueReference], values: &[&str]) -> Result<()> {
        self.before()?;
        self.inner.set_string(vrs, values)
    }
    fn get_binary(&mut self, vrs: &[ValueReference]) -> Result<Vec<Vec<u8>>> {
        self.before()?;
        self.inner.get_binary(vrs)
    }
    fn set_binary(&mut self, vrs: &[ValueReference], values: &[&[u8]]) -> Result<()> {
        self.before()?;
        self.inner.set_binary(vrs, values)
    }
    fn save_state(&mut self) -> Result<StateId> {
        self.before()?;
        self.inner.save_state()
    }
    fn update_state(&mut self, state: StateId) -> Result<()> {
        self.before()?;
        self.inner.update_state(state)
    }
    fn restore_state(&mut self, state: StateId) -> Result<()> {
        // Writes before a restore are undone by it.
        self.forget();
        self.inner.restore_state(state)
    }
    fn free_state(&mut self, state: StateId) -> Result<()> {
        self.before()?;
        self.inner.free_state(state)
    }
    fn serialize_state(&mut self, state: StateId) -> Result<Vec<u8>> {
        self.before()?;
        self.inner.serialize_state(state)
    }
    fn deserialize_state(&mut self, bytes: &[u8]) -> Result<StateId> {
        self.before()?;
        self.inner.deserialize_state(bytes)
    }
    fn directional_derivative(
        &mut self,
        unknowns: &[ValueReference],
        knowns: &[ValueReference],
        seed: &[f64],
        sensitivity: &mut [f64],
    ) -> Result<()> {
        self.before()?;
        let elements = |vrs: &[ValueReference]| vrs.iter().any(|&vr| self.is_element(vr));
        if !elements(unknowns) && !elements(knowns) {
            return self
                .inner
                .directional_derivative(unknowns, knowns, seed, sensitivity);
        }
        // Over whole arrays: each known element seeds its position in its array.
        let (known_vrs, known_at, n_seed) = self.expand(knowns);
        let (unknown_vrs, unknown_at, n_sensitivity) = self.expand(unknowns);
        let mut full_seed = vec![0.0; n_seed];
        for (&at, &s) in known_at.iter().zip(seed) {
            full_seed[at] = s;
        }
        let mut full = vec![0.0; n_sensitivity];
        self.inner
            .directional_derivative(&unknown_vrs, &known_vrs, &full_seed, &mut full)?;
        for (out, &at) in sensitivity.iter_mut().zip(&unknown_at) {
            *out = full[at];
        }
        Ok(())
    }
    fn get_output_derivatives(
        &mut self,
        vrs: &[ValueReference],
        order: u32,
        values: &mut [f64],
    ) -> Result<()> {
        self.before()?;
        if !vrs.iter().any(|&vr| self.is_element(vr)) {
            return self.inner.get_output_derivatives(vrs, order, values);
        }
        let (expanded, at, n) = self.expand(vrs);
        let mut full = vec![0.0; n];
        self.inner
            .get_output_derivatives(&expanded, order, &mut full)?;
        for (out, &at) in values.iter_mut().zip(&at) {
            *out = full[at];
        }
        Ok(())
    }
    fn set_input_polynomial(
        &mut self,
        vrs: &[ValueReference],
        order: usize,
        taylor: &[f64],
    ) -> Result<PolynomialInputMode> {
        self.before()?;
        if !vrs.iter().any(|&vr| self.is_element(vr)) {
            return self.inner.set_input_polynomial(vrs, order, taylor);
        }
        Err(Error::Unsupported {
            instance: self.inner.name().to_string(),
            message: format!(
                "the elements of an FMI 3 array input cannot follow a polynomial of order {order} \
                 (cosimo holds them over each step); give array connections extrapolation order 0"
            ),
        })
    }
    fn set_macro_step(&mut self, span: Option<(f64, f64)>) -> Result<()> {
        self.before()?;
        self.inner.set_macro_step(span)
    }
    fn integrator_statistics(&self) -> Option<crate::fmu::model_exchange::Statistics> {
        self.inner.integrator_statistics()
    }
}
