//! The tolerances of a comparison with a reference (check.json, the command line of
//! `cosimo check`, a study's `check`): every field may be left open and is filled from the
//! defaults where the comparison runs (`results::compare`).

use crate::error::{Error, Result};

/// Tolerance settings where every field may be left open (a check file, the command line).
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct ToleranceSettings {
    /// Relative to |reference value|.
    pub rel: Option<f64>,
    /// Absolute.
    pub abs: Option<f64>,
    /// Relative to the reference's range.
    pub range: Option<f64>,
    /// Time tolerance [s] (default: 1e-3 of the reference's duration).
    pub time: Option<f64>,
}

impl ToleranceSettings {
    /// These settings where given, `base` elsewhere.
    pub fn over(&self, base: &ToleranceSettings) -> ToleranceSettings {
        ToleranceSettings {
            rel: self.rel.or(base.rel),
            abs: self.abs.or(base.abs),
            range: self.range.or(base.range),
            time: self.time.or(base.time),
        }
    }

    /// Check that every given value is finite and not negative; `origin` names the file the
    /// settings come from.
    pub fn validate(&self, origin: &str) -> Result<()> {
        self.validate_named(|name| format!("{origin}: tolerance \"{name}\""))
    }

    /// [`validate`](Self::validate) for the options of `cosimo check` (`--rtol`, `--atol`,
    /// `--range-tol`, `--time-tol`), named as the user gave them.
    pub fn validate_options(&self) -> Result<()> {
        self.validate_named(|name| {
            match name {
                "rel" => "--rtol",
                "abs" => "--atol",
                "range" => "--range-tol",
                _ => "--time-tol",
            }
            .to_owned()
        })
    }

    fn validate_named(&self, named: impl Fn(&str) -> String) -> Result<()> {
        for (name, value) in [
            ("rel", self.rel),
            ("abs", self.abs),
            ("range", self.range),
            ("time", self.time),
        ] {
            if let Some(v) = value {
                if !v.is_finite() || v < 0.0 {
                    return Err(Error::Usage(format!(
                        "{} must be a finite number >= 0, not {}",
                        named(name),
                        crate::numbers::number(v)
                    )));
                }
            }
        }
        Ok(())
    }
}

/// Per-signal settings of a check.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct SignalSettings {
    /// Tolerances of this signal (over the global ones).
    #[serde(flatten)]
    pub tolerance: ToleranceSettings,
    /// Compare exactly (with the time tolerance) instead of with a tube.
    pub discrete: Option<bool>,
    /// Leave this signal out of the comparison.
    #[serde(default)]
    pub ignore: bool,
}
