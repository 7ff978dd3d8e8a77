//! The path of one call: lookup, validation, hooks, middleware, body, identity.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use iris_executor::{
    AfterOutcome, BeforeOutcome, BodyStatus, Next, PermissionDecision, PermissionPolicy,
    ToolExecutor, ToolHookDispatcher, ToolMiddleware, ToolRequest,
};
use iris_tools_core::{
    BoxFuture, Tool, ToolCapability as Cap, ToolDefinition, ToolErrorInfo, ToolExecutionContext,
    ToolInput, ToolOutput, ToolRegistry, ToolUse, codes,
};
use serde_json::{Value, json};

use super::fixtures::{Log, ctx, def, register};

#[tokio::test]
async fn unknown_tool_is_a_not_found_result() {
    let executor = ToolExecutor::new(ToolRegistry::new());
    let result = executor
        .execute_one(&ToolUse::new("call_1", "nope", json!({})), &ctx(), None)
        .await;
    assert_eq!(result.error_code(), Some(codes::TOOL_NOT_FOUND));
    assert_eq!(
        (result.tool_use_id.as_str(), result.tool_name.as_str()),
        ("call_1", "nope")
    );
    assert_eq!(
        result.model_content(),
        "Error[TOOL_NOT_FOUND]: no tool is named `nope`"
    );
}

/// A call by alias runs the tool under its canonical name: the body's context and the
/// result carry the canonical name and the real call id. (A body returns a
/// `ToolOutput`, which has no identity it could get wrong: the executor binds it.)
#[tokio::test]
async fn alias_calls_bind_the_canonical_identity() {
    let registry = ToolRegistry::new();
    register(
        &registry,
        def("read_config", &[Cap::Read]).with_aliases(["cfg", "config"]),
        |_, ctx| async move { ToolOutput::text(format!("{} {}", ctx.call_id, ctx.tool_name)) },
    );
    let executor = ToolExecutor::new(registry);
    for name in ["read_config", "cfg", "config"] {
        let result = executor
            .execute_one(&ToolUse::new("call_7", name, json!({})), &ctx(), None)
            .await;
        assert_eq!(
            result.model_content(),
            "call_7 read_config",
            "called as `{name}`"
        );
        assert_eq!(result.tool_use_id, "call_7");
        assert_eq!(result.tool_name, "read_config");
    }
}

/// A class-style tool that counts how often the executor parsed its input.
struct Counting {
    def: ToolDefinition,
    parses: AtomicUsize,
    runs: AtomicUsize,
}

impl Tool for Counting {
    fn definition(&self) -> &ToolDefinition {
        &self.def
    }

    fn validate_input(&self, raw: Value) -> Result<ToolInput, ToolErrorInfo> {
        self.parses.fetch_add(1, Ordering::SeqCst);
        if raw["path"].as_str().is_some_and(|p| p.contains("..")) {
            return Err(ToolErrorInfo::new(
                codes::INVALID_INPUT,
                "`path` must not contain `..`",
            ));
        }
        let parsed =
            json!({"path": raw["path"], "limit": raw.get("limit").cloned().unwrap_or(json!(100))});
        Ok(ToolInput::with_parsed(raw, parsed))
    }

    fn run<'a>(
        &'a self,
        mut input: ToolInput,
        _: &'a ToolExecutionContext,
    ) -> BoxFuture<'a, ToolOutput> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        // The parse `validate_input` made; the raw JSON only when run directly.
        let parsed = input
            .take_parsed::<Value>()
            .unwrap_or_else(|| input.value().clone());
        Box::pin(async move { ToolOutput::text(parsed.to_string()) })
    }
}

fn counting_tool() -> Arc<Counting> {
    let schema = json!({
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "limit": {"type": "integer", "minimum": 0, "maximum": 1000}
        },
        "required": ["path"],
        "additionalProperties": false
    });
    Arc::new(Counting {
        def: ToolDefinition::new("read_file", "Read a file.", schema),
        parses: AtomicUsize::new(0),
        runs: AtomicUsize::new(0),
    })
}

/// Validation: the schema first (every violation listed with its pointer), then the
/// tool's own parse, each exactly once; the body gets the parsed value.
#[tokio::test]
async fn input_is_validated_once_schema_then_tool() {
    // (input, expected code or None, expected parses, expected body output)
    let table = [
        (
            json!({"path": "a.txt"}),
            None,
            1,
            Some(r#"{"limit":100,"path":"a.txt"}"#),
        ),
        (
            json!({"path": "a.txt", "limit": 5}),
            None,
            1,
            Some(r#"{"limit":5,"path":"a.txt"}"#),
        ),
        (json!({"path": "../x"}), Some(codes::INVALID_INPUT), 1, None),
        (
            json!({"limit": -1, "extra": true}),
            Some(codes::INVALID_INPUT),
            0,
            None,
        ),
        (json!("not an object"), Some(codes::INVALID_INPUT), 0, None),
    ];
    for (input, code, parses, output) in table {
        let tool = counting_tool();
        let registry = ToolRegistry::new();
        registry
            .register_arc(Arc::clone(&tool) as Arc<dyn Tool>)
            .unwrap();
        let executor = ToolExecutor::new(registry);
        let result = executor
            .execute_one(&ToolUse::new("c", "read_file", input.clone()), &ctx(), None)
            .await;
        assert_eq!(result.error_code(), code, "input {input}");
        assert_eq!(
            tool.parses.load(Ordering::SeqCst),
            parses,
            "parses for {input}"
        );
        let runs = usize::from(output.is_some());
        assert_eq!(tool.runs.load(Ordering::SeqCst), runs, "runs for {input}");
        if let Some(output) = output {
            assert_eq!(result.model_content(), output);
        }
    }
}

#[tokio::test]
async fn invalid_input_lists_every_violation_with_its_pointer() {
    let registry = ToolRegistry::new();
    registry
        .register_arc(counting_tool() as Arc<dyn Tool>)
        .unwrap();
    let executor = ToolExecutor::new(registry);
    let input = json!({"limit": 5000, "extra": true});
    let result = executor
        .execute_one(&ToolUse::new("call_1", "read_file", input), &ctx(), None)
        .await;
    insta::assert_json_snapshot!(result);
}

/// A schema that does not compile is the definition's fault: a typed
/// `INVALID_DEFINITION` result, never a panic; the body does not run.
#[tokio::test]
async fn a_schema_that_does_not_compile_is_a_definition_error() {
    let registry = ToolRegistry::new();
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&runs);
    let schema =
        json!({"type": "object", "properties": {"q": {"type": "string", "pattern": "(unclosed"}}});
    register(
        &registry,
        ToolDefinition::new("broken", "Has a bad schema.", schema),
        move |_, _| {
            counter.fetch_add(1, Ordering::SeqCst);
            async { ToolOutput::text("ran") }
        },
    );
    let executor = ToolExecutor::new(registry);
    for _ in 0..2 {
        let result = executor
            .execute_one(
                &ToolUse::new("c", "broken", json!({"q": "x"})),
                &ctx(),
                None,
            )
            .await;
        assert_eq!(result.error_code(), Some(codes::INVALID_DEFINITION));
        assert!(
            result.model_content().contains("does not compile"),
            "{}",
            result.model_content()
        );
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

/// Replaces the arguments with a fixed value, then passes the call on.
struct Rewrite(Value);

impl ToolMiddleware for Rewrite {
    fn wrap_tool_call<'a>(
        &'a self,
        mut req: ToolRequest,
        next: Next<'a>,
    ) -> BoxFuture<'a, ToolOutput> {
        req.input.set_value(self.0.clone());
        next.run(req)
    }
}

/// Denies any call whose `path` is `secret.txt`.
struct NoSecrets;

impl PermissionPolicy for NoSecrets {
    fn check<'a>(
        &'a self,
        tool: &'a dyn Tool,
        params: &'a Value,
        _: &'a ToolExecutionContext,
    ) -> BoxFuture<'a, PermissionDecision> {
        let decision = if params["path"] == "secret.txt" {
            PermissionDecision::deny(format!("`{}` may not read secrets", tool.definition().name))
        } else {
            PermissionDecision::allow()
        };
        Box::pin(std::future::ready(decision))
    }
}

/// Arguments a middleware rewrites go through validation (schema, then the tool's
/// own parse) and permission again before the body sees them, so a middleware cannot
/// smuggle a call past either.
#[tokio::test]
async fn rewritten_arguments_are_validated_and_permitted_again() {
    // (rewritten to, expected code, expected parses, expected body output)
    let table = [
        (
            json!({"path": "b.txt"}),
            None,
            2,
            Some(r#"{"limit":100,"path":"b.txt"}"#),
        ),
        (json!({"limit": 1}), Some(codes::INVALID_INPUT), 1, None),
        (json!({"path": "../x"}), Some(codes::INVALID_INPUT), 2, None),
        (
            json!({"path": "secret.txt"}),
            Some(codes::PERMISSION_DENIED),
            2,
            None,
        ),
    ];
    for (rewritten, code, parses, output) in table {
        let tool = counting_tool();
        let registry = ToolRegistry::new();
        registry
            .register_arc(Arc::clone(&tool) as Arc<dyn Tool>)
            .unwrap();
        let executor = ToolExecutor::new(registry)
            .with_permission_policy(NoSecrets)
            .with_middleware(Rewrite(rewritten.clone()));
        let call = ToolUse::new("c", "read_file", json!({"path": "a.txt"}));
        let result = executor.execute_one(&call, &ctx(), None).await;
        assert_eq!(result.error_code(), code, "rewritten to {rewritten}");
        assert_eq!(
            tool.parses.load(Ordering::SeqCst),
            parses,
            "parses for {rewritten}"
        );
        let runs = usize::from(output.is_some());
        assert_eq!(
            tool.runs.load(Ordering::SeqCst),
            runs,
            "runs for {rewritten}"
        );
        if let Some(output) = output {
            assert_eq!(result.model_content(), output);
        }
    }
}

/// A layer sees the raw arguments before validation: what it passes on is what gets
/// validated, once.
#[tokio::test]
async fn a_layer_rewrites_raw_arguments_before_validation() {
    let tool = counting_tool();
    let registry = ToolRegistry::new();
    registry
        .register_arc(Arc::clone(&tool) as Arc<dyn Tool>)
        .unwrap();
    // The raw call breaks the schema (`extra` is not allowed); the layer fixes it.
    let call = ToolUse::new("c", "read_file", json!({"path": "a.txt", "extra": null}));
    let plain = ToolExecutor::new(registry.clone());
    let result = plain.execute_one(&call, &ctx(), None).await;
    assert_eq!(result.error_code(), Some(codes::INVALID_INPUT));
    let layered = plain.with_layer(Rewrite(json!({"path": "a.txt"})));
    let result = layered.execute_one(&call, &ctx(), None).await;
    assert_eq!(result.error_code(), None);
    assert_eq!(result.model_content(), r#"{"limit":100,"path":"a.txt"}"#);
    assert_eq!(tool.parses.load(Ordering::SeqCst), 1, "validated once");
}

/// What a middleware does in a scenario.
#[derive(Clone, Copy)]
enum Mw {
    /// Logs around `next` and tags the result (a new object).
    Pass(&'static str),
    /// Returns its own result without calling `next`.
    ShortCircuit(&'static str),
    /// Panics before calling `next`.
    Panic,
}

struct Recording {
    mode: Mw,
    log: Log,
}

impl ToolMiddleware for Recording {
    fn wrap_tool_call<'a>(&'a self, req: ToolRequest, next: Next<'a>) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            match self.mode {
                Mw::Pass(name) => {
                    self.log.push(format!(
                        "{name}> {} {} {}",
                        req.call_id(),
                        req.tool_name(),
                        req.arguments()
                    ));
                    let result = next.run(req).await;
                    self.log.push(format!("<{name}"));
                    let mut tagged = result.clone();
                    tagged.metadata.insert(name.to_owned(), json!(true));
                    tagged
                }
                Mw::ShortCircuit(name) => {
                    self.log.push(format!("{name} short-circuits"));
                    ToolOutput::text(format!("from {name}"))
                }
                Mw::Panic => panic!("middleware exploded"),
            }
        })
    }
}

/// What the hook dispatcher does in a scenario.
#[derive(Clone, Copy)]
enum Hooks {
    Continue,
    Deny,
    PanicBefore,
}

struct HookLog {
    mode: Hooks,
    log: Log,
}

impl ToolHookDispatcher for HookLog {
    fn before_tool<'a>(
        &'a self,
        ctx: &'a ToolExecutionContext,
        call_id: &'a str,
        tool_name: &'a str,
        arguments: &'a Value,
    ) -> BoxFuture<'a, BeforeOutcome> {
        Box::pin(async move {
            assert_eq!(
                (ctx.call_id.as_str(), ctx.tool_name.as_str()),
                (call_id, tool_name)
            );
            self.log
                .push(format!("before {call_id} {tool_name} {arguments}"));
            match self.mode {
                Hooks::Continue => BeforeOutcome::Continue,
                Hooks::Deny => BeforeOutcome::Deny("no writes on Fridays".into()),
                Hooks::PanicBefore => panic!("hook exploded"),
            }
        })
    }

    fn after_tool<'a>(
        &'a self,
        _: &'a ToolExecutionContext,
        _: &'a str,
        _: &'a str,
        _: &'a Value,
        result: &'a ToolOutput,
        status: BodyStatus,
    ) -> BoxFuture<'a, AfterOutcome> {
        Box::pin(async move {
            self.log.push(format!(
                "after {} {}",
                status.as_str(),
                result.model_content()
            ));
            AfterOutcome {
                feedback: vec!["feedback one".to_owned(), "feedback two".to_owned()],
                additional_context: Vec::new(),
            }
        })
    }
}

struct Scenario {
    name: &'static str,
    middleware: Vec<Mw>,
    hooks: Hooks,
    body_fails: bool,
    log: &'static [&'static str],
    code: Option<&'static str>,
    content: &'static str,
}

async fn check_scenario(s: Scenario) {
    let log = Log::default();
    let registry = ToolRegistry::new();
    let body_log = log.clone();
    let fails = s.body_fails;
    register(&registry, def("edit", &[Cap::Write]), move |_, _| {
        body_log.push("body");
        async move {
            if fails {
                ToolOutput::err(codes::TOOL_FAILED, "disk full")
            } else {
                ToolOutput::text("edited")
            }
        }
    });
    let mut executor = ToolExecutor::new(registry).with_hook_dispatcher(HookLog {
        mode: s.hooks,
        log: log.clone(),
    });
    for mode in &s.middleware {
        executor = executor.with_middleware(Recording {
            mode: *mode,
            log: log.clone(),
        });
    }
    let result = executor
        .execute_one(&ToolUse::new("c1", "edit", json!({"x": 1})), &ctx(), None)
        .await;
    assert_eq!(log.take(), s.log, "scenario `{}`: log", s.name);
    assert_eq!(result.error_code(), s.code, "scenario `{}`: code", s.name);
    assert_eq!(
        result.model_content(),
        s.content,
        "scenario `{}`: content",
        s.name
    );
    assert_eq!(
        (result.tool_use_id.as_str(), result.tool_name.as_str()),
        ("c1", "edit")
    );
}

/// Order: before-hooks → middleware (first added outermost) → body → after-hooks,
/// feedback appended in order; any short-circuit skips the body and the after-hooks.
#[tokio::test]
async fn hooks_and_middleware_order_and_short_circuits() {
    let scenarios = [
        Scenario {
            name: "two middlewares around the body",
            middleware: vec![Mw::Pass("m1"), Mw::Pass("m2")],
            hooks: Hooks::Continue,
            body_fails: false,
            log: &[
                r#"before c1 edit {"x":1}"#,
                r#"m1> c1 edit {"x":1}"#,
                r#"m2> c1 edit {"x":1}"#,
                "body",
                "<m2",
                "<m1",
                "after success edited",
            ],
            code: None,
            content: "edited\nfeedback one\nfeedback two",
        },
        Scenario {
            name: "a failing body still gets after-hooks, with status error",
            middleware: vec![],
            hooks: Hooks::Continue,
            body_fails: true,
            log: &[
                r#"before c1 edit {"x":1}"#,
                "body",
                "after error Error[TOOL_FAILED]: disk full",
            ],
            code: Some(codes::TOOL_FAILED),
            content: "Error[TOOL_FAILED]: disk full\nfeedback one\nfeedback two",
        },
        Scenario {
            name: "the inner middleware short-circuits",
            middleware: vec![Mw::Pass("m1"), Mw::ShortCircuit("m2")],
            hooks: Hooks::Continue,
            body_fails: false,
            log: &[
                r#"before c1 edit {"x":1}"#,
                r#"m1> c1 edit {"x":1}"#,
                "m2 short-circuits",
                "<m1",
            ],
            code: None,
            content: "from m2",
        },
        Scenario {
            name: "a before-hook denies",
            middleware: vec![Mw::Pass("m1")],
            hooks: Hooks::Deny,
            body_fails: false,
            log: &[r#"before c1 edit {"x":1}"#],
            code: Some(codes::HOOK_DENIED),
            content: "Error[HOOK_DENIED]: no writes on Fridays",
        },
        Scenario {
            name: "a failing before-hook denies",
            middleware: vec![],
            hooks: Hooks::PanicBefore,
            body_fails: false,
            log: &[r#"before c1 edit {"x":1}"#],
            code: Some(codes::HOOK_DENIED),
            content: "Error[HOOK_DENIED]: a tool.before hook failed: hook exploded",
        },
        Scenario {
            name: "a panicking middleware is isolated",
            middleware: vec![Mw::Panic],
            hooks: Hooks::Continue,
            body_fails: false,
            log: &[r#"before c1 edit {"x":1}"#],
            code: Some(codes::TOOL_PANICKED),
            content: "Error[TOOL_PANICKED]: `edit` panicked in its middleware: middleware exploded",
        },
    ];
    for scenario in scenarios {
        check_scenario(scenario).await;
    }
}

/// A panicking body — inside its future or while creating it — becomes a
/// `TOOL_PANICKED` result, and the executor keeps working.
#[tokio::test]
async fn panics_are_isolated() {
    struct PanicsEarly(ToolDefinition);
    impl Tool for PanicsEarly {
        fn definition(&self) -> &ToolDefinition {
            &self.0
        }
        fn run<'a>(
            &'a self,
            _: ToolInput,
            _: &'a ToolExecutionContext,
        ) -> BoxFuture<'a, ToolOutput> {
            panic!("panicked before returning a future")
        }
    }
    let registry = ToolRegistry::new();
    register(
        &registry,
        def("boom", &[Cap::Read]),
        |input, _| async move {
            if input["panic"] == json!(true) {
                panic!("index out of range");
            }
            ToolOutput::text("fine")
        },
    );
    registry
        .register(PanicsEarly(def("early", &[Cap::Read])))
        .unwrap();
    let executor = ToolExecutor::new(registry);
    let table = [
        (
            "boom",
            json!({"panic": true}),
            "Error[TOOL_PANICKED]: `boom` panicked in its body: index out of range",
        ),
        ("boom", json!({}), "fine"),
        (
            "early",
            json!({}),
            "Error[TOOL_PANICKED]: `early` panicked in its body: panicked before returning a future",
        ),
        ("boom", json!({}), "fine"),
    ];
    for (name, input, expect) in table {
        let result = executor
            .execute_one(&ToolUse::new("c", name, input), &ctx(), None)
            .await;
        assert_eq!(result.model_content(), expect);
    }
    // A panic inside a parallel window is isolated the same way.
    let uses: Vec<ToolUse> = (0..4)
        .map(|i| ToolUse::new(format!("c{i}"), "boom", json!({"panic": i % 2 == 0})))
        .collect();
    let codes_seen: Vec<Option<String>> = executor
        .execute_many(&uses, &ctx())
        .await
        .iter()
        .map(|r| r.error_code().map(str::to_owned))
        .collect();
    let panicked = Some(codes::TOOL_PANICKED.to_owned());
    assert_eq!(codes_seen, [panicked.clone(), None, panicked, None]);
}

/// A policy that panics cannot decide, so the call is denied (fail closed).
#[tokio::test]
async fn a_panicking_policy_denies() {
    struct Broken;
    impl PermissionPolicy for Broken {
        fn check<'a>(
            &'a self,
            _: &'a dyn Tool,
            _: &'a Value,
            _: &'a ToolExecutionContext,
        ) -> BoxFuture<'a, PermissionDecision> {
            panic!("policy bug")
        }
    }
    let registry = ToolRegistry::new();
    register(&registry, def("read", &[Cap::Read]), |_, _| async {
        ToolOutput::text("ran")
    });
    let executor = ToolExecutor::new(registry).with_permission_policy(Broken);
    let result = executor
        .execute_one(&ToolUse::new("c", "read", json!({})), &ctx(), None)
        .await;
    assert_eq!(result.error_code(), Some(codes::PERMISSION_DENIED));
}

/// A host binding (the command tools' sandbox, say) reaches every body through the
/// context's typed extensions. The executor's own `with_command_binding` slot is
/// gone: a binding is an extension like any other, attached to the context.
#[tokio::test]
async fn the_command_binding_reaches_the_body() {
    #[derive(Debug)]
    struct Binding {
        shell: &'static str,
    }
    let registry = ToolRegistry::new();
    register(
        &registry,
        def("exec", &[Cap::Execute]),
        |_, ctx| async move {
            let shell = ctx.extensions.get::<Binding>().map_or("none", |b| b.shell);
            ToolOutput::text(shell)
        },
    );
    let executor = ToolExecutor::new(registry);
    let plain = ctx();
    let bound = ctx().with_extension(Binding { shell: "/bin/sh" });
    let call = ToolUse::new("c", "exec", json!({}));
    assert_eq!(
        executor
            .execute_one(&call, &plain, None)
            .await
            .model_content(),
        "none"
    );
    assert_eq!(
        executor
            .execute_one(&call, &bound, None)
            .await
            .model_content(),
        "/bin/sh"
    );
    assert!(
        bound.extensions.get::<Binding>().is_some() && plain.extensions.get::<Binding>().is_none()
    );
}

#[test]
fn the_executor_and_its_futures_are_send_and_sync() {
    fn send_sync_clone<T: Send + Sync + Clone + std::fmt::Debug>() {}
    fn send<T: Send>(_: &T) {}
    send_sync_clone::<ToolExecutor>();
    let executor = ToolExecutor::new(ToolRegistry::new());
    let call = ToolUse::new("c", "x", json!({}));
    let ctx = ctx();
    send(&executor.execute_one(&call, &ctx, None));
    send(&executor.execute_many(std::slice::from_ref(&call), &ctx));
}

/// A panic that quotes huge input does not carry it to the model: the message is cut.
#[tokio::test]
async fn a_huge_panic_message_is_cut() {
    let registry = ToolRegistry::new();
    register(&registry, def("explode", &[Cap::Read]), |_, _| async {
        panic!("bad pattern: {}", "*".repeat(2_000_000))
    });
    let result = ToolExecutor::new(registry)
        .execute_one(&ToolUse::new("c1", "explode", json!({})), &ctx(), None)
        .await;
    assert_eq!(result.error_code(), Some(codes::TOOL_PANICKED));
    let message = result.model_content();
    assert!(
        message.chars().count() < 1_000,
        "{} chars",
        message.chars().count()
    );
    assert!(message.ends_with('…'), "{message}");
}
