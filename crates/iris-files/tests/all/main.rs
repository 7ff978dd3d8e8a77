//! Integration tests of iris-files: one binary, one module per area.
//!
//! Every call goes through `support::Harness::call`, which mirrors the executor's
//! input path (JSON-schema validation, then `validate_input`, then `run`).
// Tests may unwrap: a panic is a test failure with a clear location.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod atomic;
mod definitions;
mod edit;
#[cfg(unix)] // The escape table is built from symlinks.
mod escape;
mod executor;
mod grep;
#[cfg(unix)] // FIFOs and symlinks as ignore files.
mod ignore_files;
mod images;
mod inputs;
mod list;
mod paging;
mod preview;
mod publish;
#[cfg(unix)] // Symlink swaps and FIFOs.
mod race;
mod read;
mod support;
