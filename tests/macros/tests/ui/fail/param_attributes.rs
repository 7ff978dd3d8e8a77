use iris_tools_core::{ToolExecutionContext, tool};

/// Every parameter-attribute mistake is reported at once.
#[tool]
fn configure(
    #[preset] #[default] root: String,
    #[preset(required)] token: String,
    #[default] #[default = 3] retries: u8,
    #[tool(hidden)] level: u8,
    #[cfg(test)] debug: bool,
    #[preset] ctx: &ToolExecutionContext,
    #[preset] #[serde(rename = "r")] region: String,
) {
    let _ = (root, token, retries, level, debug, ctx, region);
}

fn main() {}
