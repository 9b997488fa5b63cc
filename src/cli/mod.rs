//! The subcommands of the `cosimo` binary (not part of the library): each parses its options,
//! calls the library and prints.

pub(crate) mod build;
pub(crate) mod check;
pub(crate) mod export;
pub(crate) mod inspect;
pub(crate) mod model;
pub(crate) mod plot;
pub(crate) mod run;
pub(crate) mod stability;
pub(crate) mod sweep;
pub(crate) mod validate;
pub(crate) mod vocabulary;

pub(crate) use super::exit_code;

/// Write to stdout: a failed write is an error naming stdout (`> /dev/full`); a closed pipe
/// (`| head`) is an error too, which `main` ends quietly.
pub(crate) fn write_out(text: std::fmt::Arguments<'_>) -> Result<(), cosimo::Error> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    // Flushed here: text without a final newline would otherwise stay buffered until the
    // process exits, where a failed write is ignored.
    stdout
        .write_fmt(text)
        .and_then(|()| stdout.flush())
        .map_err(|e| cosimo::Error::io("standard output", e))
}

/// `println!` that returns write errors instead of panicking.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::write_out(format_args!("{}\n", format_args!($($arg)*)))?
    };
}
pub(crate) use out;

/// `eprintln!` that ignores a closed or full stderr (messages have nowhere else to go) instead
/// of panicking.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}
pub(crate) use say;
