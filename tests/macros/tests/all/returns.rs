//! What each return type becomes. The tools are declared inside the test function,
//! which also proves the expansion works in block scope with block-local types.

use std::sync::Arc;

use iris_tools_core::{
    ContentBlock, Tool, ToolErrorInfo, ToolExecutionContext, ToolOutput, codes, tool,
};
use serde::Serialize;
use serde_json::{Value, json};

#[tokio::test]
async fn return_values_become_results() {
    #[derive(Serialize)]
    struct Point {
        x: i32,
        y: i32,
    }

    /// A string is the body.
    #[tool]
    fn ret_string() -> String {
        "text body".into()
    }
    /// A static str is the body.
    #[tool]
    fn ret_str() -> &'static str {
        "static body"
    }
    /// Unit is an empty body.
    #[tool]
    async fn ret_unit() {}
    /// Any `Serialize` type is JSON text, fields in declaration order.
    #[tool]
    fn ret_point() -> Point {
        Point { y: 2, x: 1 }
    }
    /// Collections too.
    #[tool]
    fn ret_vec() -> Vec<Option<u8>> {
        vec![Some(1), None]
    }
    /// A JSON value is JSON text, strings included.
    #[tool]
    fn ret_value() -> Value {
        json!("quoted")
    }
    /// `None` is an empty body.
    #[tool]
    fn ret_none() -> Option<String> {
        None
    }
    /// `Some` is its content.
    #[tool]
    fn ret_some() -> Option<&'static str> {
        Some("present")
    }
    /// `Ok` of a serializable type.
    #[tool]
    async fn ret_ok() -> Result<Point, std::io::Error> {
        Ok(Point { x: 3, y: 4 })
    }
    /// `Err` is TOOL_FAILED with the error's text.
    #[tool]
    async fn ret_err() -> Result<Point, std::io::Error> {
        Err(std::io::Error::other("disk full"))
    }
    /// An alias of `Result` works the same.
    #[tool]
    fn ret_io_result() -> std::io::Result<String> {
        Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "no such file",
        ))
    }
    /// A boxed error.
    #[tool]
    fn ret_boxed() -> Result<u32, Box<dyn std::error::Error + Send + Sync>> {
        Err("boxed failure".into())
    }
    /// A structured error keeps its code.
    #[tool]
    fn ret_tool_error() -> Result<String, ToolErrorInfo> {
        Err(ToolErrorInfo::new(
            codes::PERMISSION_DENIED,
            "read-only replica",
        ))
    }
    /// A core error keeps its code.
    #[tool]
    fn ret_core_error() -> Result<String, iris_tools_core::Error> {
        Err(iris_tools_core::Error::NotFound("cache".into()))
    }
    /// A tool result is kept as is.
    #[tool]
    fn ret_tool_result() -> ToolOutput {
        ToolOutput::text("rich").with_data("k", 1)
    }
    /// An image block.
    #[tool]
    fn ret_block() -> ContentBlock {
        ContentBlock::text("one block")
    }
    /// A unit `Ok` is an empty body.
    #[tool]
    fn ret_ok_unit() -> Result<(), String> {
        Ok(())
    }

    // (tool, model content, error code)
    let cases: Vec<(Arc<dyn Tool>, &str, Option<&str>)> = vec![
        (Arc::new(ret_string::tool()), "text body", None),
        (Arc::new(ret_str::tool()), "static body", None),
        (Arc::new(ret_unit::tool()), "", None),
        (Arc::new(ret_point::tool()), r#"{"x":1,"y":2}"#, None),
        (Arc::new(ret_vec::tool()), "[1,null]", None),
        (Arc::new(ret_value::tool()), r#""quoted""#, None),
        (Arc::new(ret_none::tool()), "", None),
        (Arc::new(ret_some::tool()), "present", None),
        (Arc::new(ret_ok::tool()), r#"{"x":3,"y":4}"#, None),
        (
            Arc::new(ret_err::tool()),
            "Error[TOOL_FAILED]: disk full",
            Some(codes::TOOL_FAILED),
        ),
        (
            Arc::new(ret_io_result::tool()),
            "Error[TOOL_FAILED]: no such file",
            Some(codes::TOOL_FAILED),
        ),
        (
            Arc::new(ret_boxed::tool()),
            "Error[TOOL_FAILED]: boxed failure",
            Some(codes::TOOL_FAILED),
        ),
        (
            Arc::new(ret_tool_error::tool()),
            "Error[PERMISSION_DENIED]: read-only replica",
            Some(codes::PERMISSION_DENIED),
        ),
        (
            Arc::new(ret_core_error::tool()),
            "Error[TOOL_NOT_FOUND]: tool `cache` not found",
            Some(codes::TOOL_NOT_FOUND),
        ),
        (Arc::new(ret_tool_result::tool()), "rich", None),
        (Arc::new(ret_block::tool()), "one block", None),
        (Arc::new(ret_ok_unit::tool()), "", None),
    ];
    let ctx = ToolExecutionContext::new("/w");
    for (tool, content, code) in cases {
        let name = tool.definition().name.clone();
        let input = tool.validate_input(json!({})).unwrap();
        let result = tool.run(input, &ctx).await;
        assert_eq!(result.model_content(), content, "{name}");
        assert_eq!(result.error_code(), code, "{name}");
        assert_eq!(result.is_error(), code.is_some(), "{name}");
    }
}

#[tokio::test]
async fn serialize_results_also_fill_data_output() {
    /// Report disk usage.
    #[tool]
    fn disk_usage() -> std::collections::BTreeMap<&'static str, u64> {
        [("used", 3), ("free", 7)].into()
    }
    let result = disk_usage::tool()
        .run(
            iris_tools_core::ToolInput::new(json!({})),
            &ToolExecutionContext::new("/w"),
        )
        .await;
    assert_eq!(result.model_content(), r#"{"free":7,"used":3}"#);
    assert_eq!(result.data["output"], json!({"free": 7, "used": 3}));
}

#[tokio::test]
async fn thread_mode_runs_on_a_thread_of_its_own() {
    /// Report the thread the body runs on.
    #[tool(execution_mode = "thread")]
    fn where_am_i(ctx: &ToolExecutionContext) -> String {
        // The test runs on libtest's thread, named after the test; a thread-mode body
        // runs on a thread of its own (named `iris-tool`), so the name tells where the
        // body ran.
        let name = std::thread::current().name().unwrap_or("").to_owned();
        format!("{} {}", ctx.session_id, name)
    }
    /// The same body, inline.
    #[tool]
    fn where_am_i_inline(ctx: &ToolExecutionContext) -> String {
        let name = std::thread::current().name().unwrap_or("").to_owned();
        format!("{} {}", ctx.session_id, name)
    }
    let ctx = ToolExecutionContext::new("/w").session_id("s");
    let caller = std::thread::current().name().unwrap_or("").to_owned();
    let threaded = where_am_i::tool()
        .run(iris_tools_core::ToolInput::new(json!({})), &ctx)
        .await
        .model_content();
    let inline = where_am_i_inline::tool()
        .run(iris_tools_core::ToolInput::new(json!({})), &ctx)
        .await
        .model_content();
    assert_eq!(inline, format!("s {caller}"));
    assert_ne!(
        threaded, inline,
        "the thread-mode body ran on another thread"
    );
    assert_eq!(threaded, "s iris-tool");
}
