//! Tests for the `executor` area: the one path every tool call travels.
//!
//! Real tools (`FnTool` and small `Tool` impls), no sleeps-for-timing: overlap is
//! proven with barriers, deadlines and the breaker with a paused tokio clock and a
//! manual breaker clock.
#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests fail loudly on broken fixtures.

mod fixtures;

mod approval;
mod artifact;
mod breaker;
mod deadline;
mod observability;
mod ordering;
mod path;
mod scale;
