//! Integration tests of iris-discovery: one binary, one module per area.

mod config;
mod discovery;
#[path = "../eval/mod.rs"]
mod eval;
#[cfg(feature = "embed")]
mod fast_embed;
#[cfg(feature = "embed")]
mod fetch;
#[cfg(feature = "embed")]
mod hybrid;
#[cfg(feature = "embed")]
mod hybrid_protocol;
mod protocol;
mod search;
#[cfg(feature = "embed")]
mod vectors;
