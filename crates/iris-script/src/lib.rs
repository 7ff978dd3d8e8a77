#![doc = include_str!("../README.md")]

mod callable;
mod host;
mod module;
mod tool;

pub use callable::{NEVER_CALLABLE, ScriptCallable};
pub use tool::{RunToolScriptTool, ScriptHost, run_tool_script_definition};

/// Model name of the code-mode tool (YAML key `exec.tool_script`).
pub const RUN_TOOL_SCRIPT: &str = "run_tool_script";

/// How many connections on a script's channel the host serves at once (one
/// connection is one inner call, so also how many inner calls of one script run at
/// the same time). Each may buffer a request line of up to 8 MiB, so this bounds what
/// one script can make the host hold to 128 MiB; further connections wait, unanswered,
/// until one of these ends.
pub const MAX_CONCURRENT_CALLS: usize = 16;

/// The `tracing` target of this crate's events (inner calls' spans are the
/// executor's `execute_tool` spans, children of the script's).
pub const TRACING_TARGET: &str = "iris::script";

/// Stable `SCREAMING_SNAKE` codes of code mode. Inner calls' own failures keep their
/// codes (a script sees them as `ToolError.code`); the outer call's program failures
/// are the command codes (`COMMAND_FAILED`, `COMMAND_TIMEOUT`, …).
pub mod codes {
    /// No executor is attached to the call's context (`ScriptHost::attach`).
    pub const SCRIPT_HOST_MISSING: &str = "SCRIPT_HOST_MISSING";
    /// The private channel (a Unix socket in `<workspace>/.iris/script/`) could not be
    /// opened.
    pub const SCRIPT_CHANNEL_UNAVAILABLE: &str = "SCRIPT_CHANNEL_UNAVAILABLE";
    /// A script called a tool it may not call (itself, `subagent`, `ask_question`,
    /// `store_secret`, a tool that is not script-callable or not in the request).
    pub const SCRIPT_CALL_REFUSED: &str = "SCRIPT_CALL_REFUSED";
    /// A script's request on the channel was malformed or carried a wrong token.
    pub const SCRIPT_PROTOCOL_ERROR: &str = "SCRIPT_PROTOCOL_ERROR";
    /// Raised inside the program only (`ToolError.code`, never an outer call's code):
    /// the connection to the host failed, or the host closed it without a reply
    /// (typically because the script call is ending).
    pub const SCRIPT_CHANNEL_CLOSED: &str = "SCRIPT_CHANNEL_CLOSED";
    /// An inner call needs approval, but an earlier inner call of the same program may
    /// have had a side effect that the approved re-run would repeat.
    pub const SCRIPT_NOT_REPLAYABLE: &str = "SCRIPT_NOT_REPLAYABLE";
}
