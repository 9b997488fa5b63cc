//! The deterministic schedule of a Scheduled Execution instance's model partitions: which
//! input clock ticks next, in time order and, at equal times, in priority order (FMI 3.0
//! §5.2: the smaller `priority`, the more urgent), then by value reference.

use crate::fmu::description::{ModelDescription, ValueReference, VariableType};

/// How a partition's clock gets its ticks.
#[derive(Debug, Clone, PartialEq)]
pub enum Timing {
    /// constant, fixed, tunable: `start + shift + n * interval` (the interval from the model
    /// description or, when it has none, from the FMU at the start).
    Periodic { interval: Option<f64>, shift: f64 },
    /// countdown, changing: when the FMU reports a new interval (`fmi3IntervalChanged`).
    Reported,
    /// triggered: when the importer ticks it (from an input file or a clock connection).
    Triggered,
}

/// One model partition: an input clock and how it ticks.
#[derive(Debug, Clone)]
pub struct Partition {
    pub vr: ValueReference,
    pub name: String,
    /// `priority` (a missing one ranks last).
    pub priority: u32,
    pub timing: Timing,
}

/// The partitions of one instance and their next activations.
#[derive(Debug, Clone)]
pub struct Schedule {
    pub partitions: Vec<Partition>,
    /// The next activation time of each partition (`None`: none known).
    next: Vec<Option<f64>>,
    /// Activations so far of each partition.
    count: Vec<u64>,
    start: f64,
}

impl Schedule {
    /// The input clocks of `description`, each a partition.
    pub fn new(description: &ModelDescription) -> Result<Schedule, String> {
        let mut partitions = Vec::new();
        for v in &description.variables {
            if v.var_type != VariableType::Clock
                || v.causality != crate::fmu::description::Causality::Input
            {
                continue;
            }
            let attributes = v.clock.clone().unwrap_or_default();
            let kind = attributes
                .interval_variability
                .as_deref()
                .unwrap_or("triggered");
            let timing = match kind {
                "constant" | "fixed" | "tunable" => Timing::Periodic {
                    interval: attributes.interval_decimal.filter(|i| *i > 0.0),
                    shift: attributes.shift_decimal.unwrap_or(0.0),
                },
                "countdown" | "changing" => Timing::Reported,
                "triggered" => Timing::Triggered,
                other => {
                    return Err(format!(
                        "clock \"{}\": intervalVariability \"{other}\" is none of constant, fixed, tunable, changing, countdown, triggered",
                        v.name
                    ))
                }
            };
            partitions.push(Partition {
                vr: v.value_reference,
                name: v.name.clone(),
                priority: attributes.priority.unwrap_or(u32::MAX),
                timing,
            });
        }
        let n = partitions.len();
        Ok(Schedule {
            partitions,
            next: vec![None; n],
            count: vec![0; n],
            start: 0.0,
        })
    }

    /// Back to the start at `start`: periodic partitions whose interval is known tick first
    /// at `start + shift`; the others wait for [`Schedule::set_interval`] or a trigger.
    pub fn restart(&mut self, start: f64) {
        self.start = start;
        self.count.iter_mut().for_each(|c| *c = 0);
        for (k, p) in self.partitions.iter().enumerate() {
            self.next[k] = match p.timing {
                Timing::Periodic {
                    interval: Some(_),
                    shift,
                } => Some(start + shift),
                _ => None,
            };
        }
    }

    /// The index of the partition of clock `vr`.
    pub fn index(&self, vr: ValueReference) -> Option<usize> {
        self.partitions.iter().position(|p| p.vr == vr)
    }

    /// The periodic partitions without a known interval (the FMU is asked for theirs).
    pub fn unknown_intervals(&self) -> Vec<usize> {
        (0..self.partitions.len())
            .filter(|&k| {
                matches!(
                    self.partitions[k].timing,
                    Timing::Periodic { interval: None, .. }
                )
            })
            .collect()
    }

    /// The partitions whose next tick the FMU reports (countdown, changing).
    pub fn reported(&self) -> Vec<usize> {
        (0..self.partitions.len())
            .filter(|&k| self.partitions[k].timing == Timing::Reported)
            .collect()
    }

    /// A periodic partition's interval, as the FMU gave it at the start.
    pub fn set_interval(&mut self, k: usize, interval: f64) {
        if let Timing::Periodic { shift, .. } = self.partitions[k].timing {
            self.partitions[k].timing = Timing::Periodic {
                interval: Some(interval),
                shift,
            };
            self.next[k] = Some(self.start + shift);
        }
    }

    /// Activate partition `k` at `time` (a trigger, or a countdown the FMU reported).
    pub fn at(&mut self, k: usize, time: f64) {
        self.next[k] = Some(match self.next[k] {
            Some(t) if self.partitions[k].timing == Timing::Triggered => t.min(time),
            _ => time,
        });
    }

    /// The most urgent activation due by `until`: the earliest, then the smallest
    /// `priority`, then the smallest value reference. `tolerance` absorbs rounding of times
    /// summed from steps.
    pub fn next_due(&self, until: f64, tolerance: f64) -> Option<(f64, usize)> {
        (0..self.partitions.len())
            .filter_map(|k| self.next[k].map(|t| (t, k)))
            .filter(|&(t, _)| t <= until + tolerance)
            .min_by(|&(ta, a), &(tb, b)| {
                // Times within the tolerance of each other are the same instant.
                let by_time = if (ta - tb).abs() <= tolerance {
                    std::cmp::Ordering::Equal
                } else {
                    ta.total_cmp(&tb)
                };
                by_time
                    .then(
                        self.partitions[a]
                            .priority
                            .cmp(&self.partitions[b].priority),
                    )
                    .then(self.partitions[a].vr.cmp(&self.partitions[b].vr))
            })
    }

    /// Partition `k` ran at `time`: its next periodic tick, or none until reported again.
    pub fn ran(&mut self, k: usize) {
        self.count[k] += 1;
        self.next[k] = match self.partitions[k].timing {
            Timing::Periodic {
                interval: Some(interval),
                shift,
            } => Some(self.start + shift + self.count[k] as f64 * interval),
            _ => None,
        };
    }

    /// Activations so far of partition `k`.
    pub fn count(&self, k: usize) -> u64 {
        self.count[k]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schedule(parts: &[(u32, u32, Timing)]) -> Schedule {
        let partitions: Vec<Partition> = parts
            .iter()
            .map(|(vr, priority, timing)| Partition {
                vr: *vr,
                name: format!("c{vr}"),
                priority: *priority,
                timing: timing.clone(),
            })
            .collect();
        let n = partitions.len();
        Schedule {
            partitions,
            next: vec![None; n],
            count: vec![0; n],
            start: 0.0,
        }
    }

    /// Every activation due by `until`, in the order the schedule gives them.
    fn run(s: &mut Schedule, until: f64) -> Vec<(f64, u32)> {
        let mut order = Vec::new();
        while let Some((t, k)) = s.next_due(until, 1e-9) {
            order.push(((t * 1000.0).round() / 1000.0, s.partitions[k].vr));
            s.ran(k);
        }
        order
    }

    #[test]
    fn equal_times_go_by_priority_then_time_order() {
        let periodic = |i| Timing::Periodic {
            interval: Some(i),
            shift: 0.0,
        };
        // The slow clock is listed first and has the smaller value reference: only its
        // priority puts it after the fast one.
        let mut s = schedule(&[(1, 2, periodic(0.02)), (2, 1, periodic(0.01))]);
        s.restart(0.0);
        let order = run(&mut s, 0.04);
        assert_eq!(
            order,
            vec![
                (0.0, 2),
                (0.0, 1),
                (0.01, 2),
                (0.02, 2),
                (0.02, 1),
                (0.03, 2),
                (0.04, 2),
                (0.04, 1)
            ]
        );
    }

    #[test]
    fn reported_and_triggered_partitions_run_once_when_set() {
        let mut s = schedule(&[(5, 0, Timing::Reported), (6, 3, Timing::Triggered)]);
        s.restart(0.0);
        assert_eq!(s.next_due(10.0, 1e-9), None);
        s.at(0, 0.5);
        s.at(1, 0.25);
        assert_eq!(run(&mut s, 1.0), vec![(0.25, 6), (0.5, 5)]);
        assert_eq!(run(&mut s, 2.0), vec![]);
        assert_eq!((s.count(0), s.count(1)), (1, 1));
    }
}
