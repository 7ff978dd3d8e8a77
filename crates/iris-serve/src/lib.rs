#![doc = include_str!("../README.md")]

pub mod agents;
pub mod api;
mod artifact;
mod auth;
mod console;
mod diff;
pub mod error;
mod feed;
mod host;
mod ledger;
mod limit;
mod mask;
pub mod openapi;
mod recover;
mod routes;
pub mod server;
mod sse;

pub use agents::{Agents, DEFAULT_AGENT};
pub use artifact::MAX_ARTIFACT_BYTES;
pub use error::{ServeError, codes, status_of};
pub use feed::COALESCE;
pub use host::{MAX_EVENT_BYTES, MAX_EVENTS_PER_RUN, SHUTDOWN_GRACE};
pub use recover::RECOVER_EVERY;
pub use routes::MAX_BODY_BYTES;
pub use server::{
    Bound, CLOSE_TIMEOUT, CONNECTION_GRACE, DEFAULT_MAX_PER_CLIENT, ServeOptions, Server, Stopped,
};
pub use sse::KEEP_ALIVE;
