//! The tool definitions (tool-design lint), input validation and the borrowed binding.

use std::sync::Arc;

use iris_command::{
    CloseOutcome, CommandBinding, CommandConfig, CommandService, ExecCommandTool, RunPythonTool,
    command_tools,
};
use iris_providers::lint::lint_definition;
use iris_tools_core::{
    Tool, ToolCapability, ToolExecutionContext, ToolInput, ToolRegistry, ToolTimeoutOwner,
};
use serde_json::{Value, json};

fn native_binding(dir: &tempfile::TempDir) -> CommandBinding {
    CommandBinding::owned(CommandService::new(CommandConfig::native(), dir.path()).unwrap())
}

#[test]
fn definitions_follow_the_tool_design_rules() {
    let dir = tempfile::tempdir().unwrap();
    let tools = command_tools(&native_binding(&dir));
    let names: Vec<&str> = tools.iter().map(|t| t.definition().name.as_str()).collect();
    assert_eq!(names, ["exec_command", "run_python"]);
    for tool in &tools {
        let def = tool.definition();
        def.validate().unwrap();
        assert_eq!(lint_definition(def), vec![], "{}", def.name);
        let lines = def.description.lines().count();
        let chars = def.description.chars().count();
        assert!(
            lines == 3 && (60..=200).contains(&chars),
            "{}: {lines} lines, {chars} chars",
            def.name
        );
        assert!(def.capabilities.contains(&ToolCapability::Execute));
        assert!(!tool.is_read_only() && tool.is_destructive());
        assert!(!tool.is_concurrency_safe());
        assert_eq!(tool.timeout_owner(), ToolTimeoutOwner::Tool);
    }
    let schemas: Vec<(&str, &str, &Value)> = tools
        .iter()
        .map(|t| {
            let d = t.definition();
            (d.name.as_str(), d.description.as_str(), &d.input_schema)
        })
        .collect();
    insta::assert_json_snapshot!("tool_definitions", schemas);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_invalid_input() {
    let dir = tempfile::tempdir().unwrap();
    let binding = native_binding(&dir);
    binding.prepare().await.unwrap();
    let exec = ExecCommandTool::new(binding.clone());
    let python = RunPythonTool::new(binding.clone());
    let ctx = ToolExecutionContext::new(dir.path());
    // (tool, input, fragment of the message)
    let table: &[(&dyn Tool, Value, &str)] = &[
        (&exec, json!({}), "missing field `command`"),
        (&exec, json!({"command": ""}), "`command` must not be empty"),
        (
            &exec,
            json!({"command": "  "}),
            "`command` must not be empty",
        ),
        (&exec, json!({"command": 5}), "invalid type"),
        (
            &exec,
            json!({"command": "true", "shell": "bash"}),
            "unknown field `shell`",
        ),
        (
            &exec,
            json!({"command": "true", "timeout_seconds": 0}),
            "`timeout_seconds` must be a positive number",
        ),
        (
            &exec,
            json!({"command": "true", "timeout_seconds": -3}),
            "positive number",
        ),
        (
            &exec,
            json!({"command": "true", "timeout_seconds": "5"}),
            "invalid type",
        ),
        (&exec, json!({"command": "true", "cwd": 1}), "invalid type"),
        (&exec, json!({"code": "print(1)"}), "unknown field `code`"),
        (&python, json!({}), "missing field `code`"),
        (&python, json!({"code": "\n"}), "`code` must not be empty"),
        (
            &python,
            json!({"code": "print(1)", "stdin": "x"}),
            "unknown field `stdin`",
        ),
    ];
    for (tool, input, fragment) in table {
        let validated = tool.validate_input(input.clone());
        let err = validated.unwrap_err();
        assert_eq!(err.code, "INVALID_INPUT", "{input}");
        assert!(err.message.contains(fragment), "{input}: {}", err.message);
        let result = tool.run(ToolInput::new(input.clone()), &ctx).await;
        assert_eq!(result.error_code(), Some("INVALID_INPUT"), "{input}");
    }
    // Valid inputs pass validation unchanged; null timeout means "none".
    for input in [
        json!({"command": "true"}),
        json!({"command": "true", "cwd": ".", "timeout_seconds": null}),
    ] {
        assert_eq!(exec.validate_input(input.clone()).unwrap().value(), &input);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_register_and_a_borrower_cannot_close() {
    let dir = tempfile::tempdir().unwrap();
    let root = native_binding(&dir);
    root.prepare().await.unwrap();
    let child = CommandBinding::borrowed(&root);
    assert!(root.is_owner() && !child.is_owner());
    assert!(!CommandBinding::borrowed(&child).is_owner());

    let registry = ToolRegistry::new();
    registry.register_many(command_tools(&child)).unwrap();
    let exec: Arc<dyn Tool> = registry.get("exec_command").unwrap();
    let ctx = ToolExecutionContext::new(dir.path());

    // The child's teardown closes nothing; the root's environment keeps working.
    assert_eq!(child.close().await.unwrap(), CloseOutcome::NotOwner);
    assert!(!root.is_closed());
    let result = exec
        .run(ToolInput::new(json!({"command": "echo still here"})), &ctx)
        .await;
    assert_eq!(result.model_content(), "still here\n");

    // Only the owner closes; the borrower then sees an unavailable environment.
    assert_eq!(root.close().await.unwrap(), CloseOutcome::Closed);
    assert!(child.is_closed());
    let result = exec
        .run(ToolInput::new(json!({"command": "true"})), &ctx)
        .await;
    assert_eq!(result.error_code(), Some("COMMAND_UNAVAILABLE"));
    assert_eq!(
        root.close().await.unwrap(),
        CloseOutcome::Closed,
        "idempotent"
    );
}

/// The executor's deadline for a command is the configured root timeout
/// (`command.timeout_seconds`), above and below the executor's own 60 s default;
/// a call's `timeout_seconds` then only shortens it.
#[test]
fn the_executor_deadline_of_a_command_is_the_configured_timeout() {
    let dir = tempfile::tempdir().unwrap();
    for (root, bound) in [(120.0, "tool"), (300.0, "tool"), (20.0, "tool")] {
        let config = CommandConfig::native().with_timeout_seconds(root);
        let binding = CommandBinding::owned(CommandService::new(config, dir.path()).unwrap());
        let executor = iris_executor::ToolExecutor::new(ToolRegistry::new());
        let ctx = ToolExecutionContext::new(dir.path());
        for tool in command_tools(&binding) {
            let deadline = executor.effective_deadline(tool.as_ref(), &ctx).unwrap();
            assert_eq!(deadline.seconds(), root, "{}", tool.definition().name);
            assert_eq!(deadline.bound.as_str(), bound);
        }
    }
}

/// `{:?}` of a config, a service and a Docker config names the variables it sets for
/// commands, never their values.
#[test]
fn debug_output_names_variables_and_hides_their_values() {
    let dir = tempfile::tempdir().unwrap();
    let mut docker = iris_command::DockerConfig::default();
    docker
        .environment
        .insert("DOCKER_TOKEN".into(), "s3cret-docker".into());
    let native = CommandConfig::native().with_env("API_TOKEN", "s3cret-native");
    let service = CommandService::new(native.clone(), dir.path()).unwrap();
    let docker_service = CommandService::new(
        CommandConfig::docker(docker.clone()).with_env("API_TOKEN", "s3cret-native"),
        dir.path(),
    )
    .unwrap();
    for shown in [
        format!("{native:?}"),
        format!("{service:?}"),
        format!("{docker:?}"),
        format!("{docker_service:?}"),
    ] {
        assert!(!shown.contains("s3cret"), "a value is shown: {shown}");
        assert!(
            shown.contains("API_TOKEN") || shown.contains("DOCKER_TOKEN"),
            "{shown}"
        );
    }
    assert!(format!("{docker_service:?}").contains("DOCKER_TOKEN"));
}
