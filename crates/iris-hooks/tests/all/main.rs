//! Integration tests of iris-hooks: one binary, one module per area.
// Tests may unwrap: a failed unwrap is a failed test with a clear location.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod command;
mod config;
mod dispatcher;
mod event;
mod registration;
mod v2;
