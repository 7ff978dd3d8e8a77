//! Integration tests of iris-providers: one binary, one module per area.

mod adapters;
mod lint;
mod strict_nulls;
