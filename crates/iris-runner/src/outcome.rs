//! What a run produces: [`RunOutcome`], the [`RunEvent`]s of a streamed run, the
//! [`Interaction`] a waiting run needs, and [`RunError`].

use std::fmt;

use iris_mcp::{ElicitationAnswer, ElicitationKind, ElicitationRequest, InputRequired};
use iris_providers::chat::{Message, Usage};
use iris_tools_core::ToolResult;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::secret::SecretValue;

/// How a run ended.
///
/// ```
/// use iris_runner::{RunError, RunOutcome};
/// let failed = RunOutcome::Failed { error: RunError::new("RUN_MAX_TURNS", "50 turns") };
/// assert_eq!(failed.status(), "failed");
/// assert_eq!(failed.exit_code(), 1);
/// assert_eq!(RunOutcome::Cancelled.exit_code(), 130);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
#[non_exhaustive]
pub enum RunOutcome {
    /// The model gave a final answer.
    Completed {
        /// The final answer's text.
        output: String,
        /// Tokens of every model request of the run.
        usage: Usage,
        /// Model requests made.
        turns: u32,
        /// The whole conversation, the input history first: pass it back with
        /// [`RunInput::with_history`](crate::RunInput::with_history) to continue.
        history: Vec<Message>,
    },
    /// A call needs a human and nobody attached to this run could answer: the run
    /// stopped before that call (and every later call of its turn) ran.
    Waiting {
        /// The run.
        run_id: String,
        /// What the human is asked.
        interaction: Interaction,
    },
    /// The run failed: the provider, the turn limit, a refusal.
    Failed {
        /// Why.
        error: RunError,
    },
    /// The run's cancellation signal was raised; in-flight calls were cancelled.
    Cancelled,
}

impl RunOutcome {
    /// `completed`, `waiting`, `failed` or `cancelled`.
    pub fn status(&self) -> &'static str {
        match self {
            RunOutcome::Completed { .. } => "completed",
            RunOutcome::Waiting { .. } => "waiting",
            RunOutcome::Failed { .. } => "failed",
            RunOutcome::Cancelled => "cancelled",
        }
    }

    /// The process exit code `iris run` uses: 0 completed, 4 waiting, 1 failed,
    /// 130 cancelled.
    pub fn exit_code(&self) -> i32 {
        match self {
            RunOutcome::Completed { .. } => 0,
            RunOutcome::Waiting { .. } => 4,
            RunOutcome::Failed { .. } => 1,
            RunOutcome::Cancelled => 130,
        }
    }

    /// The final answer of a completed run.
    pub fn output(&self) -> Option<&str> {
        match self {
            RunOutcome::Completed { output, .. } => Some(output),
            _ => None,
        }
    }
}

/// Why a run failed: a stable code and a message.
///
/// Codes: the provider's (`PROVIDER_AUTH`, `PROVIDER_RATE_LIMITED`,
/// `PROVIDER_REFUSED`, …), `RUN_MAX_TURNS`, `RUN_INPUT_INVALID`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunError {
    /// The stable code.
    pub code: String,
    /// What happened.
    pub message: String,
}

impl RunError {
    /// An error with this code and message.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code: code.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for RunError {}

/// A call waiting for a human's approval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRequest {
    /// The interaction id an answer names ([`AgentRunner::resume`](crate::AgentRunner::resume)).
    pub id: String,
    /// The run.
    pub run_id: String,
    /// The model's call id.
    pub call_id: String,
    /// The canonical tool name.
    pub tool_name: String,
    /// The validated arguments the human approves (exactly what will run).
    pub arguments: Value,
    /// What is asked, in one line naming the tool.
    pub reason: String,
}

/// The model asked the user a question (`ask_question`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionRequest {
    /// The interaction id an answer names.
    pub id: String,
    /// The run.
    pub run_id: String,
    /// The `ask_question` call.
    pub call_id: String,
    /// The question.
    pub question: String,
    /// The allowed answers; empty means free text.
    pub options: Vec<String>,
}

/// A call a crash left in doubt: it started and may have run; it is neither
/// read-only nor idempotent, so it is not re-run without asking.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InDoubtRequest {
    /// The interaction id an answer names.
    pub id: String,
    /// The run.
    pub run_id: String,
    /// The call.
    pub call_id: String,
    /// The canonical tool name.
    pub tool_name: String,
    /// The call's arguments.
    pub arguments: Value,
}

/// A tool cannot authenticate and the model asked for its secret (`store_secret`,
/// [`crate::secret`]). The request names the secret, never a value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SecretRequest {
    /// The interaction id an answer names.
    pub id: String,
    /// The run.
    pub run_id: String,
    /// The `store_secret` call.
    pub call_id: String,
    /// The secret's name, e.g. `IRIS_PROVIDER_API_KEYS__TAVILY`.
    pub key: String,
    /// The tools whose auth failures named it in this run.
    pub tools: Vec<String>,
}

/// An MCP server asks for input during a call. In process the run's
/// [`InteractionHandler`](crate::InteractionHandler) is asked while the call is live;
/// when nobody answers on a 2026-07-28 session (an `input_required` result) the call
/// stops, the run waits on this interaction, and the answer sends the call again
/// where it stopped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElicitationInteraction {
    /// The interaction id an answer names.
    pub id: String,
    /// The run.
    pub run_id: String,
    /// The call.
    pub call_id: String,
    /// The canonical tool name.
    pub tool_name: String,
    /// What the server asks: its message, and a form schema or a URL.
    pub request: Box<ElicitationRequest>,
    /// What sends a stopped call again with the answer: set when the run waits,
    /// `None` while the call is live (the server holds the request open).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Box<InputRequired>>,
}

/// What a waiting run needs from a human.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Interaction {
    /// Approve or deny one call ([`Answer::Approve`], [`Answer::Deny`]).
    Approval(ApprovalRequest),
    /// Answer a question ([`Answer::Text`]; one of the options when there are any).
    Question(QuestionRequest),
    /// Decide about a call a crash left in doubt ([`Answer::Rerun`], [`Answer::Skip`],
    /// [`Answer::Record`]).
    InDoubt(InDoubtRequest),
    /// Give a secret a tool needs ([`Answer::Secret`], or [`Answer::Deny`] to refuse);
    /// the value never reaches the model, the run record or any output.
    Secret(SecretRequest),
    /// A `subagent` call's child run waits: the proxy of the child's own interaction
    /// ([`SubagentRequest::inner`]). It takes the answer the inner interaction takes;
    /// resuming the parent with it resumes the child ([`crate::subagent`]).
    Subagent(SubagentRequest),
    /// Answer an MCP server's request for input ([`Answer::Text`]: the form's values
    /// as a JSON object, or `accept` for a URL; [`Answer::Deny`] declines;
    /// [`Answer::Elicitation`]: the server's answer as is).
    Elicitation(ElicitationInteraction),
}

/// The proxy interaction of a waiting child run (`kind: subagent`): the parent run
/// waits on the `subagent` call whose child waits on `inner`.
///
/// ```
/// use iris_runner::{Interaction, QuestionRequest, SubagentRequest};
/// let inner = Interaction::Question(QuestionRequest {
///     id: "run_c:call_1".into(), run_id: "run_c".into(), call_id: "call_1".into(),
///     question: "Which env?".into(), options: vec![],
/// });
/// let proxy = Interaction::Subagent(SubagentRequest {
///     id: "run_p:call_7".into(), run_id: "run_p".into(), call_id: "call_7".into(),
///     agent_selector: "researcher".into(), child_run_id: "run_c".into(),
///     inner: Box::new(inner),
/// });
/// assert_eq!(proxy.id(), "run_p:call_7");
/// assert_eq!(proxy.innermost().kind(), "question");
/// assert_eq!(proxy.summary(), "subagent researcher (run_c): question: Which env?");
/// let json = serde_json::to_value(&proxy).unwrap();
/// assert_eq!(json["kind"], "subagent");
/// assert_eq!(json["inner"]["kind"], "question");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubagentRequest {
    /// The interaction id an answer names: the parent's (`<parent run id>:<call id>`).
    pub id: String,
    /// The parent run.
    pub run_id: String,
    /// The parent's `subagent` call.
    pub call_id: String,
    /// The child's catalog selector.
    pub agent_selector: String,
    /// The child run (in the same run store).
    pub child_run_id: String,
    /// What the child run waits for.
    pub inner: Box<Interaction>,
}

impl Interaction {
    /// The id an answer names.
    pub fn id(&self) -> &str {
        match self {
            Interaction::Approval(a) => &a.id,
            Interaction::Question(q) => &q.id,
            Interaction::InDoubt(d) => &d.id,
            Interaction::Secret(s) => &s.id,
            Interaction::Subagent(s) => &s.id,
            Interaction::Elicitation(e) => &e.id,
        }
    }

    /// `approval`, `question`, `in_doubt`, `secret`, `subagent` or `elicitation`.
    pub fn kind(&self) -> &'static str {
        match self {
            Interaction::Approval(_) => "approval",
            Interaction::Question(_) => "question",
            Interaction::InDoubt(_) => "in_doubt",
            Interaction::Secret(_) => "secret",
            Interaction::Subagent(_) => "subagent",
            Interaction::Elicitation(_) => "elicitation",
        }
    }

    /// What a human actually answers: the interaction itself, or for a
    /// [`Interaction::Subagent`] proxy the child's interaction it stands for.
    pub fn innermost(&self) -> &Interaction {
        match self {
            Interaction::Subagent(s) => s.inner.innermost(),
            other => other,
        }
    }

    /// One line for a terminal: what is asked.
    pub fn summary(&self) -> String {
        match self {
            Interaction::Approval(a) => {
                format!("approve {} ({})? {}", a.tool_name, a.call_id, a.reason)
            }
            Interaction::Question(q) if q.options.is_empty() => format!("question: {}", q.question),
            Interaction::Question(q) => {
                format!("question: {} [{}]", q.question, q.options.join(" | "))
            }
            Interaction::InDoubt(d) => format!(
                "{} ({}) was running when its process died and may have run: re-run, skip or \
                 record its result?",
                d.tool_name, d.call_id
            ),
            Interaction::Secret(s) if s.tools.is_empty() => {
                format!("secret `{}` is needed", s.key)
            }
            Interaction::Secret(s) => format!(
                "secret `{}` is needed by {} (missing, rejected or expired)",
                s.key,
                s.tools.join(", ")
            ),
            Interaction::Subagent(s) => format!(
                "subagent {} ({}): {}",
                s.agent_selector,
                s.child_run_id,
                s.inner.summary()
            ),
            Interaction::Elicitation(e) => {
                let request = &e.request;
                match &request.kind {
                    ElicitationKind::Url { url, .. } => format!(
                        "MCP server `{}` asks during {} ({}): {} (open {url})",
                        request.server, e.tool_name, e.call_id, request.message
                    ),
                    _ => format!(
                        "MCP server `{}` asks during {} ({}): {} (form: {})",
                        request.server,
                        e.tool_name,
                        e.call_id,
                        request.message,
                        form_fields(request)
                    ),
                }
            }
        }
    }
}

/// The fields of a form request, `name (type)` each, comma-separated.
fn form_fields(request: &ElicitationRequest) -> String {
    request
        .form_fields()
        .iter()
        .map(|(name, kind)| format!("{name} ({kind})"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// An answer to an [`Interaction`]: what an
/// [`InteractionHandler`](crate::InteractionHandler) returns in process, and what
/// [`AgentRunner::resume`](crate::AgentRunner::resume) takes for a waiting run. Which
/// answers fit which interaction is checked in one place, [`Interaction::check`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Answer {
    /// Approve the call (approval): it runs after permission is checked again.
    Approve,
    /// Deny the call (approval): the model gets `APPROVAL_DENIED` with the reason; or
    /// refuse a secret: the model gets `SECRET_DECLINED`.
    Deny {
        /// Why.
        reason: String,
    },
    /// The answer to a question.
    Text {
        /// The text (one of the options when the question has any).
        text: String,
    },
    /// Run the in-doubt call again.
    Rerun,
    /// Do not run it again; the model is told it may or may not have run.
    Skip,
    /// Record what the call produced (the human checked), as its result.
    Record {
        /// The result text the model gets.
        output: String,
    },
    /// The value of a secret (secret): it goes to the host's secret store and the
    /// tools that use it; the model is told only that it is stored.
    Secret {
        /// The value (redacted in every output).
        value: SecretValue,
    },
    /// The answer an MCP server hears (elicitation): accept with the form's values,
    /// decline or cancel. (`wait` is not an answer: a handler returns `None`.)
    Elicitation {
        /// The server's answer.
        reply: ElicitationAnswer,
    },
}

/// One step of a streamed run ([`AgentRunner::run_streamed`](crate::AgentRunner::run_streamed)),
/// in order. Serialized as `{"type": "text_delta", …}` for `iris run --json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
// Exhaustive on purpose: a new event must be rendered by every frontend (`iris run`'s
// text view matches each variant), so adding one is a compile error there.
pub enum RunEvent {
    /// The run began.
    RunStarted {
        /// The run id.
        run_id: String,
        /// The provider (`openai`, `scripted`, …).
        provider: String,
        /// The model.
        model: String,
    },
    /// A model request is about to be sent (`turn` counts from 1).
    TurnStarted {
        /// The turn.
        turn: u32,
        /// The tools this request carries; only these may be called.
        tools: Vec<String>,
    },
    /// A piece of the model's answer text.
    TextDelta {
        /// The text.
        text: String,
    },
    /// The model's turn ended; its token counts.
    Usage {
        /// The turn.
        turn: u32,
        /// This turn's tokens.
        usage: Usage,
        /// The run's tokens so far.
        total: Usage,
    },
    /// A call is about to run (calls of one parallel window all start before any
    /// finishes).
    ToolCallStarted {
        /// The turn.
        turn: u32,
        /// The model's call id.
        call_id: String,
        /// The tool name as the model called it.
        tool_name: String,
        /// The arguments.
        arguments: Value,
    },
    /// A call finished; its result goes back to the model.
    ToolCallFinished {
        /// The turn.
        turn: u32,
        /// The result (`output.outcome` tells ok / failed).
        result: ToolResult,
    },
    /// A call's body is still running (reported every 30 s by default, the
    /// executor's heartbeat interval).
    Heartbeat {
        /// The turn.
        turn: u32,
        /// The call.
        call_id: String,
        /// The tool.
        tool_name: String,
        /// Seconds the body has run.
        elapsed_seconds: f64,
        /// The call's deadline in seconds.
        deadline_seconds: f64,
    },
    /// An MCP call reported progress: a `notifications/progress` for its token (which
    /// also restarts the call's idle timeout), or, while the call runs as an MCP task,
    /// a new status message from `tasks/get` (with the last progress value seen).
    Progress {
        /// The turn.
        turn: u32,
        /// The call.
        call_id: String,
        /// The tool.
        tool_name: String,
        /// The server's progress value.
        progress: f64,
        /// The total, when the server knows it.
        total: Option<f64>,
        /// The server's message (redacted, one line).
        message: Option<String>,
    },
    /// An MCP server asked for user input in the middle of a call; the run's
    /// [`InteractionHandler`](crate::InteractionHandler) is asked.
    ElicitationRequested {
        /// The turn.
        turn: u32,
        /// What is asked (server, tool, call id, message, form schema or URL).
        request: ElicitationRequest,
    },
    /// The elicitation was answered (accepted, declined or cancelled, with why).
    ElicitationAnswered {
        /// The turn.
        turn: u32,
        /// The call.
        call_id: String,
        /// The answer.
        answer: ElicitationAnswer,
    },
    /// A background call finished; its result reaches the model at the next turn.
    BackgroundFinished {
        /// The turn that started it.
        turn: u32,
        /// Its result.
        result: ToolResult,
    },
    /// An event of a `subagent` call's child run, in the child's order: from its
    /// `run_started` to its `finished` (whose outcome is the child's).
    Subagent {
        /// The parent's `subagent` call.
        call_id: String,
        /// The child's catalog selector.
        agent_selector: String,
        /// The child run.
        child_run_id: String,
        /// The child's event.
        event: Box<RunEvent>,
    },
    /// A call needs a human; the run's interaction handler is asked, or the run
    /// waits.
    ApprovalRequested {
        /// What is asked.
        request: ApprovalRequest,
    },
    /// The run ended; always the last event.
    Finished {
        /// How.
        outcome: RunOutcome,
    },
}
