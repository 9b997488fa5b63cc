//! `cargo xtask quickstart`: the README's first command and its quickstart, run as a newcomer
//! runs them, in a fresh copy of the repository's files (what a clone holds, nothing built by
//! hand): `cargo xtask demo`, then every line of the quickstart block, with `cosimo` installed
//! by the block's own `cargo install` into a folder of the copy, so nothing outside it changes.
//!
//! The copy keeps its `target/` between runs (the first run builds cosimo in release, minutes;
//! later runs only what changed); everything else is copied again, with the files' times kept,
//! so cargo sees unchanged sources as unchanged.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{run, target_dir, workspace_root};

/// The README's markers around the quickstart's shell block.
const BEGIN: &str = "<!-- quickstart:begin -->";
const END: &str = "<!-- quickstart:end -->";

pub fn quickstart() -> Result<(), String> {
    let root = workspace_root();
    let readme = root.join("README.md");
    let text =
        std::fs::read_to_string(&readme).map_err(|e| format!("{}: {e}", readme.display()))?;
    let script = quickstart_block(&text).map_err(|e| format!("{}: {e}", readme.display()))?;

    let base = target_dir().join("quickstart");
    let checkout = base.join("checkout");
    fresh_copy(&root, &checkout)?;
    let install_root = base.join("root");
    let path = std::env::join_paths(
        std::iter::once(install_root.join("bin")).chain(
            std::env::var_os("PATH")
                .iter()
                .flat_map(std::env::split_paths),
        ),
    )
    .map_err(|e| format!("PATH: {e}"))?;

    println!(
        "xtask quickstart: `cargo xtask demo` in {}",
        checkout.display()
    );
    let mut demo = newcomer_shell(&checkout, &install_root, &path);
    demo.args(["-c", "cargo xtask demo"]);
    run(demo)?;

    println!("xtask quickstart: the README's quickstart block");
    let mut block = newcomer_shell(&checkout, &install_root, &path);
    // -x: each command is echoed, so a failure shows which README line broke.
    block.args(["-euxo", "pipefail", "-c", &script]);
    run(block)?;
    println!("xtask quickstart: every command of the quickstart ran");
    Ok(())
}

/// A bash in `checkout` whose environment is a newcomer's: no cargo variables of the xtask run
/// (they would point cargo at this workspace), `cosimo` found where `cargo install` puts it.
fn newcomer_shell(checkout: &Path, install_root: &Path, path: &std::ffi::OsStr) -> Command {
    let mut shell = Command::new("bash");
    shell.current_dir(checkout);
    for (name, _) in std::env::vars_os() {
        let name_text = name.to_string_lossy();
        if name_text.starts_with("CARGO_") && name_text != "CARGO_HOME" || name_text == "RUSTFLAGS"
        {
            shell.env_remove(&name);
        }
    }
    shell.env("CARGO_INSTALL_ROOT", install_root);
    shell.env("PATH", path);
    shell
}

/// The shell lines between the quickstart markers (the one ```sh block there).
fn quickstart_block(readme: &str) -> Result<String, String> {
    let start = readme.find(BEGIN).ok_or(format!("no {BEGIN} marker"))?;
    let rest = &readme[start + BEGIN.len()..];
    let end = rest.find(END).ok_or(format!("no {END} after {BEGIN}"))?;
    let section = &rest[..end];
    let fence = section
        .find("```sh\n")
        .ok_or("no ```sh block between the quickstart markers")?;
    let body = &section[fence + "```sh\n".len()..];
    let close = body
        .find("```")
        .ok_or("the quickstart's ```sh block is not closed")?;
    Ok(body[..close].to_string())
}

/// Copy the repository's files (tracked, and new files git does not ignore) into `checkout`,
/// keeping their modification times; remove everything else there but `target/`.
fn fresh_copy(root: &Path, checkout: &Path) -> Result<(), String> {
    let listed = Command::new("git")
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .current_dir(root)
        .output()
        .map_err(|e| format!("git ls-files: {e}"))?;
    if !listed.status.success() {
        return Err(format!(
            "git ls-files in {}: {}",
            root.display(),
            String::from_utf8_lossy(&listed.stderr)
        ));
    }
    std::fs::create_dir_all(checkout).map_err(|e| format!("{}: {e}", checkout.display()))?;
    for entry in std::fs::read_dir(checkout).map_err(|e| format!("{}: {e}", checkout.display()))? {
        let path = entry
            .map_err(|e| format!("{}: {e}", checkout.display()))?
            .path();
        if path.file_name().is_some_and(|n| n == "target") {
            continue;
        }
        let removed = if path.is_dir() && !path.is_symlink() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        removed.map_err(|e| format!("{}: {e}", path.display()))?;
    }
    for name in listed.stdout.split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let relative = PathBuf::from(String::from_utf8_lossy(name).into_owned());
        let from = root.join(&relative);
        // A tracked file deleted in the working tree is not part of what would be committed.
        let Ok(metadata) = std::fs::symlink_metadata(&from) else {
            continue;
        };
        let to = checkout.join(&relative);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        if metadata.is_symlink() {
            let link = std::fs::read_link(&from).map_err(|e| format!("{}: {e}", from.display()))?;
            std::os::unix::fs::symlink(&link, &to).map_err(|e| format!("{}: {e}", to.display()))?;
            continue;
        }
        std::fs::copy(&from, &to)
            .map_err(|e| format!("{} -> {}: {e}", from.display(), to.display()))?;
        let modified = metadata
            .modified()
            .map_err(|e| format!("{}: {e}", from.display()))?;
        std::fs::File::options()
            .write(true)
            .open(&to)
            .and_then(|file| file.set_modified(modified))
            .map_err(|e| format!("{}: {e}", to.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_block_between_the_markers_is_the_script() {
        let readme = "intro\n<!-- quickstart:begin -->\ntext\n```sh\ncosimo run a.fmu\ncosimo plot b\n```\nmore\n<!-- quickstart:end -->\n```sh\nnot this\n```";
        assert_eq!(
            quickstart_block(readme).as_deref(),
            Ok("cosimo run a.fmu\ncosimo plot b\n")
        );
        assert!(quickstart_block("no markers").is_err());
        assert!(
            quickstart_block("<!-- quickstart:begin -->\n```sh\nx\n<!-- quickstart:end -->")
                .is_err()
        );
    }
}
