//! Integration tests of iris-decision: one binary, one module per area.

// Tests state their expectations with unwrap/expect: a failure is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod config;
mod discovery;
mod error;
mod jev;
mod request;
mod response;
mod support;
mod tool_search;
mod wire_doc;
