//! `iris`: list, inspect, call and check the tools an agent YAML describes.
//!
//! Exit codes (also in `iris --help`):
//! - 0: success;
//! - 1: the command ran and found problems (`check`, `lint`), or the called tool
//!   returned an error result;
//! - 2: bad command line or bad call input: input that is not JSON, or JSON the tool's
//!   schema or parser rejects (an `INVALID_INPUT` result, which is still printed);
//! - 3: the configuration could not be loaded or assembled, or a feature is not in
//!   this build;
//! - 4: the call needs a human's approval and none was given.

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use iris_providers::adapters::{Provider, Strict, to_provider};
use iris_providers::lint::lint_definition;
use iris_runner::{AgentConfig, HostRegistry, LoadedConfig, ToolEnvironment};
use iris_tools_core::{ToolExecutionContext, ToolUse, ViewFilter, codes};
use serde_json::{Value, json};

const AFTER_HELP: &str = "\
Examples:
  iris tools                                  list the agent's tools
  iris --config examples/iris.yaml tools --all
  iris schema exec_command --format anthropic
  iris call exec_command '{\"command\": \"ls\"}' --yes
  iris mcp list --json                        MCP servers, protocols, tools, diagnostics
  iris call tool_search '{\"queries\": [\"current time\"]}'
  echo '{\"name\": \"greeting\"}' | iris call load_skill -
  iris check                                  validate the config and what it points to

Configuration: --config, else ./iris.yaml, else .iris/agent.yaml. IRIS_* environment
variables override keys (IRIS_PROVIDER_API_KEYS__TAVILY -> provider_api_keys.tavily).

Exit codes: 0 success; 1 problems found or the tool returned an error; 2 bad command
line or call input (not JSON, or rejected by the tool's schema: INVALID_INPUT); 3
configuration or assembly error; 4 approval required but not given.";

/// The iris command line.
#[derive(Debug, Parser)]
#[command(name = "iris", version, about = "Use an Iris agent's tools from a terminal.", after_help = AFTER_HELP)]
struct Cli {
    /// The agent YAML (default: ./iris.yaml, else .iris/agent.yaml).
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Overrides the workspace the YAML names.
    #[arg(long, global = true, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Machine-readable JSON on stdout.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
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
    },
    /// MCP servers.
    Mcp {
        #[command(subcommand)]
        command: McpCommand,
    },
    /// List the discovered skills and discovery diagnostics.
    Skills,
    /// Validate the config and everything it points to; exit 1 listing every problem.
    Check,
    /// Check every tool against the tool-design rules (seed 004).
    Lint,
}

#[derive(Debug, Subcommand)]
enum McpCommand {
    /// Servers, protocol, status, diagnostics and tools.
    List,
}

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

/// A failure that ends the command: exit code, stable code, one-line message.
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
}

impl From<iris_runner::Error> for Failure {
    fn from(e: iris_runner::Error) -> Self {
        Failure::new(3, e.code(), e.to_string())
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error[IO_ERROR]: cannot start the async runtime: {e}");
            return ExitCode::from(3);
        }
    };
    match runtime.block_on(run(&cli)) {
        Ok(code) => ExitCode::from(code),
        Err(failure) => {
            if cli.json {
                print_json(&json!({"error": {"code": failure.code, "message": failure.message}}));
            } else {
                eprintln!("error[{}]: {}", failure.code, failure.message);
            }
            ExitCode::from(failure.exit)
        }
    }
}

async fn run(cli: &Cli) -> Result<u8, Failure> {
    if let Command::Check = &cli.command {
        return check(cli).await;
    }
    let loaded = load(cli)?;
    let env = assemble(cli, &loaded).await?;
    let outcome = match &cli.command {
        Command::Tools { all } => tools(cli, &env, *all),
        Command::Schema { tool, format } => schema(&env, tool, *format),
        Command::Call { tool, input, yes } => call(cli, &env, tool, input.as_deref(), *yes).await,
        Command::Skills => skills(cli, &env),
        Command::Lint => lint(cli, &env),
        Command::Mcp {
            command: McpCommand::List,
        } => mcp_list(cli, &env),
        Command::Check => Ok(0),
    };
    // Close even when the command failed; a close error only matters on success.
    let closed = env.close().await;
    let code = outcome?;
    closed?;
    Ok(code)
}

/// The config file: `--config`, else `./iris.yaml`, else `.iris/agent.yaml`.
fn config_path(cli: &Cli) -> Result<PathBuf, Failure> {
    if let Some(path) = &cli.config {
        return Ok(path.clone());
    }
    for candidate in ["iris.yaml", ".iris/agent.yaml"] {
        let path = PathBuf::from(candidate);
        if path.is_file() {
            return Ok(path);
        }
    }
    Err(Failure::new(
        3,
        iris_runner::codes::CONFIG_NOT_FOUND,
        "no agent config: pass --config FILE, or create ./iris.yaml or .iris/agent.yaml",
    ))
}

fn load(cli: &Cli) -> Result<LoadedConfig, Failure> {
    let mut loaded = AgentConfig::load(config_path(cli)?)?;
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
        eprintln!("iris: assembling tools from {} …", loaded.file.display());
    }
    // Starting MCP servers is the slow step (seconds per server), so it is announced
    // even off a terminal; --json keeps stderr for errors only.
    let mcp = loaded.config.mcp.as_ref().filter(|_| !cli.json);
    if let Some(section) = mcp {
        eprintln!(
            "iris: starting MCP servers from {} …",
            section.path.display()
        );
    }
    let env = iris_runner::build_tool_registry(loaded, &HostRegistry::new()).await?;
    if let (Some(_), Some(snapshot)) = (mcp, env.mcp_snapshot()) {
        eprintln!(
            "iris: MCP ready: {} servers, {} tools",
            snapshot.servers.len(),
            snapshot.tools.len()
        );
    }
    if progress {
        eprintln!("iris: {} tools ready", env.registry.len());
    }
    Ok(env)
}

fn print_json(value: &Value) {
    // Serializing a Value cannot fail; an empty line is the safe fallback.
    println!(
        "{}",
        serde_json::to_string_pretty(value).unwrap_or_default()
    );
}

fn tools(cli: &Cli, env: &ToolEnvironment, all: bool) -> Result<u8, Failure> {
    let view = env.registry.view(ViewFilter::default().include_system(all));
    let rows: Vec<Value> = view
        .available_tools()
        .iter()
        .map(|tool| {
            let def = tool.definition();
            json!({
                "name": def.name,
                "group": def.group,
                "capabilities": def.capabilities,
                "deferred": def.deferred,
                "system": def.system_use,
            })
        })
        .collect();
    if cli.json {
        print_json(&json!({"tools": rows}));
        return Ok(0);
    }
    // The name column fits the longest name (MCP names are long), at least 20 wide.
    let width = rows
        .iter()
        .filter_map(|r| r["name"].as_str().map(str::len))
        .max()
        .unwrap_or(0)
        .max(20);
    println!(
        "{:<width$} {:<10} {:<24} DEFERRED",
        "NAME", "GROUP", "CAPABILITIES"
    );
    for row in &rows {
        let caps: Vec<&str> = row["capabilities"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let caps = if caps.is_empty() {
            "-".to_owned()
        } else {
            caps.join(",")
        };
        println!(
            "{:<width$} {:<10} {:<24} {}",
            row["name"].as_str().unwrap_or_default(),
            row["group"].as_str().unwrap_or_default(),
            caps,
            if row["deferred"] == true { "yes" } else { "no" }
        );
    }
    Ok(0)
}

/// `iris mcp list`: every configured server (transport, status, required, protocol,
/// tool count), the published tools and the diagnostics, from the catalog snapshot.
fn mcp_list(cli: &Cli, env: &ToolEnvironment) -> Result<u8, Failure> {
    let Some(snapshot) = env.mcp_snapshot() else {
        if cli.json {
            print_json(
                &json!({"configured": false, "servers": [], "tools": [], "diagnostics": []}),
            );
        } else {
            println!("no MCP servers are configured (set mcp.path)");
        }
        return Ok(0);
    };
    // The snapshot is Serialize; reading it back as JSON keeps this binary free of a
    // direct iris-mcp dependency and prints exactly what --json shows.
    let mut value = serde_json::to_value(&*snapshot).unwrap_or_default();
    if cli.json {
        value["configured"] = json!(true);
        print_json(&value);
        return Ok(0);
    }
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".to_owned(),
        other => other.to_string(),
    };
    let rows = |key: &str| value[key].as_array().cloned().unwrap_or_default();
    println!(
        "{:<16} {:<10} {:<9} {:<9} {:<12} TOOLS",
        "SERVER", "TRANSPORT", "STATUS", "REQUIRED", "PROTOCOL"
    );
    for s in rows("servers") {
        println!(
            "{:<16} {:<10} {:<9} {:<9} {:<12} {}",
            text(&s["name"]),
            text(&s["transport"]),
            text(&s["status"]),
            if s["required"] == true { "yes" } else { "no" },
            text(&s["protocol_version"]),
            text(&s["tool_count"]),
        );
    }
    let tools = rows("tools");
    println!("\ntools ({}):", tools.len());
    let width = tools
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::len))
        .max()
        .unwrap_or(0);
    for t in &tools {
        let mut flags = Vec::new();
        if t["read_only"] == true {
            flags.push("read-only");
        }
        if t["deferred"] == true {
            flags.push("deferred");
        }
        let wire = format!("{}/{}", text(&t["server"]), text(&t["wire_name"]));
        println!(
            "  {:<width$}  {:<24}  {}",
            text(&t["name"]),
            wire,
            flags.join(",")
        );
    }
    let diagnostics = rows("diagnostics");
    println!("\ndiagnostics ({}):", diagnostics.len());
    for d in &diagnostics {
        println!(
            "  {} server `{}` {}: {}",
            text(&d["severity"]),
            text(&d["server"]),
            text(&d["code"]),
            text(&d["message"])
        );
    }
    Ok(0)
}

fn schema(env: &ToolEnvironment, name: &str, format: Format) -> Result<u8, Failure> {
    let tool = env.registry.get(name).map_err(|_| not_found(env, name))?;
    let spec = tool.definition().to_spec();
    let specs = [spec];
    let converted = |provider, strict| {
        to_provider(&specs, provider, strict).map_err(|e| Failure::new(1, e.code(), e.to_string()))
    };
    let value = match format {
        Format::Neutral => serde_json::to_value(&specs[0]).unwrap_or_default(),
        Format::Openai => first(converted(Provider::OpenAiChat, Strict::No)?),
        Format::OpenaiStrict => first(converted(Provider::OpenAiChat, Strict::Yes)?),
        Format::Responses => first(converted(Provider::OpenAiResponses, Strict::No)?),
        Format::Anthropic => first(converted(Provider::AnthropicMessages, Strict::No)?),
        Format::Gemini => first(converted(Provider::Gemini, Strict::No)?),
    };
    // The schema is JSON with or without --json.
    print_json(&value);
    Ok(0)
}

fn first(values: Vec<Value>) -> Value {
    values.into_iter().next().unwrap_or(Value::Null)
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

async fn call(
    cli: &Cli,
    env: &ToolEnvironment,
    name: &str,
    input: Option<&str>,
    yes: bool,
) -> Result<u8, Failure> {
    if !env.registry.contains(name) {
        return Err(not_found(env, name));
    }
    let from_stdin = input == Some("-");
    let text = match input {
        None => "{}".to_owned(),
        Some("-") => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| Failure::new(2, codes::INVALID_INPUT, format!("stdin: {e}")))?;
            text
        }
        Some(text) => text.to_owned(),
    };
    let arguments: Value = serde_json::from_str(&text).map_err(|e| {
        Failure::new(
            2,
            codes::INVALID_INPUT,
            format!("the call input is not JSON: {e}"),
        )
    })?;
    let ctx = ToolExecutionContext::new(&env.workspace).session_id("iris-cli");
    let tool_use = ToolUse::new("call_1", name, arguments);
    let mut result = env.executor.execute_one(&tool_use, &ctx, None).await;
    if let Some(approval) = result.output.approval() {
        let reason = approval.reason.clone();
        let approved = if yes {
            true
        } else if !from_stdin && std::io::stdin().is_terminal() {
            ask(name, &reason)
        } else {
            return Err(Failure::new(
                4,
                codes::APPROVAL_REQUIRED,
                format!(
                    "`{name}` needs approval ({reason}); run on a terminal to answer, or pass --yes"
                ),
            ));
        };
        if !approved {
            return Err(Failure::new(
                4,
                codes::APPROVAL_REQUIRED,
                format!("`{name}` was not approved"),
            ));
        }
        result = env
            .executor
            .execute_one(&tool_use, &ctx, Some(&tool_use.id))
            .await;
    }
    if cli.json {
        print_json(&serde_json::to_value(&result).unwrap_or_default());
    } else {
        let content = result.model_content();
        print!("{content}");
        if !content.ends_with('\n') {
            println!();
        }
    }
    Ok(match result.error_code() {
        None => 0,
        // The call never ran: its input was wrong, like input that is not JSON.
        Some(codes::INVALID_INPUT) => 2,
        Some(_) => 1,
    })
}

/// Asks on the terminal; anything but `y`/`yes` declines.
fn ask(name: &str, reason: &str) -> bool {
    eprint!("iris: `{name}` needs approval: {reason}. Run it? [y/N] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    if std::io::stdin().read_line(&mut answer).is_err() {
        return false;
    }
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

fn skills(cli: &Cli, env: &ToolEnvironment) -> Result<u8, Failure> {
    let Some(skills) = &env.skills else {
        if cli.json {
            print_json(&json!({"enabled": false, "skills": [], "diagnostics": []}));
        } else {
            println!("skills are disabled (set skills.enabled: true)");
        }
        return Ok(0);
    };
    let diagnostics: Vec<String> = skills
        .diagnostics()
        .iter()
        .map(ToString::to_string)
        .collect();
    if cli.json {
        print_json(&json!({
            "enabled": true,
            "skills": skills.catalog().to_json(),
            "diagnostics": diagnostics,
        }));
        return Ok(0);
    }
    for skill in skills.iter() {
        println!("{:<24} {}", skill.name, skill.description);
    }
    for diagnostic in &diagnostics {
        println!("warning: {diagnostic}");
    }
    Ok(0)
}

fn lint(cli: &Cli, env: &ToolEnvironment) -> Result<u8, Failure> {
    let findings: Vec<_> = env
        .registry
        .tools()
        .iter()
        .flat_map(|tool| lint_definition(tool.definition()))
        .collect();
    if cli.json {
        print_json(&json!({"findings": findings}));
    } else if findings.is_empty() {
        println!(
            "ok: {} tools follow the tool-design rules",
            env.registry.len()
        );
    } else {
        for finding in &findings {
            println!("{finding}");
        }
    }
    Ok(if findings.is_empty() { 0 } else { 1 })
}

async fn check(cli: &Cli) -> Result<u8, Failure> {
    let mut problems: Vec<(String, String)> = Vec::new();
    // Notes are not problems (an optional MCP server that did not start, a tool only
    // a runner installs), but a user checking a config wants to see them.
    let mut notes: Vec<String> = Vec::new();
    match load(cli) {
        Err(failure) => problems.push((failure.code, failure.message)),
        Ok(loaded) => {
            for e in iris_runner::check_config(&loaded, &HostRegistry::new()) {
                problems.push((e.code().to_owned(), e.to_string()));
            }
            // Nothing static is wrong: start everything once, which also catches
            // environment problems such as a missing Docker engine.
            if problems.is_empty() {
                match assemble(cli, &loaded).await {
                    Ok(env) => {
                        notes.clone_from(&env.notes);
                        if let Err(e) = env.close().await {
                            problems.push((e.code().to_owned(), e.to_string()));
                        }
                    }
                    Err(f) => problems.push((f.code, f.message)),
                }
            }
        }
    }
    if cli.json {
        let list: Vec<Value> = problems
            .iter()
            .map(|(code, message)| json!({"code": code, "message": message}))
            .collect();
        print_json(&json!({"ok": problems.is_empty(), "problems": list, "notes": notes}));
    } else if problems.is_empty() {
        for note in &notes {
            println!("note: {note}");
        }
        println!("ok");
    } else {
        for (code, message) in &problems {
            println!("error[{code}]: {message}");
        }
    }
    Ok(if problems.is_empty() { 0 } else { 1 })
}
