//! Integration tests of iris-tools-core: one binary, one module per area.

mod adapters;
mod artifact;
mod breaker;
mod definition;
mod discovery;
mod executor;
mod lint;
mod permission;
mod registry;
mod search;
mod support;
mod workspace;
