//! [`FnTool`]: a tool from a definition and a closure, for dynamic tools and tests.

use std::future::Future;

use serde_json::Value;

use crate::context::ToolExecutionContext;
use crate::definition::ToolDefinition;
use crate::result::ToolOutput;
use crate::tool::{BoxFuture, Tool, ToolInput, ToolTimeoutOwner};

/// A [`Tool`] whose body is a closure `(input, ctx) -> impl Future<Output = ToolOutput>`.
///
/// The closure receives the input as JSON and an owned clone of the context so its
/// future may outlive the borrow. Behaviour flags default to the [`Tool`] trait's defaults.
pub struct FnTool<F> {
    definition: ToolDefinition,
    body: F,
    concurrency_safe: bool,
    read_only: Option<bool>,
    timeout_owner: ToolTimeoutOwner,
}

impl<F> std::fmt::Debug for FnTool<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FnTool")
            .field("name", &self.definition.name)
            .finish_non_exhaustive()
    }
}

impl<F, Fut> FnTool<F>
where
    F: Fn(Value, ToolExecutionContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ToolOutput> + Send + 'static,
{
    /// A tool from a definition and a body.
    pub fn new(definition: ToolDefinition, body: F) -> Self {
        Self {
            definition,
            body,
            concurrency_safe: true,
            read_only: None,
            timeout_owner: ToolTimeoutOwner::Runtime,
        }
    }

    /// Overrides [`Tool::is_concurrency_safe`].
    #[must_use]
    pub fn concurrency_safe(mut self, yes: bool) -> Self {
        self.concurrency_safe = yes;
        self
    }

    /// Overrides [`Tool::is_read_only`] (default: derived from capabilities).
    #[must_use]
    pub fn read_only(mut self, yes: bool) -> Self {
        self.read_only = Some(yes);
        self
    }

    /// Overrides [`Tool::timeout_owner`].
    #[must_use]
    pub fn timeout_owner(mut self, owner: ToolTimeoutOwner) -> Self {
        self.timeout_owner = owner;
        self
    }
}

impl<F, Fut> Tool for FnTool<F>
where
    F: Fn(Value, ToolExecutionContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ToolOutput> + Send + 'static,
{
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn run<'a>(
        &'a self,
        input: ToolInput,
        ctx: &'a ToolExecutionContext,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin((self.body)(input.into_value(), ctx.clone()))
    }

    fn is_read_only(&self) -> bool {
        self.read_only.unwrap_or_else(|| {
            use crate::definition::ToolCapability as C;
            let d = &self.definition;
            ![C::Write, C::Execute, C::Network, C::Mcp, C::Agent]
                .iter()
                .any(|c| d.has(*c))
        })
    }

    fn is_concurrency_safe(&self) -> bool {
        self.concurrency_safe
    }

    fn timeout_owner(&self) -> ToolTimeoutOwner {
        self.timeout_owner
    }
}
