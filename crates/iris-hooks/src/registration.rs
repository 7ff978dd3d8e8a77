//! [`HookRegistration`], [`HookHandler`] and hook results.

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use iris_tools_core::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{HookError, HookErrorKind};
use crate::event::{HookEvent, HookEventKind};

/// Default hook deadline in seconds.
pub const DEFAULT_HOOK_TIMEOUT_SECONDS: f64 = 10.0;

/// The longest hook deadline in seconds (about 31 years): any longer value is a mistake,
/// and values past `Duration`'s range (1.8e19 s) cannot be represented at all.
pub const MAX_HOOK_TIMEOUT_SECONDS: f64 = 1e9;

/// The most characters of additional context one call (all its `tool.after` hooks
/// together) or one run start (all its `run.started` hooks) adds for the model. Text
/// past it is cut and the cut is named, so a chatty hook cannot flood the context
/// window.
pub const MAX_ADDITIONAL_CONTEXT_CHARS: usize = 10_000;

/// What a `tool.before` hook may return. Every key is optional; `deny_reason` wins over
/// the others.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolBeforeResult {
    /// When set, the call is denied with this reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deny_reason: Option<String>,
    /// When set, the call runs with these arguments instead (a JSON object). They are
    /// validated against the tool's schema and checked by the permission policy
    /// again; later hooks see them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_input: Option<Value>,
    /// When set, the call waits for a human approval first, with this reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ask: Option<String>,
}

/// What a `tool.after` hook may return.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolAfterResult {
    /// A remark on the result, appended to what the model sees
    /// (`ToolOutput::hook_feedback`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
    /// Context for the model, appended after the feedback (`ToolOutput::hook_context`,
    /// at most [`MAX_ADDITIONAL_CONTEXT_CHARS`] per call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_context: Option<String>,
}

/// What a `run.started` hook may return.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunStartedResult {
    /// Context for the model, added to the run's first request (at most
    /// [`MAX_ADDITIONAL_CONTEXT_CHARS`] for all hooks together).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_context: Option<String>,
}

/// A hook's answer. The same type answers for every handler: a closure, a factory's
/// handler, a command hook's stdout and an HTTP hook's response body all become one.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum HookResult {
    /// Nothing to say.
    #[default]
    None,
    /// A `tool.before` answer.
    ToolBefore(ToolBeforeResult),
    /// A `tool.after` answer.
    ToolAfter(ToolAfterResult),
    /// A `run.started` answer.
    RunStarted(RunStartedResult),
}

impl HookResult {
    /// Deny the call (for `tool.before`).
    pub fn deny(reason: impl Into<String>) -> Self {
        HookResult::ToolBefore(ToolBeforeResult {
            deny_reason: Some(reason.into()),
            ..ToolBeforeResult::default()
        })
    }

    /// Run the call with these arguments instead (for `tool.before`).
    ///
    /// ```
    /// use iris_hooks::HookResult;
    /// let r = HookResult::updated_input(serde_json::json!({"path": "src/a.rs"}));
    /// assert!(matches!(r, HookResult::ToolBefore(b) if b.updated_input.is_some()));
    /// ```
    pub fn updated_input(arguments: Value) -> Self {
        HookResult::ToolBefore(ToolBeforeResult {
            updated_input: Some(arguments),
            ..ToolBeforeResult::default()
        })
    }

    /// Ask a human to approve the call first (for `tool.before`).
    pub fn ask(reason: impl Into<String>) -> Self {
        HookResult::ToolBefore(ToolBeforeResult {
            ask: Some(reason.into()),
            ..ToolBeforeResult::default()
        })
    }

    /// Add feedback (for `tool.after`).
    pub fn feedback(text: impl Into<String>) -> Self {
        HookResult::ToolAfter(ToolAfterResult {
            feedback: Some(text.into()),
            ..ToolAfterResult::default()
        })
    }

    /// Add context after the result the model sees (for `tool.after`).
    pub fn after_context(text: impl Into<String>) -> Self {
        HookResult::ToolAfter(ToolAfterResult {
            additional_context: Some(text.into()),
            ..ToolAfterResult::default()
        })
    }

    /// Add context to the run's first model request (for `run.started`).
    pub fn run_context(text: impl Into<String>) -> Self {
        HookResult::RunStarted(RunStartedResult {
            additional_context: Some(text.into()),
        })
    }

    /// The event kind whose answer this is (`None` for [`HookResult::None`]).
    pub fn event(&self) -> Option<HookEventKind> {
        match self {
            HookResult::None => None,
            HookResult::ToolBefore(_) => Some(HookEventKind::ToolBefore),
            HookResult::ToolAfter(_) => Some(HookEventKind::ToolAfter),
            HookResult::RunStarted(_) => Some(HookEventKind::RunStarted),
        }
    }
}

/// An async hook handler. Closures `Fn(HookEvent) -> impl Future<Output =
/// Result<HookResult, HookError>>` implement it.
pub trait HookHandler: Send + Sync {
    /// Handles one event snapshot.
    fn handle(&self, event: HookEvent) -> BoxFuture<'_, Result<HookResult, HookError>>;
}

impl<F, Fut> HookHandler for F
where
    F: Fn(HookEvent) -> Fut + Send + Sync,
    Fut: Future<Output = Result<HookResult, HookError>> + Send + 'static,
{
    fn handle(&self, event: HookEvent) -> BoxFuture<'_, Result<HookResult, HookError>> {
        Box::pin(self(event))
    }
}

/// One hook: which event, which tools, which handler, how long it may take.
///
/// ```
/// use iris_hooks::{HookEventKind, HookRegistration, HookResult};
///
/// let reg = HookRegistration::builder(HookEventKind::ToolBefore, "no-rm", |_event| async {
///     Ok(HookResult::deny("rm is not allowed"))
/// })
/// .tools(["exec_command"])
/// .timeout_seconds(5.0)
/// .build()
/// .unwrap();
/// assert!(reg.applies_to(HookEventKind::ToolBefore, Some("exec_command")));
/// assert!(!reg.applies_to(HookEventKind::ToolBefore, Some("read_file")));
/// ```
#[derive(Clone)]
pub struct HookRegistration {
    /// The event it listens to.
    pub event: HookEventKind,
    /// Non-empty name, used in logs and deny reasons.
    pub name: String,
    /// The handler.
    pub handler: Arc<dyn HookHandler>,
    /// For tool events: only these canonical tool names (`None` = every tool).
    pub tool_names: Option<BTreeSet<String>>,
    /// Deadline of one invocation (a command hook is also capped by its command
    /// service's root timeout; see [`HookRegistrationBuilder::timeout_seconds`]).
    pub timeout: Duration,
}

impl std::fmt::Debug for HookRegistration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookRegistration")
            .field("event", &self.event)
            .field("name", &self.name)
            .field("tool_names", &self.tool_names)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl HookRegistration {
    /// Starts a registration (keyword-style builder).
    pub fn builder(
        event: HookEventKind,
        name: impl Into<String>,
        handler: impl HookHandler + 'static,
    ) -> HookRegistrationBuilder {
        Self::builder_shared(event, name, Arc::new(handler))
    }

    /// Starts a registration with an already shared handler.
    pub fn builder_shared(
        event: HookEventKind,
        name: impl Into<String>,
        handler: Arc<dyn HookHandler>,
    ) -> HookRegistrationBuilder {
        HookRegistrationBuilder {
            event,
            name: name.into(),
            handler,
            tool_names: None,
            timeout_seconds: DEFAULT_HOOK_TIMEOUT_SECONDS,
        }
    }

    /// Whether this registration handles an event (and tool).
    pub fn applies_to(&self, event: HookEventKind, tool_name: Option<&str>) -> bool {
        if self.event != event {
            return false;
        }
        match (&self.tool_names, tool_name) {
            (Some(names), Some(tool)) => names.contains(tool),
            _ => true,
        }
    }
}

/// Builder for [`HookRegistration`]; `build` validates.
pub struct HookRegistrationBuilder {
    event: HookEventKind,
    name: String,
    handler: Arc<dyn HookHandler>,
    tool_names: Option<Vec<String>>,
    timeout_seconds: f64,
}

impl std::fmt::Debug for HookRegistrationBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookRegistrationBuilder")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl HookRegistrationBuilder {
    /// Limits a tool event to these tools.
    #[must_use]
    pub fn tools<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.tool_names = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Sets the deadline in seconds (positive, at most [`MAX_HOOK_TIMEOUT_SECONDS`];
    /// default 10). A command hook ([`crate::command::CommandHook`]) is also capped by
    /// its command service's root timeout (`CommandConfig::timeout_seconds`, default
    /// 120 s): past the shorter of the two it fails with `HOOK_TIMEOUT` naming it.
    #[must_use]
    pub fn timeout_seconds(mut self, seconds: f64) -> Self {
        self.timeout_seconds = seconds;
        self
    }

    /// Validates: non-empty name, a positive timeout of at most
    /// [`MAX_HOOK_TIMEOUT_SECONDS`], non-empty `tools` only on tool events.
    pub fn build(self) -> Result<HookRegistration, HookError> {
        let invalid = |msg: String| HookError::new(HookErrorKind::InvalidRegistration, msg);
        if self.name.trim().is_empty() {
            return Err(invalid("hook name must not be empty".into()));
        }
        let timeout = timeout_from_seconds(self.timeout_seconds).ok_or_else(|| {
            invalid(format!(
                "hook `{}`: timeout_seconds must be a positive finite number no larger than \
                 {MAX_HOOK_TIMEOUT_SECONDS:e}, got {:?}",
                self.name, self.timeout_seconds
            ))
        })?;
        let tool_names = match self.tool_names {
            None => None,
            Some(names) if names.is_empty() => None,
            Some(names) => {
                if !self.event.is_tool_event() {
                    return Err(invalid(format!(
                        "hook `{}`: `tools` only applies to tool events, not {}",
                        self.name, self.event
                    )));
                }
                Some(names.into_iter().collect())
            }
        };
        Ok(HookRegistration {
            event: self.event,
            name: self.name,
            handler: self.handler,
            tool_names,
            timeout,
        })
    }
}

/// A hook deadline from seconds: positive, finite and at most
/// [`MAX_HOOK_TIMEOUT_SECONDS`] (`Duration::from_secs_f64` panics past its range).
pub(crate) fn timeout_from_seconds(seconds: f64) -> Option<Duration> {
    if !(seconds > 0.0 && seconds <= MAX_HOOK_TIMEOUT_SECONDS) {
        return None;
    }
    Duration::try_from_secs_f64(seconds).ok()
}
