//! Extraction folders that do not outlive their process.
//!
//! Each is `$TMPDIR/cosimo-<pid>-<kind>-XXXXXX` (kind `fmu` or `ssp`). It is removed when
//! dropped; on SIGINT, SIGTERM and SIGHUP once the binary calls
//! [`remove_extracted_on_signals`] (a library never installs signal handlers behind its
//! caller's back); and after an abort, SIGKILL or a crash inside an FMU by the next cosimo
//! process that extracts something: it sweeps the folders whose owner is gone. An owner is gone
//! when no process has its pid and nobody holds the lock on its folder (the lock protects a
//! live owner in another PID namespace that shares the temporary folder).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, Once};

use crate::{Error, Result};

/// Every extraction folder's name starts with this, then the owning pid and a '-'.
const PREFIX: &str = "cosimo-";

/// The extraction folders of this process that exist now.
static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// The registry, also after a panic elsewhere (it holds plain paths, never half-updated).
fn live() -> MutexGuard<'static, Vec<PathBuf>> {
    LIVE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A temporary folder holding one extracted archive; removed on drop.
#[derive(Debug)]
pub struct ExtractionDir {
    temp: Option<tempfile::TempDir>,
    /// The folder itself, opened and locked while this process lives.
    _lock: Option<File>,
}

impl ExtractionDir {
    /// A new, empty extraction folder `$TMPDIR/cosimo-<pid>-<kind>-XXXXXX`; the first one of a
    /// process sweeps the folders that dead cosimo processes left behind.
    pub fn new(kind: &str) -> Result<ExtractionDir> {
        static SWEPT: Once = Once::new();
        SWEPT.call_once(|| {
            sweep_stale(&std::env::temp_dir());
        });
        // Created and registered under the registry's lock: a signal's cleanup (which keeps
        // the lock until the process ends) sees every folder or stops its creation.
        let mut live = live();
        let temp = tempfile::Builder::new()
            .prefix(&format!("{PREFIX}{}-{kind}-", std::process::id()))
            .tempdir()
            .map_err(|e| Error::io(std::env::temp_dir(), e))?;
        // Best effort: without the lock, sweepers fall back to the pid alone.
        let lock = File::open(temp.path())
            .ok()
            .filter(|folder| folder.try_lock().is_ok());
        live.push(temp.path().to_path_buf());
        Ok(ExtractionDir {
            temp: Some(temp),
            _lock: lock,
        })
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        self.temp.as_ref().map_or(Path::new(""), |t| t.path())
    }
}

impl Drop for ExtractionDir {
    fn drop(&mut self) {
        let mut live = live();
        if let Some(temp) = self.temp.take() {
            live.retain(|p| p != temp.path());
            // Nothing to report to: a folder that cannot be removed is swept by a later run.
            let _ = temp.close();
        }
    }
}

/// Remove `path` and everything in it, trying again when files appear meanwhile (an
/// extraction still writing into it on another thread).
fn remove_folder(path: &Path) {
    for _ in 0..5 {
        match std::fs::remove_dir_all(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => continue,
            _ => return,
        }
    }
}

/// The pid in an extraction folder's name `cosimo-<pid>-...`.
fn owner_pid(name: &str) -> Option<u32> {
    let (digits, _) = name.strip_prefix(PREFIX)?.split_once('-')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Remove the extraction folders in `dir` whose owning process is gone (and that belong to
/// this user); returns how many were removed.
pub fn sweep_stale(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(owner_pid) else {
            continue;
        };
        // A symbolic link is never followed into: only real folders are swept.
        let is_folder = entry.file_type().is_ok_and(|t| t.is_dir());
        if !is_folder || pid == std::process::id() || process_alive(pid) {
            continue;
        }
        let path = entry.path();
        if !owned_by_me(&path) {
            continue;
        }
        match File::open(&path).map(|folder| folder.try_lock()) {
            Ok(Ok(())) | Ok(Err(std::fs::TryLockError::Error(_))) => {}
            // Locked: its owner lives in another PID namespace. Unreadable: not ours to judge.
            Ok(Err(std::fs::TryLockError::WouldBlock)) | Err(_) => continue,
        }
        remove_folder(&path);
        if !path.exists() {
            removed += 1;
        }
    }
    removed
}

/// Whether a process with this pid exists (or might: anything unsure counts as alive).
#[cfg(unix)]
fn process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return true;
    };
    if pid <= 0 {
        return true;
    }
    // SAFETY: kill with signal 0 sends nothing; it only checks that the process exists.
    let found = unsafe { libc::kill(pid, 0) } == 0;
    found || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

#[cfg(not(unix))]
fn process_alive(_pid: u32) -> bool {
    // No cheap, reliable check here: never sweep.
    true
}

#[cfg(unix)]
fn owned_by_me(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: getuid has no preconditions and cannot fail.
    let me = unsafe { libc::getuid() };
    std::fs::symlink_metadata(path).is_ok_and(|m| m.uid() == me)
}

#[cfg(not(unix))]
fn owned_by_me(_path: &Path) -> bool {
    true
}

/// Remove this process's extraction folders when it gets SIGINT (Ctrl-C), SIGTERM (`kill`,
/// `timeout`) or SIGHUP (a closed terminal), then end it by that same signal, as if no handler
/// were installed (so a shell sees 128 + the signal's number). Signals the process was started
/// with ignored (`nohup`, `&` in a script) stay ignored. For programs (the cosimo binary), not
/// for libraries: it installs process-wide signal handlers. Calling it again does nothing.
pub fn remove_extracted_on_signals() -> Result<()> {
    #[cfg(unix)]
    {
        static INSTALLED: Mutex<bool> = Mutex::new(false);
        let mut installed = INSTALLED.lock().unwrap_or_else(|p| p.into_inner());
        if *installed {
            return Ok(());
        }
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let wanted: Vec<i32> = [SIGINT, SIGTERM, SIGHUP]
            .into_iter()
            .filter(|&s| !ignored(s))
            .collect();
        let failed = |e: std::io::Error| {
            Error::Internal(format!(
                "cannot install the handlers that remove extracted FMUs on signals: {e}"
            ))
        };
        let mut signals = signal_hook::iterator::Signals::new(&wanted).map_err(failed)?;
        std::thread::Builder::new()
            .name("cosimo-signals".into())
            .spawn(move || {
                if let Some(signal) = signals.forever().next() {
                    // Kept locked until the process ends: no folder is made or dropped meanwhile.
                    let mut live = live();
                    for path in live.drain(..) {
                        remove_folder(&path);
                    }
                    // Ends the process by `signal` with its default action (abort if that fails).
                    let _ = signal_hook::low_level::emulate_default_handler(signal);
                    std::process::exit(128 + signal);
                }
            })
            .map_err(failed)?;
        *installed = true;
    }
    Ok(())
}

/// Whether `signal` is ignored now (as `nohup` leaves SIGHUP).
#[cfg(unix)]
fn ignored(signal: i32) -> bool {
    // SAFETY: a zeroed sigaction is a valid out-parameter; a null new action only queries.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, std::ptr::null(), &mut current) == 0
            && current.sa_sigaction == libc::SIG_IGN
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_pids() {
        assert_eq!(owner_pid("cosimo-123-fmu-abc"), Some(123));
        assert_eq!(owner_pid("cosimo-fmu-abc"), None);
        assert_eq!(owner_pid("cosimo--fmu"), None);
        assert_eq!(owner_pid("cosimo-12x-fmu"), None);
        assert_eq!(owner_pid("other-123-fmu"), None);
        assert_eq!(owner_pid("cosimo-99999999999999999999-x"), None);
    }

    #[test]
    fn folders_are_registered_while_they_live() {
        let dir = ExtractionDir::new("fmu").expect("a folder");
        let path = dir.path().to_path_buf();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        assert!(
            name.starts_with(&format!("cosimo-{}-fmu-", std::process::id())),
            "{name}"
        );
        assert!(path.is_dir());
        assert!(live().contains(&path));
        drop(dir);
        assert!(!path.exists());
        assert!(!live().contains(&path));
    }

    #[cfg(unix)]
    #[test]
    fn only_folders_of_dead_owners_are_swept() {
        let tmp = tempfile::tempdir().expect("tempdir");
        // Above every system's pid_max (Linux: at most 2^22): no process has it.
        let dead = i32::MAX as u32;
        let stale = tmp.path().join(format!("cosimo-{dead}-fmu-x"));
        std::fs::create_dir_all(stale.join("binaries")).expect("mkdir");
        std::fs::write(stale.join("binaries/m.so"), b"lib").expect("write");
        let mine = tmp
            .path()
            .join(format!("cosimo-{}-fmu-y", std::process::id()));
        std::fs::create_dir(&mine).expect("mkdir");
        let locked = tmp.path().join(format!("cosimo-{dead}-ssp-z"));
        std::fs::create_dir(&locked).expect("mkdir");
        let lock = File::open(&locked).expect("open");
        lock.try_lock().expect("lock");
        let file = tmp.path().join(format!("cosimo-{dead}-file"));
        std::fs::write(&file, b"not a folder").expect("write");
        let other = tmp.path().join(format!("results-{dead}-x"));
        std::fs::create_dir(&other).expect("mkdir");

        assert_eq!(sweep_stale(tmp.path()), 1);
        assert!(!stale.exists(), "the dead owner's folder is swept");
        assert!(mine.is_dir(), "a live owner's folder is kept");
        assert!(locked.is_dir(), "a locked folder is kept");
        assert!(
            file.is_file() && other.is_dir(),
            "other names are left alone"
        );
    }
}
