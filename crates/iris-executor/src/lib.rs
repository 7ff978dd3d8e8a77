#![doc = include_str!("../README.md")]

pub mod artifact;
pub mod breaker;
pub mod deadline;
pub mod error;
mod executor;
pub mod hooks;
pub mod middleware;
pub mod panic;
pub mod permission;
pub mod plan;
mod validation;

pub use artifact::{SavedBody, ToolArtifactStore};
pub use breaker::{CircuitBreaker, CircuitState, Clock, ManualClock, SystemClock};
pub use deadline::{
    DEFAULT_HEARTBEAT_INTERVAL, DEFAULT_TOOL_TIMEOUT, Deadline, DeadlineBound, Heartbeat,
    HeartbeatListener, TOOL_OWNED_DEADLINE_GRACE,
};
pub use error::{Error, Result};
pub use executor::{TRACING_TARGET, ToolExecutor};
pub use hooks::{
    AfterOutcome, BeforeOutcome, BodyStatus, HookAsk, HookChanges, ToolHookDispatcher, UpdatedInput,
};
pub use iris_fs::workspace::{PathError, WorkspacePolicy};
pub use middleware::{Next, ToolMiddleware, ToolRequest};
pub use panic::{CatchUnwind, panic_message};
pub use permission::{
    ApprovalMode, DefaultPermissionPolicy, PermissionDecision, PermissionEffect, PermissionPolicy,
};
pub use plan::{ToolBatch, ToolBatchPlan};
