//! The Arrow IPC result reader (the stream cosimo writes, or the file format) on any bytes: an
//! error is a fine answer (a cut stream is one); a panic, a hang or running out of memory is a
//! bug, and so is a table whose columns do not have one value per time.
#![no_main]

use std::path::Path;

use cosimo::results::compare::SignalTable;
use cosimo::results::read::arrow;
use cosimo::table::Table;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(result) = arrow::parse_ipc(data.to_vec(), Path::new("fuzz/results.arrow")) else {
        return;
    };
    for column in &result.columns {
        assert_eq!(column.values.len(), result.time.len(), "{}", column.name);
    }
    if result.check().is_ok() {
        let _ = Table::from_data(&result);
        let _ = SignalTable::from_data(&result);
    }
});
