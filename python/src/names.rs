//! The library's messages name options as the command line spells them (`--start-value mass:
//! ...`); a Python caller passed keyword arguments, so the messages it gets name those
//! (`start_values["mass"]: ...`).

/// Which Python function the message goes back to: their arguments differ (`simulate` takes
/// `input`, `check` takes `input_file`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Caller {
    /// `simulate`, `Session`, `System.simulate`.
    Simulate,
    /// `check`.
    Check,
}

/// Options whose Python argument has another name than the option with underscores.
fn renamed(option: &str, caller: Caller) -> Option<&'static str> {
    Some(match (option, caller) {
        ("start-value", _) => "start_values",
        ("output-variable", _) => "output",
        ("input-file", Caller::Simulate) => "input",
        ("connect", _) => "connections",
        ("order", _) => "extrapolation_order",
        _ => return None,
    })
}

/// Options that are True / False arguments in Python: named as `name=True`.
const FLAGS: &[&str] = &[
    "parallel",
    "adaptive",
    "fixed-order",
    "isolate",
    "event-mode",
    "allow-non-finite",
    "debug-logging",
    "log-fmi-calls",
];

/// `message` with every command-line option it names (`--name`, known to the caller) as the
/// Python argument: `--start-value X` as `start_values["X"]`, a flag as `name=True`, any other
/// option as its name with underscores.
pub(crate) fn in_python_terms(message: &str, caller: Caller, known: &[&str]) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find("--") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let length = after
            .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'))
            .unwrap_or(after.len());
        let option = after[..length].trim_end_matches('-');
        let python = renamed(option, caller).map(str::to_owned).or_else(|| {
            let snake = option.replace('-', "_");
            known.contains(&snake.as_str()).then_some(snake)
        });
        // Not an option (`--` in an FMU's message) or one Python does not have: as it was.
        let Some(python) = python.filter(|_| at == 0 || !rest[..at].ends_with('-')) else {
            out.push_str("--");
            rest = after;
            continue;
        };
        rest = &after[option.len()..];
        if python == "start_values" {
            // `--start-value mass: ...` (a name) or `--start-value "mass=2": ...`.
            if let Some(name) = rest.strip_prefix(' ').and_then(|r| {
                let end = r.find([':', ' ', ',']).unwrap_or(r.len());
                let name = &r[..end];
                (!name.is_empty() && !name.starts_with('"')).then_some(name)
            }) {
                out.push_str(&format!("start_values[\"{name}\"]"));
                rest = &rest[1 + name.len()..];
                continue;
            }
        }
        out.push_str(&python);
        if FLAGS.contains(&option) {
            out.push_str("=True");
        }
    }
    out.push_str(rest);
    out
}
