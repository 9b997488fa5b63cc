//! `--partition FILE`: which MPI rank steps each component, one line per component.
//!
//! ```text
//! # cosimo partition: NAME RANK, every component of the system once
//! mass1 0
//! spring 0
//! mass2 1
//! ```
//!
//! A line is a component's name (as the system names it: flattened SSP names included; it may
//! hold spaces) and, after the last run of spaces or tabs, its rank (0 to K-1 under
//! `mpirun -n K`). Blank lines and lines starting with `#` are skipped. Every component is
//! named exactly once and every rank gets at least one; anything else is refused with the file
//! and line. The file wins over the ranks a system file or an SSP gives.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use crate::system::System;
use crate::{Error, Result};

/// The largest partition file read (a million components with names of 60 characters).
pub const MAX_BYTES: u64 = 64 << 20;

/// Names shown where a message lists components.
const SHOWN: usize = 8;

/// The owner of each component (in system order) as `path` gives it for a run over `ranks`.
pub fn read(path: &Path, system: &System, ranks: usize) -> Result<Vec<usize>> {
    let text = read_text(path)?;
    parse(&text, &path.display().to_string(), system, ranks)
}

/// The text of `path`: a regular file of at most [`MAX_BYTES`] in UTF-8.
fn read_text(path: &Path) -> Result<String> {
    let shown = path.display();
    crate::fs_checks::check_regular(path, "a partition file (--partition)")
        .map_err(|e| Error::Usage(format!("--partition {e}")))?;
    let file = std::fs::File::open(path)
        .map_err(|e| Error::Usage(format!("--partition {shown}: cannot read it: {e}")))?;
    let mut bytes = Vec::new();
    file.take(MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::Usage(format!("--partition {shown}: cannot read it: {e}")))?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(Error::Usage(format!(
            "--partition {shown}: the file is larger than {} MiB; a partition file holds one short line per component",
            MAX_BYTES >> 20
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = 1 + valid.iter().filter(|&&b| b == b'\n').count();
        Error::Usage(format!(
            "--partition {shown}:{line}: the file is not UTF-8 text"
        ))
    })
}

/// The owner of each component as `text` (the file `shown`) gives it.
pub fn parse(text: &str, shown: &str, system: &System, ranks: usize) -> Result<Vec<usize>> {
    let fail = |line: usize, message: String| {
        Error::Usage(format!("--partition {shown}:{line}: {message}"))
    };
    let index: HashMap<&str, usize> = system
        .components
        .iter()
        .enumerate()
        .map(|(i, c)| (c.name.as_str(), i))
        .collect();
    // Per component: its rank and the line that gave it.
    let mut given: Vec<Option<(usize, usize)>> = vec![None; system.components.len()];
    for (k, raw) in text.lines().enumerate() {
        let line = k + 1;
        let content = raw.trim();
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        let Some((name, rank_text)) = content.rsplit_once([' ', '\t']) else {
            return Err(fail(
                line,
                format!("\"{content}\" is not NAME RANK: write one line per component, its name and its MPI rank, e.g. \"{} 0\"", example_name(system)),
            ));
        };
        let name = name.trim();
        let Some(&i) = index.get(name) else {
            return Err(fail(
                line,
                format!(
                    "the system has no component \"{name}\"; its components are {}",
                    listed(system.components.iter().map(|c| c.name.as_str()))
                ),
            ));
        };
        let rank = rank_text.parse::<usize>().map_err(|_| {
            fail(
                line,
                format!(
                    "\"{rank_text}\" is not an MPI rank: give \"{name}\" a rank from 0 to {}",
                    ranks - 1
                ),
            )
        })?;
        if rank >= ranks {
            return Err(fail(
                line,
                format!(
                    "component \"{name}\" is given rank {rank}, but the run has {ranks} MPI ranks (0 to {}): {} the line",
                    ranks - 1,
                    super::more_ranks_or(rank, system.components.len())
                ),
            ));
        }
        if let Some((_, first)) = given[i] {
            return Err(fail(
                line,
                format!(
                    "component \"{name}\" is named again (first on line {first}): name every component once"
                ),
            ));
        }
        given[i] = Some((rank, line));
    }
    let missing: Vec<&str> = system
        .components
        .iter()
        .zip(&given)
        .filter(|(_, g)| g.is_none())
        .map(|(c, _)| c.name.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(Error::Usage(format!(
            "--partition {shown}: {} of the system's components {} no line: name every component once with its rank; missing: {}",
            missing.len(),
            if missing.len() == 1 { "has" } else { "have" },
            listed(missing.iter().copied())
        )));
    }
    let owner: Vec<usize> = given.iter().flatten().map(|&(rank, _)| rank).collect();
    let mut used = vec![false; ranks];
    owner.iter().for_each(|&r| used[r] = true);
    if let Some(idle) = used.iter().position(|u| !u) {
        return Err(Error::Usage(format!(
            "--partition {shown}: no component is given rank {idle}, so MPI rank {idle} would have nothing to do: give it a component or run with fewer ranks"
        )));
    }
    Ok(owner)
}

/// A component name for an example line.
fn example_name(system: &System) -> &str {
    system
        .components
        .first()
        .map_or("component", |c| c.name.as_str())
}

/// Names in quotes, the first few of them.
fn listed<'a>(names: impl ExactSizeIterator<Item = &'a str>) -> String {
    let count = names.len();
    let mut shown: Vec<String> = names.take(SHOWN).map(|n| format!("\"{n}\"")).collect();
    if count > SHOWN {
        shown.push(format!("and {} more", count - SHOWN));
    }
    shown.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::Experiment;
    use crate::system::Component;

    fn system(names: &[&str]) -> System {
        System {
            components: names
                .iter()
                .map(|n| Component {
                    name: n.to_string(),
                    fmu: "x.fmu".into(),
                    start_values: Vec::new(),
                    sub_steps: 1,
                    isolate: None,
                    call_timeout: None,
                    worker_group: None,
                    interface: None,
                    rank: None,
                })
                .collect(),
            connections: Vec::new(),
            experiment: Experiment::default(),
        }
    }

    fn refused(text: &str, ranks: usize) -> String {
        let s = system(&["mass1", "spring", "mass 2"]);
        match parse(text, "p.txt", &s, ranks) {
            Err(Error::Usage(message)) => message,
            other => panic!("expected a refusal of {text:?}, got {other:?}"),
        }
    }

    #[test]
    fn names_and_ranks_by_line() {
        let s = system(&["mass1", "spring", "mass 2"]);
        let text = "# split\n\nspring\t1\n  mass 2   1\nmass1 0\n";
        assert_eq!(parse(text, "p", &s, 2).unwrap(), vec![0, 1, 1]);
    }

    #[test]
    fn hostile_lines_are_refused_with_the_line() {
        let all = "mass1 0\nspring 1\nmass 2 1\n";
        assert!(refused("mass1 0\nspring 1\nmass 2 1\nmass3 0\n", 2)
            .starts_with("--partition p.txt:4: the system has no component \"mass3\""));
        assert!(refused("mass1 0\nspring 1\n", 2).contains("missing: \"mass 2\""));
        assert!(refused(all, 1)
            .starts_with("--partition p.txt:2: component \"spring\" is given rank 1, but the run has 1 MPI ranks"));
        assert!(refused(&format!("{all}spring 0\n"), 2)
            .contains("p.txt:4: component \"spring\" is named again (first on line 2)"));
        assert!(refused(all, 1).contains("(0 to 0): run with mpirun -n 2 or change the line"));
        // Found by fuzzing: the largest rank once overflowed the advice's `rank + 1`.
        let largest = format!("mass1 {}\n", usize::MAX);
        assert!(refused(&largest, 2).contains(&format!(
            "is given rank {}, but the run has 2 MPI ranks (0 to 1): change the line",
            usize::MAX
        )));
        assert!(refused("mass1 -1\n", 2).contains("p.txt:1: \"-1\" is not an MPI rank"));
        assert!(refused("mass1\n", 2).contains("p.txt:1: \"mass1\" is not NAME RANK"));
        assert!(refused("mass1 0\nspring 0\nmass 2 0\n", 2)
            .contains("MPI rank 1 would have nothing to do"));
    }

    #[test]
    fn huge_and_binary_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let s = system(&["a"]);
        let huge = dir.path().join("huge.txt");
        let file = std::fs::File::create(&huge).unwrap();
        file.set_len(MAX_BYTES + 1).unwrap();
        let message = read(&huge, &s, 1).unwrap_err().to_string();
        assert!(message.contains("larger than 64 MiB"), "{message}");
        let binary = dir.path().join("binary.txt");
        std::fs::write(&binary, b"a 0\n\xff\xfe\n").unwrap();
        let message = read(&binary, &s, 1).unwrap_err().to_string();
        assert!(
            message.contains("binary.txt:2: the file is not UTF-8"),
            "{message}"
        );
    }
}
