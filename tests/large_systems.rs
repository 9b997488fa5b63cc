//! Systems far larger than any example (issue 29, "scale in one process"): a chain of 100,000
//! components loads, resolves, orders and runs. Setting up used to grow with the square of
//! the size (name lookups, the coupling graph, the duplicate-input check, the unconnected
//! inputs) and the coupling graph's strongly-connected-component search recursed once per
//! link, overflowing the stack at 100,000. The times of 1e3, 1e4 and 1e5 components are a
//! benchmark (`benches/setup.rs`), not this test.

mod common;

use common::systems::{column, component, connect, run};
use cosimo::settings::Experiment;
use cosimo::system::graph;
use cosimo::system::System;

/// `count` Gains in a chain, `g0.y -> g1.u -> ...`; the first has k = 2 and u = 1, the others
/// k = 1, so every output is 2 once the chain has been evaluated in order.
fn gain_chain(count: usize) -> System {
    let components = (0..count)
        .map(|i| {
            if i == 0 {
                component("g0", "Gain", 2, &[("k", 2.0), ("u", 1.0)])
            } else {
                component(&format!("g{i}"), "Gain", 2, &[])
            }
        })
        .collect();
    let connections = (1..count)
        .map(|i| connect(&format!("g{}.y", i - 1), &format!("g{i}.u")))
        .collect();
    System {
        components,
        connections,
        experiment: Experiment {
            stop: 2e-3,
            step: 1e-3,
            ..Experiment::default()
        },
    }
}

#[test]
fn a_chain_of_100_000_components_runs_and_its_outputs_pass_down_the_whole_chain() {
    const COUNT: usize = 100_000;
    let system = gain_chain(COUNT);
    let last = format!("g{}.y", COUNT - 1);
    let middle = format!("g{}.y", COUNT / 2);
    let (table, stats) = run(&system, &["g0.y", &middle, &last]);
    assert_eq!(stats.steps, 2, "two macro steps of 1 ms");
    for name in ["g0.y", middle.as_str(), last.as_str()] {
        // The feedthrough chain is evaluated in its order at every communication point, so
        // the first component's output reaches the last one at once.
        assert_eq!(column(&table, name), [2.0, 2.0, 2.0], "{name}");
    }
}

#[test]
fn the_coupling_graph_of_a_100_000_link_chain_is_in_chain_order() {
    const COUNT: usize = 100_000;
    let system = gain_chain(COUNT);
    let gain = cosimo::fmu::Fmu::open(&system.components[0].fmu).expect("the Gain FMU opens");
    let description = std::sync::Arc::clone(gain.description());
    let resolved = cosimo::system::resolve::resolve(&system, vec![description; COUNT])
        .expect("the chain resolves");
    let coupling = graph::build(&resolved);
    assert_eq!(coupling.blocks.len(), COUNT - 1);
    assert!(coupling
        .blocks
        .iter()
        .enumerate()
        .all(|(i, b)| b.connections == [i] && !b.is_loop));
    assert!(coupling.gauss_seidel_order.iter().copied().eq(0..COUNT));
    assert!(coupling.propagates[..COUNT - 2].iter().all(|&p| p));
}
