//! The SSP reader on the text of a `.ssd` file (as a bare `.ssd` in a folder that does not
//! exist, so references to other files fail cleanly): an error is a fine answer; a panic, a
//! hang, a stack overflow or running out of memory is a bug.
#![no_main]

use std::path::Path;

use cosimo::system::ssp::SspPackage;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let path = Path::new("/nonexistent/cosimo-fuzz/SystemStructure.ssd");
        let _ = SspPackage::import_ssd_text(text, path);
    }
});
