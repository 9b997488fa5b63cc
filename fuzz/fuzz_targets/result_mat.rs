//! The MAT result reader (dsres as cosimo, Dymola and OpenModelica write it) on any bytes: an
//! error is a fine answer; a panic, a hang, running out of memory (a header's sizes are checked
//! against the file before anything is allocated) is a bug, and so is a table whose columns do
//! not have one value per time.
#![no_main]

use std::path::Path;

use cosimo::results::compare::SignalTable;
use cosimo::results::read::mat;
use cosimo::table::Table;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(result) = mat::parse(data, Path::new("fuzz/results.mat")) else {
        return;
    };
    for column in &result.columns {
        assert_eq!(column.values.len(), result.time.len(), "{}", column.name);
    }
    assert!(
        result.columns.len().saturating_mul(result.time.len())
            <= data.len().saturating_mul(mat::CELLS_PER_BYTE).max(1 << 16),
        "more cells than the file may ask for"
    );
    if result.check().is_ok() {
        let _ = Table::from_data(&result);
        let _ = SignalTable::from_data(&result);
    }
});
