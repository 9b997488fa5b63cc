//! `cargo run -p fmu-pack`: builds and packs every test FMU, one line per archive.

use std::process::ExitCode;

fn main() -> ExitCode {
    match fmu_pack::packed_fmus() {
        Ok(fmus) => {
            for f in fmus {
                println!("{}\t{}\tFMI {}", f.path.display(), f.model, f.fmi_version);
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("fmu-pack: {e}");
            ExitCode::FAILURE
        }
    }
}
