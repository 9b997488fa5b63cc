//! The check of a study's runs (`"check"` in the study): each run's result compared with its
//! reference by `cosimo check`'s comparison ([`crate::results::compare::compare`], the same
//! tolerance tube and defaults), boiled down to a verdict and the worst signal for the
//! summary table.
//!
//! The run's result is not read back from a file: the run records the reference's variables
//! (besides what the study keeps) into a CSV in memory, read by the same reader as a result
//! file, so a run is compared exactly as `cosimo check` compares the file `cosimo run` writes.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::results::compare::{compare, CompareOptions, Comparison, SignalKind, SignalTable};
use crate::results::report::short;
use crate::settings::study::{ReferenceFiles, StudyCheck};
use crate::{Error, Result};

/// The verdict of a run's check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Every reference signal is in the result and inside its tolerance.
    Pass,
    /// A signal is out of tolerance, or missing from the result.
    Fail,
    /// The run could not be compared: its reference is missing or unreadable, or it failed.
    Error,
}

impl Verdict {
    /// The verdict as the table spells it.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Error => "error",
        }
    }

    /// The verdict the table spells `name`.
    pub fn parse(name: &str) -> Option<Verdict> {
        [Verdict::Pass, Verdict::Fail, Verdict::Error]
            .into_iter()
            .find(|v| v.name() == name)
    }
}

/// The check columns of one row of the summary table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunCheck {
    pub verdict: Verdict,
    /// The failing signal furthest out of tolerance (else a missing one); when every signal
    /// passed, the one closest to its limit.
    pub signal: Option<String>,
    /// That signal's largest |result - reference|.
    pub deviation: Option<f64>,
    /// When that deviation occurred.
    pub time: Option<f64>,
    /// One line for people: what failed and by how much, or why nothing was compared.
    pub message: String,
}

impl RunCheck {
    /// A check that could not be made.
    pub fn error(message: String) -> RunCheck {
        RunCheck {
            verdict: Verdict::Error,
            signal: None,
            deviation: None,
            time: None,
            message,
        }
    }

    /// The verdict of a comparison.
    pub fn of(comparison: &Comparison) -> RunCheck {
        let failing: Vec<&str> = comparison
            .signals
            .iter()
            .filter(|s| !s.passed)
            .map(|s| s.name.as_str())
            .collect();
        let worst = comparison.worst();
        if comparison.passed() {
            let n = comparison.signals.len();
            return RunCheck {
                verdict: Verdict::Pass,
                signal: worst.map(|s| s.name.clone()),
                deviation: worst.map(|s| s.max_deviation),
                time: worst.and_then(|s| s.max_deviation_time),
                message: format!(
                    "{n} signal{} within tolerance",
                    if n == 1 { "" } else { "s" }
                ),
            };
        }
        let mut parts = Vec::new();
        let mut check = RunCheck {
            verdict: Verdict::Fail,
            signal: None,
            deviation: None,
            time: None,
            message: String::new(),
        };
        if let Some(s) = worst.filter(|s| !s.passed) {
            let t = s.tolerance;
            parts.push(format!(
                "{}: {} of {} points outside the tolerance (rel {}, abs {}, range {}, time {} s), first at t = {}, max deviation {} at t = {}{}",
                s.name,
                s.violations,
                s.points,
                short(t.rel),
                short(t.abs),
                short(t.range),
                short(t.time),
                s.first_violation.map_or("-".into(), short),
                short(s.max_deviation),
                s.max_deviation_time.map_or("-".into(), short),
                s.message.as_deref().map_or(String::new(), |m| format!("; {m}")),
            ));
            check.signal = Some(s.name.clone());
            check.deviation = Some(s.max_deviation);
            check.time = s.max_deviation_time;
            let others: Vec<&str> = failing.into_iter().filter(|n| *n != s.name).collect();
            if !others.is_empty() {
                parts.push(format!(
                    "{} more signal{} out of tolerance: {}",
                    others.len(),
                    if others.len() == 1 { "" } else { "s" },
                    listed(&others)
                ));
            }
        }
        if !comparison.missing.is_empty() {
            let missing: Vec<&str> = comparison.missing.iter().map(String::as_str).collect();
            parts.push(format!(
                "the result has no column {} of the reference (not a variable of the model?)",
                listed(&missing)
            ));
            if check.signal.is_none() {
                check.signal = Some(comparison.missing[0].clone());
            }
        }
        check.message = parts.join("; ");
        check
    }
}

/// Up to five names, then how many more.
fn listed(names: &[&str]) -> String {
    let shown = names.iter().take(5).copied().collect::<Vec<_>>().join(", ");
    match names.len() {
        n if n > 5 => format!("{shown} and {} more", n - 5),
        _ => shown,
    }
}

/// Compares runs with their references.
pub struct Checker {
    references: ReferenceFiles,
    /// The one reference of every run, read once.
    shared: Option<Arc<SignalTable>>,
    options: CompareOptions,
}

impl Checker {
    /// The checker of a study's `check`; one reference for every run is read now (a study
    /// whose reference cannot be read is refused before the first run).
    pub fn new(check: &StudyCheck, study_file: &Path) -> Result<Checker> {
        let shared = match &check.reference {
            ReferenceFiles::One(path) => Some(Arc::new(read_reference(path).map_err(|m| {
                Error::Usage(format!(
                    "{}: check.reference: {m}; the path is relative to the study file",
                    study_file.display()
                ))
            })?)),
            ReferenceFiles::PerRun(_) => None,
        };
        Ok(Checker {
            references: check.reference.clone(),
            shared,
            options: CompareOptions {
                tolerance: check.tolerance.clone(),
                signals: check.signals.clone(),
                keep_traces: false,
            },
        })
    }

    /// The reference file of run `index`.
    pub fn reference_file(&self, index: usize) -> PathBuf {
        self.references.file(index)
    }

    /// Whether every run has its own reference.
    pub fn per_run(&self) -> bool {
        matches!(self.references, ReferenceFiles::PerRun(_))
    }

    /// The reference of run `index`, or why there is none (the message names the file).
    pub fn reference(&self, index: usize) -> std::result::Result<Arc<SignalTable>, String> {
        match &self.shared {
            Some(table) => Ok(table.clone()),
            None => read_reference(&self.reference_file(index)).map(Arc::new),
        }
    }

    /// Compare a run's result (CSV text, as `cosimo run` writes it) with its reference;
    /// `kind_of(column)` says how a result column is compared (from the variable's type).
    pub fn check(
        &self,
        reference: &SignalTable,
        result: &[u8],
        kind_of: &dyn Fn(&str) -> Option<SignalKind>,
    ) -> RunCheck {
        let text = String::from_utf8_lossy(result);
        match SignalTable::parse(&text, Path::new("the run's result")) {
            Ok(result) => RunCheck::of(&compare(reference, &result, &self.options, kind_of)),
            Err(error) => RunCheck::error(format!("not compared: {error}")),
        }
    }
}

/// Read a reference CSV; the message names the file.
fn read_reference(path: &Path) -> std::result::Result<SignalTable, String> {
    if !path.exists() {
        return Err(format!(
            "the reference {} does not exist; make it with cosimo run (or point check.reference at it)",
            path.display()
        ));
    }
    SignalTable::read(path).map_err(|e| {
        let message = e.to_string();
        let file = path.display().to_string();
        if message.contains(&file) {
            format!("the reference {message}")
        } else {
            format!("the reference {file}: {message}")
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::compare::ToleranceSettings;

    fn table(text: &str) -> SignalTable {
        SignalTable::parse(text, Path::new("t.csv")).unwrap()
    }

    fn checker() -> Checker {
        Checker {
            references: ReferenceFiles::One("r.csv".into()),
            shared: None,
            options: CompareOptions {
                tolerance: ToleranceSettings {
                    abs: Some(0.01),
                    rel: Some(0.0),
                    range: Some(0.0),
                    time: Some(0.0),
                },
                ..CompareOptions::default()
            },
        }
    }

    #[test]
    fn a_run_inside_the_tube_passes_and_names_its_closest_signal() {
        let reference = table("time,a.x,a.y\n0,0,1\n1,1,1\n2,2,1\n");
        let result = b"\"time\",\"a.x\",\"a.y\"\n0,0,1\n1,1.005,1\n2,2,1\n";
        let check = checker().check(&reference, result, &|_| None);
        assert_eq!(check.verdict, Verdict::Pass);
        assert_eq!(check.signal.as_deref(), Some("a.x"));
        assert_eq!(check.time, Some(1.0));
        assert_eq!(check.message, "2 signals within tolerance");
    }

    #[test]
    fn a_run_out_of_tolerance_fails_with_the_signal_time_and_deviation() {
        let reference = table("time,a.x,a.y,b.z\n0,0,1,0\n1,1,1,0\n2,2,1,0\n");
        let result = b"\"time\",\"a.x\",\"a.y\"\n0,0,1\n1,1.5,1.02\n2,2,1\n";
        let check = checker().check(&reference, result, &|_| None);
        assert_eq!(check.verdict, Verdict::Fail);
        assert_eq!(check.signal.as_deref(), Some("a.x"));
        assert_eq!(check.deviation, Some(0.5));
        assert_eq!(check.time, Some(1.0));
        assert!(
            check.message.starts_with("a.x: 1 of 3 points outside the tolerance (rel 0, abs 0.01, range 0, time 0 s), first at t = 1, max deviation 0.5 at t = 1"),
            "{}",
            check.message
        );
        assert!(check
            .message
            .contains("1 more signal out of tolerance: a.y"));
        assert!(check.message.contains("the result has no column b.z"));
    }

    #[test]
    fn a_missing_reference_names_the_file() {
        let message = read_reference(Path::new("refs/run-3.csv")).unwrap_err();
        assert!(
            message.contains("refs/run-3.csv does not exist"),
            "{message}"
        );
    }
}
