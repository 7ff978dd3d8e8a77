//! Integration tests of iris-fs: one binary, one module per area.

mod workspace;
