#![doc = include_str!("../README.md")]

pub mod context;
pub mod definition;
pub mod endpoint;
pub mod error;
pub mod fn_tool;
pub mod registry;
pub mod result;
pub mod secrets;
pub mod spec;
pub mod tool;
pub mod typed;

pub use context::{
    BackgroundHandoff, BackgroundWork, CancellationSignal, Extensions, ToolExecutionContext,
};
pub use definition::{ContextRetention, PreviewMode, ToolCapability, ToolDefinition};
pub use error::{Error, Result, ToolErrorInfo, codes};
pub use fn_tool::FnTool;
pub use registry::{ToolRegistry, ToolRegistryView, ViewFilter};
pub use result::{
    Approval, ApprovalGrant, ContentBlock, InputRewrite, Outcome, ToolArtifact, ToolOutput,
    ToolResult, ToolResultBlock, ToolResultMessage,
};
pub use spec::ToolSpec;
pub use tool::{BoxFuture, Tool, ToolInput, ToolTimeoutOwner, ToolUse};

#[cfg(feature = "macros")]
pub use iris_tools_macros::{tool, tools};

/// `#[tool]` for the `iris` facade: the same attribute, with generated paths rooted at
/// `::iris::core` so a crate that depends only on `iris` compiles. Not public API.
#[cfg(feature = "macros")]
#[doc(hidden)]
pub use iris_tools_macros::tool_in_iris_facade as __tool_in_iris_facade;

/// `#[tools]` for the `iris` facade. Not public API.
#[cfg(feature = "macros")]
#[doc(hidden)]
pub use iris_tools_macros::tools_in_iris_facade as __tools_in_iris_facade;

/// Items generated code reaches through absolute `::iris_tools_core::__private::` paths.
/// Not public API: no stability promise.
#[doc(hidden)]
pub mod __private {
    pub use schemars;
    pub use serde;
    pub use serde_json;

    pub use crate::context::ToolExecutionContext;
    pub use crate::definition::{ContextRetention, ToolCapability, ToolDefinition};
    pub use crate::error::{Error, ToolErrorInfo};
    pub use crate::result::ToolOutput;
    pub use crate::tool::{BoxFuture, Tool, ToolInput, ToolTimeoutOwner};
    pub use crate::typed::support::{
        IntoResultTag, Kind, SerializeTag, ViaIntoToolOutput, ViaSerialize, error_result,
        run_blocking,
    };
    pub use crate::typed::{TypedCore, TypedTool, TypedToolBuilder};
}
