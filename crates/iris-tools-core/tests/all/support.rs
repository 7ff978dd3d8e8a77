//! Helpers shared by the test modules.
#![allow(dead_code)] // Each module uses a different subset of the helpers.
