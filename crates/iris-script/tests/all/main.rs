//! iris-script's integration tests: real python3 processes (and a real Docker engine)
//! through the command service, real tools through the executor.
// Tests may unwrap: a panic is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod approval;
mod docker;
mod script;
mod spans;
mod support;
