//! `iris`: list, inspect, call and check the tools an agent YAML describes, and run the
//! agent (`iris run`, `iris resume`, see [`mod@run`]; `iris runs`, see [`mod@runs`]).
//!
//! Exit codes (also in `iris --help` and docs/configuration.md):
//! - 0: success (`iris run` / `iris resume`: the run completed);
//! - 1: the command ran and found problems (`check`, `lint`), the called tool
//!   returned an error result, or the run failed (`error[CODE]: …`); `iris resume` /
//!   `iris runs show`: no such run (`RUN_NOT_FOUND`), or it does not wait for that
//!   answer (`RUN_NOT_WAITING`, `RUN_INTERACTION_STALE`);
//! - 2: bad command line (`CLI_USAGE`, a JSON error with `--json`) or bad call input:
//!   input that is not JSON, or JSON the tool's schema or parser rejects (an
//!   `INVALID_INPUT` result, which is still printed); an
//!   answer that does not fit the waiting run (`RUN_ANSWER_INVALID`); a bad
//!   `--session` id (`SESSION_ID_INVALID`);
//! - 3: the configuration could not be loaded or assembled, a feature is not in this
//!   build, a discovered config is in an untrusted folder (`WORKSPACE_UNTRUSTED`), the
//!   run store failed (`RUN_STORE_FAILED`), or stdout could not be written (a closed
//!   pipe is not an error);
//! - 4: the call needs a human's approval and none was given; `iris run` / `iris
//!   resume`: the run waits for a human and no terminal can answer (`RUN_WAITING`: the
//!   run id, what it waits for and the `iris resume` commands that answer it);
//! - 5: `iris resume`: another live process drives the run (`RUN_BUSY`);
//! - 129, 130, 143: ended by SIGHUP, SIGINT or SIGTERM, after cancelling the running
//!   call and closing the tool environment (every process it started is stopped).
//!
//! Text output escapes terminal controls ([`output::escape`]); `--json` is exact JSON.

mod budget_flags;
mod call_cmd;
mod check_cmd;
#[cfg(feature = "embed")]
mod discovery_cmd;
mod elicit;
mod lint_cmd;
mod mcp_cmd;
mod output;
mod run;
mod runs;
mod schema_cmd;
mod serve_cmd;
mod session;
mod signals;
mod skills_cmd;
mod tools_cmd;
mod trust_cmd;

use std::future::Future;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::{Parser, Subcommand, ValueEnum};
use iris_mcp::serve::HttpOptions;
use iris_providers::adapters::{Provider, Strict, to_provider};
use iris_providers::lint::lint_definition;
use iris_runner::trust::codes as trust_codes;
use iris_runner::{
    AgentConfig, Answer, HostRegistry, LoadedConfig, RunStatus, ToolEnvironment, TrustError,
    TrustStore, discover_config,
};
use iris_tools_core::{CancellationSignal, ToolExecutionContext, ToolUse, ViewFilter, codes};
use serde_json::{Value, json};

use crate::output::{Mode, block, err_line, escape, line, print_json};
use crate::signals::{Caught, Signals};
use call_cmd::{CallOptions, call};
use check_cmd::check;
use lint_cmd::lint;
use mcp_cmd::{mcp_list, serve, serve_plan};
use schema_cmd::schema;
use skills_cmd::skills;
use tools_cmd::{cell, tools};
use trust_cmd::trust_command;

const AFTER_HELP: &str = "\
Examples:
  iris --config examples/iris.yaml run \"Summarize the project\"
                                              a scripted multi-turn run (no key, no network)
  iris run \"Fix the failing test\" --model openai:gpt-4.1-mini
  echo \"What changed?\" | iris run - --json   the run's events as JSON lines
  iris run \"Hi\" --model openai:llama3.1 --base-url http://127.0.0.1:11434/v1
  iris tools                                  list the agent's tools
  iris --config examples/iris.yaml tools --all
  iris schema exec_command --format anthropic
  iris call exec_command '{\"command\": \"ls\"}' --yes
  iris mcp list --json                        MCP servers, protocols, tools, diagnostics
  iris mcp serve                              the agent's tools for MCP clients, over stdio
  iris mcp serve --http 127.0.0.1:8931 --token-env MCP_TOKEN
                                              ... over streamable HTTP, with a bearer token
  iris call tool_search '{\"queries\": [\"current time\"]}'
  iris call read_file '{\"file_path\": \"a.txt\"}' --session s1
                                              calls of one session share what was read
  iris runs --status waiting                  runs waiting for a human
  iris runs show RUN_ID                       a run's history and what it waits for
  iris resume RUN_ID --approve                answer a waiting run and continue it
  echo '{\"name\": \"greeting\"}' | iris call load_skill -
  iris check                                  validate the config and what it points to
  iris trust                                  trust this folder's iris.yaml

Configuration: --config FILE, else ./iris.yaml, else .iris/agent.yaml. IRIS_* environment
variables override keys (IRIS_PROVIDER_API_KEYS__TAVILY -> provider_api_keys.tavily).

Workspace trust: a discovered config (not named with --config) can start programs (MCP
servers, command hooks), so it is used only in a trusted folder: `iris trust [DIR]` keeps
the folder in $XDG_CONFIG_HOME/iris/trusted.json (else ~/.config/iris/trusted.json),
`--trust` trusts it for one run. Otherwise iris exits 3 (WORKSPACE_UNTRUSTED) and starts
nothing. A file named with --config is trusted.

Run: `iris run PROMPT` streams the answer to stdout and each tool call's status to stderr;
a call that needs a human, an ask_question and an MCP server's request for input are
asked on the terminal (--yes approves all calls). --model provider:model (openai, openai-responses, anthropic, gemini,
scripted) and --base-url replace the YAML's model; the key comes from model.api_key_env
when --model keeps the YAML's provider, else from the provider's own variable
(OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY). Runs are kept in the YAML's
run_store (default .iris/runs.db): a run nobody can answer exits 4 (RUN_WAITING) printing
the `iris resume RUN_ID --approve | --deny REASON | --answer TEXT | --rerun | --skip |
--record TEXT | --secret-stdin` commands that continue it, in any process; `iris resume RUN_ID` alone takes
over a run whose process died.

Signals: SIGINT (Ctrl-C), SIGTERM and SIGHUP cancel the running call (or run), stop every
process it, a command hook or an MCP server started, and exit 130, 143 or 129.

Output: text escapes terminal controls (ESC, CR, bidi overrides show as \\x1b, \\r,
\\u{202e}); --json is exact JSON. A closed stdout (iris ... | head) is not an error.

Exit codes: 0 success (a run completed); 1 problems found, the tool returned an error, the
run failed, or no such run / nothing to answer (RUN_NOT_FOUND, RUN_NOT_WAITING,
RUN_INTERACTION_STALE); 2 bad command line (CLI_USAGE) or call input (not JSON, or
rejected by the tool's schema: INVALID_INPUT; RUN_ANSWER_INVALID; SESSION_ID_INVALID);
3 configuration or assembly error, an untrusted folder, the run store failed, or stdout
could not be written; 4 approval required but not given (a run waits for a human:
RUN_WAITING, its run id and the resume commands are printed); 5 the run is driven by
another process (RUN_BUSY); 129/130/143 ended by SIGHUP/SIGINT/SIGTERM.";

/// How long a cancelled call may take to stop what it started before it is dropped
/// (its process groups are then killed by their owners' drop).
const CANCEL_GRACE: Duration = Duration::from_secs(5);
/// How long closing the tool environment may take.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(15);
/// How long the runtime waits at exit for blocking work still running (a timed-out
/// call's abandoned file walk or regex search) before the process exits without it.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(200);

/// The session id of every `iris call` (its artifacts land under
/// `.iris/tool-results/iris-cli/`).
const SESSION_ID: &str = "iris-cli";

/// Codes only this binary produces.
mod cli_codes {
    /// `iris` was ended by SIGINT, SIGTERM or SIGHUP.
    pub(crate) const INTERRUPTED: &str = "INTERRUPTED";
    /// Closing the tool environment did not finish in time.
    pub(crate) const CLOSE_TIMEOUT: &str = "CLOSE_TIMEOUT";
    /// `iris run --model` / `--base-url` cannot name a model (no provider, no model
    /// name, `scripted` without a script, a base URL for the scripted model).
    pub(crate) const MODEL_FLAG_INVALID: &str = "MODEL_FLAG_INVALID";
    /// `iris resume --model` / `--base-url` names another model than the run was
    /// started with, without `--switch-model`.
    pub(crate) const MODEL_SWITCH_REFUSED: &str = "MODEL_SWITCH_REFUSED";
    /// The run's task ended without its `finished` event.
    pub(crate) const RUN_ABORTED: &str = "RUN_ABORTED";
    /// `iris run` / `iris resume` (exit 4): the run waits for a human and no terminal
    /// can answer; the message (or the `waiting` JSON line) names the interaction's
    /// kind and the commands that answer it.
    pub(crate) const RUN_WAITING: &str = "RUN_WAITING";
    /// `iris call --session`: the id is empty, too long, or not a plain file name.
    pub(crate) const SESSION_ID_INVALID: &str = "SESSION_ID_INVALID";
    /// `iris call --session`: the session's file cannot be read or does not decode.
    pub(crate) const SESSION_STATE_INVALID: &str = "SESSION_STATE_INVALID";
    /// `iris mcp serve --token-env VAR`: the variable is not set or is empty.
    pub(crate) const SERVE_TOKEN_MISSING: &str = "SERVE_TOKEN_MISSING";
}

/// The iris command line.
#[derive(Debug, Parser)]
#[command(name = "iris", version, about = "Use an Iris agent's tools, and run the agent, from a terminal.", after_help = AFTER_HELP)]
struct Cli {
    /// The agent YAML (default: ./iris.yaml, else .iris/agent.yaml). A file named here
    /// is trusted.
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Overrides the workspace the YAML names.
    #[arg(long, global = true, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Machine-readable JSON on stdout.
    #[arg(long, global = true)]
    json: bool,
    /// Trust the current folder's discovered config for this run (see `iris trust`).
    #[arg(long, global = true)]
    trust: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the agent on a prompt: the answer streams to stdout, tool calls show on stderr.
    Run {
        /// The user's message, or `-` to read it from stdin.
        #[arg(value_name = "PROMPT")]
        prompt: String,
        /// Approve every call that needs a human without asking.
        #[arg(long)]
        yes: bool,
        /// The model as `provider:model` (openai, openai-responses, anthropic, gemini,
        /// scripted), e.g. `openai:gpt-4.1-mini`; replaces the YAML's model.
        #[arg(long, value_name = "PROVIDER:MODEL")]
        model: Option<String>,
        /// Another server for the model's wire format (an OpenAI-compatible server, a
        /// proxy); replaces `model.base_url`.
        #[arg(long, value_name = "URL")]
        base_url: Option<String>,
        #[command(flatten)]
        limits: budget_flags::LimitFlags,
    },
    /// List the tools: name, group, capabilities, deferred.
    Tools {
        /// Also list system tools.
        #[arg(long)]
        all: bool,
    },
    /// Print one tool's schema in a provider's request shape.
    Schema {
        /// The tool name or alias.
        tool: String,
        /// The request shape.
        #[arg(long, value_enum, default_value_t = Format::Neutral)]
        format: Format,
    },
    /// Run one call through the full executor path (permission, hooks, middleware).
    Call {
        /// The tool name or alias.
        tool: String,
        /// The JSON arguments, or `-` to read them from stdin (default `{}`).
        input: Option<String>,
        /// Approve a call that needs a human without asking.
        #[arg(long)]
        yes: bool,
        /// The call's deadline in seconds (at most the tool's own); the call ends as
        /// TOOL_TIMEOUT when it passes (COMMAND_TIMEOUT for exec_command and run_python).
        #[arg(long, value_name = "SECONDS", value_parser = parse_timeout)]
        timeout: Option<Duration>,
        /// Share the file tools' read observations with the other calls of this session
        /// (kept in .iris/sessions/ID.reads.json), so a read lets a later edit through.
        #[arg(long, value_name = "ID")]
        session: Option<String>,
    },
    /// List the runs of the run store, newest first (or `runs show RUN_ID`).
    #[command(args_conflicts_with_subcommands = true)]
    Runs {
        #[command(subcommand)]
        command: Option<RunsCommand>,
        /// Only runs in this state.
        #[arg(long, value_enum)]
        status: Option<StatusArg>,
        /// At most this many runs.
        #[arg(long, value_name = "N", default_value_t = 50,
              value_parser = clap::value_parser!(u32).range(1..=100_000))]
        limit: u32,
    },
    /// Answer a waiting run's pending interaction and continue it; without an answer,
    /// take over a run whose process died.
    #[command(group = clap::ArgGroup::new("reply").multiple(false))]
    Resume {
        /// The run (`iris runs` lists them).
        #[arg(value_name = "RUN_ID")]
        run_id: String,
        /// Approve the call the run waits for.
        #[arg(long, group = "reply")]
        approve: bool,
        /// Deny it; the model gets APPROVAL_DENIED with the reason (or decline an MCP
        /// server's request for input).
        #[arg(long, value_name = "REASON", group = "reply")]
        deny: Option<String>,
        /// Answer the question the run waits for (one of its options when it has any),
        /// or an MCP server's request for input: the form's values as one JSON object,
        /// or `accept` for a URL.
        #[arg(long, value_name = "TEXT", group = "reply")]
        answer: Option<String>,
        /// Run the call a crash left in doubt again.
        #[arg(long, group = "reply")]
        rerun: bool,
        /// Do not run the call in doubt again.
        #[arg(long, group = "reply")]
        skip: bool,
        /// Record what the call in doubt produced, as its result.
        #[arg(long, value_name = "TEXT", group = "reply")]
        record: Option<String>,
        /// Give the secret the run waits for, read as one line from stdin (without
        /// echo on a terminal); it goes to the tools that use it, never to the model,
        /// the run store or any output.
        #[arg(long, group = "reply")]
        secret_stdin: bool,
        /// The model as `provider:model`, over the one the run was started with (which
        /// the run store keeps); another model needs --switch-model.
        #[arg(long, value_name = "PROVIDER:MODEL")]
        model: Option<String>,
        /// Another server for the model's wire format, over the run's; another server
        /// needs --switch-model.
        #[arg(long, value_name = "URL")]
        base_url: Option<String>,
        /// Continue the run on a model or server other than the one it was started
        /// with: its whole stored conversation goes there.
        #[arg(long)]
        switch_model: bool,
        /// Raise one limit of the budget as KEY=VALUE (max_input_tokens,
        /// max_output_tokens, max_tool_calls, max_tool_calls_per_tool.TOOL,
        /// max_wall_seconds, max_cost_usd; repeatable): a run that stopped at a limit
        /// (RUN_BUDGET_EXCEEDED) goes on.
        #[arg(long, value_name = "KEY=VALUE")]
        raise_limit: Vec<String>,
    },
    /// Serve the agent (as `default`) and any --agent over HTTP: start runs, stream
    /// their events, answer and cancel them (docs/serve.md).
    Serve(serve_cmd::ServeArgs),
    /// MCP servers.
    Mcp {
        #[command(subcommand)]
        command: McpCommand,
    },
    /// List the discovered skills and discovery diagnostics.
    Skills,
    /// Validate the config and everything it points to; exit 1 listing every problem.
    Check,
    /// Check every tool against the tool-design rules.
    Lint,
    /// Tool discovery: `fetch-model` gets the hybrid backend's embedding model.
    #[cfg(feature = "embed")]
    Discovery {
        #[command(subcommand)]
        command: discovery_cmd::DiscoveryCommand,
    },
    /// Trust a folder (default: the current one), so the iris.yaml or .iris/agent.yaml
    /// found there may start its MCP servers and command hooks.
    Trust {
        /// The folder (default: the current folder).
        #[arg(value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Stop trusting the folder instead.
        #[arg(long)]
        remove: bool,
        /// List the trusted folders.
        #[arg(long, conflicts_with_all = ["dir", "remove"])]
        list: bool,
    },
}

#[derive(Debug, Subcommand)]
enum RunsCommand {
    /// One run: its history, the turn in progress and what it waits for.
    Show {
        /// The run.
        #[arg(value_name = "RUN_ID")]
        run_id: String,
    },
}

/// `iris runs --status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum StatusArg {
    Running,
    Waiting,
    Completed,
    Failed,
    Cancelled,
}

impl StatusArg {
    fn status(self) -> RunStatus {
        match self {
            StatusArg::Running => RunStatus::Running,
            StatusArg::Waiting => RunStatus::Waiting,
            StatusArg::Completed => RunStatus::Completed,
            StatusArg::Failed => RunStatus::Failed,
            StatusArg::Cancelled => RunStatus::Cancelled,
        }
    }
}

#[derive(Debug, Subcommand)]
enum McpCommand {
    /// Servers, protocol, status, diagnostics and tools.
    List,
    /// Serve the agent's tools to MCP clients: stdio by default, streamable HTTP with
    /// --http. Every call takes the executor path (permission, hooks, middleware,
    /// deadlines, artifacts); a call that needs approval is asked of the client by
    /// elicitation. Runs until stdin ends (stdio) or SIGINT/SIGTERM.
    #[command(after_help = SERVE_HELP)]
    Serve {
        /// Serve streamable HTTP at ADDR (`/mcp`); `--http` alone is 127.0.0.1:8931
        /// (port 0 picks a free one; the address is printed on stderr). Loopback only
        /// unless --allow-remote.
        #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:8931")]
        http: Option<std::net::SocketAddr>,
        /// HTTP requests must carry `Authorization: Bearer <token>`, the token read
        /// from this environment variable (never printed); others get 401.
        #[arg(long, value_name = "VAR", requires = "http")]
        token_env: Option<String>,
        /// Allow a non-loopback --http address (needs --token-env; the Host header is
        /// then not checked).
        #[arg(long, requires = "http")]
        allow_remote: bool,
    },
}

const SERVE_HELP: &str = "\
Examples:
  iris --config examples/iris.yaml mcp serve
                              stdio: the MCP client starts this command
  MCP_TOKEN=s3cret iris mcp serve --http 127.0.0.1:8931 --token-env MCP_TOKEN
                              streamable HTTP at http://127.0.0.1:8931/mcp

Sessions list what the model would see: the active tools, plus each deferred tool once
tool_search revealed it in that session (a 2026-07-28 HTTP client has no session: its
reveals are shared by every such client of this server). A call needing approval is asked
of the client by a form elicitation (approve / deny); a client without the elicitation
capability gets MCP_APPROVAL_UNAVAILABLE and the call does not run. A 2026-07-28 client's
retry whose requestState is unknown, used or for other arguments is refused with
MCP_APPROVAL_STATE_INVALID. A long result comes back as Iris shows the model: a preview
and the saved file's path.";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    /// `{name, description, input_schema}`.
    Neutral,
    /// OpenAI Chat Completions.
    Openai,
    /// OpenAI Chat Completions, strict mode.
    OpenaiStrict,
    /// OpenAI Responses.
    Responses,
    /// Anthropic Messages.
    Anthropic,
    /// Google Gemini function declarations.
    Gemini,
}

/// `--timeout`: positive, finite seconds that fit a `Duration`.
fn parse_timeout(text: &str) -> Result<Duration, String> {
    let seconds: f64 = text
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds"))?;
    if seconds.is_nan() || seconds <= 0.0 {
        return Err("the timeout must be more than 0 seconds".into());
    }
    Duration::try_from_secs_f64(seconds).map_err(|_| format!("`{text}` seconds is too long"))
}

/// A failure that ends the command: exit code, stable code, one-line message.
#[derive(Debug)]
struct Failure {
    exit: u8,
    code: String,
    message: String,
}

impl Failure {
    fn new(exit: u8, code: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            exit,
            code: code.into(),
            message: message.into(),
        }
    }

    fn interrupted(caught: Caught) -> Self {
        Failure::new(
            caught.exit_code(),
            cli_codes::INTERRUPTED,
            format!(
                "interrupted by {}: the running call was cancelled and the tool environment closed",
                caught.name()
            ),
        )
    }

    /// A call that stopped because a signal cancelled it; `supervise` replaces it with
    /// the signal's failure.
    fn cancelled() -> Self {
        Failure::new(1, codes::CANCELLED, "the call was cancelled")
    }

    fn is_interrupted(&self) -> bool {
        self.code == cli_codes::INTERRUPTED
    }
}

impl From<iris_runner::Error> for Failure {
    fn from(e: iris_runner::Error) -> Self {
        Failure::new(3, e.code(), e.to_string())
    }
}

impl From<TrustError> for Failure {
    fn from(e: TrustError) -> Self {
        // A folder that is not a directory is a bad command line; the rest is the
        // user's configuration.
        let exit = if e.code() == trust_codes::TRUST_FOLDER_INVALID {
            2
        } else {
            3
        };
        Failure::new(exit, e.code(), e.to_string())
    }
}

/// The code of a command line clap refuses (exit 2).
const CLI_USAGE: &str = "CLI_USAGE";

fn main() -> ExitCode {
    // First, before any thread starts: `iris` is its own command-sandbox helper.
    iris_sandbox::run_helper_if_invoked();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(&e),
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            err_line(&format!(
                "error[{}]: cannot start the async runtime: {e}",
                codes::IO_ERROR
            ));
            return ExitCode::from(3);
        }
    };
    let code = runtime.block_on(main_async(&cli));
    // Everything `iris` started is closed by now. What may remain is blocking work a
    // timed-out or cancelled call abandoned (a search that never checks back, a read
    // that never returns); the process does not wait for it.
    runtime.shutdown_timeout(SHUTDOWN_GRACE);
    ExitCode::from(code)
}

/// A command line clap refuses: its own text on stderr (help and the version on
/// stdout, exit 0), or with `--json` one `{"error": {"code": "CLI_USAGE", "message"}}`
/// on stdout, so a script reads every failure the same way; exit 2.
fn usage_error(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) || !e.use_stderr() {
        let _ = e.print();
        return ExitCode::SUCCESS;
    }
    // `--json` among the flags (not after `--`, where it would be a prompt's word).
    let json = std::env::args_os()
        .skip(1)
        .take_while(|a| a != "--")
        .any(|a| a == "--json");
    if json {
        // clap's first line, without its `error: ` prefix or styles.
        let rendered = e.render().to_string();
        let first = rendered.lines().next().unwrap_or_default();
        let message = first.strip_prefix("error: ").unwrap_or(first);
        print_json(&json!({"error": {"code": CLI_USAGE, "message": message}}));
        if let Some(e) = output::stdout_error() {
            err_line(&format!(
                "error[{}]: cannot write to stdout: {e}",
                codes::IO_ERROR
            ));
            return ExitCode::from(3);
        }
    } else {
        let _ = e.print();
    }
    ExitCode::from(2)
}

async fn main_async(cli: &Cli) -> u8 {
    let result = match Signals::install() {
        Ok(mut signals) => run(cli, &mut signals).await,
        Err(e) => Err(Failure::new(
            3,
            codes::IO_ERROR,
            format!("cannot install the signal handlers: {e}"),
        )),
    };
    let code = match result {
        Ok(code) => code,
        Err(failure) => {
            let error = json!({"error": {"code": failure.code, "message": failure.message}});
            if cli.json && matches!(cli.command, Command::Run { .. } | Command::Resume { .. }) {
                // `iris run --json` and `iris resume --json` print JSON lines.
                output::json_line(&error);
            } else if cli.json {
                print_json(&error);
            } else {
                err_line(&format!("error[{}]: {}", failure.code, failure.message));
            }
            failure.exit
        }
    };
    match output::stdout_error() {
        Some(e) => {
            err_line(&format!(
                "error[{}]: cannot write to stdout: {e}",
                codes::IO_ERROR
            ));
            if code == 0 { 3 } else { code }
        }
        None => code,
    }
}

async fn run(cli: &Cli, signals: &mut Signals) -> Result<u8, Failure> {
    if let Command::Trust { dir, remove, list } = &cli.command {
        return trust_command(cli, dir.as_deref(), *remove, *list);
    }
    #[cfg(feature = "embed")]
    if let Command::Discovery { command } = &cli.command {
        return discovery_cmd::discovery(cli.json, signals, command).await;
    }
    // Discovery and the trust gate come before the config is even read.
    let file = config_file(cli);
    if let Command::Check = &cli.command {
        return check(cli, signals, file).await;
    }
    let loaded = interruptible(signals, load(cli, file?)).await?;
    if let Command::Serve(args) = &cli.command {
        return serve_cmd::serve(loaded, args, signals).await;
    }
    // The run store is read without assembling (and starting) anything.
    if let Command::Runs {
        command,
        status,
        limit,
    } = &cli.command
    {
        let work = async {
            match command {
                Some(RunsCommand::Show { run_id }) => {
                    runs::show(&loaded, run_id, cli.json, &iris_prefix(cli)).await
                }
                None => {
                    let limit = usize::try_from(*limit).unwrap_or(usize::MAX);
                    runs::list(&loaded, status.map(StatusArg::status), limit, cli.json).await
                }
            }
        };
        return interruptible(signals, work).await;
    }
    // A run's model is resolved (and its key looked up) before anything is started.
    let model = match &cli.command {
        Command::Run {
            model, base_url, ..
        } => {
            let flags = run::ModelFlags {
                model: model.as_deref(),
                base_url: base_url.as_deref(),
            };
            Some(run::resolve_model(&loaded, flags)?)
        }
        Command::Resume {
            run_id,
            model,
            base_url,
            switch_model,
            ..
        } => {
            let flags = run::ModelFlags {
                model: model.as_deref(),
                base_url: base_url.as_deref(),
            };
            let resolved = run::resume_model(&loaded, run_id, flags, *switch_model);
            Some(interruptible(signals, resolved).await?)
        }
        _ => None,
    };
    // The budget: the YAML's limits, the command line's over them, the policy's cap.
    let mut loaded = loaded;
    if let Some(model) = &model {
        let assignments = match &cli.command {
            Command::Run { limits, .. } => limits.assignments(),
            Command::Resume { raise_limit, .. } => raise_limit.clone(),
            _ => Vec::new(),
        };
        budget_flags::apply(&mut loaded, &assignments, model)?;
    }
    let loaded = loaded;
    // `mcp serve`'s flags are checked before anything starts.
    let serving = serve_plan(&cli.command)?;
    // `resume --secret-stdin` reads its line before anything starts: no MCP server or
    // command service runs while a person types.
    let mut answer = match &cli.command {
        Command::Resume { .. } => interruptible(signals, resume_answer(&cli.command)).await?,
        _ => None,
    };
    let env = interruptible(signals, assemble(cli, &loaded)).await?;
    let cancel = CancellationSignal::new();
    let iris = iris_prefix(cli);
    let work = async {
        match (&cli.command, model) {
            (Command::Run { prompt, yes, .. }, Some(model)) => {
                let options = run::RunOptions {
                    prompt,
                    yes: *yes,
                    json: cli.json,
                    iris: &iris,
                };
                run::run(options, &loaded, &env, model, &cancel).await
            }
            (Command::Resume { run_id, .. }, Some(model)) => {
                let options = run::ResumeOptions {
                    run_id,
                    answer: answer.take(),
                    json: cli.json,
                    iris: &iris,
                };
                run::resume(options, &loaded, &env, model, &cancel).await
            }
            _ => match &serving {
                Some(plan) => serve(plan, &env, &cancel).await,
                None => dispatch(cli, &env, &cancel).await,
            },
        }
    };
    let outcome = supervise(signals, &cancel, work).await;
    // Close even when the command failed; a close error only matters on success.
    let closed = close(signals, &env).await;
    let code = outcome?;
    closed?;
    Ok(code)
}

async fn dispatch(
    cli: &Cli,
    env: &ToolEnvironment,
    cancel: &CancellationSignal,
) -> Result<u8, Failure> {
    match &cli.command {
        Command::Tools { all } => tools(cli, env, *all),
        Command::Schema { tool, format } => schema(env, tool, *format),
        Command::Call {
            tool,
            input,
            yes,
            timeout,
            session,
        } => {
            let options = CallOptions {
                name: tool,
                input: input.as_deref(),
                yes: *yes,
                timeout: *timeout,
                session: session.as_deref(),
            };
            call(cli, env, options, cancel).await
        }
        Command::Skills => skills(cli, env),
        Command::Lint => lint(cli, env),
        Command::Mcp {
            command: McpCommand::List,
        } => mcp_list(cli, env),
        // Handled before the environment is dispatched to (`mcp serve` by `serve`).
        Command::Mcp {
            command: McpCommand::Serve { .. },
        }
        | Command::Run { .. }
        | Command::Resume { .. }
        | Command::Runs { .. }
        | Command::Check
        | Command::Serve(_)
        | Command::Trust { .. } => Ok(0),
        #[cfg(feature = "embed")]
        Command::Discovery { .. } => Ok(0),
    }
}

/// The answer flag of `iris resume`, if any (clap lets at most one through).
/// `--secret-stdin` reads its line here; a signal ends that wait (the caller runs this
/// under [`interruptible`]).
async fn resume_answer(command: &Command) -> Result<Option<Answer>, Failure> {
    let Command::Resume {
        approve,
        deny,
        answer,
        rerun,
        skip,
        record,
        secret_stdin,
        ..
    } = command
    else {
        return Ok(None);
    };
    if *secret_stdin {
        // An unreadable line counts as empty: the runner refuses it with
        // RUN_ANSWER_INVALID before anything runs.
        let value = run::read_secret_line().await?;
        return Ok(Some(Answer::Secret {
            value: iris_runner::SecretValue::new(value),
        }));
    }
    Ok(if *approve {
        Some(Answer::Approve)
    } else if let Some(reason) = deny {
        Some(Answer::Deny {
            reason: reason.clone(),
        })
    } else if let Some(text) = answer {
        Some(Answer::Text { text: text.clone() })
    } else if *rerun {
        Some(Answer::Rerun)
    } else if *skip {
        Some(Answer::Skip)
    } else {
        record.as_ref().map(|output| Answer::Record {
            output: output.clone(),
        })
    })
}

/// `iris` with the global flags that find this agent (`--config`, `--workspace`,
/// `--trust`), shell-quoted: the start of the exact commands `iris` prints for a
/// waiting run.
fn iris_prefix(cli: &Cli) -> String {
    let mut words = vec!["iris".to_owned()];
    if let Some(config) = &cli.config {
        words.push("--config".into());
        words.push(run::shell_word(&config.to_string_lossy()));
    }
    if let Some(workspace) = &cli.workspace {
        words.push("--workspace".into());
        words.push(run::shell_word(&workspace.to_string_lossy()));
    }
    if cli.trust {
        words.push("--trust".into());
    }
    words.join(" ")
}

/// Runs `work` unless a signal comes first; dropping `work` stops what it started (the
/// command service and MCP processes kill their process groups when dropped).
async fn interruptible<T>(
    signals: &mut Signals,
    work: impl Future<Output = Result<T, Failure>>,
) -> Result<T, Failure> {
    tokio::select! {
        result = work => result,
        caught = signals.recv() => Err(Failure::interrupted(caught)),
    }
}

/// Runs the command; on a signal, cancels the call (the executor hands `cancel` to the
/// tool and its hooks, which kill their process groups) and gives it [`CANCEL_GRACE`]
/// (or until a second signal) to finish stopping before it is dropped.
async fn supervise(
    signals: &mut Signals,
    cancel: &CancellationSignal,
    work: impl Future<Output = Result<u8, Failure>>,
) -> Result<u8, Failure> {
    tokio::pin!(work);
    let caught = tokio::select! {
        outcome = &mut work => return outcome,
        caught = signals.recv() => caught,
    };
    cancel.cancel();
    tokio::select! {
        _ = tokio::time::timeout(CANCEL_GRACE, &mut work) => {}
        _ = signals.recv() => {}
    }
    Err(Failure::interrupted(caught))
}

/// Closes the environment (MCP servers, the command service and its running commands),
/// bounded by [`CLOSE_TIMEOUT`]. A signal arriving meanwhile does not stop the close; it
/// only decides the exit code.
async fn close(signals: &mut Signals, env: &ToolEnvironment) -> Result<(), Failure> {
    let closing = tokio::time::timeout(CLOSE_TIMEOUT, env.close());
    tokio::pin!(closing);
    let mut caught = None;
    let closed = loop {
        tokio::select! {
            closed = &mut closing => break closed,
            signal = signals.recv() => { caught.get_or_insert(signal); }
        }
    };
    if let Some(caught) = caught {
        return Err(Failure::interrupted(caught));
    }
    match closed {
        Ok(closed) => closed.map_err(Failure::from),
        Err(_) => Err(Failure::new(
            3,
            cli_codes::CLOSE_TIMEOUT,
            format!(
                "closing the tool environment took longer than {} s",
                CLOSE_TIMEOUT.as_secs()
            ),
        )),
    }
}

/// The config file: `--config` (trusted: the user named it), else the first of
/// `./iris.yaml`, `.iris/agent.yaml` when the current folder is trusted (`--trust`, or
/// listed in the trusted-folders file).
fn config_file(cli: &Cli) -> Result<PathBuf, Failure> {
    if let Some(path) = &cli.config {
        return Ok(path.clone());
    }
    let Some(found) = discover_config(Path::new("")) else {
        return Err(Failure::new(
            3,
            iris_runner::codes::CONFIG_NOT_FOUND,
            "no agent config: pass --config FILE, or create ./iris.yaml or .iris/agent.yaml",
        ));
    };
    if cli.trust {
        return Ok(found);
    }
    let folder = std::env::current_dir()
        .and_then(std::fs::canonicalize)
        .map_err(|e| {
            Failure::new(
                3,
                codes::IO_ERROR,
                format!("cannot resolve the current folder: {e}"),
            )
        })?;
    let store_file = TrustStore::default_file();
    if let Some(file) = &store_file
        && TrustStore::load(file)?.is_trusted(&folder)
    {
        return Ok(found);
    }
    let kept = match &store_file {
        Some(file) => format!("`iris trust` (kept in {})", file.display()),
        None => "`iris trust` (needs HOME or XDG_CONFIG_HOME)".to_owned(),
    };
    Err(Failure::new(
        3,
        trust_codes::WORKSPACE_UNTRUSTED,
        format!(
            "{} was found in {}, which is not a trusted folder, so nothing was started: its MCP \
             servers and command hooks run programs it names. Review it, then trust the folder \
             with {kept}, or pass --trust for this run, or name the file with --config",
            found.display(),
            folder.display()
        ),
    ))
}

/// Reads the YAML off the async thread (so a signal is still handled while a read
/// blocks) and applies `--workspace`.
async fn load(cli: &Cli, file: PathBuf) -> Result<LoadedConfig, Failure> {
    let mut loaded = tokio::task::spawn_blocking(move || AgentConfig::load(file))
        .await
        .map_err(|e| {
            Failure::new(3, codes::IO_ERROR, format!("the config reader failed: {e}"))
        })??;
    if let Some(workspace) = &cli.workspace {
        let workspace = std::path::absolute(workspace)
            .map_err(|e| Failure::new(2, codes::INVALID_PATH, format!("--workspace: {e}")))?;
        loaded.config.workspace = Some(workspace.clone());
        loaded.workspace = workspace;
    }
    Ok(loaded)
}

async fn assemble(cli: &Cli, loaded: &LoadedConfig) -> Result<ToolEnvironment, Failure> {
    let progress = !cli.json && std::io::stderr().is_terminal();
    if progress {
        err_line(&format!(
            "iris: assembling tools from {} …",
            loaded.file.display()
        ));
    }
    // Starting MCP servers is the slow step (seconds per server), so it is announced
    // even off a terminal; --json keeps stderr for errors only.
    let mcp = loaded.config.mcp.as_ref().filter(|_| !cli.json);
    // `iris call` starts only the MCP servers that can publish the called tool.
    let called = match &cli.command {
        Command::Call { tool, .. } => Some(tool.as_str()),
        _ => None,
    };
    if let Some(section) = mcp {
        let which = if called.is_some() {
            "the MCP servers the call needs"
        } else {
            "MCP servers"
        };
        err_line(&format!(
            "iris: starting {which} from {} …",
            section.path.display()
        ));
    }
    let host = HostRegistry::new();
    let env = match called {
        Some(tool) => iris_runner::build_tool_registry_for_call(loaded, &host, tool).await?,
        None => iris_runner::build_tool_registry(loaded, &host).await?,
    };
    if let (Some(_), Some(snapshot)) = (mcp, env.mcp_snapshot()) {
        err_line(&format!(
            "iris: MCP ready: {} servers, {} tools",
            snapshot.servers.len(),
            snapshot.tools.len()
        ));
    }
    if progress {
        err_line(&format!("iris: {} tools ready", env.registry.len()));
    }
    Ok(env)
}

fn not_found(env: &ToolEnvironment, name: &str) -> Failure {
    Failure::new(
        2,
        codes::TOOL_NOT_FOUND,
        format!(
            "no tool is named `{name}`; available: [{}]",
            env.registry.names().join(", ")
        ),
    )
}

/// Runs `read` (a blocking stdin read) on the blocking pool, so signals are still
/// handled; a cancellation stops waiting (the read is abandoned, and the runtime
/// does not wait for it at exit).
async fn read_blocking<T: Send + 'static>(
    cancel: &CancellationSignal,
    read: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Failure> {
    let task = tokio::task::spawn_blocking(read);
    tokio::select! {
        joined = task => joined
            .map_err(|e| Failure::new(3, codes::IO_ERROR, format!("the stdin reader failed: {e}"))),
        () = cancel.cancelled() => Err(Failure::cancelled()),
    }
}
