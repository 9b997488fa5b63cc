//! `cosimo check --github-summary`: a Markdown table of the worst signals, appended to the
//! job summary GitHub Actions shows on the run's page (the file `$GITHUB_STEP_SUMMARY` names).

use std::fmt::Write as _;

use super::baseline::Verdict;
use super::report::{failure_message, short, CaseReport, CheckReport, Status};

/// Signals listed in the table at most; the rest are counted below it.
pub const SHOWN: usize = 20;

/// The summary: a headline, then one row per failing signal, missing signal and case that did
/// not run (the worst first), or, when everything passed, the signal of each case that came
/// closest to its tolerance.
pub fn github_summary(report: &CheckReport) -> String {
    let s = &report.summary;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "### cosimo check: {}\n\n{} case{}: {} passed, {} failed, {} error{}\n",
        if report.passed { "passed" } else { "failed" },
        s.cases,
        if s.cases == 1 { "" } else { "s" },
        s.passed,
        s.failed,
        s.errors,
        if s.errors == 1 { "" } else { "s" }
    );
    if let Some(baseline) = &report.baseline {
        let _ = writeln!(out, "{}\n", cell(&baseline.headline()));
        let newly: Vec<String> = report
            .cases
            .iter()
            .filter(|c| c.baseline.as_ref().map(|b| b.verdict) == Some(Verdict::NewlyFailing))
            .map(|c| cell(&c.name))
            .collect();
        if !newly.is_empty() {
            let _ = writeln!(out, "Newly failing: {}\n", newly.join(", "));
        }
    }
    // (severity for ranking, row)
    let mut rows: Vec<(f64, String)> = Vec::new();
    for case in &report.cases {
        match case.status {
            Status::Error => rows.push((
                f64::INFINITY,
                row(
                    case,
                    "\u{2013}",
                    "error",
                    case.error
                        .as_deref()
                        .and_then(|e| e.lines().next())
                        .unwrap_or("unknown error"),
                ),
            )),
            Status::Failed => {
                for name in &case.missing {
                    rows.push((
                        f64::INFINITY,
                        row(case, name, "missing", "the result has no such column"),
                    ));
                }
                for signal in case.signals.iter().filter(|s| !s.comparison.passed) {
                    let s = &signal.comparison;
                    rows.push((
                        s.severity(),
                        row(case, &s.name, "failed", &failure_message(s)),
                    ));
                }
            }
            Status::Passed => {
                if let Some(worst) = case
                    .worst_signal
                    .as_ref()
                    .and_then(|w| case.signals.iter().find(|s| &s.comparison.name == w))
                {
                    let s = &worst.comparison;
                    let text = format!(
                        "max deviation {} at t = {}",
                        short(s.max_deviation),
                        s.max_deviation_time.map_or("-".into(), short)
                    );
                    rows.push((f64::NEG_INFINITY, row(case, &s.name, "passed", &text)));
                }
            }
        }
    }
    if rows.is_empty() {
        return out;
    }
    rows.sort_by(|a, b| b.0.total_cmp(&a.0));
    out.push_str("| Case | Signal | Status | Deviation |\n|---|---|---|---|\n");
    for (_, row) in rows.iter().take(SHOWN) {
        out.push_str(row);
    }
    if rows.len() > SHOWN {
        let _ = writeln!(
            out,
            "\nand {} more rows (the JSON, JUnit and HTML reports have them all)",
            rows.len() - SHOWN
        );
    }
    out.push('\n');
    out
}

fn row(case: &CaseReport, signal: &str, status: &str, text: &str) -> String {
    format!(
        "| {} | {} | {status} | {} |\n",
        cell(&case.name),
        cell(signal),
        cell(text)
    )
}

/// Text as one table cell: Markdown's punctuation escaped, line breaks as spaces.
fn cell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' | '\r' => out.push(' '),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\\' | '|' | '*' | '_' | '`' | '[' | ']' | '#' | '~' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_cannot_break_the_table_or_inject_markup() {
        assert_eq!(cell("a|b\nc"), "a\\|b c");
        assert_eq!(cell("<img src=x>"), "&lt;img src=x&gt;");
        assert_eq!(cell("x[1]*_"), "x\\[1\\]\\*\\_");
    }
}
