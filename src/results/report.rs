//! Reports of `cosimo check`: a summary for people, JUnit XML for CI systems, and JSON
//! (schema: `schemas/check-report.schema.json`).

use std::io::Write;

use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event};

use super::baseline::{BaselineSummary, CaseBaseline};
use super::compare::{ComparedPoints, Comparison, SignalComparison, SignalKind, Tolerance};

/// The format of the JSON report: raised when a reader of an earlier format would misread it
/// (`--baseline` refuses reports of a later format than it knows).
pub const REPORT_FORMAT: u32 = 1;

/// How a case ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Every reference signal inside its tolerance.
    Passed,
    /// A signal out of tolerance or missing.
    Failed,
    /// The case could not be run or compared (bad input, simulation failure).
    Error,
}

/// The outcome of one check case.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CaseReport {
    /// Case name.
    pub name: String,
    /// The model that was run.
    pub model: String,
    /// The reference it was compared with (None if none was found).
    pub reference: Option<String>,
    /// Passed, failed or error.
    pub status: Status,
    /// Why the case could not be run (status `error`).
    pub error: Option<String>,
    /// Exit code class of the error: 1 simulation failed, 2 bad input.
    #[serde(skip)]
    pub error_code: u8,
    /// Wall-clock seconds for simulation and comparison.
    pub duration: f64,
    /// How far the case got: load, simulate, compare, in that order.
    pub phases: Vec<PhaseReport>,
    /// The simulation's result file, when kept.
    pub result_file: Option<String>,
    /// The failing signal furthest out of tolerance, else the one closest to its limit.
    pub worst_signal: Option<String>,
    /// The worst signal's largest deviation from the reference.
    pub max_deviation: Option<f64>,
    /// The earliest time any signal left its tolerance.
    pub first_violation: Option<f64>,
    /// Reference signals the result lacks.
    pub missing: Vec<String>,
    /// Result columns without a reference (not compared).
    pub extra: Vec<String>,
    /// The time points compared (how the comparison was made).
    pub compared: Option<ComparedPoints>,
    /// Every compared signal.
    pub signals: Vec<SignalReport>,
    /// The case against `--baseline` (None without one).
    pub baseline: Option<CaseBaseline>,
    /// The reference `--update-references` wrote from this run (None: not written).
    pub updated_reference: Option<String>,
}

/// One compared signal in a report.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SignalReport {
    /// The comparison.
    #[serde(flatten)]
    pub comparison: SignalComparison,
    /// The PNG plot of the signal, if one was written.
    pub plot: Option<String>,
    /// The SVG plot of the HTML report, if one was written.
    pub svg: Option<String>,
}

/// The stages of a case, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Reading the model, the reference and the settings; loading the FMUs.
    Load,
    /// The simulation run.
    Simulate,
    /// Reading the result back and comparing it with the reference.
    Compare,
}

impl Phase {
    /// Every phase, in order.
    pub const ALL: [Phase; 3] = [Phase::Load, Phase::Simulate, Phase::Compare];

    /// The phase's name for people.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Load => "load",
            Phase::Simulate => "simulate",
            Phase::Compare => "compare",
        }
    }
}

/// How one phase of a case ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum PhaseStatus {
    /// It finished (compare: every signal inside its tolerance).
    Passed,
    /// It failed (compare: a signal out of tolerance or missing).
    Failed,
    /// An earlier phase failed.
    NotRun,
}

/// One phase of a case.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct PhaseReport {
    /// Which.
    pub phase: Phase,
    /// How it ended.
    pub status: PhaseStatus,
    /// Wall-clock seconds spent in it.
    pub seconds: f64,
}

impl CaseReport {
    /// A report for a case that ran and was compared.
    pub fn compared(
        name: String,
        model: String,
        reference: String,
        comparison: Comparison,
        duration: f64,
        phases: Vec<PhaseReport>,
    ) -> CaseReport {
        let worst = comparison.worst();
        let status = if comparison.passed() {
            Status::Passed
        } else {
            Status::Failed
        };
        CaseReport {
            name,
            model,
            reference: Some(reference),
            status,
            error: None,
            error_code: 0,
            duration,
            phases,
            result_file: None,
            worst_signal: worst.map(|s| s.name.clone()),
            max_deviation: worst.map(|s| s.max_deviation),
            first_violation: comparison.first_violation(),
            missing: comparison.missing,
            extra: comparison.extra,
            compared: comparison.points,
            signals: comparison
                .signals
                .into_iter()
                .map(|comparison| SignalReport {
                    comparison,
                    plot: None,
                    svg: None,
                })
                .collect(),
            baseline: None,
            updated_reference: None,
        }
    }

    /// A report for a case that could not be run or compared.
    pub fn failed_to_run(
        name: String,
        model: String,
        reference: Option<String>,
        error: String,
        error_code: u8,
        duration: f64,
        phases: Vec<PhaseReport>,
    ) -> CaseReport {
        CaseReport {
            name,
            model,
            reference,
            status: Status::Error,
            error: Some(error),
            error_code,
            duration,
            phases,
            result_file: None,
            worst_signal: None,
            max_deviation: None,
            first_violation: None,
            missing: Vec::new(),
            extra: Vec::new(),
            compared: None,
            signals: Vec::new(),
            baseline: None,
            updated_reference: None,
        }
    }

    /// The share of checked points inside the tube over all compared signals (None when
    /// nothing was checked).
    pub fn inside_share(&self) -> Option<f64> {
        let (points, violations) = self.signals.iter().fold((0, 0), |(p, v), s| {
            (p + s.comparison.points, v + s.comparison.violations)
        });
        (points > 0).then(|| (points - violations.min(points)) as f64 / points as f64)
    }

    /// The signals, failing ones first (furthest out of tolerance first), then passing ones
    /// (closest to their limit first).
    pub fn signals_failing_first(&self) -> Vec<&SignalReport> {
        let mut signals: Vec<&SignalReport> = self.signals.iter().collect();
        signals.sort_by(|a, b| {
            let (a, b) = (&a.comparison, &b.comparison);
            a.passed.cmp(&b.passed).then_with(|| match a.passed {
                false => b.severity().total_cmp(&a.severity()),
                true => used_share(b).total_cmp(&used_share(a)),
            })
        });
        signals
    }
}

/// How much of its tolerance a signal used (for ranking passing signals).
fn used_share(s: &SignalComparison) -> f64 {
    match s.tolerance_share {
        Some(share) => share.share,
        None => s.max_deviation / s.scale.max(f64::MIN_POSITIVE),
    }
}

/// Counts over all cases.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Summary {
    /// Cases run.
    pub cases: usize,
    /// Cases that passed.
    pub passed: usize,
    /// Cases with a signal out of tolerance or missing.
    pub failed: usize,
    /// Cases that could not be run.
    pub errors: usize,
}

/// The report of one `cosimo check` call.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CheckReport {
    /// The cosimo version that produced it.
    pub cosimo: String,
    /// The report's format ([`REPORT_FORMAT`]).
    pub format: u32,
    /// Whether every case passed.
    pub passed: bool,
    /// Counts.
    pub summary: Summary,
    /// The cases against `--baseline` (None without one).
    pub baseline: Option<BaselineSummary>,
    /// Every case, in the order run.
    pub cases: Vec<CaseReport>,
}

impl CheckReport {
    /// A report over `cases`.
    pub fn new(cases: Vec<CaseReport>) -> CheckReport {
        let count = |status| cases.iter().filter(|c| c.status == status).count();
        let summary = Summary {
            cases: cases.len(),
            passed: count(Status::Passed),
            failed: count(Status::Failed),
            errors: count(Status::Error),
        };
        CheckReport {
            cosimo: env!("CARGO_PKG_VERSION").to_string(),
            format: REPORT_FORMAT,
            passed: summary.passed == summary.cases,
            summary,
            baseline: None,
            cases,
        }
    }

    /// The exit code: 0 all passed, 2 a case had bad input, 1 a simulation failed, 3 a
    /// comparison failed (and its reference was not rewritten by `--update-references`).
    pub fn exit_code(&self) -> u8 {
        let errors = self.cases.iter().filter(|c| c.status == Status::Error);
        if errors.clone().any(|c| c.error_code == 2) {
            2
        } else if errors.clone().any(|_| true) {
            1
        } else if self
            .cases
            .iter()
            .any(|c| c.status == Status::Failed && c.updated_reference.is_none())
        {
            3
        } else {
            0
        }
    }

    /// JSON (schema: `schemas/check-report.schema.json`).
    pub fn json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// A summary for people: one line per case, details of failing signals.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for case in &self.cases {
            let label = match case.status {
                Status::Passed => "PASS ",
                Status::Failed => "FAIL ",
                Status::Error => "ERROR",
            };
            out.push_str(&format!("{label} {}", case.name));
            if let Some(baseline) = &case.baseline {
                out.push_str(&format!(" [{}]", baseline.text(case.duration)));
            }
            match case.status {
                Status::Error => {
                    out.push_str(&format!(
                        ": {}\n",
                        case.error.as_deref().unwrap_or("unknown error")
                    ));
                    continue;
                }
                _ => {
                    let compared = case.signals.len();
                    out.push_str(&format!(
                        " ({compared} signal{}, {:.2} s)",
                        if compared == 1 { "" } else { "s" },
                        case.duration
                    ));
                    if let Some(worst) = case
                        .worst_signal
                        .as_ref()
                        .and_then(|w| case.signals.iter().find(|s| &s.comparison.name == w))
                    {
                        out.push_str(&format!(
                            ": worst {}, {}",
                            worst.comparison.name,
                            deviation_text(&worst.comparison)
                        ));
                    }
                    if let Some(t) = case.first_violation {
                        out.push_str(&format!(", first violation at t = {}", short(t)));
                    }
                    out.push('\n');
                }
            }
            if let Some(points) = &case.compared {
                out.push_str(&format!("      {points}\n"));
            }
            if let Some(written) = &case.updated_reference {
                out.push_str(&format!("      reference written: {written}\n"));
            }
            for name in &case.missing {
                out.push_str(&format!(
                    "      missing: the result has no column \"{name}\"\n"
                ));
            }
            let passing: Vec<&SignalComparison> = case
                .signals
                .iter()
                .map(|s| &s.comparison)
                .filter(|s| s.passed)
                .collect();
            let listed = if case.signals.len() > 1 {
                SHOWN_PASSING
            } else {
                0
            };
            for s in passing.iter().take(listed) {
                out.push_str(&format!("      {}: {}\n", s.name, deviation_text(s)));
            }
            if listed > 0 && passing.len() > listed {
                out.push_str(&format!(
                    "      and {} more signals inside their tolerance (the JSON report has them all)\n",
                    passing.len() - listed
                ));
            }
            for signal in case.signals.iter().filter(|s| !s.comparison.passed) {
                let s = &signal.comparison;
                out.push_str(&format!(
                    "      {}: {} of {} points outside the tolerance, first at t = {}; {}{}{}\n",
                    s.name,
                    s.violations,
                    s.points,
                    s.first_violation.map_or("-".into(), short),
                    deviation_text(s),
                    s.message
                        .as_deref()
                        .map_or(String::new(), |m| format!("; {m}")),
                    signal
                        .plot
                        .as_deref()
                        .map_or(String::new(), |p| format!("; plot: {p}")),
                ));
                out.push_str(&format!(
                    "        tolerances: {}\n",
                    tolerance_text(&s.tolerance, s.kind)
                ));
            }
            if !case.extra.is_empty() && case.status != Status::Passed {
                let shown: Vec<&str> = case.extra.iter().take(8).map(String::as_str).collect();
                let more = case.extra.len() - shown.len();
                out.push_str(&format!(
                    "      not in the reference (not compared): {}{}\n",
                    shown.join(", "),
                    if more > 0 {
                        format!(" and {more} more")
                    } else {
                        String::new()
                    }
                ));
            }
        }
        if let Some(baseline) = &self.baseline {
            out.push_str(&baseline.headline());
            out.push('\n');
            for name in &baseline.missing {
                out.push_str(&format!(
                    "      missing: the baseline has the case \"{name}\", not checked now\n"
                ));
            }
        }
        let s = &self.summary;
        out.push_str(&format!(
            "{} case{}: {} passed, {} failed, {} error{}\n",
            s.cases,
            if s.cases == 1 { "" } else { "s" },
            s.passed,
            s.failed,
            s.errors,
            if s.errors == 1 { "" } else { "s" }
        ));
        out
    }

    /// JUnit XML: one `testsuite` per case with one `testcase` for running the case and one
    /// per reference signal (missing signals fail).
    pub fn junit(&self) -> String {
        let mut writer = quick_xml::Writer::new_with_indent(Vec::new(), b' ', 2);
        // Writing to a Vec cannot fail; errors are ignored.
        let _ = write_junit(self, &mut writer);
        String::from_utf8(writer.into_inner()).unwrap_or_default()
    }
}

/// Passing signals listed by name in the summary of one case.
const SHOWN_PASSING: usize = 20;

/// A share of a tolerance for people: "38 %", "0.52 %", "2.1e5 %".
fn percent(share: f64) -> String {
    let p = share * 100.0;
    if !p.is_finite() {
        "far beyond 100 %".into()
    } else if p == 0.0 || (10.0..1e6).contains(&p) {
        format!("{p:.0} %")
    } else if (1.0..10.0).contains(&p) {
        format!("{p:.1} %")
    } else if p < 0.01 {
        "< 0.01 %".into()
    } else if p < 1.0 {
        format!("{p:.2} %")
    } else {
        format!("{p:.1e} %")
    }
}

/// One signal's deviation, as a share of its tolerance where it came closest to its limit:
/// "max deviation 0.0378 (38 % of the tolerance 0.1)".
pub(crate) fn deviation_text(s: &SignalComparison) -> String {
    let Some(share) = s.tolerance_share else {
        return match (s.kind, s.violations) {
            (SignalKind::Discrete, 0) => format!("all {} values equal", s.points),
            (SignalKind::Discrete, n) => {
                format!(
                    "{n} values differ, max deviation {}",
                    short(s.max_deviation)
                )
            }
            _ => format!("max deviation {}", short(s.max_deviation)),
        };
    };
    let same_point = share.deviation == s.max_deviation || s.max_deviation.is_nan();
    if same_point {
        format!(
            "max deviation {} ({} of the tolerance {})",
            short(share.deviation),
            percent(share.share),
            short(share.tolerance)
        )
    } else {
        format!(
            "max deviation {} at t = {}; at most {} of the tolerance ({} at t = {})",
            short(s.max_deviation),
            s.max_deviation_time.map_or("-".into(), short),
            percent(share.share),
            short(share.tolerance),
            short(share.time)
        )
    }
}

/// The tolerances of a signal for people.
pub(crate) fn tolerance_text(t: &Tolerance, kind: SignalKind) -> String {
    match kind {
        SignalKind::Continuous => format!(
            "relative {} (of |reference|), absolute {}, range {} (of the reference's max - min), time {} s",
            short(t.rel),
            short(t.abs),
            short(t.range),
            short(t.time)
        ),
        SignalKind::Discrete => format!("exact values, time {} s", short(t.time)),
    }
}

/// A number for people: six decimals in the ordinary range, else three significant digits.
pub(crate) fn short(x: f64) -> String {
    if x == 0.0 || (1e-3..1e6).contains(&x.abs()) {
        format!("{}", (x * 1e6).round() / 1e6)
    } else {
        format!("{x:.3e}")
    }
}

type XmlWriter = quick_xml::Writer<Vec<u8>>;

fn write_junit(report: &CheckReport, w: &mut XmlWriter) -> std::io::Result<()> {
    w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
    let tests: usize = report.cases.iter().map(tests_of).sum();
    let failures: usize = report.cases.iter().map(failures_of).sum();
    let errors = report.summary.errors;
    let time: f64 = report.cases.iter().map(|c| c.duration).sum();
    let mut suites = BytesStart::new("testsuites");
    suites.push_attribute(("name", "cosimo check"));
    suites.push_attribute(("tests", tests.to_string().as_str()));
    suites.push_attribute(("failures", failures.to_string().as_str()));
    suites.push_attribute(("errors", errors.to_string().as_str()));
    suites.push_attribute(("time", format!("{time:.3}").as_str()));
    w.write_event(Event::Start(suites))?;
    // CI systems keep one test per (class, name) and drop the rest: two cases of one name, or
    // a signal called "simulation", get a suffix.
    let mut suite_names = UniqueNames::default();
    for case in &report.cases {
        let class = suite_names.claim(&case.name);
        let mut test_names = UniqueNames::default();
        let mut suite = BytesStart::new("testsuite");
        suite.push_attribute(("name", class.as_str()));
        suite.push_attribute(("tests", tests_of(case).to_string().as_str()));
        suite.push_attribute(("failures", failures_of(case).to_string().as_str()));
        suite.push_attribute((
            "errors",
            usize::from(case.status == Status::Error)
                .to_string()
                .as_str(),
        ));
        suite.push_attribute(("time", format!("{:.3}", case.duration).as_str()));
        w.write_event(Event::Start(suite))?;
        w.write_event(Event::Start(BytesStart::new("properties")))?;
        let mut properties = vec![("model", case.model.as_str())];
        if let Some(reference) = &case.reference {
            properties.push(("reference", reference));
        }
        if let Some(result) = &case.result_file {
            properties.push(("result", result));
        }
        let baseline = case.baseline.as_ref().map(|b| b.text(case.duration));
        if let Some(baseline) = &baseline {
            properties.push(("baseline", baseline));
        }
        for (name, value) in properties {
            let mut p = BytesStart::new("property");
            p.push_attribute(("name", name));
            p.push_attribute(("value", value));
            w.write_event(Event::Empty(p))?;
        }
        w.write_event(Event::End(BytesEnd::new("properties")))?;

        let run_name = test_names.claim("simulation");
        let mut run = testcase(&class, &run_name, case.duration);
        if let Some(error) = &case.error {
            w.write_event(Event::Start(run))?;
            let mut e = BytesStart::new("error");
            e.push_attribute(("message", first_line(error)));
            e.push_attribute(("type", "error"));
            w.write_event(Event::Start(e))?;
            w.write_event(Event::Text(BytesText::new(error)))?;
            w.write_event(Event::End(BytesEnd::new("error")))?;
            w.write_event(Event::End(BytesEnd::new("testcase")))?;
            w.write_event(Event::End(BytesEnd::new("testsuite")))?;
            continue;
        }
        run.push_attribute(("assertions", "1"));
        w.write_event(Event::Empty(run))?;
        for signal in &case.signals {
            let s = &signal.comparison;
            let tc = testcase(&class, &test_names.claim(&s.name), 0.0);
            if s.passed {
                w.write_event(Event::Empty(tc))?;
                continue;
            }
            w.write_event(Event::Start(tc))?;
            let message = failure_message(s);
            let mut f = BytesStart::new("failure");
            f.push_attribute(("message", message.as_str()));
            f.push_attribute(("type", "tolerance"));
            w.write_event(Event::Start(f))?;
            let mut details = format!(
                "{message}\ntolerance: rel {}, abs {}, range {}, time {} s\nlargest distance outside the tube: {}",
                s.tolerance.rel,
                s.tolerance.abs,
                s.tolerance.range,
                s.tolerance.time,
                short(s.max_excess)
            );
            if let Some(m) = &s.message {
                details.push_str(&format!("\n{m}"));
            }
            for plot in signal.plot.iter().chain(&signal.svg) {
                details.push_str(&format!("\nplot: {plot}"));
            }
            w.write_event(Event::Text(BytesText::new(&details)))?;
            w.write_event(Event::End(BytesEnd::new("failure")))?;
            // GitLab shows the first attachment of a test (a PNG shows everywhere, so it goes
            // first); Jenkins' JUnit Attachments plugin lists them all.
            let attachments: Vec<String> = signal
                .plot
                .iter()
                .chain(&signal.svg)
                .map(|path| format!("[[ATTACHMENT|{path}]]"))
                .collect();
            if !attachments.is_empty() {
                w.write_event(Event::Start(BytesStart::new("system-out")))?;
                w.write_event(Event::Text(BytesText::new(&attachments.join("\n"))))?;
                w.write_event(Event::End(BytesEnd::new("system-out")))?;
            }
            w.write_event(Event::End(BytesEnd::new("testcase")))?;
        }
        for name in &case.missing {
            w.write_event(Event::Start(testcase(&class, &test_names.claim(name), 0.0)))?;
            let mut f = BytesStart::new("failure");
            let message = format!("the result has no column \"{name}\"");
            f.push_attribute(("message", message.as_str()));
            f.push_attribute(("type", "missing"));
            w.write_event(Event::Empty(f))?;
            w.write_event(Event::End(BytesEnd::new("testcase")))?;
        }
        w.write_event(Event::End(BytesEnd::new("testsuite")))?;
    }
    w.write_event(Event::End(BytesEnd::new("testsuites")))?;
    w.get_mut().write_all(b"\n")
}

/// The one-line failure of a signal: its largest deviation and when, then how many points
/// left the tube and when first.
pub(crate) fn failure_message(s: &SignalComparison) -> String {
    let at = s.max_deviation_time.map_or("-".into(), short);
    let deviation = match (s.kind, s.tolerance_share) {
        (SignalKind::Continuous, Some(share))
            if share.time == s.max_deviation_time.unwrap_or(f64::NAN) =>
        {
            format!(
                "max deviation {} at t = {at} ({} of the tolerance {})",
                short(s.max_deviation),
                percent(share.share),
                short(share.tolerance)
            )
        }
        _ => format!("max deviation {} at t = {at}", short(s.max_deviation)),
    };
    let mut message = format!(
        "{deviation}; {} of {} points outside the tolerance, first at t = {}",
        s.violations,
        s.points,
        s.first_violation.map_or("-".into(), short)
    );
    if let Some(m) = &s.message {
        message.push_str(&format!("; {m}"));
    }
    message
}

/// Names made unique in the order they are claimed: the second "x" becomes "x (2)".
#[derive(Default)]
pub(crate) struct UniqueNames(std::collections::HashSet<String>);

impl UniqueNames {
    /// `name`, or `name (k)` with the smallest k >= 2 not claimed yet.
    pub(crate) fn claim(&mut self, name: &str) -> String {
        let mut candidate = name.to_string();
        let mut k = 2;
        while self.0.contains(&candidate) {
            candidate = format!("{name} ({k})");
            k += 1;
        }
        self.0.insert(candidate.clone());
        candidate
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or(text)
}

fn testcase<'a>(class: &str, name: &str, time: f64) -> BytesStart<'a> {
    let mut tc = BytesStart::new("testcase");
    tc.push_attribute(("classname", class));
    tc.push_attribute(("name", name));
    tc.push_attribute(("time", format!("{time:.3}").as_str()));
    tc
}

fn tests_of(case: &CaseReport) -> usize {
    1 + case.signals.len() + case.missing.len()
}

fn failures_of(case: &CaseReport) -> usize {
    case.signals.iter().filter(|s| !s.comparison.passed).count() + case.missing.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::compare::{compare, CompareOptions, SignalTable};

    /// A case whose signal is called "simulation", like the test of running the case.
    fn case(name: &str) -> CaseReport {
        let table =
            |text: &str| SignalTable::parse(text, std::path::Path::new("t.csv")).expect("a table");
        let reference = table("time,simulation\n0,1\n1,1\n");
        let result = table("time,simulation\n0,1\n1,3\n");
        let comparison = compare(&reference, &result, &CompareOptions::default(), &|_| None);
        CaseReport::compared(
            name.into(),
            "m.fmu".into(),
            "r.csv".into(),
            comparison,
            0.1,
            vec![],
        )
    }

    #[test]
    fn junit_names_each_test_once_and_says_where_the_deviation_was_largest() {
        let report = CheckReport::new(vec![case("a"), case("a")]);
        let xml = report.junit();
        let mut reader = quick_xml::Reader::from_str(&xml);
        let mut names = std::collections::HashSet::new();
        let mut messages = Vec::new();
        loop {
            match reader.read_event().expect("well-formed") {
                Event::Start(e) | Event::Empty(e) if e.name().as_ref() == b"testcase" => {
                    let get = |key: &str| {
                        let value = e.try_get_attribute(key).expect("attribute");
                        value
                            .expect(key)
                            .unescape_value()
                            .expect("text")
                            .into_owned()
                    };
                    assert!(names.insert((get("classname"), get("name"))), "{xml}");
                }
                Event::Start(e) if e.name().as_ref() == b"failure" => {
                    let message = e.try_get_attribute("message").expect("attribute");
                    messages.push(
                        message
                            .expect("message")
                            .unescape_value()
                            .expect("text")
                            .into_owned(),
                    );
                }
                Event::Eof => break,
                _ => {}
            }
        }
        assert_eq!(names.len(), 4, "{xml}");
        assert!(
            names.contains(&("a (2)".to_string(), "simulation (2)".to_string())),
            "{xml}"
        );
        assert_eq!(messages.len(), 2, "{xml}");
        assert!(
            messages[0].starts_with("max deviation 2 at t = 1 "),
            "{}",
            messages[0]
        );
    }
}
