#![doc = include_str!("../README.md")]

pub use iris_tools_core as core;
/// `#[tool]` for crates that depend on `iris` only: the generated code reaches core
/// through this facade.
#[cfg(feature = "macros")]
pub use iris_tools_core::__tool_in_iris_facade as tool;
/// `#[tools]` (tools over `&self` state) for crates that depend on `iris` only.
#[cfg(feature = "macros")]
pub use iris_tools_core::__tools_in_iris_facade as tools;

/// Deferred tool discovery: `tool_search`, disclosure state and layer, local search.
pub use iris_discovery as discovery;
/// The executor pipeline: permission and workspace policy, breaker, hooks slot,
/// middleware, deadlines, artifacts.
pub use iris_executor as executor;
/// The model side: provider-neutral chat types and the `CompletionProvider` trait, the
/// HTTP clients (OpenAI Chat Completions and compatible servers, OpenAI Responses,
/// Anthropic Messages, Gemini) with streaming and bounded retries, the `ScriptedProvider`,
/// tool specs per provider, strict mode and the tool-design lint.
pub use iris_providers as providers;
pub use iris_providers::adapters;
pub use iris_providers::{Provider, Strict};
pub use iris_tools_core::codes;

/// The command environment (native and Docker) and `exec_command` / `run_python`
/// (`command` feature, which includes the Docker backend).
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
/// The agent YAML and its assembly into a registry and an executor, `AgentRunner` and
/// its run loop, human-in-the-loop interactions and the run stores (SQLite, PostgreSQL)
/// (`runner` feature).
#[cfg(feature = "runner")]
pub use iris_runner as runner;
/// Code mode: `run_tool_script`, whose Python program calls tools through the
/// executor (`script` feature).
#[cfg(feature = "script")]
pub use iris_script as script;
/// Skills and the subagent catalog (`skill` feature).
#[cfg(feature = "skill")]
pub use iris_skill as skill;
/// The `web_search` and `web_fetch` tools over Tavily (`web` feature).
#[cfg(feature = "web")]
pub use iris_web as web;

/// The items most programs need, for `use iris::prelude::*`.
pub mod prelude {
    #[cfg(feature = "macros")]
    pub use crate::{tool, tools};
    pub use iris_executor::{ApprovalMode, CircuitBreaker, DefaultPermissionPolicy, ToolExecutor};
    #[cfg(feature = "runner")]
    pub use iris_runner::{AgentRunner, RunOutcome};
    pub use iris_tools_core::{
        CancellationSignal, ContentBlock, FnTool, Tool, ToolCapability, ToolDefinition,
        ToolExecutionContext, ToolOutput, ToolRegistry, ToolRegistryView, ToolResult, ToolUse,
        ViewFilter,
    };
}
