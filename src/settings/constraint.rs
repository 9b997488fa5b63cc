//! Constraint coupling (Meyer et al. 2018): interface points, constraint equations, the forces
//! the multipliers drive, and the method.

/// One interface point: outputs on position, velocity and acceleration level (the acceleration
/// with direct feedthrough from the forces).
#[derive(Debug, Clone, PartialEq)]
pub struct InterfacePoint {
    pub position: String,
    pub velocity: String,
    pub acceleration: String,
}

/// A force input driven by the multipliers: `input = sum (coefficient * lambda_equation)`.
#[derive(Debug, Clone, PartialEq)]
pub struct DrivenForce {
    pub input: String,
    pub terms: Vec<(f64, usize)>,
}

/// How the constraints are enforced.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ConstraintMethod {
    /// The index-1 approach with multiplier polynomials of order k = 2 or 3.
    Index1 { order: u8, newton_iterations: u32 },
    /// Baumgarte stabilisation at macro points; `corrector` repeats each step once.
    Baumgarte {
        alpha: f64,
        beta: f64,
        corrector: bool,
    },
}

/// Constraint coupling of a system.
#[derive(Debug, Clone, PartialEq)]
pub struct ConstraintCoupling {
    pub points: Vec<InterfacePoint>,
    /// Per equation: (coefficient, point index).
    pub equations: Vec<Vec<(f64, usize)>>,
    pub forces: Vec<DrivenForce>,
    pub method: ConstraintMethod,
}

/// The method's settings as a reader found them (`None`: not given), before
/// [`MethodSpec::build`] checks that each one belongs to the method chosen.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MethodSpec {
    /// `index1` (the default) or `baumgarte`.
    pub method: Option<String>,
    pub order: Option<u8>,
    pub newton_iterations: Option<u32>,
    pub alpha: Option<f64>,
    pub beta: Option<f64>,
    pub corrector: Option<bool>,
}

impl MethodSpec {
    /// The method, refusing a setting of the other method (it would be ignored) and values out
    /// of range; `name` spells a setting as the reader does (`order` -> `constraints.order`).
    pub fn build(&self, name: &dyn Fn(&str) -> String) -> Result<ConstraintMethod, String> {
        let method = self.method.as_deref().unwrap_or("index1");
        let foreign = |given: bool, setting: &str, belongs: &str| {
            if given {
                Err(format!(
                    "{} belongs to the {belongs} method, but {} is {method}: remove it, or choose that method",
                    name(setting),
                    name("method")
                ))
            } else {
                Ok(())
            }
        };
        match method {
            "index1" => {
                foreign(self.alpha.is_some(), "alpha", "baumgarte")?;
                foreign(self.beta.is_some(), "beta", "baumgarte")?;
                foreign(self.corrector.is_some(), "corrector", "baumgarte")?;
                let order = self.order.unwrap_or(3);
                if order != 2 && order != 3 {
                    return Err(format!(
                        "{} is {order}; the index-1 method uses 2 (quadratic) or 3 (cubic)",
                        name("order")
                    ));
                }
                let newton_iterations = self.newton_iterations.unwrap_or(1);
                if newton_iterations < 1 {
                    return Err(format!(
                        "{} is 0; the index-1 corrector takes at least 1 Newton iteration per macro step",
                        name("newtonIterations")
                    ));
                }
                Ok(ConstraintMethod::Index1 {
                    order,
                    newton_iterations,
                })
            }
            "baumgarte" => {
                foreign(self.order.is_some(), "order", "index1")?;
                foreign(
                    self.newton_iterations.is_some(),
                    "newtonIterations",
                    "index1",
                )?;
                let gain = |setting: &str, value: Option<f64>| {
                    match value {
                    None => Ok(10.0),
                    Some(v) if v >= 0.0 && v.is_finite() => Ok(v),
                    Some(v) => Err(format!(
                        "{} is {v}; the Baumgarte gains of g'' + 2 alpha g' + beta^2 g = 0 are finite numbers >= 0 (a negative alpha lets the constraint drift grow)",
                        name(setting)
                    )),
                }
                };
                Ok(ConstraintMethod::Baumgarte {
                    alpha: gain("alpha", self.alpha)?,
                    beta: gain("beta", self.beta)?,
                    corrector: self.corrector.unwrap_or(false),
                })
            }
            other => Err(format!(
                "{} \"{other}\": expected index1 or baumgarte",
                name("method")
            )),
        }
    }
}
