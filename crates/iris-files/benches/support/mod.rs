//! Code shared by the benchmarks and the tree generator example.

pub(crate) mod fixture;
pub(crate) mod tree;
