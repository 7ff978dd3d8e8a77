//! The same scripts in a Docker container: the socket lives in the mounted workspace,
//! the program runs on the image's python3.

use iris_executor::ToolExecutor;
use iris_script::ScriptCallable;
use serde_json::json;

use crate::support::Env;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docker_scripts_call_tools_time_out_and_flood_like_native_ones() {
    let env = Env::docker(ScriptCallable::listing(["exec_command"])).await;
    env.write("src/a.txt", "TODO one\n");
    env.write("src/b.txt", "nothing\n");
    let executor = ToolExecutor::new(env.registry.clone());
    let code = r#"
import iris_tools, os, threading
# The offline image's python3-minimal has neither json nor concurrent.futures: the
# module falls back to its own encoder, and the script uses plain threads.
paths = [l for l in iris_tools.list_files(path="src").text.splitlines() if l.endswith(".txt")]
hits = {}
def grep(p):
    hits[p] = iris_tools.grep_search(pattern="TODO", path=p).data["total_matches"]
threads = [threading.Thread(target=grep, args=(p,)) for p in paths]
for t in threads: t.start()
for t in threads: t.join()
print(os.path.exists("/.dockerenv"), sum(1 for v in hits.values() if v), "of", len(paths))
"#;
    let result = env.script(&executor, code, Some(60.0)).await;
    assert!(!result.is_error(), "{}", result.model_content());
    assert_eq!(result.model_content(), "True 1 of 2\n");
    assert_eq!(result.output.data["mode"], "docker");
    assert_eq!(result.output.data["calls"]["count"], 3);

    // A timeout while an inner command runs: the program and the inner command die.
    let slow =
        "import iris_tools\niris_tools.list_files()\niris_tools.exec_command(command='sleep 61')\n";
    let timed_out = env.script(&executor, slow, Some(2.0)).await;
    assert_eq!(timed_out.error_code(), Some("COMMAND_TIMEOUT"));
    assert_eq!(
        timed_out.output.data["calls"]["names"],
        json!(["list_files", "exec_command"])
    );
    let ps = iris_tools_core::ToolUse::new(
        "ps",
        "exec_command",
        json!({"command": "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done | grep -c 'slee[p] 61' || true"}),
    );
    let left = executor.execute_one(&ps, &env.ctx(&executor), None).await;
    assert_eq!(
        left.model_content(),
        "0\n",
        "processes left in the container"
    );

    let flood = "print('y' * 120000)\n";
    let flooded = env.script(&executor, flood, None).await;
    assert!(flooded.output.artifact.is_some());

    let recurse = "import iris_tools\ntry:\n    iris_tools.call('run_tool_script', code='1')\nexcept iris_tools.ToolError as e:\n    print(e.code)\n";
    let refused = env.script(&executor, recurse, None).await;
    assert_eq!(refused.model_content(), "SCRIPT_CALL_REFUSED\n");
    env.close().await;
}
