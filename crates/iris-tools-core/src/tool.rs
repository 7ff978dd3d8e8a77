//! The [`Tool`] trait, its validated [`ToolInput`], and the
//! model's [`ToolUse`] request.

use std::any::Any;

use std::future::Future;
use std::pin::Pin;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::context::ToolExecutionContext;
use crate::definition::{ToolCapability, ToolDefinition};
use crate::error::ToolErrorInfo;
use crate::result::ToolOutput;

/// A boxed, `Send` future: what object-safe async trait methods return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Who owns a call's deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolTimeoutOwner {
    /// The executor enforces the deadline around the body.
    #[default]
    Runtime,
    /// The tool enforces its own deadline (command tools: they must kill a process
    /// tree and report `timed_out` themselves). The executor still passes the deadline
    /// in [`ToolExecutionContext::tool_timeout`].
    Tool,
}

/// A tool the executor can run. Object-safe: registries hold `Arc<dyn Tool>`.
///
/// Implement it by hand for class-style tools, or let `#[tool]` implement it for an
/// async fn.
///
/// ```
/// use iris_tools_core::{BoxFuture, Tool, ToolDefinition, ToolExecutionContext, ToolInput, ToolOutput};
/// use serde_json::json;
///
/// struct Echo(ToolDefinition);
///
/// impl Tool for Echo {
///     fn definition(&self) -> &ToolDefinition { &self.0 }
///     fn run<'a>(&'a self, input: ToolInput, _ctx: &'a ToolExecutionContext) -> BoxFuture<'a, ToolOutput> {
///         Box::pin(async move { ToolOutput::text(input.value()["text"].as_str().unwrap_or_default()) })
///     }
/// }
///
/// let echo = Echo(ToolDefinition::new("echo", "Echo the text back.", json!({"type": "object"})));
/// assert!(echo.is_read_only());
/// assert!(echo.is_concurrency_safe());
/// ```
pub trait Tool: Send + Sync + 'static {
    /// The tool's definition.
    fn definition(&self) -> &ToolDefinition;

    /// Runs the body with the input [`Tool::validate_input`] produced.
    fn run<'a>(
        &'a self,
        input: ToolInput,
        ctx: &'a ToolExecutionContext,
    ) -> BoxFuture<'a, ToolOutput>;

    /// Parses raw model input, once per call. The executor has already checked it
    /// against `input_schema`. The default keeps the raw value; a typed tool parses it
    /// here and hands the parsed value to [`Tool::run`] inside the [`ToolInput`], so
    /// the body never parses again.
    fn validate_input(&self, raw: Value) -> Result<ToolInput, ToolErrorInfo> {
        Ok(ToolInput::new(raw))
    }

    /// Whether the default permission policy may run this tool without asking despite
    /// a `network` or `agent` capability. See [`ToolDefinition::auto_allow`].
    fn is_auto_allowed(&self) -> bool {
        self.definition().auto_allow
    }

    /// Whether a second run with the same idempotency key has no further effect. See
    /// [`ToolDefinition::idempotent`].
    fn is_idempotent(&self) -> bool {
        self.definition().idempotent
    }

    /// True only when no write/execute/network/mcp/agent capability is declared.
    fn is_read_only(&self) -> bool {
        let def = self.definition();
        !(def.has(ToolCapability::Write)
            || def.has(ToolCapability::Execute)
            || def.has(ToolCapability::Network)
            || def.has(ToolCapability::Mcp)
            || def.has(ToolCapability::Agent))
    }

    /// True when write or execute is declared.
    fn is_destructive(&self) -> bool {
        let def = self.definition();
        def.has(ToolCapability::Write) || def.has(ToolCapability::Execute)
    }

    /// Whether two calls may run at the same time. Default true; actual parallelism
    /// also needs [`Tool::is_read_only`].
    fn is_concurrency_safe(&self) -> bool {
        true
    }

    /// Who enforces the deadline.
    fn timeout_owner(&self) -> ToolTimeoutOwner {
        ToolTimeoutOwner::Runtime
    }

    /// What this call asks for beyond the tool's usual confinement, in one line a human
    /// can approve (`exec_command`'s `sandbox: {network: on}` names the widened
    /// sandbox); `None` (the default) when it asks for nothing more. The default
    /// permission policy sends a call that asks for more to a human, whatever the
    /// permission modes say. A tool that wraps another must forward this.
    fn requested_escalation(&self, input: &Value) -> Option<String> {
        let _ = input;
        None
    }
}

impl std::fmt::Debug for dyn Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.definition().name)
            .finish_non_exhaustive()
    }
}

/// One tool call requested by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolUse {
    /// The provider's call id.
    pub id: String,
    /// The name (or alias) the model called.
    pub name: String,
    /// The raw arguments.
    pub input: Value,
}

impl ToolUse {
    /// A tool call.
    pub fn new(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            input,
        }
    }
}

/// A call's validated input: the JSON the model sent (what hooks, policies, middleware
/// and logs see) and, for typed tools, the value [`Tool::validate_input`] parsed from it.
///
/// A middleware that rewrites the arguments with [`ToolInput::set_value`] drops the
/// parsed value; the executor then validates the new arguments again (schema, parse,
/// permission) before the body runs.
///
/// ```
/// use iris_tools_core::ToolInput;
/// use serde_json::json;
///
/// let mut input = ToolInput::with_parsed(json!({"n": 2}), 2_u32);
/// assert_eq!(input.value()["n"], 2);
/// assert_eq!(input.parsed_type_id(), Some(std::any::TypeId::of::<u32>()));
/// assert_eq!(input.take_parsed::<u32>(), Some(2));
/// assert_eq!(input.take_parsed::<u32>(), None);
/// ```
pub struct ToolInput {
    value: Value,
    parsed: Option<Box<dyn Any + Send + Sync>>,
    rewritten: bool,
}

impl ToolInput {
    /// Input that is only JSON.
    pub fn new(value: Value) -> Self {
        Self {
            value,
            parsed: None,
            rewritten: false,
        }
    }

    /// Input with the tool's parse of it.
    pub fn with_parsed<T: Send + Sync + 'static>(value: Value, parsed: T) -> Self {
        Self {
            value,
            parsed: Some(Box::new(parsed)),
            rewritten: false,
        }
    }

    /// The arguments as JSON.
    pub fn value(&self) -> &Value {
        &self.value
    }

    /// The arguments as JSON, by value.
    pub fn into_value(self) -> Value {
        self.value
    }

    /// Takes the parsed value out, when it has type `T`.
    pub fn take_parsed<T: 'static>(&mut self) -> Option<T> {
        match self.parsed.take()?.downcast::<T>() {
            Ok(parsed) => Some(*parsed),
            Err(other) => {
                self.parsed = Some(other);
                None
            }
        }
    }

    /// The type of the parsed value, when there is one: which typed tool parsed the
    /// input (each `#[tool]`'s input type is its own), so a host can recognise a tool
    /// by type rather than by its name.
    pub fn parsed_type_id(&self) -> Option<std::any::TypeId> {
        self.parsed.as_deref().map(|p| p.type_id())
    }

    /// Replaces the arguments (a middleware rewriting a call). The parsed value is
    /// dropped and the input is marked for validation again.
    pub fn set_value(&mut self, value: Value) {
        self.value = value;
        self.parsed = None;
        self.rewritten = true;
    }

    /// Whether [`ToolInput::set_value`] replaced the arguments since validation.
    pub fn is_rewritten(&self) -> bool {
        self.rewritten
    }
}

impl std::fmt::Debug for ToolInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolInput")
            .field("value", &self.value)
            .field("parsed", &self.parsed.is_some())
            .field("rewritten", &self.rewritten)
            .finish()
    }
}
