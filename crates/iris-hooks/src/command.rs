//! Command hooks: `{type: command, command: ...}` run through iris-command's native
//! service.
//!
//! Protocol (documented in `docs/hooks.md`):
//! - the event's JSON wire format ([`HookEvent::to_json`]) is written to stdin;
//! - stdout must be exactly one JSON object, the reply [`crate::reply`] describes (`{}`
//!   for no result); a key the event does not allow, a second object, non-JSON text or
//!   a truncated stdout is a protocol error;
//! - stderr is diagnostics: it is logged and quoted in error messages, never parsed;
//! - a non-zero exit is a hook error; the hook's deadline kills the whole process tree
//!   (the dispatcher drops the call and iris-command kills the process group);
//! - the command service's root `timeout_seconds` (`CommandConfig::timeout_seconds`,
//!   120 s by default) caps every call it runs, hooks included: a hook whose own
//!   deadline is longer times out at the cap, with a `HOOK_TIMEOUT` naming it;
//! - a `run.finished` event whose run did not complete skips command hooks;
//! - the hook runs with the command service's environment, never the host's: the
//!   allow-list (`PATH`, `HOME`, `LANG`, `LC_*`, …), then `command.env_passthrough`, then
//!   `command.env` (see `iris_command::env`), so a secret such as
//!   `IRIS_PROVIDER_API_KEYS__*` never reaches it; and like any call, everything it
//!   starts — detached processes included — dies when it ends (see
//!   `iris_command::ProcessContainment`).

use iris_command::{CommandBinding, CommandRequest, CommandScope, CommandStatus};
use iris_tools_core::BoxFuture;

use crate::config::CommandHandlerFactory;
use crate::error::{HookError, HookErrorKind};
use crate::event::{EventPayload, HookEvent, RunStatus};
use crate::registration::{HookHandler, HookResult};
pub use crate::reply::parse_answer;

/// Characters of stderr quoted in an error message.
const STDERR_EXCERPT_CHARS: usize = 500;

/// A hook handler that runs a shell command.
///
/// ```no_run
/// use iris_command::{CommandBinding, CommandConfig, CommandService};
/// use iris_hooks::command::CommandHook;
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let service = CommandService::new(CommandConfig::default(), "/srv/workspace")?;
/// service.prepare().await?;
/// let binding = CommandBinding::owned(service);
/// let hook = CommandHook::new(&binding, "./hooks/no-rm.sh");
/// # let _ = hook; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct CommandHook {
    binding: CommandBinding,
    command: String,
}

impl CommandHook {
    /// A hook running `command` with `/bin/sh -c` in the binding's workspace. The hook
    /// borrows the binding: it never closes the service. Its effective deadline is the
    /// shorter of its registration's timeout and the service's root timeout
    /// ([`CommandBinding::timeout_seconds`]), which caps every call the service runs.
    pub fn new(binding: &CommandBinding, command: impl Into<String>) -> Self {
        Self {
            binding: CommandBinding::borrowed(binding),
            command: command.into(),
        }
    }

    /// The command line.
    pub fn command(&self) -> &str {
        &self.command
    }

    async fn run(&self, event: HookEvent) -> Result<HookResult, HookError> {
        let kind = event.kind();
        if let EventPayload::RunFinished { status, .. } = &event.payload
            && *status != RunStatus::Completed
        {
            return Ok(HookResult::None);
        }
        let stdin = serde_json::to_vec(&event.to_json())
            .map_err(|e| HookError::failed(format!("cannot encode the event: {e}")))?;
        let call_id = match &event.payload {
            EventPayload::ToolBefore { call_id, .. } | EventPayload::ToolAfter { call_id, .. } => {
                format!("hook:{kind}:{call_id}")
            }
            _ => format!("hook:{kind}"),
        };
        let scope = CommandScope::new(event.common.run_id.clone(), event.common.session_id.clone());
        // A hook is the owner's configuration, not the model's doing: it runs outside
        // the command sandbox.
        let request =
            CommandRequest::shell(call_id, self.command.clone(), self.binding.workspace_root())
                .stdin(stdin)
                .owner();
        let outcome = self.binding.execute(&scope, request).await.map_err(|e| {
            HookError::new(
                HookErrorKind::HandlerFailed,
                format!("command hook could not run: {e}"),
            )
        })?;
        if !outcome.stderr.trim().is_empty() {
            tracing::debug!(target: "iris::hooks", command = %self.command, stderr = %outcome.stderr, "command hook stderr");
        }
        let stderr = excerpt(&outcome.stderr);
        match outcome.status {
            CommandStatus::Exited => {}
            CommandStatus::TimedOut => {
                // The hook's own deadline is enforced by the dispatcher, which drops this
                // call; a timeout reported here is the command service's root cap.
                return Err(HookError::new(
                    HookErrorKind::Timeout,
                    format!(
                        "timed out after {:.3} s: the command service's `timeout_seconds` \
                         caps a command hook's deadline",
                        outcome.deadline_seconds
                    ),
                ));
            }
            CommandStatus::Cancelled => {
                return Err(HookError::new(
                    HookErrorKind::Cancelled,
                    "cancelled while the command hook ran",
                ));
            }
            CommandStatus::EnvironmentInterrupted => {
                return Err(HookError::failed(format!(
                    "the command hook was interrupted: {}",
                    outcome.detail.as_deref().unwrap_or("environment lost")
                )));
            }
        }
        match outcome.exit_code {
            Some(0) => {}
            Some(code) => {
                return Err(HookError::new(
                    HookErrorKind::CommandFailed,
                    format!("command exited with code {code}{stderr}"),
                ));
            }
            None => {
                return Err(HookError::new(
                    HookErrorKind::CommandFailed,
                    format!("command ended without an exit code{stderr}"),
                ));
            }
        }
        // Only stdout is parsed: a hook may write as much stderr (diagnostics) as it likes.
        if outcome.output_stats.stdout.bytes_dropped > 0 {
            return Err(HookError::new(
                HookErrorKind::Protocol,
                format!(
                    "stdout was truncated ({} bytes written); a hook must print one small JSON object",
                    outcome.output_stats.stdout.bytes_seen
                ),
            ));
        }
        parse_answer(kind, &outcome.stdout).map_err(|message| {
            HookError::new(HookErrorKind::Protocol, format!("stdout: {message}"))
        })
    }
}

impl HookHandler for CommandHook {
    fn handle(&self, event: HookEvent) -> BoxFuture<'_, Result<HookResult, HookError>> {
        Box::pin(self.run(event))
    }
}

/// A factory for [`crate::config::HookFactoryRegistry::build`]: command hooks on `binding`.
pub fn command_hooks(binding: &CommandBinding) -> Box<CommandHandlerFactory<'_>> {
    Box::new(move |command: &str| {
        Ok(std::sync::Arc::new(CommandHook::new(binding, command))
            as std::sync::Arc<dyn HookHandler>)
    })
}

fn excerpt(stderr: &str) -> String {
    let trimmed = stderr.trim();
    if trimmed.is_empty() {
        return String::new();
    }
    let short: String = trimmed.chars().take(STDERR_EXCERPT_CHARS).collect();
    let more = if trimmed.chars().count() > STDERR_EXCERPT_CHARS {
        "…"
    } else {
        ""
    };
    format!("; stderr: {}{more}", short.replace('\n', " | "))
}
