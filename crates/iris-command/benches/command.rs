//! Benchmarks of the command layer (run with `cargo bench -p iris-command --bench command`):
//!
//! - per-call overhead: the `exec_command` tool running `true` natively in the default
//!   command sandbox (through the `iris-sandbox` helper: build it first with
//!   `cargo build --release -p iris-sandbox`), the same with the sandbox off, and
//!   spawning `sh -c true` directly with tokio;
//! - Docker: one `CommandService::execute("true")` (bollard: create exec, wrapper,
//!   attach, inspect) vs the `docker exec <container> /bin/sh -c true` CLI on the same
//!   container;
//! - streaming 1 GiB of output natively and through Docker: `max alloc` of the
//!   allocation profiler is the heap peak of one run (the peak RSS of the whole process
//!   is measured by `tests/memory.rs`).
//!
//! The Docker benchmarks need a running engine and the `iris-command:local` image
//! (`bash crates/iris-command/docker/build-image.sh --offline`).
// Benchmark setup: a failed unwrap aborts the run with its message, which is wanted.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{LazyLock, OnceLock};

use iris_command::{
    CommandBinding, CommandConfig, CommandRequest, CommandScope, CommandService, DockerConfig,
    ExecCommandTool,
};
use iris_tools_core::{Tool, ToolExecutionContext, ToolInput};
use serde_json::json;

#[global_allocator]
static ALLOC: divan::AllocProfiler = divan::AllocProfiler::system();

fn main() {
    divan::main();
    // Statics are never dropped: remove the benchmark's container explicitly.
    if let Some(env) = DOCKER.get() {
        RUNTIME.block_on(env.service.close()).unwrap();
    }
}

/// A current-thread runtime: every task of a call (the service's execution task, the
/// engine connection) runs on the benchmark thread, so the allocation profiler, which
/// counts per thread, sees all of it and `max alloc` is the true heap peak of a call.
static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
});

/// A prepared service on a temporary workspace (kept alive for the whole run).
struct Env {
    service: CommandService,
    workspace: tempfile::TempDir,
}

fn env(config: CommandConfig) -> Env {
    let workspace = tempfile::tempdir().unwrap();
    let service = CommandService::new(config, workspace.path()).unwrap();
    RUNTIME.block_on(service.prepare()).unwrap_or_else(|e| {
        panic!(
            "prepare failed: {e}; start the engine (`dockerd > /tmp/dockerd.log 2>&1 &`) and \
             build the image (`bash crates/iris-command/docker/build-image.sh --offline`)"
        )
    });
    Env { service, workspace }
}

static NATIVE: OnceLock<Env> = OnceLock::new();
static UNSANDBOXED: OnceLock<Env> = OnceLock::new();
static DOCKER: OnceLock<Env> = OnceLock::new();

/// The native service (created outside any `block_on`: preparing blocks on the runtime).
fn native_env() -> &'static Env {
    NATIVE.get_or_init(|| env(CommandConfig::native()))
}

/// The native service with the command sandbox off.
fn unsandboxed_env() -> &'static Env {
    UNSANDBOXED.get_or_init(|| {
        env(CommandConfig::native().with_sandbox(iris_command::SandboxPolicy::off()))
    })
}

/// The Docker service and its container.
fn docker_env() -> &'static Env {
    DOCKER.get_or_init(|| env(CommandConfig::docker(DockerConfig::default())))
}

mod per_call {
    use super::*;

    /// The whole tool path: input parsing, cwd check, service, process group, capture.
    #[divan::bench]
    fn exec_command_true() {
        let env = native_env();
        let tool = ExecCommandTool::new(CommandBinding::owned(env.service.clone()));
        let ctx = ToolExecutionContext::new(env.workspace.path());
        RUNTIME.block_on(async {
            let result = tool
                .run(ToolInput::new(json!({"command": "true"})), &ctx)
                .await;
            assert!(!result.is_error());
        });
    }

    /// The same tool path with the command sandbox off (no helper, no namespaces, no
    /// temp folder).
    #[divan::bench]
    fn exec_command_true_unsandboxed() {
        let env = unsandboxed_env();
        let tool = ExecCommandTool::new(CommandBinding::owned(env.service.clone()));
        let ctx = ToolExecutionContext::new(env.workspace.path());
        RUNTIME.block_on(async {
            let result = tool
                .run(ToolInput::new(json!({"command": "true"})), &ctx)
                .await;
            assert!(!result.is_error());
        });
    }

    /// The floor: tokio spawning `/bin/sh -c true` and collecting its output.
    #[divan::bench]
    fn spawn_sh_true_directly() {
        RUNTIME.block_on(async {
            let out = tokio::process::Command::new("/bin/sh")
                .args(["-c", "true"])
                .output()
                .await
                .unwrap();
            assert!(out.status.success());
        });
    }
}

mod docker_exec {
    use super::*;

    /// One call through the service: create exec, wrapper with setsid, attach, inspect.
    #[divan::bench(sample_count = 30)]
    fn bollard_service_execute_true() {
        let env = docker_env();
        RUNTIME.block_on(async {
            let outcome = env
                .service
                .execute(
                    &CommandScope::default(),
                    CommandRequest::shell("b", "true", "."),
                )
                .await
                .unwrap();
            assert!(outcome.success());
        });
    }

    /// The Docker CLI on the same container.
    #[divan::bench(sample_count = 30)]
    fn docker_cli_exec_true() {
        let id = docker_env().service.docker_container_id().unwrap();
        let status = std::process::Command::new("docker")
            .args(["exec", &id, "/bin/sh", "-c", "true"])
            .status()
            .unwrap();
        assert!(status.success());
    }
}

mod stream_1gib {
    use super::*;

    fn stream(env: &Env) {
        RUNTIME.block_on(async {
            let outcome = env
                .service
                .execute(
                    &CommandScope::default(),
                    CommandRequest::shell("gib", "head -c 1073741824 /dev/zero", ".")
                        .timeout_seconds(600.0),
                )
                .await
                .unwrap();
            assert_eq!(outcome.output_stats.stdout.bytes_seen, 1 << 30);
        });
    }

    #[divan::bench(sample_count = 3, sample_size = 1)]
    fn native() {
        stream(native_env());
    }

    #[divan::bench(sample_count = 3, sample_size = 1)]
    fn docker() {
        stream(docker_env());
    }
}
