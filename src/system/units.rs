//! Unit conversion between the declared units of two connected variables.
//!
//! A unit's `BaseUnit` gives its SI exponents and `SI value = factor * value + offset`. Two units
//! convert into each other when their exponents agree. A unit without a `BaseUnit` (or not found
//! in `UnitDefinitions`) cannot be compared with a differently named one: the value is passed
//! unchanged and a warning is logged, since only units of the same name are known to agree.

use crate::fmu::description::{BaseUnit, ModelDescription, Variable};

/// `(scale, shift)` with `to_value = scale * from_value + shift`, converting the unit of `from`
/// into the unit of `to`. Identity when either variable has no unit or both name the same unit;
/// an error naming both units when their dimensions differ.
pub fn conversion(
    from: (&ModelDescription, &Variable),
    to: (&ModelDescription, &Variable),
) -> Result<(f64, f64), String> {
    let (Some(from_unit), Some(to_unit)) = (from.1.unit.as_deref(), to.1.unit.as_deref()) else {
        return Ok((1.0, 0.0));
    };
    if from_unit == to_unit {
        return Ok((1.0, 0.0));
    }
    let base = |md: &ModelDescription, name: &str| {
        md.units
            .iter()
            .find(|u| u.name == name)
            .and_then(|u| u.base_unit.clone())
    };
    let (Some(a), Some(b)) = (base(from.0, from_unit), base(to.0, to_unit)) else {
        log::warn!(
            "cannot convert unit \"{from_unit}\" of {} ({}) to unit \"{to_unit}\" of {} ({}): \
             a unit without BaseUnit can only be matched by name; the value is passed unchanged",
            from.1.name,
            from.0.model_name,
            to.1.name,
            to.0.model_name
        );
        return Ok((1.0, 0.0));
    };
    if exponents(&a) != exponents(&b) {
        return Err(format!(
            "unit \"{from_unit}\" of {} ({}) and unit \"{to_unit}\" of {} ({}) have different \
             dimensions ({} vs {}); connect variables of compatible units",
            from.1.name,
            from.0.model_name,
            to.1.name,
            to.0.model_name,
            dimension(&a),
            dimension(&b)
        ));
    }
    if b.factor == 0.0 || !b.factor.is_finite() || !a.factor.is_finite() {
        return Err(format!(
            "unit \"{to_unit}\" of {} ({}) or \"{from_unit}\" of {} ({}) has an unusable \
             BaseUnit factor",
            to.1.name, to.0.model_name, from.1.name, from.0.model_name
        ));
    }
    // SI = fa * x + oa = fb * y + ob  =>  y = (fa / fb) x + (oa - ob) / fb
    Ok((a.factor / b.factor, (a.offset - b.offset) / b.factor))
}

fn exponents(b: &BaseUnit) -> [i32; 8] {
    [b.kg, b.m, b.s, b.a, b.k, b.mol, b.cd, b.rad]
}

/// The SI dimension as text, e.g. `kg.m.s-2`; `1` when dimensionless.
fn dimension(b: &BaseUnit) -> String {
    let names = ["kg", "m", "s", "A", "K", "mol", "cd", "rad"];
    let parts: Vec<String> = names
        .iter()
        .zip(exponents(b))
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
