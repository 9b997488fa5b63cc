//! The `"stability"` section of a JSON system file: what the stability analyser needs to know
//! about a system beyond how it runs.
//!
//! ```json
//! "stability": {
//!   "states": [
//!     { "variable": "mass1.x", "start": "mass1.x0" },
//!     { "variable": "mass1.v", "start": "mass1.v0" }
//!   ],
//!   "parameters": { "cc": ["mass1.cc", "mass2.cc"] }
//! }
//! ```
//!
//! `states` are the FMU states of the system's state vector, `component.variable`, each with
//! the start value or parameter that starts the FMU from it (`start`; default: the variable
//! itself, for FMUs that take a state's start value). `parameters` (optional) names parameters
//! that drive several FMU parameters at once, for a map over a physical quantity that appears
//! in more than one component. The system reader (`system::config`) accepts the section and
//! leaves it to this reader, so one file holds the system and its study.

use std::path::Path;

use serde::Deserialize;

use crate::system::{config, System};
use crate::{Error, Result};

/// One FMU state of the state vector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateVariable {
    /// The state, `component.variable` (a Float64 the FMU computes).
    pub variable: String,
    /// The start value or parameter that starts the FMU from a given value of the state,
    /// `component.variable`.
    pub start: String,
}

/// A named parameter of the study that sets one or more FMU parameters to the same value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StudyParameter {
    /// The name (without '.', so that it is never mistaken for `component.variable`).
    pub name: String,
    /// The FMU parameters it sets, `component.variable`.
    pub targets: Vec<String>,
}

/// The stability study of a system: its state vector and named parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Study {
    pub states: Vec<StateVariable>,
    pub parameters: Vec<StudyParameter>,
}

impl Study {
    /// The named parameter `name`, if the study declares it.
    pub fn parameter(&self, name: &str) -> Option<&StudyParameter> {
        self.parameters.iter().find(|p| p.name == name)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StudyEntry {
    #[serde(rename = "description")]
    _description: Option<String>,
    states: Vec<StateEntry>,
    #[serde(default)]
    parameters: serde_json::Map<String, serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StateEntry {
    variable: String,
    start: Option<String>,
}

/// Read a JSON system file and its `"stability"` section.
pub fn read(path: &Path) -> Result<(System, Study)> {
    let text = crate::fs_checks::read_to_string(path, "a system file")?;
    from_str(&text, path)
}

/// Parse the text of a JSON system file and its `"stability"` section; `path` names the file in
/// messages, and relative FMU paths are relative to its folder.
pub fn from_str(text: &str, path: &Path) -> Result<(System, Study)> {
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("ssp") || e.eq_ignore_ascii_case("ssd"))
    {
        return Err(Error::Usage(format!(
            "{}: the stability analysis reads cosimo's JSON system files, whose \"stability\" section describes the state vector; write the system as JSON",
            path.display()
        )));
    }
    let system = config::from_str(text, path)?;
    let fail = |message: String| Error::Usage(format!("{}: {message}", path.display()));
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut file: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(text).map_err(|e| fail(e.to_string()))?;
    let section = file.remove("stability").ok_or_else(|| {
        fail(
            "no \"stability\" section: list the FMU states and the parameters that start them, e.g. \"stability\": {\"states\": [{\"variable\": \"mass1.x\", \"start\": \"mass1.x0\"}]}"
                .into(),
        )
    })?;
    let entry: StudyEntry =
        serde_json::from_value(section).map_err(|e| fail(format!("stability: {e}")))?;
    let study = entry.into_study().map_err(fail)?;
    Ok((system, study))
}

/// Whether `text` reads as `component.variable`.
fn is_endpoint(text: &str) -> bool {
    text.split_once('.')
        .is_some_and(|(c, v)| !c.is_empty() && !v.is_empty())
}

impl StudyEntry {
    fn into_study(self) -> std::result::Result<Study, String> {
        if self.states.is_empty() {
            return Err("stability.states is empty: list the FMU states of the system".into());
        }
        let mut states = Vec::with_capacity(self.states.len());
        for (i, s) in self.states.into_iter().enumerate() {
            let start = s.start.unwrap_or_else(|| s.variable.clone());
            for (key, text) in [("variable", &s.variable), ("start", &start)] {
                if !is_endpoint(text) {
                    return Err(format!(
                        "stability.states[{i}].{key}: \"{text}\" is not component.variable"
                    ));
                }
            }
            if let Some(first) = states
                .iter()
                .position(|x: &StateVariable| x.variable == s.variable)
            {
                return Err(format!(
                    "stability.states[{i}]: {} is already stability.states[{first}]",
                    s.variable
                ));
            }
            states.push(StateVariable {
                variable: s.variable,
                start,
            });
        }
        let mut parameters = Vec::with_capacity(self.parameters.len());
        for (name, targets) in self.parameters {
            let at = format!("stability.parameters.{name}");
            if name.is_empty() || name.contains('.') {
                return Err(format!(
                    "{at}: a parameter name must be non-empty and without '.' (component.variable names an FMU's own parameter)"
                ));
            }
            let targets: Vec<String> = serde_json::from_value(targets).map_err(|_| {
                format!("{at}: expected a list of component.variable, e.g. [\"mass1.c\"]")
            })?;
            if targets.is_empty() {
                return Err(format!("{at}: the list of parameters it sets is empty"));
            }
            if let Some(bad) = targets.iter().find(|t| !is_endpoint(t)) {
                return Err(format!("{at}: \"{bad}\" is not component.variable"));
            }
            parameters.push(StudyParameter { name, targets });
        }
        Ok(Study { states, parameters })
    }
}
