//! Arrow IPC (the stream cosimo writes, or the file format, whose messages are the same stream
//! between a magic number and a footer) and Parquet result files. The first column is the
//! time; numbers keep their types, Float arrays (fixed-size or variable lists) become arrays,
//! strings text and binaries bytes. A stream cut inside a message (a run killed while it wrote
//! a batch) is an error naming the file and the rows before the cut; a stream that just ends
//! between batches (a run killed between them) holds every row it wrote and reads whole.

use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_buffer::Buffer;
use arrow_schema::{DataType, SchemaRef};

use super::{Data, DataColumn, ResultData};
use crate::error::{Error, Result};

/// The first bytes of an Arrow IPC file (the file format; a stream starts with a message).
const FILE_MAGIC: &[u8] = b"ARROW1";

/// Read an Arrow IPC stream or file from its bytes; `path` names it in messages.
pub fn parse_ipc(bytes: Vec<u8>, path: &Path) -> Result<ResultData> {
    let bad = |message: String| Error::Usage(format!("{}: {message}", path.display()));
    // Copied into Arrow's own 64-byte aligned memory: the buffers of a message must lie
    // 8-byte aligned, which a Vec of bytes does not promise.
    let mut buffer = Buffer::from(bytes.as_slice());
    drop(bytes);
    if buffer.starts_with(FILE_MAGIC) {
        // The file format: magic (padded to 8 bytes), the stream, the footer, its length and
        // the magic again. Read the stream, which ends with its end-of-stream marker.
        let n = buffer.len();
        let footer = (n >= 18 && buffer.ends_with(FILE_MAGIC))
            .then(|| i32::from_le_bytes([buffer[n - 10], buffer[n - 9], buffer[n - 8], buffer[n - 7]]))
            .and_then(|len| usize::try_from(len).ok())
            .filter(|&len| len + 18 <= n)
            .ok_or_else(|| {
                bad("an Arrow IPC file without its footer (cut short?); cosimo writes the stream format (.arrow), which a killed run leaves readable".into())
            })?;
        buffer = buffer.slice_with_length(8, n - 18 - footer);
    }
    let messages = messages(&buffer).map_err(|problem| match problem {
        Problem::Cut { rows } => bad(format!(
            "the Arrow stream ends inside a message, after {rows} complete rows: it was cut \
             short (a run killed while writing it, or a copy that did not finish); run the \
             simulation again to get it whole"
        )),
        Problem::Broken { rows, what } => bad(format!(
            "not a readable Arrow IPC stream after {rows} rows: {what}"
        )),
    })?;
    let mut decoder = arrow_ipc::reader::StreamDecoder::new();
    let mut batches = Vec::new();
    let mut rows = 0;
    // Message by message, each with the first byte of the next: the decoder finishes a
    // message whose body is empty (the schema's) only when it sees more bytes.
    let mut fed = 0;
    for (k, &(start, end)) in messages.iter().enumerate() {
        if let Some(schema) = decoder.schema() {
            check_lengths(&schema, &buffer, start).map_err(|what| {
                bad(format!(
                    "not a readable Arrow IPC stream after {rows} rows: the message at byte {start} {what}"
                ))
            })?;
        }
        let until = (end + 1).min(buffer.len());
        let mut message = buffer.slice_with_length(fed, until - fed);
        fed = until;
        while !message.is_empty() {
            match decoder.decode(&mut message) {
                Ok(Some(batch)) => {
                    rows += batch.num_rows();
                    batches.push(batch);
                }
                Ok(None) => {}
                Err(e) => {
                    return Err(bad(format!(
                        "not a readable Arrow IPC stream after {rows} rows: {e}"
                    )))
                }
            }
        }
        if k == 0 {
            // Only types cosimo reads are decoded: the decoder is not asked to make sense of
            // others (unions, dictionaries, ...) from untrusted bytes.
            let schema = decoder
                .schema()
                .ok_or_else(|| bad("the Arrow stream does not start with a schema".into()))?;
            if let Some(field) = schema.fields().iter().find(|f| !readable(f.data_type())) {
                return Err(bad(format!(
                    "column {} is of Arrow type {}, which cosimo does not read (it reads numbers, Booleans, strings, binaries and lists of numbers)",
                    field.name(),
                    field.data_type()
                )));
            }
        }
    }
    let schema = decoder
        .schema()
        .ok_or_else(|| bad("the Arrow stream has no schema: an empty or cut file".into()))?;
    from_batches(&schema, &batches, path)
}

/// What is wrong with a stream's framing.
enum Problem {
    /// It ends inside a message, after this many rows in complete batches.
    Cut { rows: usize },
    /// A message that is no Arrow IPC message, or declares parts beyond its body.
    Broken { rows: usize, what: String },
}

/// The byte ranges of the stream's messages up to its end-of-stream marker (or its end), each
/// checked before the decoder sees it: the metadata is a valid flatbuffer, the body and every
/// buffer of a batch lie within the bytes there are (the decoder slices them unchecked).
fn messages(stream: &[u8]) -> std::result::Result<Vec<(usize, usize)>, Problem> {
    const CONTINUATION: [u8; 4] = [0xff; 4];
    let mut ranges = Vec::new();
    let mut at = 0;
    let mut rows = 0usize;
    let word = |at: usize| -> Option<[u8; 4]> { stream.get(at..at + 4)?.try_into().ok() };
    while at < stream.len() {
        let start = at;
        let Some(mut size) = word(at) else {
            return Err(Problem::Cut { rows });
        };
        at += 4;
        if size == CONTINUATION {
            size = word(at).ok_or(Problem::Cut { rows })?;
            at += 4;
        }
        let size = u32::from_le_bytes(size) as usize;
        if size == 0 {
            break; // the end-of-stream marker
        }
        let metadata = stream.get(at..at + size).ok_or(Problem::Cut { rows })?;
        let message = arrow_ipc::root_as_message(metadata).map_err(|e| Problem::Broken {
            rows,
            what: format!("a message at byte {start} is no Arrow IPC message ({e})"),
        })?;
        let broken = |what: String| Problem::Broken {
            rows,
            what: format!("the message at byte {start} {what}"),
        };
        let body = usize::try_from(message.bodyLength())
            .map_err(|_| broken(format!("declares a body of {} bytes", message.bodyLength())))?;
        at += size;
        let end = at.checked_add(body).filter(|&end| end <= stream.len());
        let Some(end) = end else {
            return Err(Problem::Cut { rows });
        };
        if at % 8 != 0 && body > 0 {
            return Err(broken(format!(
                "has its body at byte {at}, not on an 8-byte boundary as the IPC format requires"
            )));
        }
        let batch = message
            .header_as_record_batch()
            .or_else(|| message.header_as_dictionary_batch().and_then(|d| d.data()));
        if let Some(batch) = batch {
            let length = usize::try_from(batch.length())
                .map_err(|_| broken(format!("declares {} rows", batch.length())))?;
            for buffer in batch.buffers().iter().flatten() {
                let inside = u64::try_from(buffer.offset())
                    .ok()
                    .zip(u64::try_from(buffer.length()).ok())
                    .and_then(|(offset, length)| offset.checked_add(length))
                    .is_some_and(|last| last <= body as u64);
                if buffer.offset() % 8 != 0 {
                    return Err(broken(format!(
                        "declares a buffer at offset {}, not on an 8-byte boundary as the IPC format requires",
                        buffer.offset()
                    )));
                }
                if !inside {
                    return Err(broken(format!(
                        "declares a buffer of {} bytes at {} in a body of {body}",
                        buffer.length(),
                        buffer.offset()
                    )));
                }
            }
            for node in batch.nodes().iter().flatten() {
                if node.length() < 0 || node.null_count() < 0 || node.null_count() > node.length() {
                    return Err(broken(format!(
                        "declares an array of {} values with {} nulls",
                        node.length(),
                        node.null_count()
                    )));
                }
            }
            if message.header_as_record_batch().is_some() {
                rows = rows.saturating_add(length);
            }
        }
        ranges.push((start, end));
        at = end;
    }
    Ok(ranges)
}

/// The metadata of the message at `start` (framing checked by [`messages`]).
fn message_at(stream: &[u8], start: usize) -> Option<arrow_ipc::Message<'_>> {
    let mut at = start;
    let mut size: [u8; 4] = stream.get(at..at + 4)?.try_into().ok()?;
    at += 4;
    if size == [0xff; 4] {
        size = stream.get(at..at + 4)?.try_into().ok()?;
        at += 4;
    }
    let size = u32::from_le_bytes(size) as usize;
    arrow_ipc::root_as_message(stream.get(at..at + size)?).ok()
}

/// A record batch's arrays against the schema: a list of fixed size needs that many values
/// per row (counted without overflow), and each buffer of offsets or values holds whole
/// elements (the decoder's validation asserts both instead of returning an error).
fn check_lengths(
    schema: &SchemaRef,
    stream: &[u8],
    start: usize,
) -> std::result::Result<(), String> {
    let Some(batch) = message_at(stream, start).and_then(|m| m.header_as_record_batch()) else {
        return Ok(());
    };
    let nodes: Vec<_> = batch.nodes().iter().flatten().collect();
    let buffers: Vec<_> = batch.buffers().iter().flatten().collect();
    let (mut node, mut buffer) = (0, 0);
    // The next buffer, which holds elements of `width` bytes (none left: the decoder says so).
    let mut whole = |width: usize| -> std::result::Result<(), String> {
        if let Some(b) = buffers.get(buffer) {
            if width > 1 && b.length() % width as i64 != 0 {
                return Err(format!(
                    "declares a buffer of {} bytes for elements of {width}",
                    b.length()
                ));
            }
        }
        buffer += 1;
        Ok(())
    };
    let width = |t: &DataType| t.primitive_width().unwrap_or(1);
    for field in schema.fields() {
        whole(1)?; // validity
        let lengths = (
            nodes.get(node).map(|n| n.length()),
            nodes.get(node + 1).map(|n| n.length()),
        );
        node += 1;
        match field.data_type() {
            DataType::Utf8 | DataType::Binary => {
                whole(4)?;
                whole(1)?;
            }
            DataType::LargeUtf8 | DataType::LargeBinary => {
                whole(8)?;
                whole(1)?;
            }
            DataType::List(item) | DataType::LargeList(item) => {
                whole(if matches!(field.data_type(), DataType::List(_)) {
                    4
                } else {
                    8
                })?;
                node += 1;
                whole(1)?;
                whole(width(item.data_type()))?;
            }
            DataType::FixedSizeList(item, size) => {
                node += 1;
                if let (Some(rows), Some(values)) = lengths {
                    let needed = rows.checked_mul(i64::from(*size));
                    if *size < 0 || needed.is_none_or(|n| n > values) {
                        return Err(format!(
                            "declares {rows} lists of {size} values in {values} values"
                        ));
                    }
                }
                whole(1)?;
                whole(width(item.data_type()))?;
            }
            DataType::Boolean => whole(1)?,
            t => whole(width(t))?,
        }
    }
    Ok(())
}

/// Whether cosimo reads a column of this type (a list: of numbers).
fn readable(data_type: &DataType) -> bool {
    match data_type {
        DataType::FixedSizeList(item, _) | DataType::List(item) | DataType::LargeList(item) => {
            item.data_type().is_numeric()
        }
        t => {
            t.is_numeric()
                || matches!(
                    t,
                    DataType::Boolean
                        | DataType::Utf8
                        | DataType::LargeUtf8
                        | DataType::Binary
                        | DataType::LargeBinary
                )
        }
    }
}

/// Read a Parquet file.
pub fn read_parquet(path: &Path) -> Result<ResultData> {
    let bad = |e: parquet::errors::ParquetError| {
        Error::Usage(format!(
            "{}: not a readable Parquet file: {e} (a Parquet file is complete only once the run that writes it ends)",
            path.display()
        ))
    };
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let builder = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(bad)?;
    let schema = builder.schema().clone();
    let reader = builder.build().map_err(bad)?;
    let batches = reader
        .collect::<std::result::Result<Vec<RecordBatch>, _>>()
        .map_err(|e| {
            Error::Usage(format!(
                "{}: not a readable Parquet file: {e}",
                path.display()
            ))
        })?;
    from_batches(&schema, &batches, path)
}

/// The batches' columns concatenated; the first is the time.
fn from_batches(schema: &SchemaRef, batches: &[RecordBatch], path: &Path) -> Result<ResultData> {
    let bad = |message: String| Error::Usage(format!("{}: {message}", path.display()));
    let fields = schema.fields();
    let Some(time_field) = fields.first() else {
        return Err(bad(
            "the table has no columns; the first column is the time".into(),
        ));
    };
    let mut time = Vec::new();
    let mut columns: Vec<DataColumn> = Vec::with_capacity(fields.len().saturating_sub(1));
    for (k, field) in fields.iter().enumerate() {
        let mut values = None;
        for batch in batches {
            let array = batch.column(k);
            let part = column_data(array).ok_or_else(|| {
                bad(format!(
                    "column {} is of Arrow type {}, which cosimo does not read (it reads numbers, Booleans, strings, binaries and lists of floats)",
                    field.name(),
                    field.data_type()
                ))
            })?;
            values = Some(match values {
                None => part,
                Some(before) => append(before, part),
            });
        }
        let values = values.unwrap_or_else(|| empty_like(field.data_type()));
        if k == 0 {
            time = match values {
                Data::Float(t) => t,
                Data::Int(t) => t.into_iter().map(|x| x as f64).collect(),
                Data::UInt(t) => t.into_iter().map(|x| x as f64).collect(),
                _ => {
                    return Err(bad(format!(
                        "the first column, {}, is the time, but holds {}",
                        time_field.name(),
                        time_field.data_type()
                    )))
                }
            };
        } else {
            columns.push(DataColumn {
                name: field.name().clone(),
                values,
                unit: field
                    .metadata()
                    .get("unit")
                    .filter(|u| !u.is_empty())
                    .cloned(),
            });
        }
    }
    Ok(ResultData {
        path: path.to_path_buf(),
        time_name: time_field.name().clone(),
        time,
        columns,
    })
}

/// An empty column of the type a field's batches would give.
fn empty_like(data_type: &DataType) -> Data {
    match data_type {
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => {
            Data::Int(Vec::new())
        }
        DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => {
            Data::UInt(Vec::new())
        }
        DataType::Boolean => Data::Bool(Vec::new()),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => Data::Text(Vec::new()),
        DataType::Binary | DataType::LargeBinary => Data::Bytes(Vec::new()),
        DataType::FixedSizeList(..) | DataType::List(_) | DataType::LargeList(_) => {
            Data::FloatArrays(Vec::new())
        }
        _ => Data::Float(Vec::new()),
    }
}

/// One batch's part of a column (`None`: a type cosimo does not read). Nulls read as NaN (an
/// integer column with nulls becomes Float), as empty text or bytes, as an empty array.
fn column_data(array: &ArrayRef) -> Option<Data> {
    macro_rules! numbers {
        ($kind:ty, $variant:ident, $as:ty) => {{
            let a = array.as_primitive::<$kind>();
            if a.null_count() > 0 {
                Data::Float(
                    (0..a.len())
                        .map(|i| {
                            if a.is_null(i) {
                                f64::NAN
                            } else {
                                a.value(i) as f64
                            }
                        })
                        .collect(),
                )
            } else {
                Data::$variant(a.values().iter().map(|&x| x as $as).collect())
            }
        }};
    }
    Some(match array.data_type() {
        DataType::Float64 => {
            let a = array.as_primitive::<Float64Type>();
            Data::Float(
                (0..a.len())
                    .map(|i| if a.is_null(i) { f64::NAN } else { a.value(i) })
                    .collect(),
            )
        }
        DataType::Float32 => {
            let a = array.as_primitive::<Float32Type>();
            Data::Float(
                (0..a.len())
                    .map(|i| {
                        if a.is_null(i) {
                            f64::NAN
                        } else {
                            f64::from(a.value(i))
                        }
                    })
                    .collect(),
            )
        }
        DataType::Int8 => numbers!(Int8Type, Int, i64),
        DataType::Int16 => numbers!(Int16Type, Int, i64),
        DataType::Int32 => numbers!(Int32Type, Int, i64),
        DataType::Int64 => numbers!(Int64Type, Int, i64),
        DataType::UInt8 => numbers!(UInt8Type, UInt, u64),
        DataType::UInt16 => numbers!(UInt16Type, UInt, u64),
        DataType::UInt32 => numbers!(UInt32Type, UInt, u64),
        DataType::UInt64 => numbers!(UInt64Type, UInt, u64),
        DataType::Boolean => {
            let a = array.as_boolean();
            if a.null_count() > 0 {
                Data::Float(
                    (0..a.len())
                        .map(|i| match a.is_null(i) {
                            true => f64::NAN,
                            false => f64::from(u8::from(a.value(i))),
                        })
                        .collect(),
                )
            } else {
                Data::Bool((0..a.len()).map(|i| a.value(i)).collect())
            }
        }
        DataType::Utf8 => {
            let a = array.as_string::<i32>();
            Data::Text((0..a.len()).map(|i| a.value(i).to_string()).collect())
        }
        DataType::LargeUtf8 => {
            let a = array.as_string::<i64>();
            Data::Text((0..a.len()).map(|i| a.value(i).to_string()).collect())
        }
        DataType::Utf8View => {
            let a = array.as_string_view();
            Data::Text((0..a.len()).map(|i| a.value(i).to_string()).collect())
        }
        DataType::Binary => {
            let a = array.as_binary::<i32>();
            Data::Bytes((0..a.len()).map(|i| a.value(i).to_vec()).collect())
        }
        DataType::LargeBinary => {
            let a = array.as_binary::<i64>();
            Data::Bytes((0..a.len()).map(|i| a.value(i).to_vec()).collect())
        }
        DataType::FixedSizeList(..) => {
            let a = array.as_fixed_size_list();
            let rows = (0..a.len()).map(|i| (!a.is_null(i)).then(|| a.value(i)));
            Data::FloatArrays(float_lists(rows)?)
        }
        DataType::List(_) => {
            let a = array.as_list::<i32>();
            let rows = (0..a.len()).map(|i| (!a.is_null(i)).then(|| a.value(i)));
            Data::FloatArrays(float_lists(rows)?)
        }
        DataType::LargeList(_) => {
            let a = array.as_list::<i64>();
            let rows = (0..a.len()).map(|i| (!a.is_null(i)).then(|| a.value(i)));
            Data::FloatArrays(float_lists(rows)?)
        }
        _ => return None,
    })
}

/// Lists of numbers as Float arrays (a null list empty; `None` when the elements are no numbers).
fn float_lists(rows: impl Iterator<Item = Option<ArrayRef>>) -> Option<Vec<Vec<f64>>> {
    rows.map(|row| match row {
        None => Some(Vec::new()),
        Some(values) => match column_data(&values)? {
            Data::Float(v) => Some(v),
            Data::Int(v) => Some(v.into_iter().map(|x| x as f64).collect()),
            Data::UInt(v) => Some(v.into_iter().map(|x| x as f64).collect()),
            _ => None,
        },
    })
    .collect()
}

/// Two parts of one column, in order (a part whose nulls made it Float makes the whole Float).
fn append(before: Data, part: Data) -> Data {
    match (before, part) {
        (Data::Float(mut a), Data::Float(b)) => {
            a.extend(b);
            Data::Float(a)
        }
        (Data::Int(mut a), Data::Int(b)) => {
            a.extend(b);
            Data::Int(a)
        }
        (Data::UInt(mut a), Data::UInt(b)) => {
            a.extend(b);
            Data::UInt(a)
        }
        (Data::Bool(mut a), Data::Bool(b)) => {
            a.extend(b);
            Data::Bool(a)
        }
        (Data::FloatArrays(mut a), Data::FloatArrays(b)) => {
            a.extend(b);
            Data::FloatArrays(a)
        }
        (Data::Text(mut a), Data::Text(b)) => {
            a.extend(b);
            Data::Text(a)
        }
        (Data::Bytes(mut a), Data::Bytes(b)) => {
            a.extend(b);
            Data::Bytes(a)
        }
        (a, b) => Data::Float(as_floats(a).into_iter().chain(as_floats(b)).collect()),
    }
}

/// A numeric column as floats (text and arrays as NaN: they only meet numbers in broken files).
fn as_floats(data: Data) -> Vec<f64> {
    match data {
        Data::Float(v) => v,
        Data::Int(v) => v.into_iter().map(|x| x as f64).collect(),
        Data::UInt(v) => v.into_iter().map(|x| x as f64).collect(),
        Data::Bool(v) => v.into_iter().map(|x| f64::from(u8::from(x))).collect(),
        other => vec![f64::NAN; other.len()],
    }
}
