#![doc = include_str!("../README.md")]

pub mod adapters;
pub mod artifact;
pub mod breaker;
pub mod context;
pub mod definition;
pub mod error;
pub mod executor;
pub mod fn_tool;
pub mod hooks;
pub mod lint;
pub mod middleware;
pub mod permission;
pub mod registry;
pub mod result;
pub mod search;
pub mod spec;
pub mod tool;
pub mod typed;
pub mod workspace;

pub use artifact::ToolArtifactStore;
pub use breaker::{CircuitBreaker, CircuitState, Clock, ManualClock, SystemClock};
pub use context::{CancellationSignal, Extensions, ToolExecutionContext};
pub use definition::{ContextRetention, PreviewMode, ToolCapability, ToolDefinition};
pub use error::{Error, Result, ToolErrorInfo, codes};
pub use fn_tool::FnTool;
pub use hooks::{BeforeOutcome, BodyStatus, ToolHookDispatcher};
pub use middleware::{ToolCall, ToolMiddleware, ToolNext};
pub use permission::{
    ApprovalMode, DefaultPermissionPolicy, PERMISSION_CLASS_KEY, PermissionClass,
    PermissionDecision, PermissionEffect, PermissionPolicy,
};
pub use registry::{ToolRegistry, ToolRegistryView, ViewFilter};
pub use result::{ContentBlock, ToolArtifact, ToolResult, ToolResultBlock, ToolResultMessage};
pub use spec::ToolSpec;
pub use tool::{BoxFuture, Tool, ToolTimeoutOwner, ToolUse};
pub use workspace::{PathError, WorkspacePolicy};

#[cfg(feature = "macros")]
pub use iris_tools_macros::tool;

/// `#[tool]` for the `iris` facade: the same attribute, with generated paths rooted at
/// `::iris::core` so a crate that depends only on `iris` compiles. Not public API.
#[cfg(feature = "macros")]
#[doc(hidden)]
pub use iris_tools_macros::tool_in_iris_facade as __tool_in_iris_facade;

/// Items generated code reaches through absolute `::iris_tools_core::__private::` paths.
/// Not public API: no stability promise.
#[doc(hidden)]
pub mod __private {
    pub use schemars;
    pub use serde;
    pub use serde_json;

    pub use crate::context::ToolExecutionContext;
    pub use crate::definition::{ToolCapability, ToolDefinition};
    pub use crate::error::{Error, ToolErrorInfo};
    pub use crate::result::ToolResult;
    pub use crate::tool::{BoxFuture, Tool};
    pub use crate::typed::support::{
        IntoResultTag, Kind, SerializeTag, ViaIntoToolResult, ViaSerialize, error_result,
        run_blocking,
    };
    pub use crate::typed::{TypedCore, TypedTool, TypedToolBuilder};
}
pub use executor::panic::{CatchUnwind, panic_message};
pub use executor::{
    CommandBinding, DEFAULT_HEARTBEAT_INTERVAL, DEFAULT_TOOL_TIMEOUT, Deadline, DeadlineBound,
    TOOL_OWNED_DEADLINE_GRACE, ToolBatch, ToolBatchPlan, ToolExecutor,
};
pub mod discovery;
pub use discovery::{ContextPolicy, DisclosureState, ToolSearchTool};
