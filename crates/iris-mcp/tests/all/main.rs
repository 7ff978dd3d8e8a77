//! Integration tests of iris-mcp: one binary, one module per area. Tests that need a
//! peer start real servers (the official Python MCP SDK, `mcp-server-time`) from the
//! virtualenv `tests/fixtures/mcp/setup.sh` creates on first use.
// Tests may unwrap: a failed unwrap is a failed test with a clear location.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod calls;
mod catalog;
mod config;
mod credentials;
mod elicitation;
mod executor;
mod faults;
mod hardening;
mod naming;
mod recovery;
mod sandbox;
mod schema;
mod serve;
mod servers;
mod startup;
mod support;
mod tasks;
