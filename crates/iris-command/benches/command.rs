//! Benchmarks: command (placeholder replaced below).
fn main() {}
