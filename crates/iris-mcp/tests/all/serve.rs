//! The serve module as a library host uses it: an executor of its own (here with a
//! short heartbeat) served over streamable HTTP, driven by the official Python SDK's
//! client (`serve_client.py`). The `iris mcp serve` command is tested in iris-cli.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use iris_executor::{DefaultPermissionPolicy, ToolExecutor};
use iris_mcp::codes;
use iris_mcp::serve::{ActiveTools, HttpOptions, McpToolServer, ScopeFactory, SessionScope};
use iris_tools_core::{
    CancellationSignal, FnTool, Tool, ToolCapability, ToolDefinition, ToolExecutionContext,
    ToolOutput, ToolRegistry, ViewFilter,
};
use serde_json::{Value, json};

use crate::support::{fixtures, python};

/// `executor` served over streamable HTTP on a loopback port, until [`Served::stop`].
struct Served {
    url: String,
    shutdown: CancellationSignal,
    serving: tokio::task::JoinHandle<Result<(), iris_mcp::McpError>>,
    _workspace: tempfile::TempDir,
}

impl Served {
    async fn start(executor: ToolExecutor) -> Self {
        Self::start_with(|workspace| McpToolServer::new(executor, workspace)).await
    }

    /// Serves the server `make` builds over a fresh workspace folder.
    async fn start_with(make: impl FnOnce(&std::path::Path) -> McpToolServer) -> Self {
        let workspace = tempfile::tempdir().unwrap();
        let bound = make(workspace.path())
            .bind_http(HttpOptions::new("127.0.0.1:0".parse().unwrap()))
            .await
            .unwrap();
        let url = format!("http://{}/mcp", bound.local_addr().unwrap());
        let shutdown = CancellationSignal::new();
        let serving = tokio::spawn({
            let shutdown = shutdown.clone();
            async move { bound.run(&shutdown).await }
        });
        Self {
            url,
            shutdown,
            serving,
            _workspace: workspace,
        }
    }

    /// Shuts the server down and checks it stopped cleanly.
    async fn stop(self) {
        self.shutdown.cancel();
        self.serving.await.unwrap().unwrap();
    }
}

/// Runs `serve_client.py` on `script`; its printed JSON.
async fn client(script: &Value) -> Value {
    let out = tokio::process::Command::new(python())
        .arg(fixtures().join("serve_client.py"))
        .arg(script.to_string())
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "client failed: {stdout}\n{stderr}");
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"))
}

/// A long call's heartbeats reach the client as `notifications/progress` for its
/// token (seconds run, of the deadline), in both protocol eras.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_call_reports_progress_to_the_client() {
    let registry = ToolRegistry::new();
    let def = ToolDefinition::new(
        "slow",
        "Wait a moment, then answer.",
        json!({"type": "object"}),
    )
    .with_capabilities([ToolCapability::Read]);
    registry
        .register(FnTool::new(def, |_, _| async {
            tokio::time::sleep(Duration::from_millis(900)).await;
            ToolOutput::text("done")
        }))
        .unwrap();
    let executor = ToolExecutor::new(registry)
        .with_heartbeat_interval(Duration::from_millis(150))
        .with_default_timeout(Duration::from_secs(20));
    let served = Served::start(executor).await;
    let url = served.url.clone();

    for mode in ["auto", "legacy"] {
        let script = json!({
            "http": {"url": url},
            "mode": mode,
            "elicit": null,
            "steps": [{"op": "call", "name": "slow", "args": {}, "progress": true}],
        });
        let out = client(&script).await;
        let result = &out["results"][0];
        assert_eq!(result["texts"], json!(["done"]), "{out}");
        let progress = result["progress"].as_array().unwrap();
        assert!(!progress.is_empty(), "{mode}: no progress: {out}");
        let first = &progress[0];
        assert_eq!(first["total"], 20.0, "{out}");
        assert!(first["progress"].as_f64().unwrap() > 0.0, "{out}");
        assert!(
            first["message"]
                .as_str()
                .unwrap()
                .starts_with("`slow` running for"),
            "{out}"
        );
    }
    served.stop().await;
}

/// A 2026-07-28 client's approval retry that cannot be used (a reused handle, a
/// handle with changed arguments, one the server never gave) is a JSON-RPC
/// `invalid_params` error with the stable `data.code` MCP_APPROVAL_STATE_INVALID,
/// and the call does not run; the one good retry runs it once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unusable_approval_retry_has_a_stable_code() {
    let registry = ToolRegistry::new();
    let def = ToolDefinition::new(
        "note",
        "Write a note (needs approval).",
        json!({"type": "object", "properties": {"text": {"type": "string"}}}),
    )
    .with_capabilities([ToolCapability::Write]);
    let runs = Arc::new(AtomicUsize::new(0));
    registry
        .register(FnTool::new(def, {
            let runs = Arc::clone(&runs);
            move |_, _| {
                runs.fetch_add(1, Ordering::SeqCst);
                async { ToolOutput::text("noted") }
            }
        }))
        .unwrap();
    // The default permission policy: a write tool needs a human's approval.
    let executor =
        ToolExecutor::new(registry).with_permission_policy(DefaultPermissionPolicy::new());
    let served = Served::start(executor).await;
    let url = served.url.clone();

    let a = json!({"text": "a"});
    let retries =
        |retries: Value| json!({"op": "retries", "name": "note", "args": a, "retries": retries});
    let script = json!({
        "http": {"url": url},
        "mode": "auto",
        "elicit": "approve",
        "steps": [
            // Changed arguments: refused, and the handle is withdrawn with it.
            retries(json!([{"args": {"text": "b"}}, {}])),
            // The good retry runs the call; the same handle again does not.
            retries(json!([{}, {}])),
            // A handle the server never gave.
            retries(json!([{"state": "0123456789abcdef0123456789abcdef"}])),
        ],
    });
    let out = client(&script).await;
    assert_eq!(out["protocol"], "2026-07-28", "{out}");
    let refused = |r: &Value, why: &str| {
        assert_eq!(
            r["data"]["code"],
            codes::MCP_APPROVAL_STATE_INVALID,
            "{out}"
        );
        let error = r["error"].as_str().unwrap();
        // -32602: invalid params.
        assert!(error.starts_with("-32602: "), "{error}");
        assert!(error.contains(why), "{error}");
        assert!(error.contains("the call did not run"), "{error}");
    };
    let changed = &out["results"][0];
    assert_eq!(changed["keys"], json!(["iris_approval"]), "{out}");
    refused(&changed["retries"][0], "tool or arguments differ");
    refused(&changed["retries"][1], "already used");
    let reused = &out["results"][1]["retries"];
    assert_eq!(reused[0]["is_error"], false, "{out}");
    assert_eq!(reused[0]["texts"], json!(["noted"]), "{out}");
    assert_eq!(reused[0]["meta"]["iris/result"]["approved"], true, "{out}");
    refused(&reused[1], "already used");
    refused(&out["results"][2]["retries"][0], "unknown");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "only the good retry ran");

    served.stop().await;
}

/// Counts the scopes alive: a scope is what a session keeps (reveals, read
/// observations), so it must go when its session ends.
#[derive(Debug)]
struct CountedScopes {
    inner: ActiveTools,
    made: Arc<AtomicUsize>,
    alive: Arc<AtomicUsize>,
}

#[derive(Debug)]
struct CountedScope {
    inner: Arc<dyn SessionScope>,
    alive: Arc<AtomicUsize>,
}

impl ScopeFactory for CountedScopes {
    fn session(&self) -> Arc<dyn SessionScope> {
        self.made.fetch_add(1, Ordering::SeqCst);
        self.alive.fetch_add(1, Ordering::SeqCst);
        Arc::new(CountedScope {
            inner: self.inner.session(),
            alive: Arc::clone(&self.alive),
        })
    }
}

impl SessionScope for CountedScope {
    fn listed(&self) -> Vec<Arc<dyn Tool>> {
        self.inner.listed()
    }

    fn prepare(&self, ctx: ToolExecutionContext) -> ToolExecutionContext {
        self.inner.prepare(ctx)
    }
}

impl Drop for CountedScope {
    fn drop(&mut self) {
        self.alive.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A session's scope is dropped when the session ends (the client closes it, and
/// the Python SDK's client sends `DELETE`), so what a host keeps in it — the
/// runner keeps each session's reveals and read observations there — does not grow
/// with every session the server ever had. Only the server-wide scope of stateless
/// requests stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_scope_ends_with_its_session() {
    let registry = ToolRegistry::new();
    let def = ToolDefinition::new("ping", "Answer pong.", json!({"type": "object"}))
        .with_capabilities([ToolCapability::Read]);
    registry
        .register(FnTool::new(def, |_, _| async { ToolOutput::text("pong") }))
        .unwrap();
    let made = Arc::new(AtomicUsize::new(0));
    let alive = Arc::new(AtomicUsize::new(0));
    let scopes = Arc::new(CountedScopes {
        inner: ActiveTools::new(registry.view(ViewFilter::default())),
        made: Arc::clone(&made),
        alive: Arc::clone(&alive),
    });
    let executor = ToolExecutor::new(registry);
    let served =
        Served::start_with(|workspace| McpToolServer::new(executor, workspace).with_scopes(scopes))
            .await;
    // The stateless scope is made with the server.
    assert_eq!(alive.load(Ordering::SeqCst), 1);

    for _ in 0..3 {
        let script = json!({
            "http": {"url": served.url},
            "mode": "legacy",
            "elicit": null,
            "steps": [{"op": "call", "name": "ping", "args": {}}],
        });
        let out = client(&script).await;
        assert_eq!(out["results"][0]["texts"], json!(["pong"]), "{out}");
    }
    assert!(
        made.load(Ordering::SeqCst) >= 4,
        "three sessions each made a scope"
    );
    // The session's task ends a moment after its DELETE is answered.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while alive.load(Ordering::SeqCst) > 1 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        alive.load(Ordering::SeqCst),
        1,
        "ended sessions' scopes are still held"
    );
    served.stop().await;
}
