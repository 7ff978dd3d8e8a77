//! [`McpError`]: why loading a config or preparing servers failed, with stable codes.
//!
//! Failures of a single *call* are not `McpError`s: they travel inside the call's
//! [`iris_tools_core::ToolOutput`] with one of the [`codes`] below (or core's
//! `TOOL_TIMEOUT` / `CANCELLED`).

use std::fmt;
use std::path::PathBuf;

/// Stable `SCREAMING_SNAKE` codes of the MCP layer.
///
/// They complement [`iris_tools_core::codes`]: a timed-out call still reports core's
/// `TOOL_TIMEOUT`, a cancelled one `CANCELLED`. Never rename a code.
pub mod codes {
    /// The MCP config file (or an override) broke a rule.
    pub const MCP_INVALID_CONFIG: &str = "MCP_INVALID_CONFIG";
    /// A server could not be started or did not complete its handshake.
    pub const MCP_STARTUP_FAILED: &str = "MCP_STARTUP_FAILED";
    /// A server did not finish startup (connect, handshake, tool listing) in time.
    pub const MCP_STARTUP_TIMEOUT: &str = "MCP_STARTUP_TIMEOUT";
    /// Publishing the catalog into the registry failed (a name conflict).
    pub const MCP_REGISTRY_CONFLICT: &str = "MCP_REGISTRY_CONFLICT";
    /// The manager was closed; it cannot prepare again.
    pub const MCP_CLOSED: &str = "MCP_CLOSED";
    /// The manager has not been prepared yet (`refresh_catalog` before `prepare`).
    pub const MCP_NOT_PREPARED: &str = "MCP_NOT_PREPARED";
    /// A diagnostic: a server whose session broke was started again.
    pub const MCP_SERVER_RESTARTED: &str = "MCP_SERVER_RESTARTED";
    /// The tool ran and the server reported `isError: true`.
    pub const MCP_TOOL_ERROR: &str = "MCP_TOOL_ERROR";
    /// The server is not connected: the manager was closed, the session broke and
    /// restarting the server failed (or waits out its backoff), or an HTTP server
    /// refused the connection. The call did not reach the server.
    pub const MCP_CONNECTION_CLOSED: &str = "MCP_CONNECTION_CLOSED";
    /// The session broke while the call was out (the process died, the stream
    /// closed) and the tool is not safe to repeat: the call may have run. The
    /// server is restarted on the next call.
    pub const MCP_CONNECTION_LOST: &str = "MCP_CONNECTION_LOST";
    /// The tool declares an `outputSchema` and its `structuredContent` is missing or
    /// does not match it.
    pub const MCP_OUTPUT_SCHEMA_MISMATCH: &str = "MCP_OUTPUT_SCHEMA_MISMATCH";
    /// The server no longer lists the tool (a catalog refresh after
    /// `notifications/tools/list_changed`); it was not called.
    pub const MCP_TOOL_REMOVED: &str = "MCP_TOOL_REMOVED";
    /// The server answered the request with a JSON-RPC error or an unexpected reply.
    pub const MCP_REQUEST_FAILED: &str = "MCP_REQUEST_FAILED";
    /// An HTTP server rejected the credentials (401, 403): the call did not run.
    /// `details.secret` names the host variable the credentials come from, when the
    /// server's config reads one (see `ServerConfig::credential_vars`).
    pub const MCP_AUTH_REQUIRED: &str = "MCP_AUTH_REQUIRED";
    /// The server sent something that is not valid MCP (a non-JSON stdout line, an
    /// oversized message); it was ignored and the session went on.
    pub const MCP_PROTOCOL_WARNING: &str = "MCP_PROTOCOL_WARNING";
    /// The server's answer to a request was larger than the message cap
    /// ([`crate::DEFAULT_MAX_MESSAGE_BYTES`] unless the host set another); it was dropped
    /// and the request failed at once.
    pub const MCP_RESPONSE_TOO_LARGE: &str = "MCP_RESPONSE_TOO_LARGE";
    /// The server's answer to a request could not be read as JSON-RPC (not JSON, nested
    /// deeper than the parser allows, not a valid MCP message); the request failed at
    /// once.
    pub const MCP_RESPONSE_INVALID: &str = "MCP_RESPONSE_INVALID";
    /// A diagnostic: a server asked for user input (elicitation) and nobody could
    /// answer (no host handler); it was declined, and the call's result says so.
    pub const MCP_ELICITATION_DECLINED: &str = "MCP_ELICITATION_DECLINED";
    /// A call stopped because its server needs input nobody could give now (the
    /// host answered an elicitation with `Wait`); `details.input_required` says what
    /// to ask, and the call can be sent again with the answer.
    pub const MCP_INPUT_REQUIRED: &str = "MCP_INPUT_REQUIRED";
    /// The server asked, inside a call, for something Iris does not offer
    /// (sampling, roots), or kept asking past the round limit; the call ended.
    pub const MCP_INPUT_UNSUPPORTED: &str = "MCP_INPUT_UNSUPPORTED";
    /// A call the server ran as a task (the tasks extension) ended `failed` or
    /// `cancelled` on the server's side, or its task could not be followed.
    pub const MCP_TASK_FAILED: &str = "MCP_TASK_FAILED";
    /// A tool's input schema is not usable (remote `$ref`, unresolvable `$ref`, not an
    /// object schema).
    pub const MCP_INVALID_SCHEMA: &str = "MCP_INVALID_SCHEMA";
    /// `mcp serve`: a call needs a human's approval and the connected client cannot be
    /// asked (it declared no elicitation capability, or asking it failed); the call
    /// did not run.
    pub const MCP_APPROVAL_UNAVAILABLE: &str = "MCP_APPROVAL_UNAVAILABLE";
    /// `mcp serve`: a 2026-07-28 client retried a call with a `requestState` that is
    /// unknown, expired or already used, or with another tool or other arguments than
    /// the call that asked for approval; the call did not run. It comes as the
    /// JSON-RPC error's `data.code` (an `invalid_params` error), and the call can be
    /// sent again without the state to be asked anew.
    pub const MCP_APPROVAL_STATE_INVALID: &str = "MCP_APPROVAL_STATE_INVALID";
    /// `mcp serve`: the server could not listen or a session could not start (also
    /// the result of a call whose approval handle could not be made).
    pub const MCP_SERVE_FAILED: &str = "MCP_SERVE_FAILED";
    /// `mcp serve`: the HTTP address is not loopback and serving it was not allowed
    /// explicitly (with a bearer token).
    pub const MCP_SERVE_ADDRESS_REFUSED: &str = "MCP_SERVE_ADDRESS_REFUSED";
}

/// Where a configuration error sits: the file, the server and the field.
///
/// Every config error names all three that apply, so a user can jump straight to it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConfigLocation {
    /// The MCP config file.
    pub file: PathBuf,
    /// The raw server name, when the error belongs to one server.
    pub server: Option<String>,
    /// The field, when the error belongs to one field (`env.API_KEY`, `startup_timeout_sec`).
    pub field: Option<String>,
}

impl fmt::Display for ConfigLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(server) = &self.server {
            write!(f, ": server `{server}`")?;
        }
        if let Some(field) = &self.field {
            write!(f, ": field `{field}`")?;
        }
        Ok(())
    }
}

/// Errors of the MCP layer: configuration, startup and publication.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The config file or an override broke a rule.
    #[error("{location}: {message}")]
    Config {
        /// File, server and field.
        location: ConfigLocation,
        /// What is wrong, in one line.
        message: String,
    },
    /// A required server failed to start; prepare stopped.
    #[error("required MCP server `{server}` failed to start: {message}")]
    Startup {
        /// The raw server name.
        server: String,
        /// `MCP_STARTUP_FAILED`, `MCP_STARTUP_TIMEOUT`, `MCP_INVALID_CONFIG`, or
        /// `MCP_RESPONSE_TOO_LARGE` / `MCP_RESPONSE_INVALID` when the server's answer
        /// to `tools/list` had to be dropped.
        code: &'static str,
        /// Why, in one line (with the stderr tail of a stdio server when there is one),
        /// with the server's secrets redacted (see the crate docs).
        message: String,
    },
    /// The catalog could not be published into the registry.
    #[error("publishing MCP tools failed")]
    Registry(#[from] iris_tools_core::Error),
    /// The manager was closed.
    #[error("the MCP manager is closed")]
    Closed,
    /// The call needs a prepared manager.
    #[error("the MCP manager is not prepared; call prepare first")]
    NotPrepared,
    /// `mcp serve` could not serve (see [`crate::serve`]).
    #[error("{message}")]
    Serve {
        /// `MCP_SERVE_FAILED` or `MCP_SERVE_ADDRESS_REFUSED`.
        code: &'static str,
        /// Why, in one line.
        message: String,
    },
}

impl McpError {
    /// The stable code of this error (one of [`codes`]).
    pub fn code(&self) -> &'static str {
        match self {
            McpError::Config { .. } => codes::MCP_INVALID_CONFIG,
            McpError::Startup { code, .. } => code,
            McpError::Registry(_) => codes::MCP_REGISTRY_CONFLICT,
            McpError::Closed => codes::MCP_CLOSED,
            McpError::NotPrepared => codes::MCP_NOT_PREPARED,
            McpError::Serve { code, .. } => code,
        }
    }

    pub(crate) fn config(
        file: impl Into<PathBuf>,
        server: Option<&str>,
        field: Option<&str>,
        message: impl Into<String>,
    ) -> Self {
        McpError::Config {
            location: ConfigLocation {
                file: file.into(),
                server: server.map(str::to_owned),
                field: field.map(str::to_owned),
            },
            // A config error may quote a value from the file; a URL in it keeps its
            // shape but not its userinfo or query values.
            message: crate::redact::redact_urls(&message.into()),
        }
    }
}

/// Shorthand result type for this crate.
pub type Result<T, E = McpError> = std::result::Result<T, E>;
