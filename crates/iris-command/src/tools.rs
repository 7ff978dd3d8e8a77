//! The model tools `exec_command` and `run_python`.
//!
//! Both declare the `execute` capability, are not concurrency-safe and own their
//! deadline ([`ToolTimeoutOwner::Tool`]): the deadline is the minimum of the root
//! `CommandConfig::timeout_seconds`, the call's `timeout_seconds` and the runtime's
//! `ctx.tool_timeout` (the executor sets it to the call's effective deadline), and on
//! expiry the tool kills the process tree and reports `COMMAND_TIMEOUT` itself. `cwd` (default `"."`) is resolved with
//! [`WorkspacePolicy::resolve_path`] against the call's workspace and must be an
//! existing directory. The result's content is the output (stdout, then stderr under
//! `[stderr]`); `data` holds `mode, status, exit_code, cwd, duration_seconds,
//! output_truncated, output_stats`, and `sandbox` when the call ran in the sandbox (the
//! policy in force and the hosts the egress proxy refused). A non-zero exit is `COMMAND_FAILED` with the output
//! still included.
//!
//! **Escalation.** When the policy's `command.sandbox.escalation` is `ask`,
//! `exec_command`'s schema has an optional `sandbox` object (`{network: on}`,
//! `{filesystem: off}`, or both): a call that uses it to widen the sandbox reports the
//! widening through [`Tool::requested_escalation`], so the default permission policy
//! sends it to a human whatever `execute_mode` says, and it runs with the wider policy
//! only once approved. Under `never` (the default) the parameter is not in the schema
//! and a call carrying it is invalid input. `run_python` never has the parameter (a
//! program that needs the network runs through `exec_command`'s `python3`), and code
//! mode's own Python always runs under the policy; an `exec_command` a script calls
//! goes through the same permission check as any other call.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use iris_fs::workspace::WorkspacePolicy;
use iris_tools_core::{
    BoxFuture, ContentBlock, Tool, ToolCapability, ToolDefinition, ToolErrorInfo,
    ToolExecutionContext, ToolInput, ToolOutput, ToolTimeoutOwner, codes,
};
use serde::Deserialize;
use serde_json::{Value, json};

use iris_sandbox::{Escalation, SandboxPolicy, SandboxWidening};

use crate::binding::CommandBinding;
use crate::request::{CommandOutcome, CommandPayload, CommandRequest, CommandScope};

/// Model name of the shell tool (YAML key `exec.command`).
pub const EXEC_COMMAND: &str = "exec_command";
/// Model name of the Python tool (YAML key `exec.python`).
pub const RUN_PYTHON: &str = "run_python";

const EXEC_COMMAND_DESCRIPTION: &str = "Run a shell command in the workspace; returns stdout and stderr.\n\
Use for builds, tests, git and CLI tools; use run_python for Python code.\n\
No stdin or TTY; cwd must be a workspace directory.";

const RUN_PYTHON_DESCRIPTION: &str = "Run a complete Python program in the workspace; returns its output.\n\
Use for calculations and data scripts; use exec_command for shell tools.\n\
Each call is a fresh process: no saved variables, no stdin.";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Shell,
    Python,
}

fn schema(kind: Kind, escalation: Escalation) -> Value {
    let (field, description) = match kind {
        Kind::Shell => (
            "command",
            "Shell command line run by /bin/sh -c, e.g. `cargo test -p app 2>&1 | tail -n 20`.",
        ),
        Kind::Python => (
            "code",
            "Complete Python 3 program; print what you need, e.g. `import math\\nprint(math.pi)`.",
        ),
    };
    let mut schema = json!({
        "type": "object",
        "properties": {
            field: {"type": "string", "minLength": 1, "description": description},
            "cwd": {
                "type": "string",
                "default": ".",
                "description": "Working directory relative to the workspace root, e.g. `crates/app`; it must exist."
            },
            "timeout_seconds": {
                "type": ["number", "null"],
                "exclusiveMinimum": 0,
                "default": null,
                "description": "Deadline for this call in seconds, e.g. 30; the configured timeout still caps it."
            }
        },
        "required": [field],
        "additionalProperties": false
    });
    if kind == Kind::Shell
        && escalation == Escalation::Ask
        && let Some(properties) = schema["properties"].as_object_mut()
    {
        properties.insert(
            "sandbox".to_owned(),
            json!({
                "type": ["object", "null"],
                "properties": {
                    "network": {
                        "type": ["string", "null"],
                        "enum": ["on", null],
                        "default": null,
                        "description": "`on` when the command needs the network the sandbox blocks, e.g. `pip install`."
                    },
                    "filesystem": {
                        "type": ["string", "null"],
                        "enum": ["off", null],
                        "default": null,
                        "description": "`off` when the command must write outside the workspace, e.g. `~/.cache`."
                    }
                },
                "minProperties": 1,
                "additionalProperties": false,
                "default": null,
                "description": "Only when the sandbox blocks what the task needs: a wider sandbox for this call, e.g. `{\"network\": \"on\"}`; a human must approve it."
            }),
        );
    }
    schema
}

fn definition(kind: Kind, escalation: Escalation) -> ToolDefinition {
    let (name, description) = match kind {
        Kind::Shell => (EXEC_COMMAND, EXEC_COMMAND_DESCRIPTION),
        Kind::Python => (RUN_PYTHON, RUN_PYTHON_DESCRIPTION),
    };
    ToolDefinition::new(name, description, schema(kind, escalation))
        .with_capabilities([ToolCapability::Execute])
        .with_group("exec")
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ShellInput {
    command: String,
    #[serde(default = "dot")]
    cwd: String,
    #[serde(default)]
    timeout_seconds: Option<f64>,
    #[serde(default)]
    sandbox: Option<SandboxWidening>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PythonInput {
    code: String,
    #[serde(default = "dot")]
    cwd: String,
    #[serde(default)]
    timeout_seconds: Option<f64>,
}

fn dot() -> String {
    ".".to_owned()
}

/// The parsed input of either tool: what `validate_input` hands to `run`.
#[derive(Debug)]
struct Input {
    payload: CommandPayload,
    cwd: String,
    timeout_seconds: Option<f64>,
    widening: Option<SandboxWidening>,
}

fn parse(kind: Kind, raw: &Value, policy: &SandboxPolicy) -> Result<Input, ToolErrorInfo> {
    let invalid = |e: serde_json::Error| ToolErrorInfo::new(codes::INVALID_INPUT, e.to_string());
    let input = match kind {
        Kind::Shell => {
            let i = ShellInput::deserialize(raw).map_err(invalid)?;
            Input {
                payload: CommandPayload::Shell(i.command),
                cwd: i.cwd,
                timeout_seconds: i.timeout_seconds,
                widening: i.sandbox,
            }
        }
        Kind::Python => {
            let i = PythonInput::deserialize(raw).map_err(invalid)?;
            Input {
                payload: CommandPayload::Python(i.code),
                cwd: i.cwd,
                timeout_seconds: i.timeout_seconds,
                widening: None,
            }
        }
    };
    let field = match kind {
        Kind::Shell => "command",
        Kind::Python => "code",
    };
    if input.payload.source().trim().is_empty() {
        return Err(ToolErrorInfo::new(
            codes::INVALID_INPUT,
            format!("`{field}` must not be empty"),
        ));
    }
    if let Some(widening) = &input.widening {
        // The schema has no `sandbox` under `never`; this covers a direct `run`.
        if policy.escalation != Escalation::Ask {
            return Err(ToolErrorInfo::new(
                codes::INVALID_INPUT,
                "unknown field `sandbox`: this agent's sandbox policy does not allow escalation",
            ));
        }
        if *widening == SandboxWidening::default() {
            return Err(ToolErrorInfo::new(
                codes::INVALID_INPUT,
                "`sandbox` must ask for `network: on` or `filesystem: off`",
            ));
        }
    }
    if let Some(t) = input.timeout_seconds
        && !(t.is_finite() && t > 0.0)
    {
        return Err(ToolErrorInfo::new(
            codes::INVALID_INPUT,
            format!("`timeout_seconds` must be a positive number, got {t}"),
        ));
    }
    Ok(input)
}

/// The smaller of two optional deadlines, in seconds; a zero runtime deadline is
/// ignored (the executor never starts a body whose deadline already passed).
fn min_timeout(call: Option<f64>, runtime: Option<Duration>) -> Option<f64> {
    let runtime = runtime.filter(|t| !t.is_zero()).map(|t| t.as_secs_f64());
    match (call, runtime) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

async fn run(
    kind: Kind,
    binding: &CommandBinding,
    mut input: ToolInput,
    ctx: &ToolExecutionContext,
) -> ToolOutput {
    // Parsed once by `validate_input`; parsed here only when `run` is called directly.
    let input = match input.take_parsed::<Input>() {
        Some(parsed) => parsed,
        None => match parse(kind, input.value(), binding.sandbox_policy()) {
            Ok(parsed) => parsed,
            Err(e) => return ToolOutput::error(e),
        },
    };
    // Resolving the cwd touches the file system: on the blocking pool.
    let (typed, root) = (input.cwd.clone(), ctx.workspace_root.clone());
    let resolved = iris_fs::blocking::run_blocking_io(move || {
        WorkspacePolicy::new()
            .resolve_path(&typed, &root)
            .map(|path| {
                let is_dir = path.is_dir();
                (path, is_dir)
            })
    })
    .await;
    let (cwd, is_dir): (PathBuf, bool) = match resolved {
        Ok(Ok(found)) => found,
        Ok(Err(e)) => {
            return ToolOutput::error(e.to_info().with_detail("cwd", input.cwd.clone()));
        }
        Err(e) => return ToolOutput::error(e),
    };
    if !is_dir {
        return ToolOutput::error(
            ToolErrorInfo::new(
                codes::INVALID_PATH,
                format!(
                    "cwd `{}` is not an existing directory in the workspace",
                    input.cwd.escape_debug()
                ),
            )
            .with_detail("cwd", input.cwd.clone()),
        );
    }
    let mut request = CommandRequest::new(ctx.call_id.clone(), input.payload, cwd);
    request.timeout_seconds = min_timeout(input.timeout_seconds, ctx.tool_timeout);
    request.cancellation = ctx.cancellation.clone();
    // A widening that adds nothing to the policy runs under the policy itself.
    request.widening = input
        .widening
        .filter(|w| w.describe(binding.sandbox_policy()).is_some());
    let scope = CommandScope::new(ctx.run_id.clone(), ctx.session_id.clone());
    match binding.execute(&scope, request).await {
        Ok(outcome) => outcome_result(&outcome),
        Err(e) => ToolOutput::error(e.to_info()),
    }
}

/// The tool output of an outcome: output as content, the outcome's fields (mode, status,
/// exit code, cwd, duration, truncation, output stats, and the sandbox report if any) as
/// data, and the error (if any) with the output still included.
pub fn outcome_result(outcome: &CommandOutcome) -> ToolOutput {
    let mut output = match outcome.error_info() {
        Some(error) => ToolOutput::error(error),
        None => ToolOutput::default(),
    };
    output.content = vec![ContentBlock::text(outcome.combined_output())];
    output.data = outcome_data(outcome);
    output
}

fn outcome_data(outcome: &CommandOutcome) -> serde_json::Map<String, Value> {
    let value = json!({
        "mode": outcome.mode.as_str(),
        "status": outcome.status.as_str(),
        "exit_code": outcome.exit_code,
        "cwd": outcome.cwd.to_string_lossy(),
        "duration_seconds": outcome.duration_seconds,
        "output_truncated": outcome.output_truncated,
        "output_stats": outcome.output_stats,
    });
    let mut map = match value {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    };
    if let Some(report) = &outcome.sandbox
        && let Ok(report) = serde_json::to_value(report)
    {
        map.insert("sandbox".to_owned(), report);
    }
    map
}

macro_rules! command_tool {
    ($(#[$doc:meta])* $name:ident, $kind:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone)]
        pub struct $name {
            binding: CommandBinding,
            definition: ToolDefinition,
        }

        impl $name {
            /// The tool, running through the given binding. Its definition's timeout
            /// is the binding's root timeout, so the executor's deadline is that
            /// (`command.timeout_seconds`, default 120 s), not its own 60 s default.
            pub fn new(binding: CommandBinding) -> Self {
                let mut definition = definition($kind, binding.sandbox_policy().escalation);
                if let Ok(root) = Duration::try_from_secs_f64(binding.timeout_seconds()) {
                    definition = definition.with_timeout(root);
                }
                Self {
                    binding,
                    definition,
                }
            }
        }

        impl Tool for $name {
            fn definition(&self) -> &ToolDefinition {
                &self.definition
            }

            fn run<'a>(
                &'a self,
                input: ToolInput,
                ctx: &'a ToolExecutionContext,
            ) -> BoxFuture<'a, ToolOutput> {
                Box::pin(run($kind, &self.binding, input, ctx))
            }

            fn validate_input(&self, raw: Value) -> Result<ToolInput, ToolErrorInfo> {
                let parsed = parse($kind, &raw, self.binding.sandbox_policy())?;
                Ok(ToolInput::with_parsed(raw, parsed))
            }

            fn requested_escalation(&self, input: &Value) -> Option<String> {
                let policy = self.binding.sandbox_policy();
                if policy.escalation != Escalation::Ask {
                    return None;
                }
                let widening = SandboxWidening::deserialize(input.get("sandbox")?).ok()?;
                widening.describe(policy)
            }

            fn is_concurrency_safe(&self) -> bool {
                false
            }

            fn timeout_owner(&self) -> ToolTimeoutOwner {
                ToolTimeoutOwner::Tool
            }
        }
    };
}

command_tool!(
    /// `exec_command {command, cwd = ".", timeout_seconds = null}`: one `/bin/sh -c`
    /// process per call (see the [module docs](self)).
    ///
    /// ```
    /// use iris_command::{CommandBinding, CommandConfig, CommandService, ExecCommandTool};
    /// use iris_tools_core::{Tool, ToolExecutionContext, ToolInput};
    /// use serde_json::json;
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
    /// let workspace = tempfile::tempdir()?;
    /// // A doctest has no `iris-sandbox` helper binary: the sandbox is off here.
    /// let unsandboxed = CommandConfig::native().with_sandbox(iris_command::SandboxPolicy::off());
    /// let service = CommandService::new(unsandboxed, workspace.path())?;
    /// service.prepare().await?;
    /// let tool = ExecCommandTool::new(CommandBinding::owned(service));
    /// let ctx = ToolExecutionContext::new(workspace.path());
    /// let input = tool.validate_input(json!({"command": "echo hi; exit 3"}))?;
    /// let result = tool.run(input, &ctx).await;
    /// assert_eq!(result.error_code(), Some("COMMAND_FAILED"));
    /// assert_eq!(result.data["exit_code"], 3);
    /// assert!(result.model_content().ends_with("hi\n"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ExecCommandTool,
    Kind::Shell
);

command_tool!(
    /// `run_python {code, cwd = ".", timeout_seconds = null}`: one `python3 -c` process
    /// per call — the host's interpreter natively (`IRIS_PYTHON` or `python3` on
    /// `PATH`), the image's in Docker (see the [module docs](self)).
    RunPythonTool,
    Kind::Python
);

/// A constructor of one command tool on a command binding.
pub type MakeCommandTool = fn(&CommandBinding) -> Arc<dyn Tool>;

/// The command tools' lines of the built-in tool catalog, in catalog order: each a
/// `tools.builtin` YAML key, the model tool name and the tool's constructor on the
/// agent's command binding. Adding a command tool is its type plus one line here;
/// the runner's `tools.builtin` is the union of every layer's catalog.
///
/// ```
/// let keys: Vec<(&str, &str)> = iris_command::CATALOG.iter().map(|(k, n, _)| (*k, *n)).collect();
/// assert_eq!(keys, [("exec.command", "exec_command"), ("exec.python", "run_python")]);
/// ```
pub const CATALOG: [(&str, &str, MakeCommandTool); 2] = [
    ("exec.command", EXEC_COMMAND, |binding| {
        Arc::new(ExecCommandTool::new(binding.clone()))
    }),
    ("exec.python", RUN_PYTHON, |binding| {
        Arc::new(RunPythonTool::new(binding.clone()))
    }),
];

/// Every command tool on one binding, in catalog order, ready for
/// `ToolRegistry::register_many`.
pub fn command_tools(binding: &CommandBinding) -> Vec<Arc<dyn Tool>> {
    CATALOG.iter().map(|(_, _, make)| make(binding)).collect()
}
