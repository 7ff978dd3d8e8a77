#![doc = include_str!("../README.md")]

pub mod agents;
pub mod api;
mod auth;
mod console;
pub mod error;
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
pub use error::{ServeError, codes, status_of};
pub use host::{MAX_EVENT_BYTES, MAX_EVENTS_PER_RUN, SHUTDOWN_GRACE};
pub use recover::RECOVER_EVERY;
pub use routes::MAX_BODY_BYTES;
pub use server::{
    Bound, CLOSE_TIMEOUT, CONNECTION_GRACE, DEFAULT_MAX_PER_CLIENT, ServeOptions, Server, Stopped,
};
pub use sse::KEEP_ALIVE;
