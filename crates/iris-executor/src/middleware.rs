//! The pipeline's open slots: [`ToolRequest`] flows through [`Next::run`], and a
//! [`ToolMiddleware`] wraps the rest of the chain.
//!
//! The executor has two slots for middleware (see [`crate::ToolExecutor`] for the whole
//! order):
//!
//! - **layers** ([`crate::ToolExecutor::with_layer`]) wrap everything after the lookup:
//!   they see the raw arguments before validation and the final output before the
//!   artifact stage. Crates contribute them: the discovery layer refuses tools the
//!   request did not load, the strict-null layer undoes a provider's strict-mode nulls.
//! - **middleware** ([`crate::ToolExecutor::with_middleware`]) is the
//!   `ToolMiddleware` slot: after the `tool.before` hooks, around the body. Arguments
//!   a middleware rewrites are validated and permission-checked again before the body
//!   runs, so a middleware cannot smuggle a call past the policy.
//!
//! In both slots the first one added is the outermost, and a middleware may
//! short-circuit by returning its own output without calling `next`.

use std::sync::Arc;

use serde_json::Value;

use iris_tools_core::{BoxFuture, Tool, ToolExecutionContext, ToolInput, ToolOutput};

/// One call as it flows through the pipeline: the tool, its input and its context.
///
/// The context already carries the call's identity (`ctx.call_id`, `ctx.tool_name`,
/// the canonical name) and, past the deadline stage, its effective deadline in
/// `ctx.tool_timeout`. A middleware may change the input ([`ToolInput::set_value`]) or
/// the context before passing the request on.
#[derive(Debug)]
pub struct ToolRequest {
    tool: Arc<dyn Tool>,
    /// The arguments: raw JSON before validation, the validated input (with the
    /// tool's parse) after it.
    pub input: ToolInput,
    /// The call's context.
    pub ctx: ToolExecutionContext,
}

impl ToolRequest {
    /// A request for `tool` (the executor builds these; tests and custom drivers may).
    pub fn new(tool: Arc<dyn Tool>, input: ToolInput, ctx: ToolExecutionContext) -> Self {
        Self { tool, input, ctx }
    }

    /// The tool being called.
    pub fn tool(&self) -> &Arc<dyn Tool> {
        &self.tool
    }

    /// The call id.
    pub fn call_id(&self) -> &str {
        &self.ctx.call_id
    }

    /// The tool's canonical name.
    pub fn tool_name(&self) -> &str {
        &self.tool.definition().name
    }

    /// The arguments as JSON.
    pub fn arguments(&self) -> &Value {
        self.input.value()
    }

    /// The tool, the input and the context, taken apart.
    pub fn into_parts(self) -> (Arc<dyn Tool>, ToolInput, ToolExecutionContext) {
        (self.tool, self.input, self.ctx)
    }
}

/// The end of a chain: the built-in stages after a slot.
pub(crate) type Endpoint<'a> = dyn Fn(ToolRequest) -> BoxFuture<'a, ToolOutput> + Send + Sync + 'a;

/// The rest of the chain: the next middleware, or the stages after the slot. Consumed
/// when run, so a middleware calls it at most once by construction.
pub struct Next<'a> {
    chain: &'a [Arc<dyn ToolMiddleware>],
    end: &'a Endpoint<'a>,
}

impl<'a> Next<'a> {
    pub(crate) fn new(chain: &'a [Arc<dyn ToolMiddleware>], end: &'a Endpoint<'a>) -> Self {
        Self { chain, end }
    }

    /// Passes the request on to the rest of the chain.
    pub fn run(self, req: ToolRequest) -> BoxFuture<'a, ToolOutput> {
        match self.chain.split_first() {
            Some((first, rest)) => first.wrap_tool_call(
                req,
                Next {
                    chain: rest,
                    end: self.end,
                },
            ),
            None => (self.end)(req),
        }
    }
}

impl std::fmt::Debug for Next<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Next")
            .field("remaining", &self.chain.len())
            .finish_non_exhaustive()
    }
}

/// A wrapper around the rest of a call's path. It may inspect or change the request,
/// short-circuit with its own output (the body and the `tool.after` hooks then do not
/// run), or call `next` once and return a new output built from the one it got.
///
/// ```
/// use iris_executor::{Next, ToolMiddleware, ToolRequest};
/// use iris_tools_core::{BoxFuture, ToolOutput};
///
/// /// Caps `max_results` at 50 whatever the model asked for.
/// struct CapResults;
///
/// impl ToolMiddleware for CapResults {
///     fn wrap_tool_call<'a>(&'a self, mut req: ToolRequest, next: Next<'a>) -> BoxFuture<'a, ToolOutput> {
///         if let Some(n) = req.arguments()["max_results"].as_u64().filter(|n| *n > 50) {
///             let mut args = req.arguments().clone();
///             args["max_results"] = 50.into();
///             req.input.set_value(args);
///             let _ = n;
///         }
///         next.run(req)
///     }
/// }
/// ```
pub trait ToolMiddleware: Send + Sync {
    /// Wraps one call.
    fn wrap_tool_call<'a>(&'a self, req: ToolRequest, next: Next<'a>) -> BoxFuture<'a, ToolOutput>;
}

impl<M: ToolMiddleware + ?Sized> ToolMiddleware for Arc<M> {
    fn wrap_tool_call<'a>(&'a self, req: ToolRequest, next: Next<'a>) -> BoxFuture<'a, ToolOutput> {
        (**self).wrap_tool_call(req, next)
    }
}
