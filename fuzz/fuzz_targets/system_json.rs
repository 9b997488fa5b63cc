//! cosimo's JSON system file reader, on any bytes: an error is a fine answer; a panic, a hang,
//! a stack overflow or running out of memory is a bug.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let path = Path::new("/nonexistent/cosimo-fuzz/system.json");
        let _ = cosimo::system::config::from_str(text, path);
    }
});
