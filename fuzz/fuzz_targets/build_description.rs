//! An FMU's build description, read to build a binary from its sources
//! (`cosimo::fmu::build::plan`): FMI 3 / FMI 2.0.4 `sources/buildDescription.xml` (first byte
//! even), or an FMI 2 model description's `<SourceFiles>` (odd). An error is a fine answer; a
//! panic, a hang, running out of memory or a path that leaves `sources/` is a bug.
#![no_main]

use std::sync::OnceLock;

use cosimo::fmu::build::plan;
use cosimo::fmu::FmiVersion;
use libfuzzer_sys::fuzz_target;

fn folder() -> &'static tempfile::TempDir {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().expect("a temporary folder");
        std::fs::create_dir_all(dir.path().join("sources")).expect("sources/");
        std::fs::write(dir.path().join("sources/model.c"), "int x;\n").expect("a source");
        dir
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&choice, text)) = data.split_first() else {
        return;
    };
    let root = folder().path();
    let build_description = root.join("sources/buildDescription.xml");
    let version = if choice % 2 == 0 {
        std::fs::write(&build_description, text).expect("writes the input");
        FmiVersion::Fmi3
    } else {
        let _ = std::fs::remove_file(&build_description);
        std::fs::write(root.join("modelDescription.xml"), text).expect("writes the input");
        FmiVersion::Fmi2
    };
    if let Ok(Some(plan)) = plan(root, root, version, "model") {
        // Every path stays inside sources/: relative, without a step up.
        for set in &plan.sets {
            for path in set.files.iter().chain(&set.include_dirs) {
                let path = std::path::Path::new(path);
                assert!(
                    path.is_relative()
                        && !path
                            .components()
                            .any(|c| matches!(c, std::path::Component::ParentDir)),
                    "a path out of sources/: {}",
                    path.display()
                );
            }
        }
    }
});
