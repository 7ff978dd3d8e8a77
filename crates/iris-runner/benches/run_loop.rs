//! Per-turn overhead of the run loop with the scripted provider (filled in by the
//! loop benchmark work).

fn main() {
    divan::main();
}
