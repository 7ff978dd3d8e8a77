//! Benchmarks: MCP call round-trip and parallel startup (filled in below).
fn main() {
    divan::main();
}
