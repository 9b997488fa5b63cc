//! Resource: the Resource model of the Modelica Reference FMUs. In Initialization Mode it
//! reads `resources/y.txt` through the resource location the importer gave (FMI 2
//! `fmuResourceLocation` URI, FMI 3 `resourcePath`) and outputs the character code of its first
//! character as the Int32 `y` (the packed file holds "a", so y = 97). A missing or empty file
//! is an Error at initialisation, logged with the path.

use fmu_kit::{Context, Experiment, Model, Values, Variable};

/// Character code of the first character of `resources/y.txt`.
pub const Y: u32 = 1;

/// The file read from the resources folder.
pub const FILE: &str = "y.txt";

/// The resource reader.
#[derive(Default)]
pub struct Resource;

impl Model for Resource {
    const NAME: &'static str = "Resource";
    const DESCRIPTION: &'static str =
        "Outputs the character code of the first character of resources/y.txt";
    const EXPERIMENT: Experiment = Experiment {
        start: 0.0,
        stop: 1.0,
        step: 0.1,
    };

    fn variables(&self) -> Vec<Variable> {
        vec![Variable::int32(Y, "y")
            .output()
            .discrete()
            .description("Character code of the first character of resources/y.txt")
            .depends_on(&[])]
    }

    fn initialize(&self, v: &mut Values, cx: &Context) -> Result<(), String> {
        let path = cx.resource(FILE)?;
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read the resource file {}: {e}", path.display()))?;
        let first = text
            .chars()
            .next()
            .ok_or_else(|| format!("the resource file {} is empty", path.display()))?;
        let code = i32::try_from(u32::from(first)).unwrap_or(i32::MAX);
        v.set_i32(Y, code);
        Ok(())
    }

    fn evaluate(&self, _v: &mut Values, _time: f64) -> Result<(), String> {
        Ok(())
    }
}

fmu_kit::export_fmu!(Resource);

#[cfg(test)]
mod tests;
