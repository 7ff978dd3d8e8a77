//! One test binary for `#[tool]`: schema snapshots, runtime behaviour of the gallery,
//! the typed builder, and the trybuild compile tests.
// Tests fail loudly on purpose: an unwrap here is an assertion.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod definitions;
mod returns;
mod runtime;
mod support;
mod typed_builder;
mod ui;
