//! `cosimo build`: an FMU that ships sources gets a binary for this platform.

use std::path::PathBuf;

use clap::Args;

use super::{out, say};

use cosimo::Error;

#[derive(Args)]
pub(crate) struct BuildArgs {
    /// The FMU (.fmu file or unpacked folder) whose sources/ to build.
    pub(crate) fmu: PathBuf,
    /// Write the FMU with its new binary to this .fmu file and leave FMU as it is (default:
    /// add the binary to FMU itself).
    #[arg(long, short)]
    pub(crate) output: Option<PathBuf>,
    /// Print nothing but errors: no warnings, no line naming the binary added.
    #[arg(long, short)]
    pub(crate) quiet: bool,
}

pub(crate) fn build_command(args: &BuildArgs) -> Result<(), Error> {
    let built = cosimo::fmu::build::add_binary(&args.fmu, args.output.as_deref(), &mut |w| {
        if !args.quiet {
            say!("warning: {w}")
        }
    })?;
    if args.quiet {
        return Ok(());
    }
    for inside in &built.added {
        out!("{}: added {inside}", built.output.display());
    }
    Ok(())
}
