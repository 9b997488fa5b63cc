//! Compiles the C shim behind FMI 2's variadic logger callback (C-variadic function definitions
//! are unstable in Rust).

fn main() {
    println!("cargo:rerun-if-changed=src/fmu/ffi/fmi2_logger.c");
    cc::Build::new()
        .file("src/fmu/ffi/fmi2_logger.c")
        .warnings(true)
        .compile("cosimo_fmi2_logger");
}
