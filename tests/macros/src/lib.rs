//! Tests of `#[tool]`: a gallery of realistic tools whose definitions are snapshotted
//! and whose bodies run through the `Tool` trait.
//!
//! The crate denies `missing_docs`, so it only compiles when everything `#[tool]`
//! generates for a public function (the tool type and its associated functions) is
//! documented.
#![deny(missing_docs)]

pub mod gallery;
