//! `ssc:Unit` definitions (SI base-unit exponents, factor, offset) and conversions between them.

use std::collections::HashMap;

use super::xml::Element;

/// A unit's SI exponents and `SI value = factor * value + offset`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct SspUnit {
    exponents: [i32; 8],
    factor: f64,
    offset: f64,
}

const BASE_NAMES: [&str; 8] = ["kg", "m", "s", "A", "K", "mol", "cd", "rad"];

/// Read the `ssc:Unit` children of a `Units` element into `units` (a unit without `BaseUnit`
/// is dimensionless with factor 1). Malformed numbers: `(line, message)`.
pub(super) fn read_units(
    element: &Element,
    units: &mut HashMap<String, SspUnit>,
) -> Result<(), (usize, String)> {
    for unit in element.children_named("Unit") {
        let name = unit.attr("name").ok_or_else(|| {
            (
                unit.line,
                "<ssc:Unit> lacks the attribute \"name\"; name the unit".to_string(),
            )
        })?;
        let mut parsed = SspUnit {
            exponents: [0; 8],
            factor: 1.0,
            offset: 0.0,
        };
        if let Some(base) = unit.child("BaseUnit") {
            for (i, key) in BASE_NAMES.iter().enumerate() {
                if let Some(text) = base.attr(key) {
                    parsed.exponents[i] = text.trim().parse().map_err(|_| {
                        (
                            base.line,
                            format!(
                                "<ssc:BaseUnit> of unit \"{name}\": {key}=\"{text}\" is not an \
                                 integer exponent"
                            ),
                        )
                    })?;
                }
            }
            for (key, slot) in [
                ("factor", &mut parsed.factor),
                ("offset", &mut parsed.offset),
            ] {
                if let Some(text) = base.attr(key) {
                    *slot = text
                        .trim()
                        .parse::<f64>()
                        .ok()
                        .filter(|v| v.is_finite())
                        .ok_or_else(|| {
                            (
                                base.line,
                                format!(
                                    "<ssc:BaseUnit> of unit \"{name}\": {key}=\"{text}\" is not \
                                     a finite number"
                                ),
                            )
                        })?;
                }
            }
            if parsed.factor == 0.0 {
                return Err((
                    base.line,
                    format!("<ssc:BaseUnit> of unit \"{name}\": factor must not be 0"),
                ));
            }
        }
        units.insert(name.to_string(), parsed);
    }
    Ok(())
}

/// How a value in unit `from` reads in unit `to`.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Conversion {
    /// `to = scale * from + shift` (identity for the same unit).
    Affine(f64, f64),
    /// A unit is not defined: the value passes unchanged (the caller warns).
    Unknown(String),
}

/// Convert from unit `from` to unit `to`; an error text when the dimensions differ.
pub(super) fn convert(
    units: &HashMap<String, SspUnit>,
    from: &str,
    to: &str,
) -> Result<Conversion, String> {
    if from == to {
        return Ok(Conversion::Affine(1.0, 0.0));
    }
    let (Some(a), Some(b)) = (units.get(from), units.get(to)) else {
        let missing = if units.contains_key(from) { to } else { from };
        return Ok(Conversion::Unknown(missing.to_string()));
    };
    if a.exponents != b.exponents {
        return Err(format!(
            "unit \"{from}\" ({}) cannot be converted to unit \"{to}\" ({}): the dimensions \
             differ",
            dimension(a),
            dimension(b)
        ));
    }
    // SI = fa * x + oa = fb * y + ob  =>  y = (fa / fb) x + (oa - ob) / fb
    Ok(Conversion::Affine(
        a.factor / b.factor,
        (a.offset - b.offset) / b.factor,
    ))
}

/// The SI dimension as text, e.g. `kg.m.s-2`; `1` when dimensionless.
fn dimension(u: &SspUnit) -> String {
    let parts: Vec<String> = BASE_NAMES
        .iter()
        .zip(u.exponents)
        .filter(|&(_, e)| e != 0)
        .map(|(n, e)| {
            if e == 1 {
                n.to_string()
            } else {
                format!("{n}{e}")
            }
        })
        .collect();
    if parts.is_empty() {
        "1".to_string()
    } else {
        parts.join(".")
    }
}
