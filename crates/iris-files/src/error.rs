//! [`Error`]: mistakes found while building the file tools (not while running them).

/// Errors raised while configuring the file service.
///
/// Failures of a single tool call are not `Error`s: they travel to the model inside a
/// [`iris_tools_core::ToolOutput`] with one of the codes in [`crate::codes`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A [`crate::FileToolsConfig`] value is out of range.
    #[error("invalid file tools config: {0}")]
    InvalidConfig(String),
}
