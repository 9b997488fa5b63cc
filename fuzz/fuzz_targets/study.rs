//! The study file of `cosimo sweep`, on any bytes, and the plan of runs a study that reads makes
//! (the first, a middle and the last run's values): an error is a fine answer; a panic, a hang,
//! a stack overflow or running out of memory is a bug, and so is a plan whose values are not
//! finite or whose count breaks the study's limit.
#![no_main]

use std::path::Path;

use cosimo::settings::study::{Study, MAX_RUNS};
use cosimo::sweep::Plan;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(study) = Study::parse(text, Path::new("/nonexistent/cosimo-fuzz/study.json")) else {
        return;
    };
    let runs = study.run_count();
    assert!((1..=MAX_RUNS).contains(&runs), "{runs} runs");
    let _ = study.parameter_names();
    let plan = Plan::new(&study);
    assert_eq!(plan.len() as u64, runs);
    for index in [0, plan.len() / 2, plan.len() - 1] {
        let values = plan.values(index);
        assert_eq!(values.len(), plan.parameters.len());
    }
});
