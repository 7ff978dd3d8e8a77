//! Runs one `exec_command` call and prints what the model and the host would see.
//!
//! ```text
//! cargo run -p iris-command --example exec_command -- "ls -la; exit 3"
//! cargo run -p iris-command --example exec_command -- --docker "cat /etc/os-release"
//! ```
//!
//! The workspace is the current directory. `--docker` needs a running engine and the
//! `iris-command:local` image (`bash crates/iris-command/docker/build-image.sh --offline`).

use iris_command::{CommandBinding, CommandConfig, CommandService, DockerConfig, ExecCommandTool};
use iris_tools_core::{Tool, ToolExecutionContext, ToolInput};
use serde_json::json;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let docker = args.first().is_some_and(|a| a == "--docker");
    if docker {
        args.remove(0);
    }
    let command = args.join(" ");
    let config = if docker {
        CommandConfig::docker(DockerConfig::default())
    } else {
        CommandConfig::native()
    };
    let workspace = std::env::current_dir()?;
    let service = CommandService::new(config, &workspace)?;
    service.prepare().await?;
    let binding = CommandBinding::owned(service);

    let tool = ExecCommandTool::new(binding.clone());
    let ctx = ToolExecutionContext::new(&workspace).session_id("example");
    let result = tool
        .run(
            ToolInput::new(json!({"command": command, "timeout_seconds": 30})),
            &ctx,
        )
        .await;
    println!("--- model sees ---\n{}", result.model_content());
    println!(
        "--- host data ---\n{}",
        serde_json::to_string_pretty(&result.data)?
    );

    binding.close().await?;
    Ok(())
}
