#![doc = include_str!("../README.md")]

mod binding;
mod capture;
pub mod config;
mod contain;
pub mod docker;
pub mod env;
pub mod error;
pub mod native;
mod request;
mod run;
pub mod service;
pub mod tools;

pub use binding::{CloseOutcome, CommandBinding};
pub use capture::DEFAULT_OUTPUT_LIMIT_BYTES;
pub use config::{CommandConfig, CommandMode, DockerConfig, DockerNetwork};
pub use contain::ProcessContainment;
pub use error::{CommandError, codes};
pub use iris_sandbox::{FilesystemAccess, NetworkAccess, SandboxPolicy};
pub use request::{
    CommandChannel, CommandOrigin, CommandOutcome, CommandPayload, CommandRequest, CommandScope,
    CommandStatus, OutputStats, SandboxReport, StreamStats,
};
pub use service::{CommandService, CommandStopReceipt, MAX_PAYLOAD_BYTES, StopOperation};
pub use tools::{
    CATALOG, EXEC_COMMAND, ExecCommandTool, MakeCommandTool, RUN_PYTHON, RunPythonTool,
    command_tools, outcome_result,
};
