//! Files a user names are read only when they are regular files (or folders where a folder is
//! meant): opening a named pipe blocks until some writer comes, and a device or a socket may
//! never end, so `cosimo run fifo` would hang instead of saying what is wrong.

use std::path::Path;

use crate::{Error, Result};

/// What `path` is when it is neither a regular file nor a folder (`None` for those, and for a
/// path that cannot be looked at: opening it then says why). Symbolic links are followed.
pub fn special_kind(path: &Path) -> Option<&'static str> {
    let file_type = std::fs::metadata(path).ok()?.file_type();
    if file_type.is_file() || file_type.is_dir() {
        return None;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return Some("a named pipe (FIFO)");
        }
        if file_type.is_socket() {
            return Some("a socket");
        }
        if file_type.is_char_device() {
            return Some("a character device");
        }
        if file_type.is_block_device() {
            return Some("a block device");
        }
    }
    Some("a special file")
}

/// Why `path` cannot be read as `what` (e.g. "an FMU", "the input file") when it is a pipe,
/// device or socket; `None` when it is a regular file, a folder or not there.
pub fn special_file_message(path: &Path, what: &str) -> Option<String> {
    special_kind(path).map(|kind| {
        format!(
            "is {kind}, not a regular file: cosimo reads {what} only from a file or folder (a \
             pipe or device may block or never end); save it to a file first"
        )
    })
}

/// Refuse `path` as `what` (a usage error naming it) when it is a pipe, device or socket.
pub fn check_regular(path: &Path, what: &str) -> Result<()> {
    match special_file_message(path, what) {
        Some(message) => Err(Error::Usage(format!("{}: {message}", path.display()))),
        None => Ok(()),
    }
}

/// Read a text file a user named as `what`, refusing pipes, devices and sockets first.
pub fn read_to_string(path: &Path, what: &str) -> Result<String> {
    check_regular(path, what)?;
    std::fs::read_to_string(path).map_err(|e| Error::io(path, e))
}

/// Read a table a user named as `what` (an input file, results to plot: CSV, or MAT, Arrow or
/// Parquet by the extension), refusing pipes, devices and sockets first.
pub fn read_table(path: &Path, what: &str) -> Result<crate::table::Table> {
    check_regular(path, what)?;
    crate::table::Table::read(path)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn pipes_and_devices_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fifo = dir.path().join("pipe");
        let c_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).expect("path");
        // SAFETY: a valid NUL-terminated path and a mode.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        let message = read_to_string(&fifo, "the system file")
            .expect_err("a FIFO is refused")
            .to_string();
        assert_eq!(
            message,
            format!(
                "{}: is a named pipe (FIFO), not a regular file: cosimo reads the system file \
                 only from a file or folder (a pipe or device may block or never end); save it \
                 to a file first",
                fifo.display()
            )
        );
        assert!(check_regular(Path::new("/dev/zero"), "x")
            .expect_err("a device")
            .to_string()
            .contains("is a character device"));
        let file = dir.path().join("file.csv");
        std::fs::write(&file, "t\n0\n").expect("write");
        assert_eq!(read_to_string(&file, "x").expect("reads"), "t\n0\n");
        assert!(check_regular(dir.path(), "x").is_ok());
        assert!(check_regular(&dir.path().join("missing"), "x").is_ok());
    }
}
