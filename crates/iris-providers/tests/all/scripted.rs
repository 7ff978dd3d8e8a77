//! Tests for the `scripted` area: `ScriptedProvider` replaying YAML and JSON scripts.
// Tests report failures by panicking, so unwrap is the clearest assertion here.
#![allow(clippy::unwrap_used)]

use iris_providers::chat::{CompletionRequest, Message, StopReason, StreamEvent, Usage};
use iris_providers::scripted::{MAX_SCRIPT_BYTES, Script, ScriptTurn};
use iris_providers::{CompletionProvider, ScriptedProvider};
use iris_tools_core::ToolOutput;
use serde_json::json;

use crate::support::stream_turn;

const SCRIPT: &str = r#"
- text: Reading both files.
  tool_calls:
    - name: read_file
      arguments: {file_path: a.txt}
    - name: read_file
      id: my_call
      arguments: '{"file_path": "b.txt"'
  usage: {input_tokens: 120, output_tokens: 30}
- expect_tool_results: 2
  text: Both files say hello.
"#;

fn request() -> CompletionRequest {
    CompletionRequest::new("scripted-model").with_message(Message::user("Read a and b"))
}

#[tokio::test]
async fn a_yaml_script_plays_turn_by_turn_and_then_runs_out() {
    let provider = ScriptedProvider::from_yaml(SCRIPT).unwrap();
    assert_eq!(provider.name(), "scripted");
    let mut request = request();
    let (events, first) = stream_turn(&provider, &request).await;

    assert_eq!(first.text, "Reading both files.");
    assert_eq!(first.stop, StopReason::ToolUse);
    assert_eq!(first.usage, Usage::new(120, 30));
    assert_eq!(first.model.as_deref(), Some("scripted-model"));
    assert_eq!(first.tool_calls[0].id, "call_1_1");
    assert_eq!(first.tool_calls[0].arguments, json!({"file_path": "a.txt"}));
    // A string is raw argument text: here malformed on purpose.
    assert_eq!(first.tool_calls[1].id, "my_call");
    assert!(first.tool_calls[1].problem.is_some());
    assert_eq!(
        first.tool_calls[1].raw_arguments,
        r#"{"file_path": "b.txt""#
    );
    assert!(matches!(events[0], StreamEvent::TextDelta(_)));

    // The expectation holds only once both results are in the request.
    request.messages.push(first.to_message());
    let one = ToolOutput::text("hello").into_result("call_1_1", "read_file");
    request.messages.push(Message::tool_results([&one]));
    let err = provider.complete(&request).await.unwrap_err();
    assert_eq!(err.code(), "PROVIDER_SCRIPT_INVALID");
    assert!(
        err.to_string().contains("turn 2 expects 2 tool result(s)"),
        "{err}"
    );
    assert_eq!(provider.played(), 1);

    let two = first.tool_calls[1].problem_result().unwrap();
    request.messages.pop();
    request.messages.push(Message::tool_results([&one, &two]));
    let second = provider.complete(&request).await.unwrap();
    assert_eq!(second.text, "Both files say hello.");
    assert_eq!(second.stop, StopReason::EndTurn);
    assert_eq!(provider.remaining(), 0);

    let err = provider.complete(&request).await.unwrap_err();
    assert_eq!(err.code(), "PROVIDER_SCRIPT_EXHAUSTED");
    assert!(err.to_string().contains("all 2 turns were played"), "{err}");
    let (events, err) = crate::support::drain(provider.stream(&request)).await;
    assert!(events.is_empty());
    assert_eq!(err.unwrap().code(), "PROVIDER_SCRIPT_EXHAUSTED");

    provider.reset();
    let fresh = self::request();
    assert_eq!(
        provider.complete(&fresh).await.unwrap().text,
        "Reading both files."
    );
}

#[tokio::test]
async fn json_scripts_and_the_turns_mapping_work_too() {
    let json_script = r#"{"turns": [
        {"refusal": "I won't do that."},
        {"text": "Cut short", "stop": "max_tokens"}
    ]}"#;
    let provider = ScriptedProvider::from_json(json_script).unwrap();
    let refused = provider.complete(&request()).await.unwrap();
    assert_eq!(refused.stop, StopReason::Refusal);
    assert_eq!(
        refused.check_refusal().unwrap_err().code(),
        "PROVIDER_REFUSED"
    );
    let (events, cut) = stream_turn(&provider, &request()).await;
    assert_eq!(cut.stop, StopReason::MaxTokens);
    assert_eq!(events.len(), 3); // text, usage, completed
}

#[test]
fn malformed_scripts_are_refused_with_the_turn_named() {
    let cases = [
        ("- txt: typo", "unknown field `txt`"),
        ("- {}", "turn 1: give `text`, `tool_calls` or `refusal`"),
        (
            "- text: a\n- tool_calls: [{arguments: {}}]",
            "missing field `name`",
        ),
        (
            "- tool_calls: [{name: ''}]",
            "turn 1: tool call 1 has no `name`",
        ),
        (
            "- tool_calls: [{name: t, arguments: [1]}]",
            "`arguments` must be an object",
        ),
        (
            "- tool_calls: [{name: t, id: x}, {name: t, id: x}]",
            "tool call 2 repeats an id",
        ),
        ("just text", "a script is a list of turns"),
        ("turns: [{text: a}]\nmodel: x", "unknown field `model`"),
    ];
    for (script, expected) in cases {
        let err = ScriptedProvider::from_yaml(script).unwrap_err();
        assert_eq!(err.code(), "PROVIDER_SCRIPT_INVALID", "{script}");
        assert!(err.to_string().contains(expected), "{script}: {err}");
    }
}

/// Flow collections nested past the limit are refused before libyaml reads them (its
/// scanner is quadratic in flow depth), with the place named.
#[test]
fn deeply_nested_scripts_are_refused_before_parsing() {
    let deep = format!(
        "- tool_calls: [{{name: t, arguments: {{a: {}1{}}}}}]",
        "[".repeat(100),
        "]".repeat(100)
    );
    let err = ScriptedProvider::from_yaml(&deep).unwrap_err();
    assert_eq!(err.code(), "PROVIDER_SCRIPT_INVALID");
    assert!(
        err.to_string()
            .contains("nest deeper than 64 levels at line 1"),
        "{err}"
    );
}

#[tokio::test]
async fn scripts_load_from_files_within_a_size_cap() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("script.yaml");
    std::fs::write(&path, SCRIPT).unwrap();
    let provider = ScriptedProvider::from_path(&path).unwrap();
    assert_eq!(provider.script().turns.len(), 2);

    let huge = dir.path().join("huge.yaml");
    let line = "- text: padding padding padding\n";
    let copies = usize::try_from(MAX_SCRIPT_BYTES).unwrap() / line.len() + 1;
    std::fs::write(&huge, line.repeat(copies)).unwrap();
    let err = ScriptedProvider::from_path(&huge).unwrap_err();
    assert!(err.to_string().contains("larger than"), "{err}");

    let err = ScriptedProvider::from_path(dir.path().join("missing.yaml")).unwrap_err();
    assert_eq!(err.code(), "PROVIDER_SCRIPT_INVALID");

    // A FIFO would block a plain read forever: it is refused at once.
    let fifo = dir.path().join("script.fifo");
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .unwrap();
    let err = ScriptedProvider::from_path(&fifo).unwrap_err();
    assert_eq!(err.code(), "PROVIDER_SCRIPT_INVALID");
    assert!(err.to_string().contains("is a FIFO"), "{err}");
}

#[tokio::test]
async fn scripts_can_be_built_in_code() {
    let script = Script::new(vec![
        ScriptTurn::text("Looking.").with_tool_call("list_files", json!({"path": "."})),
        ScriptTurn::text("Done.").expecting_tool_results(1),
    ])
    .unwrap();
    let provider = ScriptedProvider::new(script);
    let turn = provider.complete(&request()).await.unwrap();
    assert_eq!(turn.tool_calls[0].to_tool_use().unwrap().name, "list_files");
}

/// A fresh provider given a history with one assistant turn plays the second turn: a
/// run resumed by another process continues its script; one provider never replays.
#[tokio::test]
async fn a_fresh_provider_continues_after_the_historys_assistant_turns() {
    let script = "- tool_calls: [{name: write_file}]\n- text: second\n- text: third\n";
    let first = ScriptedProvider::from_yaml(script).unwrap();
    let request = CompletionRequest::new("scripted").with_message(Message::user("go"));
    let turn = first.complete(&request).await.unwrap();
    let results = [ToolOutput::text("ok").into_result(&turn.tool_calls[0].id, "write_file")];
    let resumed_request = request
        .with_message(turn.to_message())
        .with_message(Message::tool_results(&results));
    let fresh = ScriptedProvider::from_yaml(script).unwrap();
    assert_eq!(
        fresh.complete(&resumed_request).await.unwrap().text,
        "second"
    );
    assert_eq!(fresh.played(), 2);
    // The same provider asked again with the same history moves on, never back.
    assert_eq!(
        fresh.complete(&resumed_request).await.unwrap().text,
        "third"
    );
}
