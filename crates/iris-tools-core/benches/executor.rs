//! Benchmarks: executor.
fn main() {
    divan::main();
}
