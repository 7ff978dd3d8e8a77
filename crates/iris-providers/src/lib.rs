#![doc = include_str!("../README.md")]

pub mod adapters;
pub mod error;
pub mod lint;
pub mod strict_nulls;

pub use adapters::{Provider, Strict, strip_strict_nulls, to_provider};
pub use error::{Error, Result};
pub use strict_nulls::{StrictModeCall, StrictNullsLayer};
