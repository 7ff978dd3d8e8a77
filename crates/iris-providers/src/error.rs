//! [`Error`]: what converting tool specs to a provider's format fails with.

use iris_tools_core::{ToolErrorInfo, codes};

/// Errors of the provider adapters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A provider adapter cannot express a schema.
    #[error("tool `{tool}`: schema not supported by {provider}: {reason}")]
    UnsupportedSchema {
        /// The tool whose schema failed.
        tool: String,
        /// Which adapter refused it.
        provider: String,
        /// Why.
        reason: String,
    },
}

impl Error {
    /// The stable error code (`UNSUPPORTED_SCHEMA`).
    pub fn code(&self) -> &'static str {
        match self {
            Error::UnsupportedSchema { .. } => codes::UNSUPPORTED_SCHEMA,
        }
    }

    /// The structured form a tool output carries (code and one-line message), as the
    /// other Iris error types offer.
    ///
    /// ```
    /// use iris_providers::Error;
    ///
    /// let err = Error::UnsupportedSchema {
    ///     tool: "odd_tool".into(),
    ///     provider: "gemini".into(),
    ///     reason: "`$ref` cycles are not supported".into(),
    /// };
    /// let info = err.to_info();
    /// assert_eq!(info.code, "UNSUPPORTED_SCHEMA");
    /// assert_eq!(info.message, err.to_string());
    /// ```
    pub fn to_info(&self) -> ToolErrorInfo {
        ToolErrorInfo::new(self.code(), self.to_string())
    }
}

/// Shorthand result type for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
