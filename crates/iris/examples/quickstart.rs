//! The Iris quickstart: one agent run through the run loop, `iris_runner::AgentRunner`.
//!
//! Run it with `cargo run -p iris --example quickstart`. It needs no API key and no
//! network: the agent YAML (`quickstart_workspace/iris.yaml`, embedded below) drives the
//! tools with the scripted provider, whose turns are replayed from the YAML, and the
//! workspace is an embedded example copied to a temporary directory.
//!
//! The task (one read-and-edit task followed through): change the service's log
//! level from DEBUG to INFO, then summarize the logs. Every event of the streamed run is
//! printed: the model's turns and text, its tool calls (adjacent reads in one parallel
//! window, everything else a barrier), the approvals the example's `InteractionHandler`
//! answers, a long `#[tool]` result saved as an artifact and paged back, a typed error
//! the model corrects, a command hook's denial, the command sandbox refusing a write
//! outside the workspace and letting a request to an allowed domain (`localhost`,
//! served by the example on 127.0.0.1) through its egress proxy, and the final answer
//! with its usage.

use std::path::Path;
use std::sync::Arc;

use iris::core::BoxFuture;
use iris::hooks::{HookError, HookEvent, HookHandler, HookResult};
use iris::prelude::*;
use iris::runner::{
    AgentConfig, AgentRunner, Answer, ApprovalRequest, HostRegistry, Interaction,
    InteractionHandler, LoadedConfig, RunEvent, RunInput, RunOutcome, RunStream, ToolEnvironment,
    build_tool_registry,
};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

/// The embedded example workspace: (relative path, contents).
const WORKSPACE: &[(&str, &str)] = &[
    ("iris.yaml", include_str!("quickstart_workspace/iris.yaml")),
    ("README.md", include_str!("quickstart_workspace/README.md")),
    (
        "config/app.toml",
        include_str!("quickstart_workspace/config/app.toml"),
    ),
    (
        "config/features.toml",
        include_str!("quickstart_workspace/config/features.toml"),
    ),
    (
        "logs/service.log",
        include_str!("quickstart_workspace/logs/service.log"),
    ),
    (
        "hooks/no-rm.sh",
        include_str!("quickstart_workspace/hooks/no-rm.sh"),
    ),
];

/// What the user asks the agent.
const PROMPT: &str = "Switch the service's log level from DEBUG to INFO, then summarize the \
                      logs in SUMMARY.md and publish it.";

/// Render every request of the service log as an aligned table.
///
/// Use for a full, line-by-line view of the log; use grep_search to find single lines.
///
/// # Arguments
/// * `min_took_ms` - only rows whose request took at least this many milliseconds, e.g. 0
#[tool(capabilities(read), group = "logs", tags("logs", "report"))]
async fn render_log_table(
    #[default = 0] min_took_ms: u64,
    ctx: &ToolExecutionContext,
) -> Result<String, std::io::Error> {
    let text = std::fs::read_to_string(ctx.workspace().join("logs/service.log"))?;
    let mut table = format!(
        "{:<22} {:<6} {:<10} {:<18} {:>8}\n",
        "time", "level", "id", "path", "took"
    );
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [time, level, _, id, path, took] = fields[..] else {
            continue;
        };
        let ms: u64 = took
            .trim_start_matches("took=")
            .trim_end_matches("ms")
            .parse()
            .unwrap_or(0);
        if ms >= min_took_ms {
            table.push_str(&format!(
                "{time:<22} {level:<6} {id:<10} {path:<18} {ms:>6}ms\n"
            ));
        }
    }
    Ok(table)
}

/// The host side of the YAML: the tool and the hook it names by key.
fn host() -> HostRegistry {
    HostRegistry::new()
        .function("quickstart:render_log_table", || {
            Arc::new(render_log_table::tool()) as Arc<dyn Tool>
        })
        .hook("quickstart:audit", |_options: &Value| {
            // A tool.after hook whose feedback is appended to the result the model sees.
            let audit = |event: HookEvent| async move {
                Ok::<_, HookError>(HookResult::feedback(format!(
                    "audit: {} was recorded",
                    event.tool_name().unwrap_or("?")
                )))
            };
            Ok(Arc::new(audit) as Arc<dyn HookHandler>)
        })
}

/// One question for the human, and where the answer goes.
type Question = (ApprovalRequest, oneshot::Sender<Answer>);

/// An [`InteractionHandler`] that hands each approval to the main task (where a real
/// host would show a prompt or a dialog) and waits for its answer; anything else, and
/// an approval nobody answers, is left for `resume` (`None`).
struct AskTheMainTask(mpsc::UnboundedSender<Question>);

impl InteractionHandler for AskTheMainTask {
    fn answer<'a>(&'a self, interaction: &'a Interaction) -> BoxFuture<'a, Option<Answer>> {
        Box::pin(async move {
            let Interaction::Approval(request) = interaction else {
                return None;
            };
            let (answer, reply) = oneshot::channel();
            self.0.send((request.clone(), answer)).ok()?;
            reply.await.ok()
        })
    }
}

/// Prints a tool result: status, the first lines of what the model sees, an artifact.
fn print_result(result: &ToolResult, workspace: &Path) {
    let status = match result.error_code() {
        Some(code) => format!("failed ({code})"),
        None if result.approved => "ok (approved)".to_owned(),
        None => "ok".to_owned(),
    };
    println!("   ✓ {} {} {status}", result.tool_use_id, result.tool_name);
    let content = result.model_content();
    let shown: String = content.chars().take(400).collect();
    let more = content.chars().count().saturating_sub(400);
    for line in shown.lines() {
        println!("     │ {line}");
    }
    if more > 0 {
        println!("     │ … ({more} more characters)");
    }
    if let Some(artifact) = &result.output.artifact {
        if artifact.text_path.is_some() {
            // The saved body's reference line tells the model how to page it.
            let reference = content.lines().last().unwrap_or_default();
            println!("     │ … {reference}");
        }
        let path = artifact
            .path
            .strip_prefix(workspace)
            .unwrap_or(&artifact.path);
        println!(
            "     artifact: {} ({} bytes)",
            path.display(),
            artifact.size_bytes
        );
    }
}

/// Writes the example workspace; the YAML's `STATUS_PORT` becomes the port of the
/// service's health page.
fn write_workspace(root: &Path, status_port: u16) -> std::io::Result<()> {
    for (rel, contents) in WORKSPACE {
        let path = root.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(
            path,
            contents.replace("STATUS_PORT", &status_port.to_string()),
        )?;
    }
    Ok(())
}

/// The service's health page on 127.0.0.1 (the allowed domain `localhost` of the
/// agent's sandbox): answers every request with one line; returns its port.
async fn serve_health() -> std::io::Result<u16> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let listener = tokio::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)).await?;
    let port = listener.local_addr()?.port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request).await;
            let body = "service status: healthy (1500 requests logged)\n";
            let reply = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(reply.as_bytes()).await;
        }
    });
    Ok(port)
}

/// Prints a run's events as they arrive.
struct Printer<'a> {
    workspace: &'a Path,
    /// Calls started and not finished yet: the loop starts every call of a parallel
    /// window before the first one finishes, and runs each barrier alone.
    running: usize,
    /// Whether the current window was announced.
    announced: bool,
    /// Whether the model's text is being printed (its line is still open).
    in_text: bool,
}

impl Printer<'_> {
    /// Prints one event; the outcome when it is the last one.
    fn show(&mut self, event: RunEvent) -> Option<RunOutcome> {
        if self.in_text && !matches!(event, RunEvent::TextDelta { .. }) {
            println!();
            self.in_text = false;
        }
        match event {
            RunEvent::RunStarted {
                run_id,
                provider,
                model,
            } => println!("── run {run_id} started (provider {provider}, model {model})"),
            RunEvent::TurnStarted { turn, tools } => {
                println!(
                    "\n── turn {turn}: the request carries {} tools",
                    tools.len()
                );
                if turn == 1 {
                    println!("   {}", tools.join(", "));
                }
            }
            RunEvent::TextDelta { text } => {
                if !self.in_text {
                    print!("model › ");
                    self.in_text = true;
                }
                print!("{text}");
            }
            RunEvent::Usage { usage, total, .. } => println!(
                "   usage: {} in / {} out (run so far {} / {})",
                usage.input_tokens, usage.output_tokens, total.input_tokens, total.output_tokens
            ),
            RunEvent::ToolCallStarted {
                call_id,
                tool_name,
                arguments,
                ..
            } => {
                if self.running == 0 {
                    self.announced = false;
                }
                self.running += 1;
                println!("   ▶ {call_id} {tool_name} {arguments}");
            }
            RunEvent::ApprovalRequested { request } => {
                println!(
                    "   ? {} needs approval: {}",
                    request.call_id, request.reason
                );
            }
            RunEvent::ToolCallFinished { result, .. } => {
                if !self.announced && self.running > 1 {
                    println!(
                        "   ⇉ parallel window: {} calls started before any finished",
                        self.running
                    );
                }
                self.announced = true;
                self.running = self.running.saturating_sub(1);
                print_result(&result, self.workspace);
            }
            RunEvent::Finished { outcome } => return Some(outcome),
            other => println!("   {other:?}"),
        }
        None
    }
}

/// Prints the events of the streamed run and answers its approvals, until it ends.
async fn watch(
    mut events: RunStream,
    mut questions: mpsc::UnboundedReceiver<Question>,
    workspace: &Path,
) -> Option<RunOutcome> {
    let mut printer = Printer {
        workspace,
        running: 0,
        announced: false,
        in_text: false,
    };
    loop {
        tokio::select! {
            // Events first: each question comes after the event that announced it.
            biased;
            event = events.next() => {
                if let Some(outcome) = printer.show(event?) {
                    return Some(outcome);
                }
            }
            Some((request, answer)) = questions.recv() => {
                // A real host shows a prompt or a dialog here; the quickstart says yes.
                println!(
                    "   InteractionHandler asked \"approve {} ({})?\" → approve",
                    request.tool_name, request.call_id
                );
                // The run may have ended meanwhile; then nobody waits for the answer.
                let _ = answer.send(Answer::Approve);
            }
        }
    }
}

/// Builds the runner from the loaded YAML and the assembled tool layer, and runs it.
async fn run_agent(
    loaded: &LoadedConfig,
    env: &ToolEnvironment,
) -> Result<RunOutcome, Box<dyn std::error::Error>> {
    // The YAML's model (the scripted provider: turns replayed from its `script`),
    // instructions, limits, hooks and run store, over the tool layer assembled above;
    // the interaction handler is what YAML cannot say.
    let (ask, questions) = mpsc::unbounded_channel();
    let runner = AgentRunner::builder_from_loaded(loaded, env, None)
        .await?
        .agent_id("quickstart")
        .interaction_handler(AskTheMainTask(ask))
        .build();

    println!("\nuser › {PROMPT}");
    let events = runner.run_streamed(RunInput::new(PROMPT).session_id("quickstart"));
    watch(events, questions, &env.workspace)
        .await
        .ok_or_else(|| "the run ended without a Finished event".into())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    // The workspace is a folder of the temporary directory, so `..` is a private
    // place the sandbox must keep the model out of.
    let workspace = dir.path().canonicalize()?.join("workspace");
    write_workspace(&workspace, serve_health().await?)?;
    println!("Iris quickstart: a scripted agent run through iris_runner::AgentRunner");
    println!("workspace copied to {}", workspace.display());

    // The agent YAML assembles the tool layer: built-ins, the #[tool] function, the hooks,
    // the permissions and a native command service (no Docker needed).
    // (Without `IRIS_` environment overrides, so the walkthrough is the same everywhere.)
    let loaded = AgentConfig::load_with_env(workspace.join("iris.yaml"), false)?;
    let env = build_tool_registry(&loaded, &host()).await?;
    let outcome = run_agent(&loaded, &env).await;
    env.close().await?;

    match outcome? {
        RunOutcome::Completed {
            output,
            usage,
            turns,
            ..
        } => {
            println!(
                "\n── run completed in {turns} turns, {} input + {} output tokens",
                usage.input_tokens, usage.output_tokens
            );
            println!("answer › {output}");
        }
        other => return Err(format!("the run did not complete: {other:?}").into()),
    }

    println!("\nThe workspace afterwards:");
    let config = std::fs::read_to_string(workspace.join("config/app.toml"))?;
    println!(
        "  config/app.toml now says: {}",
        config
            .lines()
            .find(|l| l.starts_with("level"))
            .unwrap_or_default()
    );
    println!(
        "  logs/service.log still exists: {}",
        workspace.join("logs/service.log").exists()
    );
    println!(
        "  ../SUMMARY-copy.md (outside the workspace) exists: {}",
        dir.path().join("SUMMARY-copy.md").exists()
    );
    let published = workspace.join(".iris/published/quickstart");
    for entry in std::fs::read_dir(&published)? {
        let entry = entry?;
        println!(
            "  published copy: .iris/published/quickstart/{} ({} bytes)",
            entry.file_name().to_string_lossy(),
            entry.metadata()?.len()
        );
    }
    println!("\nDone. Run `cargo xtask ci` to run every test.");
    Ok(())
}
