#![doc = include_str!("../README.md")]

pub use iris_tools_core as core;
pub use iris_tools_core::adapters::{Provider, Strict};
pub use iris_tools_core::{adapters, codes};

/// The items most programs need, for `use iris::prelude::*`.
pub mod prelude {
    pub use iris_tools_core::{
        ApprovalMode, CancellationSignal, CircuitBreaker, ContentBlock, DefaultPermissionPolicy,
        FnTool, Tool, ToolCapability, ToolDefinition, ToolExecutionContext, ToolRegistry,
        ToolRegistryView, ToolResult, ToolUse, ViewFilter,
    };
}
