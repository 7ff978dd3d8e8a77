//! Hooks v2 replies (`updated_input`, `ask`, `additional_context`) through a real
//! executor, answered by each handler type: a command hook (a real process), an HTTP
//! hook (a real server on 127.0.0.1) and a factory (the Python-SDK-style handler).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use iris_command::{CommandBinding, CommandConfig, CommandService};
use iris_executor::{ApprovalMode, DefaultPermissionPolicy, ToolExecutor, ToolHookDispatcher};
use iris_hooks::command::command_hooks;
use iris_hooks::config::{HookFactoryRegistry, HookSpec};
use iris_hooks::http::HttpHook;
use iris_hooks::{
    EventCommon, HookDispatcher, HookEvent, HookEventKind, HookHandler, HookRegistration,
    HookResult, MAX_ADDITIONAL_CONTEXT_CHARS,
};
use iris_test_support::http::{Reply, TestServer};
use iris_tools_core::{
    FnTool, ToolCapability, ToolDefinition, ToolExecutionContext, ToolOutput, ToolRegistry,
    ToolResult, ToolUse,
};
use serde_json::{Value, json};

/// How a reply reaches the dispatcher.
#[derive(Debug, Clone, Copy)]
enum Handler {
    Command,
    Http,
    Factory,
}

const HANDLERS: [Handler; 3] = [Handler::Command, Handler::Http, Handler::Factory];

/// One hook answering `reply` on `event`, built from YAML like an agent's `hooks:`.
/// Returns the registrations and what keeps the handler's peer alive.
struct Built {
    registrations: Vec<HookRegistration>,
    _server: Option<TestServer>,
    _binding: CommandBinding,
}

async fn built(handler: Handler, event: &str, reply: &Value, ws: &Path) -> Built {
    let service = CommandService::new(CommandConfig::default(), ws).unwrap();
    service.prepare().await.unwrap();
    let binding = CommandBinding::owned(service);
    let mut server = None;
    let handler_yaml = match handler {
        Handler::Command => {
            let quoted = reply.to_string().replace('\'', "'\\''");
            json!({"type": "command", "command": format!("cat > /dev/null; printf '%s' '{quoted}'")})
        }
        Handler::Http => {
            let s = TestServer::start(Reply::json(reply.clone())).await;
            let url = format!("{}/hook", s.url());
            server = Some(s);
            json!({"type": "http", "url": url, "timeout_seconds": 5})
        }
        Handler::Factory => json!({"type": "python", "factory": "tests:reply", "options": reply}),
    };
    let specs: Vec<HookSpec> = serde_json::from_value(json!([
        {"name": "policy", "event": event, "handler": handler_yaml}
    ]))
    .unwrap();
    let mut factories = HookFactoryRegistry::new();
    factories.register("tests:reply", |options: &Value| {
        let options = options.clone();
        Ok(Arc::new(move |event: HookEvent| {
            let reply = iris_hooks::reply::parse_answer(event.kind(), &options.to_string());
            async move { reply.map_err(iris_hooks::HookError::failed) }
        }) as Arc<dyn HookHandler>)
    });
    let registrations = factories
        .build(&specs, Some(&*command_hooks(&binding)))
        .unwrap();
    Built {
        registrations,
        _server: server,
        _binding: binding,
    }
}

/// `save_note {path, text}`: writes a file, so its path is confined to the workspace.
fn executor(hooks: HookDispatcher) -> ToolExecutor {
    let registry = ToolRegistry::new();
    let def = ToolDefinition::new(
        "save_note",
        "Save a note to a file in the workspace.",
        json!({
            "type": "object",
            "properties": {"path": {"type": "string"}, "text": {"type": "string"}},
            "required": ["path", "text"],
            "additionalProperties": false
        }),
    )
    .with_capabilities([ToolCapability::Write]);
    registry
        .register(FnTool::new(def, |input, ctx| async move {
            let path = ctx
                .workspace_root
                .join(input["path"].as_str().unwrap_or_default());
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, input["text"].as_str().unwrap_or_default()).unwrap();
            ToolOutput::text(format!(
                "saved {}",
                input["path"].as_str().unwrap_or_default()
            ))
        }))
        .unwrap();
    ToolExecutor::new(registry)
        .with_permission_policy(DefaultPermissionPolicy::new().write_mode(ApprovalMode::Allow))
        .with_hook_dispatcher(hooks)
}

async fn save(executor: &ToolExecutor, ws: &Path, approved: bool) -> ToolResult {
    let ctx = ToolExecutionContext::new(ws).session_id("s-1");
    let call = ToolUse::new(
        "c1",
        "save_note",
        json!({"path": "draft.txt", "text": "hi"}),
    );
    executor
        .execute_one(&call, &ctx, approved.then_some("c1"))
        .await
}

#[tokio::test]
async fn updated_input_runs_the_rewritten_call_and_records_both_inputs() {
    for handler in HANDLERS {
        let ws = tempfile::tempdir().unwrap();
        let reply = json!({"updated_input": {"path": "notes/draft.txt", "text": "hi"}});
        let b = built(handler, "tool.before", &reply, ws.path()).await;
        let result = save(
            &executor(HookDispatcher::new(b.registrations)),
            ws.path(),
            false,
        )
        .await;
        assert!(
            !result.is_error(),
            "{handler:?}: {}",
            result.model_content()
        );
        // The model's view names the rewrite, so the run's history shows it too.
        assert_eq!(
            result.model_content(),
            "saved notes/draft.txt\n[hook `policy` rewrote this call's input to \
             {\"path\":\"notes/draft.txt\",\"text\":\"hi\"}]",
            "{handler:?}"
        );
        assert!(ws.path().join("notes/draft.txt").exists(), "{handler:?}");
        assert!(!ws.path().join("draft.txt").exists(), "{handler:?}");
        let rewrite = result.output.input_rewrite.as_deref().unwrap();
        assert_eq!(rewrite.hooks, ["policy"], "{handler:?}");
        assert_eq!(rewrite.original, json!({"path": "draft.txt", "text": "hi"}));
        assert_eq!(rewrite.updated, reply["updated_input"]);
        // The run record and events carry the result as JSON: both inputs are there.
        let wire = serde_json::to_value(&result).unwrap();
        assert_eq!(
            wire["input_rewrite"]["original"]["path"], "draft.txt",
            "{wire}"
        );
        assert_eq!(wire["input_rewrite"]["updated"]["path"], "notes/draft.txt");
    }
}

#[tokio::test]
async fn a_rewrite_is_validated_and_checked_by_the_policy_again() {
    // (reply, expected code, message fragment)
    let cases = [
        (
            json!({"updated_input": {"path": 3, "text": "hi"}}),
            "HOOK_INPUT_INVALID",
            "hook `policy` rewrote the input of `save_note` to arguments that are not valid (INVALID_INPUT)",
        ),
        (
            json!({"updated_input": {"path": "d.txt"}}),
            "HOOK_INPUT_INVALID",
            "\"text\" is a required property",
        ),
        (
            json!({"updated_input": {"path": "../outside.txt", "text": "hi"}}),
            "PERMISSION_DENIED",
            "outside",
        ),
    ];
    for handler in HANDLERS {
        for (reply, code, fragment) in &cases {
            let ws = tempfile::tempdir().unwrap();
            let inner = ws.path().join("inner");
            std::fs::create_dir(&inner).unwrap();
            let b = built(handler, "tool.before", reply, &inner).await;
            let result = save(
                &executor(HookDispatcher::new(b.registrations)),
                &inner,
                false,
            )
            .await;
            assert_eq!(
                result.error_code(),
                Some(*code),
                "{handler:?} {reply}: {}",
                result.model_content()
            );
            assert!(
                result.model_content().contains(fragment),
                "{handler:?} {reply}: {}",
                result.model_content()
            );
            assert!(!inner.join("draft.txt").exists());
            assert!(
                !ws.path().join("outside.txt").exists(),
                "{handler:?}: escaped the workspace"
            );
            assert_eq!(
                result.output.input_rewrite.as_deref().map(|r| &r.updated),
                Some(&reply["updated_input"]),
                "{handler:?}"
            );
        }
    }
}

#[tokio::test]
async fn ask_turns_an_allowed_call_into_an_approval_that_the_approved_rerun_satisfies() {
    for handler in HANDLERS {
        let ws = tempfile::tempdir().unwrap();
        let b = built(
            handler,
            "tool.before",
            &json!({"ask": "notes are reviewed"}),
            ws.path(),
        )
        .await;
        let executor = executor(HookDispatcher::new(b.registrations));
        let waiting = save(&executor, ws.path(), false).await;
        assert_eq!(
            waiting.error_code(),
            Some("APPROVAL_REQUIRED"),
            "{handler:?}"
        );
        let approval = waiting.output.approval().unwrap();
        assert_eq!(
            approval.reason,
            "hook `policy` asks before `save_note` runs: notes are reviewed"
        );
        assert_eq!(
            approval.arguments,
            json!({"path": "draft.txt", "text": "hi"})
        );
        assert!(!ws.path().join("draft.txt").exists(), "{handler:?}");

        let approved = save(&executor, ws.path(), true).await;
        assert!(
            !approved.is_error(),
            "{handler:?}: {}",
            approved.model_content()
        );
        assert!(approved.approved, "{handler:?}: the approval was used");
        assert!(ws.path().join("draft.txt").exists(), "{handler:?}");
    }
}

#[tokio::test]
async fn a_rewrite_that_needs_a_human_asks_with_the_calls_own_arguments() {
    // Writes need a human here (`write_mode: confirm`): the policy asks before the
    // hooks run, about the call as the model made it, and the approved run's rewrite
    // is covered by that approval (docs/hooks.md, "Rewrites").
    let ws = tempfile::tempdir().unwrap();
    let reply = json!({"updated_input": {"path": "notes/draft.txt", "text": "hi"}});
    let b = built(Handler::Factory, "tool.before", &reply, ws.path()).await;
    let registry = executor(HookDispatcher::new(Vec::new())).registry().clone();
    let executor = ToolExecutor::new(registry)
        .with_permission_policy(DefaultPermissionPolicy::new())
        .with_hook_dispatcher(HookDispatcher::new(b.registrations));
    let waiting = save(&executor, ws.path(), false).await;
    let approval = waiting.output.approval().unwrap();
    assert_eq!(
        approval.arguments,
        json!({"path": "draft.txt", "text": "hi"})
    );
    assert!(
        approval.reason.contains("write_mode"),
        "{}",
        approval.reason
    );
    let approved = save(&executor, ws.path(), true).await;
    assert!(!approved.is_error(), "{}", approved.model_content());
    assert!(ws.path().join("notes/draft.txt").exists());
}

/// Allows every call but one writing under `notes/`, which needs a human.
struct NotesNeedAHuman;

impl iris_executor::PermissionPolicy for NotesNeedAHuman {
    fn check<'a>(
        &'a self,
        _: &'a dyn iris_tools_core::Tool,
        params: &'a Value,
        _: &'a ToolExecutionContext,
    ) -> iris_tools_core::BoxFuture<'a, iris_executor::PermissionDecision> {
        let notes = params["path"]
            .as_str()
            .is_some_and(|p| p.starts_with("notes/"));
        Box::pin(std::future::ready(if notes {
            iris_executor::PermissionDecision::require_human("notes are reviewed")
        } else {
            iris_executor::PermissionDecision::allow()
        }))
    }
}

#[tokio::test]
async fn a_rewrite_into_a_call_that_needs_a_human_asks_naming_the_rewrite() {
    for handler in HANDLERS {
        let ws = tempfile::tempdir().unwrap();
        let reply = json!({"updated_input": {"path": "notes/draft.txt", "text": "hi"}});
        let b = built(handler, "tool.before", &reply, ws.path()).await;
        let registry = executor(HookDispatcher::new(Vec::new())).registry().clone();
        let executor = ToolExecutor::new(registry)
            .with_permission_policy(NotesNeedAHuman)
            .with_hook_dispatcher(HookDispatcher::new(b.registrations));
        let waiting = save(&executor, ws.path(), false).await;
        let approval = waiting.output.approval().unwrap();
        assert_eq!(
            approval.reason,
            "notes are reviewed (hook `policy` rewrote the input to \
             {\"path\":\"notes/draft.txt\",\"text\":\"hi\"})",
            "{handler:?}"
        );
        // The request names the call as the model made it: that is what a grant
        // (code mode's, an MCP client's) is matched against.
        assert_eq!(
            approval.arguments,
            json!({"path": "draft.txt", "text": "hi"})
        );
        assert!(!ws.path().join("notes/draft.txt").exists());
        let approved = save(&executor, ws.path(), true).await;
        assert!(
            approved.approved,
            "{handler:?}: {}",
            approved.model_content()
        );
        assert!(ws.path().join("notes/draft.txt").exists(), "{handler:?}");
    }
}

#[tokio::test]
async fn later_hooks_see_a_rewrite_and_a_deny_wins_over_an_ask() {
    let ws = tempfile::tempdir().unwrap();
    let rewrite = HookRegistration::builder(
        HookEventKind::ToolBefore,
        "rewrite",
        |_e: HookEvent| async {
            Ok(HookResult::updated_input(
                json!({"path": "secret.txt", "text": "hi"}),
            ))
        },
    )
    .build()
    .unwrap();
    let ask = HookRegistration::builder(HookEventKind::ToolBefore, "ask", |_e: HookEvent| async {
        Ok(HookResult::ask("check"))
    })
    .build()
    .unwrap();
    let guard = HookRegistration::builder(
        HookEventKind::ToolBefore,
        "guard",
        |e: HookEvent| async move {
            let path = e.to_json()["arguments"]["path"]
                .as_str()
                .unwrap_or("")
                .to_owned();
            Ok(if path.starts_with("secret") {
                HookResult::deny(format!("{path} is off limits"))
            } else {
                HookResult::None
            })
        },
    )
    .build()
    .unwrap();
    let result = save(
        &executor(HookDispatcher::new(vec![rewrite, ask, guard])),
        ws.path(),
        false,
    )
    .await;
    assert_eq!(result.error_code(), Some("HOOK_DENIED"));
    assert!(
        result
            .model_content()
            .contains("hook `guard` denied the call: secret.txt is off limits")
    );
}

#[tokio::test]
async fn tool_after_additional_context_is_shown_after_feedback_and_kept_apart() {
    for handler in HANDLERS {
        let ws = tempfile::tempdir().unwrap();
        let reply = json!({"feedback": "looks fine", "additional_context": "notes are reviewed on Fridays"});
        let b = built(handler, "tool.after", &reply, ws.path()).await;
        let result = save(
            &executor(HookDispatcher::new(b.registrations)),
            ws.path(),
            false,
        )
        .await;
        assert_eq!(result.output.hook_feedback, ["looks fine"], "{handler:?}");
        assert_eq!(
            result.output.hook_context,
            ["notes are reviewed on Fridays"],
            "{handler:?}"
        );
        assert_eq!(
            result.model_content(),
            "saved draft.txt\nlooks fine\nnotes are reviewed on Fridays"
        );
        let wire = serde_json::to_value(&result).unwrap();
        assert_eq!(
            wire["hook_context"],
            json!(["notes are reviewed on Fridays"])
        );
        assert_eq!(wire["hook_feedback"], json!(["looks fine"]));
    }
}

#[tokio::test]
async fn additional_context_is_bounded() {
    let long = "x".repeat(MAX_ADDITIONAL_CONTEXT_CHARS - 10);
    let regs = ["a", "b"].map(|name| {
        let text = long.clone();
        HookRegistration::builder(HookEventKind::ToolAfter, name, move |_e: HookEvent| {
            let text = text.clone();
            async move { Ok(HookResult::after_context(text)) }
        })
        .build()
        .unwrap()
    });
    let ws = tempfile::tempdir().unwrap();
    let result = save(
        &executor(HookDispatcher::new(regs.to_vec())),
        ws.path(),
        false,
    )
    .await;
    let context = &result.output.hook_context;
    assert_eq!(context.len(), 2);
    assert_eq!(context[0], long);
    let cut = MAX_ADDITIONAL_CONTEXT_CHARS - 10;
    assert_eq!(
        context[1],
        format!(
            "xxxxxxxxxx\n[{} more characters of hook context cut: the limit is {MAX_ADDITIONAL_CONTEXT_CHARS}]",
            cut - 10
        )
    );
}

#[tokio::test]
async fn run_started_hooks_return_additional_context() {
    for handler in HANDLERS {
        let ws = tempfile::tempdir().unwrap();
        let reply = json!({"additional_context": "the repository uses tabs"});
        let b = built(handler, "run.started", &reply, ws.path()).await;
        let common = EventCommon::from_context(&ToolExecutionContext::new(ws.path()));
        let outcome = HookDispatcher::new(b.registrations)
            .run_started(common, json!({}), json!({}))
            .await;
        assert!(
            outcome.failures.is_empty(),
            "{handler:?}: {:?}",
            outcome.failures
        );
        assert_eq!(
            outcome.additional_context,
            ["the repository uses tabs"],
            "{handler:?}"
        );
    }
}

#[tokio::test]
async fn a_reply_for_another_event_is_a_protocol_error() {
    let ws = tempfile::tempdir().unwrap();
    // `ask` on tool.after: the command and HTTP replies are refused by the parser.
    for handler in [Handler::Command, Handler::Http] {
        let b = built(handler, "tool.after", &json!({"ask": "x"}), ws.path()).await;
        let result = save(
            &executor(HookDispatcher::new(b.registrations)),
            ws.path(),
            false,
        )
        .await;
        assert!(!result.is_error(), "{handler:?}: the run goes on");
        assert!(result.output.hook_feedback.is_empty() && result.output.hook_context.is_empty());
    }
}

// ---- HTTP specifics ----

fn headers(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

async fn http_before(hook: HttpHook, timeout: f64) -> iris_executor::BeforeOutcome {
    let reg = HookRegistration::builder(HookEventKind::ToolBefore, "remote", hook)
        .timeout_seconds(timeout)
        .build()
        .unwrap();
    let ctx = ToolExecutionContext::new(std::env::temp_dir()).session_id("s-1");
    HookDispatcher::new(vec![reg])
        .before_tool(&ctx, "c1", "save_note", &json!({"path": "a"}))
        .await
}

#[tokio::test]
async fn an_http_hook_posts_the_event_with_secret_headers_from_the_environment() {
    let server = TestServer::start(Reply::json(json!({"deny_reason": "not today"}))).await;
    let env = |name: &str| (name == "HOOK_TOKEN").then(|| "s3cret".to_owned());
    let hook = HttpHook::with_env(
        &format!("{}/before", server.url()),
        &headers(&[
            ("Authorization", "Bearer ${HOOK_TOKEN}"),
            ("X-Team", "tools"),
        ]),
        None,
        env,
    )
    .unwrap();
    assert!(!format!("{hook:?}").contains("s3cret"), "{hook:?}");
    assert_eq!(
        http_before(hook, 5.0).await,
        iris_executor::BeforeOutcome::Deny("hook `remote` denied the call: not today".into())
    );
    let request = server.only_request();
    assert_eq!(
        (request.method.as_str(), request.path.as_str()),
        ("POST", "/before")
    );
    assert_eq!(request.header("authorization"), Some("Bearer s3cret"));
    assert_eq!(request.header("x-team"), Some("tools"));
    assert_eq!(request.header("content-type"), Some("application/json"));
    let event = request.json();
    assert_eq!(
        (
            event["version"].clone(),
            event["event"].clone(),
            event["arguments"].clone()
        ),
        (json!(1), json!("tool.before"), json!({"path": "a"}))
    );
}

#[tokio::test]
async fn http_hook_configuration_errors_are_typed() {
    let none = |_: &str| None::<String>;
    let cases: [(&str, BTreeMap<String, String>, &str); 6] = [
        (
            "http://hooks.example.com/h",
            headers(&[]),
            "must be https, or plain http to this machine only",
        ),
        ("ftp://127.0.0.1/h", headers(&[]), "must be https"),
        ("not a url", headers(&[]), "is not a URL"),
        (
            "http://127.0.0.1:1/h",
            headers(&[("Authorization", "Bearer ${MISSING_TOKEN}")]),
            "the environment variable `MISSING_TOKEN` is not set",
        ),
        (
            "http://127.0.0.1:1/h",
            headers(&[("X-A", "${bad name}")]),
            "does not name an environment variable",
        ),
        (
            "http://127.0.0.1:1/h",
            headers(&[("bad header", "v")]),
            "is not a header name",
        ),
    ];
    for (url, headers, fragment) in cases {
        let err = HttpHook::with_env(url, &headers, None, none).unwrap_err();
        assert_eq!(err.code(), "HOOK_INVALID_CONFIG", "{url}");
        assert!(err.message.contains(fragment), "{url}: {}", err.message);
    }
    assert!(HttpHook::with_env("https://hooks.example.com/h", &headers(&[]), None, none).is_ok());
    assert!(HttpHook::with_env("http://localhost:9/h", &headers(&[]), None, none).is_ok());
    let err =
        HttpHook::with_env("http://127.0.0.1:9/h", &headers(&[]), Some(0.0), none).unwrap_err();
    assert!(
        err.message.contains("handler.timeout_seconds"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn http_hook_failures_deny_the_call() {
    let target = TestServer::start(Reply::json(json!({}))).await;
    let redirect = TestServer::start(
        Reply::raw(302, "text/plain", "moved")
            .header("location", &format!("{}/elsewhere", target.url())),
    )
    .await;
    let error = TestServer::start(Reply::status_json(500, json!({"error": "boom"}))).await;
    let not_json = TestServer::start(Reply::raw(200, "text/plain", "ok")).await;
    let hang = TestServer::start(Reply::Hang).await;
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let none = |_: &str| None::<String>;
    let cases: Vec<(String, Option<f64>, f64, &str)> = vec![
        (redirect.url(), None, 5.0, "(HOOK_HTTP_FAILED): POST"),
        (
            redirect.url(),
            None,
            5.0,
            "302 Found (redirects are not followed)",
        ),
        (error.url(), None, 5.0, "500 Internal Server Error"),
        (
            not_json.url(),
            None,
            5.0,
            "(HOOK_PROTOCOL_ERROR): the reply is not exactly one JSON object",
        ),
        (
            format!("http://{closed}/"),
            None,
            5.0,
            "(HOOK_HTTP_FAILED): POST",
        ),
        (
            hang.url(),
            None,
            0.3,
            "(HOOK_TIMEOUT): timed out after 0.300 s",
        ),
        (
            hang.url(),
            Some(0.3),
            5.0,
            "(HOOK_TIMEOUT): the HTTP request timed out",
        ),
    ];
    for (url, request_timeout, hook_timeout, fragment) in cases {
        let hook = HttpHook::with_env(&url, &headers(&[]), request_timeout, none).unwrap();
        match http_before(hook, hook_timeout).await {
            iris_executor::BeforeOutcome::Deny(reason) => {
                assert!(
                    reason.starts_with("hook `remote` failed ("),
                    "{url}: {reason}"
                );
                assert!(
                    reason.contains(fragment),
                    "{url}: {reason}\n  want: {fragment}"
                );
                assert!(reason.ends_with("; the call was denied"), "{reason}");
            }
            other => panic!("{url}: expected a denial, got {other:?}"),
        }
    }
    assert!(target.requests().is_empty(), "the redirect was followed");
}
