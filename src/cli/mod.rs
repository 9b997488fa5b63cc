//! The subcommands of the `cosimo` binary (not part of the library): each parses its options,
//! calls the library and prints.

pub(crate) mod check;
pub(crate) mod inspect;
pub(crate) mod plot;
pub(crate) mod run;
pub(crate) mod stability;
pub(crate) mod validate;

pub(crate) use super::exit_code;
