#![doc = include_str!("../README.md")]

mod client;
pub mod config;
mod connection;
pub mod elicitation;
pub mod env;
pub mod error;
pub mod manager;
pub mod naming;
mod redact;
mod sandbox;
pub mod schema;
pub mod serve;
mod server;
pub mod tool;
mod transport;

pub use config::{
    ConfigFormat, HttpConfig, MCPConfig, McpOverrides, ResolvedTransport, ServerConfig,
    ServerOverride, ServerTransport, StdioConfig, TransportKind, load_mcp_config,
};
pub use elicitation::{
    ElicitationAnswer, ElicitationHandler, ElicitationKind, ElicitationRequest, InputRequired,
    McpElicitation, McpInputResume, McpInputResumes,
};
pub use env::HostEnv;
pub use error::{ConfigLocation, McpError, Result, codes};
pub use manager::{
    DiagnosticSeverity, MCP_GROUP, MCPCatalogSnapshot, MCPManager, McpDiagnostic,
    McpServerSnapshot, McpToolDescriptor, ServerStatus,
};
pub use sandbox::{McpSandbox, SandboxPolicy};
pub use tool::{McpProgress, McpProgressSink, McpTaskRef, McpTool};
pub use transport::DEFAULT_MAX_MESSAGE_BYTES;
