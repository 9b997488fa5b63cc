//! `cosimo validate`: static checks of an FMU.

use std::path::PathBuf;

use clap::Args;

use super::say;

use std::process::ExitCode;

#[derive(Args)]
pub(crate) struct ValidateArgs {
    /// The FMU: a .fmu file, an unpacked FMU folder, or a modelDescription.xml.
    pub(crate) fmu: PathBuf,
    /// Print the findings as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

pub(crate) fn validate_command(args: &ValidateArgs) -> ExitCode {
    use cosimo::fmu::validate::{has_errors, validate, Severity};
    let findings = match validate(&args.fmu) {
        Ok(findings) => findings,
        Err(error) => {
            say!("error: {error}");
            return ExitCode::from(2);
        }
    };
    let errors = findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .count();
    let warnings = findings.len() - errors;
    if args.json {
        let json = serde_json::json!({
            "fmu": args.fmu.display().to_string(),
            "valid": errors == 0,
            "errors": errors,
            "warnings": warnings,
            "findings": findings,
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&json).unwrap_or_default()
        );
    } else {
        for finding in &findings {
            println!("{finding}");
        }
        println!(
            "{}: {errors} error{}, {warnings} warning{}",
            args.fmu.display(),
            if errors == 1 { "" } else { "s" },
            if warnings == 1 { "" } else { "s" }
        );
    }
    if has_errors(&findings) {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}
