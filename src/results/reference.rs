//! Finding what to check against: check cases (a folder with a model, a reference CSV, an
//! optional input CSV and an optional `check.json`), and references an FMU carries itself
//! (the FMI-LS-REF layered standard, `extra/org.fmi-standard.fmi-ls-ref/`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::compare::{CompareAt, SignalSettings, SignalTable, ToleranceSettings};
use crate::error::{Error, Result};

/// The folder of FMI-LS-REF inside an FMU.
pub const LS_REF_FOLDER: &str = "extra/org.fmi-standard.fmi-ls-ref";
/// The manifest of FMI-LS-REF, relative to its folder.
pub const LS_REF_MANIFEST: &str = "fmi-ls-manifest.xml";
/// The settings file of a check case.
pub const SETTINGS_FILE: &str = "check.json";

/// The reference results an FMU ships (FMI-LS-REF).
#[derive(Debug, Clone, PartialEq)]
pub struct LsReference {
    /// The manifest file.
    pub manifest: PathBuf,
    /// Files with `role="result"`.
    pub results: Vec<PathBuf>,
    /// Files with `role="input"`.
    pub inputs: Vec<PathBuf>,
    /// Every `<Related>` entry, in the manifest's order.
    pub entries: Vec<LsEntry>,
}

/// One `<Related>` entry of an FMI-LS-REF manifest.
#[derive(Debug, Clone, PartialEq)]
pub struct LsEntry {
    /// The `source` attribute: a path inside the FMI-LS-REF folder.
    pub source: String,
    /// The `role` attribute (`result`, `input`, ...).
    pub role: Option<String>,
    /// The file on disk.
    pub path: PathBuf,
}

impl std::fmt::Display for LsEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "<Related source=\"{}\"", self.source)?;
        if let Some(role) = &self.role {
            write!(f, " role=\"{role}\"")?;
        }
        write!(f, ">")
    }
}

/// The FMI-LS-REF reference inside the FMU unpacked at `root`, if it has one. Errors name the
/// manifest inside the FMU (`extra/...`), not the folder it was unpacked into.
pub fn ls_reference(root: &Path) -> Result<Option<LsReference>> {
    let folder = root.join(LS_REF_FOLDER);
    let manifest = folder.join(LS_REF_MANIFEST);
    if !manifest.is_file() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(&manifest).map_err(|e| {
        Error::Usage(format!(
            "{LS_REF_FOLDER}/{LS_REF_MANIFEST}: cannot be read: {e}"
        ))
    })?;
    let bad =
        |message: String| Error::Usage(format!("{LS_REF_FOLDER}/{LS_REF_MANIFEST}: {message}"));
    let mut reader = quick_xml::Reader::from_str(&text);
    let mut reference = LsReference {
        manifest: manifest.clone(),
        results: Vec::new(),
        inputs: Vec::new(),
        entries: Vec::new(),
    };
    let mut root_seen = false;
    loop {
        let event = reader
            .read_event()
            .map_err(|e| bad(format!("not well-formed XML: {e}")))?;
        let element = match &event {
            quick_xml::events::Event::Start(e) | quick_xml::events::Event::Empty(e) => e,
            quick_xml::events::Event::Eof => break,
            _ => continue,
        };
        let name = String::from_utf8_lossy(element.local_name().as_ref()).into_owned();
        if !root_seen {
            root_seen = true;
            if name != "fmiReferences" {
                return Err(bad(format!(
                    "the root element is <{name}>, expected <fmiReferences>"
                )));
            }
            continue;
        }
        if name != "Related" {
            continue;
        }
        let mut source = None;
        let mut role = None;
        for attribute in element.attributes().flatten() {
            let value = attribute
                .unescape_value()
                .map_err(|e| bad(format!("bad attribute value: {e}")))?
                .into_owned();
            match attribute.key.local_name().as_ref() {
                b"source" => source = Some(value),
                b"role" => role = Some(value),
                _ => {}
            }
        }
        let Some(source) = source else {
            return Err(bad("a <Related> element has no \"source\" attribute".into()));
        };
        if source.contains("..") || Path::new(&source).is_absolute() {
            return Err(bad(format!(
                "source \"{source}\" must be a path inside {LS_REF_FOLDER}"
            )));
        }
        let path = folder.join(&source);
        let entry = LsEntry {
            source: source.clone(),
            role: role.clone(),
            path: path.clone(),
        };
        if !path.is_file() {
            return Err(bad(format!(
                "{entry} names no file: the FMU has no {LS_REF_FOLDER}/{source}"
            )));
        }
        match role.as_deref() {
            Some("result") => reference.results.push(path),
            Some("input") => reference.inputs.push(path),
            _ => {}
        }
        reference.entries.push(entry);
    }
    Ok(Some(reference))
}

/// The tables an FMI-LS-REF manifest names, with their entries.
pub type LsTables = Vec<(LsEntry, SignalTable)>;

/// The FMI-LS-REF data of the FMU unpacked at `root`, checked against its model description:
/// every file the manifest names with role `result` or `input` exists, reads as a CSV table
/// and has only columns that are variables of the model (an FMI 3 array also as `name[i]`).
/// An error is one headline naming the manifest entry (the caller adds the FMU); the CSV
/// tables are returned with the entries, results first.
pub fn checked_ls_reference(
    root: &Path,
    md: &crate::fmu::ModelDescription,
) -> Result<Option<(LsReference, LsTables)>> {
    let Some(reference) = ls_reference(root)? else {
        return Ok(None);
    };
    let mut tables = Vec::new();
    let manifest = format!("{LS_REF_FOLDER}/{LS_REF_MANIFEST}");
    for entry in &reference.entries {
        if !matches!(entry.role.as_deref(), Some("result" | "input")) {
            continue;
        }
        let shown = PathBuf::from(format!("{LS_REF_FOLDER}/{}", entry.source));
        let table = std::fs::read_to_string(&entry.path)
            .map_err(|e| e.to_string())
            .and_then(|text| SignalTable::parse(&text, &shown).map_err(|e| e.to_string()))
            .map_err(|e| Error::Usage(format!("{manifest}: {entry}: {e}")))?;
        let columns = table.column_names();
        let unknown: Vec<&str> = columns
            .iter()
            .copied()
            .filter(|c| !names_variable(md, c))
            .collect();
        if !unknown.is_empty() {
            let shown: Vec<String> = unknown.iter().take(5).map(|c| format!("\"{c}\"")).collect();
            let more = unknown.len() - shown.len();
            let list = format!(
                "{}{}",
                shown.join(", "),
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                }
            );
            let version = match md.fmi_version {
                crate::fmu::description::FmiVersion::Fmi2 => "FMI 2",
                crate::fmu::description::FmiVersion::Fmi3 => "FMI 3",
            };
            let verdict = if unknown.len() == columns.len() {
                format!(
                    "none of its {} columns is a variable of the model \"{}\" ({version}): the file \
                     belongs to another model or to the other FMI version",
                    columns.len(),
                    md.model_name
                )
            } else {
                format!(
                    "{} of its {} columns name no variable of the model \"{}\" ({version})",
                    unknown.len(),
                    columns.len(),
                    md.model_name
                )
            };
            return Err(Error::Usage(format!(
                "{manifest}: {entry}: {verdict}: {list}"
            )));
        }
        tables.push((entry.clone(), table));
    }
    tables.sort_by_key(|(entry, _)| entry.role.as_deref() != Some("result"));
    Ok(Some((reference, tables)))
}

/// Whether `column` names a variable of `md`: by name, or an element `name[i]` of an array.
fn names_variable(md: &crate::fmu::ModelDescription, column: &str) -> bool {
    if md.variable(column).is_some() {
        return true;
    }
    column
        .strip_suffix(']')
        .and_then(|c| c.rsplit_once('['))
        .and_then(|(base, _)| md.variable(base))
        .is_some_and(|v| !v.dimensions.is_empty())
}

/// The findings of `cosimo validate` about the FMI-LS-REF data of the FMU at `fmu`: a broken
/// manifest, a missing file, a file of another model, a reference that does not cover the
/// default experiment. Nothing when the FMU has no FMI-LS-REF data (or cannot be opened: the
/// other checks say why).
pub fn ls_ref_findings(fmu: &Path) -> Vec<crate::fmu::validate::Finding> {
    use crate::fmu::validate::{Finding, Severity};
    let finding = |severity, message: String| Finding {
        severity,
        rule: "fmi-ls-ref",
        line: None,
        message,
    };
    let Ok(opened) = crate::fmu::Fmu::open(fmu) else {
        return Vec::new();
    };
    let md = opened.description();
    let (reference, tables) = match checked_ls_reference(opened.archive().root(), md) {
        Ok(Some(found)) => found,
        Ok(None) => return Vec::new(),
        Err(e) => return vec![finding(Severity::Error, e.to_string())],
    };
    let mut findings = Vec::new();
    if reference.results.is_empty() {
        findings.push(finding(
            Severity::Error,
            format!(
                "{LS_REF_FOLDER}/{LS_REF_MANIFEST}: no <Related> entry with role=\"result\": \
                 `cosimo check` finds no reference in it"
            ),
        ));
    }
    if let Some(experiment) = &md.default_experiment {
        let start = experiment.start_time.unwrap_or(0.0);
        for (entry, table) in tables
            .iter()
            .filter(|(e, _)| e.role.as_deref() == Some("result"))
        {
            if let Some(stop) = experiment.stop_time {
                if let Err(message) = covers(table.time(), start, stop) {
                    findings.push(finding(
                        Severity::Warning,
                        format!(
                            "{LS_REF_FOLDER}/{LS_REF_MANIFEST}: {entry}: {message} of the default \
                             experiment: `cosimo check` refuses it unless told a shorter span"
                        ),
                    ));
                }
            }
        }
    }
    findings
}

/// Whether a reference with these times covers the run from `start` to `stop` (to a
/// thousandth of the run); otherwise what it covers and what the run does.
pub fn covers(time: &[f64], start: f64, stop: f64) -> std::result::Result<(), String> {
    let (Some(&first), Some(&last)) = (time.first(), time.last()) else {
        return Err("the reference has no rows".into());
    };
    let slack = 1e-3 * (stop - start).abs() + 1e-12 * start.abs().max(stop.abs());
    if first <= start + slack && last >= stop - slack {
        return Ok(());
    }
    let short = super::report::short;
    let what = if time.len() == 1 {
        format!("the reference has a single row (t = {})", short(first))
    } else {
        format!(
            "the reference covers t = {} to {} s",
            short(first),
            short(last)
        )
    };
    Err(format!(
        "{what}, the run t = {} to {} s",
        short(start),
        short(stop)
    ))
}

/// The manifest text of FMI-LS-REF for files given as (source, role, description).
pub fn ls_manifest(files: &[(&str, &str, &str)]) -> String {
    let escape = |s: &str| quick_xml::escape::escape(s).into_owned();
    let mut xml = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<fmiReferences\n  \
         xmlns:fmi-ls=\"http://fmi-standard.org/fmi-ls-manifest\"\n  \
         fmi-ls:fmi-ls-name=\"org.fmi-standard.fmi-ls-ref\"\n  \
         fmi-ls:fmi-ls-version=\"1.0.0-alpha.1\"\n  \
         fmi-ls:fmi-ls-description=\"Reference results of the default experiment\">\n",
    );
    for (source, role, description) in files {
        xml.push_str(&format!(
            "  <Related type=\"text/csv\" source=\"{}\" role=\"{}\" description=\"{}\"/>\n",
            escape(source),
            escape(role),
            escape(description)
        ));
    }
    xml.push_str("</fmiReferences>\n");
    xml
}

/// Experiment settings of a check (each overrides the model's default experiment).
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExperimentSettings {
    /// Start time [s].
    pub start_time: Option<f64>,
    /// Stop time [s].
    pub stop_time: Option<f64>,
    /// Communication step size [s].
    pub step_size: Option<f64>,
    /// Interval between result rows [s].
    pub output_interval: Option<f64>,
    /// Relative tolerance passed to the FMU.
    pub tolerance: Option<f64>,
}

/// A check case's settings file (`check.json`).
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CheckSettings {
    /// JSON Schema reference (ignored).
    #[serde(rename = "$schema")]
    pub schema: Option<String>,
    /// What the case checks, for people.
    pub description: Option<String>,
    /// The model: an FMU, a system file (.json) or an SSP, relative to the settings file.
    pub model: Option<PathBuf>,
    /// The reference CSV, relative to the settings file.
    pub reference: Option<PathBuf>,
    /// The input CSV (single FMUs), relative to the settings file.
    pub input: Option<PathBuf>,
    /// Experiment overrides.
    #[serde(default)]
    pub experiment: ExperimentSettings,
    /// Start values and parameters (systems: `component.name`); arrays as JSON arrays.
    #[serde(default)]
    pub start_values: BTreeMap<String, serde_json::Value>,
    /// Tolerances of every signal.
    #[serde(default)]
    pub tolerance: ToleranceSettings,
    /// Per-signal tolerances, `discrete` and `ignore`.
    #[serde(default)]
    pub signals: BTreeMap<String, SignalSettings>,
    /// Where to compare: `"reference"` (its time points, the default) or `"all"` (every
    /// result row and every reference row).
    pub compare_at: Option<CompareAt>,
}

impl CheckSettings {
    /// Read a settings file; relative paths in it are made relative to its folder.
    pub fn read(path: &Path) -> Result<CheckSettings> {
        let text = crate::fs_checks::read_to_string(path, "check settings")?;
        let mut settings: CheckSettings = serde_json::from_str(&text).map_err(|e| {
            Error::Usage(format!(
                "{}:{}:{}: {e}",
                path.display(),
                e.line(),
                e.column()
            ))
        })?;
        let origin = path.display().to_string();
        settings.tolerance.validate(&origin)?;
        for (name, signal) in &settings.signals {
            signal
                .tolerance
                .validate(&format!("{origin}: signal \"{name}\""))?;
        }
        let dir = path.parent().unwrap_or(Path::new("."));
        for file in [
            &mut settings.model,
            &mut settings.reference,
            &mut settings.input,
        ]
        .into_iter()
        .flatten()
        {
            if file.is_relative() {
                *file = dir.join(&*file);
            }
        }
        Ok(settings)
    }
}

/// What kind of model a case runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelKind {
    /// One FMU (.fmu or unpacked folder).
    Fmu,
    /// cosimo's system file (.json).
    System,
    /// An SSP (.ssp / .ssd, or a folder with SystemStructure.ssd).
    Ssp,
}

impl ModelKind {
    /// The kind of model at `path`, by its extension (a folder with modelDescription.xml is an
    /// FMU).
    pub fn of(path: &Path) -> Option<ModelKind> {
        if path.is_dir() {
            if path.join("modelDescription.xml").is_file() {
                return Some(ModelKind::Fmu);
            }
            return path
                .join("SystemStructure.ssd")
                .is_file()
                .then_some(ModelKind::Ssp);
        }
        let extension = path.extension()?.to_str()?.to_ascii_lowercase();
        match extension.as_str() {
            "fmu" => Some(ModelKind::Fmu),
            "json" => Some(ModelKind::System),
            "ssp" | "ssd" => Some(ModelKind::Ssp),
            _ => None,
        }
    }
}

/// One check: a model, its reference (None: the FMU's own FMI-LS-REF) and settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// Name in reports (the case folder's name, or the model's file name).
    pub name: String,
    /// The model file.
    pub model: PathBuf,
    /// What the model is.
    pub kind: ModelKind,
    /// The reference CSV; None to use the FMU's FMI-LS-REF.
    pub reference: Option<PathBuf>,
    /// The input CSV.
    pub input: Option<PathBuf>,
    /// Settings (from `check.json`, if any).
    pub settings: CheckSettings,
    /// The settings file (the case folder's `check.json`, or `--settings`).
    pub settings_file: Option<PathBuf>,
    /// The case folder (None: a model given directly).
    pub folder: Option<PathBuf>,
}

impl Case {
    /// A case for a model given directly, named after its file.
    pub fn for_model(model: &Path) -> Result<Case> {
        let kind = ModelKind::of(model).ok_or_else(|| {
            Error::Usage(format!(
                "{}: not an FMU (.fmu or unpacked folder), a system file (.json), an SSP (.ssp) or a folder of check cases",
                model.display()
            ))
        })?;
        let name = model
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| model.display().to_string());
        Ok(Case {
            name,
            model: model.to_path_buf(),
            kind,
            reference: None,
            input: None,
            settings: CheckSettings::default(),
            settings_file: None,
            folder: None,
        })
    }
}

/// The cases under `path`: the folder itself if it is a case, else every case folder below
/// it (a folder holding `check.json`, or exactly one model), sorted by path.
pub fn discover(path: &Path) -> Result<Vec<Case>> {
    if !path.is_dir() {
        return Err(Error::Usage(format!(
            "{}: no such folder of check cases",
            path.display()
        )));
    }
    let mut cases = Vec::new();
    collect(path, path, &mut cases)?;
    if cases.is_empty() {
        return Err(Error::Usage(format!(
            "{}: no check cases found (a case is a folder with a {SETTINGS_FILE}, or with one model (.fmu, system .json or .ssp) and a reference CSV)",
            path.display()
        )));
    }
    Ok(cases)
}

fn sorted_entries(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    Ok(entries)
}

fn collect(top: &Path, dir: &Path, cases: &mut Vec<Case>) -> Result<()> {
    if let Some(case) = case_in(top, dir)? {
        cases.push(case);
        return Ok(());
    }
    for entry in sorted_entries(dir)? {
        if entry.is_dir() && ModelKind::of(&entry).is_none() {
            collect(top, &entry, cases)?;
        }
    }
    Ok(())
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The case in `dir`, if `dir` is one.
fn case_in(top: &Path, dir: &Path) -> Result<Option<Case>> {
    let settings_path = dir.join(SETTINGS_FILE);
    let has_settings = settings_path.is_file();
    let entries = sorted_entries(dir)?;
    let models: Vec<&PathBuf> = entries
        .iter()
        .filter(|p| {
            file_name(p) != SETTINGS_FILE
                && !super::provenance::is_provenance(p)
                && ModelKind::of(p).is_some()
        })
        .collect();
    if !has_settings && models.len() != 1 {
        return Ok(None);
    }
    let settings = if has_settings {
        CheckSettings::read(&settings_path)?
    } else {
        CheckSettings::default()
    };
    let name = dir
        .strip_prefix(top)
        .ok()
        .filter(|p| !p.as_os_str().is_empty())
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| file_name(dir));
    let model = match (&settings.model, models.as_slice()) {
        (Some(model), _) => model.clone(),
        (None, [model]) => (*model).clone(),
        (None, []) => {
            return Err(Error::Usage(format!(
                "{}: no model; put one FMU, system file or SSP in the case folder, or name it with \"model\"",
                settings_path.display()
            )))
        }
        (None, _) => {
            return Err(Error::Usage(format!(
                "{}: several models in the case folder; name the one to check with \"model\" in {SETTINGS_FILE}",
                dir.display()
            )))
        }
    };
    let kind = ModelKind::of(&model).ok_or_else(|| {
        Error::Usage(format!(
            "{}: model \"{}\" is not an FMU, a system file (.json) or an SSP (.ssp), or does not exist",
            dir.display(),
            model.display()
        ))
    })?;
    let csvs: Vec<&PathBuf> = entries
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e.eq_ignore_ascii_case("csv")))
        .collect();
    let is_input = |p: &PathBuf| {
        let n = file_name(p).to_ascii_lowercase();
        n == "input.csv" || n.ends_with("_in.csv") || n.ends_with("_input.csv")
    };
    let input = settings
        .input
        .clone()
        .or_else(|| csvs.iter().find(|p| is_input(p)).map(|p| (*p).clone()));
    let reference = settings.reference.clone().or_else(|| {
        let candidates: Vec<&&PathBuf> = csvs
            .iter()
            .filter(|p| !is_input(p) && !file_name(p).ends_with("_out.csv"))
            .collect();
        candidates
            .iter()
            .find(|p| {
                let n = file_name(p).to_ascii_lowercase();
                n == "reference.csv" || n.ends_with("_ref.csv")
            })
            .or_else(|| (candidates.len() == 1).then(|| &candidates[0]))
            .map(|p| (**p).clone())
    });
    Ok(Some(Case {
        name,
        model,
        kind,
        reference,
        input,
        settings,
        settings_file: has_settings.then_some(settings_path),
        folder: Some(dir.to_path_buf()),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join(LS_REF_FOLDER);
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join("M_ref.csv"), "time,x\n0,1\n").unwrap();
        std::fs::write(folder.join("M_in.csv"), "time,u\n0,1\n").unwrap();
        std::fs::write(
            folder.join(LS_REF_MANIFEST),
            ls_manifest(&[
                ("M_ref.csv", "result", "out & about"),
                ("M_in.csv", "input", "in"),
            ]),
        )
        .unwrap();
        let r = ls_reference(dir.path()).unwrap().unwrap();
        assert_eq!(r.results, [folder.join("M_ref.csv")]);
        assert_eq!(r.inputs, [folder.join("M_in.csv")]);
        assert_eq!(ls_reference(&folder).unwrap(), None);
    }
}
