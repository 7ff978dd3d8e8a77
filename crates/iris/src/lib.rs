#![doc = include_str!("../README.md")]

pub use iris_tools_core as core;
/// `#[tool]` for crates that depend on `iris` only: the generated code reaches core
/// through this facade.
#[cfg(feature = "macros")]
pub use iris_tools_core::__tool_in_iris_facade as tool;
pub use iris_tools_core::adapters::{Provider, Strict};

/// The command environment (native and Docker) and `exec_command` / `run_python`
/// (`command` feature; `docker` is an alias kept for the SPEC's feature list, the Docker
/// backend is always compiled in).
#[cfg(feature = "command")]
pub use iris_command as command;
/// Decision types, the Jev client and the decision discovery backend (`decision` feature).
#[cfg(feature = "decision")]
pub use iris_decision as decision;
/// The built-in file tools (`files` feature).
#[cfg(feature = "files")]
pub use iris_files as files;
/// Hook events, registrations and the dispatcher (`hooks` feature).
#[cfg(feature = "hooks")]
pub use iris_hooks as hooks;
/// The MCP client layer: config loading, `MCPManager`, MCP tools (`mcp` feature).
#[cfg(feature = "mcp")]
pub use iris_mcp as mcp;
/// Skills and the subagent catalog (`skill` feature).
#[cfg(feature = "skill")]
pub use iris_skill as skill;
pub use iris_tools_core::{adapters, codes};
/// The `web_search` and `web_fetch` tools over Tavily (`web` feature).
#[cfg(feature = "web")]
pub use iris_web as web;

/// The items most programs need, for `use iris::prelude::*`.
pub mod prelude {
    #[cfg(feature = "macros")]
    pub use crate::tool;
    pub use iris_tools_core::{
        ApprovalMode, CancellationSignal, CircuitBreaker, ContentBlock, DefaultPermissionPolicy,
        FnTool, Tool, ToolCapability, ToolDefinition, ToolExecutionContext, ToolExecutor,
        ToolRegistry, ToolRegistryView, ToolResult, ToolUse, ViewFilter,
    };
}
