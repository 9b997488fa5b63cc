//! Compiles the C shim behind FMI 2's variadic logger callback (C-variadic function definitions
//! are unstable in Rust), and links the `cosimo` executable as position-dependent on Linux.

fn main() {
    println!("cargo:rerun-if-changed=src/fmu/ffi/fmi2_logger.c");
    cc::Build::new()
        .file("src/fmu/ffi/fmi2_logger.c")
        .warnings(true)
        .compile("cosimo_fmi2_logger");
    // A position-independent executable has the dynamic loader apply some 22,000 relative
    // relocations at every start: it reads 0.5 MiB of them and dirties 0.3 MiB of pointer
    // tables, 0.8 MiB of the peak resident memory (issue 16). The code stays as compiled;
    // only the executable, not the library, is linked at a fixed address.
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
