//! `cosimo check --html DIR`: a static report of a check. `index.html` lists the cases with
//! their phases (load, simulate, compare), the share of checked points inside the tube, the
//! largest deviation and its time and the run time; each case has a page of its signals, and
//! each failing signal a page with an SVG of reference, tube, result and deviation.
//!
//! The report opens offline and under a strict content security policy (Jenkins serves
//! archived HTML with `default-src 'none'; img-src 'self'; style-src 'self'`): plain HTML, one
//! stylesheet file and SVG files; no script, no `style` element or attribute, no `data:` URI,
//! no address outside the folder. Every page carries that policy itself, so a browser shows a
//! violation wherever the report is opened.
//!
//! A marker file names the folder as a report and lists what the report wrote: a later report
//! replaces exactly those entries, and a folder without the marker is never written into.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use quick_xml::escape::escape;

use super::baseline::Verdict;
use super::compare::SignalComparison;
use super::report::{
    deviation_text, short, tolerance_text, CaseReport, CheckReport, PhaseStatus, SignalReport,
    Status,
};
use super::svg;
use crate::error::{Error, Result};

/// The file that marks a folder as a cosimo report; it lists the entries the report wrote.
pub const MARKER: &str = ".cosimo-report";
/// The report's stylesheet, at the top of the folder.
const STYLESHEET: &str = "report.css";
/// The first page.
const INDEX: &str = "index.html";
/// The policy every page declares: nothing but the folder's own images and stylesheet.
const POLICY: &str = "default-src 'none'; img-src 'self'; style-src 'self'";
/// The marker's first line.
const MARKER_HEADER: &str =
    "cosimo check --html report; a new report written here replaces the entries listed below";

/// A report being written: the folder is claimed when it is created, each case is added when
/// it has been checked, and `finish` writes the index.
pub struct HtmlReport {
    dir: PathBuf,
    /// Entries of the folder the report wrote (listed in the marker).
    written: Vec<String>,
    /// The folder of each case added, in order.
    case_folders: Vec<String>,
}

impl HtmlReport {
    /// Claim `dir` for a report: a new or empty folder, or a previous report (whose entries
    /// are removed). Any other folder, or a file, is refused.
    pub fn create(dir: &Path) -> Result<HtmlReport> {
        claim(dir)?;
        let mut report = HtmlReport {
            dir: dir.to_path_buf(),
            written: Vec::new(),
            case_folders: Vec::new(),
        };
        // The marker itself is listed too: no case folder may take its name.
        report.note(MARKER)?;
        report.note(INDEX)?;
        report.note(STYLESHEET)?;
        report.write(Path::new(STYLESHEET), CSS)?;
        Ok(report)
    }

    /// Write the pages of one checked case: its signal table and, for each failing signal that
    /// kept its trace, a page with an SVG plot (whose path goes into the signal's `svg`).
    pub fn add_case(&mut self, case: &mut CaseReport) -> Result<()> {
        let folder = unique_name(&file_stem(&case.name), &self.written);
        self.note(&folder)?;
        let case_dir = self.dir.join(&folder);
        std::fs::create_dir_all(&case_dir).map_err(|e| Error::io(&case_dir, e))?;
        // (signal, file stem) of each signal page; "index" is the case's page.
        let mut pages: Vec<(String, String)> = Vec::new();
        let mut stems = vec!["index".to_string()];
        for signal in &mut case.signals {
            let s = &signal.comparison;
            if s.passed {
                continue;
            }
            let title = format!("{}: {}", case.name, s.name);
            let Some(picture) = svg::signal_plot(&title, s) else {
                continue;
            };
            let stem = unique_name(&file_stem(&s.name), &stems);
            stems.push(stem.clone());
            let image = format!("{stem}.svg");
            self.write(&Path::new(&folder).join(&image), &picture)?;
            let page = signal_page(&case.name, &signal.comparison, &image);
            self.write(&Path::new(&folder).join(format!("{stem}.html")), &page)?;
            signal.svg = Some(case_dir.join(&image).display().to_string());
            pages.push((signal.comparison.name.clone(), stem));
        }
        self.write(&Path::new(&folder).join(INDEX), &case_page(case, &pages))?;
        self.case_folders.push(folder);
        Ok(())
    }

    /// Write the index of every case added (in the order of `report.cases`).
    pub fn finish(self, report: &CheckReport) -> Result<()> {
        let page = index_page(report, &self.case_folders);
        self.write(Path::new(INDEX), &page)
    }

    /// Record an entry in the marker before it is written, so that a report cut short is
    /// still replaced whole by the next one.
    fn note(&mut self, entry: &str) -> Result<()> {
        self.written.push(entry.to_string());
        let mut text = format!("{MARKER_HEADER}\n");
        for entry in &self.written {
            text.push_str(entry);
            text.push('\n');
        }
        self.write(Path::new(MARKER), &text)
    }

    fn write(&self, relative: &Path, text: &str) -> Result<()> {
        let path = self.dir.join(relative);
        std::fs::write(&path, text).map_err(|e| Error::io(&path, e))
    }
}

/// Make `dir` ready for a report: create it, or empty a previous report in it.
fn claim(dir: &Path) -> Result<()> {
    let refuse = |why: &str| {
        Error::Usage(format!(
            "{}: {why}; --html writes into a new or empty folder, or replaces a previous \
             report (a folder with {MARKER}): give another folder",
            dir.display()
        ))
    };
    match std::fs::metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e));
        }
        Err(e) => return Err(Error::io(dir, e)),
        Ok(meta) if !meta.is_dir() => return Err(refuse("this is a file, not a folder")),
        Ok(_) => {}
    }
    let marker = dir.join(MARKER);
    let listed = match std::fs::read_to_string(&marker) {
        Ok(text) if text.starts_with(MARKER_HEADER) => text,
        Ok(_) => return Err(refuse(&format!("{MARKER} is not a cosimo report's marker"))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let mut entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
            if entries.next().is_some() {
                return Err(refuse(
                    "the folder exists, is not empty and is not a cosimo report",
                ));
            }
            return Ok(());
        }
        Err(e) => return Err(Error::io(&marker, e)),
    };
    for entry in listed.lines().skip(1) {
        // Only plain names inside the folder: a marker edited by hand cannot reach outside.
        let plain = !entry.is_empty()
            && entry != "."
            && entry != ".."
            && entry != MARKER
            && !entry.contains(['/', '\\']);
        if !plain {
            continue;
        }
        let path = dir.join(entry);
        let removed = match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(&path),
            Ok(_) => std::fs::remove_file(&path),
            Err(e) => Err(e),
        };
        match removed {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(Error::io(&path, e));
            }
            _ => {}
        }
    }
    Ok(())
}

/// A name's file stem: characters other than ASCII letters, digits, `-`, `_` and `.` become
/// `_`; a leading dot too (no hidden files), and an empty name is `_`.
fn file_stem(name: &str) -> String {
    let mut stem: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if stem.is_empty() || stem.starts_with('.') {
        stem.insert(0, '_');
    }
    stem.truncate(120);
    stem
}

/// `stem`, or `stem-2` and so on when it equals a name in `taken` ignoring case (file
/// systems that ignore case would merge them).
pub(crate) fn unique_name(stem: &str, taken: &[String]) -> String {
    let clashes = |name: &str| taken.iter().any(|t| t.eq_ignore_ascii_case(name));
    let mut name = stem.to_string();
    let mut k = 2;
    while clashes(&name) {
        name = format!("{stem}-{k}");
        k += 1;
    }
    name
}

/// One page: the policy, the stylesheet `depth` folders up, a title and the body.
fn page(title: &str, depth: usize, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{POLICY}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<link rel=\"stylesheet\" href=\"{}{STYLESHEET}\">\n</head>\n<body>\n\
         {body}<footer>Written by cosimo {}.</footer>\n</body>\n</html>\n",
        escape(title),
        "../".repeat(depth),
        env!("CARGO_PKG_VERSION")
    )
}

/// The status of a case as a word and a class.
fn status_cell(status: Status) -> &'static str {
    match status {
        Status::Passed => "<td class=\"passed\">passed</td>",
        Status::Failed => "<td class=\"failed\">failed</td>",
        Status::Error => "<td class=\"error\">error</td>",
    }
}

/// Seconds for people: "0.4 ms", "12 ms", "1.25 s".
fn seconds(s: f64) -> String {
    if s < 0.01 {
        format!("{:.1} ms", s * 1e3)
    } else if s < 1.0 {
        format!("{:.0} ms", s * 1e3)
    } else {
        format!("{s:.2} s")
    }
}

/// A share of points for people, never rounded up to 100 %: "100 %", "99.9 %", "< 0.1 %".
fn share_text(share: f64) -> String {
    if share >= 1.0 {
        "100 %".into()
    } else if share > 0.0 && share < 1e-3 {
        "&lt; 0.1 %".into()
    } else {
        format!("{:.1} %", (share * 1000.0).floor() / 10.0)
    }
}

fn optional_time(t: Option<f64>) -> String {
    t.map_or("\u{2013}".into(), short)
}

/// Cases in the order the index lists them: errors, then failures, then passes.
fn cases_failing_first(report: &CheckReport) -> Vec<usize> {
    let rank = |s: Status| match s {
        Status::Error => 0,
        Status::Failed => 1,
        Status::Passed => 2,
    };
    let mut order: Vec<usize> = (0..report.cases.len()).collect();
    order.sort_by_key(|&i| rank(report.cases[i].status));
    order
}

fn index_page(report: &CheckReport, folders: &[String]) -> String {
    let s = &report.summary;
    let mut body = String::new();
    let verdict = if report.passed { "passed" } else { "failed" };
    let _ = write!(
        body,
        "<h1>cosimo check</h1>\n<p class=\"summary {verdict}\">{} case{}: {} passed, {} failed, \
         {} error{}</p>\n",
        s.cases,
        if s.cases == 1 { "" } else { "s" },
        s.passed,
        s.failed,
        s.errors,
        if s.errors == 1 { "" } else { "s" }
    );
    if let Some(baseline) = &report.baseline {
        let _ = writeln!(body, "<p>{}</p>", escape(baseline.headline()));
        if !baseline.missing.is_empty() {
            let names: Vec<String> = baseline
                .missing
                .iter()
                .map(|n| escape(n).into_owned())
                .collect();
            let _ = writeln!(
                body,
                "<p>In the baseline, not checked now: {}</p>",
                names.join(", ")
            );
        }
    }
    body.push_str(
        "<table>\n<thead><tr><th>Case</th><th>Status</th><th>Load</th><th>Simulate</th>\
         <th>Compare</th><th>Inside the tube</th><th>Worst signal</th>\
         <th>Largest deviation</th><th>At t [s]</th><th>Run time</th>",
    );
    if report.baseline.is_some() {
        body.push_str("<th>Baseline</th>");
    }
    body.push_str("</tr></thead>\n<tbody>\n");
    let order = cases_failing_first(report);
    for &i in &order {
        let case = &report.cases[i];
        let name = match folders.get(i) {
            Some(folder) => format!(
                "<a href=\"{}/{INDEX}\">{}</a>",
                escape(folder),
                escape(&case.name)
            ),
            None => escape(&case.name).into_owned(),
        };
        let _ = write!(body, "<tr><td>{name}</td>{}", status_cell(case.status));
        for phase in &case.phases {
            let (class, mark) = match phase.status {
                PhaseStatus::Passed => ("passed", "\u{2713} "),
                PhaseStatus::Failed => ("failed", "\u{2717} "),
                PhaseStatus::NotRun => ("notrun", ""),
            };
            let text = match phase.status {
                PhaseStatus::NotRun => "not run".to_string(),
                _ => format!("{mark}{}", seconds(phase.seconds)),
            };
            let _ = write!(body, "<td class=\"{class}\">{text}</td>");
        }
        let worst = case
            .worst_signal
            .as_ref()
            .and_then(|w| case.signals.iter().find(|s| &s.comparison.name == w));
        let _ = write!(
            body,
            "<td class=\"number\">{}</td><td>{}</td><td class=\"number\">{}</td>\
             <td class=\"number\">{}</td><td class=\"number\">{}</td>",
            case.inside_share().map_or("\u{2013}".into(), share_text),
            worst.map_or("\u{2013}".into(), |w| escape(&w.comparison.name)
                .into_owned()),
            case.max_deviation.map_or("\u{2013}".into(), short),
            optional_time(worst.and_then(|w| w.comparison.max_deviation_time)),
            seconds(case.duration)
        );
        if let Some(baseline) = &case.baseline {
            let class = match baseline.verdict {
                Verdict::NewlyFailing => " class=\"failed\"",
                Verdict::Fixed => " class=\"passed\"",
                _ => "",
            };
            let _ = write!(
                body,
                "<td{class}>{}</td>",
                escape(baseline.text(case.duration))
            );
        } else if report.baseline.is_some() {
            body.push_str("<td></td>");
        }
        body.push_str("</tr>\n");
    }
    body.push_str("</tbody>\n</table>\n");

    let errors: Vec<&CaseReport> = order
        .iter()
        .map(|&i| &report.cases[i])
        .filter(|c| c.status == Status::Error)
        .collect();
    if !errors.is_empty() {
        body.push_str("<h2>Cases that did not run</h2>\n<dl>\n");
        for case in errors {
            let _ = writeln!(
                body,
                "<dt>{}</dt><dd><pre>{}</pre></dd>",
                escape(&case.name),
                escape(case.error.as_deref().unwrap_or("unknown error"))
            );
        }
        body.push_str("</dl>\n");
    }

    let mut failing = String::new();
    for &i in &order {
        let case = &report.cases[i];
        for signal in case.signals_failing_first() {
            let s = &signal.comparison;
            if s.passed {
                break;
            }
            let name = match (&signal.svg, folders.get(i)) {
                (Some(svg), Some(folder)) => {
                    let page = Path::new(svg).with_extension("html");
                    let file = page
                        .file_name()
                        .map(|f| f.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    format!(
                        "<a href=\"{}/{}\">{}</a>",
                        escape(folder),
                        escape(&file),
                        escape(&s.name)
                    )
                }
                _ => escape(&s.name).into_owned(),
            };
            let _ = writeln!(
                failing,
                "<tr><td>{}</td><td>{name}</td><td class=\"number\">{}</td>\
                 <td class=\"number\">{}</td><td class=\"number\">{} of {}</td>\
                 <td class=\"number\">{}</td></tr>",
                escape(&case.name),
                short(s.max_deviation),
                optional_time(s.max_deviation_time),
                s.violations,
                s.points,
                optional_time(s.first_violation)
            );
        }
        for missing in &case.missing {
            let _ = writeln!(
                failing,
                "<tr><td>{}</td><td>{}</td><td colspan=\"4\">missing from the result</td></tr>",
                escape(&case.name),
                escape(missing)
            );
        }
    }
    if !failing.is_empty() {
        let _ = write!(
            body,
            "<h2>Failing signals</h2>\n<table>\n<thead><tr><th>Case</th><th>Signal</th>\
             <th>Largest deviation</th><th>At t [s]</th><th>Points outside the tube</th>\
             <th>First violation [s]</th></tr></thead>\n<tbody>\n{failing}</tbody>\n</table>\n"
        );
    }
    page("cosimo check", 0, &body)
}

fn case_page(case: &CaseReport, pages: &[(String, String)]) -> String {
    let mut body = String::new();
    let _ = writeln!(
        body,
        "<nav><a href=\"../{INDEX}\">All cases</a></nav>\n<h1>{}</h1>\n<table class=\"facts\">\
         <tbody>\n<tr><th>Status</th>{}</tr>\n<tr><th>Model</th><td>{}</td></tr>",
        escape(&case.name),
        status_cell(case.status),
        escape(&case.model)
    );
    if let Some(reference) = &case.reference {
        let _ = writeln!(
            body,
            "<tr><th>Reference</th><td>{}</td></tr>",
            escape(reference)
        );
    }
    if let Some(result) = &case.result_file {
        let _ = writeln!(body, "<tr><th>Result</th><td>{}</td></tr>", escape(result));
    }
    if let Some(points) = &case.compared {
        let _ = writeln!(
            body,
            "<tr><th>Compared</th><td>{}</td></tr>",
            escape(points.to_string())
        );
    }
    if let Some(share) = case.inside_share() {
        let _ = writeln!(
            body,
            "<tr><th>Inside the tube</th><td>{} of the checked points</td></tr>",
            share_text(share)
        );
    }
    let phases: Vec<String> = case
        .phases
        .iter()
        .map(|p| match p.status {
            PhaseStatus::NotRun => format!("{}: not run", p.phase.name()),
            PhaseStatus::Passed => format!("{}: {}", p.phase.name(), seconds(p.seconds)),
            PhaseStatus::Failed => {
                format!("{}: failed after {}", p.phase.name(), seconds(p.seconds))
            }
        })
        .collect();
    let _ = writeln!(
        body,
        "<tr><th>Run time</th><td>{} ({})</td></tr>\n</tbody></table>",
        seconds(case.duration),
        phases.join(", ")
    );
    if let Some(error) = &case.error {
        let _ = writeln!(body, "<h2>Error</h2>\n<pre>{}</pre>", escape(error));
    }
    if !case.signals.is_empty() || !case.missing.is_empty() {
        body.push_str(
            "<h2>Signals</h2>\n<table>\n<thead><tr><th>Signal</th><th>Status</th>\
             <th>Inside the tube</th><th>Largest deviation</th><th>At t [s]</th>\
             <th>Deviation and tolerance</th><th>First violation [s]</th></tr></thead>\n<tbody>\n",
        );
        for name in &case.missing {
            let _ = writeln!(
                body,
                "<tr><td>{}</td><td class=\"failed\">missing</td><td colspan=\"5\">the result has \
                 no such column</td></tr>",
                escape(name)
            );
        }
        for signal in case.signals_failing_first() {
            signal_row(&mut body, signal, pages);
        }
        body.push_str("</tbody>\n</table>\n");
    }
    if !case.extra.is_empty() {
        let names: Vec<String> = case.extra.iter().map(|n| escape(n).into_owned()).collect();
        let _ = writeln!(
            body,
            "<h2>Not in the reference (not compared)</h2>\n<p>{}</p>",
            names.join(", ")
        );
    }
    page(&format!("{}: cosimo check", case.name), 1, &body)
}

fn signal_row(body: &mut String, signal: &SignalReport, pages: &[(String, String)]) {
    let s = &signal.comparison;
    let name = match pages.iter().find(|(name, _)| name == &s.name) {
        Some((_, stem)) => format!("<a href=\"{}.html\">{}</a>", escape(stem), escape(&s.name)),
        None => escape(&s.name).into_owned(),
    };
    let status = if s.passed {
        "<td class=\"passed\">passed</td>"
    } else {
        "<td class=\"failed\">failed</td>"
    };
    let inside = if s.points > 0 {
        share_text((s.points - s.violations.min(s.points)) as f64 / s.points as f64)
    } else {
        "\u{2013}".into()
    };
    let _ = writeln!(
        body,
        "<tr><td>{name}</td>{status}<td class=\"number\">{inside}</td>\
         <td class=\"number\">{}</td><td class=\"number\">{}</td><td>{}</td>\
         <td class=\"number\">{}</td></tr>",
        short(s.max_deviation),
        optional_time(s.max_deviation_time),
        escape(deviation_text(s)),
        optional_time(s.first_violation)
    );
}

fn signal_page(case: &str, s: &SignalComparison, image: &str) -> String {
    let mut body = String::new();
    let (width, height) = svg::SIZE;
    let _ = writeln!(
        body,
        "<nav><a href=\"../{INDEX}\">All cases</a> \u{203a} <a href=\"{INDEX}\">{}</a></nav>\n\
         <h1>{}</h1>\n<p><a href=\"{image}\"><img src=\"{image}\" width=\"{width}\" \
         height=\"{height}\" alt=\"{}: reference, tolerance tube and result over time, and \
         below the deviation from the reference inside the tube's half-widths\"></a></p>",
        escape(case),
        escape(&s.name),
        escape(&s.name),
        image = escape(image)
    );
    let mut facts = vec![
        (
            "Status",
            if s.passed { "passed" } else { "failed" }.to_string(),
        ),
        (
            "Points outside the tube",
            format!("{} of {}", s.violations, s.points),
        ),
        (
            "First violation",
            format!("t = {} s", optional_time(s.first_violation)),
        ),
        (
            "Largest deviation",
            format!(
                "{} at t = {} s",
                short(s.max_deviation),
                optional_time(s.max_deviation_time)
            ),
        ),
        ("Deviation and tolerance", deviation_text(s)),
        ("Largest distance outside the tube", short(s.max_excess)),
        ("Tolerance", tolerance_text(&s.tolerance, s.kind)),
    ];
    if let Some(message) = &s.message {
        facts.push(("Note", message.clone()));
    }
    body.push_str("<table class=\"facts\"><tbody>\n");
    for (what, value) in facts {
        let _ = writeln!(body, "<tr><th>{what}</th><td>{}</td></tr>", escape(&value));
    }
    body.push_str("</tbody></table>\n");
    page(&format!("{case}: {}: cosimo check", s.name), 1, &body)
}

/// The stylesheet (a file of its own: the policy allows no inline style).
const CSS: &str = "\
body { font-family: system-ui, -apple-system, \"Segoe UI\", sans-serif; margin: 1.5em 2em; \
color: #222; }
h1 { font-size: 1.5em; margin-bottom: 0.3em; }
h2 { font-size: 1.2em; margin-top: 1.6em; }
nav { margin-bottom: 1em; }
a { color: #1f5fa8; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #d0d0d0; padding: 0.3em 0.6em; text-align: left; \
vertical-align: top; }
thead th { background: #f0f0f0; }
table.facts th { background: #f7f7f7; font-weight: normal; color: #555; }
td.number { text-align: right; font-variant-numeric: tabular-nums; }
td.passed { background: #e3f4e3; color: #1b5e20; }
td.failed { background: #fde2e1; color: #8e1b14; font-weight: bold; }
td.error { background: #fff0c2; color: #7a4b00; font-weight: bold; }
td.notrun { color: #888; }
td.number, td.passed, td.failed, td.error, td.notrun { white-space: nowrap; }
p.summary { font-size: 1.1em; font-weight: bold; }
p.summary.passed { color: #1b5e20; }
p.summary.failed { color: #8e1b14; }
pre { white-space: pre-wrap; background: #f7f7f7; padding: 0.6em; }
img { max-width: 100%; height: auto; border: 1px solid #d0d0d0; }
footer { margin-top: 2em; color: #888; font-size: 0.9em; }
";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_that_is_not_a_report_is_refused_and_a_report_is_replaced() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let other = dir.path().join("other");
        std::fs::create_dir(&other).unwrap();
        std::fs::write(other.join("notes.txt"), "mine").unwrap();
        let error = HtmlReport::create(&other)
            .err()
            .expect("refused")
            .to_string();
        assert!(error.contains(&other.display().to_string()), "{error}");
        assert!(error.contains("not a cosimo report"), "{error}");
        assert!(other.join("notes.txt").exists());

        let file = dir.path().join("file.html");
        std::fs::write(&file, "x").unwrap();
        let error = HtmlReport::create(&file)
            .err()
            .expect("refused")
            .to_string();
        assert!(error.contains("not a folder"), "{error}");

        // A report, with a file of the user's beside it: the next report replaces its own
        // entries and leaves the user's file.
        let report_dir = dir.path().join("report");
        let mut report = HtmlReport::create(&report_dir).unwrap();
        report.note("old-case").unwrap();
        std::fs::create_dir(report_dir.join("old-case")).unwrap();
        std::fs::write(report_dir.join("old-case").join("x.svg"), "<svg/>").unwrap();
        std::fs::write(report_dir.join("keep.txt"), "mine").unwrap();
        HtmlReport::create(&report_dir).unwrap();
        assert!(!report_dir.join("old-case").exists());
        assert!(report_dir.join("keep.txt").exists());
        assert!(report_dir.join(STYLESHEET).exists());
    }

    #[test]
    fn file_names_are_plain_and_unique_ignoring_case() {
        assert_eq!(file_stem("a/b c[1]"), "a_b_c_1_");
        assert_eq!(file_stem(".hidden"), "_.hidden");
        assert_eq!(file_stem(""), "_");
        let taken = vec!["x_1_".to_string(), "X_1_-2".to_string()];
        assert_eq!(unique_name("x_1_", &taken), "x_1_-3");
        assert_eq!(unique_name("Index", &["index".to_string()]), "Index-2");
    }
}
