use iris_tools_core::tool;

/// Every attribute mistake is reported at once.
#[tool(
    nmae = "typo",
    group = "a",
    group = "b",
    capabilities(read, fly, read),
    examples("[1]", "{not json}"),
    timeout = "soon",
    execution_mode = "fiber",
    deprecation_message = "no deprecated flag"
)]
fn lookup(key: String) -> String {
    key
}

fn main() {}
