//! Integration tests of iris-tools-core: one binary, one module per area.

mod definition;
mod endpoint;
mod registry;
