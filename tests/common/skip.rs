//! Skips that the suite counts.
//!
//! Rust's test harness has no runtime skip: a test that returns early passes. A test that
//! cannot run its subject here (no FMPy, one core, no C math library to stand in for a binary,
//! no Chromium) calls [`skipped`] before it returns: that prints `skipped: ...` (shown with
//! `--nocapture`) and appends one line to the skip log, `CATEGORY<TAB>TEST<TAB>WHY`, where TEST
//! is `test-binary::test-name`.
//!
//! The log is `$COSIMO_SKIP_LOG` when set (`cargo xtask test` sets it to
//! `target/test-skips.log`, empties it first, and at the end prints "N skipped: ..." and fails
//! on the categories it should have run; see `xtask/src/main.rs`), else
//! `target/tmp/test-skips.log`, where plain `cargo test` leaves them for a look.

use std::io::Write as _;
use std::path::PathBuf;

/// Why a test could not run its subject; `cargo xtask test` decides by category which skips
/// fail the suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// FMPy or the corpus' exporters are not set up (`COSIMO_FMPY_PYTHON`): `cargo xtask test`
    /// installs them, so under it this skip fails the suite.
    Fmpy,
    /// The machine has one core: what needs two threads cannot be measured. Reported only.
    OneCore,
    /// No shared C math library (`libm.so.6`) found to stand in for a binary without FMI
    /// functions: fails the suite in CI.
    NoLibm,
    /// No headless Chromium to open the HTML report in (`.ci/run` installs Debian's
    /// `chromium`): fails the suite in CI.
    NoChromium,
    /// No `script` (util-linux) to give a run a terminal, where the progress bar shows: fails
    /// the suite in CI.
    NoScript,
    /// No `mpirun` (Open MPI) to run cosimo over ranks (`.ci/run` installs it): fails the
    /// suite in CI, as the skip of `sweep_mpi` that `cargo xtask test` logs does.
    NoMpirun,
    /// No C compiler (`cc` or `$CC`) to build an FMU from its sources: fails the suite in CI.
    NoCompiler,
}

impl Skip {
    /// The category's name in the log.
    pub fn name(self) -> &'static str {
        match self {
            Skip::Fmpy => "fmpy",
            Skip::OneCore => "one-core",
            Skip::NoLibm => "no-libm",
            Skip::NoChromium => "no-chromium",
            Skip::NoScript => "no-script",
            Skip::NoMpirun => "mpi",
            Skip::NoCompiler => "no-cc",
        }
    }
}

/// The skip log (see the module documentation).
pub fn log_path() -> PathBuf {
    match std::env::var_os("COSIMO_SKIP_LOG") {
        Some(path) => PathBuf::from(path),
        None => PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("test-skips.log"),
    }
}

/// The running test as `binary::name` (libtest names each test's thread after the test).
pub fn current_test() -> String {
    let thread = std::thread::current();
    format!(
        "{}::{}",
        env!("CARGO_CRATE_NAME"),
        thread.name().unwrap_or("<unnamed>")
    )
}

/// The running test cannot run (all or part of) its subject: say so and log it. The caller
/// returns (or leaves out the part) right after.
pub fn skipped(category: Skip, why: &str) {
    let test = current_test();
    let why = why.replace(['\t', '\n'], " ");
    eprintln!("skipped: {test}: {why}");
    let path = log_path();
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    // One write of one short line to a file opened for appending: lines of test binaries that
    // run at the same time do not interleave.
    let line = format!("{}\t{test}\t{why}\n", category.name());
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut file| file.write_all(line.as_bytes()));
    if let Err(e) = written {
        panic!(
            "{test} was skipped ({why}) and the skip cannot be logged in {}: {e}",
            path.display()
        );
    }
}

/// The shared C math library of this machine (`libm.so.6`), found the way the dynamic loader
/// finds it: `dlopen` by soname, then `dladdr` of one of its functions names the file. Falls
/// back to `ldconfig -p`. None where there is none.
pub fn libm() -> Option<PathBuf> {
    dlopen_path("libm.so.6", "cos").or_else(|| ldconfig("libm.so.6"))
}

fn dlopen_path(soname: &str, symbol: &str) -> Option<PathBuf> {
    use std::ffi::{CStr, CString};
    let soname = CString::new(soname).ok()?;
    let symbol = CString::new(symbol).ok()?;
    // SAFETY: dlopen of the C math library (already mapped by the C runtime in practice) runs
    // no code of ours; dlsym and dladdr only read the loader's tables. The handle is kept
    // open: the returned path names a library that stays loaded.
    unsafe {
        let handle = libc::dlopen(soname.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
        if handle.is_null() {
            return None;
        }
        let address = libc::dlsym(handle, symbol.as_ptr());
        if address.is_null() {
            return None;
        }
        let mut info: libc::Dl_info = std::mem::zeroed();
        if libc::dladdr(address, &mut info) == 0 || info.dli_fname.is_null() {
            return None;
        }
        let path = PathBuf::from(CStr::from_ptr(info.dli_fname).to_str().ok()?);
        path.is_absolute().then_some(path).filter(|p| p.is_file())
    }
}

/// A path `ldconfig -p` lists for `soname`, one of the host's architecture first (x86-64 and
/// AArch64 lines say so; other lines are tried after them).
fn ldconfig(soname: &str) -> Option<PathBuf> {
    let tag = match std::env::consts::ARCH {
        "x86_64" => "x86-64",
        "aarch64" => "AArch64",
        other => other,
    };
    let output = ["ldconfig", "/sbin/ldconfig", "/usr/sbin/ldconfig"]
        .into_iter()
        .find_map(|program| std::process::Command::new(program).arg("-p").output().ok())?;
    let text = String::from_utf8_lossy(&output.stdout);
    let mut lines: Vec<&str> = text
        .lines()
        .filter(|line| line.trim_start().starts_with(&format!("{soname} ")))
        .collect();
    lines.sort_by_key(|line| !line.contains(tag));
    lines
        .into_iter()
        .filter_map(|line| line.split(" => ").nth(1))
        .map(|path| PathBuf::from(path.trim()))
        .find(|path| path.is_file())
}
