//! One option vocabulary across the subcommands (docs/vocabulary.md): the spellings that still
//! work for one release with a note, the command-line mistakes clap cannot explain, and
//! negative numbers wherever an option takes a value.

use std::ffi::OsString;
use std::path::Path;

use clap::error::{ContextKind, ContextValue, ErrorKind};

/// An old spelling that still works (as a hidden clap alias of `new`) until the next release.
pub(crate) struct Deprecated {
    /// The subcommand.
    pub(crate) command: &'static str,
    /// The old spelling.
    pub(crate) old: &'static str,
    /// The spelling that replaces it, as the note shows it.
    pub(crate) new: &'static str,
}

/// Every old spelling (docs/vocabulary.md lists them too). `check --json FILE` is not here:
/// it changed shape (a flag now), see [`rewrite_check_json`].
pub(crate) const DEPRECATED: &[Deprecated] = &[
    Deprecated {
        command: "run",
        old: "--output-file",
        new: "-o/--output",
    },
    Deprecated {
        command: "run",
        old: "--summary-json",
        new: "--json-file",
    },
    Deprecated {
        command: "check",
        old: "--rel-tol",
        new: "--rtol",
    },
    Deprecated {
        command: "check",
        old: "--abs-tol",
        new: "--atol",
    },
    Deprecated {
        command: "check",
        old: "--results",
        new: "-o/--output",
    },
    Deprecated {
        command: "stability",
        old: "--max-step",
        new: "--max-stable-step",
    },
    Deprecated {
        command: "sweep",
        old: "--output-dir",
        new: "-o/--output",
    },
];

/// The command line made ready for clap: old shapes of options rewritten to today's, and the
/// deprecation notes to print once it parsed. An error is a mistake clap would misread.
pub(crate) fn prepare(args: Vec<OsString>) -> Result<(Vec<OsString>, Vec<String>), String> {
    let Some(command) = args.get(1).and_then(|a| a.to_str()).map(str::to_owned) else {
        return Ok((args, Vec::new()));
    };
    let mut notes = Vec::new();
    let args = if command == "check" {
        rewrite_check_json(args, &mut notes)
    } else {
        args
    };
    let options = options_of(&args);
    for deprecated in DEPRECATED.iter().filter(|d| d.command == command) {
        let used = options.iter().any(|o| {
            *o == deprecated.old
                || o.strip_prefix(deprecated.old)
                    .is_some_and(|rest| rest.starts_with('='))
        });
        if used {
            notes.push(note(&command, deprecated.old, deprecated.new));
        }
    }
    if command == "run" || command == "check" {
        refuse_split_start_value(&options)?;
    }
    Ok((args, notes))
}

/// The deprecation note of `old`.
fn note(command: &str, old: &str, new: &str) -> String {
    format!(
        "note: `cosimo {command} {old}` is now spelled {new}; the old spelling works until the next release"
    )
}

/// The words of the subcommand's command line, up to `--` (after which every word is a value).
fn options_of(args: &[OsString]) -> Vec<String> {
    args.iter()
        .skip(2)
        .map(|a| a.to_string_lossy().into_owned())
        .take_while(|a| a != "--")
        .collect()
}

/// `check --json` was an option taking a file (or `-` for stdout) and is a flag now, with
/// `--json-file FILE` for the file: `--json=FILE`, `--json -` and `--json REPORT.json` (a
/// word that is no check target: a .json file that does not exist yet, or a report an earlier
/// check wrote) keep their meaning for one release, with a note.
fn rewrite_check_json(args: Vec<OsString>, notes: &mut Vec<String>) -> Vec<OsString> {
    let mut out = Vec::with_capacity(args.len());
    let mut words = args.into_iter().enumerate().peekable();
    let mut ended = false;
    while let Some((i, word)) = words.next() {
        let text = word.to_string_lossy().into_owned();
        if ended || i < 2 {
            out.push(word);
            continue;
        }
        if text == "--" {
            ended = true;
            out.push(word);
            continue;
        }
        if let Some(value) = text.strip_prefix("--json=") {
            if value == "-" {
                notes.push(note("check", "--json=-", "--json"));
                out.push("--json".into());
            } else {
                notes.push(note("check", "--json=FILE", "--json-file FILE"));
                out.push("--json-file".into());
                out.push(value.into());
            }
            continue;
        }
        if text != "--json" {
            out.push(word);
            continue;
        }
        let next = words.peek().map(|(_, w)| w.to_string_lossy().into_owned());
        match next {
            Some(value) if value == "-" => {
                words.next();
                notes.push(note("check", "--json -", "--json"));
                out.push("--json".into());
            }
            Some(value) if !value.starts_with('-') && is_report_file(Path::new(&value)) => {
                words.next();
                notes.push(note("check", "--json FILE", "--json-file FILE"));
                out.push("--json-file".into());
                out.push(value.into());
            }
            _ => out.push(word),
        }
    }
    out
}

/// Whether `path`, given right after `check --json`, is where the old spelling wrote the
/// report rather than a model to check: a .json file that does not exist yet, or one that
/// holds a check report.
fn is_report_file(path: &Path) -> bool {
    let is_json = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("json"));
    if !is_json || path.is_dir() {
        return false;
    }
    if !path.exists() {
        return true;
    }
    let Ok(text) = std::fs::read_to_string(path) else {
        return false;
    };
    serde_json::from_str::<serde_json::Value>(&text).is_ok_and(|value| {
        value.get("cosimo").is_some()
            && value.get("cases").is_some()
            && value.get("components").is_none()
    })
}

/// `--start-value m 2` makes `2` a target (a second FMU) and then fails on system syntax:
/// a start value without `=` followed by a word that is no file is this mistake.
fn refuse_split_start_value(options: &[String]) -> Result<(), String> {
    for window in options.windows(3) {
        let [option, name, value] = window else {
            continue;
        };
        if option == "--start-value"
            && !name.contains('=')
            && !value.starts_with('-')
            && !Path::new(value).exists()
        {
            return Err(format!(
                "--start-value {name} {value}: a start value is one word, NAME=VALUE: write --start-value {name}={value}"
            ));
        }
    }
    Ok(())
}

/// Every option that takes a value accepts a negative number (`--start-time -1`): clap would
/// otherwise read `-1` as an option and suggest `-- -1`, which makes it a file name.
pub(crate) fn negative_numbers_everywhere(command: clap::Command) -> clap::Command {
    let subcommands: Vec<String> = command
        .get_subcommands()
        .map(|s| s.get_name().to_owned())
        .collect();
    subcommands.iter().fold(command, |command, name| {
        command.mut_subcommand(name, |sub| {
            sub.mut_args(|arg| {
                if arg.get_action().takes_values() {
                    arg.allow_negative_numbers(true)
                } else {
                    arg
                }
            })
        })
    })
}

/// An option unknown to the subcommand: instead of clap's tip to pass it as a value (`-- --x`,
/// which would make it a file name), say which subcommand has it, or where to look.
pub(crate) fn explain_unknown(
    mut error: clap::Error,
    command: &clap::Command,
    args: &[OsString],
) -> clap::Error {
    if error.kind() != ErrorKind::UnknownArgument {
        return error;
    }
    let Some(ContextValue::String(arg)) = error.get(ContextKind::InvalidArg).cloned() else {
        return error;
    };
    let this = args
        .get(1)
        .and_then(|a| a.to_str())
        .filter(|a| command.find_subcommand(a).is_some())
        .unwrap_or_default();
    let long = arg.split('=').next().unwrap_or(&arg);
    let owners: Vec<String> = command
        .get_subcommands()
        .filter(|sub| sub.get_name() != this && !sub.is_hide_set())
        .filter(|sub| {
            sub.get_arguments().any(|a| {
                a.get_long()
                    .into_iter()
                    .chain(a.get_all_aliases().into_iter().flatten())
                    .any(|name| format!("--{name}") == long)
            })
        })
        .map(|sub| format!("`cosimo {}`", sub.get_name()))
        .collect();
    let mut tip = if owners.is_empty() {
        format!("see `cosimo {this} --help` for its options")
    } else {
        format!(
            "{long} is an option of {}, not of `cosimo {this}` (see `cosimo {this} --help`)",
            owners.join(" and ")
        )
    };
    if this == "check" && STEP_CONTROL.contains(&long) {
        tip.push_str(
            "; check compares with --rtol / --atol, and a system's step-size control takes its \
             tolerances from the system file (experiment.stepControl)",
        );
    }
    error.insert(
        ContextKind::Suggested,
        ContextValue::StyledStrs(vec![tip.into()]),
    );
    error
}

/// `run`'s options of the step-size controller's tolerances, which `check` spells otherwise.
const STEP_CONTROL: &[&str] = &[
    "--atol-position",
    "--atol-velocity",
    "--rtol-coupling",
    "--atol-coupling",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<OsString> {
        line.split_whitespace().map(OsString::from).collect()
    }

    #[test]
    fn old_spellings_get_a_note() {
        let (args, notes) = prepare(words("cosimo run a.fmu --output-file x.csv")).unwrap();
        assert_eq!(args, words("cosimo run a.fmu --output-file x.csv"));
        assert_eq!(notes.len(), 1);
        assert!(notes[0].contains("-o/--output"), "{notes:?}");
        let (_, notes) = prepare(words("cosimo run a.fmu --output-file=x.csv")).unwrap();
        assert_eq!(notes.len(), 1);
        // Only in the command that had it, and not after `--`.
        let (_, notes) = prepare(words("cosimo plot --output-file x.png r.csv")).unwrap();
        assert!(notes.is_empty());
        let (_, notes) = prepare(words("cosimo run -- --output-file")).unwrap();
        assert!(notes.is_empty());
        let (_, notes) = prepare(words("cosimo run a.fmu -o x.csv")).unwrap();
        assert!(notes.is_empty());
    }

    #[test]
    fn check_json_with_a_file_becomes_json_file() {
        let (args, notes) =
            prepare(words("cosimo check --json /nonexistent/report.json cases")).unwrap();
        assert_eq!(
            args,
            words("cosimo check --json-file /nonexistent/report.json cases")
        );
        assert_eq!(notes.len(), 1);
        let (args, _) = prepare(words("cosimo check --json=out.json cases")).unwrap();
        assert_eq!(args, words("cosimo check --json-file out.json cases"));
        let (args, notes) = prepare(words("cosimo check --json - cases")).unwrap();
        assert_eq!(args, words("cosimo check --json cases"));
        assert_eq!(notes.len(), 1);
        // A target after the flag stays a target.
        let (args, notes) = prepare(words("cosimo check --json /nonexistent/a.fmu")).unwrap();
        assert_eq!(args, words("cosimo check --json /nonexistent/a.fmu"));
        assert!(notes.is_empty());
        let dir = tempfile::tempdir().unwrap();
        let system = dir.path().join("system.json");
        std::fs::write(&system, r#"{"components": []}"#).unwrap();
        let line = format!("cosimo check --json {}", system.display());
        assert_eq!(prepare(words(&line)).unwrap().0, words(&line));
        let report = dir.path().join("report.json");
        std::fs::write(&report, r#"{"cosimo": "0.1", "cases": []}"#).unwrap();
        let line = format!("cosimo check --json {} cases", report.display());
        let (args, _) = prepare(words(&line)).unwrap();
        assert_eq!(args[2], "--json-file");
    }

    #[test]
    fn a_start_value_split_in_two_is_refused() {
        let error = prepare(words("cosimo run a.fmu --start-value m 2")).unwrap_err();
        assert!(error.contains("--start-value m=2"), "{error}");
        assert!(prepare(words("cosimo run a.fmu --start-value m=2 b.fmu")).is_ok());
        assert!(prepare(words("cosimo run a.fmu --start-value m --stop-time 2")).is_ok());
    }
}
