//! The shared harness: a workspace, a command service, a registry with the file tools
//! and the script tool, an executor and a context that carries it.
#![allow(dead_code)] // Each module uses a different subset.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use iris_command::{CommandBinding, CommandConfig, CommandService, DockerConfig};
use iris_executor::ToolExecutor;
use iris_script::{RunToolScriptTool, ScriptCallable, ScriptHost};
use iris_tools_core::{Tool, ToolExecutionContext, ToolRegistry, ToolResult, ToolUse};
use serde_json::json;

pub(crate) struct Env {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) binding: CommandBinding,
    pub(crate) registry: ToolRegistry,
}

impl Env {
    pub(crate) async fn native(callable: ScriptCallable) -> Self {
        Self::with_config(CommandConfig::native(), callable).await
    }

    pub(crate) async fn docker(callable: ScriptCallable) -> Self {
        Self::with_config(CommandConfig::docker(DockerConfig::default()), callable).await
    }

    async fn with_config(config: CommandConfig, callable: ScriptCallable) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let service = CommandService::new(config, dir.path()).unwrap();
        service.prepare().await.expect(
            "the command service must prepare (Docker: start dockerd and build iris-command:local \
             with crates/iris-command/docker/build-image.sh --offline)",
        );
        let binding = CommandBinding::owned(service);
        let registry = ToolRegistry::new();
        registry.register_many(iris_files::builtin_tools()).unwrap();
        registry
            .register_many(iris_command::command_tools(&binding))
            .unwrap();
        registry
            .register(RunToolScriptTool::new(binding.clone(), callable))
            .unwrap();
        Self {
            dir,
            binding,
            registry,
        }
    }

    pub(crate) fn root(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn write(&self, rel: &str, text: &str) {
        let path = self.root().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    pub(crate) fn register(&self, tool: impl Tool + 'static) {
        self.registry.register_arc(Arc::new(tool)).unwrap();
    }

    pub(crate) fn ctx(&self, executor: &ToolExecutor) -> ToolExecutionContext {
        ScriptHost::attach(
            ToolExecutionContext::new(self.root()).session_id("s-1"),
            executor,
        )
    }

    pub(crate) async fn script(
        &self,
        executor: &ToolExecutor,
        code: &str,
        timeout: Option<f64>,
    ) -> ToolResult {
        let mut input = json!({"code": code});
        if let Some(t) = timeout {
            input["timeout_seconds"] = json!(t);
        }
        let call = ToolUse::new("call_1", "run_tool_script", input);
        executor.execute_one(&call, &self.ctx(executor), None).await
    }

    pub(crate) async fn close(self) {
        self.binding.close().await.unwrap();
    }
}

/// Whether a process is gone (or a zombie nobody will reap), polled up to 20 s: the
/// kill is synchronous, the reap may lag a little.
pub(crate) async fn gone(pid: i64) -> bool {
    for _ in 0..2000 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"));
        match stat {
            Err(_) => return true,
            Ok(s) if s.split_whitespace().nth(2) == Some("Z") => return true,
            Ok(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
    false
}
