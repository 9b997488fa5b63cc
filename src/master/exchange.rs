//! The exchange at a communication point, resolved once into FMI accesses grouped by
//! component.
//!
//! After a step, every coupling value is either the source read right after the step (held
//! in `after_step`) or, where the source output feeds through from a coupled input, read again
//! once that input is set; inputs that feed through are set at once. In graph order these
//! reads and sets alternate between components; consecutive accesses to components that live on
//! one thread are one hand-over to that thread (one round trip on the worker pool instead of
//! one per connection; on one thread, the whole exchange between algebraic loops is one), and
//! every value reference, type and version is looked up here once, not at every communication
//! point.

use std::ops::Range;
use std::sync::atomic::Ordering;

use super::execution::{get_scalar, non_finite, set_scalar, Execution};
use super::pool::{Unit, Units};
use super::record::Recording;
use crate::fmu::description::{ValueReference, VariableType};
use crate::fmu::FmiVersion;
use crate::system::graph::CouplingGraph;
use crate::system::resolve::ResolvedSystem;
use crate::{Error, Result};

/// One read of a connection's source or set of its target.
#[derive(Debug, Clone, Copy)]
pub struct Access {
    pub connection: usize,
    pub vr: ValueReference,
    pub var_type: VariableType,
    pub fmi3: bool,
    /// Read the source (else set the target).
    pub read: bool,
}

/// One part of the exchange, in order.
#[derive(Debug, Clone)]
pub enum Part {
    /// Consecutive accesses (a range of [`ExchangePlan::accesses`]) to one component.
    Component {
        component: usize,
        accesses: Range<usize>,
    },
    /// An algebraic loop, solved by `loops::solve`.
    Loop(usize),
}

/// Consecutive parts of the exchange run by one hand-over.
#[derive(Debug, Clone)]
pub enum Stretch {
    /// Parts (a range of [`ExchangePlan::parts`], all `Part::Component`) whose components
    /// live on `thread`.
    Thread { thread: usize, parts: Range<usize> },
    /// An algebraic loop, solved by `loops::solve`.
    Loop(usize),
}

/// The exchange after a step, and the sets a result row makes first.
#[derive(Debug, Clone, Default)]
pub struct ExchangePlan {
    /// Connections whose value is the source read after the step.
    pub held: Vec<usize>,
    pub accesses: Vec<Access>,
    pub parts: Vec<Part>,
    /// The parts grouped by the thread their components live on, in order.
    pub stretches: Vec<Stretch>,
    /// Per component: the targets set before its values are recorded (inputs that do not feed
    /// through, so the exchange left them for the next step).
    pub row_sets: Vec<Vec<Access>>,
    /// Per component: its recording (index into the execution's recordings) and the offset
    /// of its cells in a row.
    pub record_at: Vec<Option<(usize, usize)>>,
}

impl ExchangePlan {
    /// The exchange of `resolved`, its components on the threads `thread_of` gives.
    pub fn new(
        resolved: &ResolvedSystem,
        graph: &CouplingGraph,
        fresh_read: &[bool],
        recordings: &[(usize, Recording)],
        thread_of: &dyn Fn(usize) -> usize,
    ) -> Result<ExchangePlan> {
        let access = |c: usize, read: bool| {
            let conn = &resolved.connections[c];
            let (component, variable) = if read {
                (conn.from_component, conn.from_variable)
            } else {
                (conn.to_component, conn.to_variable)
            };
            let description = &resolved.components[component].description;
            let variable = &description.variables[variable];
            (
                component,
                Access {
                    connection: c,
                    vr: variable.value_reference,
                    var_type: variable.var_type,
                    fmi3: description.fmi_version == FmiVersion::Fmi3,
                    read,
                },
            )
        };
        let mut plan = ExchangePlan {
            row_sets: vec![Vec::new(); resolved.components.len()],
            record_at: vec![None; resolved.components.len()],
            ..ExchangePlan::default()
        };
        let mut offset = 0;
        for (k, (i, recording)) in recordings.iter().enumerate() {
            if plan.record_at[*i].is_some() {
                return Err(Error::Internal(format!("component {i} has two recordings")));
            }
            plan.record_at[*i] = Some((k, offset));
            offset += recording.len();
        }
        for (b, block) in graph.blocks.iter().enumerate() {
            if block.is_loop {
                plan.parts.push(Part::Loop(b));
                continue;
            }
            for &c in &block.connections {
                if fresh_read[c] {
                    plan.push(access(c, true));
                } else {
                    plan.held.push(c);
                }
                if graph.propagates[c] {
                    plan.push(access(c, false));
                }
            }
        }
        for c in 0..resolved.connections.len() {
            if !graph.propagates[c] {
                let (component, set) = access(c, false);
                plan.row_sets[component].push(set);
            }
        }
        for (p, part) in plan.parts.iter().enumerate() {
            let thread = match part {
                Part::Loop(b) => {
                    plan.stretches.push(Stretch::Loop(*b));
                    continue;
                }
                Part::Component { component, .. } => thread_of(*component),
            };
            match plan.stretches.last_mut() {
                Some(Stretch::Thread {
                    thread: last,
                    parts,
                }) if *last == thread => parts.end = p + 1,
                _ => plan.stretches.push(Stretch::Thread {
                    thread,
                    parts: p..p + 1,
                }),
            }
        }
        Ok(plan)
    }

    /// Append an access, to the last part when it is for the same component.
    fn push(&mut self, (component, access): (usize, Access)) {
        let at = self.accesses.len();
        self.accesses.push(access);
        match self.parts.last_mut() {
            Some(Part::Component {
                component: last,
                accesses,
            }) if *last == component => accesses.end = at + 1,
            _ => self.parts.push(Part::Component {
                component,
                accesses: at..at + 1,
            }),
        }
    }
}

impl Execution {
    /// The exchange after a step (see the module documentation).
    pub(crate) fn exchange_after_step(&mut self) -> Result<()> {
        for &c in &self.exchange_plan.held {
            self.values[c] = f64::from_bits(self.after_step[c].load(Ordering::Relaxed));
        }
        if self.ranks.is_some() {
            return self.exchange_across_ranks();
        }
        for k in 0..self.exchange_plan.stretches.len() {
            let (thread, parts) = match &self.exchange_plan.stretches[k] {
                Stretch::Loop(b) => {
                    super::loops::solve(self, *b)?;
                    continue;
                }
                Stretch::Thread { thread, parts } => (*thread, parts.clone()),
            };
            let plan = &self.exchange_plan;
            let values = &mut self.values;
            let resolved = &self.resolved;
            let allow_non_finite = self.allow_non_finite;
            self.placement
                .run_on_thread(thread, &mut |units: &mut Units<'_>| {
                    for part in &plan.parts[parts.clone()] {
                        let Part::Component {
                            component,
                            accesses,
                        } = part
                        else {
                            continue;
                        };
                        let unit = units.get(*component).ok_or_else(|| {
                            Error::Internal(format!(
                                "component {component} is not on thread {thread}"
                            ))
                        })?;
                        let slave = unit.slave.as_mut();
                        for a in &plan.accesses[accesses.clone()] {
                            let conn = &resolved.connections[a.connection];
                            if a.read {
                                let y =
                                    conn.transform(get_scalar(slave, a.vr, a.var_type, a.fmi3)?);
                                if !y.is_finite() && !allow_non_finite {
                                    return Err(non_finite(resolved, conn, y));
                                }
                                values[a.connection] = y;
                            } else {
                                set_scalar(slave, a.vr, a.var_type, a.fmi3, values[a.connection])?;
                            }
                        }
                    }
                    Ok(())
                })?;
        }
        Ok(())
    }
}

impl Execution {
    /// The exchange after a step under `mpirun`. The plan's parts are walked in stretches of
    /// consecutive components of one owner: the owner makes the stretch's reads and sets on
    /// its slaves, then sends what it read to every rank in one broadcast (a stand-in takes no
    /// sets, so the other ranks only wait for the values). A chain split over K ranks costs K
    /// broadcasts, not one per source read fresh.
    fn exchange_across_ranks(&mut self) -> Result<()> {
        let Some(ranks) = self.ranks.clone() else {
            return Ok(());
        };
        if self.neighbours.is_some() {
            return self.exchange_over_neighbours();
        }
        let me = ranks.rank();
        let mut k = 0;
        while k < self.exchange_plan.parts.len() {
            let owner = match &self.exchange_plan.parts[k] {
                Part::Loop(b) => {
                    super::loops::solve(self, *b)?;
                    k += 1;
                    continue;
                }
                Part::Component { component, .. } => ranks.owner[*component],
            };
            let end = (k..self.exchange_plan.parts.len())
                .find(|&j| match &self.exchange_plan.parts[j] {
                    Part::Component { component, .. } => ranks.owner[*component] != owner,
                    Part::Loop(_) => true,
                })
                .unwrap_or(self.exchange_plan.parts.len());
            let reads: Vec<usize> = self.exchange_plan.parts[k..end]
                .iter()
                .flat_map(|part| match part {
                    Part::Component { accesses, .. } => accesses.clone(),
                    Part::Loop(_) => 0..0,
                })
                .map(|a| self.exchange_plan.accesses[a])
                .filter(|access| access.read)
                .map(|access| access.connection)
                .collect();
            let mut message = vec![0u8; 1 + 8 * reads.len()];
            let mut walked = Ok(());
            if owner == me {
                walked = self.walk_stretch(k..end);
                message[0] = u8::from(walked.is_err());
                for (bytes, &c) in message[1..].chunks_exact_mut(8).zip(&reads) {
                    bytes.copy_from_slice(&self.values[c].to_le_bytes());
                }
            }
            ranks.transport.broadcast_known(owner, &mut message);
            if message[0] != 0 {
                return Err(super::transport::failure_of(
                    ranks.transport.as_ref(),
                    owner,
                    walked,
                ));
            }
            if owner != me {
                for (bytes, &c) in message[1..].chunks_exact(8).zip(&reads) {
                    let word = bytes.try_into().unwrap_or_default();
                    self.values[c] = f64::from_le_bytes(word);
                }
            }
            k = end;
        }
        Ok(())
    }

    /// The reads and sets of the exchange plan's `parts`, all of components of this rank.
    pub(crate) fn walk_stretch(&mut self, parts: Range<usize>) -> Result<()> {
        for k in parts {
            let Part::Component { accesses, .. } = &self.exchange_plan.parts[k] else {
                continue;
            };
            for a in accesses.clone() {
                let access = self.exchange_plan.accesses[a];
                let c = access.connection;
                if access.read {
                    let y = self.read_source_here(c)?;
                    if !y.is_finite() && !self.allow_non_finite {
                        return Err(non_finite(&self.resolved, &self.resolved.connections[c], y));
                    }
                    self.values[c] = y;
                } else {
                    self.set_target(c, self.values[c])?;
                }
            }
        }
        Ok(())
    }
}

/// Set the targets `sets` from `values` (on the component's own thread).
pub(crate) fn set_targets(unit: &mut Unit, sets: &[Access], values: &[f64]) -> Result<()> {
    for a in sets {
        set_scalar(
            unit.slave.as_mut(),
            a.vr,
            a.var_type,
            a.fmi3,
            values[a.connection],
        )?;
    }
    Ok(())
}
