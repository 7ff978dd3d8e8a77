//! Integration tests of iris-discovery: one binary, one module per area.

mod discovery;
#[path = "../eval/mod.rs"]
mod eval;
mod search;
