//! Scripts against real tools, natively.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use iris_executor::ToolExecutor;
use iris_hooks::{HookDispatcher, HookEventKind, HookRegistration, HookResult};
use iris_script::ScriptCallable;
use iris_tools_core::{FnTool, ToolCapability, ToolDefinition, ToolOutput};
use serde_json::json;

use crate::support::{Env, gone};

/// A read-only tool that sleeps and records how many of its calls overlapped.
fn probe(active: Arc<AtomicUsize>, peak: Arc<AtomicUsize>) -> impl iris_tools_core::Tool + use<> {
    let def = ToolDefinition::new(
        "probe",
        "Wait a little and echo the key.",
        json!({"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}),
    )
    .with_capabilities([ToolCapability::Read]);
    FnTool::new(def, move |input, _ctx| {
        let (active, peak) = (Arc::clone(&active), Arc::clone(&peak));
        async move {
            let now = active.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(300)).await;
            active.fetch_sub(1, Ordering::SeqCst);
            ToolOutput::text(input["key"].as_str().unwrap_or("").to_owned())
        }
    })
}

/// `(call_id, parent_call_id, tool_name)` of one hook event.
type HookSeen = (String, Option<String>, String);

const SUMMARIZE: &str = r#"
import iris_tools
from concurrent.futures import ThreadPoolExecutor

listing = iris_tools.list_files(path="src", pattern="**/*.txt")
paths = sorted(line.strip() for line in listing.text.splitlines() if line.strip().endswith(".txt"))

def grep(path):
    try:
        hits = iris_tools.grep_search(pattern="TODO", path=path)
    except iris_tools.ToolError as e:
        return path, e.code
    return path, hits.data["total_matches"]

with ThreadPoolExecutor(max_workers=8) as pool:
    results = list(pool.map(grep, paths))
    echoed = list(pool.map(lambda k: iris_tools.probe(key=k).text, ["a", "b", "c", "d"]))

matching = [p for p, total in results if total]
print(f"{len(paths)} files, {len(matching)} with TODO:")
for p in sorted(matching, key=lambda p: p.split("/")[-1]):
    print(" ", p.split("/")[-1])
print("".join(echoed))
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_lists_greps_and_summarizes_a_tree_with_parallel_inner_calls() {
    let env = Env::native(ScriptCallable::default()).await;
    for i in 0..12 {
        let body = if i % 4 == 1 {
            "fix this\nTODO: later\n"
        } else {
            "all done\n"
        };
        env.write(&format!("src/part{}/file{i:02}.txt", i % 3), body);
    }
    let (active, peak) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    env.register(probe(active, Arc::clone(&peak)));
    let executor = ToolExecutor::new(env.registry.clone());
    let result = env.script(&executor, SUMMARIZE, Some(60.0)).await;
    assert!(!result.is_error(), "{}", result.model_content());
    assert_eq!(
        result.model_content(),
        "12 files, 3 with TODO:\n  file01.txt\n  file05.txt\n  file09.txt\nabcd\n"
    );
    let calls = &result.output.data["calls"];
    assert_eq!(calls["count"], 1 + 12 + 4);
    assert_eq!(calls["names"][0], "list_files");
    assert_eq!(calls["errors"], json!([]));
    // The four probe calls came from a thread pool: the host ran them side by side.
    assert!(
        peak.load(Ordering::SeqCst) > 1,
        "inner calls ran one at a time"
    );
    // The channel's socket is gone with the call.
    let left: Vec<_> = std::fs::read_dir(env.root().join(".iris/script"))
        .unwrap()
        .collect();
    assert!(left.is_empty(), "{left:?}");
    env.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_before_hook_denies_an_inner_call_and_sees_the_parent_call_id() {
    let env = Env::native(ScriptCallable::default()).await;
    env.write("secret.txt", "do not read");
    let seen: Arc<Mutex<Vec<HookSeen>>> = Arc::default();
    let record = Arc::clone(&seen);
    let hook = HookRegistration::builder(
        HookEventKind::ToolBefore,
        "no-reads",
        move |event: iris_hooks::HookEvent| {
            let record = Arc::clone(&record);
            async move {
                let wire = event.to_json();
                record.lock().unwrap().push((
                    wire["call_id"].as_str().unwrap_or("").to_owned(),
                    wire["parent_call_id"].as_str().map(str::to_owned),
                    wire["tool_name"].as_str().unwrap_or("").to_owned(),
                ));
                if event.tool_name() == Some("read_file") {
                    Ok(HookResult::deny("reads are off today"))
                } else {
                    Ok(HookResult::None)
                }
            }
        },
    )
    .build()
    .unwrap();
    let executor = ToolExecutor::new(env.registry.clone())
        .with_hook_dispatcher(HookDispatcher::new(vec![hook]));
    let code = r#"
import iris_tools
try:
    iris_tools.read_file(file_path="secret.txt")
    print("read it")
except iris_tools.ToolError as e:
    print(e.code, "|", e.message)
"#;
    let result = env.script(&executor, code, None).await;
    assert_eq!(
        result.model_content(),
        "HOOK_DENIED | hook `no-reads` denied the call: reads are off today\n"
    );
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        vec![
            ("call_1".to_owned(), None, "run_tool_script".to_owned()),
            (
                "call_1_s1".to_owned(),
                Some("call_1".to_owned()),
                "read_file".to_owned()
            ),
        ]
    );
    assert_eq!(
        result.output.data["calls"]["errors"],
        json!([{"call_id": "call_1_s1", "tool": "read_file", "code": "HOOK_DENIED"}])
    );
    env.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_mid_inner_call_kills_the_program_and_cancels_the_call() {
    // exec_command is not read-only: the YAML list (here the rule) admits it.
    let env = Env::native(ScriptCallable::listing(["exec_command"])).await;
    let executor = ToolExecutor::new(env.registry.clone());
    let code = r#"
import os, iris_tools
open("script.pid", "w").write(str(os.getpid()))
iris_tools.exec_command(command="echo $$ > inner.pid; exec sleep 60")
print("never")
"#;
    let result = env.script(&executor, code, Some(2.0)).await;
    assert_eq!(
        result.error_code(),
        Some("COMMAND_TIMEOUT"),
        "{}",
        result.model_content()
    );
    assert!(!result.model_content().contains("never"));
    let script_pid: i64 = std::fs::read_to_string(env.root().join("script.pid"))
        .unwrap()
        .parse()
        .unwrap();
    let inner_pid: i64 = std::fs::read_to_string(env.root().join("inner.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        gone(script_pid).await,
        "the program {script_pid} is still running"
    );
    assert!(
        gone(inner_pid).await,
        "the inner command {inner_pid} is still running"
    );
    let calls = &result.output.data["calls"];
    assert_eq!(calls["names"], json!(["exec_command"]));
    assert_eq!(calls["errors"][0]["tool"], "exec_command");
    env.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_flooding_stdout_becomes_an_artifact() {
    let env = Env::native(ScriptCallable::default()).await;
    let executor = ToolExecutor::new(env.registry.clone());
    let code = "for i in range(20000):\n    print(f'line {i:05d} ' + 'x' * 20)\n";
    let result = env.script(&executor, code, None).await;
    assert!(!result.is_error(), "{}", result.model_content());
    let artifact = result
        .output
        .artifact
        .as_ref()
        .expect("a long body is saved");
    let saved = std::fs::read_to_string(env.root().join(&artifact.path)).unwrap();
    assert_eq!(saved.lines().count(), 20000);
    assert!(saved.ends_with("line 19999 xxxxxxxxxxxxxxxxxxxx\n"));
    assert!(result.model_content().chars().count() < 10_000);
    env.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripts_cannot_call_themselves_or_tools_that_are_not_callable() {
    let env = Env::native(ScriptCallable::default()).await;
    let executor = ToolExecutor::new(env.registry.clone());
    let code = r#"
import iris_tools
print(sorted(n for n in iris_tools.TOOLS))
print(hasattr(iris_tools, "run_tool_script"), hasattr(iris_tools, "write_file"))
for name in ["run_tool_script", "write_file", "ask_question"]:
    try:
        iris_tools.call(name, code="print(1)")
    except iris_tools.ToolError as e:
        print(name, e.code)
"#;
    let result = env.script(&executor, code, None).await;
    assert_eq!(
        result.model_content(),
        "['grep_search', 'list_files', 'read_file']\nFalse False\n\
         run_tool_script SCRIPT_CALL_REFUSED\nwrite_file SCRIPT_CALL_REFUSED\nask_question SCRIPT_CALL_REFUSED\n"
    );
    env.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_program_shows_its_traceback_and_bad_input_is_refused() {
    let env = Env::native(ScriptCallable::default()).await;
    let executor = ToolExecutor::new(env.registry.clone());
    let result = env
        .script(
            &executor,
            "print('before')\nraise ValueError('boom')\n",
            None,
        )
        .await;
    assert_eq!(result.error_code(), Some("COMMAND_FAILED"));
    let text = result.model_content();
    assert!(text.contains("before\n[stderr]\n"), "{text}");
    assert!(text.contains("File \"<script>\", line 2"), "{text}");
    assert!(text.contains("ValueError: boom"), "{text}");

    let call = iris_tools_core::ToolUse::new("c", "run_tool_script", json!({"code": "  "}));
    let blank = executor.execute_one(&call, &env.ctx(&executor), None).await;
    assert_eq!(blank.error_code(), Some("INVALID_INPUT"));
    // Without an executor on the context there is nothing to run inner calls with.
    let bare = iris_tools_core::ToolExecutionContext::new(env.root());
    let call = iris_tools_core::ToolUse::new("c", "run_tool_script", json!({"code": "print(1)"}));
    let missing = executor.execute_one(&call, &bare, None).await;
    assert_eq!(missing.error_code(), Some("SCRIPT_HOST_MISSING"));
    env.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deferred_tool_becomes_callable_once_revealed() {
    let env = Env::native(ScriptCallable::default()).await;
    let def = ToolDefinition::new(
        "hidden_lookup",
        "Look a key up.",
        json!({"type": "object", "properties": {"key": {"type": "string"}}}),
    )
    .with_capabilities([ToolCapability::Read])
    .with_deferred(true);
    env.register(FnTool::new(def, |_, _| async { ToolOutput::text("found") }));
    let executor = ToolExecutor::new(env.registry.clone());
    let code = "import iris_tools\nprint('hidden_lookup' in iris_tools.TOOLS)\n";
    let before = env.script(&executor, code, None).await;
    assert_eq!(before.model_content(), "False\n");

    let state = iris_discovery::DisclosureState::from_revealed(["hidden_lookup"]);
    let ctx = state.attach(env.ctx(&executor));
    let call = iris_tools_core::ToolUse::new(
        "call_1",
        "run_tool_script",
        json!({"code": "import iris_tools\nprint(iris_tools.hidden_lookup(key='k').text)\n"}),
    );
    let after = executor.execute_one(&call, &ctx, None).await;
    assert_eq!(after.model_content(), "found\n");
    env.close().await;
}

#[test]
fn the_definition_follows_the_tool_design_rules() {
    let def = iris_script::run_tool_script_definition();
    def.validate().unwrap();
    assert_eq!(iris_providers::lint::lint_definition(&def), vec![]);
    let (lines, chars) = (
        def.description.lines().count(),
        def.description.chars().count(),
    );
    assert!(
        lines == 3 && (60..=200).contains(&chars),
        "{lines} lines, {chars} chars"
    );
    assert_eq!(def.group, "core");
    assert_eq!(
        def.capabilities.iter().collect::<Vec<_>>(),
        [&ToolCapability::Execute]
    );
    assert_eq!(def.script_callable, Some(false));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_channel_token_is_not_in_the_programs_command_line() {
    let env = Env::native(ScriptCallable::default()).await;
    let executor = ToolExecutor::new(env.registry.clone());
    let code = "import iris_tools\ncmdline = open('/proc/self/cmdline', 'rb').read().decode()\n\
                print(len(iris_tools._TOKEN), iris_tools._TOKEN in cmdline)\n";
    let result = env.script(&executor, code, None).await;
    assert_eq!(result.model_content(), "32 False\n");
    env.close().await;
}

/// A read-only tool that answers with the arguments it received, keys sorted.
fn echo_args(name: &str, properties: serde_json::Value) -> impl iris_tools_core::Tool + use<> {
    let def = ToolDefinition::new(
        name,
        "Echo the arguments.",
        json!({"type": "object", "properties": properties}),
    )
    .with_capabilities([ToolCapability::Read]);
    FnTool::new(def, |input, _ctx| async move {
        ToolOutput::text(serde_json::to_string(&input).unwrap_or_default())
    })
}

/// Properties named like the module's own helpers (`extra`, `call`) are ordinary
/// parameters: the generated functions use underscore names for their internals, so
/// the module still compiles and the calls still reach the host.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn properties_named_like_the_modules_internals_are_plain_parameters() {
    let env = Env::native(ScriptCallable::default()).await;
    // `type` is a soft keyword: it goes through `**_extra`, next to `extra`.
    env.register(echo_args(
        "tag",
        json!({"extra": {"type": "string"}, "type": {"type": "string"}}),
    ));
    env.register(echo_args("dial", json!({"call": {"type": "string"}})));
    let executor = ToolExecutor::new(env.registry.clone());
    let code = r#"
import iris_tools
print(iris_tools.tag(extra="e", **{"type": "t"}).text)
print(iris_tools.dial(call="c").text)
"#;
    let result = env.script(&executor, code, None).await;
    assert_eq!(
        result.model_content(),
        "{\"extra\":\"e\",\"type\":\"t\"}\n{\"call\":\"c\"}\n"
    );
    assert_eq!(result.output.data["calls"]["names"], json!(["tag", "dial"]));
    env.close().await;
}

/// A program opening more connections than the host serves at once still gets every
/// answer: the extra ones wait for a free slot, so at most
/// `MAX_CONCURRENT_CALLS` inner calls (and request buffers) are live at a time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_limit_wait_for_a_free_slot() {
    let env = Env::native(ScriptCallable::default()).await;
    let (active, peak) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    env.register(probe(active, Arc::clone(&peak)));
    let executor = ToolExecutor::new(env.registry.clone());
    let calls = iris_script::MAX_CONCURRENT_CALLS * 2 + 8;
    let code = format!(
        r#"
import iris_tools
from concurrent.futures import ThreadPoolExecutor
keys = [str(i) for i in range({calls})]
with ThreadPoolExecutor(max_workers={calls}) as pool:
    echoed = list(pool.map(lambda k: iris_tools.probe(key=k).text, keys))
print(echoed == keys, len(echoed))
"#
    );
    let result = env.script(&executor, &code, Some(60.0)).await;
    assert_eq!(result.model_content(), format!("True {calls}\n"));
    assert_eq!(result.output.data["calls"]["count"], calls);
    assert_eq!(result.output.data["calls"]["errors"], json!([]));
    assert_eq!(
        peak.load(Ordering::SeqCst),
        iris_script::MAX_CONCURRENT_CALLS,
        "the host served more (or fewer) connections at once than its limit"
    );
    env.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_mode_runs_in_the_sandbox_and_keeps_its_channel() {
    let env = Env::native(ScriptCallable::default()).await;
    env.write("notes.txt", "kept\n");
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("escaped.txt");
    let executor = ToolExecutor::new(env.registry.clone());
    let code = format!(
        r#"
import iris_tools, socket
try:
    open({target:?}, "w").write("x")
    print("wrote outside")
except OSError as e:
    print("write refused", e.errno)
try:
    socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    print("socket opened")
except OSError as e:
    print("socket refused", e.errno)
print(len(iris_tools.call("list_files", path=".").text) > 0)
"#,
        target = target.display().to_string()
    );
    let result = env.script(&executor, &code, Some(60.0)).await;
    assert!(!result.is_error(), "{}", result.model_content());
    assert_eq!(
        result.model_content(),
        "write refused 13\nsocket refused 1\nTrue\n"
    );
    assert!(!target.exists());
    env.close().await;
}
