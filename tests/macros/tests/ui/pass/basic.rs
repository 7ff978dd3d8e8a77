//! Async, sync and thread-mode tools with presets, defaults and the context.

use std::path::PathBuf;

use iris_tools_core::{ToolExecutionContext, ToolRegistry, tool};

/// Read one key from the application config.
///
/// # Arguments
/// * `key` - dotted key path
/// * `default` - value returned when the key is missing
#[tool(capabilities(read), group = "config", tags("config"), timeout = "5s")]
async fn read_config(
    #[preset] config_path: PathBuf,
    key: String,
    default: Option<String>,
    ctx: &ToolExecutionContext,
) -> Result<String, std::io::Error> {
    let _ = (ctx, &config_path);
    Ok(default.unwrap_or(key))
}

/// Count words.
#[tool]
fn count_words(text: String) -> usize {
    text.split_whitespace().count()
}

/// Hash a text on the blocking pool.
#[tool(execution_mode = "thread", concurrency_safe = false)]
fn slow_hash(text: String, ctx: &ToolExecutionContext) -> u64 {
    let _ = ctx;
    text.len() as u64
}

fn main() -> Result<(), iris_tools_core::Error> {
    let registry = ToolRegistry::new();
    registry.register(read_config::tool().preset("config_path", "/etc/app.toml")?)?;
    registry.register(count_words::tool())?;
    registry.register(slow_hash::tool())?;
    assert_eq!(registry.get("slow_hash")?.is_concurrency_safe(), false);
    assert_eq!(read_config::definition().group, "config");
    assert_eq!(read_config::input_schema()["required"], serde_json::json!(["key"]));
    assert_eq!(count_words("a b".into()), 2);
    Ok(())
}
