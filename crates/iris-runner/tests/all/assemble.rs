//! Assembly: every YAML key with real parts (native command service, skills on disk,
//! command hooks, host functions, registrars and middleware).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use iris_executor::{Next, ToolMiddleware, ToolRequest};
use iris_runner::{
    AgentConfig, Error, HostRegistry, ToolEnvironment, build_tool_registry, check_config, codes,
};
use iris_tools_core::{
    BoxFuture, FnTool, ToolDefinition, ToolExecutionContext, ToolOutput, ToolRegistry, ToolResult,
    ToolUse,
};
use serde_json::{Value, json};

use crate::support::Fixture;

/// Extra files of a case: `(relative path, text)`.
type Files<'a> = &'a [(&'a str, &'a str)];

const SKILL: &str =
    "---\nname: greeting\ndescription: How to greet people politely.\n---\nSay hello first.\n";
const CATALOG: &str = "default: helper\nagents:\n  helper:\n    path: helper.yaml\n    description: Answers small questions.\n";

fn greet_tool() -> Arc<dyn iris_tools_core::Tool> {
    let def = ToolDefinition::new(
        "greet_user",
        "Greet the user by name.",
        json!({"type": "object", "properties": {"name": {"type": "string"}}}),
    );
    Arc::new(FnTool::new(def, |input: Value, _ctx| async move {
        ToolOutput::text(format!("hello {}", input["name"].as_str().unwrap_or("?")))
    }))
}

/// Adds `[tag]` in front of every result's text, so the chain order is visible.
struct Tag(String, Arc<AtomicUsize>);

impl ToolMiddleware for Tag {
    fn wrap_tool_call<'a>(&'a self, req: ToolRequest, next: Next<'a>) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            self.1.fetch_add(1, Ordering::SeqCst);
            let inner = next.run(req).await;
            ToolOutput::text(format!("[{}]{}", self.0, inner.model_content()))
        })
    }
}

fn host(calls: &Arc<AtomicUsize>) -> HostRegistry {
    let calls = Arc::clone(calls);
    HostRegistry::new()
        .function("app.tools:greet", greet_tool)
        .registrar("app.tools:register", |registry: &ToolRegistry| {
            let def = ToolDefinition::new("count_words", "Count words.", json!({"type": "object"}));
            registry
                .register(FnTool::new(def, |_i, _c| async { ToolOutput::text("3") }))
                .map_err(|e| e.to_string())
        })
        .registrar("app.tools:broken", |_r: &ToolRegistry| {
            Err("database offline".into())
        })
        .middleware("app.mw:tag", move |options: &Value| {
            let tag = options["tag"]
                .as_str()
                .ok_or("options.tag must be a string")?;
            Ok(Arc::new(Tag(tag.to_owned(), Arc::clone(&calls))) as Arc<dyn ToolMiddleware>)
        })
}

async fn build(fx: &Fixture, host: &HostRegistry) -> Result<ToolEnvironment, Error> {
    let loaded = AgentConfig::load_with_env(fx.file(), false)?;
    build_tool_registry(&loaded, host).await
}

async fn call(env: &ToolEnvironment, name: &str, input: Value) -> ToolResult {
    let ctx = ToolExecutionContext::new(&env.workspace).session_id("s-1");
    env.executor
        .execute_one(&ToolUse::new("call_1", name, input), &ctx, None)
        .await
}

/// Each row: YAML, extra files, the tool names the registry must hold, in order.
#[tokio::test]
async fn every_key_assembles_the_expected_tools() {
    let cases: &[(&str, Files, &[&str])] = &[
        ("{}\n", &[], &[]),
        (
            "tools:\n  builtin: [exec.command]\n",
            &[],
            &["exec_command"],
        ),
        (
            "tools:\n  builtin: [exec.python, exec.command]\n",
            &[],
            &["run_python", "exec_command"],
        ),
        (
            "tools:\n  builtin: [file.read, file.list, file.grep, file.write, file.edit, file.publish]\n",
            &[],
            &[
                "read_file",
                "list_files",
                "grep_search",
                "write_file",
                "edit_file",
                "publish_artifact",
            ],
        ),
        (
            "tools:\n  builtin: [web.search, web.fetch]\n",
            &[],
            &["web_search", "web_fetch", "store_secret"],
        ),
        (
            "tools:\n  builtin: [exec.command, file.read]\n  background: [exec_command]\n",
            &[],
            &["exec_command", "read_file"],
        ),
        ("tools:\n  builtin: [human.ask]\n", &[], &["ask_question"]),
        (
            "tools:\n  python:\n    functions: [app.tools:greet]\n    registrars: [app.tools:register]\n",
            &[],
            &["greet_user", "count_words"],
        ),
        (
            "skills:\n  enabled: true\n",
            &[(".agents/skills/greeting/SKILL.md", SKILL)],
            &["load_skill"],
        ),
        (
            "tools:\n  subagent: agents/catalog.yaml\n",
            &[("agents/catalog.yaml", CATALOG)],
            &["subagent"],
        ),
        (
            "decision:\n  path: decision.yaml\n",
            &[("decision.yaml", "model: jev-1.13.0\n")],
            &[],
        ),
        (
            "command:\n  mode: native\n  timeout_seconds: 5\ntools:\n  builtin: [exec.command]\n",
            &[],
            &["exec_command"],
        ),
        (
            "context_policy:\n  deferred_tools: true\n",
            &[],
            &["tool_search"],
        ),
    ];
    let calls = Arc::new(AtomicUsize::new(0));
    for (yaml, files, expect) in cases {
        let fx = Fixture::new(yaml, files);
        let env = build(&fx, &host(&calls))
            .await
            .unwrap_or_else(|e| panic!("{yaml}: {e}"));
        assert_eq!(env.registry.names(), *expect, "{yaml}");
        // `tools.background` marks exactly the tools it names.
        for tool in env.registry.tools() {
            let def = tool.definition();
            let listed = yaml.contains(&format!("background: [{}]", def.name));
            assert_eq!(def.background, listed, "{yaml}: {}", def.name);
        }
        env.close().await.unwrap();
    }
}

/// Each row: YAML, files, expected error code and a fragment of the message.
#[tokio::test]
async fn assembly_errors_name_the_key() {
    let cases: &[(&str, Files, &str, &str)] = &[
        (
            "mcp:\n  path: mcp.json\n",
            &[],
            codes::CONFIG_REFERENCE,
            "`mcp.path` -> ",
        ),
        (
            "mcp:\n  path: mcp.json\n",
            &[(
                "mcp.json",
                "{\"mcpServers\": {\"gone\": {\"command\": \"/nonexistent/iris-mcp-server\"}}}",
            )],
            codes::ASSEMBLY_FAILED,
            "`mcp`: ",
        ),
        (
            "context_policy:\n  deferred_tools: true\ndecision:\n  path: decision.yaml\n",
            &[("decision.yaml", "tools:\n  discovery: true\n")],
            codes::ASSEMBLY_FAILED,
            "`decision.tools.discovery`: DECISION_AUTH",
        ),
        (
            "tools:\n  python:\n    functions: [app.tools:nope]\n",
            &[],
            codes::HOST_KEY_UNKNOWN,
            "no function named `app.tools:nope` is registered by the host; registered: [app.tools:greet]",
        ),
        (
            "tools:\n  python:\n    registrars: [app.tools:broken]\n",
            &[],
            codes::HOST_FAILED,
            "`tools.python.registrars[0]`: database offline",
        ),
        (
            "middleware:\n  tools:\n    - factory: app.mw:tag\n",
            &[],
            codes::HOST_FAILED,
            "options.tag must be a string",
        ),
        (
            "middleware:\n  tools:\n    - factory: app.mw:other\n",
            &[],
            codes::HOST_KEY_UNKNOWN,
            "`middleware.tools[0].factory`",
        ),
        (
            "skills:\n  enabled: true\n  require: [pdf]\n",
            &[(".agents/skills/greeting/SKILL.md", SKILL)],
            codes::ASSEMBLY_FAILED,
            "SKILL_REQUIRED_MISSING",
        ),
        (
            "tools:\n  subagent: missing.yaml\n",
            &[],
            codes::CONFIG_REFERENCE,
            "`tools.subagent` -> ",
        ),
        (
            "decision:\n  path: decision.yaml\n",
            &[("decision.yaml", "tools:\n  discovery: true\n")],
            codes::CONFIG_REFERENCE,
            "context_policy.deferred_tools",
        ),
        (
            "decision:\n  path: decision.yaml\n",
            &[("decision.yaml", "memory:\n  recall: true\n")],
            codes::FEATURE_UNAVAILABLE,
            "`decision.memory.recall`: ",
        ),
        (
            "hooks:\n  - name: x\n    event: tool.sideways\n    handler: {type: command, command: 'true'}\n",
            &[],
            codes::ASSEMBLY_FAILED,
            "unknown event `tool.sideways`",
        ),
        (
            "hooks:\n  - name: x\n    event: tool.after\n    handler: {type: python, factory: 'a:b'}\n",
            &[],
            codes::HOST_KEY_UNKNOWN,
            "`hooks[0].handler.factory`: no hook factory named `a:b`",
        ),
        (
            "tools:\n  builtin: [greet]\n",
            &[],
            codes::CONFIG_INVALID,
            "expected one of `file.read`",
        ),
        (
            "tools:\n  builtin: [file.read]\n  background: [exec_command]\n",
            &[],
            codes::ASSEMBLY_FAILED,
            "`tools.background[0]`: `exec_command` is not a built-in or host-function tool",
        ),
        (
            "tools:\n  builtin: [human.ask]\n  background: [ask_question]\n",
            &[],
            codes::ASSEMBLY_FAILED,
            "loop tools such as ask_question never run in the background",
        ),
        (
            "tools:\n  builtin: [web.search]\nweb: {base_url: \"ftp://example.test\"}\n",
            &[],
            codes::ASSEMBLY_FAILED,
            "`web.base_url`: WEB_CONFIG_INVALID",
        ),
        (
            "tools:\n  builtin: [web.search]\nweb: {timeout_seconds: -1}\n",
            &[],
            codes::ASSEMBLY_FAILED,
            "`web.timeout_seconds`",
        ),
        (
            "heartbeat_seconds: -2\n",
            &[],
            codes::ASSEMBLY_FAILED,
            "`heartbeat_seconds`: must be a number of seconds ≥ 0, not -2",
        ),
    ];
    let calls = Arc::new(AtomicUsize::new(0));
    for (yaml, files, code, fragment) in cases {
        let fx = Fixture::new(yaml, files);
        let err = build(&fx, &host(&calls))
            .await
            .err()
            .unwrap_or_else(|| panic!("{yaml}: built"));
        assert_eq!(err.code(), *code, "{yaml}: {err}");
        assert!(err.to_string().contains(fragment), "{yaml}: {err}");
    }
}

/// `check_config` lists every problem at once, in a stable order.
#[test]
fn check_config_lists_every_problem() {
    let fx = Fixture::new(
        "tools:\n  builtin: [file.read, exec.command]\n  python:\n    functions: [x:y]\n  subagent: none.yaml\nmcp:\n  path: mcp.json\nmiddleware:\n  tools:\n    - factory: m:n\nskills:\n  enabled: true\n",
        &[],
    );
    let loaded = AgentConfig::load_with_env(fx.file(), false).unwrap();
    let problems = check_config(&loaded, &HostRegistry::new());
    let text: Vec<String> = problems
        .iter()
        .map(|e| fx.redact(&format!("{}: {e}", e.code())))
        .collect();
    insta::assert_snapshot!(text.join("\n"));
}

/// The whole executor path: host function, middleware first-outermost, command hook
/// feedback, permissions from the YAML.
#[tokio::test]
async fn executor_runs_hooks_middleware_and_permissions() {
    let yaml = "tools:\n  builtin: [exec.command]\n  python:\n    functions: [app.tools:greet]\npermissions:\n  execute_mode: deny\nmiddleware:\n  tools:\n    - {factory: app.mw:tag, options: {tag: outer}}\n    - {factory: app.mw:tag, options: {tag: inner}}\nhooks:\n  - name: note\n    event: tool.after\n    tools: [greet_user]\n    handler: {type: command, command: \"echo '{\\\"feedback\\\": \\\"seen\\\"}'\"}\n";
    let fx = Fixture::new(yaml, &[]);
    let calls = Arc::new(AtomicUsize::new(0));
    let env = build(&fx, &host(&calls)).await.unwrap();

    let greeted = call(&env, "greet_user", json!({"name": "Ada"})).await;
    assert!(!greeted.is_error(), "{greeted:?}");
    assert_eq!(greeted.model_content(), "[outer][inner]hello Ada\nseen");
    assert_eq!(calls.load(Ordering::SeqCst), 2);

    let denied = call(&env, "exec_command", json!({"command": "echo hi"})).await;
    assert_eq!(denied.error_code(), Some("PERMISSION_DENIED"));

    env.close().await.unwrap();
    env.close().await.unwrap();
    let after = call(&env, "greet_user", json!({"name": "Ada"})).await;
    // The hook's command service is closed: the after hook fails, the call itself does not.
    assert!(!after.is_error(), "{after:?}");
    assert!(env.command.as_ref().unwrap().is_closed());
}

/// A command hook can deny a call before it runs.
#[tokio::test]
async fn command_hook_denies_before_the_body() {
    let yaml = "tools:\n  builtin: [exec.command]\npermissions:\n  execute_mode: allow\nhooks:\n  - name: no-rm\n    event: tool.before\n    handler: {type: command, command: \"echo '{\\\"deny_reason\\\": \\\"not today\\\"}'\"}\n";
    let fx = Fixture::new(yaml, &[]);
    let env = build(&fx, &HostRegistry::new()).await.unwrap();
    let result = call(&env, "exec_command", json!({"command": "echo hi"})).await;
    assert_eq!(result.error_code(), Some("HOOK_DENIED"));
    assert!(result.model_content().contains("not today"));
    env.close().await.unwrap();
}

/// Command hooks are the owner's policy and run on the host, never in the agent's
/// container: in Docker mode (a real engine) a `tool.before` hook, run in the
/// workspace, writes its folder to a marker in a host folder the container does not
/// mount — in the container it could not, and the call would be denied — while the
/// call itself runs in the container, which does not see the marker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn command_hooks_run_on_the_host_in_docker_mode() {
    let outside = tempfile::tempdir().unwrap();
    let marker = outside.path().join("hook-ran");
    let yaml = format!(
        "tools:\n  builtin: [exec.command]\npermissions:\n  execute_mode: allow\n\
         command:\n  mode: docker\nhooks:\n  - name: where\n    event: tool.before\n    \
         handler: {{type: command, command: \"pwd > {} && test -f iris.yaml && echo '{{}}'\"}}\n",
        marker.display()
    );
    let fx = Fixture::new(&yaml, &[]);
    let env = build(&fx, &HostRegistry::new()).await.unwrap();
    let probe = format!("test ! -e {} && echo in-container", marker.display());
    let result = call(&env, "exec_command", json!({ "command": probe })).await;
    assert!(!result.is_error(), "{result:?}");
    assert!(
        result.model_content().contains("in-container"),
        "{result:?}"
    );
    let ran_in = std::fs::read_to_string(&marker).expect("the hook did not run on the host");
    assert_eq!(
        ran_in.trim(),
        fx.root().canonicalize().unwrap().to_str().unwrap()
    );
    env.close().await.unwrap();
    assert!(env.command.as_ref().unwrap().is_closed());
}

/// A decision config that enables no junction is loaded and checked, and the notes
/// say that nothing asks the decision model; one that enables discovery has no such
/// note.
#[tokio::test]
async fn a_decision_config_that_enables_nothing_is_a_note() {
    let fx = Fixture::new(
        "decision:\n  path: decision.yaml\n",
        &[("decision.yaml", "model: jev-1.13.0\n")],
    );
    let env = build(&fx, &HostRegistry::new()).await.unwrap();
    // The host sees the loaded decision file: its model, and that no junction is on.
    let decision = env.decision.as_ref().unwrap();
    assert_eq!(decision.model, "jev-1.13.0");
    assert!(!decision.tools.discovery);
    assert!(env.decision_evaluator.is_none());
    assert_eq!(env.notes.len(), 1, "{:?}", env.notes);
    assert!(
        env.notes[0].starts_with("decision.path: ")
            && env.notes[0].contains("nothing asks the decision model"),
        "{:?}",
        env.notes
    );
    env.close().await.unwrap();
}

/// Skills: `load_skill` reads the discovered skill; the note for accepted-but-skipped
/// keys is recorded.
#[tokio::test]
async fn skills_and_notes() {
    let fx = Fixture::new(
        "skills:\n  enabled: true\ntools:\n  builtin: [human.ask]\n  subagent: catalog.yaml\n",
        &[
            (".agents/skills/greeting/SKILL.md", SKILL),
            ("catalog.yaml", CATALOG),
        ],
    );
    let env = build(&fx, &HostRegistry::new()).await.unwrap();
    let loaded = call(&env, "load_skill", json!({"name": "greeting"})).await;
    assert!(
        loaded.model_content().contains("Say hello first."),
        "{loaded:?}"
    );
    assert_eq!(env.skills.as_ref().unwrap().names(), vec!["greeting"]);
    assert_eq!(env.subagents.as_ref().unwrap().default_selector(), "helper");
    // The catalog installs `subagent` (a root with subagents holds the command
    // service its children borrow); nothing is left out, so no note.
    assert!(env.registry.names().contains(&"subagent".to_owned()));
    assert!(env.command.is_some());
    assert!(env.notes.is_empty(), "{:?}", env.notes);
    env.close().await.unwrap();
}

/// `context_policy.discovery`: `local` spelled out assembles `tool_search`; anything
/// but the default needs `deferred_tools`; `decision` needs the decision model;
/// `hybrid` names missing model files (or, without the `embed` feature, the missing
/// feature) in `check_config` and fails assembly with the discovery code.
#[tokio::test]
async fn context_policy_discovery_chooses_the_tool_search_backend() {
    let fx = Fixture::new(
        "context_policy: {deferred_tools: true, discovery: {backend: local}}\n",
        &[],
    );
    let env = build(&fx, &HostRegistry::new()).await.unwrap();
    assert!(env.registry.names().contains(&"tool_search".to_owned()));
    env.close().await.unwrap();

    let fx = Fixture::new(
        "context_policy: {discovery: {backend: hybrid, model_path: m}}\n",
        &[],
    );
    let err = AgentConfig::load_with_env(fx.file(), false).unwrap_err();
    assert_eq!(err.code(), "CONFIG_INVALID");
    assert!(
        err.to_string()
            .contains("requires context_policy.deferred_tools"),
        "{err}"
    );

    let fx = Fixture::new(
        "context_policy: {deferred_tools: true, discovery: {backend: decision}}\n",
        &[],
    );
    let err = build(&fx, &HostRegistry::new()).await.unwrap_err();
    assert_eq!(err.code(), "ASSEMBLY_FAILED");
    assert!(
        err.to_string().contains("decision.tools.discovery"),
        "{err}"
    );

    let fx = Fixture::new(
        "context_policy: {deferred_tools: true, discovery: {backend: hybrid, model_path: no-model}}\n",
        &[],
    );
    let loaded = AgentConfig::load_with_env(fx.file(), false).unwrap();
    let problems = iris_runner::check_config(&loaded, &HostRegistry::new());
    let text = problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n");
    let expected = if cfg!(feature = "embed") {
        "MODEL_MISSING"
    } else {
        "embed"
    };
    assert!(
        text.contains("context_policy.discovery") && text.contains(expected),
        "{text}"
    );
    let err = build(&fx, &HostRegistry::new()).await.unwrap_err();
    assert!(
        err.to_string().contains("context_policy.discovery"),
        "{err}"
    );
}

/// A `tools.script.callable` name no tool has is said in the notes (`iris check`
/// prints them), not silently ignored; a real one is not.
#[tokio::test]
async fn unknown_script_callable_names_are_noted() {
    let fx = Fixture::new(
        "tools:\n  builtin: [exec.tool_script, file.write]\n  script: {callable: [write_file, wirte_file]}\n",
        &[],
    );
    let calls = Arc::new(AtomicUsize::new(0));
    let env = build(&fx, &host(&calls)).await.unwrap();
    let noted: Vec<&String> = env
        .notes
        .iter()
        .filter(|n| n.starts_with("tools.script.callable"))
        .collect();
    assert_eq!(
        noted,
        ["tools.script.callable[1]: no tool is named `wirte_file`; scripts cannot call it"]
    );
    env.close().await.unwrap();
}

/// Rust host tools are `tools.host`; the older `tools.python` is still read, with a
/// note (which `iris check` prints), and errors name the key as the YAML spelled it.
#[tokio::test]
async fn tools_host_is_the_name_and_tools_python_an_alias_with_a_note() {
    let calls = Arc::new(AtomicUsize::new(0));
    for (key, noted) in [("host", false), ("python", true)] {
        let fx = Fixture::new(
            &format!("tools:\n  {key}:\n    functions: [app.tools:greet]\n"),
            &[],
        );
        let env = build(&fx, &host(&calls)).await.unwrap();
        assert_eq!(env.registry.names(), ["greet_user"], "{key}");
        let note = env.notes.iter().any(|n| n.starts_with("tools.python: "));
        assert_eq!(note, noted, "{key}: {:?}", env.notes);
        env.close().await.unwrap();
        let fx = Fixture::new(&format!("tools:\n  {key}:\n    functions: [x:y]\n"), &[]);
        let err = build(&fx, &host(&calls)).await.unwrap_err();
        assert!(
            err.to_string()
                .contains(&format!("`tools.{key}.functions[0]`")),
            "{err}"
        );
    }
}
