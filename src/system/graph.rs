//! The coupling graph: in which order connections are evaluated at a communication point, which
//! of them form algebraic loops, and in which order Gauss-Seidel steps the components.
//!
//! The coupling variables are the connections: the value of connection c is
//! `scale * (output of its source) + shift`. Connection c1 must be evaluated before c2 when c2's
//! source output depends, by direct feedthrough, on c1's target input (same component). An
//! output depends on an input when the model structure lists the input among the output's
//! dependencies, lists the output without a `dependencies` attribute (may depend on every known),
//! or does not list the output at all (locals, non-conforming FMUs: assumed conservatively).
//! Strongly connected groups of connections are algebraic loops.
//!
//! The strongly connected components come from petgraph's Kosaraju search, whose depth-first
//! walks keep their own stack (its Tarjan search recurses once per node of a path and
//! overflows the thread's stack on a chain of 100,000 components); their order does not
//! matter: `condensed_order` decides it.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use petgraph::algo::kosaraju_scc;
use petgraph::graph::{DiGraph, NodeIndex};

use super::resolve::{ResolvedConnection, ResolvedSystem};
use crate::fmu::description::{Causality, ModelDescription, Variability};

/// The evaluation structure of a resolved system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CouplingGraph {
    /// Blocks in evaluation order: one connection, or an algebraic loop of several.
    pub blocks: Vec<Block>,
    /// Components in the order Gauss-Seidel steps them: topological order of the component graph
    /// (an edge a -> b for every connection from a to b), strongly connected components condensed,
    /// declaration order inside a component cycle and between independent components.
    pub gauss_seidel_order: Vec<usize>,
    /// For each connection: whether its target input feeds through (declared dependency) to an
    /// output that is the source of some connection, so the master must set it at communication
    /// points before reading that output.
    pub propagates: Vec<bool>,
}

/// Connections evaluated together: one alone, or an algebraic loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// Indices into the system's connections; in declaration order within a loop.
    pub connections: Vec<usize>,
    /// Whether the connections depend on each other through direct feedthrough.
    pub is_loop: bool,
}

/// Whether `output` of a component may depend on `input` through direct feedthrough. A
/// variable the model structure does not list may, unless it is a constant, fixed or calculated
/// parameter (those do not change with inputs during the simulation).
pub fn feeds_through(description: &ModelDescription, output: usize, input: usize) -> bool {
    match description
        .model_structure
        .outputs
        .iter()
        .find(|u| u.variable == output)
    {
        None => description.variables.get(output).is_none_or(|v| {
            v.causality != Causality::CalculatedParameter
                && !matches!(v.variability, Variability::Constant | Variability::Fixed)
        }),
        Some(unknown) => match &unknown.dependencies {
            None => true,
            Some(deps) => deps.contains(&input),
        },
    }
}

/// Build the coupling graph of a resolved system.
pub fn build(system: &ResolvedSystem) -> CouplingGraph {
    let connections = &system.connections;
    let n = connections.len();

    // c1 -> c2 when c2's source output depends on c1's target input.
    let mut graph: DiGraph<usize, ()> = DiGraph::with_capacity(n, n);
    let nodes: Vec<NodeIndex> = (0..n).map(|i| graph.add_node(i)).collect();
    let mut propagates = vec![false; n];
    let mut self_edge = vec![false; n];
    // The connections leaving each component: only those can depend on a connection into it
    // (all pairs would cost O(n^2) on a system of 100,000 connections).
    let mut leaving: Vec<Vec<usize>> = vec![Vec::new(); system.components.len()];
    for (j, c) in connections.iter().enumerate() {
        if let Some(list) = leaving.get_mut(c.from_component) {
            list.push(j);
        }
    }
    for (i, c1) in connections.iter().enumerate() {
        let description = &system.components[c1.to_component].description;
        let candidates = leaving.get(c1.to_component).map_or(&[][..], Vec::as_slice);
        for &j in candidates {
            let c2 = &connections[j];
            if feeds_through(description, c2.from_variable, c1.to_variable) {
                graph.add_edge(nodes[i], nodes[j], ());
                propagates[i] = true;
                if i == j {
                    self_edge[i] = true;
                }
            }
        }
    }

    let groups: Vec<Vec<usize>> = kosaraju_scc(&graph)
        .into_iter()
        .map(|scc| {
            let mut members: Vec<usize> = scc.into_iter().map(|v| graph[v]).collect();
            members.sort_unstable();
            members
        })
        .collect();
    let successors = |i: usize| graph.neighbors(nodes[i]).map(|v| graph[v]);
    let blocks = condensed_order(&groups, n, successors)
        .into_iter()
        .map(|g| {
            let connections = groups[g].clone();
            let is_loop = connections.len() > 1 || self_edge[connections[0]];
            Block {
                connections,
                is_loop,
            }
        })
        .collect();

    CouplingGraph {
        blocks,
        gauss_seidel_order: component_order(system.components.len(), connections),
        propagates,
    }
}

/// Human description of a block by variable names, e.g. "a.y -> b.u, b.y -> a.u".
pub fn describe_block(system: &ResolvedSystem, block: &Block) -> String {
    block
        .connections
        .iter()
        .filter_map(|&i| system.connections.get(i))
        .map(|c| {
            format!(
                "{} -> {}",
                endpoint(system, c.from_component, c.from_variable),
                endpoint(system, c.to_component, c.to_variable)
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn endpoint(system: &ResolvedSystem, component: usize, variable: usize) -> String {
    match system.components.get(component) {
        Some(c) => match c.description.variables.get(variable) {
            Some(v) => format!("{}.{}", c.name, v.name),
            None => format!("{}.#{variable}", c.name),
        },
        None => format!("#{component}.#{variable}"),
    }
}

/// Components in Gauss-Seidel order: the component graph's strongly connected components in
/// topological order, declaration order inside and between independent ones.
fn component_order(count: usize, connections: &[ResolvedConnection]) -> Vec<usize> {
    let mut graph: DiGraph<usize, ()> = DiGraph::with_capacity(count, connections.len());
    let nodes: Vec<NodeIndex> = (0..count).map(|i| graph.add_node(i)).collect();
    for c in connections {
        if c.from_component != c.to_component
            && c.from_component < count
            && c.to_component < count
            && graph
                .find_edge(nodes[c.from_component], nodes[c.to_component])
                .is_none()
        {
            graph.add_edge(nodes[c.from_component], nodes[c.to_component], ());
        }
    }
    let groups: Vec<Vec<usize>> = kosaraju_scc(&graph)
        .into_iter()
        .map(|scc| {
            let mut members: Vec<usize> = scc.into_iter().map(|v| graph[v]).collect();
            members.sort_unstable();
            members
        })
        .collect();
    let successors = |i: usize| graph.neighbors(nodes[i]).map(|v| graph[v]);
    condensed_order(&groups, count, successors)
        .into_iter()
        .flat_map(|g| groups[g].iter().copied())
        .collect()
}

/// Topological order of the condensation of a graph whose strongly connected components are
/// `groups` (each sorted, covering `0..count`), choosing among ready groups the one with the
/// smallest member first (Kahn's algorithm with a min-heap): returns group indices.
fn condensed_order<I: Iterator<Item = usize>>(
    groups: &[Vec<usize>],
    count: usize,
    successors: impl Fn(usize) -> I,
) -> Vec<usize> {
    let mut group_of = vec![0usize; count];
    for (g, members) in groups.iter().enumerate() {
        for &m in members {
            group_of[m] = g;
        }
    }
    let mut edges: Vec<Vec<usize>> = vec![Vec::new(); groups.len()];
    let mut indegree = vec![0usize; groups.len()];
    for (g, members) in groups.iter().enumerate() {
        for &m in members {
            for s in successors(m) {
                let h = group_of[s];
                if h != g && !edges[g].contains(&h) {
                    edges[g].push(h);
                    indegree[h] += 1;
                }
            }
        }
    }
    let mut ready: BinaryHeap<Reverse<(usize, usize)>> = groups
        .iter()
        .enumerate()
        .filter(|&(g, _)| indegree[g] == 0)
        .map(|(g, members)| Reverse((members[0], g)))
        .collect();
    let mut order = Vec::with_capacity(groups.len());
    while let Some(Reverse((_, g))) = ready.pop() {
        order.push(g);
        for &h in &edges[g] {
            indegree[h] -= 1;
            if indegree[h] == 0 {
                ready.push(Reverse((groups[h][0], h)));
            }
        }
    }
    order
}
