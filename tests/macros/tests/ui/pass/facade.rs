//! `#[tool]` through the `iris` facade: the hidden facade attribute roots generated
//! paths at `::iris::core`, and `crate = "…"` does the same for the plain attribute.

use iris::core::ToolExecutionContext;

/// Say hello.
#[iris::core::__tool_in_iris_facade]
async fn hello(name: String, ctx: &ToolExecutionContext) -> String {
    format!("hello {name} from {}", ctx.session_id)
}

/// Say bye.
#[iris::core::tool(crate = "::iris::core")]
fn bye(name: String) -> String {
    format!("bye {name}")
}

fn main() {
    assert_eq!(hello::definition().name, "hello");
    assert_eq!(bye::definition().name, "bye");
}
