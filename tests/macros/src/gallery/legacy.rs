//! Deprecated tools, aliases, versions, structured error codes and image results.

use iris_tools_core::{ContentBlock, ToolErrorInfo, ToolExecutionContext, codes, tool};

/// Look up a customer record by its legacy numeric id.
///
/// # Arguments
/// * `customer_id` - the id from the old CRM
#[tool(
    capabilities(read),
    group = "crm",
    aliases("old_lookup", "lookup_v1"),
    version = "0.9",
    deprecated,
    deprecation_message = "use `find_customer`, which takes an email address"
)]
pub async fn legacy_lookup(customer_id: u64) -> Result<String, String> {
    match customer_id {
        7 => Ok("Ada Lovelace <ada@example.com>".into()),
        id => Err(format!("no customer {id}")),
    }
}

/// Answer `pong`: a liveness check of the tool layer.
#[tool(group = "diagnostics", deprecated)]
pub fn old_ping() -> &'static str {
    "pong"
}

/// Count down from a number, one line per step.
///
/// # Arguments
/// * `from` - the first number, at most 10
#[tool(group = "diagnostics", examples(r#"{"from": 3}"#))]
pub async fn countdown(ctx: &ToolExecutionContext, from: u8) -> Result<String, ToolErrorInfo> {
    ctx.cancellation.as_ref().map_or(
        Ok(()),
        iris_tools_core::CancellationSignal::raise_if_requested,
    )?;
    if from > 10 {
        return Err(ToolErrorInfo::new(
            codes::INVALID_INPUT,
            format!("`from` is {from}; at most 10 allowed"),
        )
        .with_detail("field", "from"));
    }
    let lines: Vec<String> = (0..=from).rev().map(|n| n.to_string()).collect();
    Ok(lines.join("\n"))
}

/// A 1×1 transparent PNG, base64-encoded.
pub const PIXEL_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/// Render a status badge as a PNG image the model can see.
///
/// # Arguments
/// * `label` - text of the badge
#[tool(group = "diagnostics", tags("image"))]
pub fn render_badge(label: String) -> Vec<ContentBlock> {
    vec![
        ContentBlock::text(format!("badge: {label}")),
        ContentBlock::image("image/png", PIXEL_PNG),
    ]
}
