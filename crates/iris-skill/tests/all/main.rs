//! Integration tests of iris-skill: one binary, one module per area.

// Tests state their expectations with unwrap/expect: a failure is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod catalog;
mod config;
mod discovery;
mod error;
mod limits;
mod load;
mod realistic;
mod registry;
mod subagent;
mod support;
