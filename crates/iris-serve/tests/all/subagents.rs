//! A subagent's child run that waits: the parent relays its approval with the diff the
//! child's write would make in the child's own workspace; the child is answered
//! through its parent only (`RUN_IS_SUBAGENT`). On `examples/subagents`.

use std::path::Path;

use serde_json::{Value, json};

use crate::support::{Store, serve_in};

/// Copies the folder `from` into `to`.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_name() == ".iris" {
            // Runs of the example run by hand.
            continue;
        }
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_childs_approval_is_relayed_with_its_diff_and_answered_through_the_parent() {
    let dir = tempfile::tempdir().unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/subagents");
    copy_dir(&example, dir.path());
    // The scribe's workspace is notes/: its summary.md is new there, whatever the
    // lead's root holds under that name.
    std::fs::write(dir.path().join("summary.md"), "The lead's own file.\n").unwrap();
    // The lead borrows its children a command service; this test binary has no
    // sandbox helper beside it, and no agent here runs a command.
    let lead = std::fs::read_to_string(example.join("iris.yaml")).unwrap()
        + "command:\n  sandbox: {filesystem: off, network: on}\n";
    let serving = serve_in(
        Some(dir.path()),
        &[("default", lead)],
        &Store::Sqlite,
        |o| o,
    )
    .await;
    let run_id = serving.start_run("default", "Summarize the notes").await;
    let run = serving.wait_for(&run_id, "waiting").await;
    let interaction = &run["interaction"];
    assert_eq!(interaction["kind"], "subagent", "{run}");
    assert_eq!(interaction["agent_selector"], "scribe");
    let inner = &interaction["inner"];
    assert_eq!(inner["kind"], "approval", "{run}");
    assert_eq!(inner["tool_name"], "write_file");
    let diff = inner["diff"]
        .as_str()
        .unwrap_or_else(|| panic!("no diff: {run}"));
    assert!(diff.contains("--- /dev/null\n+++ b/summary.md\n"), "{diff}");
    assert!(!diff.contains("lead's own"), "{diff}");
    assert!(
        diff.contains("+Renew the TLS certificate; rotate the API keys.\n"),
        "{diff}"
    );
    assert!(
        interaction.get("diff").is_none(),
        "the parent's own call is no edit: {run}"
    );

    // The child run waits too, and is answered only through its parent.
    let child = interaction["child_run_id"].as_str().unwrap().to_owned();
    let child_run = serving.wait_for(&child, "waiting").await;
    assert_eq!(child_run["parent_run_id"], json!(run_id));
    let (status, body) = serving
        .post(
            &format!("/v1/runs/{child}/answer"),
            &json!({"interaction_id": inner["id"], "answer": "approve"}),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (409, Some("RUN_IS_SUBAGENT")),
        "{body}"
    );
    assert!(!dir.path().join("notes/summary.md").exists());

    let (status, body) = serving
        .post(
            &format!("/v1/runs/{run_id}/answer"),
            &json!({"interaction_id": interaction["id"], "answer": "approve"}),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    let done = serving.wait_for(&run_id, "completed").await;
    assert_eq!(done["interaction"], Value::Null);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes/summary.md")).unwrap(),
        "Renew the TLS certificate; rotate the API keys.\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("summary.md")).unwrap(),
        "The lead's own file.\n"
    );
    serving.wait_for(&child, "completed").await;
    serving.shut_down().await;
}
