//! iris-script's integration tests: real python3 processes (and a real Docker engine)
//! through the command service, real tools through the executor.

mod approval;
mod docker;
mod script;
mod support;
