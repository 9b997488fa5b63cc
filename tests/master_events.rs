mod common;
use common::systems::*;
use cosimo::system::{Experiment, System};

#[test]
fn scratch() {
    let system = System {
        components: vec![
            component("osc", "Oscillator", 3, &[("c", 1.0), ("d", 0.0)]),
            component("ft", "Feedthrough", 2, &[]),
        ],
        connections: vec![connect("osc.x", "ft.Float64_continuous_input")],
        experiment: Experiment {
            stop: 0.05,
            step: 0.01,
            ..Experiment::default()
        },
    };
    let (table, _) = run(
        &system,
        &[
            "osc.x",
            "ft.Float64_continuous_input",
            "ft.Float64_continuous_output",
        ],
    );
    for r in 0..table.time().len() {
        eprintln!(
            "{} {} {} {}",
            table.time()[r],
            table.values(0)[r],
            table.values(1)[r],
            table.values(2)[r]
        );
    }
}
