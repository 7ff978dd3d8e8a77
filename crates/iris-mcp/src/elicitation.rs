//! Elicitation: a server asking the user for input in the middle of a call.
//!
//! Two paths reach Iris. On a 2026-07-28 session the server answers `tools/call`
//! with an `input_required` result (SEP-2322, multi round-trip requests); the call
//! asks the host and sends the request again with the answers. On an older
//! session the server sends a standalone `elicitation/create` request while the call
//! runs. Both go to the same host callback, an [`ElicitationHandler`] the host puts
//! into the call's [`ToolExecutionContext::extensions`](iris_tools_core::ToolExecutionContext)
//! as an [`McpElicitation`].
//!
//! Nothing is declined silently: without a handler the request is declined, the
//! server gets `decline`, the manager records an `MCP_ELICITATION_DECLINED`
//! diagnostic, and the call's result carries a note saying what was asked and
//! why nobody answered (`metadata.mcp.elicitations` and a text block).
//!
//! ```
//! use iris_mcp::{ElicitationAnswer, ElicitationHandler, ElicitationRequest, McpElicitation};
//! use iris_tools_core::{BoxFuture, ToolExecutionContext};
//!
//! struct AlwaysBlue;
//! impl ElicitationHandler for AlwaysBlue {
//!     fn elicit<'a>(&'a self, _request: &'a ElicitationRequest) -> BoxFuture<'a, ElicitationAnswer> {
//!         Box::pin(async { ElicitationAnswer::accept(serde_json::json!({"colour": "blue"})) })
//!     }
//! }
//! let ctx = ToolExecutionContext::new("/srv/workspace").with_extension(McpElicitation::new(AlwaysBlue));
//! assert!(ctx.extensions.get::<McpElicitation>().is_some());
//! ```

use std::sync::Arc;

use iris_tools_core::BoxFuture;
use iris_tools_core::{ToolErrorInfo, ToolOutput};
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::error::codes;

/// What the server wants from the user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ElicitationKind {
    /// Fill in a form: `requested_schema` is a flat JSON Schema object whose
    /// properties are strings, numbers, integers, booleans or enums.
    Form {
        /// The schema of the answer.
        requested_schema: Value,
    },
    /// Open a URL and complete something there (a sign-in, a payment); the answer
    /// is only whether the user agreed to go.
    Url {
        /// Where to go.
        url: String,
        /// The server's id of this elicitation (empty on 2026-07-28, which dropped it).
        elicitation_id: String,
    },
}

/// One request for user input, as the host sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ElicitationRequest {
    /// The raw server name.
    pub server: String,
    /// The Iris name of the tool whose call asked (`mcp__<server>__<tool>`).
    pub tool: String,
    /// The call id from the context (empty outside the executor).
    pub call_id: String,
    /// The server's message to the user.
    pub message: String,
    /// Form or URL.
    #[serde(flatten)]
    pub kind: ElicitationKind,
}

impl ElicitationRequest {
    /// A form's fields as `(name, JSON type)` in schema order (`string` when the
    /// schema gives no type); empty for a URL request.
    ///
    /// ```
    /// use iris_mcp::ElicitationRequest;
    /// let request: ElicitationRequest = serde_json::from_value(serde_json::json!({
    ///     "server": "s", "tool": "mcp__s__t", "call_id": "c", "message": "m",
    ///     "mode": "form",
    ///     "requested_schema": {"type": "object", "properties": {"n": {"type": "integer"}, "x": {}}}
    /// })).unwrap();
    /// assert_eq!(request.form_fields(), [("n".to_owned(), "integer".to_owned()), ("x".to_owned(), "string".to_owned())]);
    /// ```
    pub fn form_fields(&self) -> Vec<(String, String)> {
        let ElicitationKind::Form { requested_schema } = &self.kind else {
            return Vec::new();
        };
        requested_schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|props| {
                props
                    .iter()
                    .map(|(name, field)| {
                        let kind = field
                            .get("type")
                            .and_then(Value::as_str)
                            .unwrap_or("string");
                        (name.clone(), kind.to_owned())
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The mode's wire name: `form` or `url`.
    pub fn mode(&self) -> &'static str {
        match self.kind {
            ElicitationKind::Form { .. } => "form",
            ElicitationKind::Url { .. } => "url",
        }
    }

    pub(crate) fn from_params(
        server: &str,
        tool: &str,
        call_id: &str,
        params: &ElicitRequestParams,
    ) -> Self {
        let (message, kind) = match params {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } => (
                message.clone(),
                ElicitationKind::Form {
                    requested_schema: serde_json::to_value(requested_schema)
                        .unwrap_or_else(|_| json!({"type": "object"})),
                },
            ),
            ElicitRequestParams::UrlElicitationParams {
                message,
                url,
                elicitation_id,
                ..
            } => (
                message.clone(),
                ElicitationKind::Url {
                    url: url.clone(),
                    elicitation_id: elicitation_id.clone(),
                },
            ),
            // A mode this version does not know: shown as a form without fields, so
            // the host can still decline it with the server's message in view.
            _ => (
                String::new(),
                ElicitationKind::Form {
                    requested_schema: json!({"type": "object"}),
                },
            ),
        };
        Self {
            server: server.to_owned(),
            tool: tool.to_owned(),
            call_id: call_id.to_owned(),
            message,
            kind,
        }
    }
}

/// The host's answer to an [`ElicitationRequest`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ElicitationAnswer {
    /// The user answered: the form's values (an object), or `None` for a URL the
    /// user agreed to open.
    Accept {
        /// The values, matching the requested schema.
        content: Option<Map<String, Value>>,
    },
    /// The user (or the host, for lack of one) said no; the call may go on.
    Decline {
        /// Why, for the result and the diagnostics (the server only sees `decline`).
        reason: String,
    },
    /// The user dismissed the request without choosing.
    Cancel {
        /// Why, for the result and the diagnostics.
        reason: String,
    },
    /// Nobody can answer now, someone may later. On a 2026-07-28 session (an
    /// `input_required` result, whose server keeps no state between rounds) the
    /// call ends at once with `MCP_INPUT_REQUIRED`, its [`InputRequired`] saying
    /// what to ask; sent again with an [`McpInputResume`] it goes on where it
    /// stopped. An older session's server waits on the open request, so there it
    /// is declined with the reason.
    Wait {
        /// Why nobody answers now.
        reason: String,
    },
}

impl ElicitationAnswer {
    /// Accepts with a form's values; a value that is not an object is sent as no
    /// content.
    pub fn accept(content: Value) -> Self {
        match content {
            Value::Object(map) => Self::Accept { content: Some(map) },
            _ => Self::Accept { content: None },
        }
    }

    /// Declines with a reason.
    pub fn decline(reason: impl Into<String>) -> Self {
        Self::Decline {
            reason: reason.into(),
        }
    }

    /// The action's name: `accept`, `decline`, `cancel` or `wait`.
    pub fn action(&self) -> &'static str {
        match self {
            Self::Accept { .. } => "accept",
            Self::Decline { .. } => "decline",
            Self::Cancel { .. } => "cancel",
            Self::Wait { .. } => "wait",
        }
    }

    /// The answer as the server receives it (an `ElicitResult`).
    pub fn to_wire(&self) -> Value {
        serde_json::to_value(self.to_result()).unwrap_or_else(|_| json!({"action": "cancel"}))
    }

    pub(crate) fn to_result(&self) -> ElicitResult {
        match self {
            Self::Accept { content } => {
                let result = ElicitResult::new(ElicitationAction::Accept);
                match content {
                    Some(c) => result.with_content(Value::Object(c.clone())),
                    None => result,
                }
            }
            Self::Decline { .. } => ElicitResult::new(ElicitationAction::Decline),
            Self::Cancel { .. } | Self::Wait { .. } => ElicitResult::new(ElicitationAction::Cancel),
        }
    }

    fn reason(&self) -> Option<&str> {
        match self {
            Self::Accept { .. } => None,
            Self::Decline { reason } | Self::Cancel { reason } | Self::Wait { reason } => {
                Some(reason)
            }
        }
    }
}

/// The host's answerer of elicitations (a TTY prompt, a UI, a run's host).
pub trait ElicitationHandler: Send + Sync {
    /// The answer to one request. It may take as long as the user does: the call's
    /// idle timeout and cap do not count the wait. When the call is cancelled (or
    /// ends) first, the returned future is dropped unfinished, so a prompt it
    /// shows should be taken down in its `Drop`.
    fn elicit<'a>(&'a self, request: &'a ElicitationRequest) -> BoxFuture<'a, ElicitationAnswer>;
}

/// The context extension that carries a host's [`ElicitationHandler`] to MCP calls.
#[derive(Clone)]
pub struct McpElicitation(pub(crate) Arc<dyn ElicitationHandler>);

impl McpElicitation {
    /// Wraps `handler`.
    pub fn new(handler: impl ElicitationHandler + 'static) -> Self {
        Self(Arc::new(handler))
    }
}

impl std::fmt::Debug for McpElicitation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpElicitation").finish_non_exhaustive()
    }
}

/// A call stopped for input nobody could give yet (`MCP_INPUT_REQUIRED`, in its
/// error's `details.input_required`): what to ask, and what to send the call
/// again with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct InputRequired {
    /// The request to ask.
    pub request: ElicitationRequest,
    /// The server's key of the request (the answer goes under it).
    pub key: String,
    /// The server's opaque state, echoed back verbatim.
    pub request_state: Option<String>,
    /// Answers the same round already had (to requests asked before this one).
    pub responses: Map<String, Value>,
}

impl InputRequired {
    /// The `InputRequired` of a result that stopped for input, if it did.
    pub fn of(output: &ToolOutput) -> Option<Self> {
        let info = output.error_info()?;
        if info.code != codes::MCP_INPUT_REQUIRED {
            return None;
        }
        serde_json::from_value(info.details.get("input_required")?.clone()).ok()
    }

    /// The resume that answers it with `answer`.
    pub fn resume(&self, answer: &ElicitationAnswer) -> McpInputResume {
        let mut responses = self.responses.clone();
        responses.insert(self.key.clone(), answer.to_wire());
        McpInputResume {
            request_state: self.request_state.clone(),
            responses,
        }
    }

    pub(crate) fn into_output(self, tool: &str, server: &str) -> ToolOutput {
        let message = format!(
            "MCP tool `{tool}` on server `{server}` needs input nobody can give now (\"{}\"); the call stopped and can be sent again with the answer",
            self.request.message
        );
        let details = serde_json::to_value(&self).unwrap_or(Value::Null);
        ToolOutput::error(
            ToolErrorInfo::new(codes::MCP_INPUT_REQUIRED, message)
                .with_detail("input_required", details),
        )
    }
}

/// How an MCP call is sent again after an [`InputRequired`] stop: its first
/// `tools/call` carries these answers and the server's state. Put it into the
/// resumed call's context, or into an [`McpInputResumes`] by call id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpInputResume {
    pub(crate) request_state: Option<String>,
    pub(crate) responses: Map<String, Value>,
}

/// A context extension of [`McpInputResume`]s by call id, for a context several
/// calls share (a run's turn): each call takes the one of its `call_id`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpInputResumes(pub std::collections::BTreeMap<String, McpInputResume>);

/// The reason given when no host can answer.
pub(crate) const NO_HANDLER: &str = "no one can answer here: the host gave this call no elicitation handler (a non-interactive run)";

/// Asks `handler` (or declines for lack of one) and returns the answer with the
/// note the call's result carries.
pub(crate) async fn ask(
    handler: Option<&Arc<dyn ElicitationHandler>>,
    request: &ElicitationRequest,
    can_wait: bool,
) -> (ElicitationAnswer, Value) {
    let answer = match handler {
        Some(h) => h.elicit(request).await,
        None => ElicitationAnswer::decline(NO_HANDLER),
    };
    let answer = match answer {
        ElicitationAnswer::Wait { reason } if !can_wait => ElicitationAnswer::decline(format!(
            "{reason}; a session before 2026-07-28 cannot wait for a later answer"
        )),
        other => other,
    };
    let mut note = Map::new();
    note.insert("mode".into(), json!(request.mode()));
    note.insert("message".into(), json!(request.message));
    if let ElicitationKind::Url { url, .. } = &request.kind {
        note.insert("url".into(), json!(url));
    }
    note.insert("action".into(), json!(answer.action()));
    if let Some(reason) = answer.reason() {
        note.insert("reason".into(), json!(reason));
    }
    (answer, Value::Object(note))
}

/// The one-line text a declined or cancelled elicitation adds to the result.
pub(crate) fn note_text(note: &Value) -> Option<String> {
    let action = note.get("action")?.as_str()?;
    if action == "accept" || action == "wait" {
        return None;
    }
    let message = note.get("message").and_then(Value::as_str).unwrap_or("");
    let reason = note.get("reason").and_then(Value::as_str).unwrap_or("");
    Some(format!(
        "[iris: the MCP server asked for input (\"{message}\"); answered {action}: {reason}]"
    ))
}
