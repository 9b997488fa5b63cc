//! The modelDescription.xml parser and `cosimo validate`'s checks, on any bytes: an error is a
//! fine answer; a panic, a hang, a stack overflow or running out of memory is a bug.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let origin = Path::new("fuzz/modelDescription.xml");
    if let Ok(description) = cosimo::fmu::description::from_bytes(data, origin) {
        // What `cosimo inspect` prints of a description that loaded.
        let _ = cosimo::fmu::summary::text(&description, origin);
        let _ = cosimo::fmu::summary::json(&description, origin);
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = cosimo::fmu::validate::validate_xml(text);
    }
});
