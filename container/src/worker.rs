//! `cosimo-container-worker worker --channel-fd N`: the worker process of an exported FMU
//! made with isolation. The container starts it from the FMU's `binaries/` folder for each
//! inner FMU that runs apart, so that an inner crash or hang ends the worker, not the
//! importer. It serves the same protocol as `cosimo worker`.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let fd = match args.as_slice() {
        [command, flag, fd] if command == "worker" && flag == "--channel-fd" => fd.parse().ok(),
        _ => None,
    };
    let Some(fd) = fd else {
        eprintln!(
            "usage: cosimo-container-worker worker --channel-fd N (started by an exported FMU for its isolated components, not by hand)"
        );
        return ExitCode::from(2);
    };
    match cosimo::fmu::worker::serve(fd) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}
