#![doc = include_str!("../README.md")]

pub mod atomic;
pub mod blocking;
#[cfg(unix)]
pub mod bounded_read;
pub mod state_dir;
pub mod workspace;
pub mod yaml;
