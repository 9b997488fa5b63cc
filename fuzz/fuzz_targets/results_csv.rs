//! The result / reference CSV reader of `cosimo check` and the comparison of two tables: the
//! input is a reference, a NUL byte and a result (without a NUL, the table is compared with
//! itself). An error is a fine answer; a panic, a hang, a stack overflow or running out of
//! memory is a bug, and so is a table compared with itself that misses one of its signals.
#![no_main]

use std::path::Path;

use cosimo::results::compare::{compare_at, CompareAt, CompareOptions, SignalTable};
use cosimo::results::reference::covers;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (reference, result) = match data.iter().position(|&b| b == 0) {
        Some(nul) => (&data[..nul], Some(&data[nul + 1..])),
        None => (data, None),
    };
    let Ok(reference) = std::str::from_utf8(reference) else {
        return;
    };
    let Ok(reference) = SignalTable::parse(reference, Path::new("fuzz/reference.csv")) else {
        return;
    };
    let _ = reference.column_names();
    let _ = covers(reference.time(), 0.0, 1.0);
    let result = match result.map(std::str::from_utf8) {
        None => None,
        Some(Ok(text)) => match SignalTable::parse(text, Path::new("fuzz/result.csv")) {
            Ok(table) => Some(table),
            Err(_) => return,
        },
        Some(Err(_)) => return,
    };
    let options = CompareOptions {
        keep_traces: true,
        ..CompareOptions::default()
    };
    let kind_of = |_: &str| None;
    for at in [CompareAt::Reference, CompareAt::All] {
        let comparison = compare_at(
            &reference,
            result.as_ref().unwrap_or(&reference),
            &options,
            at,
            &kind_of,
        );
        let _ = comparison.worst();
        let _ = comparison.first_violation();
        let _ = serde_json::to_string(&comparison);
        if result.is_none() {
            // NaN cells compare equal to NaN; text and numbers to themselves.
            assert!(comparison.missing.is_empty(), "{:?}", comparison.missing);
        }
    }
});
