//! Benchmarks: search.
fn main() {
    divan::main();
}
