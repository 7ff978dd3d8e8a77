//! The iris command line.
fn main() {}
