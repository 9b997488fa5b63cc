//! `cosimo validate`: static checks of an FMU.

use std::path::PathBuf;

use clap::Args;

use super::{exit_code, out, say};

use std::process::ExitCode;

use cosimo::Error;

#[derive(Args)]
pub(crate) struct ValidateArgs {
    /// The FMU: a .fmu file, an unpacked FMU folder, or a modelDescription.xml.
    pub(crate) fmu: PathBuf,
    /// Print the findings as JSON.
    #[arg(long)]
    pub(crate) json: bool,
    /// Print only the findings that are errors, without the count line (the exit code says
    /// whether there were any); with --json, leave the warnings out of the findings.
    #[arg(long, short)]
    pub(crate) quiet: bool,
}

pub(crate) fn validate_command(args: &ValidateArgs) -> ExitCode {
    match validate_and_print(args) {
        Ok(code) => ExitCode::from(code),
        // A closed pipe (`cosimo validate X.fmu | head`) ends the output, not in an error.
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::BrokenPipe => {
            ExitCode::SUCCESS
        }
        Err(error) => {
            say!("error: {error}");
            ExitCode::from(exit_code(&error))
        }
    }
}

/// Validate the FMU and print the findings; returns the exit code (2 when any is an error).
fn validate_and_print(args: &ValidateArgs) -> Result<u8, Error> {
    use cosimo::fmu::validate::{has_errors, validate, Severity};
    let ssp = cosimo::system::load::is_ssp(&args.fmu);
    if ssp || super::inspect::is_system_file(&args.fmu) {
        say!(
            "error: {}: validate checks one FMU, and this is {}; `cosimo inspect {}` describes the system (its components, their FMUs, the connections and the experiment), and `cosimo validate FMU` checks each component's FMU",
            args.fmu.display(),
            if ssp { "an SSP" } else { "a system file" },
            args.fmu.display()
        );
        return Ok(2);
    }
    let findings = match validate(&args.fmu) {
        // The FMI-LS-REF data too: `cosimo check` compares the FMU with it.
        Ok(mut findings) => {
            findings.extend(cosimo::results::reference::ls_ref_findings(&args.fmu));
            findings
        }
        Err(error) => {
            // Whatever went wrong reading the FMU, it is the input that is bad.
            say!("error: {error}");
            return Ok(2);
        }
    };
    let errors = findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .count();
    let warnings = findings.len() - errors;
    let findings: Vec<_> = findings
        .into_iter()
        .filter(|f| !args.quiet || f.severity == Severity::Error)
        .collect();
    if args.json {
        let json = serde_json::json!({
            "fmu": args.fmu.display().to_string(),
            "valid": errors == 0,
            "errors": errors,
            "warnings": warnings,
            "findings": findings,
        });
        let text = serde_json::to_string_pretty(&json)
            .map_err(|e| Error::Internal(format!("the findings as JSON: {e}")))?;
        out!("{text}");
    } else {
        for finding in &findings {
            out!("{finding}");
        }
        if args.quiet {
            return Ok(if has_errors(&findings) { 2 } else { 0 });
        }
        out!(
            "{}: {errors} error{}, {warnings} warning{}",
            args.fmu.display(),
            if errors == 1 { "" } else { "s" },
            if warnings == 1 { "" } else { "s" }
        );
    }
    Ok(if has_errors(&findings) { 2 } else { 0 })
}
