//! The crate's [`Error`] type and its stable error codes.

use std::path::PathBuf;

/// Stable `SCREAMING_SNAKE` codes of this crate's errors.
pub mod codes {
    /// The agent YAML file does not exist or cannot be read.
    pub const CONFIG_NOT_FOUND: &str = "CONFIG_NOT_FOUND";
    /// The agent YAML (or the environment) does not have the expected shape.
    pub const CONFIG_INVALID: &str = "CONFIG_INVALID";
    /// The agent YAML, or a file it points to, is larger than 1 MiB or nests YAML flow
    /// collections (`[`, `{`) deeper than 64 levels; it is not parsed.
    pub const CONFIG_TOO_LARGE: &str = "CONFIG_TOO_LARGE";
    /// The agent YAML, or a file it points to, is a FIFO, a device, a socket or a
    /// directory rather than a regular file; it is not read.
    pub const CONFIG_NOT_A_FILE: &str = "CONFIG_NOT_A_FILE";
    /// A file the agent YAML points to is missing or invalid.
    pub const CONFIG_REFERENCE: &str = "CONFIG_REFERENCE";
    /// The YAML names a function, registrar or factory the host did not register.
    pub const HOST_KEY_UNKNOWN: &str = "HOST_KEY_UNKNOWN";
    /// A host function, registrar or factory failed.
    pub const HOST_FAILED: &str = "HOST_FAILED";
    /// A configured feature needs a layer this build does not include yet.
    pub const FEATURE_UNAVAILABLE: &str = "FEATURE_UNAVAILABLE";
    /// A layer (command service, skills, hooks, registry) failed during assembly.
    pub const ASSEMBLY_FAILED: &str = "ASSEMBLY_FAILED";
    /// A run made `max_turns` model requests and the model still asked for tools.
    pub const RUN_MAX_TURNS: &str = "RUN_MAX_TURNS";
    /// A run's input cannot start a run (no prompt and no history).
    pub const RUN_INPUT_INVALID: &str = "RUN_INPUT_INVALID";
    /// `resume` named a run that is not waiting (or `recover` one that is not
    /// running).
    pub const RUN_NOT_WAITING: &str = "RUN_NOT_WAITING";
    /// The answer names an interaction the run does not wait for (answered already,
    /// or never asked).
    pub const RUN_INTERACTION_STALE: &str = "RUN_INTERACTION_STALE";
    /// The answer does not fit the interaction (approve/deny for an approval, text
    /// for a question — one of its options when it has any — rerun/skip/record for a
    /// call in doubt).
    pub const RUN_ANSWER_INVALID: &str = "RUN_ANSWER_INVALID";
    /// (A tool result) the call was interrupted by a crash, may have run, and the
    /// user chose not to run it again.
    pub const TOOL_IN_DOUBT: &str = "TOOL_IN_DOUBT";
    /// A subagent's child workspace and its parent's do not intersect (neither holds
    /// the other).
    pub const SUBAGENT_WORKSPACE_DISJOINT: &str = "SUBAGENT_WORKSPACE_DISJOINT";
    /// A subagent's child YAML declares `command`: a child borrows the root's command
    /// service and may not declare its own.
    pub const SUBAGENT_COMMAND_DECLARED: &str = "SUBAGENT_COMMAND_DECLARED";
    /// (A tool result) a child run called `subagent`: children get no subagents.
    pub const SUBAGENT_RECURSION: &str = "SUBAGENT_RECURSION";
    /// (A tool result) the child run failed; `details.child_code` holds its code.
    pub const SUBAGENT_FAILED: &str = "SUBAGENT_FAILED";
    /// `resume` named a subagent's child run: it is resumed through its parent run's
    /// `subagent` interaction.
    pub const RUN_IS_SUBAGENT: &str = "RUN_IS_SUBAGENT";
    /// A run reached a limit of its budget (`limits:`); the message names the limit
    /// and the amount used. Resumed with a raised limit, the run goes on.
    pub const RUN_BUDGET_EXCEEDED: &str = "RUN_BUDGET_EXCEEDED";
    /// A policy file (`/etc/iris/policy.yaml`, `IRIS_POLICY_FILE`) refuses what the
    /// agent YAML or the command line asks for: an MCP server, a model provider or
    /// endpoint, a hook name. The message names the policy file and its rule.
    pub const POLICY_DENIED: &str = "POLICY_DENIED";
    /// A policy file is not owned by root or is writable by group or others: it is
    /// refused, and nothing runs.
    pub const POLICY_FILE_UNSAFE: &str = "POLICY_FILE_UNSAFE";
    /// A policy file cannot be read, is not a regular file, is too large, or does not
    /// have the expected shape; nothing runs.
    pub const POLICY_INVALID: &str = "POLICY_INVALID";
    pub use crate::store::codes::{RUN_BUSY, RUN_LEASE_LOST, RUN_NOT_FOUND, RUN_STORE_FAILED};
}

/// Everything that can go wrong loading an agent YAML or assembling its tools.
///
/// Every variant names the file and, where there is one, the key path (`tools.builtin[2]`),
/// so a message alone tells a user where to look.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The YAML file does not exist or cannot be read.
    #[error("{}: cannot read the agent config: {reason}", file.display())]
    NotFound {
        /// The file as given.
        file: PathBuf,
        /// The I/O reason.
        reason: String,
    },
    /// The YAML file is larger than its limit or nests too deeply to parse.
    #[error("{}: {message}", file.display())]
    TooLarge {
        /// The file as given.
        file: PathBuf,
        /// Which limit it exceeds.
        message: String,
    },
    /// The YAML path names a FIFO, a device, a socket or a directory.
    #[error("{}: {message}", file.display())]
    NotAFile {
        /// The file as given.
        file: PathBuf,
        /// What it is instead.
        message: String,
    },
    /// A key has the wrong shape. The message never quotes a value under
    /// `provider_api_keys` or any key whose name holds `key`, `token`, `secret` or
    /// `password`.
    #[error("{}: `{key}`: {message}", file.display())]
    Invalid {
        /// The agent YAML.
        file: PathBuf,
        /// The dotted key path, or `<root>`.
        key: String,
        /// What was wrong and what was expected.
        message: String,
    },
    /// A file the YAML points to is missing or invalid. The message names the file, the
    /// key and the expected shape, never the file's content.
    #[error("{}: `{key}` -> {}: {message}", file.display(), target.display())]
    Reference {
        /// The agent YAML.
        file: PathBuf,
        /// The key holding the reference.
        key: String,
        /// The resolved target.
        target: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// The YAML names a host key that was not registered.
    #[error(
        "`{key}`: no {kind} named `{name}` is registered by the host; {}",
        registered(known)
    )]
    HostKeyUnknown {
        /// The YAML key path, e.g. `tools.host.functions[0]`.
        key: String,
        /// `function`, `registrar`, `middleware factory` or `hook factory`.
        kind: &'static str,
        /// The missing name.
        name: String,
        /// What the host did register, sorted.
        known: Vec<String>,
    },
    /// A host function, registrar or factory returned an error.
    #[error("`{key}`: {message}")]
    HostFailed {
        /// The YAML key path.
        key: String,
        /// The host's message.
        message: String,
    },
    /// A configured feature needs a layer this build does not include yet.
    #[error("`{key}`: {message}")]
    FeatureUnavailable {
        /// The YAML key path.
        key: String,
        /// Which layer is missing.
        message: String,
    },
    /// The `model` section is missing, or cannot become a provider (no key, a bad
    /// `base_url`, an invalid script). The code is the cause's: `CONFIG_INVALID` for a
    /// missing section, `PROVIDER_AUTH` for a missing key, the provider's otherwise.
    #[error("{}: `model`: {message}", file.display())]
    Model {
        /// The agent YAML (or `<builder>` for a runner assembled in Rust).
        file: PathBuf,
        /// The stable code of the cause.
        code: &'static str,
        /// What is wrong and how to fix it. Never holds a key.
        message: String,
    },
    /// The `run_store` cannot be opened (`RUN_STORE_FAILED`).
    #[error("{}: `run_store`: {message}", file.display())]
    Store {
        /// The agent YAML.
        file: PathBuf,
        /// The store's code.
        code: &'static str,
        /// What failed (never a connection string).
        message: String,
    },
    /// A subagent's child agent cannot run under its parent: its YAML does not load,
    /// its workspace is disjoint from the parent's, it declares `command`, or it fails
    /// its own checks. The code is the cause's.
    #[error("{}: subagent `{selector}`: {message}", file.display())]
    Subagent {
        /// The child's agent YAML.
        file: PathBuf,
        /// The child's catalog selector.
        selector: String,
        /// The stable code of the cause (`SUBAGENT_WORKSPACE_DISJOINT`,
        /// `SUBAGENT_COMMAND_DECLARED`, or the child's own error's).
        code: &'static str,
        /// What is wrong.
        message: String,
    },
    /// A policy file refuses the config, or cannot be used ([`crate::policy`]).
    #[error("{}: policy rule `{rule}`: {message}", file.display())]
    Policy {
        /// The policy file.
        file: PathBuf,
        /// `POLICY_DENIED`, `POLICY_FILE_UNSAFE` or `POLICY_INVALID`.
        code: &'static str,
        /// The policy key whose rule refused (`mcp.allow`), or `<file>`.
        rule: String,
        /// What was refused and why.
        message: String,
    },
    /// A layer failed while assembling.
    #[error("`{key}`: {message}")]
    Assembly {
        /// The YAML key path of the section being assembled.
        key: String,
        /// The layer's error, with its own code in front.
        message: String,
    },
}

impl Error {
    /// The stable code of this error.
    ///
    /// ```
    /// use iris_runner::Error;
    /// let err = Error::HostFailed { key: "k".into(), message: "m".into() };
    /// assert_eq!(err.code(), "HOST_FAILED");
    /// ```
    pub fn code(&self) -> &'static str {
        match self {
            Error::NotFound { .. } => codes::CONFIG_NOT_FOUND,
            Error::TooLarge { .. } => codes::CONFIG_TOO_LARGE,
            Error::NotAFile { .. } => codes::CONFIG_NOT_A_FILE,
            Error::Invalid { .. } => codes::CONFIG_INVALID,
            Error::Reference { .. } => codes::CONFIG_REFERENCE,
            Error::HostKeyUnknown { .. } => codes::HOST_KEY_UNKNOWN,
            Error::HostFailed { .. } => codes::HOST_FAILED,
            Error::FeatureUnavailable { .. } => codes::FEATURE_UNAVAILABLE,
            Error::Assembly { .. } => codes::ASSEMBLY_FAILED,
            Error::Model { code, .. }
            | Error::Store { code, .. }
            | Error::Subagent { code, .. }
            | Error::Policy { code, .. } => code,
        }
    }
}

/// This crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What a host registered, for [`Error::HostKeyUnknown`]: the names, or that there are
/// none (as with the `iris` command line, which embeds no host code).
fn registered(known: &[String]) -> String {
    if known.is_empty() {
        "it registered none (the `iris` command line registers no host code)".to_owned()
    } else {
        format!("registered: [{}]", known.join(", "))
    }
}
