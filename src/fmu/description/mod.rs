//! `modelDescription.xml` of FMI 2.0 and 3.0 -> one version-neutral [`ModelDescription`].

mod model;
mod parse;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Mutex;

use crate::{Error, Result};

pub use model::*;

/// Parse a modelDescription.xml file. `path` is used in error and warning messages.
pub fn from_file(path: &Path) -> Result<ModelDescription> {
    from_file_as(path, path)
}

/// Parse the modelDescription.xml file at `path`, naming it `shown_as` in error and warning
/// messages (e.g. `model.fmu/modelDescription.xml` for a file extracted from `model.fmu`).
pub fn from_file_as(path: &Path, shown_as: &Path) -> Result<ModelDescription> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(shown_as, e))?;
    from_bytes(&bytes, shown_as)
}

/// Parse the bytes of a modelDescription.xml file (UTF-8, or declared ISO-8859-1); `origin`
/// names the file in error and warning messages.
pub fn from_bytes(bytes: &[u8], origin: &Path) -> Result<ModelDescription> {
    let text = decode(bytes).map_err(|(line, message)| Error::ModelDescription {
        path: origin.to_path_buf(),
        line,
        message,
    })?;
    from_str(&text, origin)
}

/// Parse XML text; `origin` names the file in error and warning messages.
///
/// What the FMI schema allows but is questionable (an empty unit name, dependency kinds that do
/// not match the dependencies, ...) loads: each such finding is logged as a warning naming the
/// file, the line, the element and the attribute (`cosimo validate` reports them too).
pub fn from_str(xml: &str, origin: &Path) -> Result<ModelDescription> {
    let xml = xml.strip_prefix('\u{feff}').unwrap_or(xml);
    let (description, warnings) = parse::parse(xml).map_err(|f| Error::ModelDescription {
        path: origin.to_path_buf(),
        line: f.line,
        message: f.message,
    })?;
    for w in warnings.into_list() {
        warn_once(format!("{}:{}: {}", origin.display(), w.line, w.message));
    }
    Ok(description)
}

/// Log a warning unless this process logged the same text before (a sweep opens the same FMU
/// for every run; its warnings are said once).
fn warn_once(text: String) {
    // Remember only what is said: a process that logs nothing (a fuzzer, a library user without
    // a logger) would otherwise keep every warning of every file it ever parsed.
    if !log::log_enabled!(log::Level::Warn) {
        return;
    }
    static SAID: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    let first = SAID
        .lock()
        .map(|mut said| said.insert(text.clone()))
        .unwrap_or(true);
    if first {
        log::warn!("{text}");
    }
}

/// The file's text: UTF-8 (with or without a byte-order mark) or declared ISO-8859-1.
fn decode(bytes: &[u8]) -> std::result::Result<String, (usize, String)> {
    match std::str::from_utf8(bytes) {
        Ok(s) => Ok(s.to_string()),
        Err(e) => {
            let head = String::from_utf8_lossy(&bytes[..bytes.len().min(200)]).to_lowercase();
            if head.contains("iso-8859-1") || head.contains("latin1") || head.contains("latin-1") {
                return Ok(bytes.iter().map(|&b| char::from(b)).collect());
            }
            let at = e.valid_up_to();
            let line = bytes[..at].iter().filter(|&&b| b == b'\n').count() + 1;
            Err((
                line,
                format!(
                    "the file is not valid UTF-8 (byte {at}); save it as UTF-8 or declare its \
                     encoding as ISO-8859-1"
                ),
            ))
        }
    }
}
