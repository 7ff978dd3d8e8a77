//! The executor's part of tool discovery: refusing deferred tools the current request
//! did not load, and certifying what a real `tool_search` body revealed.
//!
//! Both steps are inert unless discovery is in play: a context without a
//! [`DisclosureState`] is never refused anything, and only tools of the
//! tool-discovery permission class get a receipt. See [`crate::discovery`].

use serde_json::Value;

use crate::context::ToolExecutionContext;
use crate::definition::ToolDefinition;
use crate::discovery::{
    CONTEXT_REVEALED_TOOLS_KEY, DisclosureState, RevealReceipt, TOOL_SEARCH_NAME,
};
use crate::error::{ToolErrorInfo, codes};
use crate::permission::PermissionClass;
use crate::result::ToolResult;

/// `TOOL_NOT_LOADED` when a disclosure state is attached, the tool is deferred and the
/// current request did not carry its schema.
pub(super) fn refuse_unloaded(
    def: &ToolDefinition,
    ctx: &ToolExecutionContext,
) -> Option<ToolErrorInfo> {
    let state = DisclosureState::of(ctx)?;
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

/// A fresh receipt for a tool-discovery call, also placed on its context. Only the
/// real `tool_search` body can write to it (the type is crate-private).
pub(super) fn receipt_for(
    def: &ToolDefinition,
    call_ctx: &mut ToolExecutionContext,
) -> Option<RevealReceipt> {
    if PermissionClass::of(def) != Some(PermissionClass::ToolDiscovery) {
        return None;
    }
    let receipt = RevealReceipt::default();
    call_ctx.extensions.insert(receipt.clone());
    Some(receipt)
}

/// Replaces whatever the result says about revealed tools with what the receipt
/// certifies: the body's own selections, recorded only when the final result is a
/// success (an error result showed the model no selections).
pub(super) fn certify(
    result: &mut ToolResult,
    receipt: Option<&RevealReceipt>,
    ctx: &ToolExecutionContext,
) {
    result.metadata.remove(CONTEXT_REVEALED_TOOLS_KEY);
    let Some(names) = receipt.and_then(RevealReceipt::take) else {
        return;
    };
    if result.is_error {
        return;
    }
    if let Some(state) = DisclosureState::of(ctx) {
        state.reveal(names.iter().cloned());
    }
    result.metadata.insert(
        CONTEXT_REVEALED_TOOLS_KEY.to_owned(),
        Value::Array(names.into_iter().map(Value::String).collect()),
    );
}
