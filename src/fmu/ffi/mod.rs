//! Raw C signatures of FMI 2 and FMI 3, resolved with libloading.
//!
//! The declarations follow the standard's headers (`fmi2FunctionTypes.h`,
//! `fmi3FunctionTypes.h`) one to one. C enums that the FMU returns (statuses) are plain `c_int`
//! so that an out-of-range value from a misbehaving FMU is not undefined behaviour.

use std::ffi::c_void;
use std::path::Path;

use crate::error::{Error, Result};

pub mod fmi2;
pub mod fmi3;

pub use fmi2::Fmi2Functions;
pub use fmi3::Fmi3Functions;

extern "C" {
    /// The C library's `calloc`, handed to FMI 2 FMUs as `allocateMemory`.
    pub fn calloc(nobj: usize, size: usize) -> *mut c_void;
    /// The C library's `free`, handed to FMI 2 FMUs as `freeMemory`.
    pub fn free(obj: *mut c_void);
}

/// What the FMI functions of `library` are named after: nothing, as a binary FMU exports them,
/// or `MODELIDENTIFIER_` where the library was built from a source-code FMU whose sources
/// prefix them (FMI 2 `FMI2_FUNCTION_PREFIX`, FMI 3 `FMI3_FUNCTION_PREFIX`: the Reference FMUs'
/// sources do unless `DISABLE_PREFIX` is defined). `probe` is a function every FMU exports
/// (`fmi2GetVersion`, `fmi3GetVersion`).
pub(crate) fn symbol_prefix(
    library: &libloading::Library,
    model_identifier: &str,
    probe: &str,
) -> String {
    let prefixed = format!("{model_identifier}_");
    // SAFETY: only whether the symbol exists is asked; the pointer is not used.
    let exports = |name: &str| unsafe { library.get::<*const c_void>(name.as_bytes()) }.is_ok();
    if !exports(probe) && exports(&format!("{prefixed}{probe}")) {
        prefixed
    } else {
        String::new()
    }
}

/// Resolve a function the FMU must export.
///
/// # Safety
/// `T` must be the function pointer type that matches the C declaration of `name`.
pub(crate) unsafe fn required<T: Copy>(
    library: &libloading::Library,
    path: &Path,
    name: &str,
) -> Result<T> {
    // SAFETY: the caller guarantees that T matches the symbol's C type.
    match unsafe { library.get::<T>(name.as_bytes()) } {
        Ok(symbol) => Ok(*symbol),
        Err(e) => Err(Error::Binary {
            path: path.to_path_buf(),
            message: format!("does not export {name}: {e}"),
        }),
    }
}

/// Resolve a function the FMU may leave out.
///
/// # Safety
/// `T` must be the function pointer type that matches the C declaration of `name`.
pub(crate) unsafe fn optional<T: Copy>(library: &libloading::Library, name: &str) -> Option<T> {
    // SAFETY: the caller guarantees that T matches the symbol's C type.
    unsafe { library.get::<T>(name.as_bytes()) }
        .ok()
        .map(|symbol| *symbol)
}

/// The error for an optional function the model description promises but the binary lacks.
pub(crate) fn missing_capability(path: &Path, capability: &str, function: &str) -> Error {
    Error::Binary {
        path: path.to_path_buf(),
        message: format!(
            "the model description declares {capability}, but the binary does not export {function}"
        ),
    }
}

/// The error for the first of an interface's functions the binary lacks (`(present, name)`).
pub(crate) fn require_interface(
    path: &Path,
    interface: crate::fmu::description::Interface,
    functions: &[(bool, &str)],
) -> Result<()> {
    match functions.iter().find(|(present, _)| !present) {
        None => Ok(()),
        Some((_, function)) => Err(Error::Binary {
            path: path.to_path_buf(),
            message: format!("does not export {function}, which the {interface} interface needs"),
        }),
    }
}

/// Declares a table of FMI functions: `required` ones fail the load when missing, `optional`
/// ones are `Option`s.
macro_rules! function_table {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            required {
                $( $(#[$rmeta:meta])* $rfield:ident : $rty:ty = $rsym:literal, )*
            }
            optional {
                $( $(#[$ometa:meta])* $ofield:ident : $oty:ty = $osym:literal, )*
            }
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug)]
        pub struct $name {
            $( $(#[$rmeta])* pub $rfield: $rty, )*
            $( $(#[$ometa])* pub $ofield: Option<$oty>, )*
        }

        impl $name {
            /// Resolve every function of the table from `library` (loaded from `path`), each
            /// name after `prefix` ([`symbol_prefix`]).
            fn resolve(
                library: &libloading::Library,
                path: &std::path::Path,
                prefix: &str,
            ) -> $crate::error::Result<Self> {
                // SAFETY: each field's type is the C declaration of the symbol it is loaded from.
                unsafe {
                    Ok(Self {
                        $( $rfield: $crate::fmu::ffi::required::<$rty>(
                            library,
                            path,
                            &format!("{prefix}{}", $rsym),
                        )?, )*
                        $( $ofield: $crate::fmu::ffi::optional::<$oty>(
                            library,
                            &format!("{prefix}{}", $osym),
                        ), )*
                    })
                }
            }
        }
    };
}
pub(crate) use function_table;
