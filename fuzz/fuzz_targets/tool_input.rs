//! Tool input against a schema, through the whole `iris_executor::ToolExecutor` path
//! (JSON Schema validation, then the tool's own typed parse).
//!
//! The first byte picks the mode:
//! - even: the rest is the model's JSON arguments for a typed tool (a hand-written
//!   [`TypedTool`] over a struct with strings, numbers, enums, a tagged union, maps,
//!   length, range and pattern constraints);
//! - odd: the rest is `<inputSchema JSON> NUL <arguments JSON>`: the schema goes through
//!   `iris_mcp::schema::normalize_input_schema` as an MCP server's would, becomes a
//!   tool, and the arguments are called on it.
//!
//! Invariants: nothing panics (a panic caught by the executor aborts the fuzzer too);
//! every error has a stable code; a successful typed call echoes input that parses
//! back; a schema MCP normalization accepted always compiles in the executor; a
//! successful call of a schema tool echoes its arguments.
#![no_main]

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use iris_executor::ToolExecutor;
use iris_fuzz::check_error;
use iris_tools_core::typed::{Json, TypedTool};
use iris_tools_core::{
    FnTool, Tool, ToolCapability, ToolDefinition, ToolExecutionContext, ToolOutput, ToolRegistry,
    ToolResult, ToolUse, codes,
};
use libfuzzer_sys::fuzz_target;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A typical file-tool input.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// The path.
    #[schemars(length(min = 1, max = 4096))]
    path: String,
    /// 0-based line.
    #[serde(default)]
    offset: Option<u64>,
    /// Lines to read.
    #[serde(default)]
    #[schemars(range(min = 1, max = 10000))]
    limit: Option<u32>,
    /// Signed level.
    #[serde(default)]
    level: i8,
    /// A float.
    #[serde(default)]
    ratio: Option<f64>,
    /// An enum.
    #[serde(default)]
    mode: Mode,
    /// A bounded list.
    #[serde(default)]
    #[schemars(length(max = 16))]
    tags: Vec<String>,
    /// A map.
    #[serde(default)]
    env: BTreeMap<String, String>,
    /// A tagged union.
    #[serde(default)]
    edit: Option<Edit>,
    /// A pattern.
    #[serde(default)]
    #[schemars(pattern(r"^[a-z][a-z0-9_]{0,31}$"))]
    id: Option<String>,
}

#[derive(Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Mode {
    #[default]
    Read,
    Write,
    Append,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
enum Edit {
    Replace {
        old: String,
        new: String,
    },
    Insert {
        line: u64,
        text: String,
    },
    Delete {
        #[serde(default)]
        count: Option<u16>,
    },
}

static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap_or_else(|e| panic!("no runtime: {e}"))
});

static TYPED: LazyLock<ToolExecutor> = LazyLock::new(|| {
    let tool = TypedTool::builder("typed_input")
        .description("Echo the parsed input.")
        .capabilities([ToolCapability::Read])
        .build(|input: Input, _ctx: ToolExecutionContext| async move { Json(input) })
        .unwrap_or_else(|e| panic!("the typed tool does not build: {e}"));
    let registry = ToolRegistry::new();
    registry
        .register(tool)
        .unwrap_or_else(|e| panic!("the typed tool does not register: {e}"));
    ToolExecutor::new(registry)
});

fn ctx() -> ToolExecutionContext {
    ToolExecutionContext::new("/nonexistent/fuzz-workspace").session_id("fuzz")
}

fn call(executor: &ToolExecutor, name: &str, input: Value) -> ToolResult {
    let call = ToolUse::new("call_fuzz", name, input);
    RUNTIME.block_on(executor.execute_one(&call, &ctx(), None))
}

fn check_failure(result: &ToolResult) {
    let info = result
        .output
        .error_info()
        .unwrap_or_else(|| panic!("an error result without error info: {result:?}"));
    assert_ne!(info.code, codes::TOOL_PANICKED, "{}", info.message);
    check_error(&info.code, &info.message);
}

fn typed(args: &[u8]) {
    let Ok(input) = serde_json::from_slice::<Value>(args) else {
        return;
    };
    let result = call(&TYPED, "typed_input", input);
    if result.is_error() {
        check_failure(&result);
        return;
    }
    let echoed = result.model_content();
    if let Err(e) = serde_json::from_str::<Input>(&echoed) {
        panic!("the echoed input does not parse back ({e}): {echoed}");
    }
}

fn with_schema(data: &[u8]) {
    let (schema, args) = match data.iter().position(|&b| b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &b"{}"[..]),
    };
    let (Ok(schema), Ok(input)) = (
        serde_json::from_slice::<Value>(schema),
        serde_json::from_slice::<Value>(args),
    ) else {
        return;
    };
    let schema = match iris_mcp::schema::normalize_input_schema(&schema) {
        Ok(schema) => schema,
        Err(reason) => {
            check_error(iris_mcp::codes::MCP_INVALID_SCHEMA, &reason);
            return;
        }
    };
    let definition = ToolDefinition::new("schema_input", "Echo the arguments.", schema)
        .with_capabilities([ToolCapability::Read]);
    let tool = FnTool::new(definition, |input: Value, _ctx| async move {
        ToolOutput::text(input.to_string())
    });
    let registry = ToolRegistry::new();
    if let Err(e) = registry.register_arc(Arc::new(tool) as Arc<dyn Tool>) {
        panic!(
            "a normalized MCP schema does not register: {}: {e}",
            e.code()
        );
    }
    let executor = ToolExecutor::new(registry);
    let expected = input.to_string();
    let result = call(&executor, "schema_input", input);
    if result.is_error() {
        check_failure(&result);
        let code = result.error_code().unwrap_or_default();
        assert_ne!(
            code,
            codes::INVALID_DEFINITION,
            "MCP normalization accepted a schema the executor cannot compile: {}",
            result.model_content()
        );
        return;
    }
    assert_eq!(result.model_content(), expected);
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode % 2 == 0 {
        typed(rest);
    } else {
        with_schema(rest);
    }
});
