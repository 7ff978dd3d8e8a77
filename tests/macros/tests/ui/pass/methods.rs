//! `#[tools]` through core's re-export: tools over `&self` state, registered and run.
use std::sync::Arc;

use iris_tools_core::{Tool, ToolExecutionContext, ToolInput, ToolRegistry, tools};
use serde_json::json;

struct Greeter {
    greeting: String,
}

#[tools]
impl Greeter {
    /// Greet someone by name.
    #[tool(capabilities(read))]
    async fn greet(&self, name: String) -> String {
        format!("{}, {name}!", self.greeting)
    }

    /// Count the greeting's characters on a worker thread.
    #[tool(execution_mode = "thread")]
    fn greeting_length(&self, ctx: &ToolExecutionContext) -> usize {
        let _ = ctx;
        self.greeting.chars().count()
    }
}

fn main() {
    let greeter = Arc::new(Greeter {
        greeting: "Hello".into(),
    });
    let registry = ToolRegistry::new();
    registry.register_many(greeter.tools()).unwrap();
    let tool = registry.get("greet").unwrap();
    let ctx = ToolExecutionContext::new("/tmp");
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let input = tool.validate_input(json!({"name": "Ada"})).unwrap();
    let out = runtime.block_on(tool.run(input, &ctx));
    assert_eq!(out.model_content(), "Hello, Ada!");
    let length = greeter.greeting_length_tool();
    let out = runtime.block_on(length.run(ToolInput::new(json!({})), &ctx));
    assert_eq!(out.model_content(), "5");
}
