//! The scenario reader (libcosim's format) on any bytes, as JSON and as YAML: an error is a fine
//! answer; a panic, a hang, a stack overflow or running out of memory is a bug, and so is a
//! scenario that breaks what the reader promises (sorted, finite times, lines within the text).
#![no_main]

use std::path::Path;

use cosimo::settings::scenario::{Scenario, ScenarioValue};
use libfuzzer_sys::fuzz_target;

fn check(scenario: &Scenario, text: &str) {
    // YAML also breaks lines at a lone carriage return.
    let lines = 1 + text.matches('\n').count() + text.matches('\r').count();
    let end = scenario.end.unwrap_or(f64::INFINITY);
    for pair in scenario.events.windows(2) {
        assert!(pair[0].time <= pair[1].time, "events out of order");
    }
    for event in &scenario.events {
        assert!(event.time.is_finite() && event.time >= 0.0 && event.time <= end);
        assert!(
            (1..=lines).contains(&event.line),
            "line {} of {lines}",
            event.line
        );
        assert!(!event.model.trim().is_empty() && !event.variable.trim().is_empty());
        if let Some(ScenarioValue::Float(x)) = event.action.value() {
            assert!(x.is_finite());
        }
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(s) = Scenario::parse_json(text, Path::new("fuzz.json")) {
            check(&s, text);
        }
        if let Ok(s) = Scenario::parse_yaml(text, Path::new("fuzz.yaml")) {
            check(&s, text);
        }
    }
});
