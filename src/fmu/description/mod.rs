//! `modelDescription.xml` of FMI 2.0 and 3.0 -> one version-neutral [`ModelDescription`].

mod model;
mod parse;
mod xml;

use std::path::Path;

use crate::{Error, Result};

pub use model::*;

/// Parse a modelDescription.xml file. `path` is used in error messages.
pub fn from_file(path: &Path) -> Result<ModelDescription> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let text = decode(&bytes).map_err(|(line, message)| Error::ModelDescription {
        path: path.to_path_buf(),
        line,
        message,
    })?;
    from_str(&text, path)
}

/// Parse XML text; `origin` names the file in error messages.
pub fn from_str(xml: &str, origin: &Path) -> Result<ModelDescription> {
    let xml = xml.strip_prefix('\u{feff}').unwrap_or(xml);
    parse::parse(xml).map_err(|f| Error::ModelDescription {
        path: origin.to_path_buf(),
        line: f.line,
        message: f.message,
    })
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
