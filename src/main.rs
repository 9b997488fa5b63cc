//! The `cosimo` command line: parse, call the library, print, exit code.

fn main() {
    println!("cosimo {}", env!("CARGO_PKG_VERSION"));
}
