//! Durable runs through the real binary: `iris run` waits (exit 4, RUN_WAITING, the
//! resume commands), `iris resume` in a new process continues it, `iris runs` /
//! `iris runs show` read the store — on the default SQLite store and on PostgreSQL from
//! two different working directories; a crashed run is taken over; `iris call
//! --session` shares read observations between one-shot calls.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::signals::spawn;
use super::{Run, iris};

/// A scripted agent whose one call writes `hello.txt` (writes need approval:
/// `write_mode: confirm` by default), then answers.
const WRITE_SCRIPT: &str = "  script:\n    - text: Writing the file.\n      tool_calls: [{name: \
    write_file, arguments: {file_path: hello.txt, content: \"hi\\n\"}}]\n    - \
    {expect_tool_results: 1, text: Wrote hello.txt.}\n";

/// A scripted agent that asks which greeting to use, then writes the answer back.
const ASK_SCRIPT: &str = "  script:\n    - text: Let me ask.\n      tool_calls: [{name: \
    ask_question, arguments: {question: Which greeting?, options: [hi, hello]}}]\n    - \
    {expect_tool_results: 1, text: Greeting chosen.}\n";

/// The YAML of an agent with `tools`, the scripted model of `script` and `extra` keys.
fn yaml(script: &str, extra: &str) -> String {
    format!(
        "tools:\n  builtin: [file.write, human.ask]\nmodel:\n  provider: scripted\n{script}{extra}"
    )
}

/// A workspace holding `iris.yaml`.
fn workspace(yaml: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("iris.yaml"), yaml).unwrap();
    dir
}

/// `iris args…` in `dir`, which holds the discovered (and `--trust`ed) `iris.yaml`.
fn at(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut all = vec!["--trust"];
    all.extend_from_slice(args);
    iris(dir, &all, env, "")
}

fn json(run: &Run) -> Value {
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {run:?}"))
}

/// The run id of the `error[RUN_WAITING]: run RUN_ID waits …` line.
fn waiting_run_id(run: &Run) -> String {
    let line = run
        .stderr
        .lines()
        .find(|l| l.starts_with("error[RUN_WAITING]: run "))
        .unwrap_or_else(|| panic!("no RUN_WAITING line: {run:?}"));
    line["error[RUN_WAITING]: run ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .to_owned()
}

/// The approval flow in `dir` (and, for the resume, `resume_dir`): waits, is listed
/// and shown, is answered by a new process, completes.
fn approval_flow(dir: &Path, resume_dir: &Path, env: &[(&str, &str)]) {
    let run = at(dir, &["run", "Say hi in a file"], env);
    assert_eq!(run.code, 4, "{run:?}");
    assert_eq!(run.stdout, "Writing the file.\n", "{run:?}");
    let run_id = waiting_run_id(&run);
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(
        lines[..2],
        [
            "tool write_file (call_1_1) ... waiting for a human",
            &*format!(
                "error[RUN_WAITING]: run {run_id} waits for a human (approval): approve \
                 write_file (call_1_1)? tool `write_file` writes local state and write_mode is \
                 `confirm`"
            ),
        ],
        "{run:?}"
    );
    assert_eq!(
        lines[2..],
        [
            "iris: no terminal can answer here (`run --yes` approves every call); the run is saved: \
             answer it with",
            &*format!("  iris --trust resume {run_id} --approve"),
            &*format!("  iris --trust resume {run_id} --deny REASON"),
        ],
        "{run:?}"
    );
    assert!(!dir.join("hello.txt").exists());

    // Listed waiting, with what it waits for; shown with its history.
    let list = json(&at(dir, &["--json", "runs", "--status", "waiting"], env));
    let runs = list["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{list}");
    assert_eq!(runs[0]["run_id"], run_id.as_str());
    assert_eq!(runs[0]["status"], "waiting");
    assert_eq!(runs[0]["agent_id"], "iris");
    assert_eq!(runs[0]["turns"], 1);
    assert!(
        runs[0]["waiting_for"]
            .as_str()
            .unwrap()
            .starts_with("approve write_file (call_1_1)?"),
        "{list}"
    );
    let table = at(dir, &["runs"], env);
    assert_eq!(table.code, 0, "{table:?}");
    let row = table.stdout.lines().nth(1).unwrap();
    assert!(
        row.starts_with(&format!("{run_id} waiting   iris")),
        "{table:?}"
    );
    assert!(row.ends_with("write_mode is `confirm`"), "{table:?}");
    let completed = json(&at(dir, &["--json", "runs", "--status", "completed"], env));
    assert_eq!(completed["runs"], serde_json::json!([]), "{completed}");

    let show = at(dir, &["runs", "show", &run_id], env);
    assert_eq!(show.code, 0, "{show:?}");
    for fragment in [
        format!("run:      {run_id}\n"),
        "status:   waiting\n".to_owned(),
        "history (2 messages):\n  user: Say hi in a file\n  assistant: Writing the file.\n  \
         assistant: call write_file (call_1_1) {\"content\":\"hi\\n\",\"file_path\":\"hello.txt\"}\n"
            .to_owned(),
        "turn in progress: 1 (0 of 1 calls finished)\n".to_owned(),
        format!("waiting for (approval, interaction {run_id}:call_1_1): approve write_file"),
        format!("answer it with:\n  iris --trust resume {run_id} --approve\n"),
    ] {
        assert!(show.stdout.contains(&fragment), "{fragment:?}: {show:?}");
    }

    // A new process, maybe elsewhere, answers: the call runs there, the run completes.
    let resumed = at(resume_dir, &["resume", &run_id, "--approve"], env);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    assert_eq!(resumed.stdout, "Wrote hello.txt.\n", "{resumed:?}");
    assert_eq!(
        resumed.stderr, "tool write_file (call_1_1) ... ok (approved)\n",
        "{resumed:?}"
    );
    assert_eq!(
        std::fs::read_to_string(resume_dir.join("hello.txt")).unwrap(),
        "hi\n"
    );

    let list = json(&at(dir, &["--json", "runs"], env));
    assert_eq!(list["runs"][0]["run_id"], run_id.as_str(), "{list}");
    assert_eq!(list["runs"][0]["status"], "completed", "{list}");
    assert_eq!(list["runs"][0]["turns"], 2, "{list}");
    assert_eq!(list["runs"][0]["waiting_for"], Value::Null, "{list}");
    let shown = json(&at(resume_dir, &["--json", "runs", "show", &run_id], env));
    assert_eq!(shown["run"]["output"], "Wrote hello.txt.", "{shown}");
    assert_eq!(shown["answer_with"], serde_json::json!([]), "{shown}");
    let history = shown["run"]["history"].as_array().unwrap();
    assert_eq!(history.len(), 4, "{shown}");
    assert_eq!(history[2]["content"][0]["tool_name"], "write_file");

    // Answered already: nothing waits any more.
    let again = at(dir, &["resume", &run_id, "--approve"], env);
    assert_eq!(again.code, 1, "{again:?}");
    assert!(
        again.stderr.starts_with(&format!(
            "error[RUN_NOT_WAITING]: run `{run_id}` is completed"
        )),
        "{again:?}"
    );
}

/// The question flow: waits with one command per option; the wrong kind of answer and
/// an answer that is not an option are refused (exit 2) and change nothing; the right
/// one, in a new process (`--json`), completes the run with the answer as the result.
fn question_flow(dir: &Path, resume_dir: &Path, env: &[(&str, &str)]) {
    let run = at(dir, &["--json", "run", "Greet me"], env);
    assert_eq!(run.code, 4, "{run:?}");
    assert_eq!(run.stderr, "", "{run:?}");
    let lines: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let finished = &lines[lines.len() - 2];
    assert_eq!(finished["type"], "finished");
    assert_eq!(finished["outcome"]["status"], "waiting");
    let waiting = lines.last().unwrap();
    let run_id = waiting["run_id"].as_str().unwrap().to_owned();
    assert_eq!(waiting["type"], "waiting", "{waiting}");
    assert_eq!(waiting["code"], "RUN_WAITING");
    assert_eq!(waiting["kind"], "question");
    assert_eq!(waiting["interaction_id"], format!("{run_id}:call_1_1"));
    assert_eq!(waiting["summary"], "question: Which greeting? [hi | hello]");
    assert_eq!(
        waiting["answer_with"],
        serde_json::json!([
            format!("iris --trust resume {run_id} --answer hi"),
            format!("iris --trust resume {run_id} --answer hello"),
        ])
    );

    let wrong_kind = at(resume_dir, &["resume", &run_id, "--approve"], env);
    assert_eq!(wrong_kind.code, 2, "{wrong_kind:?}");
    assert!(
        wrong_kind.stderr.starts_with(&format!(
            "error[RUN_ANSWER_INVALID]: run `{run_id}` waits for a human (question: question: \
             Which greeting? [hi | hello]); answer it with iris --trust resume {run_id} --answer hi"
        )),
        "{wrong_kind:?}"
    );
    let no_answer = at(resume_dir, &["resume", &run_id], env);
    assert_eq!(no_answer.code, 2, "{no_answer:?}");
    assert!(
        no_answer.stderr.starts_with("error[RUN_ANSWER_INVALID]: "),
        "{no_answer:?}"
    );
    let not_an_option = at(resume_dir, &["resume", &run_id, "--answer", "hey"], env);
    assert_eq!(not_an_option.code, 2, "{not_an_option:?}");
    assert_eq!(
        not_an_option.stderr, "error[RUN_ANSWER_INVALID]: the answer must be one of: hi, hello\n",
        "{not_an_option:?}"
    );
    let still = json(&at(dir, &["--json", "runs", "--status", "waiting"], env));
    assert_eq!(still["runs"][0]["run_id"], run_id.as_str(), "{still}");

    let resumed = at(
        resume_dir,
        &["--json", "resume", &run_id, "--answer", "hello"],
        env,
    );
    assert_eq!(resumed.code, 0, "{resumed:?}");
    let events: Vec<Value> = resumed
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let answered = events
        .iter()
        .find(|e| e["type"] == "tool_call_finished")
        .unwrap();
    assert_eq!(answered["result"]["tool_name"], "ask_question");
    assert_eq!(answered["result"]["content"][0]["text"], "hello");
    let outcome = &events.last().unwrap()["outcome"];
    assert_eq!(outcome["status"], "completed", "{resumed:?}");
    assert_eq!(outcome["output"], "Greeting chosen.");

    let show = at(dir, &["runs", "show", &run_id], env);
    assert!(
        show.stdout
            .contains("  tool: result ask_question (call_1_1) ok: hello\n"),
        "{show:?}"
    );
    assert!(show.stdout.contains("status:   completed\n"), "{show:?}");
}

/// SQLite (the default store, `.iris/runs.db`): an approval and a question, each
/// answered by a new process.
#[test]
fn a_waiting_run_is_resumed_by_a_new_process_on_sqlite() {
    let dir = workspace(&yaml(WRITE_SCRIPT, ""));
    approval_flow(dir.path(), dir.path(), &[]);
    assert!(dir.path().join(".iris/runs.db").is_file());
    let dir = workspace(&yaml(ASK_SCRIPT, ""));
    question_flow(dir.path(), dir.path(), &[]);
}

/// `--deny REASON`: the call does not run, the model gets APPROVAL_DENIED with the
/// reason and goes on; `--limit N` lists the newest N runs.
#[test]
fn a_denied_call_does_not_run_and_limit_lists_the_newest() {
    let dir = workspace(&yaml(WRITE_SCRIPT, ""));
    let first = waiting_run_id(&at(dir.path(), &["run", "Say hi"], &[]));
    let second = waiting_run_id(&at(dir.path(), &["run", "Say hi\x1b[31m again\n"], &[]));
    // What the store holds is escaped when shown: a prompt cannot drive the terminal.
    let shown = at(dir.path(), &["runs", "show", &second], &[]);
    assert!(
        shown
            .stdout
            .contains("\n  user: Say hi\\x1b[31m again\\n\n"),
        "{shown:?}"
    );
    let all = json(&at(dir.path(), &["--json", "runs"], &[]));
    assert_eq!(all["runs"].as_array().unwrap().len(), 2, "{all}");
    let one = json(&at(dir.path(), &["--json", "runs", "--limit", "1"], &[]));
    let rows = one["runs"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{one}");
    assert_eq!(rows[0]["run_id"], second.as_str(), "{one}");
    assert_eq!(at(dir.path(), &["runs", "--limit", "0"], &[]).code, 2);

    let denied = at(dir.path(), &["resume", &first, "--deny", "not today"], &[]);
    assert_eq!(denied.code, 0, "{denied:?}");
    assert_eq!(
        denied.stderr, "tool write_file (call_1_1) ... error[APPROVAL_DENIED]\n",
        "{denied:?}"
    );
    assert!(!dir.path().join("hello.txt").exists());
    let shown = json(&at(dir.path(), &["--json", "runs", "show", &first], &[]));
    let result = &shown["run"]["history"][2]["content"][0];
    assert_eq!(result["is_error"], true, "{shown}");
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("not today"),
        "{shown}"
    );
    // The other run still waits.
    let waiting = json(&at(
        dir.path(),
        &["--json", "runs", "--status", "waiting"],
        &[],
    ));
    assert_eq!(waiting["runs"][0]["run_id"], second.as_str(), "{waiting}");
}

/// Unknown runs and empty stores: `RUN_NOT_FOUND` (exit 1); listing an empty store
/// creates nothing.
#[test]
fn unknown_runs_are_typed_errors() {
    let dir = workspace(&yaml(WRITE_SCRIPT, ""));
    let list = at(dir.path(), &["runs"], &[]);
    assert_eq!(list.code, 0, "{list:?}");
    let db = dir.path().join(".iris/runs.db");
    assert_eq!(
        list.stdout,
        format!("no runs in the run store (sqlite {})\n", db.display())
    );
    let listed = at(dir.path(), &["--json", "runs"], &[]);
    assert_eq!(listed.code, 0, "{listed:?}");
    let listed: serde_json::Value = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(listed["store"], format!("sqlite {}", db.display()));
    assert_eq!(listed["runs"], serde_json::json!([]));
    assert!(!db.exists());
    let show = at(dir.path(), &["runs", "show", "run_nope"], &[]);
    assert_eq!(show.code, 1, "{show:?}");
    assert!(
        show.stderr
            .starts_with("error[RUN_NOT_FOUND]: no run `run_nope`"),
        "{show:?}"
    );
    // A store with runs, and a run it does not have.
    let run = at(dir.path(), &["run", "Say hi in a file"], &[]);
    assert_eq!(run.code, 4, "{run:?}");
    for args in [
        &["resume", "run_nope", "--approve"][..],
        &["--json", "runs", "show", "run_nope"],
    ] {
        let run = at(dir.path(), args, &[]);
        assert_eq!(run.code, 1, "{args:?}: {run:?}");
        assert!(
            run.stderr.contains("RUN_NOT_FOUND") || run.stdout.contains("RUN_NOT_FOUND"),
            "{args:?}: {run:?}"
        );
    }
    // `iris resume --json` refusals are JSON lines, like `iris run --json` errors.
    let refused = at(
        dir.path(),
        &["--json", "resume", "run_nope", "--approve"],
        &[],
    );
    assert_eq!(refused.code, 1, "{refused:?}");
    let line: Value = serde_json::from_str(refused.stdout.trim_end()).unwrap();
    assert_eq!(line["error"]["code"], "RUN_NOT_FOUND", "{refused:?}");
    assert!(!refused.stdout.trim_end().contains('\n'), "{refused:?}");
    let list = at(dir.path(), &["runs", "--status", "completed"], &[]);
    assert!(
        list.stdout
            .starts_with("no completed runs in the run store (sqlite "),
        "{list:?}"
    );
    // Answer flags are exclusive; a status must be one of the five.
    let both = at(dir.path(), &["resume", "x", "--approve", "--skip"], &[]);
    assert_eq!(both.code, 2, "{both:?}");
    let bad = at(dir.path(), &["runs", "--status", "done"], &[]);
    assert_eq!(bad.code, 2, "{bad:?}");
}

/// A new, empty database on the test cluster, so the test sees only its own runs.
pub(crate) fn fresh_database() -> String {
    iris_test_support::postgres::fresh_database_blocking("iris_cli")
}

/// PostgreSQL: two workspaces (two copies of the YAML, two working directories) share
/// one database; a run waits in the first and is resumed from the second, where its
/// call runs.
#[test]
fn a_waiting_run_is_resumed_from_another_folder_on_postgres() {
    const URL_ENV: &str = "IRIS_CLI_TEST_DATABASE_URL";
    let store = format!("run_store: {{kind: postgres, url_env: {URL_ENV}}}\n");
    for (script, flow) in [
        (
            WRITE_SCRIPT,
            approval_flow as fn(&Path, &Path, &[(&str, &str)]),
        ),
        (ASK_SCRIPT, question_flow),
    ] {
        let url = fresh_database();
        let env = [(URL_ENV, url.as_str())];
        let first = workspace(&yaml(script, &store));
        let second = workspace(&yaml(script, &store));
        flow(first.path(), second.path(), &env);
        assert!(!first.path().join(".iris/runs.db").exists());
        assert!(!first.path().join("hello.txt").exists());
    }
    // Without the variable the store cannot be opened: exit 3, nothing started.
    let dir = workspace(&yaml(WRITE_SCRIPT, &store));
    let run = at(dir.path(), &["runs"], &[]);
    assert_eq!(run.code, 3, "{run:?}");
    assert!(
        run.stderr.starts_with("error[RUN_STORE_FAILED]: "),
        "{run:?}"
    );
    assert!(
        run.stderr
            .contains(&format!("the environment variable {URL_ENV}")),
        "{run:?}"
    );
}

/// An agent whose one command appends to `ran.txt`, then sleeps (its pid in
/// `sleep.pid`); the model answers with the command's result.
const CRASH_AGENT: &str = "tools:\n  builtin: [exec.command]\npermissions:\n  execute_mode: \
    allow\nmodel:\n  provider: scripted\n  script:\n    - tool_calls: [{name: exec_command, \
    arguments: {command: 'echo started >> ran.txt; sleep 300 & echo $! > sleep.pid; wait'}}]\n    \
    - {expect_tool_results: 1, text: Decided.}\n";

/// Starts a run of [`CRASH_AGENT`] in `dir` and kills it (SIGKILL) while its command
/// runs; returns the run id.
fn crashed_run(dir: &Path) -> String {
    let mut child = spawn(dir, &["--trust", "--json", "run", "Run it"], &[]);
    let start = Instant::now();
    let sleep = loop {
        let pid = std::fs::read_to_string(dir.join("sleep.pid")).unwrap_or_default();
        if let Ok(pid) = pid.trim().parse::<i32>() {
            break pid;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the command never ran"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    child.child.kill().unwrap();
    child.child.wait().unwrap();
    // Nobody is left to stop the command: the test does (its shell then exits).
    let pid = rustix::process::Pid::from_raw(sleep).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
    let list = json(&at(dir, &["--json", "runs", "--status", "running"], &[]));
    list["runs"][0]["run_id"].as_str().unwrap().to_owned()
}

/// Runs whose process was killed (SIGKILL) in the middle of a command stay `running`:
/// the lease is still live, so `iris resume` refuses with RUN_BUSY (exit 5) and an
/// answer is RUN_NOT_WAITING; once the lease expired, `iris resume RUN_ID` takes the run
/// over — the command may have run, so it asks (in doubt) instead of running it twice —
/// and `--record TEXT`, `--skip` or `--rerun` decides.
#[test]
fn crashed_runs_are_taken_over_and_ask_about_the_call_in_doubt() {
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| workspace(CRASH_AGENT)).collect();
    let ids: Vec<String> = dirs.iter().map(|d| crashed_run(d.path())).collect();
    let (dir, run_id) = (dirs[0].path(), &ids[0]);

    let answer = at(dir, &["resume", run_id, "--approve"], &[]);
    assert_eq!(answer.code, 1, "{answer:?}");
    assert!(
        answer.stderr.starts_with(&format!(
            "error[RUN_NOT_WAITING]: run `{run_id}` is running, not waiting; no interaction"
        )),
        "{answer:?}"
    );
    let busy = at(dir, &["resume", run_id], &[]);
    assert_eq!(busy.code, 5, "{busy:?}");
    assert!(busy.stderr.starts_with("error[RUN_BUSY]: "), "{busy:?}");

    // The dead processes' leases expire (30 s unless renewed); then the take-overs.
    let deadline = Instant::now() + Duration::from_secs(120);
    for (dir, run_id) in dirs.iter().map(|d| d.path()).zip(&ids) {
        let taken = loop {
            let run = at(dir, &["resume", run_id], &[]);
            if run.code != 5 {
                break run;
            }
            assert!(
                Instant::now() < deadline,
                "the lease never expired: {run:?}"
            );
            std::thread::sleep(Duration::from_secs(1));
        };
        assert_eq!(taken.code, 4, "{taken:?}");
        assert!(
            taken.stderr.contains(&format!(
                "error[RUN_WAITING]: run {run_id} waits for a human (in_doubt): exec_command \
                 (call_1_1) was running when its process died"
            )),
            "{taken:?}"
        );
        for flag in ["--rerun", "--skip", "--record TEXT"] {
            assert!(
                taken
                    .stderr
                    .contains(&format!("  iris --trust resume {run_id} {flag}\n")),
                "{flag}: {taken:?}"
            );
        }
        // Not re-run by the take-over: it ran once.
        let ran = std::fs::read_to_string(dir.join("ran.txt")).unwrap();
        assert_eq!(ran, "started\n");
    }

    // --record: the text is the call's result; the command does not run again.
    let done = at(
        dir,
        &["resume", run_id, "--record", "it printed: started"],
        &[],
    );
    assert_eq!(done.code, 0, "{done:?}");
    assert_eq!(done.stdout, "Decided.\n");
    assert_eq!(
        std::fs::read_to_string(dir.join("ran.txt")).unwrap(),
        "started\n"
    );
    let shown = at(dir, &["runs", "show", run_id], &[]);
    assert!(
        shown
            .stdout
            .contains("  tool: result exec_command (call_1_1) ok: it printed: started\n"),
        "{shown:?}"
    );

    // --skip: the model is told it may or may not have run; it does not run again.
    let dir = dirs[1].path();
    let done = at(dir, &["resume", &ids[1], "--skip"], &[]);
    assert_eq!(done.code, 0, "{done:?}");
    assert_eq!(
        done.stderr,
        "tool exec_command (call_1_1) ... error[TOOL_IN_DOUBT]\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("ran.txt")).unwrap(),
        "started\n"
    );

    // --rerun: it runs a second time (its sleep is stopped by the test).
    let dir = dirs[2].path();
    let _ = std::fs::remove_file(dir.join("sleep.pid"));
    let mut rerun = spawn(dir, &["--trust", "resume", &ids[2], "--rerun"], &[]);
    let start = Instant::now();
    let sleep = loop {
        let pid = std::fs::read_to_string(dir.join("sleep.pid")).unwrap_or_default();
        if let Ok(pid) = pid.trim().parse::<i32>() {
            break pid;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the re-run never ran"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let pid = rustix::process::Pid::from_raw(sleep).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
    let status = rerun.child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    assert_eq!(
        std::fs::read_to_string(dir.join("ran.txt")).unwrap(),
        "started\nstarted\n"
    );
}

/// `iris call --session`: a read in one process lets an edit in the next one through;
/// without the session (or with another one) the edit is refused, read first.
#[test]
fn calls_of_one_session_share_read_observations() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("iris.yaml"),
        "tools:\n  builtin: [file.read, file.edit]\npermissions:\n  write_mode: allow\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("notes.txt"), "buy milk\n").unwrap();
    let edit = r#"{"file_path": "notes.txt", "old_string": "milk", "new_string": "oat milk"}"#;
    let read = r#"{"file_path": "notes.txt"}"#;

    let refused = at(dir.path(), &["--json", "call", "edit_file", edit], &[]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert_eq!(
        json(&refused)["error"]["code"],
        "READ_REQUIRED",
        "{refused:?}"
    );

    let first = at(
        dir.path(),
        &["call", "read_file", read, "--session", "s1"],
        &[],
    );
    assert_eq!(first.code, 0, "{first:?}");
    assert!(first.stdout.contains("buy milk"), "{first:?}");
    let saved = dir.path().join(".iris/sessions/s1.reads.json");
    let observations: Value =
        serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    assert_eq!(observations.as_array().unwrap().len(), 1, "{observations}");
    // The session files hold what the model read: their folder is ignored by git.
    assert_eq!(
        std::fs::read_to_string(dir.path().join(".iris/.gitignore")).unwrap(),
        "*\n"
    );

    let other = at(
        dir.path(),
        &["--json", "call", "edit_file", edit, "--session", "s2"],
        &[],
    );
    assert_eq!(json(&other)["error"]["code"], "READ_REQUIRED", "{other:?}");

    let edited = at(
        dir.path(),
        &["call", "edit_file", edit, "--session", "s1"],
        &[],
    );
    assert_eq!(edited.code, 0, "{edited:?}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        "buy oat milk\n"
    );
    // The edit's own observation was saved: a second edit needs no new read.
    let again = r#"{"file_path": "notes.txt", "old_string": "oat milk", "new_string": "tea"}"#;
    let edited = at(
        dir.path(),
        &["call", "edit_file", again, "--session", "s1"],
        &[],
    );
    assert_eq!(edited.code, 0, "{edited:?}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        "buy tea\n"
    );

    for bad in ["../x", "a/b", ".s", ""] {
        let run = at(
            dir.path(),
            &["call", "read_file", read, "--session", bad],
            &[],
        );
        assert_eq!(run.code, 2, "{bad:?}: {run:?}");
        assert!(
            run.stderr.starts_with("error[SESSION_ID_INVALID]: "),
            "{bad:?}: {run:?}"
        );
    }
    std::fs::write(&saved, "not json").unwrap();
    let broken = at(
        dir.path(),
        &["call", "read_file", read, "--session", "s1"],
        &[],
    );
    assert_eq!(broken.code, 3, "{broken:?}");
    assert!(
        broken.stderr.starts_with("error[SESSION_STATE_INVALID]: "),
        "{broken:?}"
    );
}
