//! Errors: [`ServeError`] before serving starts, and the `{"error": {"code", "message"}}`
//! body every refused request gets, with the HTTP status its code maps to
//! ([`status_of`]).

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use iris_runner::RunError;

use crate::api::{ErrorBody, ErrorDetail};

/// Stable codes of this crate's errors (the runner's and the run store's codes pass
/// through as they are).
pub mod codes {
    /// A non-loopback address without `allow_remote` and a bearer token.
    pub const SERVE_ADDRESS_REFUSED: &str = "SERVE_ADDRESS_REFUSED";
    /// The address cannot be bound (in use, not local).
    pub const SERVE_BIND_FAILED: &str = "SERVE_BIND_FAILED";
    /// No agent, a name given twice, or a name that is not `[A-Za-z0-9_.-]+`.
    pub const SERVE_AGENT_INVALID: &str = "SERVE_AGENT_INVALID";
    /// The served agents' `run_store`s are not one store.
    pub const SERVE_RUN_STORE_MISMATCH: &str = "SERVE_RUN_STORE_MISMATCH";
    /// A request names an agent this server does not serve.
    pub const SERVE_AGENT_UNKNOWN: &str = "SERVE_AGENT_UNKNOWN";
    /// A body, query or header that does not parse or breaks a rule.
    pub const SERVE_REQUEST_INVALID: &str = "SERVE_REQUEST_INVALID";
    /// A body over the limit ([`MAX_BODY_BYTES`](crate::MAX_BODY_BYTES)).
    pub const SERVE_REQUEST_TOO_LARGE: &str = "SERVE_REQUEST_TOO_LARGE";
    /// No such route.
    pub const SERVE_NOT_FOUND: &str = "SERVE_NOT_FOUND";
    /// The route does not take this method.
    pub const SERVE_METHOD_NOT_ALLOWED: &str = "SERVE_METHOD_NOT_ALLOWED";
    /// No or a wrong bearer token.
    pub const SERVE_UNAUTHORIZED: &str = "SERVE_UNAUTHORIZED";
    /// A loopback server got a `Host` header naming another host (DNS rebinding).
    pub const SERVE_HOST_REFUSED: &str = "SERVE_HOST_REFUSED";
    /// Cancel of a run that already ended.
    pub const SERVE_RUN_FINISHED: &str = "SERVE_RUN_FINISHED";
    /// Cancel of a run another process drives right now.
    pub const SERVE_RUN_ELSEWHERE: &str = "SERVE_RUN_ELSEWHERE";
    /// A run could not be started or read back (an internal failure).
    pub const SERVE_RUN_FAILED: &str = "SERVE_RUN_FAILED";
    /// No artifact for that call of that run: no such call in the run's log, a result
    /// without an artifact, or its file is gone.
    pub const SERVE_ARTIFACT_NOT_FOUND: &str = "SERVE_ARTIFACT_NOT_FOUND";
    /// The artifact's recorded file is not served: outside the agent's workspace,
    /// through a symlink, not a regular file, or over
    /// [`MAX_ARTIFACT_BYTES`](crate::MAX_ARTIFACT_BYTES).
    pub const SERVE_ARTIFACT_REFUSED: &str = "SERVE_ARTIFACT_REFUSED";
    /// The artifact's file cannot be read by the server: the agent's workspace cannot
    /// be opened, or reading failed (an internal failure).
    pub const SERVE_ARTIFACT_UNREADABLE: &str = "SERVE_ARTIFACT_UNREADABLE";
    /// The server is stopping.
    pub const SERVE_SHUTTING_DOWN: &str = "SERVE_SHUTTING_DOWN";
    /// The client has as many requests in progress as it may
    /// ([`ServeOptions::max_per_client`](crate::ServeOptions::max_per_client)).
    pub const SERVE_TOO_MANY_REQUESTS: &str = "SERVE_TOO_MANY_REQUESTS";
}

/// Why a server could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The address breaks the rule for non-loopback addresses.
    #[error("{message}")]
    AddressRefused {
        /// Which rule.
        message: String,
    },
    /// Binding failed.
    #[error("cannot listen on {addr}: {message}")]
    Bind {
        /// The address.
        addr: std::net::SocketAddr,
        /// The OS's reason.
        message: String,
    },
    /// The agents as given are not servable.
    #[error("{message}")]
    Agent {
        /// What is wrong.
        message: String,
    },
    /// The agents do not share one run store.
    #[error("{message}")]
    RunStoreMismatch {
        /// Which agents differ, and how.
        message: String,
    },
    /// An agent's YAML could not become a runner, or its store could not be opened.
    #[error("agent `{name}`: {source}")]
    Runner {
        /// The agent's name.
        name: String,
        /// The runner's error.
        source: iris_runner::Error,
    },
}

impl ServeError {
    /// The stable code.
    pub fn code(&self) -> &'static str {
        match self {
            ServeError::AddressRefused { .. } => codes::SERVE_ADDRESS_REFUSED,
            ServeError::Bind { .. } => codes::SERVE_BIND_FAILED,
            ServeError::Agent { .. } => codes::SERVE_AGENT_INVALID,
            ServeError::RunStoreMismatch { .. } => codes::SERVE_RUN_STORE_MISMATCH,
            ServeError::Runner { source, .. } => source.code(),
        }
    }
}

/// The HTTP status of an error code: the runner's answer codes as the API promises
/// (`RUN_ANSWER_INVALID` 422, a stale or busy run 409), this crate's, and 500 for
/// anything else.
pub fn status_of(code: &str) -> StatusCode {
    use iris_runner::codes as run;
    use iris_runner::store::codes as store;
    match code {
        store::RUN_NOT_FOUND | codes::SERVE_NOT_FOUND | codes::SERVE_ARTIFACT_NOT_FOUND => {
            StatusCode::NOT_FOUND
        }
        store::RUN_BUSY
        | store::RUN_LEASE_LOST
        | run::RUN_NOT_WAITING
        | run::RUN_INTERACTION_STALE
        | run::RUN_IS_SUBAGENT
        | codes::SERVE_RUN_FINISHED
        | codes::SERVE_RUN_ELSEWHERE => StatusCode::CONFLICT,
        run::RUN_ANSWER_INVALID | run::RUN_INPUT_INVALID | codes::SERVE_AGENT_UNKNOWN => {
            StatusCode::UNPROCESSABLE_ENTITY
        }
        codes::SERVE_REQUEST_INVALID => StatusCode::BAD_REQUEST,
        codes::SERVE_REQUEST_TOO_LARGE => StatusCode::PAYLOAD_TOO_LARGE,
        codes::SERVE_METHOD_NOT_ALLOWED => StatusCode::METHOD_NOT_ALLOWED,
        codes::SERVE_UNAUTHORIZED => StatusCode::UNAUTHORIZED,
        codes::SERVE_HOST_REFUSED | codes::SERVE_ARTIFACT_REFUSED => StatusCode::FORBIDDEN,
        codes::SERVE_TOO_MANY_REQUESTS => StatusCode::TOO_MANY_REQUESTS,
        store::RUN_STORE_FAILED | codes::SERVE_SHUTTING_DOWN => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// A refused request: its code, message and status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApiError {
    pub(crate) code: String,
    pub(crate) message: String,
}

impl ApiError {
    pub(crate) fn new(code: &str, message: impl Into<String>) -> Self {
        Self {
            code: code.to_owned(),
            message: message.into(),
        }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::new(codes::SERVE_REQUEST_INVALID, message)
    }
}

impl From<RunError> for ApiError {
    fn from(e: RunError) -> Self {
        Self {
            code: e.code,
            message: e.message,
        }
    }
}

impl From<iris_runner::store::StoreError> for ApiError {
    fn from(e: iris_runner::store::StoreError) -> Self {
        Self::new(e.code(), e.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = status_of(&self.code);
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code,
                message: self.message,
            },
        };
        let mut response = (status, Json(body)).into_response();
        if status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer"),
            );
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every code the API documents has its status; anything else is an internal
    /// failure.
    #[test]
    fn codes_map_to_their_statuses() {
        for (code, status) in [
            ("SERVE_REQUEST_INVALID", 400),
            ("SERVE_UNAUTHORIZED", 401),
            ("SERVE_HOST_REFUSED", 403),
            ("SERVE_ARTIFACT_REFUSED", 403),
            ("RUN_NOT_FOUND", 404),
            ("SERVE_ARTIFACT_NOT_FOUND", 404),
            ("SERVE_NOT_FOUND", 404),
            ("SERVE_METHOD_NOT_ALLOWED", 405),
            ("RUN_INTERACTION_STALE", 409),
            ("RUN_NOT_WAITING", 409),
            ("RUN_BUSY", 409),
            ("RUN_LEASE_LOST", 409),
            ("RUN_IS_SUBAGENT", 409),
            ("SERVE_RUN_FINISHED", 409),
            ("SERVE_RUN_ELSEWHERE", 409),
            ("SERVE_REQUEST_TOO_LARGE", 413),
            ("RUN_ANSWER_INVALID", 422),
            ("RUN_INPUT_INVALID", 422),
            ("SERVE_AGENT_UNKNOWN", 422),
            ("SERVE_TOO_MANY_REQUESTS", 429),
            ("SERVE_ARTIFACT_UNREADABLE", 500),
            ("SERVE_RUN_FAILED", 500),
            ("SOMETHING_ELSE", 500),
            ("RUN_STORE_FAILED", 503),
            ("SERVE_SHUTTING_DOWN", 503),
        ] {
            assert_eq!(status_of(code).as_u16(), status, "{code}");
        }
    }
}
