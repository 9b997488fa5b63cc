//! Storage of every variable's current value. All mutable model data lives here, so an FMU
//! state is a copy of this store plus the time, and serialisation is exact.

use std::borrow::Cow;
use std::ffi::CString;
use std::sync::Arc;

use crate::variable::{Start, Table, VarType, MAX_CONFIGURED_ELEMENTS};

/// The values of one variable (all elements of an array).
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// Float32 elements.
    F32(Vec<f32>),
    /// Float64 elements.
    F64(Vec<f64>),
    /// Int8 elements.
    I8(Vec<i8>),
    /// UInt8 elements.
    U8(Vec<u8>),
    /// Int16 elements.
    I16(Vec<i16>),
    /// UInt16 elements.
    U16(Vec<u16>),
    /// Int32 elements.
    I32(Vec<i32>),
    /// UInt32 elements.
    U32(Vec<u32>),
    /// Int64 elements.
    I64(Vec<i64>),
    /// UInt64 elements.
    U64(Vec<u64>),
    /// Boolean elements.
    Bool(Vec<bool>),
    /// String elements (kept NUL-terminated so getters can hand out pointers).
    Str(Vec<CString>),
    /// Binary elements.
    Bin(Vec<Vec<u8>>),
}

impl Value {
    /// The value a variable has before anything is set: its start value, or zeros.
    pub(crate) fn initial(ty: VarType, len: usize, start: Option<&Start>) -> Value {
        let f = |i: usize| match start {
            Some(Start::Float(v)) => v.get(i).copied().unwrap_or(0.0),
            _ => 0.0,
        };
        let n = |i: usize| match start {
            Some(Start::Int(v)) => v.get(i).copied().unwrap_or(0),
            _ => 0,
        };
        // Integer starts were range-checked when the table was built.
        macro_rules! ints {
            ($variant:ident, $t:ty) => {
                Value::$variant(
                    (0..len)
                        .map(|i| <$t>::try_from(n(i)).unwrap_or(0))
                        .collect(),
                )
            };
        }
        match ty {
            VarType::Float32 => Value::F32((0..len).map(|i| f(i) as f32).collect()),
            VarType::Float64 => Value::F64((0..len).map(f).collect()),
            VarType::Int8 => ints!(I8, i8),
            VarType::UInt8 => ints!(U8, u8),
            VarType::Int16 => ints!(I16, i16),
            VarType::UInt16 => ints!(U16, u16),
            VarType::Int32 => ints!(I32, i32),
            VarType::UInt32 => ints!(U32, u32),
            VarType::Int64 | VarType::Enumeration => ints!(I64, i64),
            VarType::UInt64 => ints!(U64, u64),
            VarType::Boolean => Value::Bool(
                (0..len)
                    .map(|i| match start {
                        Some(Start::Bool(v)) => v.get(i).copied().unwrap_or(false),
                        _ => false,
                    })
                    .collect(),
            ),
            VarType::String => Value::Str(
                (0..len)
                    .map(|i| match start {
                        Some(Start::Str(v)) => to_cstring(v.get(i).map_or("", String::as_str)),
                        _ => CString::default(),
                    })
                    .collect(),
            ),
            VarType::Binary => Value::Bin(
                (0..len)
                    .map(|i| match start {
                        Some(Start::Binary(v)) => v.get(i).cloned().unwrap_or_default(),
                        _ => Vec::new(),
                    })
                    .collect(),
            ),
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            Value::F32(v) => v.len(),
            Value::F64(v) => v.len(),
            Value::I8(v) => v.len(),
            Value::U8(v) => v.len(),
            Value::I16(v) => v.len(),
            Value::U16(v) => v.len(),
            Value::I32(v) => v.len(),
            Value::U32(v) => v.len(),
            Value::I64(v) => v.len(),
            Value::U64(v) => v.len(),
            Value::Bool(v) => v.len(),
            Value::Str(v) => v.len(),
            Value::Bin(v) => v.len(),
        }
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `i` as f64, for range checks and finite differences (None for non-numbers).
    pub(crate) fn as_f64(&self, i: usize) -> Option<f64> {
        Some(match self {
            Value::F32(v) => f64::from(*v.get(i)?),
            Value::F64(v) => *v.get(i)?,
            Value::I8(v) => f64::from(*v.get(i)?),
            Value::U8(v) => f64::from(*v.get(i)?),
            Value::I16(v) => f64::from(*v.get(i)?),
            Value::U16(v) => f64::from(*v.get(i)?),
            Value::I32(v) => f64::from(*v.get(i)?),
            Value::U32(v) => f64::from(*v.get(i)?),
            Value::I64(v) => *v.get(i)? as f64,
            Value::U64(v) => *v.get(i)? as f64,
            _ => return None,
        })
    }
}

/// Copies the first `n` elements of `from` into `to` (values of the same type).
fn copy_prefix(from: &Value, to: &mut Value, n: usize) {
    macro_rules! copy {
        ($($variant:ident),*) => {
            match (from, to) {
                $((Value::$variant(a), Value::$variant(b)) => b[..n].clone_from_slice(&a[..n]),)*
                _ => {}
            }
        };
    }
    copy!(F32, F64, I8, U8, I16, U16, I32, U32, I64, U64, Bool, Str, Bin);
}

/// Converts text to a C string, dropping interior NULs (which C cannot represent).
pub(crate) fn to_cstring(s: &str) -> CString {
    CString::new(s.replace('\0', "")).unwrap_or_default()
}

/// A numeric or boolean element type that can be read and written as a slice.
pub trait Element: Copy + 'static {
    /// The slice of a value of this element type.
    fn slice(v: &Value) -> Option<&[Self]>;
    /// The mutable slice of a value of this element type.
    fn slice_mut(v: &mut Value) -> Option<&mut [Self]>;
    /// The element as f64 (for bound checks).
    fn to_f64(self) -> f64;
}

macro_rules! element {
    ($($t:ty => $variant:ident, $conv:expr;)*) => {$(
        impl Element for $t {
            fn slice(v: &Value) -> Option<&[Self]> {
                match v { Value::$variant(x) => Some(x), _ => None }
            }
            fn slice_mut(v: &mut Value) -> Option<&mut [Self]> {
                match v { Value::$variant(x) => Some(x), _ => None }
            }
            fn to_f64(self) -> f64 { $conv(self) }
        }
    )*};
}
element! {
    f32 => F32, f64::from;
    f64 => F64, |x| x;
    i8 => I8, f64::from;
    u8 => U8, f64::from;
    i16 => I16, f64::from;
    u16 => U16, f64::from;
    i32 => I32, f64::from;
    u32 => U32, f64::from;
    i64 => I64, |x| x as f64;
    u64 => U64, |x| x as f64;
    bool => Bool, |x: bool| f64::from(u8::from(x));
}

/// The current values of all variables of one instance. Models read and write it by value
/// reference; a wrong reference or type in model code is a bug in the model and panics
/// (the kit turns the panic into an error status at the C boundary).
#[derive(Clone, Debug)]
pub struct Values {
    pub(crate) table: Arc<Table>,
    pub(crate) data: Vec<Value>,
}

impl PartialEq for Values {
    fn eq(&self, other: &Self) -> bool {
        self.data == other.data
    }
}

impl Values {
    /// Every variable at its start value.
    pub fn new(table: Arc<Table>) -> Values {
        let data = table
            .vars
            .iter()
            .map(|v| Value::initial(v.ty, v.len(), v.start.as_ref()))
            .collect();
        Values { table, data }
    }

    /// Gives every array sized by a structural parameter ([`crate::Variable::sized_by`]) the
    /// parameter's current value as its size, keeping the elements it had (new ones from the
    /// start value, else 0); an unchanged size keeps the values. A size outside
    /// 1..=[`MAX_CONFIGURED_ELEMENTS`] is an error naming the parameter and the array.
    pub(crate) fn resize_arrays(&mut self) -> Result<(), String> {
        let table = Arc::clone(&self.table);
        for (i, v) in table.vars.iter().enumerate() {
            let Some(p) = v.sized_by else { continue };
            let n = self.scalar::<u64>(p);
            if !(1..=MAX_CONFIGURED_ELEMENTS).contains(&n) {
                let name = table.var(p).map_or("?", |x| x.name.as_str());
                return Err(format!(
                    "{name} = {n} sizes array '{}', but it must lie in 1..={MAX_CONFIGURED_ELEMENTS}",
                    v.name
                ));
            }
            let n = n as usize;
            if self.data[i].len() == n {
                continue;
            }
            let mut fresh = Value::initial(v.ty, n, v.start.as_ref());
            let keep = n.min(self.data[i].len());
            copy_prefix(&self.data[i], &mut fresh, keep);
            self.data[i] = fresh;
        }
        Ok(())
    }

    /// The variable table.
    pub fn table(&self) -> &Table {
        &self.table
    }

    fn idx(&self, vr: u32) -> usize {
        match self.table.index_of(vr) {
            Some(i) => i,
            None => panic!("model code used unknown value reference {vr}"),
        }
    }

    /// All values of a variable.
    pub fn value(&self, vr: u32) -> &Value {
        &self.data[self.idx(vr)]
    }

    /// The elements of a numeric or boolean variable.
    pub fn get<T: Element>(&self, vr: u32) -> &[T] {
        let i = self.idx(vr);
        match T::slice(&self.data[i]) {
            Some(s) => s,
            None => panic!("model code read vr {vr} with the wrong type"),
        }
    }

    /// The mutable elements of a numeric or boolean variable.
    pub fn get_mut<T: Element>(&mut self, vr: u32) -> &mut [T] {
        let i = self.idx(vr);
        match T::slice_mut(&mut self.data[i]) {
            Some(s) => s,
            None => panic!("model code wrote vr {vr} with the wrong type"),
        }
    }

    /// A scalar element (the first element of an array).
    pub fn scalar<T: Element>(&self, vr: u32) -> T {
        match self.get::<T>(vr).first() {
            Some(x) => *x,
            None => panic!("vr {vr} has no elements"),
        }
    }

    /// Sets a scalar element (the first element of an array).
    pub fn set_scalar<T: Element>(&mut self, vr: u32, x: T) {
        match self.get_mut::<T>(vr).first_mut() {
            Some(e) => *e = x,
            None => panic!("vr {vr} has no elements"),
        }
    }

    /// A scalar Float64.
    pub fn f64(&self, vr: u32) -> f64 {
        self.scalar(vr)
    }

    /// Sets a scalar Float64.
    pub fn set_f64(&mut self, vr: u32, x: f64) {
        self.set_scalar(vr, x);
    }

    /// A scalar Int32.
    pub fn i32(&self, vr: u32) -> i32 {
        self.scalar(vr)
    }

    /// Sets a scalar Int32.
    pub fn set_i32(&mut self, vr: u32, x: i32) {
        self.set_scalar(vr, x);
    }

    /// A scalar Boolean.
    pub fn bool(&self, vr: u32) -> bool {
        self.scalar(vr)
    }

    /// Sets a scalar Boolean.
    pub fn set_bool(&mut self, vr: u32, x: bool) {
        self.set_scalar(vr, x);
    }

    /// Element `i` of a String variable (lossy for non-UTF-8 text).
    pub fn string(&self, vr: u32, i: usize) -> Cow<'_, str> {
        match &self.data[self.idx(vr)] {
            Value::Str(s) => s.get(i).map_or(Cow::Borrowed(""), |c| c.to_string_lossy()),
            _ => panic!("vr {vr} is not a String"),
        }
    }

    /// Sets element `i` of a String variable.
    pub fn set_string(&mut self, vr: u32, i: usize, text: &str) {
        let idx = self.idx(vr);
        match &mut self.data[idx] {
            Value::Str(s) if i < s.len() => s[i] = to_cstring(text),
            _ => panic!("vr {vr} is not a String with element {i}"),
        }
    }

    /// Element `i` of a Binary variable.
    pub fn binary(&self, vr: u32, i: usize) -> &[u8] {
        match &self.data[self.idx(vr)] {
            Value::Bin(b) => b.get(i).map_or(&[], Vec::as_slice),
            _ => panic!("vr {vr} is not Binary"),
        }
    }

    /// Sets element `i` of a Binary variable.
    pub fn set_binary(&mut self, vr: u32, i: usize, bytes: &[u8]) {
        let idx = self.idx(vr);
        match &mut self.data[idx] {
            Value::Bin(b) if i < b.len() => b[i] = bytes.to_vec(),
            _ => panic!("vr {vr} is not a Binary with element {i}"),
        }
    }
}
