//! Result rows as Arrow record batches, written as an Arrow IPC stream (`.arrow`) or a Parquet
//! file (`.parquet`).
//!
//! The schema keeps what the FMUs declare: each column has its FMI type's Arrow type (Float64,
//! Float32, Int8 ... UInt64, Boolean, Utf8 for String, Binary; Int64 for enumerations, Boolean
//! for clocks; a Float array as a fixed-size list of its elements, other arrays as their
//! space-separated text as in CSV), and its field metadata `fmi_type`, `causality`,
//! `variability`, `unit`, `description` and, for one variable recorded under several names,
//! `alias_of` (the column recorded first). The time column comes first, in seconds.
//!
//! The IPC stream is written batch by batch: a batch goes to the file at most
//! [`FLUSH_INTERVAL`](super::flush::FLUSH_INTERVAL) after its first row (or when it holds a
//! million cells), so a run that fails or is killed leaves a stream of the rows so far that
//! every Arrow reader opens (`pyarrow.ipc.open_stream`, `polars.read_ipc_stream`); a run that
//! ends closes it with the end-of-stream marker. The stream format, not the file format, is
//! what makes a killed run's file readable: the file format's footer is only written at the
//! end. Parquet's footer is too: the Parquet file is complete when the run finishes or fails,
//! not when it is killed.

use std::collections::HashMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{
    ArrayBuilder, BinaryBuilder, BooleanBuilder, FixedSizeListBuilder, Float32Builder,
    Float64Builder, Int16Builder, Int32Builder, Int64Builder, Int8Builder, StringBuilder,
    UInt16Builder, UInt32Builder, UInt64Builder, UInt8Builder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{ArrowError, DataType, Field, FieldRef, Schema, SchemaRef};

use super::flush::FlushClock;
use crate::error::{Error, Result};
use crate::fmu::description::VariableType;
use crate::master::record::{Cell, ResultColumn, Row};
use crate::master::run::Observer;
use crate::master::RunStatistics;

/// The most cells a batch holds before it is written.
const BATCH_CELLS: usize = 1 << 20;

/// Rows gathered into record batches of the columns' Arrow types.
pub struct Batches {
    schema: SchemaRef,
    time: Float64Builder,
    columns: Vec<Builder>,
    rows: usize,
    /// Rows per batch at most.
    batch_rows: usize,
}

impl Batches {
    /// Builders for `columns`, after the time.
    pub fn new(columns: &[ResultColumn]) -> Batches {
        let mut fields = vec![Field::new("time", DataType::Float64, false)
            .with_metadata(HashMap::from([("unit".to_string(), "s".to_string())]))];
        let mut first_name: HashMap<_, &str> = HashMap::new();
        let mut builders = Vec::with_capacity(columns.len());
        for column in columns {
            let builder = Builder::new(column);
            let mut metadata = HashMap::from([
                ("fmi_type".to_string(), format!("{:?}", column.var_type)),
                ("causality".to_string(), json_name(&column.causality)),
                ("variability".to_string(), json_name(&column.variability)),
            ]);
            if let Some(unit) = column.unit.as_ref().filter(|u| !u.is_empty()) {
                metadata.insert("unit".into(), unit.clone());
            }
            if let Some(description) = column.description.as_ref().filter(|d| !d.is_empty()) {
                metadata.insert("description".into(), description.clone());
            }
            match first_name.get(&column.source) {
                Some(first) => {
                    metadata.insert("alias_of".into(), (*first).to_string());
                }
                None => {
                    first_name.insert(column.source, column.name.as_str());
                }
            }
            fields.push(
                Field::new(column.name.as_str(), builder.data_type(), true).with_metadata(metadata),
            );
            builders.push(builder);
        }
        let schema = Schema::new(fields).with_metadata(HashMap::from([(
            "producer".to_string(),
            format!("cosimo {}", env!("CARGO_PKG_VERSION")),
        )]));
        Batches {
            schema: Arc::new(schema),
            time: Float64Builder::new(),
            columns: builders,
            rows: 0,
            batch_rows: (BATCH_CELLS / (columns.len() + 1)).clamp(1, 1 << 16),
        }
    }

    /// The schema of every batch.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Add a row.
    pub fn push(&mut self, row: &Row) {
        self.time.append_value(row.time);
        for (builder, cell) in self.columns.iter_mut().zip(&row.cells) {
            builder.push(cell);
        }
        self.rows += 1;
    }

    /// Whether the batch under way is as long as a batch gets.
    pub fn full(&self) -> bool {
        self.rows >= self.batch_rows
    }

    /// The rows since the last batch as one (none when there are none).
    pub fn take(&mut self) -> std::result::Result<Option<RecordBatch>, ArrowError> {
        if self.rows == 0 {
            return Ok(None);
        }
        self.rows = 0;
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(self.columns.len() + 1);
        arrays.push(Arc::new(self.time.finish()));
        arrays.extend(self.columns.iter_mut().map(Builder::finish));
        RecordBatch::try_new(self.schema.clone(), arrays).map(Some)
    }
}

/// The Arrow builder of one column.
enum Builder {
    F64(Float64Builder),
    F32(Float32Builder),
    I8(Int8Builder),
    I16(Int16Builder),
    I32(Int32Builder),
    I64(Int64Builder),
    U8(UInt8Builder),
    U16(UInt16Builder),
    U32(UInt32Builder),
    U64(UInt64Builder),
    Bool(BooleanBuilder),
    Text(StringBuilder),
    Bytes(BinaryBuilder),
    /// A Float array: its elements, `width` per row.
    Floats(FixedSizeListBuilder<Float64Builder>, usize),
}

/// The element field of Float array columns.
fn element_field() -> FieldRef {
    Arc::new(Field::new("item", DataType::Float64, true))
}

impl Builder {
    fn new(column: &ResultColumn) -> Builder {
        use VariableType as T;
        if let Some(width) = column.array {
            return if column.var_type.is_float() {
                let size = i32::try_from(width).unwrap_or(i32::MAX);
                Builder::Floats(
                    FixedSizeListBuilder::new(Float64Builder::new(), size)
                        .with_field(element_field()),
                    width,
                )
            } else {
                Builder::Text(StringBuilder::new())
            };
        }
        match column.var_type {
            T::Float64 => Builder::F64(Float64Builder::new()),
            T::Float32 => Builder::F32(Float32Builder::new()),
            T::Int8 => Builder::I8(Int8Builder::new()),
            T::Int16 => Builder::I16(Int16Builder::new()),
            T::Int32 => Builder::I32(Int32Builder::new()),
            T::Int64 | T::Enumeration => Builder::I64(Int64Builder::new()),
            T::UInt8 => Builder::U8(UInt8Builder::new()),
            T::UInt16 => Builder::U16(UInt16Builder::new()),
            T::UInt32 => Builder::U32(UInt32Builder::new()),
            T::UInt64 => Builder::U64(UInt64Builder::new()),
            T::Boolean | T::Clock => Builder::Bool(BooleanBuilder::new()),
            T::String => Builder::Text(StringBuilder::new()),
            T::Binary => Builder::Bytes(BinaryBuilder::new()),
        }
    }

    fn data_type(&self) -> DataType {
        match self {
            Builder::F64(_) => DataType::Float64,
            Builder::F32(_) => DataType::Float32,
            Builder::I8(_) => DataType::Int8,
            Builder::I16(_) => DataType::Int16,
            Builder::I32(_) => DataType::Int32,
            Builder::I64(_) => DataType::Int64,
            Builder::U8(_) => DataType::UInt8,
            Builder::U16(_) => DataType::UInt16,
            Builder::U32(_) => DataType::UInt32,
            Builder::U64(_) => DataType::UInt64,
            Builder::Bool(_) => DataType::Boolean,
            Builder::Text(_) => DataType::Utf8,
            Builder::Bytes(_) => DataType::Binary,
            Builder::Floats(_, width) => {
                DataType::FixedSizeList(element_field(), i32::try_from(*width).unwrap_or(i32::MAX))
            }
        }
    }

    /// Append a cell; a cell that does not fit the column's type (a missing array element
    /// reads as NaN) is null.
    fn push(&mut self, cell: &Cell) {
        fn int<T: TryFrom<i64> + TryFrom<u64>>(cell: &Cell) -> Option<T> {
            match cell {
                Cell::Int(x) => T::try_from(*x).ok(),
                Cell::UInt(x) => T::try_from(*x).ok(),
                Cell::Bool(x) => T::try_from(i64::from(*x)).ok(),
                _ => None,
            }
        }
        let float = || match cell {
            Cell::Float(x) => Some(*x),
            Cell::Int(x) => Some(*x as f64),
            Cell::UInt(x) => Some(*x as f64),
            Cell::Bool(x) => Some(f64::from(u8::from(*x))),
            _ => None,
        };
        match self {
            Builder::F64(b) => b.append_option(float()),
            // The FMU's Float32 value, widened when it was read: narrowing it is exact.
            Builder::F32(b) => b.append_option(float().map(|x| x as f32)),
            Builder::I8(b) => b.append_option(int(cell)),
            Builder::I16(b) => b.append_option(int(cell)),
            Builder::I32(b) => b.append_option(int(cell)),
            Builder::I64(b) => b.append_option(int(cell)),
            Builder::U8(b) => b.append_option(int(cell)),
            Builder::U16(b) => b.append_option(int(cell)),
            Builder::U32(b) => b.append_option(int(cell)),
            Builder::U64(b) => b.append_option(int(cell)),
            Builder::Bool(b) => b.append_option(match cell {
                Cell::Bool(x) => Some(*x),
                Cell::Int(x) => Some(*x != 0),
                Cell::UInt(x) => Some(*x != 0),
                _ => None,
            }),
            Builder::Text(b) => match cell {
                Cell::Text(s) => b.append_value(s),
                _ => b.append_null(),
            },
            Builder::Bytes(b) => match cell {
                Cell::Bytes(v) => b.append_value(v),
                _ => b.append_null(),
            },
            Builder::Floats(b, width) => {
                let values: &[f64] = match cell {
                    Cell::Floats(v) => v,
                    _ => &[],
                };
                for k in 0..*width {
                    b.values()
                        .append_value(values.get(k).copied().unwrap_or(f64::NAN));
                }
                b.append(!values.is_empty());
            }
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Builder::F64(b) => Arc::new(b.finish()),
            Builder::F32(b) => Arc::new(b.finish()),
            Builder::I8(b) => Arc::new(b.finish()),
            Builder::I16(b) => Arc::new(b.finish()),
            Builder::I32(b) => Arc::new(b.finish()),
            Builder::I64(b) => Arc::new(b.finish()),
            Builder::U8(b) => Arc::new(b.finish()),
            Builder::U16(b) => Arc::new(b.finish()),
            Builder::U32(b) => Arc::new(b.finish()),
            Builder::U64(b) => Arc::new(b.finish()),
            Builder::Bool(b) => Arc::new(b.finish()),
            Builder::Text(b) => Arc::new(b.finish()),
            Builder::Bytes(b) => Arc::new(b.finish()),
            Builder::Floats(b, _) => ArrayBuilder::finish(b),
        }
    }
}

/// A causality or variability as the model description spells it.
fn json_name<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}

/// An Arrow or Parquet error while writing `path`: a failed write names the file; anything
/// else is cosimo's own mistake.
fn write_error(path: &Path, error: impl Into<WriteError>) -> Error {
    match error.into() {
        WriteError::Arrow(ArrowError::IoError(_, e)) => Error::io(path, e),
        WriteError::Parquet(parquet::errors::ParquetError::External(e)) => {
            Error::io(path, std::io::Error::other(e))
        }
        WriteError::Arrow(e) => Error::Internal(format!("{}: {e}", path.display())),
        WriteError::Parquet(e) => Error::Internal(format!("{}: {e}", path.display())),
    }
}

enum WriteError {
    Arrow(ArrowError),
    Parquet(parquet::errors::ParquetError),
}

impl From<ArrowError> for WriteError {
    fn from(e: ArrowError) -> Self {
        WriteError::Arrow(e)
    }
}

impl From<parquet::errors::ParquetError> for WriteError {
    fn from(e: parquet::errors::ParquetError) -> Self {
        WriteError::Parquet(e)
    }
}

type Stream = arrow_ipc::writer::StreamWriter<BufWriter<File>>;

/// Writes result rows to an Arrow IPC stream file.
pub struct ArrowWriter {
    path: PathBuf,
    batches: Batches,
    /// `None` once the stream is closed.
    stream: Option<Stream>,
    clock: FlushClock,
}

impl ArrowWriter {
    /// Create `path` and write the schema.
    pub fn create(path: &Path, columns: &[ResultColumn]) -> Result<ArrowWriter> {
        let batches = Batches::new(columns);
        let file = File::create(path).map_err(|e| Error::io(path, e))?;
        let mut stream = Stream::try_new(BufWriter::new(file), batches.schema())
            .map_err(|e| write_error(path, e))?;
        stream.flush().map_err(|e| write_error(path, e))?;
        Ok(ArrowWriter {
            path: path.to_path_buf(),
            batches,
            stream: Some(stream),
            clock: FlushClock::default(),
        })
    }

    /// The file written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether rows wait in the buffer.
    pub fn pending(&self) -> bool {
        self.clock.pending()
    }

    /// Add a row; the batch goes to the file when it is due or full.
    pub fn write_row(&mut self, row: &Row) -> Result<()> {
        self.batches.push(row);
        if self.clock.wrote() || self.batches.full() {
            self.flush()?;
        }
        Ok(())
    }

    /// Write the rows so far as a batch.
    pub fn flush(&mut self) -> Result<()> {
        self.clock.flushed();
        let Some(stream) = self.stream.as_mut() else {
            return Ok(());
        };
        let path = &self.path;
        if let Some(batch) = self.batches.take().map_err(|e| write_error(path, e))? {
            stream.write(&batch).map_err(|e| write_error(path, e))?;
        }
        stream.flush().map_err(|e| write_error(path, e))
    }

    /// Write the rows so far and the end-of-stream marker.
    fn close(&mut self) -> Result<()> {
        self.flush()?;
        if let Some(mut stream) = self.stream.take() {
            stream.finish().map_err(|e| write_error(&self.path, e))?;
            stream.flush().map_err(|e| write_error(&self.path, e))?;
        }
        Ok(())
    }
}

impl Observer for ArrowWriter {
    fn row(&mut self, row: &Row) -> Result<()> {
        self.write_row(row)
    }

    fn stepped(&mut self, _time: f64) {
        if self.clock.stepped() {
            // A write error shows at the next row or the end.
            let _ = self.flush();
        }
    }

    fn finished(&mut self, _stats: &RunStatistics) -> Result<()> {
        self.close()
    }

    fn failed(&mut self, _error: &Error) {
        if let Err(e) = self.close() {
            log::error!("{e}");
        }
    }
}

/// The most bytes of a Parquet row group, which is kept in memory until it is written.
const ROW_GROUP_BYTES: usize = 64 << 20;

/// Writes result rows to a Parquet file, complete when the run finishes or fails.
pub struct ParquetWriter {
    path: PathBuf,
    batches: Batches,
    /// `None` once the file is closed.
    writer: Option<parquet::arrow::ArrowWriter<File>>,
}

impl ParquetWriter {
    /// Create `path`; the rows follow as the run goes, the footer when it ends.
    pub fn create(path: &Path, columns: &[ResultColumn]) -> Result<ParquetWriter> {
        let batches = Batches::new(columns);
        let file = File::create(path).map_err(|e| Error::io(path, e))?;
        let properties = parquet::file::properties::WriterProperties::builder()
            .set_max_row_group_bytes(Some(ROW_GROUP_BYTES))
            .build();
        let writer =
            parquet::arrow::ArrowWriter::try_new(file, batches.schema().clone(), Some(properties))
                .map_err(|e| write_error(path, e))?;
        Ok(ParquetWriter {
            path: path.to_path_buf(),
            batches,
            writer: Some(writer),
        })
    }

    /// The file written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Add a row.
    pub fn write_row(&mut self, row: &Row) -> Result<()> {
        self.batches.push(row);
        if self.batches.full() {
            self.write_batch()?;
        }
        Ok(())
    }

    fn write_batch(&mut self) -> Result<()> {
        let path = &self.path;
        let (Some(writer), Some(batch)) = (
            self.writer.as_mut(),
            self.batches.take().map_err(|e| write_error(path, e))?,
        ) else {
            return Ok(());
        };
        writer.write(&batch).map_err(|e| write_error(path, e))
    }

    /// Write the rows so far and the footer.
    fn close(&mut self) -> Result<()> {
        self.write_batch()?;
        if let Some(writer) = self.writer.take() {
            writer.close().map_err(|e| write_error(&self.path, e))?;
        }
        Ok(())
    }
}

impl Observer for ParquetWriter {
    fn row(&mut self, row: &Row) -> Result<()> {
        self.write_row(row)
    }

    fn finished(&mut self, _stats: &RunStatistics) -> Result<()> {
        self.close()
    }

    fn failed(&mut self, _error: &Error) {
        if let Err(e) = self.close() {
            log::error!("{e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fmu::description::{Causality, Variability};

    #[test]
    fn the_schema_keeps_types_units_descriptions_and_aliases() {
        let x = ResultColumn {
            name: "x".into(),
            var_type: VariableType::UInt16,
            causality: Causality::Output,
            variability: Variability::Discrete,
            unit: Some("rpm".into()),
            description: Some("speed".into()),
            array: None,
            source: (0, 7, VariableType::UInt16, None),
        };
        let alias = ResultColumn {
            name: "x2".into(),
            ..x.clone()
        };
        let mut batches = Batches::new(&[x, alias]);
        let schema = batches.schema().clone();
        let field = schema.field(1);
        assert_eq!(field.data_type(), &DataType::UInt16);
        let meta = field.metadata();
        assert_eq!(meta["unit"], "rpm");
        assert_eq!(meta["description"], "speed");
        assert_eq!(meta["causality"], "output");
        assert_eq!(meta["variability"], "discrete");
        assert_eq!(meta["fmi_type"], "UInt16");
        assert!(!meta.contains_key("alias_of"));
        assert_eq!(schema.field(2).metadata()["alias_of"], "x");
        batches.push(&Row {
            time: 0.5,
            cells: vec![Cell::UInt(65535), Cell::Float(f64::NAN)],
        });
        let batch = batches.take().unwrap().unwrap();
        assert_eq!(batch.num_rows(), 1);
        assert!(batch.column(2).is_null(0), "a cell of another kind is null");
        assert!(batches.take().unwrap().is_none());
    }
}
