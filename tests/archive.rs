//! Tests of opening FMUs: zip archives (safe extraction) and unpacked folders.

use std::io::Write;
use std::path::{Path, PathBuf};

use cosimo::fmu::archive::{ExtractLimits, FmuArchive};
use cosimo::fmu::FmiVersion;
use cosimo::Error;
use zip::write::SimpleFileOptions;

const MD: &str = r#"<fmiModelDescription fmiVersion="2.0" modelName="M" guid="g"/>"#;

/// An entry of a test archive.
enum Entry<'a> {
    File(&'a str, &'a [u8]),
    Dir(&'a str),
    Symlink(&'a str, &'a str),
}

/// Write a zip archive with `entries` to `dir/name`.
fn make_zip(dir: &Path, name: &str, entries: &[Entry<'_>]) -> PathBuf {
    let path = dir.join(name);
    let file = std::fs::File::create(&path).expect("create zip");
    let mut zip = zip::ZipWriter::new(file);
    let options = SimpleFileOptions::default().unix_permissions(0o644);
    for entry in entries {
        match entry {
            Entry::File(name, data) => {
                zip.start_file(*name, options).expect("start file");
                zip.write_all(data).expect("write");
            }
            Entry::Dir(name) => zip.add_directory(*name, options).expect("dir"),
            Entry::Symlink(name, target) => zip
                .add_symlink(*name, *target, SimpleFileOptions::default())
                .expect("symlink"),
        }
    }
    zip.finish().expect("finish zip");
    path
}

/// The error message of an `Error::Archive` for `path`, checking the variant and path.
fn archive_message(result: cosimo::Result<FmuArchive>, path: &Path) -> String {
    match result {
        Err(Error::Archive { path: p, message }) => {
            assert_eq!(p, path);
            message
        }
        Err(other) => panic!("expected an archive error, got {other}"),
        Ok(_) => panic!("expected an error"),
    }
}

fn binary_message(result: cosimo::Result<PathBuf>, path: &Path) -> String {
    match result {
        Err(Error::Binary { path: p, message }) => {
            assert_eq!(p, path);
            message
        }
        Err(other) => panic!("expected a binary error, got {other}"),
        Ok(p) => panic!("expected an error, got {}", p.display()),
    }
}

#[test]
fn good_fmi2_archive() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fmu = make_zip(
        dir.path(),
        "BouncingBall.fmu",
        &[
            Entry::File("modelDescription.xml", MD.as_bytes()),
            Entry::Dir("binaries/"),
            Entry::Dir("binaries/linux64/"),
            Entry::File("binaries/linux64/BouncingBall.so", b"\x7fELF not really"),
            Entry::File("binaries/win64/BouncingBall.dll", b"MZ"),
            Entry::File("resources/data/table.csv", b"t,x\n0,1\n"),
            Entry::File("./documentation/index.html", b"<html/>"),
        ],
    );
    let archive = FmuArchive::open(&fmu).expect("opens");
    assert_eq!(archive.source(), fmu);
    let root = archive.root().to_path_buf();
    assert!(root.is_dir());
    assert_ne!(root, dir.path());

    let md = archive.model_description_path().expect("model description");
    assert_eq!(md, root.join("modelDescription.xml"));
    assert_eq!(std::fs::read_to_string(&md).expect("read"), MD);
    let description = cosimo::fmu::description::from_file(&md).expect("parses");
    assert_eq!(description.model_name, "M");

    let resources = archive.resources_dir().expect("resources");
    assert_eq!(resources, root.join("resources"));
    assert_eq!(
        std::fs::read(resources.join("data/table.csv")).expect("read"),
        b"t,x\n0,1\n"
    );
    assert!(root.join("documentation/index.html").is_file());

    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    {
        let so = archive
            .binary_path(FmiVersion::Fmi2, "BouncingBall")
            .expect("binary");
        assert_eq!(so, root.join("binaries/linux64/BouncingBall.so"));
        assert_eq!(std::fs::read(&so).expect("read"), b"\x7fELF not really");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let so = root.join("binaries/linux64/BouncingBall.so");
        let mode = std::fs::metadata(&so).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o755);
        let csv = root.join("resources/data/table.csv");
        let mode = std::fs::metadata(&csv).expect("meta").permissions().mode();
        assert_eq!(mode & 0o111, 0, "resources are not made executable");
    }

    drop(archive);
    assert!(!root.exists(), "the extracted folder is removed on drop");
    assert!(fmu.exists());
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
#[test]
fn good_fmi3_archive() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fmu = make_zip(
        dir.path(),
        "Feedthrough.fmu",
        &[
            Entry::File("modelDescription.xml", MD.as_bytes()),
            Entry::File("binaries/x86_64-linux/Feedthrough.so", b"lib"),
            Entry::File("binaries/x86_64-windows/Feedthrough.dll", b"lib"),
        ],
    );
    let archive = FmuArchive::open(&fmu).expect("opens");
    assert_eq!(
        archive
            .binary_path(FmiVersion::Fmi3, "Feedthrough")
            .expect("binary"),
        archive.root().join("binaries/x86_64-linux/Feedthrough.so")
    );
    assert_eq!(archive.resources_dir(), None);
    // The same FMU has no FMI 2 binary for this platform.
    let message = binary_message(archive.binary_path(FmiVersion::Fmi2, "Feedthrough"), &fmu);
    assert_eq!(
        message,
        "no binary for this platform (expected binaries/linux64/Feedthrough.so); the FMU ships \
         binaries for x86_64-linux, x86_64-windows only: export it for linux64 or run it on \
         one of those platforms"
    );
}

#[test]
fn unpacked_folder() {
    let dir = tempfile::tempdir().expect("tempdir");
    let folder = dir.path().join("BouncingBall");
    std::fs::create_dir_all(folder.join("binaries/linux64")).expect("mkdir");
    std::fs::create_dir_all(folder.join("binaries/x86_64-linux")).expect("mkdir");
    std::fs::create_dir_all(folder.join("resources")).expect("mkdir");
    std::fs::write(folder.join("modelDescription.xml"), MD).expect("write");
    std::fs::write(folder.join("binaries/linux64/BouncingBall.so"), b"lib").expect("write");
    std::fs::write(folder.join("binaries/x86_64-linux/BouncingBall.so"), b"lib").expect("write");

    let archive = FmuArchive::open(&folder).expect("opens");
    assert_eq!(archive.source(), folder);
    assert_eq!(archive.root(), folder);
    assert_eq!(
        archive.model_description_path().expect("md"),
        folder.join("modelDescription.xml")
    );
    assert_eq!(archive.resources_dir(), Some(folder.join("resources")));
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    {
        assert_eq!(
            archive
                .binary_path(FmiVersion::Fmi2, "BouncingBall")
                .expect("binary"),
            folder.join("binaries/linux64/BouncingBall.so")
        );
        assert_eq!(
            archive
                .binary_path(FmiVersion::Fmi3, "BouncingBall")
                .expect("binary"),
            folder.join("binaries/x86_64-linux/BouncingBall.so")
        );
    }
    drop(archive);
    assert!(
        folder.join("modelDescription.xml").is_file(),
        "a user's folder is kept"
    );
}

#[test]
fn not_a_zip() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("model.fmu");
    std::fs::write(&path, "this is a text file, not a zip archive\n").expect("write");
    let err = FmuArchive::open(&path).expect_err("fails");
    assert_eq!(
        err.to_string(),
        format!(
            "{}: not a zip archive (an FMU is a zip file with modelDescription.xml at its top \
             level)",
            path.display()
        )
    );
    let empty = dir.path().join("empty.fmu");
    std::fs::write(&empty, "").expect("write");
    assert_eq!(
        archive_message(FmuArchive::open(&empty), &empty),
        "not a zip archive (an FMU is a zip file with modelDescription.xml at its top level)"
    );
}

#[test]
fn missing_path() {
    let path = Path::new("/nonexistent/dir/model.fmu");
    assert_eq!(
        archive_message(FmuArchive::open(path), path),
        "no such file or folder (expected a .fmu file or an unpacked FMU folder)"
    );
}

#[test]
fn zip_slip_is_rejected() {
    let dir = tempfile::tempdir().expect("tempdir");
    let evil_name = format!("cosimo-evil-{}", std::process::id());
    let entry = format!("../{evil_name}");
    let fmu = make_zip(
        dir.path(),
        "slip.fmu",
        &[
            Entry::File("modelDescription.xml", MD.as_bytes()),
            Entry::File(&entry, b"owned"),
        ],
    );
    assert_eq!(
        archive_message(FmuArchive::open(&fmu), &fmu),
        format!(
            "entry \"../{evil_name}\" has a \"..\" component and would be written outside the \
             FMU folder; refusing to extract the archive (unsafe zip entry)"
        )
    );
    assert!(!std::env::temp_dir().join(&evil_name).exists());

    let fmu = make_zip(
        dir.path(),
        "slip2.fmu",
        &[Entry::File("resources/../../x", b"owned")],
    );
    assert!(archive_message(FmuArchive::open(&fmu), &fmu)
        .starts_with("entry \"resources/../../x\" has a \"..\" component"));

    let fmu = make_zip(dir.path(), "slip3.fmu", &[Entry::File("..\\x", b"owned")]);
    assert!(archive_message(FmuArchive::open(&fmu), &fmu).starts_with("entry \"..\\x\" has a"));
}

#[test]
fn absolute_entry_is_rejected() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fmu = make_zip(
        dir.path(),
        "abs.fmu",
        &[Entry::File("/tmp/cosimo-absolute", b"owned")],
    );
    assert_eq!(
        archive_message(FmuArchive::open(&fmu), &fmu),
        "entry \"/tmp/cosimo-absolute\" has an absolute path; refusing to extract the archive \
         (unsafe zip entry)"
    );
    let fmu = make_zip(
        dir.path(),
        "drive.fmu",
        &[Entry::File("C:\\Windows\\evil.dll", b"owned")],
    );
    assert!(archive_message(FmuArchive::open(&fmu), &fmu).contains("has an absolute path"));
}

#[test]
fn escaping_symlinks_are_rejected() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (i, target) in ["/etc/passwd", "../../outside", "a/../../b"]
        .iter()
        .enumerate()
    {
        let fmu = make_zip(
            dir.path(),
            &format!("link{i}.fmu"),
            &[
                Entry::File("modelDescription.xml", MD.as_bytes()),
                Entry::Symlink("resources/link", target),
            ],
        );
        assert_eq!(
            archive_message(FmuArchive::open(&fmu), &fmu),
            format!(
                "entry \"resources/link\" is a symbolic link to \"{target}\", which may point \
                 outside the FMU folder; refusing to extract the archive (unsafe zip entry)"
            )
        );
    }
}

#[cfg(unix)]
#[test]
fn inner_symlinks_are_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fmu = make_zip(
        dir.path(),
        "link.fmu",
        &[
            Entry::File("modelDescription.xml", MD.as_bytes()),
            Entry::File("binaries/linux64/libM.so.1", b"real"),
            Entry::Symlink("binaries/linux64/M.so", "libM.so.1"),
        ],
    );
    let archive = FmuArchive::open(&fmu).expect("opens");
    let link = archive.root().join("binaries/linux64/M.so");
    assert!(link
        .symlink_metadata()
        .expect("meta")
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read(&link).expect("read"), b"real");
}

#[test]
fn limits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fmu = make_zip(
        dir.path(),
        "many.fmu",
        &[
            Entry::File("modelDescription.xml", MD.as_bytes()),
            Entry::File("a", b"1"),
            Entry::File("b", b"2"),
            Entry::File("c", b"3"),
        ],
    );
    let few = ExtractLimits {
        max_entries: 3,
        ..ExtractLimits::default()
    };
    assert_eq!(
        archive_message(FmuArchive::open_with_limits(&fmu, few), &fmu),
        "the archive has 4 entries, more than the limit of 3; refusing to extract it"
    );
    let enough = ExtractLimits {
        max_entries: 4,
        ..ExtractLimits::default()
    };
    assert!(FmuArchive::open_with_limits(&fmu, enough).is_ok());

    let big = vec![0u8; 10_000];
    let fmu = make_zip(
        dir.path(),
        "big.fmu",
        &[
            Entry::File("modelDescription.xml", MD.as_bytes()),
            Entry::File("resources/zeros", &big),
        ],
    );
    let small = ExtractLimits {
        max_total_size: 5_000,
        ..ExtractLimits::default()
    };
    assert_eq!(
        archive_message(FmuArchive::open_with_limits(&fmu, small), &fmu),
        format!(
            "the archive declares {} bytes of uncompressed contents, more than the limit of \
             5000 bytes; refusing to extract it",
            10_000 + MD.len()
        )
    );
    assert_eq!(
        ExtractLimits::default(),
        ExtractLimits {
            max_entries: 100_000,
            max_total_size: 2 * 1024 * 1024 * 1024,
            max_entry_size: 2 * 1024 * 1024 * 1024,
        }
    );
}

/// Set the uncompressed size that the local header and the central directory declare for
/// entry `name` of the zip at `path` (a lying archive; the data and its CRC stay).
fn declare_size(path: &Path, name: &str, size: u32) {
    let mut bytes = std::fs::read(path).expect("read zip");
    let mut patched = 0;
    // (signature, offset of the name length, offset of the name, offset of the size)
    for (signature, name_len_at, name_at, size_at) in
        [(b"PK\x03\x04", 26, 30, 22), (b"PK\x01\x02", 28, 46, 24)]
    {
        for i in 0..bytes.len().saturating_sub(name_at) {
            if &bytes[i..i + 4] != signature {
                continue;
            }
            let len = u16::from_le_bytes([bytes[i + name_len_at], bytes[i + name_len_at + 1]]);
            if bytes.get(i + name_at..i + name_at + usize::from(len)) == Some(name.as_bytes()) {
                bytes[i + size_at..i + size_at + 4].copy_from_slice(&size.to_le_bytes());
                patched += 1;
            }
        }
    }
    assert_eq!(patched, 2, "the local header and the central directory");
    std::fs::write(path, bytes).expect("write zip");
}

/// A zip bomb that lies: `real` zero bytes, deflated (64 MiB -> ~64 KiB), declared as `declared`.
fn lying_zip(dir: &Path, name: &str, real: usize, declared: u32) -> PathBuf {
    let path = dir.join(name);
    let file = std::fs::File::create(&path).expect("create zip");
    let mut zip = zip::ZipWriter::new(file);
    let options = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    zip.start_file("modelDescription.xml", options)
        .expect("start");
    zip.write_all(MD.as_bytes()).expect("write");
    zip.start_file("resources/zeros", options).expect("start");
    let chunk = vec![0u8; 1 << 20];
    for _ in 0..real / chunk.len() {
        zip.write_all(&chunk).expect("write");
    }
    zip.write_all(&chunk[..real % chunk.len()]).expect("write");
    zip.finish().expect("finish zip");
    declare_size(&path, "resources/zeros", declared);
    path
}

#[test]
fn entries_are_read_no_further_than_they_declare() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fmu = lying_zip(dir.path(), "bomb.fmu", 64 << 20, 512 << 10);
    assert!(std::fs::metadata(&fmu).expect("meta").len() < 1 << 20);
    // Had it read past the declared 512 KiB, the 1 MiB budget would have stopped it instead.
    let small = ExtractLimits {
        max_total_size: 1 << 20,
        max_entry_size: 1 << 20,
        ..ExtractLimits::default()
    };
    assert_eq!(
        archive_message(FmuArchive::open_with_limits(&fmu, small), &fmu),
        "entry \"resources/zeros\" uncompresses to more than the 524288 bytes it declares (a \
         corrupt or hostile archive); refusing to extract it"
    );
    // Default limits: the same, after 1 KiB.
    let fmu = lying_zip(dir.path(), "bomb2.fmu", 64 << 20, 1024);
    assert_eq!(
        archive_message(FmuArchive::open(&fmu), &fmu),
        "entry \"resources/zeros\" uncompresses to more than the 1024 bytes it declares (a \
         corrupt or hostile archive); refusing to extract it"
    );

    // An honest entry above the per-entry limit is refused before a byte is written.
    let fmu = lying_zip(dir.path(), "big.fmu", 2 << 20, 2 << 20);
    let per_entry = ExtractLimits {
        max_entry_size: 1 << 20,
        ..ExtractLimits::default()
    };
    assert_eq!(
        archive_message(FmuArchive::open_with_limits(&fmu, per_entry), &fmu),
        "entry \"resources/zeros\" declares 2097152 bytes of uncompressed contents, more than \
         the limit of 1048576 bytes per entry; refusing to extract it"
    );
    let archive = FmuArchive::open(&fmu).expect("an honest 2 MiB entry is fine by default");
    let zeros = archive.root().join("resources/zeros");
    assert_eq!(std::fs::metadata(zeros).expect("meta").len(), 2 << 20);

    // An entry that declares more than it holds is only shorter on disk: nothing to refuse.
    let fmu = lying_zip(dir.path(), "short.fmu", 1000, 4000);
    assert!(FmuArchive::open(&fmu).is_ok());
}

#[cfg(unix)]
#[test]
fn pipes_are_not_opened() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("model.fmu");
    let c_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).expect("path");
    // SAFETY: a valid NUL-terminated path and a mode.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    // Opening would block until a writer comes: refused before that.
    assert_eq!(
        archive_message(FmuArchive::open(&fifo), &fifo),
        "is a named pipe (FIFO), not a regular file: cosimo reads an FMU only from a file or \
         folder (a pipe or device may block or never end); save it to a file first"
    );
    let device = Path::new("/dev/zero");
    assert!(archive_message(FmuArchive::open(device), device).starts_with("is a character device"));
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
#[test]
fn missing_binaries() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fmu = make_zip(
        dir.path(),
        "other.fmu",
        &[
            Entry::File("modelDescription.xml", MD.as_bytes()),
            Entry::File("binaries/win64/M.dll", b"MZ"),
            Entry::File("binaries/darwin64/M.dylib", b"lib"),
        ],
    );
    let archive = FmuArchive::open(&fmu).expect("opens");
    assert_eq!(
        binary_message(archive.binary_path(FmiVersion::Fmi2, "M"), &fmu),
        "no binary for this platform (expected binaries/linux64/M.so); the FMU ships binaries \
         for darwin64, win64 only: export it for linux64 or run it on one of those platforms"
    );
    let err = archive
        .binary_path(FmiVersion::Fmi2, "M")
        .expect_err("fails");
    assert!(err.to_string().starts_with(&format!("{}: ", fmu.display())));

    let fmu = make_zip(
        dir.path(),
        "wrongname.fmu",
        &[
            Entry::File("modelDescription.xml", MD.as_bytes()),
            Entry::File("binaries/x86_64-linux/Other.so", b"lib"),
        ],
    );
    let archive = FmuArchive::open(&fmu).expect("opens");
    assert_eq!(
        binary_message(archive.binary_path(FmiVersion::Fmi3, "M"), &fmu),
        "expected binaries/x86_64-linux/M.so, but binaries/x86_64-linux/ holds Other.so; check \
         that modelIdentifier \"M\" in modelDescription.xml matches the library's name"
    );

    let fmu = make_zip(
        dir.path(),
        "source.fmu",
        &[
            Entry::File("modelDescription.xml", MD.as_bytes()),
            Entry::File("sources/model.c", b"int x;"),
        ],
    );
    let archive = FmuArchive::open(&fmu).expect("opens");
    assert_eq!(
        binary_message(archive.binary_path(FmiVersion::Fmi3, "M"), &fmu),
        "the FMU ships no binaries (expected binaries/x86_64-linux/M.so); it may contain only \
         source code: build it for x86_64-linux or ask its vendor for a x86_64-linux binary"
    );
    assert_eq!(
        binary_message(archive.binary_path(FmiVersion::Fmi3, "../../evil"), &fmu),
        "modelIdentifier \"../../evil\" is not a valid file name"
    );
}

#[test]
fn missing_model_description() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fmu = make_zip(
        dir.path(),
        "nomd.fmu",
        &[Entry::File("binaries/linux64/M.so", b"lib")],
    );
    let archive = FmuArchive::open(&fmu).expect("opens");
    let err = archive.model_description_path().expect_err("fails");
    assert_eq!(
        err.to_string(),
        format!(
            "{}: no modelDescription.xml at the top level of the FMU (an FMU holds \
             modelDescription.xml, binaries/ and resources/ at its root)",
            fmu.display()
        )
    );

    let fmu = make_zip(
        dir.path(),
        "nested.fmu",
        &[
            Entry::File("M/modelDescription.xml", MD.as_bytes()),
            Entry::File("M/binaries/linux64/M.so", b"lib"),
        ],
    );
    let archive = FmuArchive::open(&fmu).expect("opens");
    match archive.model_description_path() {
        Err(Error::Archive { message, .. }) => assert_eq!(
            message,
            "no modelDescription.xml at the top level of the FMU (an FMU holds \
             modelDescription.xml, binaries/ and resources/ at its root); there is one in \
             \"M/\": the FMU was packed with an extra top-level folder, zip the contents of \
             \"M/\" instead"
        ),
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn temporary_folder_is_removed_on_drop() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fmu = make_zip(
        dir.path(),
        "m.fmu",
        &[
            Entry::File("modelDescription.xml", MD.as_bytes()),
            Entry::File("resources/deep/deeper/file", b"x"),
        ],
    );
    let first = FmuArchive::open(&fmu).expect("opens");
    let second = FmuArchive::open(&fmu).expect("opens again");
    let (a, b) = (first.root().to_path_buf(), second.root().to_path_buf());
    assert_ne!(a, b, "each open extracts into its own folder");
    assert!(a.join("resources/deep/deeper/file").is_file());
    drop(first);
    assert!(!a.exists());
    assert!(b.join("modelDescription.xml").is_file());
    drop(second);
    assert!(!b.exists());
}
