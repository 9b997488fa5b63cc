//! `cosimo check --baseline REPORT.json`: each case set against its verdict and run time in an
//! earlier JSON report of `cosimo check`: newly failing, fixed, still failing, passing, and
//! slower; cases the baseline does not have are new, and cases it has that did not run now are
//! missing.

use std::path::{Path, PathBuf};

use super::report::{CaseReport, Status, REPORT_FORMAT};
use crate::{Error, Result};

/// When a case counts as slower than in the baseline: its run time grew by more than `factor`
/// AND by more than `seconds` (a short case's noise is not a slowdown, nor is a long case's
/// small share).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Slower {
    /// Run time now over run time then.
    pub factor: f64,
    /// Run time now minus run time then [s].
    pub seconds: f64,
}

impl Default for Slower {
    fn default() -> Self {
        Slower {
            factor: DEFAULT_SLOWER_FACTOR,
            seconds: DEFAULT_SLOWER_SECONDS,
        }
    }
}

/// `--slower-factor`'s default.
pub const DEFAULT_SLOWER_FACTOR: f64 = 1.5;
/// `--slower-seconds`' default.
pub const DEFAULT_SLOWER_SECONDS: f64 = 1.0;

impl Slower {
    /// Refuse a factor below 1 (a case as fast as before would be slower) and what is not a
    /// number of seconds.
    pub fn validate(&self) -> Result<()> {
        if !(self.factor.is_finite() && self.factor >= 1.0) {
            return Err(Error::Usage(format!(
                "--slower-factor {}: a run time grown by this factor is slower; give a finite \
                 number of at least 1 (default {DEFAULT_SLOWER_FACTOR})",
                self.factor
            )));
        }
        if !(self.seconds.is_finite() && self.seconds >= 0.0) {
            return Err(Error::Usage(format!(
                "--slower-seconds {}: a run time grown by more than these seconds is slower; give \
                 a finite number of at least 0 (default {DEFAULT_SLOWER_SECONDS})",
                self.seconds
            )));
        }
        Ok(())
    }

    /// Whether a run time of `now` seconds is slower than `then`.
    pub fn is_slower(&self, now: f64, then: f64) -> bool {
        now > then * self.factor && now - then > self.seconds
    }
}

/// A case against the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Verdict {
    /// Passed in the baseline, fails (or does not run) now.
    NewlyFailing,
    /// Failed (or did not run) in the baseline, passes now.
    Fixed,
    /// Failing then and now.
    StillFailing,
    /// Passing then and now.
    Passing,
    /// Not in the baseline.
    New,
}

impl Verdict {
    /// The verdict for people.
    pub fn text(self) -> &'static str {
        match self {
            Verdict::NewlyFailing => "newly failing",
            Verdict::Fixed => "fixed",
            Verdict::StillFailing => "still failing",
            Verdict::Passing => "passing",
            Verdict::New => "new",
        }
    }
}

/// One case against the baseline.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CaseBaseline {
    /// How the case compares with the baseline.
    pub verdict: Verdict,
    /// Its status in the baseline (None: a new case).
    pub status: Option<Status>,
    /// Its run time in the baseline [s] (None: a new case).
    pub duration: Option<f64>,
    /// Whether its run time grew beyond `--slower-factor` and `--slower-seconds` (only for
    /// cases that ran to the comparison then and now).
    pub slower: bool,
}

/// The report against the baseline: where it came from, the thresholds, and the counts.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BaselineSummary {
    /// The baseline report.
    pub file: String,
    /// The cosimo version that wrote it.
    pub cosimo: String,
    /// A case is slower when its run time grew by more than this factor ...
    pub slower_factor: f64,
    /// ... and by more than these seconds.
    pub slower_seconds: f64,
    /// Cases that passed in the baseline and fail (or do not run) now.
    pub newly_failing: usize,
    /// Cases that failed (or did not run) in the baseline and pass now.
    pub fixed: usize,
    /// Cases failing then and now.
    pub still_failing: usize,
    /// Cases passing then and now.
    pub passing: usize,
    /// Cases (of any verdict) slower than in the baseline.
    pub slower: usize,
    /// Cases the baseline does not have.
    pub new: usize,
    /// Cases of the baseline that were not checked now.
    pub missing: Vec<String>,
}

/// A case as the baseline report has it.
#[derive(Debug, Clone, PartialEq)]
struct BaselineCase {
    name: String,
    status: Status,
    duration: f64,
}

/// An earlier report of `cosimo check` (its `--json` / `--json-file`).
#[derive(Debug, Clone, PartialEq)]
pub struct Baseline {
    file: PathBuf,
    cosimo: String,
    cases: Vec<BaselineCase>,
}

impl Baseline {
    /// Read a report `cosimo check --json-file` wrote. Anything else, and a report of a newer
    /// format than this cosimo writes, is refused with a message naming the file.
    pub fn read(path: &Path) -> Result<Baseline> {
        let text = crate::fs_checks::read_to_string(path, "a baseline report")?;
        let shown = path.display();
        let not_a_report = |why: String| {
            Error::Usage(format!(
                "{shown}: not a report of `cosimo check` ({why}); give --baseline the file \
                 --json-file wrote in an earlier check"
            ))
        };
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| not_a_report(format!("not JSON: {e}")))?;
        let cosimo = value
            .get("cosimo")
            .and_then(|v| v.as_str())
            .ok_or_else(|| not_a_report("no \"cosimo\" version".into()))?
            .to_string();
        // Reports before the field was written are of the first format.
        let format = match value.get("format") {
            None => 1,
            Some(v) => v
                .as_u64()
                .ok_or_else(|| not_a_report(format!("\"format\" is {v}, not a number")))?,
        };
        if format > u64::from(REPORT_FORMAT) {
            return Err(Error::Usage(format!(
                "{shown}: a check report of format {format} (written by cosimo {cosimo}); this \
                 cosimo ({}) reads formats up to {REPORT_FORMAT}: update cosimo, or make the \
                 baseline again with this one (--json-file)",
                env!("CARGO_PKG_VERSION")
            )));
        }
        let listed = value
            .get("cases")
            .and_then(|v| v.as_array())
            .ok_or_else(|| not_a_report("no \"cases\" list".into()))?;
        let mut cases = Vec::with_capacity(listed.len());
        for (i, case) in listed.iter().enumerate() {
            let field = |key: &str| case.get(key).filter(|v| !v.is_null());
            let bad = |what: &str| not_a_report(format!("case {}: {what}", i + 1));
            let name = field("name")
                .and_then(|v| v.as_str())
                .ok_or_else(|| bad("no \"name\""))?
                .to_string();
            let status = match field("status").and_then(|v| v.as_str()) {
                Some("passed") => Status::Passed,
                Some("failed") => Status::Failed,
                Some("error") => Status::Error,
                _ => return Err(bad("\"status\" is not passed, failed or error")),
            };
            let duration = field("duration")
                .and_then(|v| v.as_f64())
                .filter(|d| d.is_finite() && *d >= 0.0)
                .ok_or_else(|| bad("\"duration\" is not a number of seconds"))?;
            cases.push(BaselineCase {
                name,
                status,
                duration,
            });
        }
        Ok(Baseline {
            file: path.to_path_buf(),
            cosimo,
            cases,
        })
    }

    /// Set every case of `cases` against the baseline (by name; the k-th case of a name against
    /// the k-th of that name in the baseline) and count the verdicts.
    pub fn compare(&self, cases: &mut [CaseReport], slower: &Slower) -> BaselineSummary {
        let mut summary = BaselineSummary {
            file: self.file.display().to_string(),
            cosimo: self.cosimo.clone(),
            slower_factor: slower.factor,
            slower_seconds: slower.seconds,
            newly_failing: 0,
            fixed: 0,
            still_failing: 0,
            passing: 0,
            slower: 0,
            new: 0,
            missing: Vec::new(),
        };
        let mut matched = vec![false; self.cases.len()];
        for case in cases.iter_mut() {
            let then = self
                .cases
                .iter()
                .enumerate()
                .position(|(i, b)| !matched[i] && b.name == case.name);
            let Some(i) = then else {
                summary.new += 1;
                case.baseline = Some(CaseBaseline {
                    verdict: Verdict::New,
                    status: None,
                    duration: None,
                    slower: false,
                });
                continue;
            };
            matched[i] = true;
            let then = &self.cases[i];
            let passed = |s: Status| s == Status::Passed;
            let verdict = match (passed(then.status), passed(case.status)) {
                (true, false) => Verdict::NewlyFailing,
                (false, true) => Verdict::Fixed,
                (false, false) => Verdict::StillFailing,
                (true, true) => Verdict::Passing,
            };
            // A case that stopped early (an error) took no comparable time.
            let ran = |s: Status| s != Status::Error;
            let is_slower = ran(then.status)
                && ran(case.status)
                && slower.is_slower(case.duration, then.duration);
            match verdict {
                Verdict::NewlyFailing => summary.newly_failing += 1,
                Verdict::Fixed => summary.fixed += 1,
                Verdict::StillFailing => summary.still_failing += 1,
                Verdict::Passing => summary.passing += 1,
                Verdict::New => summary.new += 1,
            }
            summary.slower += usize::from(is_slower);
            case.baseline = Some(CaseBaseline {
                verdict,
                status: Some(then.status),
                duration: Some(then.duration),
                slower: is_slower,
            });
        }
        summary.missing = self
            .cases
            .iter()
            .zip(&matched)
            .filter(|(_, &m)| !m)
            .map(|(c, _)| c.name.clone())
            .collect();
        summary
    }
}

impl BaselineSummary {
    /// One line for people: "against the baseline FILE (cosimo V): 1 newly failing, ...".
    pub fn headline(&self) -> String {
        let mut parts = vec![
            format!("{} newly failing", self.newly_failing),
            format!("{} fixed", self.fixed),
            format!("{} still failing", self.still_failing),
            format!("{} passing", self.passing),
            format!("{} slower", self.slower),
        ];
        if self.new > 0 {
            parts.push(format!("{} new", self.new));
        }
        if !self.missing.is_empty() {
            parts.push(format!("{} missing", self.missing.len()));
        }
        format!(
            "against the baseline {} (cosimo {}): {}",
            self.file,
            self.cosimo,
            parts.join(", ")
        )
    }
}

impl CaseBaseline {
    /// The case's mark for people: "newly failing", "passing, slower: 2.5 s, was 0.1 s".
    pub fn text(&self, now: f64) -> String {
        let mut text = self.verdict.text().to_string();
        if let (true, Some(then)) = (self.slower, self.duration) {
            let short = super::report::short;
            text.push_str(&format!(
                ", slower: {} s, was {} s",
                short(now),
                short(then)
            ));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slower_takes_both_the_factor_and_the_seconds() {
        let slower = Slower {
            factor: 2.0,
            seconds: 1.0,
        };
        assert!(slower.is_slower(3.1, 1.0));
        assert!(!slower.is_slower(0.9, 0.3), "3 times but 0.6 s");
        assert!(!slower.is_slower(11.5, 10.0), "1.5 s but 1.15 times");
        assert!(Slower {
            factor: 0.5,
            seconds: 0.0
        }
        .validate()
        .is_err());
        assert!(Slower::default().validate().is_ok());
    }
}
