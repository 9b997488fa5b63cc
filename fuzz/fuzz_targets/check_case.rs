//! What `cosimo check` and `validate` read besides the tables: an FMU's FMI-LS-REF manifest with
//! the one file it may name (`ref.csv`), and a case's `check.json`. The input is the manifest,
//! a NUL byte, the CSV, a NUL byte and the check.json. An error is a fine answer; a panic, a
//! hang, a stack overflow or running out of memory is a bug, and so is a manifest entry that
//! leaves the FMI-LS-REF folder.
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use cosimo::fmu::ModelDescription;
use cosimo::results::reference::{
    checked_ls_reference, ls_reference, CheckSettings, LS_REF_FOLDER, LS_REF_MANIFEST,
};
use libfuzzer_sys::fuzz_target;

const DESCRIPTION: &str = r#"<fmiModelDescription fmiVersion="3.0" modelName="M" instantiationToken="t">
  <CoSimulation modelIdentifier="M"/>
  <ModelVariables>
    <Float64 name="time" valueReference="0" causality="independent" variability="continuous"/>
    <Float64 name="u" valueReference="1" causality="input" start="0"/>
    <Float64 name="a" valueReference="2" causality="input" start="0 0 0"><Dimension start="3"/></Float64>
    <Boolean name="b" valueReference="3" causality="input" variability="discrete" start="false"/>
    <Float64 name="y" valueReference="4" causality="output"/>
  </ModelVariables>
  <ModelStructure><Output valueReference="4"/></ModelStructure>
</fmiModelDescription>"#;

struct Folder {
    _dir: tempfile::TempDir,
    /// The unpacked FMU's root.
    root: PathBuf,
    /// Its FMI-LS-REF folder.
    ls_ref: PathBuf,
    /// A check case's settings file.
    settings: PathBuf,
    description: ModelDescription,
}

fn folder() -> &'static Folder {
    static FOLDER: OnceLock<Folder> = OnceLock::new();
    FOLDER.get_or_init(|| {
        let dir = tempfile::tempdir().expect("a temporary folder for the fuzz input");
        let root = dir.path().join("fmu");
        let ls_ref = root.join(LS_REF_FOLDER);
        std::fs::create_dir_all(&ls_ref).expect("the FMI-LS-REF folder");
        let settings = dir.path().join("case").join("check.json");
        std::fs::create_dir_all(settings.parent().expect("a parent")).expect("the case folder");
        let description = cosimo::fmu::description::from_str(DESCRIPTION, Path::new("fuzz.xml"))
            .expect("the fuzz target's own model description parses");
        Folder {
            _dir: dir,
            root,
            ls_ref,
            settings,
            description,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(3, |&b| b == 0);
    let manifest = parts.next().unwrap_or_default();
    let csv = parts.next().unwrap_or_default();
    let settings = parts.next().unwrap_or_default();
    let folder = folder();
    let written = std::fs::write(folder.ls_ref.join(LS_REF_MANIFEST), manifest)
        .and_then(|()| std::fs::write(folder.ls_ref.join("ref.csv"), csv))
        .and_then(|()| std::fs::write(&folder.settings, settings));
    if written.is_err() {
        return;
    }
    if let Ok(Some(reference)) = ls_reference(&folder.root) {
        for entry in &reference.entries {
            assert!(
                entry.path.starts_with(&folder.ls_ref),
                "{entry} leaves the folder"
            );
        }
    }
    let _ = checked_ls_reference(&folder.root, &folder.description);
    let _ = CheckSettings::read(&folder.settings);
});
