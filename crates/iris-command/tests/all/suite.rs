//! The behavioural suite, written once and run for both backends (see `native.rs` and
//! `docker.rs`, which instantiate every function here).

use std::time::Duration;

use iris_command::{
    CommandBinding, CommandError, CommandRequest, CommandService, CommandStatus, ExecCommandTool,
    RunPythonTool, StreamStats,
};
use iris_tools_core::{CancellationSignal, Tool, ToolExecutionContext, ToolInput};
use serde_json::json;

use crate::support::{Backend, Harness, tree_script};

/// One shell case: command → (status, exit code, stdout, stderr).
async fn check_shell(h: &Harness, command: &str, expect: (CommandStatus, Option<i32>, &str, &str)) {
    let outcome = h.sh(command).await;
    let got = (
        outcome.status,
        outcome.exit_code,
        outcome.stdout.as_str(),
        outcome.stderr.as_str(),
    );
    assert_eq!(got, expect, "{command}");
    assert_eq!(outcome.mode, h.backend.mode());
    assert!(!outcome.output_truncated, "{command}");
}

pub(crate) async fn output_and_exit_codes(b: Backend) {
    use CommandStatus::Exited;
    let h = Harness::new(b).await;
    check_shell(&h, "echo hello", (Exited, Some(0), "hello\n", "")).await;
    check_shell(
        &h,
        "echo out; echo err >&2; exit 3",
        (Exited, Some(3), "out\n", "err\n"),
    )
    .await;
    check_shell(&h, "true", (Exited, Some(0), "", "")).await;
    check_shell(&h, "exit 255", (Exited, Some(255), "", "")).await;
    check_shell(
        &h,
        "printf 'no newline'",
        (Exited, Some(0), "no newline", ""),
    )
    .await;
    check_shell(&h, "printf 'caf\\303\\251'", (Exited, Some(0), "café", "")).await;
    check_shell(&h, "printf '\\377'", (Exited, Some(0), "\u{FFFD}", "")).await;
    check_shell(
        &h,
        "echo a | tr a b && echo c",
        (Exited, Some(0), "b\nc\n", ""),
    )
    .await;
    check_shell(
        &h,
        "no-such-command-xyz 2>/dev/null",
        (Exited, Some(127), "", ""),
    )
    .await;
    h.close().await;
}

pub(crate) async fn runs_in_the_workspace_with_the_same_path(b: Backend) {
    let h = Harness::new(b).await;
    std::fs::create_dir_all(h.path("sub/dir")).expect("dirs");
    let outcome = h.sh("pwd; echo written > made-here.txt").await;
    assert_eq!(outcome.stdout.trim_end(), h.root.to_string_lossy());
    // Docker mounts the workspace at the same path: the file lands on the host.
    assert_eq!(
        std::fs::read_to_string(h.path("made-here.txt")).expect("file"),
        "written\n"
    );
    let nested = h
        .service
        .execute(
            &Harness::scope("cwd"),
            CommandRequest::shell("c", "pwd", "sub/dir"),
        )
        .await
        .expect("runs");
    assert_eq!(
        nested.stdout.trim_end(),
        h.path("sub/dir").to_string_lossy()
    );
    assert_eq!(nested.cwd, h.path("sub/dir"));
    h.close().await;
}

pub(crate) async fn python_runs_in_the_backend_interpreter(b: Backend) {
    let h = Harness::new(b).await;
    let cases: &[(&str, Option<i32>, &str, &str)] = &[
        ("import sys\nprint(sys.version_info[0])", Some(0), "3\n", ""),
        ("print('a'); raise SystemExit(4)", Some(4), "a\n", ""),
        ("import os\nprint(os.getcwd())", Some(0), "", ""),
        (
            "import sys\nsys.stderr.write('warn\\n')",
            Some(0),
            "",
            "warn\n",
        ),
    ];
    for (code, exit, stdout, stderr) in cases {
        let outcome = h
            .service
            .execute(
                &Harness::scope("py"),
                CommandRequest::python("py", *code, "."),
            )
            .await
            .expect("python runs");
        assert_eq!(outcome.status, CommandStatus::Exited, "{code}");
        assert_eq!(outcome.exit_code, *exit, "{code}: {outcome:?}");
        if code.contains("getcwd") {
            assert_eq!(outcome.stdout.trim_end(), h.root.to_string_lossy());
        } else {
            assert_eq!(outcome.stdout, *stdout, "{code}");
        }
        assert_eq!(outcome.stderr, *stderr, "{code}");
    }
    let syntax = h
        .service
        .execute(
            &Harness::scope("py"),
            CommandRequest::python("py", "def (", "."),
        )
        .await
        .expect("python runs");
    assert_eq!(syntax.exit_code, Some(1));
    assert!(syntax.stderr.contains("SyntaxError"), "{}", syntax.stderr);
    h.close().await;
}

pub(crate) async fn deadline_is_the_minimum(b: Backend) {
    let h = Harness::with_config(b, b.config().with_timeout_seconds(5.0)).await;
    // (call timeout, expected deadline): the root timeout (5 s) caps every call.
    let table: &[(Option<f64>, f64)] = &[
        (None, 5.0),
        (Some(2.5), 2.5),
        (Some(60.0), 5.0),
        (Some(5.0), 5.0),
    ];
    for (call, expect) in table {
        let mut request = CommandRequest::shell("d", "true", ".");
        request.timeout_seconds = *call;
        let outcome = h
            .service
            .execute(&Harness::scope("deadline"), request)
            .await
            .expect("runs");
        assert_eq!(outcome.deadline_seconds, *expect, "{call:?}");
    }
    // The runtime's tool timeout is the third term, applied by the tools.
    let tool = ExecCommandTool::new(CommandBinding::owned(h.service.clone()));
    let ctx = ToolExecutionContext::new(&h.root).tool_timeout(Duration::from_millis(300));
    let result = tool
        .run(
            ToolInput::new(json!({"command": "sleep 30", "timeout_seconds": 60})),
            &ctx,
        )
        .await;
    assert_eq!(result.error_code(), Some("COMMAND_TIMEOUT"));
    assert!(
        result
            .error_info()
            .is_some_and(|e| e.message.contains("0.3s deadline")),
        "{result:?}"
    );
    assert_eq!(result.data["status"], "timed_out");
    assert_eq!(result.data["exit_code"], serde_json::Value::Null);
    h.close().await;
}

pub(crate) async fn timeout_kills_the_whole_tree(b: Backend) {
    let h = Harness::new(b).await;
    // 5 s leaves the tree ample time to build (it records all its pids first) even on a
    // loaded machine; the outcome does not depend on how long the build takes.
    let request = CommandRequest::shell("slow", tree_script("t"), ".").timeout_seconds(5.0);
    let outcome = h
        .service
        .execute(&Harness::scope("timeout"), request)
        .await
        .expect("runs");
    assert_eq!(outcome.status, CommandStatus::TimedOut);
    assert_eq!(outcome.exit_code, None, "a killed process has no exit code");
    assert_eq!(
        outcome.error_info().map(|e| e.code),
        Some("COMMAND_TIMEOUT".into())
    );
    let pids = h.pids("tpids");
    assert_eq!(pids.len(), 6, "the tree script records 6 pids");
    // The outcome returns only once the kill is confirmed: nothing may be left now.
    assert_eq!(h.alive(&pids).await, Vec::<i64>::new());
    h.close().await;
}

pub(crate) async fn stop_kills_the_whole_tree(b: Backend) {
    let h = Harness::new(b).await;
    let scope = Harness::scope("stop");
    let service = h.service.clone();
    let task_scope = scope.clone();
    let running = tokio::spawn(async move {
        service
            .execute(
                &task_scope,
                CommandRequest::shell("victim", tree_script("s"), "."),
            )
            .await
    });
    h.wait_for_file("sready").await;
    let operation = h.service.stop(&scope);
    // Registered synchronously: the call is listed before anything was awaited.
    assert_eq!(operation.call_ids(), vec!["victim".to_owned()]);
    let receipt = operation.wait_stopped().await;
    assert_eq!(receipt.call_ids, vec!["victim".to_owned()]);
    assert!(receipt.unconfirmed.is_empty(), "{receipt:?}");
    assert_eq!(receipt.mode, b.mode());
    let pids = h.pids("spids");
    assert_eq!(pids.len(), 6);
    assert_eq!(
        h.alive(&pids).await,
        Vec::<i64>::new(),
        "stopped means gone"
    );
    let outcome = running.await.expect("task").expect("ran");
    assert_eq!(outcome.status, CommandStatus::EnvironmentInterrupted);
    assert_eq!(outcome.exit_code, None);
    assert_eq!(outcome.detail.as_deref(), Some("the scope was stopped"));
    let error = outcome
        .error_info()
        .expect("an interrupted call is an error");
    assert_eq!(error.code, "COMMAND_ENVIRONMENT_INTERRUPTED");
    assert!(error.retryable, "the environment may be back on retry");
    operation.wait_drained().await;
    h.service.wait_drained(&receipt).await.expect("own receipt");
    assert_eq!(h.service.running_count(), 0);
    h.close().await;
}

pub(crate) async fn stop_while_draining_leaves_later_calls_alone(b: Backend) {
    let h = Harness::new(b).await;
    let scope = Harness::scope("drain");
    let other_scope = Harness::scope("other");
    let spawn = |id: &'static str, prefix: &'static str, scope: iris_command::CommandScope| {
        let service = h.service.clone();
        tokio::spawn(async move {
            service
                .execute(&scope, CommandRequest::shell(id, tree_script(prefix), "."))
                .await
        })
    };
    let first = spawn("first", "a", scope.clone());
    let bystander = spawn("bystander", "o", other_scope.clone());
    h.wait_for_file("aready").await;
    h.wait_for_file("oready").await;
    let op1 = h.service.stop(&scope);
    assert_eq!(op1.call_ids(), vec!["first".to_owned()]);
    // A call started after the stop: the scope starts fresh.
    let second = spawn("second", "b", scope.clone());
    h.wait_for_file("bready").await;
    op1.wait_drained().await;
    let first = first.await.expect("task").expect("ran");
    assert_eq!(first.status, CommandStatus::EnvironmentInterrupted);
    // Draining the first stop stopped neither the later call nor another scope.
    assert!(!second.is_finished());
    assert!(!bystander.is_finished());
    assert_eq!(h.alive(&h.pids("bpids")).await.len(), 6);

    let op2 = h.service.stop(&scope);
    assert_eq!(op2.call_ids(), vec!["second".to_owned()]);
    let receipt = op2.wait_stopped().await;
    assert_eq!(receipt.call_ids, vec!["second".to_owned()]);
    assert_eq!(h.alive(&h.pids("bpids")).await, Vec::<i64>::new());
    let second = second.await.expect("task").expect("ran");
    assert_eq!(second.status, CommandStatus::EnvironmentInterrupted);
    assert!(!bystander.is_finished());

    // Stopping a scope twice joins: the second operation covers the same call, which
    // is killed once and reports once.
    let op3 = h.service.stop(&other_scope);
    let op4 = h.service.stop(&other_scope);
    assert_eq!(op3.call_ids(), op4.call_ids());
    let (r3, r4) = tokio::join!(op3.wait_stopped(), op4.wait_stopped());
    assert_eq!(r3.call_ids, r4.call_ids);
    let bystander = bystander.await.expect("task").expect("ran");
    assert_eq!(bystander.status, CommandStatus::EnvironmentInterrupted);
    // A receipt only drains on the service that issued it.
    let foreign = CommandService::new(b.config(), &h.root).expect("service");
    assert_eq!(
        foreign.wait_drained(&r3).await,
        Err(CommandError::ForeignReceipt)
    );
    h.close().await;
}

pub(crate) async fn cancellation_kills_mid_run(b: Backend) {
    let h = Harness::new(b).await;
    let signal = CancellationSignal::new();
    let service = h.service.clone();
    let request =
        CommandRequest::shell("cancel-me", tree_script("c"), ".").cancellation(signal.clone());
    let running =
        tokio::spawn(async move { service.execute(&Harness::scope("cancel"), request).await });
    h.wait_for_file("cready").await;
    signal.cancel();
    let outcome = running.await.expect("task").expect("ran");
    assert_eq!(outcome.status, CommandStatus::Cancelled);
    assert_eq!(outcome.exit_code, None);
    assert_eq!(
        outcome.error_info().map(|e| e.code),
        Some("COMMAND_CANCELLED".into())
    );
    assert_eq!(h.alive(&h.pids("cpids")).await, Vec::<i64>::new());

    // Through the tool: the context's signal reaches the process.
    let tool = ExecCommandTool::new(CommandBinding::owned(h.service.clone()));
    let signal = CancellationSignal::new();
    signal.cancel();
    let ctx = ToolExecutionContext::new(&h.root).cancellation(signal);
    let result = tool
        .run(ToolInput::new(json!({"command": "sleep 30"})), &ctx)
        .await;
    assert_eq!(result.error_code(), Some("COMMAND_CANCELLED"));
    assert_eq!(result.data["status"], "cancelled");
    h.close().await;
}

pub(crate) async fn dropping_the_call_kills_the_tree(b: Backend) {
    let h = Harness::new(b).await;
    let service = h.service.clone();
    let running = tokio::spawn(async move {
        service
            .execute(
                &Harness::scope("drop"),
                CommandRequest::shell("dropped", tree_script("d"), "."),
            )
            .await
    });
    h.wait_for_file("dready").await;
    running.abort();
    assert!(running.await.is_err_and(|e| e.is_cancelled()));
    h.assert_dead_eventually(&h.pids("dpids")).await;
    h.close().await;
}

pub(crate) async fn background_jobs_do_not_outlive_a_call(b: Backend) {
    let h = Harness::new(b).await;
    let outcome = h
        .sh("sleep 300 & echo $! > bgpid; sh -c 'sleep 300 & echo $! >> bgpid' ; echo started")
        .await;
    assert_eq!(
        (outcome.status, outcome.exit_code),
        (CommandStatus::Exited, Some(0))
    );
    assert_eq!(outcome.stdout, "started\n");
    h.assert_dead_eventually(&h.pids("bgpid")).await;
    h.close().await;
}

fn stats(seen: u64, kept: u64) -> StreamStats {
    StreamStats {
        bytes_seen: seen,
        bytes_kept: kept,
        bytes_dropped: seen - kept,
    }
}

pub(crate) async fn output_is_capped_and_counted(b: Backend) {
    let h = Harness::new(b).await;
    let service = h.service.clone().with_output_limit(1000);
    let scope = Harness::scope("cap");
    // (command, stdout stats, stderr stats, truncated)
    let table: &[(&str, StreamStats, StreamStats, bool)] = &[
        (
            "head -c 1000 /dev/zero",
            stats(1000, 1000),
            stats(0, 0),
            false,
        ),
        (
            "head -c 1001 /dev/zero",
            stats(1001, 1000),
            stats(0, 0),
            true,
        ),
        (
            "head -c 100000 /dev/zero >&2",
            stats(0, 0),
            stats(100_000, 1000),
            true,
        ),
        (
            "yes 0123456789 | head -c 5000000; head -c 300000 /dev/zero >&2",
            stats(5_000_000, 1000),
            stats(300_000, 1000),
            true,
        ),
    ];
    for (command, out, err, truncated) in table {
        let outcome = service
            .execute(&scope, CommandRequest::shell("cap", *command, "."))
            .await
            .expect("runs");
        assert_eq!(outcome.exit_code, Some(0), "{command}");
        assert_eq!(outcome.output_stats.stdout, *out, "{command}");
        assert_eq!(outcome.output_stats.stderr, *err, "{command}");
        assert_eq!(outcome.output_truncated, *truncated, "{command}");
    }
    let outcome = service
        .execute(&scope, CommandRequest::shell("cap", "seq 1 100000", "."))
        .await
        .expect("runs");
    assert!(outcome.stdout.starts_with("1\n2\n3\n"), "head kept");
    assert!(outcome.stdout.ends_with("99999\n100000\n"), "tail kept");
    assert!(outcome.stdout.contains("bytes of stdout dropped"), "marker");
    h.close().await;
}

pub(crate) async fn streams_are_read_concurrently(b: Backend) {
    // 4 MiB on stderr before a byte of stdout: a reader that drained one pipe at a time
    // would deadlock on the full stderr pipe until the deadline.
    let h = Harness::new(b).await;
    let outcome = h
        .service
        .execute(
            &Harness::scope("both"),
            CommandRequest::shell("both", "head -c 4194304 /dev/zero >&2; echo done", ".")
                .timeout_seconds(60.0),
        )
        .await
        .expect("runs");
    assert_eq!(
        (outcome.status, outcome.exit_code),
        (CommandStatus::Exited, Some(0))
    );
    assert_eq!(outcome.stdout, "done\n");
    assert_eq!(outcome.output_stats.stderr.bytes_seen, 4_194_304);
    h.close().await;
}

pub(crate) async fn stdin_is_null_unless_bytes_are_given(b: Backend) {
    let h = Harness::new(b).await;
    let scope = Harness::scope("stdin");
    // No stdin: `cat` sees end of input at once (no hang), and there is no TTY.
    let outcome = h
        .service
        .execute(
            &scope,
            CommandRequest::shell(
                "in",
                "cat; if [ -t 0 ] || [ -t 1 ]; then echo tty; else echo no-tty; fi",
                ".",
            )
            .timeout_seconds(30.0),
        )
        .await
        .expect("runs");
    assert_eq!(
        (outcome.status, outcome.stdout.as_str()),
        (CommandStatus::Exited, "no-tty\n")
    );
    // Low-level stdin bytes (hooks) are written and closed.
    let outcome = h
        .service
        .execute(
            &scope,
            CommandRequest::shell("in", "cat; echo; echo end", ".")
                .stdin(b"{\"event\": \"tool.before\"}".to_vec())
                .timeout_seconds(30.0),
        )
        .await
        .expect("runs");
    assert_eq!(outcome.stdout, "{\"event\": \"tool.before\"}\nend\n");
    let outcome = h
        .service
        .execute(
            &scope,
            CommandRequest::python("in", "import sys\nprint(len(sys.stdin.read()))", ".")
                .stdin(vec![b'x'; 200_000])
                .timeout_seconds(30.0),
        )
        .await
        .expect("runs");
    assert_eq!(outcome.stdout, "200000\n");
    h.close().await;
}

pub(crate) async fn cwd_rules(b: Backend) {
    let h = Harness::new(b).await;
    std::fs::create_dir_all(h.path("sub")).expect("dir");
    h.write("file.txt", "x");
    let outside = tempfile::tempdir().expect("outside");
    std::os::unix::fs::symlink(outside.path(), h.path("escape")).expect("symlink");
    std::os::unix::fs::symlink(h.path("sub"), h.path("inner-link")).expect("symlink");
    // (cwd, Ok(relative dir) | Err(code))
    let table: &[(&str, Result<&str, &str>)] = &[
        (".", Ok("")),
        ("sub", Ok("sub")),
        ("./sub/", Ok("sub")),
        ("sub/..", Ok("")),
        ("inner-link", Ok("sub")),
        ("missing", Err("INVALID_PATH")),
        ("file.txt", Err("INVALID_PATH")),
        ("", Err("INVALID_PATH")),
        ("..", Err("PATH_OUTSIDE_WORKSPACE")),
        ("/", Err("PATH_OUTSIDE_WORKSPACE")),
        ("/etc", Err("PATH_OUTSIDE_WORKSPACE")),
        ("escape", Err("PATH_OUTSIDE_WORKSPACE")),
        ("sub/../../", Err("PATH_OUTSIDE_WORKSPACE")),
    ];
    let tool = ExecCommandTool::new(CommandBinding::owned(h.service.clone()));
    let ctx = ToolExecutionContext::new(&h.root);
    for (cwd, expect) in table {
        let request = CommandRequest::shell("cwd", "pwd", *cwd);
        let got = h.service.execute(&Harness::scope("cwd"), request).await;
        let result = tool
            .run(ToolInput::new(json!({"command": "pwd", "cwd": cwd})), &ctx)
            .await;
        match expect {
            Ok(rel) => {
                let dir = if rel.is_empty() {
                    h.root.clone()
                } else {
                    h.root.join(rel)
                };
                let outcome = got.unwrap_or_else(|e| panic!("{cwd:?}: {e}"));
                assert_eq!(outcome.stdout.trim_end(), dir.to_string_lossy(), "{cwd:?}");
                assert!(!result.is_error(), "{cwd:?}: {result:?}");
                assert_eq!(result.data["cwd"], dir.to_string_lossy().as_ref());
            }
            Err(code) => {
                let err = got.expect_err(cwd);
                assert_eq!(err.code(), *code, "{cwd:?}: {err}");
                assert_eq!(result.error_code(), Some(*code), "{cwd:?}: {result:?}");
            }
        }
    }
    h.close().await;
}

pub(crate) async fn invalid_requests_are_typed_errors(b: Backend) {
    let h = Harness::new(b).await;
    let long = "x".repeat(iris_command::MAX_PAYLOAD_BYTES + 1);
    let table: Vec<(CommandRequest, &str)> = vec![
        (CommandRequest::shell("r", "", "."), "the command is empty"),
        (
            CommandRequest::shell("r", " \n\t", "."),
            "the command is empty",
        ),
        (CommandRequest::python("r", "", "."), "the code is empty"),
        (
            CommandRequest::shell("r", "echo \0", "."),
            "contains a NUL byte",
        ),
        (
            CommandRequest::shell("r", long.as_str(), "."),
            "at most 102400 are accepted",
        ),
        (
            CommandRequest::shell("r", "true", ".").timeout_seconds(0.0),
            "positive finite",
        ),
        (
            CommandRequest::shell("r", "true", ".").timeout_seconds(-1.0),
            "positive finite",
        ),
        (
            CommandRequest::shell("r", "true", ".").timeout_seconds(f64::NAN),
            "positive finite",
        ),
        (
            CommandRequest::shell("r", "true", ".").timeout_seconds(f64::INFINITY),
            "positive finite",
        ),
    ];
    for (request, message) in table {
        let shown = format!("{:?}", request.payload)
            .chars()
            .take(40)
            .collect::<String>();
        let err = h
            .service
            .execute(&Harness::scope("bad"), request)
            .await
            .expect_err(&shown);
        assert_eq!(err.code(), "INVALID_INPUT", "{shown}");
        assert!(err.to_string().contains(message), "{shown}: {err}");
    }
    h.close().await;
}

pub(crate) async fn lifecycle_unprepared_and_closed(b: Backend) {
    let h = Harness::new(b).await;
    let fresh = CommandService::new(b.config(), &h.root).expect("service");
    let err = fresh
        .execute(
            &Harness::scope("l"),
            CommandRequest::shell("l", "true", "."),
        )
        .await
        .expect_err("not prepared");
    assert_eq!(err.code(), "COMMAND_UNAVAILABLE");
    assert!(err.to_string().contains("call prepare() first"), "{err}");
    fresh
        .close()
        .await
        .expect("closing an unprepared service is fine");

    // close() interrupts running calls, then refuses new ones; it is idempotent.
    let service = h.service.clone();
    let running = tokio::spawn(async move {
        service
            .execute(
                &Harness::scope("l"),
                CommandRequest::shell("l", tree_script("l"), "."),
            )
            .await
    });
    h.wait_for_file("lready").await;
    let pids = h.pids("lpids");
    let container = h.service.docker_container_id();
    h.service.close().await.expect("close");
    let outcome = running.await.expect("task").expect("ran");
    assert_eq!(outcome.status, CommandStatus::EnvironmentInterrupted);
    assert_eq!(
        outcome.detail.as_deref(),
        Some("the command service was closed")
    );
    let err = h
        .service
        .execute(
            &Harness::scope("l"),
            CommandRequest::shell("l", "true", "."),
        )
        .await
        .expect_err("closed");
    assert_eq!(err.code(), "COMMAND_UNAVAILABLE");
    assert!(err.to_string().contains("closed"), "{err}");
    assert_eq!(
        h.service.prepare().await.map_err(|e| e.code()),
        Err("COMMAND_UNAVAILABLE")
    );
    h.service.close().await.expect("idempotent");
    match b {
        Backend::Native | Backend::NativeReaper => {
            // The service is closed, so check the pids on the host directly.
            for pid in pids {
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                let state = stat
                    .rsplit(')')
                    .next()
                    .and_then(|r| r.split_whitespace().next());
                assert!(
                    matches!(state, None | Some("Z" | "X")),
                    "pid {pid} survived close"
                );
            }
        }
        Backend::Docker => {
            // Closing removed the container (and everything in it).
            let id = container.expect("prepared container");
            let inspect = std::process::Command::new("docker")
                .args(["container", "inspect", &id])
                .output()
                .expect("docker CLI");
            assert!(
                !inspect.status.success(),
                "container {id} still exists after close"
            );
            assert_eq!(h.service.docker_container_id(), None);
        }
    }
}

pub(crate) async fn tools_report_the_seed_fields(b: Backend) {
    let h = Harness::new(b).await;
    let binding = CommandBinding::owned(h.service.clone());
    let exec = ExecCommandTool::new(binding.clone());
    let python = RunPythonTool::new(CommandBinding::borrowed(&binding));
    let ctx = ToolExecutionContext::new(&h.root)
        .session_id("s")
        .run_id("r");

    let ok = exec
        .run(
            ToolInput::new(json!({"command": "echo hi; echo warn >&2"})),
            &ctx,
        )
        .await;
    assert!(!ok.is_error(), "{ok:?}");
    assert_eq!(ok.model_content(), "hi\n[stderr]\nwarn\n");
    // Native calls run in the command sandbox and say so; Docker calls say what the
    // container's mounts and proxy enforce (`.iris` mounted read-only in both).
    let protected = ok.data["sandbox"]["protected"]
        .as_array()
        .expect("a sandbox report");
    assert!(protected.contains(&json!(h.root.join(".iris"))), "{ok:?}");
    let mut keys: Vec<&str> = ok
        .data
        .keys()
        .map(String::as_str)
        .filter(|k| *k != "sandbox")
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "cwd",
            "duration_seconds",
            "exit_code",
            "mode",
            "output_stats",
            "output_truncated",
            "status"
        ]
    );
    assert_eq!(ok.data["mode"], b.mode().as_str());
    assert_eq!(ok.data["status"], "exited");
    assert_eq!(ok.data["exit_code"], 0);
    assert_eq!(ok.data["output_truncated"], false);
    assert_eq!(ok.data["output_stats"]["stdout"]["bytes_seen"], 3);
    assert!(
        ok.data["duration_seconds"]
            .as_f64()
            .is_some_and(|d| d >= 0.0)
    );

    let failed = exec
        .run(
            ToolInput::new(json!({"command": "echo partial; exit 2"})),
            &ctx,
        )
        .await;
    assert_eq!(failed.error_code(), Some("COMMAND_FAILED"));
    assert_eq!(
        failed.model_content(),
        "Error[COMMAND_FAILED]: the command exited with code 2\npartial\n"
    );
    assert_eq!(failed.data["exit_code"], 2);

    let py = python
        .run(ToolInput::new(json!({"code": "print(6 * 7)"})), &ctx)
        .await;
    assert_eq!(py.model_content(), "42\n");
    assert_eq!(py.data["mode"], b.mode().as_str());
    h.close().await;
}

/// A Python program that double-forks a sleeper in a new session (the classic daemon
/// dance), prints the sleeper's pid and exits at once.
const DOUBLE_FORK: &str = r#"import os, time
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.setsid()
    if os.fork() == 0:
        os.close(r)
        os.write(w, b"%d\n" % os.getpid())
        os.close(w)
        time.sleep(300)
    os._exit(0)
os.close(w)
print(os.read(r, 64).decode().strip(), flush=True)
os.waitpid(pid, 0)
"#;

/// Processes that leave the call's process group (`setsid`, a double fork in Python)
/// die with the call: when it exits by itself and when its deadline kills it.
pub(crate) async fn detached_processes_do_not_outlive_a_call(b: Backend) {
    let h = Harness::new(b).await;
    let scope = Harness::scope("detached");
    let outcome = h
        .sh("setsid sleep 300 & echo $! > detached; echo started")
        .await;
    assert_eq!(
        (outcome.status, outcome.exit_code, outcome.stdout.as_str()),
        (CommandStatus::Exited, Some(0), "started\n"),
        "{outcome:?}"
    );
    h.assert_dead_eventually(&h.pids("detached")).await;

    let outcome = h
        .service
        .execute(&scope, CommandRequest::python("df", DOUBLE_FORK, "."))
        .await
        .expect("python runs");
    assert!(outcome.success(), "{outcome:?}");
    let grandchild: i64 = outcome.stdout.trim().parse().expect("the sleeper's pid");
    h.assert_dead_eventually(&[grandchild]).await;

    let outcome = h
        .service
        .execute(
            &scope,
            CommandRequest::shell(
                "to",
                "setsid sleep 300 & echo $! > detached2; sleep 300",
                ".",
            )
            .timeout_seconds(1.0),
        )
        .await
        .expect("runs");
    assert_eq!(outcome.status, CommandStatus::TimedOut);
    h.assert_dead_eventually(&h.pids("detached2")).await;
    h.close().await;
}

/// A call that ends never kills the detached processes of a call still running; they
/// die when their own call ends.
pub(crate) async fn concurrent_calls_keep_their_detached_processes(b: Backend) {
    let h = Harness::new(b).await;
    let service = h.service.clone();
    let long = tokio::spawn(async move {
        service
            .execute(
                &Harness::scope("long"),
                CommandRequest::shell(
                    "long",
                    "setsid sleep 300 & echo $! > long-detached; touch long-ready; sleep 300",
                    ".",
                )
                .timeout_seconds(120.0),
            )
            .await
    });
    h.wait_for_file("long-ready").await;
    let short = h
        .sh("setsid sleep 300 & echo $! > short-detached; echo done")
        .await;
    assert!(short.success(), "{short:?}");
    let long_pids = h.pids("long-detached");
    assert_eq!(
        h.alive(&long_pids).await,
        long_pids,
        "the end of one call killed a detached process of a call still running"
    );
    let stop = h.service.stop(&Harness::scope("long"));
    let receipt = stop.wait_stopped().await;
    assert!(receipt.unconfirmed.is_empty(), "{receipt:?}");
    let outcome = long.await.expect("task").expect("runs");
    assert_eq!(outcome.status, CommandStatus::EnvironmentInterrupted);
    h.assert_dead_eventually(&long_pids).await;
    h.assert_dead_eventually(&h.pids("short-detached")).await;
    h.close().await;
}
