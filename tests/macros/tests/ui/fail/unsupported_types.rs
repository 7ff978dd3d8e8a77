use iris_tools_core::{ToolExecutionContext, tool};

/// Borrowed and opaque parameters.
#[tool]
async fn search(
    query: &str,
    tags: Vec<&str>,
    sink: impl std::io::Write,
    ctx: &mut ToolExecutionContext,
) -> String {
    let _ = (tags, sink, ctx);
    query.to_owned()
}

fn main() {}
