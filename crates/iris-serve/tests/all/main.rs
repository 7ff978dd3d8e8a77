//! `iris-serve` over real HTTP on 127.0.0.1 (reqwest), with scripted agents (no
//! network), on SQLite and on the throw-away PostgreSQL cluster (`.ci/postgres.sh`).
// Tests may unwrap: a panic is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod api;
mod artifacts;
mod events;
mod feed;
mod hosts;
mod statuses;
mod subagents;
mod support;
