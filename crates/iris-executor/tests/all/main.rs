//! Integration tests of iris-executor: one binary, one module per area.

mod artifact;
mod breaker;
mod executor;
mod permission;
mod support;
