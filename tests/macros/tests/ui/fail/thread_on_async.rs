use iris_tools_core::tool;

/// Async functions run inline.
#[tool(execution_mode = "thread")]
async fn fetch(url: String) -> String {
    url
}

fn main() {}
