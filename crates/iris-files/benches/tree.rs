//! Benchmarks of the file tools on a generated tree (filled in below).

fn main() {}
