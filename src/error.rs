//! cosimo's typed errors. Every message says what is wrong, where, and what to do.

use std::path::PathBuf;

/// Shorthand for results with cosimo's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What can go wrong in cosimo, from opening a file to a failing FMU call.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// The FMU archive or folder is not usable (not a zip, unsafe entry, too large, ...).
    #[error("{path}: {message}")]
    Archive { path: PathBuf, message: String },

    /// `modelDescription.xml` is malformed or incomplete.
    #[error("{path}:{line}: {message}")]
    ModelDescription {
        path: PathBuf,
        line: usize,
        message: String,
    },

    /// The shared library could not be found or loaded, or lacks a function.
    #[error("{path}: {message}")]
    Binary { path: PathBuf, message: String },

    /// An FMI call returned `Error` or `Fatal`, or was refused before the call.
    #[error("{instance}: {function} failed with status {status}{}", log_suffix(.log))]
    Fmi {
        instance: String,
        function: &'static str,
        status: FmiStatus,
        /// The FMU's last log messages, if it logged any.
        log: Vec<String>,
    },

    /// `doStep` returned `Discard`: the FMU could not complete the step.
    #[error("{instance}: doStep from t = {} with h = {} was discarded (the FMU reached t = {}); try a smaller step size{}", crate::numbers::number(*.current_time), crate::numbers::seconds(*.step_size), crate::numbers::number(*.last_successful_time), log_suffix(.log))]
    Discard {
        instance: String,
        current_time: f64,
        step_size: f64,
        last_successful_time: f64,
        log: Vec<String>,
    },

    /// The caller asked for something the FMU or this version of FMI does not offer.
    #[error("{instance}: {message}")]
    Unsupported { instance: String, message: String },

    /// A call was made in a lifecycle state where it is not allowed.
    #[error("{instance}: {function} is not allowed in state {state}")]
    WrongState {
        instance: String,
        function: &'static str,
        state: String,
    },

    /// A variable name, value, file content or option given by the user is wrong (exit 2).
    #[error("{0}")]
    Usage(String),

    /// A numerical method failed on the system (a step size below its minimum, an iteration
    /// that does not converge): the input was valid, the simulation failed (exit 1).
    #[error("{0}")]
    Numerics(String),

    /// A contract between cosimo's own parts (or a library caller) was broken: a bug to
    /// report, not something the user can fix (exit 1).
    #[error("internal error: {0} (please report this as a bug)")]
    Internal(String),

    /// A worker thread that hosts a component died or answered out of turn (exit 1).
    #[error("component \"{component}\": {message}")]
    Worker { component: String, message: String },

    /// A simulation failed at a given time.
    /// A failure on one rank of a run under `mpirun`, as every rank reports it.
    #[error("{message} (on MPI rank {rank})")]
    OnRank {
        rank: usize,
        /// The exit code one process would give.
        code: u8,
        message: String,
    },

    #[error("simulation failed at t = {}: {source}", crate::numbers::number(*.time))]
    Simulation {
        time: f64,
        #[source]
        source: Box<Error>,
    },
}

fn log_suffix(log: &[String]) -> String {
    if log.is_empty() {
        String::new()
    } else {
        format!("; the FMU logged:\n  {}", log.join("\n  "))
    }
}

/// An FMI status other than OK, as returned by an FMI function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FmiStatus {
    Ok,
    Warning,
    Discard,
    Error,
    Fatal,
    Pending,
    /// A status value outside the standard's range.
    Unknown(i32),
}

impl std::fmt::Display for FmiStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FmiStatus::Ok => write!(f, "OK"),
            FmiStatus::Warning => write!(f, "Warning"),
            FmiStatus::Discard => write!(f, "Discard"),
            FmiStatus::Error => write!(f, "Error"),
            FmiStatus::Fatal => write!(f, "Fatal"),
            FmiStatus::Pending => write!(f, "Pending"),
            FmiStatus::Unknown(v) => write!(f, "unknown status {v}"),
        }
    }
}

impl Error {
    /// The command line's exit code for this error: 1 when a simulation ran and failed, 2 when
    /// the input or the usage was wrong.
    pub fn exit_code(&self) -> u8 {
        match self {
            // Bad input found only once the run started is still bad input.
            Error::Simulation { source, .. } => source.exit_code(),
            Error::OnRank { code, .. } => *code,
            Error::Fmi { .. }
            | Error::Discard { .. }
            | Error::Numerics(_)
            | Error::Internal(_)
            | Error::Worker { .. }
            | Error::WrongState { .. } => 1,
            _ => 2,
        }
    }

    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}
