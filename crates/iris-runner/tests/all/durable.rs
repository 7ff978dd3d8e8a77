//! Durable runs: one suite over the three run stores (memory, SQLite, a real
//! PostgreSQL server), plus a run whose process is SIGKILLed mid-call.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use iris_executor::{ApprovalMode, DefaultPermissionPolicy, ToolExecutor};
use iris_providers::ScriptedProvider;
use iris_providers::chat::{Role, Usage};
use iris_runner::store::{
    CallState, JournalEntry, RunRecord, RunStatus, RunStore, codes as store_codes,
};
use iris_runner::{
    AgentRunner, Answer, Interaction, MemoryRunStore, PostgresRunStore, RunOutcome, SqliteRunStore,
};
use iris_tools_core::{
    FnTool, Tool, ToolCapability, ToolDefinition, ToolExecutionContext, ToolOutput, ToolRegistry,
};
use serde_json::json;

/// Which backend a suite test runs on.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    Memory,
    Sqlite,
    Postgres,
}

/// Where one test's runs live: every `open` of the same place sees the same runs.
pub(crate) struct Place {
    kind: Kind,
    dir: tempfile::TempDir,
    memory: Arc<MemoryRunStore>,
    pg_url: Option<String>,
}

impl Place {
    pub(crate) async fn new(kind: Kind) -> Self {
        let pg_url = match kind {
            Kind::Postgres => Some(fresh_database().await),
            _ => None,
        };
        Self {
            kind,
            dir: tempfile::tempdir().unwrap(),
            memory: Arc::new(MemoryRunStore::new()),
            pg_url,
        }
    }

    /// A store over this place, as another process would open it.
    pub(crate) async fn open(&self) -> Arc<dyn RunStore> {
        match self.kind {
            Kind::Memory => Arc::clone(&self.memory) as Arc<dyn RunStore>,
            Kind::Sqlite => Arc::new(
                SqliteRunStore::open(self.dir.path().join("runs.db"))
                    .await
                    .unwrap(),
            ),
            Kind::Postgres => Arc::new(
                PostgresRunStore::connect(self.pg_url.as_deref().unwrap())
                    .await
                    .unwrap(),
            ),
        }
    }
}

/// A new, empty database on the test cluster, so each test sees only its own runs.
pub(crate) async fn fresh_database() -> String {
    iris_test_support::postgres::fresh_database("iris_t").await
}

pub(crate) fn record(run_id: &str, status: RunStatus) -> RunRecord {
    RunRecord {
        run_id: run_id.into(),
        status,
        agent_id: "agent".into(),
        session_id: run_id.into(),
        created_at_ms: 1,
        updated_at_ms: 1,
        turns: 0,
        usage: Usage::default(),
        history: Default::default(),
        revealed: Vec::new(),
        read_state: Vec::new(),
        pending: None,
        interaction: None,
        output: None,
        error: None,
        goal: String::new(),
        goal_report: None,
        final_answer: None,
        model: None,
        background_done: Vec::new(),
        background_running: Vec::new(),
        secrets_asked: Default::default(),
        secret_rounds: Default::default(),
        parent: None,
        spent: Default::default(),
    }
}

/// The store contract: create, load, save under the lease, busy, expiry and
/// take-over, lost leases, release, the journal, listing.
async fn store_contract(kind: Kind) {
    let place = Place::new(kind).await;
    let (a, b) = (place.open().await, place.open().await);
    let ttl = Duration::from_millis(300);
    a.create(&record("run_a", RunStatus::Running), "owner-a", ttl)
        .await
        .unwrap();
    let err = a
        .create(&record("run_a", RunStatus::Running), "owner-a", ttl)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "RUN_STORE_FAILED");
    let loaded = b.load("run_a").await.unwrap().unwrap();
    assert_eq!(loaded.status, RunStatus::Running);
    assert!(b.load("run_none").await.unwrap().is_none());

    // Another owner is refused while the lease lives, and may not save.
    let busy = b.acquire("run_a", "owner-b", ttl).await.unwrap_err();
    assert_eq!(busy.code(), store_codes::RUN_BUSY, "{busy}");
    let mut waiting = loaded.clone();
    waiting.status = RunStatus::Waiting;
    waiting.updated_at_ms = 5;
    assert_eq!(
        b.save(&waiting, "owner-b").await.unwrap_err().code(),
        store_codes::RUN_LEASE_LOST
    );
    a.save(&waiting, "owner-a").await.unwrap();
    assert_eq!(
        b.load("run_a").await.unwrap().unwrap().status,
        RunStatus::Waiting
    );

    // The journal: upserts keep one row per call, in call order.
    let entry = |index: usize, call_id: &str, state: CallState| JournalEntry {
        turn: 1,
        index,
        call_id: call_id.into(),
        tool_name: "write_file".into(),
        state,
        result: (state == CallState::Finished)
            .then(|| ToolOutput::text("done").into_result(call_id, "write_file")),
    };
    a.journal("run_a", "owner-a", &entry(1, "c2", CallState::Planned))
        .await
        .unwrap();
    a.journal("run_a", "owner-a", &entry(0, "c1", CallState::Started))
        .await
        .unwrap();
    a.journal("run_a", "owner-a", &entry(0, "c1", CallState::Finished))
        .await
        .unwrap();
    let rows = b.journal_of("run_a", 1).await.unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(
        (rows[0].call_id.as_str(), rows[0].state),
        ("c1", CallState::Finished)
    );
    assert_eq!(rows[0].result.as_ref().unwrap().model_content(), "done");
    assert_eq!(
        (rows[1].call_id.as_str(), rows[1].state),
        ("c2", CallState::Planned)
    );
    assert!(b.journal_of("run_a", 2).await.unwrap().is_empty());
    assert_eq!(
        b.journal("run_a", "owner-b", &entry(1, "c2", CallState::Started))
            .await
            .unwrap_err()
            .code(),
        store_codes::RUN_LEASE_LOST
    );

    // An expired lease is taken over; the old owner is fenced off.
    tokio::time::sleep(Duration::from_millis(400)).await;
    b.acquire("run_a", "owner-b", ttl).await.unwrap();
    assert_eq!(
        a.save(&waiting, "owner-a").await.unwrap_err().code(),
        store_codes::RUN_LEASE_LOST
    );
    // Releasing someone else's lease does nothing; releasing one's own frees it.
    a.release("run_a", "owner-a").await.unwrap();
    assert_eq!(
        a.acquire("run_a", "owner-a", ttl).await.unwrap_err().code(),
        store_codes::RUN_BUSY
    );
    b.release("run_a", "owner-b").await.unwrap();
    a.acquire("run_a", "owner-a", ttl).await.unwrap();
    assert_eq!(
        a.acquire("run_none", "owner-a", ttl)
            .await
            .unwrap_err()
            .code(),
        store_codes::RUN_NOT_FOUND
    );

    // Renewal extends only the holder's live lease: never someone else's, and never a
    // lease that lapsed and went to another owner and was released meanwhile (a late
    // renewal of the old driver; `acquire` would take that free lease back).
    a.renew("run_a", "owner-a", ttl).await.unwrap();
    assert_eq!(
        b.renew("run_a", "owner-b", ttl).await.unwrap_err().code(),
        store_codes::RUN_LEASE_LOST
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    b.acquire("run_a", "owner-b", ttl).await.unwrap();
    b.save(&waiting, "owner-b").await.unwrap();
    b.release("run_a", "owner-b").await.unwrap();
    assert_eq!(
        a.renew("run_a", "owner-a", ttl).await.unwrap_err().code(),
        store_codes::RUN_LEASE_LOST
    );
    assert_eq!(
        a.save(&waiting, "owner-a").await.unwrap_err().code(),
        store_codes::RUN_LEASE_LOST
    );
    assert_eq!(
        a.renew("run_none", "owner-a", ttl)
            .await
            .unwrap_err()
            .code(),
        store_codes::RUN_NOT_FOUND
    );
    a.acquire("run_a", "owner-a", ttl).await.unwrap();

    // Listing: newest first, by status.
    let mut done = record("run_b", RunStatus::Completed);
    done.updated_at_ms = 10;
    a.create(&done, "owner-a", ttl).await.unwrap();
    let all: Vec<String> = b
        .list(None, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.run_id)
        .collect();
    assert_eq!(all, ["run_b", "run_a"]);
    let waiting: Vec<String> = b
        .list(Some(RunStatus::Waiting), 10)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.run_id)
        .collect();
    assert_eq!(waiting, ["run_a"]);
    assert_eq!(b.list(None, 1).await.unwrap().len(), 1);
}

/// The tool layer one "process" of the tests assembles: file tools over `root`
/// plus the test tools, with `write_mode`.
fn executor(root: &Path, write_mode: ApprovalMode, extra: Vec<Arc<dyn Tool>>) -> ToolExecutor {
    let registry = ToolRegistry::new();
    let files = Arc::new(iris_files::FileService::default());
    for tool in iris_files::builtin_tools_with(&files) {
        registry.register_arc(tool).unwrap();
    }
    registry
        .register(iris_runner::RunLoopTool::ask_question())
        .unwrap();
    for tool in extra {
        registry.register_arc(tool).unwrap();
    }
    let _ = root;
    ToolExecutor::new(registry)
        .with_permission_policy(DefaultPermissionPolicy::new().write_mode(write_mode))
}

fn runner(
    script: &str,
    root: &Path,
    store: Arc<dyn RunStore>,
    executor: ToolExecutor,
) -> AgentRunner {
    AgentRunner::builder(ScriptedProvider::from_yaml(script).unwrap(), executor)
        .workspace(root)
        .run_store(store)
        .lease_ttl(Duration::from_millis(400))
        .build()
}

const READ_THEN_EDIT: &str = r#"
- tool_calls: [{name: read_file, arguments: {file_path: notes.txt}}]
- expect_tool_results: 1
  tool_calls: [{name: edit_file, arguments: {file_path: notes.txt, old_string: milk, new_string: oat milk}}]
- {expect_tool_results: 1, text: Edited.}
"#;

/// A run waits for an approval; a second runner with its own store connection — as
/// another process would — resumes it: the read observation of the first process
/// holds (read-before-edit), the approved edit runs, the run completes.
async fn approval_waits_and_another_process_resumes(kind: Kind) {
    let place = Place::new(kind).await;
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path().canonicalize().unwrap();
    std::fs::write(root.join("notes.txt"), "buy milk\n").unwrap();

    let first = runner(
        READ_THEN_EDIT,
        &root,
        place.open().await,
        executor(&root, ApprovalMode::Confirm, vec![]),
    );
    let RunOutcome::Waiting {
        run_id,
        interaction,
    } = first.run("Edit the note").await
    else {
        panic!("expected a wait")
    };
    let Interaction::Approval(request) = &interaction else {
        panic!("{interaction:?}")
    };
    assert_eq!(request.tool_name, "edit_file");
    assert_eq!(
        std::fs::read_to_string(root.join("notes.txt")).unwrap(),
        "buy milk\n"
    );
    drop(first);

    let store = place.open().await;
    let listed = store.list(Some(RunStatus::Waiting), 10).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert!(
        listed[0]
            .waiting_for
            .as_deref()
            .unwrap()
            .contains("edit_file")
    );

    let second = runner(
        READ_THEN_EDIT,
        &root,
        Arc::clone(&store),
        executor(&root, ApprovalMode::Confirm, vec![]),
    );
    // Wrong kinds of answers and stale ids are refused before anything runs.
    let err = second
        .resume(
            &run_id,
            interaction.id(),
            Answer::Text { text: "yes".into() },
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, "RUN_ANSWER_INVALID", "{err}");
    let err = second
        .resume(&run_id, "someone-else", Answer::Approve)
        .await
        .unwrap_err();
    assert_eq!(err.code, "RUN_INTERACTION_STALE", "{err}");
    let err = second
        .resume("run_none", "x", Answer::Approve)
        .await
        .unwrap_err();
    assert_eq!(err.code, "RUN_NOT_FOUND", "{err}");

    let outcome = second
        .resume(&run_id, interaction.id(), Answer::Approve)
        .await
        .unwrap();
    let RunOutcome::Completed {
        output,
        history,
        turns,
        ..
    } = outcome
    else {
        panic!("{outcome:?}")
    };
    assert_eq!(output, "Edited.");
    assert_eq!(turns, 3);
    assert_eq!(
        std::fs::read_to_string(root.join("notes.txt")).unwrap(),
        "buy oat milk\n"
    );
    let text = serde_json::to_string(&history).unwrap();
    assert!(
        !text.contains("READ_REQUIRED") && !text.contains("Error["),
        "{text}"
    );
    assert_eq!(
        store.load(&run_id).await.unwrap().unwrap().status,
        RunStatus::Completed
    );
    // Answering again: the run no longer waits.
    let err = second
        .resume(&run_id, interaction.id(), Answer::Approve)
        .await
        .unwrap_err();
    assert_eq!(err.code, "RUN_NOT_WAITING", "{err}");
}

/// A model that writes `out.txt`, then says `done`.
const WRITE_OUT: &str = "- tool_calls: [{name: write_file, arguments: {file_path: out.txt, content: x}}]\n- {expect_tool_results: 1, text: done}\n";

/// A run of [`WRITE_OUT`] on `place` that waits for the write's approval: its id and
/// the interaction.
async fn waiting_write(place: &Place, root: &Path) -> (String, Interaction) {
    let first = runner(
        WRITE_OUT,
        root,
        place.open().await,
        executor(root, ApprovalMode::Confirm, vec![]),
    );
    let RunOutcome::Waiting {
        run_id,
        interaction,
    } = first.run("write").await
    else {
        panic!("expected the write to wait for approval")
    };
    (run_id, interaction)
}

/// Permission is checked again when the approved call runs: a policy tightened
/// between the wait and the resume refuses it.
async fn a_tightened_policy_refuses_the_approved_call(kind: Kind) {
    let place = Place::new(kind).await;
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path().canonicalize().unwrap();
    let (run_id, interaction) = waiting_write(&place, &root).await;
    let second = runner(
        WRITE_OUT,
        &root,
        place.open().await,
        executor(&root, ApprovalMode::Deny, vec![]),
    );
    let RunOutcome::Completed { history, .. } = second
        .resume(&run_id, interaction.id(), Answer::Approve)
        .await
        .unwrap()
    else {
        panic!()
    };
    let results =
        serde_json::to_string(history.iter().find(|m| m.role == Role::Tool).unwrap()).unwrap();
    assert!(results.contains("PERMISSION_DENIED"), "{results}");
    assert!(!root.join("out.txt").exists());
}

/// A stored waiting run whose pending turn has fewer result slots than calls (a
/// hand-edited row, another store implementation) is refused with
/// `RUN_STORE_FAILED`, not a panic; nothing runs and the lease is given back.
async fn a_stored_turn_with_missing_result_slots_is_refused(kind: Kind) {
    let place = Place::new(kind).await;
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path().canonicalize().unwrap();
    let (run_id, interaction) = waiting_write(&place, &root).await;
    let store = place.open().await;
    store
        .acquire(&run_id, "editor", Duration::from_secs(5))
        .await
        .unwrap();
    let mut record = store.load(&run_id).await.unwrap().unwrap();
    record.pending.as_mut().unwrap().results.clear();
    store.save(&record, "editor").await.unwrap();
    store.release(&run_id, "editor").await.unwrap();

    let second = runner(
        WRITE_OUT,
        &root,
        place.open().await,
        executor(&root, ApprovalMode::Confirm, vec![]),
    );
    let err = second
        .resume(&run_id, interaction.id(), Answer::Approve)
        .await
        .unwrap_err();
    assert_eq!(err.code, "RUN_STORE_FAILED", "{err}");
    assert!(err.message.contains("1 calls and 0 result slots"), "{err}");
    assert!(!root.join("out.txt").exists());
    // The lease was given back: another owner takes it at once.
    store
        .acquire(&run_id, "after", Duration::from_secs(5))
        .await
        .unwrap();
}

/// `ask_question` waits; the answer must be one of the options; it becomes the
/// call's result.
async fn a_question_waits_for_its_answer(kind: Kind) {
    let place = Place::new(kind).await;
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path().canonicalize().unwrap();
    let script = r#"
- tool_calls: [{name: ask_question, arguments: {question: Which environment?, options: [dev, prod]}}]
- {expect_tool_results: 1, text: Deploying.}
"#;
    let first = runner(
        script,
        &root,
        place.open().await,
        executor(&root, ApprovalMode::Confirm, vec![]),
    );
    let RunOutcome::Waiting {
        run_id,
        interaction,
    } = first.run("deploy").await
    else {
        panic!()
    };
    let Interaction::Question(q) = &interaction else {
        panic!("{interaction:?}")
    };
    assert_eq!(
        (q.question.as_str(), q.options.clone()),
        (
            "Which environment?",
            vec!["dev".to_owned(), "prod".to_owned()]
        )
    );
    let second = runner(
        script,
        &root,
        place.open().await,
        executor(&root, ApprovalMode::Confirm, vec![]),
    );
    let err = second
        .resume(
            &run_id,
            interaction.id(),
            Answer::Text {
                text: "staging".into(),
            },
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, "RUN_ANSWER_INVALID");
    assert!(err.message.contains("dev, prod"), "{err}");
    let err = second
        .resume(&run_id, interaction.id(), Answer::Approve)
        .await
        .unwrap_err();
    assert_eq!(err.code, "RUN_ANSWER_INVALID");
    let RunOutcome::Completed { history, .. } = second
        .resume(
            &run_id,
            interaction.id(),
            Answer::Text {
                text: "prod".into(),
            },
        )
        .await
        .unwrap()
    else {
        panic!()
    };
    let results =
        serde_json::to_string(history.iter().find(|m| m.role == Role::Tool).unwrap()).unwrap();
    assert!(
        results.contains("prod") && results.contains("ask_question"),
        "{results}"
    );
}

/// A tool that blocks forever on its first call (announcing it started), and
/// records every idempotency key it ran with.
struct Blocking {
    definition: ToolDefinition,
    keys: Arc<Mutex<Vec<String>>>,
    started: Arc<tokio::sync::Notify>,
    calls: AtomicUsize,
}

impl Blocking {
    fn new(name: &str, idempotent: bool) -> Arc<Self> {
        let definition =
            ToolDefinition::new(name, "Charges once per key.", json!({"type": "object"}))
                .with_capabilities([ToolCapability::Write])
                .with_idempotent(idempotent);
        Arc::new(Self {
            definition,
            keys: Arc::new(Mutex::new(Vec::new())),
            started: Arc::new(tokio::sync::Notify::new()),
            calls: AtomicUsize::new(0),
        })
    }
}

impl Tool for Blocking {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn run<'a>(
        &'a self,
        _input: iris_tools_core::ToolInput,
        ctx: &'a ToolExecutionContext,
    ) -> iris_tools_core::BoxFuture<'a, ToolOutput> {
        self.keys.lock().unwrap().push(ctx.idempotency_key());
        let first = self.calls.fetch_add(1, Ordering::SeqCst) == 0;
        Box::pin(async move {
            if first {
                self.started.notify_one();
                std::future::pending::<()>().await;
            }
            ToolOutput::text("charged")
        })
    }
}

/// A run "crashes" (its task is dropped, its lease left to expire) while a call is
/// `started`. Recovery while the lease lives is `RUN_BUSY`; afterwards an idempotent
/// tool re-runs with the same key, any other side effect becomes an in-doubt
/// interaction (here skipped) instead of running twice.
async fn a_crash_mid_call_is_recovered_without_a_blind_rerun(kind: Kind) {
    for idempotent in [true, false] {
        let place = Place::new(kind).await;
        let ws = tempfile::tempdir().unwrap();
        let root = ws.path().canonicalize().unwrap();
        let tool = Blocking::new("charge_card", idempotent);
        let script =
            "- tool_calls: [{name: charge_card}]\n- {expect_tool_results: 1, text: finished}\n";
        let first = runner(
            script,
            &root,
            place.open().await,
            executor(
                &root,
                ApprovalMode::Allow,
                vec![Arc::clone(&tool) as Arc<dyn Tool>],
            ),
        );
        let task = tokio::spawn({
            let first = first.clone();
            async move { first.run("pay").await }
        });
        tool.started.notified().await;
        task.abort();
        let _ = task.await;
        let store = place.open().await;
        let run_id = store.list(None, 1).await.unwrap()[0].run_id.clone();
        let second = runner(
            script,
            &root,
            Arc::clone(&store),
            executor(
                &root,
                ApprovalMode::Allow,
                vec![Arc::clone(&tool) as Arc<dyn Tool>],
            ),
        );
        let busy = second.recover(&run_id).await.unwrap_err();
        assert_eq!(busy.code, "RUN_BUSY", "{busy}");
        tokio::time::sleep(Duration::from_millis(600)).await;
        let outcome = second.recover(&run_id).await.unwrap();
        let keys = tool.keys.lock().unwrap().clone();
        if idempotent {
            assert_eq!(outcome.output(), Some("finished"), "{outcome:?}");
            assert_eq!(keys.len(), 2);
            assert_eq!(keys[0], keys[1], "the re-run used the same idempotency key");
            assert_eq!(keys[0], format!("{run_id}:call_1_1"));
        } else {
            assert_eq!(keys.len(), 1, "not run a second time");
            let RunOutcome::Waiting { interaction, .. } = &outcome else {
                panic!("{outcome:?}")
            };
            assert_eq!(interaction.kind(), "in_doubt");
            assert!(interaction.summary().contains("may have run"));
            let RunOutcome::Completed { history, .. } = second
                .resume(&run_id, interaction.id(), Answer::Skip)
                .await
                .unwrap()
            else {
                panic!()
            };
            let text = serde_json::to_string(&history).unwrap();
            assert!(text.contains("TOOL_IN_DOUBT"), "{text}");
            assert_eq!(tool.keys.lock().unwrap().len(), 1);
        }
    }
}

/// A process "crashes" while running a call a human approved through `resume`: the
/// store already says `running` (not `waiting`), so a second `resume` with the same
/// approval is refused and `recover` asks about the call in doubt instead of running
/// the side effect again.
async fn a_crash_during_an_approved_call_is_in_doubt_not_approved_again(kind: Kind) {
    let place = Place::new(kind).await;
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path().canonicalize().unwrap();
    let tool = Blocking::new("charge_card", false);
    let script =
        "- tool_calls: [{name: charge_card}]\n- {expect_tool_results: 1, text: finished}\n";
    let confirm = |store| {
        runner(
            script,
            &root,
            store,
            executor(
                &root,
                ApprovalMode::Confirm,
                vec![Arc::clone(&tool) as Arc<dyn Tool>],
            ),
        )
    };
    let first = confirm(place.open().await);
    let RunOutcome::Waiting {
        run_id,
        interaction,
    } = first.run("pay").await
    else {
        panic!("expected the charge to wait for approval")
    };
    let resuming = tokio::spawn({
        let (run_id, id) = (run_id.clone(), interaction.id().to_owned());
        async move { first.resume(&run_id, &id, Answer::Approve).await }
    });
    tool.started.notified().await;
    resuming.abort();
    let _ = resuming.await;
    tokio::time::sleep(Duration::from_millis(600)).await;

    let second = confirm(place.open().await);
    let again = second
        .resume(&run_id, interaction.id(), Answer::Approve)
        .await
        .unwrap_err();
    assert_eq!(again.code, "RUN_NOT_WAITING", "{again}");
    let outcome = second.recover(&run_id).await.unwrap();
    let RunOutcome::Waiting {
        interaction: doubt, ..
    } = &outcome
    else {
        panic!("{outcome:?}")
    };
    assert_eq!(doubt.kind(), "in_doubt", "{outcome:?}");
    assert_eq!(
        tool.calls.load(Ordering::SeqCst),
        1,
        "not run a second time"
    );
}

/// Two runners race to resume one waiting run: exactly one drives it; the
/// approved side effect happens once.
async fn racing_resumes_drive_the_run_once(kind: Kind) {
    let place = Place::new(kind).await;
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path().canonicalize().unwrap();
    let count = Arc::new(AtomicUsize::new(0));
    let slow = {
        let count = Arc::clone(&count);
        let def = ToolDefinition::new("deploy", "Deploys.", json!({"type": "object"}))
            .with_capabilities([ToolCapability::Execute]);
        Arc::new(FnTool::new(def, move |_, _| {
            let count = Arc::clone(&count);
            async move {
                count.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(300)).await;
                ToolOutput::text("deployed")
            }
        })) as Arc<dyn Tool>
    };
    let script = "- tool_calls: [{name: deploy}]\n- {expect_tool_results: 1, text: live}\n";
    let make = |store| {
        runner(
            script,
            &root,
            store,
            executor(&root, ApprovalMode::Confirm, vec![Arc::clone(&slow)]),
        )
    };
    let first = make(place.open().await);
    let RunOutcome::Waiting {
        run_id,
        interaction,
    } = first.run("ship").await
    else {
        panic!()
    };
    let (a, b) = (make(place.open().await), make(place.open().await));
    let (ra, rb) = tokio::join!(
        a.resume(&run_id, interaction.id(), Answer::Approve),
        b.resume(&run_id, interaction.id(), Answer::Approve)
    );
    let (ok, err): (Vec<_>, Vec<_>) = [ra, rb].into_iter().partition(Result::is_ok);
    assert_eq!(
        ok.len(),
        1,
        "exactly one resume drives the run: {ok:?} {err:?}"
    );
    let err = err.into_iter().next().unwrap().unwrap_err();
    assert!(
        ["RUN_BUSY", "RUN_NOT_WAITING", "RUN_INTERACTION_STALE"].contains(&err.code.as_str()),
        "{err}"
    );
    assert_eq!(ok[0].as_ref().unwrap().output(), Some("live"));
    assert_eq!(count.load(Ordering::SeqCst), 1, "the deploy ran once");
}

const TWO_READS_THEN_ANSWER: &str = r#"
- tool_calls:
    - {name: read_file, arguments: {file_path: notes.txt}}
    - {name: read_file, arguments: {file_path: notes.txt}}
  usage: {input_tokens: 10, output_tokens: 1}
- {expect_tool_results: 2, text: Read twice., usage: {input_tokens: 10, output_tokens: 1}}
"#;

/// A run stops at its tool-call budget in the middle of a turn (the second read is
/// held) and another "process" with a raised limit goes on from the held call: what
/// the run spent is kept in the store across processes.
async fn a_budget_stop_is_resumed_with_a_raised_limit(kind: Kind) {
    let place = Place::new(kind).await;
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path().canonicalize().unwrap();
    std::fs::write(root.join("notes.txt"), "buy milk\n").unwrap();
    let limits = |n| iris_runner::budget::Limits {
        max_tool_calls: Some(n),
        ..Default::default()
    };
    let first = AgentRunner::builder(
        ScriptedProvider::from_yaml(TWO_READS_THEN_ANSWER).unwrap(),
        executor(&root, ApprovalMode::Allow, vec![]),
    )
    .workspace(&root)
    .run_store(place.open().await)
    .limits(limits(1))
    .build();
    let RunOutcome::Failed { error } = first.run("Read it").await else {
        panic!("expected the budget to stop the run")
    };
    assert_eq!(
        error.code,
        iris_runner::codes::RUN_BUDGET_EXCEEDED,
        "{error}"
    );
    let store = place.open().await;
    let runs = store.list(None, 10).await.unwrap();
    let run_id = runs[0].run_id.clone();
    let record = store.load(&run_id).await.unwrap().unwrap();
    assert_eq!(record.spent.tool_calls["read_file"], 1);
    let pending = record.pending.unwrap();
    assert!(pending.results[0].is_some() && pending.results[1].is_none());

    let second = AgentRunner::builder(
        ScriptedProvider::from_yaml(TWO_READS_THEN_ANSWER).unwrap(),
        executor(&root, ApprovalMode::Allow, vec![]),
    )
    .workspace(&root)
    .run_store(place.open().await)
    .limits(limits(2))
    .build();
    let outcome = second.resume_exceeded(&run_id).await.unwrap();
    assert_eq!(outcome.output(), Some("Read twice."), "{outcome:?}");
    let record = place.open().await.load(&run_id).await.unwrap().unwrap();
    assert_eq!(record.spent.tool_calls["read_file"], 2);
    assert!(record.spent.counted_calls.is_empty());
    // A completed run is no budget stop: it does not continue.
    let err = second.resume_exceeded(&run_id).await.unwrap_err();
    assert_eq!(err.code, iris_runner::codes::RUN_NOT_WAITING, "{err}");
}

macro_rules! on_every_store {
    ($($name:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() { super::$name(super::Kind::Memory).await }
            )*
        }
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() { super::$name(super::Kind::Sqlite).await }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() { super::$name(super::Kind::Postgres).await }
            )*
        }
    };
}

on_every_store!(
    store_contract,
    approval_waits_and_another_process_resumes,
    a_tightened_policy_refuses_the_approved_call,
    a_stored_turn_with_missing_result_slots_is_refused,
    a_question_waits_for_its_answer,
    a_crash_mid_call_is_recovered_without_a_blind_rerun,
    a_crash_during_an_approved_call_is_in_doubt_not_approved_again,
    racing_resumes_drive_the_run_once,
    a_budget_stop_is_resumed_with_a_raised_limit,
);

/// The default store of a YAML agent is SQLite under the workspace; a second
/// runner from the same YAML (another process) resumes what the first left waiting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_yaml_agent_persists_to_sqlite_under_its_workspace_by_default() {
    let fx = crate::support::Fixture::new(
        r#"
tools: {builtin: [file.write]}
model:
  provider: scripted
  script:
    - tool_calls: [{name: write_file, arguments: {file_path: out.txt, content: "hi\n"}}]
    - {expect_tool_results: 1, text: Written.}
"#,
        &[],
    );
    let first = AgentRunner::from_config_path(fx.file()).await.unwrap();
    let RunOutcome::Waiting {
        run_id,
        interaction,
    } = first.run("write").await
    else {
        panic!()
    };
    first.close().await.unwrap();
    assert!(fx.root().join(".iris/runs.db").is_file());
    let second = AgentRunner::from_config_path(fx.file()).await.unwrap();
    let outcome = second
        .resume(&run_id, interaction.id(), Answer::Approve)
        .await
        .unwrap();
    assert_eq!(outcome.output(), Some("Written."));
    assert_eq!(
        std::fs::read_to_string(fx.root().join("out.txt")).unwrap(),
        "hi\n"
    );
    second.close().await.unwrap();
}

/// Which paths a SIGKILL test uses.
fn kill_paths(dir: &Path) -> (PathBuf, PathBuf) {
    (dir.join("runs.db"), dir.join("started"))
}

/// A process driving a run is killed with SIGKILL mid-call; a new process recovers
/// the run from SQLite once the dead process's lease expired, and asks about the
/// in-doubt write instead of running it again. The test re-runs itself as the child
/// (`IRIS_RUNNER_SIGKILL_DIR` set) that is killed.
#[test]
fn a_run_whose_process_was_sigkilled_is_recovered_by_a_new_process() {
    if let Some(dir) = std::env::var_os("IRIS_RUNNER_SIGKILL_DIR") {
        sigkill_child(Path::new(&dir));
        return;
    }
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(sigkill_parent());
}

/// The child half of the SIGKILL test: a run whose write blocks after announcing
/// it started; the parent kills this process with SIGKILL.
fn sigkill_child(dir: &Path) {
    let dir = dir.to_path_buf();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let (db, started) = kill_paths(&dir);
            let store = Arc::new(SqliteRunStore::open(&db).await.unwrap());
            let tool = Blocking::new("charge_card", false);
            let r = runner(
                "- tool_calls: [{name: charge_card}]\n- {expect_tool_results: 1, text: finished}\n",
                &dir,
                store,
                executor(
                    &dir,
                    ApprovalMode::Allow,
                    vec![Arc::clone(&tool) as Arc<dyn Tool>],
                ),
            );
            let run = tokio::spawn(async move { r.run("pay").await });
            tool.started.notified().await;
            std::fs::write(&started, "1").unwrap();
            let _ = run.await;
        });
}

async fn sigkill_parent() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (db, started) = kill_paths(&root);
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "durable::a_run_whose_process_was_sigkilled_is_recovered_by_a_new_process",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("IRIS_RUNNER_SIGKILL_DIR", &root)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    for _ in 0..600 {
        if started.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(started.exists(), "the child never reached its tool call");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    let store: Arc<dyn RunStore> = Arc::new(SqliteRunStore::open(&db).await.unwrap());
    let summary = store.list(None, 1).await.unwrap().remove(0);
    assert_eq!(
        summary.status,
        RunStatus::Running,
        "the dead process left it running"
    );
    let tool = Blocking::new("charge_card", false);
    tool.calls.store(1, Ordering::SeqCst);
    let recovering = runner(
        "- tool_calls: [{name: charge_card}]\n- {expect_tool_results: 1, text: finished}\n",
        &root,
        Arc::clone(&store),
        executor(
            &root,
            ApprovalMode::Allow,
            vec![Arc::clone(&tool) as Arc<dyn Tool>],
        ),
    );
    let mut outcome = recovering.recover(&summary.run_id).await;
    for _ in 0..40 {
        match &outcome {
            Err(e) if e.code == "RUN_BUSY" => {
                tokio::time::sleep(Duration::from_millis(100)).await;
                outcome = recovering.recover(&summary.run_id).await;
            }
            _ => break,
        }
    }
    let outcome = outcome.unwrap();
    let RunOutcome::Waiting { interaction, .. } = &outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(interaction.kind(), "in_doubt");
    assert!(
        tool.keys.lock().unwrap().is_empty(),
        "the write did not run again"
    );
    let done = recovering
        .resume(
            &summary.run_id,
            interaction.id(),
            Answer::Record {
                output: "charged once (checked by hand)".into(),
            },
        )
        .await
        .unwrap();
    assert_eq!(done.output(), Some("finished"));
}

/// A PostgreSQL URL is refused before any connection when it cannot be used safely:
/// unparsable (its text not quoted), or a remote host without TLS unless the URL says
/// `sslmode=disable`.
#[tokio::test]
async fn postgres_urls_that_cannot_be_used_safely_are_refused_before_connecting() {
    for (url, fragment) in [
        ("not a url = =", "does not parse"),
        (
            "postgresql://iris:hunter2@db.example.com/runs",
            "sslmode=disable",
        ),
    ] {
        let err = PostgresRunStore::connect(url).await.unwrap_err();
        assert_eq!(err.code(), "RUN_STORE_FAILED", "{url}");
        assert!(err.to_string().contains(fragment), "{url}: {err}");
        assert!(!err.to_string().contains("hunter2"), "{err}");
    }
}

/// A SQLite store in `<workspace>/.iris/` makes that folder with its `.gitignore`
/// (`*`): the database holds whole conversations. A store elsewhere adds no ignore file.
#[tokio::test]
async fn a_store_in_the_state_folder_is_ignored_by_git() {
    let ws = tempfile::tempdir().unwrap();
    SqliteRunStore::open(ws.path().join(".iris/runs.db"))
        .await
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(ws.path().join(".iris/.gitignore")).unwrap(),
        "*\n"
    );
    let elsewhere = tempfile::tempdir().unwrap();
    SqliteRunStore::open(elsewhere.path().join("db/runs.db"))
        .await
        .unwrap();
    assert!(!elsewhere.path().join("db/.gitignore").exists());
}
