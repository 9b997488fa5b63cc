//! `cosimo run --partition FILE` under mpirun: the partition file, read against a system of
//! four components over 1 to 4 ranks (the first byte). An error is a fine answer; a panic, a
//! hang or an owner that is not a rank of the run is a bug.
#![no_main]

use std::path::Path;
use std::sync::OnceLock;

use cosimo::distribute::partition_file::parse;
use cosimo::system::System;
use libfuzzer_sys::fuzz_target;

fn system() -> &'static System {
    static SYSTEM: OnceLock<System> = OnceLock::new();
    SYSTEM.get_or_init(|| {
        let text = r#"{"components": [
            {"name": "mass1", "fmu": "a.fmu"}, {"name": "spring", "fmu": "b.fmu"},
            {"name": "mass 2", "fmu": "a.fmu"}, {"name": "g", "fmu": "c.fmu"}],
            "experiment": {"stopTime": 1, "stepSize": 0.1}}"#;
        cosimo::system::config::from_str(text, Path::new("/nonexistent/system.json"))
            .expect("the fuzz target's system reads")
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&choice, text)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(text) else {
        return;
    };
    let ranks = 1 + usize::from(choice % 4);
    if let Ok(owner) = parse(text, "partition.txt", system(), ranks) {
        assert_eq!(owner.len(), system().components.len());
        assert!(owner.iter().all(|&r| r < ranks), "{owner:?} over {ranks} ranks");
    }
});
