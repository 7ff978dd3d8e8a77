//! [`DisclosureLayer`]: the executor layer that makes deferred disclosure hold.
//!
//! Installed in the executor's layer slot ([`iris_executor::ToolExecutor::with_layer`]),
//! it does two things:
//!
//! 1. for a call whose context carries a [`DisclosureState`], it refuses, with
//!    `TOOL_NOT_LOADED`, a deferred tool whose schema the current request did not
//!    carry;
//! 2. it hands a real `tool_search` call a crate-private receipt, and after the call
//!    writes what the body put on it (and only that) into
//!    [`ToolOutput::revealed_tools`] and, when the context carries one, into the
//!    state. Whatever a body or a middleware wrote there itself is cleared, so a
//!    look-alike tool reveals nothing.
//!
//! A context without a disclosure state is never refused anything; its `tool_search`
//! results still report what they certified, for a runtime that tracks it itself.

use iris_executor::{Next, ToolMiddleware, ToolRequest};
use iris_tools_core::{BoxFuture, ToolDefinition, ToolErrorInfo, ToolOutput, codes};

use crate::state::{DisclosureState, RevealReceipt};
use crate::tool::TOOL_SEARCH_NAME;

/// The discovery stage of the executor pipeline: it refuses, with `TOOL_NOT_LOADED`,
/// a deferred tool the current request did not load (when the context carries a
/// [`DisclosureState`]), and certifies into [`ToolOutput::revealed_tools`] (and the
/// state) only what a real `tool_search` body selected. See the [crate docs](crate).
///
/// ```
/// use iris_discovery::DisclosureLayer;
/// use iris_executor::ToolExecutor;
/// use iris_tools_core::ToolRegistry;
///
/// let executor = ToolExecutor::new(ToolRegistry::new()).with_layer(DisclosureLayer);
/// # let _ = executor;
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct DisclosureLayer;

impl ToolMiddleware for DisclosureLayer {
    fn wrap_tool_call<'a>(
        &'a self,
        mut req: ToolRequest,
        next: Next<'a>,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let state = DisclosureState::of(&req.ctx).cloned();
            if let Some(info) = state
                .as_ref()
                .and_then(|state| refuse_unloaded(req.tool().definition(), state))
            {
                return ToolOutput::error(info);
            }
            // Only a real search body can fill the receipt (the type is crate-private).
            let receipt = (req.tool_name() == TOOL_SEARCH_NAME).then(|| {
                let receipt = RevealReceipt::default();
                req.ctx.extensions.insert(receipt.clone());
                receipt
            });
            let mut output = next.run(req).await;
            certify(&mut output, receipt.as_ref(), state.as_ref());
            output
        })
    }
}

/// `TOOL_NOT_LOADED` when the tool is deferred and the current request did not carry
/// its schema.
fn refuse_unloaded(def: &ToolDefinition, state: &DisclosureState) -> Option<ToolErrorInfo> {
    if !def.deferred || state.is_loaded(&def.name) {
        return None;
    }
    let name = def.name.as_str();
    let message = if state.is_revealed(name) {
        format!(
            "`{name}` was found by {TOOL_SEARCH_NAME} but its schema is not loaded in this \
             request; call it in a later step, once its schema is loaded"
        )
    } else {
        format!(
            "`{name}` is not loaded: call {TOOL_SEARCH_NAME} first with a query describing \
             what you need, then call the tool it finds in your next step"
        )
    };
    Some(
        ToolErrorInfo::new(codes::TOOL_NOT_LOADED, message)
            .with_detail("tool_name", name)
            .with_detail("revealed", state.is_revealed(name)),
    )
}

/// Replaces whatever the output says about revealed tools with what the receipt
/// certifies: the body's own selections, recorded (into the state, when there is one)
/// only when the final output is a success (an error showed the model no selections).
fn certify(
    output: &mut ToolOutput,
    receipt: Option<&RevealReceipt>,
    state: Option<&DisclosureState>,
) {
    output.revealed_tools.clear();
    let Some(names) = receipt.and_then(RevealReceipt::take) else {
        return;
    };
    if output.is_error() {
        return;
    }
    if let Some(state) = state {
        state.reveal(names.iter().cloned());
    }
    output.revealed_tools = names;
}
