//! Integration tests of iris-runner: config loading, assembly and the run loop.
// Tests may unwrap: a panic is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod assemble;
mod config;
mod durable;
mod limits;
mod mcp;
#[cfg(feature = "otel")]
mod otel;
mod retry;
mod run;
mod script;
mod secret;
mod store_events;
mod store_history;
mod subagent;
mod support;
