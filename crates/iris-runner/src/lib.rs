#![doc = include_str!("../README.md")]

pub mod assemble;
pub mod budget;
pub mod catalog;
pub mod config;
pub mod context;
pub mod error;
pub mod goal;
pub mod host;
pub mod interaction;
pub mod loop_tool;
mod loop_tools;
mod mcp_host;
pub use iris_providers::model;
#[cfg(feature = "otel")]
pub mod otel;
pub mod outcome;
pub mod policy;
mod run_loop;
pub mod runner;
pub mod secret;
pub mod serve;
pub mod store;
pub mod subagent;
pub mod trust;

pub use assemble::{
    ToolEnvironment, build_tool_registry, build_tool_registry_for_call, check_config,
};
pub use config::{AgentConfig, LoadedConfig};
pub use error::{Error, Result, codes};
pub use host::HostRegistry;
pub use interaction::{AnswerRefused, InteractionHandler, Misfit};
pub use loop_tool::RunLoopTool;
pub use model::{ModelConfig, ProviderKind};
pub use outcome::{
    Answer, ApprovalRequest, ElicitationInteraction, InDoubtRequest, Interaction, QuestionRequest,
    RunError, RunEvent, RunOutcome, SecretRequest, SubagentRequest,
};
pub use runner::{
    AgentRunner, AgentRunnerBuilder, ELICITATION_NO_HOST, ELICITATION_NOT_ANSWERED, ResumeStream,
    RunInput, RunStream, ToolSource, open_store,
};
pub use secret::{MemorySecretStore, SecretStore, SecretTarget, SecretValue};
pub use store::{MemoryRunStore, PostgresRunStore, RunStatus, RunStore, SqliteRunStore};
pub use subagent::ChildProviderFactory;
pub use trust::{TrustError, TrustStore, discover_config};
