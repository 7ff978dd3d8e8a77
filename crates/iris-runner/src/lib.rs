#![doc = include_str!("../README.md")]

pub mod assemble;
pub mod config;
pub mod error;
pub mod host;
pub mod model;
pub mod outcome;
pub mod runner;
pub mod trust;

pub use assemble::{ToolEnvironment, build_tool_registry, check_config};
pub use config::{AgentConfig, LoadedConfig};
pub use error::{Error, Result, codes};
pub use host::HostRegistry;
pub use model::{ModelConfig, ProviderKind};
pub use outcome::{ApprovalRequest, Interaction, RunError, RunEvent, RunOutcome};
pub use runner::{
    AgentRunner, AgentRunnerBuilder, ApprovalDecision, ApprovalHandler, RunInput, RunStream,
};
pub use trust::{TrustError, TrustStore, discover_config};
