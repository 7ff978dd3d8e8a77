#![doc = include_str!("../README.md")]
// A broken test server or fixture should fail the test loudly, so this crate unwraps
// where a library would return an error.
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod http;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod sse;
#[cfg(unix)]
pub mod symlinks;
pub mod workspace;
