//! Reports of `cosimo check`: a summary for people, JUnit XML for CI systems, and JSON
//! (schema: `schemas/check-report.schema.json`).

use std::io::Write;

use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event};

use super::compare::{ComparedPoints, Comparison, SignalComparison, SignalKind, Tolerance};

/// How a case ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
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
}

impl CaseReport {
    /// A report for a case that ran and was compared.
    pub fn compared(
        name: String,
        model: String,
        reference: String,
        comparison: Comparison,
        duration: f64,
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
                })
                .collect(),
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
    ) -> CaseReport {
        CaseReport {
            name,
            model,
            reference,
            status: Status::Error,
            error: Some(error),
            error_code,
            duration,
            result_file: None,
            worst_signal: None,
            max_deviation: None,
            first_violation: None,
            missing: Vec::new(),
            extra: Vec::new(),
            compared: None,
            signals: Vec::new(),
        }
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
    /// Whether every case passed.
    pub passed: bool,
    /// Counts.
    pub summary: Summary,
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
            passed: summary.passed == summary.cases,
            summary,
            cases,
        }
    }

    /// The exit code: 0 all passed, 2 a case had bad input, 1 a simulation failed, 3 a
    /// comparison failed.
    pub fn exit_code(&self) -> u8 {
        let errors = self.cases.iter().filter(|c| c.status == Status::Error);
        if errors.clone().any(|c| c.error_code == 2) {
            2
        } else if errors.clone().any(|_| true) {
            1
        } else if self.summary.failed > 0 {
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
    for case in &report.cases {
        let mut suite = BytesStart::new("testsuite");
        suite.push_attribute(("name", case.name.as_str()));
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
        for (name, value) in properties {
            let mut p = BytesStart::new("property");
            p.push_attribute(("name", name));
            p.push_attribute(("value", value));
            w.write_event(Event::Empty(p))?;
        }
        w.write_event(Event::End(BytesEnd::new("properties")))?;

        let mut run = testcase(&case.name, "simulation", case.duration);
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
            let tc = testcase(&case.name, &s.name, 0.0);
            if s.passed {
                w.write_event(Event::Empty(tc))?;
                continue;
            }
            w.write_event(Event::Start(tc))?;
            let message = format!(
                "{} of {} points outside the tolerance (first at t = {}), {}",
                s.violations,
                s.points,
                s.first_violation.map_or("-".into(), short),
                deviation_text(s)
            );
            let mut f = BytesStart::new("failure");
            f.push_attribute(("message", message.as_str()));
            f.push_attribute(("type", "tolerance"));
            w.write_event(Event::Start(f))?;
            let mut details = format!(
                "{message}\ntolerance: rel {}, abs {}, range {}, time {} s\nmax deviation at t = {}\nlargest distance outside the tube: {}",
                s.tolerance.rel,
                s.tolerance.abs,
                s.tolerance.range,
                s.tolerance.time,
                s.max_deviation_time.map_or("-".into(), short),
                short(s.max_excess)
            );
            if let Some(m) = &s.message {
                details.push_str(&format!("\n{m}"));
            }
            if let Some(plot) = &signal.plot {
                details.push_str(&format!("\nplot: {plot}"));
            }
            w.write_event(Event::Text(BytesText::new(&details)))?;
            w.write_event(Event::End(BytesEnd::new("failure")))?;
            w.write_event(Event::End(BytesEnd::new("testcase")))?;
        }
        for name in &case.missing {
            w.write_event(Event::Start(testcase(&case.name, name, 0.0)))?;
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
