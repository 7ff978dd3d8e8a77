//! The Iris walkthrough (seed 003, one read-and-edit task followed through): a scripted model asks
//! to read a config and change the log level from DEBUG to INFO, then summarizes the logs.
//!
//! Run it with `cargo run -p iris --example quickstart`. It needs no API key and no
//! network: the "model" is the fixed list of tool calls below, and the workspace is an
//! embedded example copied to a temporary directory.
//!
//! Each step goes through the one executor path: schema validation, permission, hooks,
//! the body under a deadline, and artifacts for long results.

use std::path::Path;

use iris::command::{CommandBinding, CommandConfig, CommandService, command_tools};
use iris::hooks::command::CommandHook;
use iris::hooks::{HookDispatcher, HookEvent, HookEventKind, HookRegistration, HookResult};
use iris::prelude::*;
use serde_json::json;

/// The embedded example workspace: (relative path, contents).
const WORKSPACE: &[(&str, &str)] = &[
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

fn print_result(result: &ToolResult) {
    let content = result.model_content();
    let shown: String = content.chars().take(400).collect();
    let more = content.chars().count().saturating_sub(400);
    println!(
        "  -> {} {}",
        result.tool_name,
        if result.is_error() { "ERROR" } else { "ok" }
    );
    for line in shown.lines() {
        println!("     | {line}");
    }
    if more > 0 {
        println!("     | … ({more} more characters)");
    }
    if let Some(artifact) = &result.output.artifact {
        if artifact.text_path.is_some() {
            // The saved body's reference line tells the model how to page it.
            let reference = content.lines().last().unwrap_or_default();
            println!("     | … {reference}");
        }
        println!(
            "     artifact: {} ({} bytes)",
            artifact.path.display(),
            artifact.size_bytes
        );
    }
}

fn write_workspace(root: &Path) -> std::io::Result<()> {
    for (rel, contents) in WORKSPACE {
        let path = root.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, contents)?;
    }
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let workspace = dir.path().canonicalize()?;
    write_workspace(&workspace)?;
    println!(
        "Iris quickstart — workspace copied to {}",
        workspace.display()
    );

    // A native command service (no Docker needed) runs exec_command and the command hook.
    let service = CommandService::new(CommandConfig::default(), &workspace)?;
    service.prepare().await?;
    let commands = CommandBinding::owned(service);

    // Built-in file and command tools beside a #[tool] function.
    let registry = ToolRegistry::new();
    registry.register_many(iris::files::builtin_tools())?;
    registry.register_many(command_tools(&commands))?;
    registry.register(render_log_table::tool())?;

    // A command hook (a shell script reading the event JSON on stdin) guards exec_command.
    let no_rm = HookRegistration::builder(
        HookEventKind::ToolBefore,
        "no-rm",
        CommandHook::new(&commands, "sh hooks/no-rm.sh"),
    )
    .tools(["exec_command"])
    .build()?;

    // An after-hook that reminds the model what changed, to show hook feedback.
    let audit = HookRegistration::builder(
        HookEventKind::ToolAfter,
        "audit-edits",
        |event: HookEvent| async move {
            Ok(HookResult::feedback(format!(
                "audit: {} was recorded",
                event.tool_name().unwrap_or("?")
            )))
        },
    )
    .tools(["edit_file", "write_file"])
    .build()?;

    let executor = ToolExecutor::new(registry.clone())
        .with_permission_policy(DefaultPermissionPolicy::default())
        .with_circuit_breaker(CircuitBreaker::default())
        .with_hook_dispatcher(HookDispatcher::new(vec![no_rm, audit]));
    let ctx = ToolExecutionContext::new(&workspace).session_id("quickstart");

    println!("\nThe model sees {} tools:", registry.len());
    for spec in registry.view(ViewFilter::default()).active_specs() {
        let first_line = spec.description.lines().next().unwrap_or_default();
        println!("  - {}: {first_line}", spec.name);
    }

    println!("\nStep 1 — read the config");
    let read = ToolUse::new(
        "call_1",
        "read_file",
        json!({"file_path": "config/app.toml"}),
    );
    print_result(&executor.execute_one(&read, &ctx, None).await);

    println!("\nStep 2 — a parallel batch of reads (adjacent read-only calls share one window)");
    let batch = vec![
        ToolUse::new("call_2", "read_file", json!({"file_path": "README.md"})),
        ToolUse::new(
            "call_3",
            "read_file",
            json!({"file_path": "config/features.toml"}),
        ),
        ToolUse::new("call_4", "list_files", json!({"path": "."})),
        ToolUse::new(
            "call_5",
            "grep_search",
            json!({"pattern": "ERROR .*took=2[0-9]{2}ms", "path": "logs", "max_results": 3}),
        ),
    ];
    println!("  plan: {}", executor.prepare_many(&batch, &ctx));
    for result in executor.execute_many(&batch, &ctx).await {
        print_result(&result);
    }

    println!("\nStep 3 — an edit needs approval (write_mode = confirm)");
    let edit = ToolUse::new(
        "call_6",
        "edit_file",
        json!({"file_path": "config/app.toml", "old_string": "level = \"DEBUG\"", "new_string": "level = \"INFO\""}),
    );
    let waiting = executor.execute_one(&edit, &ctx, None).await;
    print_result(&waiting);
    println!(
        "  the host asks a human: {}",
        waiting
            .output
            .approval()
            .map(|a| a.reason.as_str())
            .unwrap_or_default()
    );
    println!("  the human approves call_6; the executor re-checks permission and runs it");
    print_result(&executor.execute_one(&edit, &ctx, Some("call_6")).await);
    let config = std::fs::read_to_string(workspace.join("config/app.toml"))?;
    println!(
        "  config/app.toml now says: {}",
        config
            .lines()
            .find(|l| l.starts_with("level"))
            .unwrap_or_default()
    );

    println!("\nStep 4 — a long result becomes an artifact the model can page with read_file");
    let table = ToolUse::new("call_7", "render_log_table", json!({}));
    let long = executor.execute_one(&table, &ctx, None).await;
    print_result(&long);
    if let Some(saved) = long
        .output
        .artifact
        .as_ref()
        .and_then(|a| a.text_path.as_ref())
    {
        let rel = saved
            .strip_prefix(&workspace)
            .unwrap_or(saved)
            .display()
            .to_string();
        println!("  the model pages the saved body: read_file {rel} offset=1400 limit=3");
        let page = ToolUse::new(
            "call_7b",
            "read_file",
            json!({"file_path": rel, "offset": 1400, "limit": 3}),
        );
        print_result(&executor.execute_one(&page, &ctx, None).await);
    }

    println!("\nStep 5 — write a summary and publish it as an independent copy");
    let write = ToolUse::new(
        "call_9",
        "write_file",
        json!({"file_path": "SUMMARY.md", "content": "# Summary\n\nLog level set to INFO.\n"}),
    );
    print_result(&executor.execute_one(&write, &ctx, Some("call_9")).await);
    let publish = ToolUse::new(
        "call_10",
        "publish_artifact",
        json!({"file_path": "SUMMARY.md"}),
    );
    print_result(&executor.execute_one(&publish, &ctx, Some("call_10")).await);

    println!("\nStep 6 — a command hook denies a dangerous command, even when a human approved it");
    let rm = ToolUse::new("call_11", "exec_command", json!({"command": "rm -rf logs"}));
    print_result(&executor.execute_one(&rm, &ctx, Some("call_11")).await);
    println!("  logs/ still exists: {}", workspace.join("logs").exists());
    let wc = ToolUse::new(
        "call_12",
        "exec_command",
        json!({"command": "wc -l logs/service.log"}),
    );
    print_result(&executor.execute_one(&wc, &ctx, Some("call_12")).await);

    println!("\nStep 7 — invalid input is a typed error, never a panic");
    let bad = ToolUse::new("call_8", "read_file", json!({"file_path": 42}));
    print_result(&executor.execute_one(&bad, &ctx, None).await);

    commands.close().await?;
    println!("\nDone. Run `cargo xtask ci` to run every test.");
    Ok(())
}
