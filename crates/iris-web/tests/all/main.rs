//! Integration tests of iris-web: one binary, one module per area. Every request goes
//! to a local server on 127.0.0.1 (see `support`); nothing leaves the machine.

// Tests state their expectations with unwrap/expect: a failure is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod client;
mod credential;
mod definition;
mod errors;
mod input;
mod results;
mod support;
mod wire;
