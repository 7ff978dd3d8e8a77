//! Integration tests of iris-runner: config loading, assembly and the run loop.
// Tests may unwrap: a panic is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod assemble;
mod config;
mod limits;
mod mcp;
mod run;
mod support;
