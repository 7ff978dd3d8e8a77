//! The environment of commands: the host's secrets and other variables never reach a
//! command; the allow-list, `env_passthrough` and `env` do. The host environment of a
//! real call is set by re-running each test as a child process (edition 2024 makes
//! `set_var` unsafe, and the workspace forbids unsafe code).

use std::collections::BTreeMap;

use iris_command::{CommandBinding, CommandConfig, CommandRequest, DockerConfig, command_tools};
use iris_executor::{ApprovalMode, DefaultPermissionPolicy, ToolExecutor};
use iris_tools_core::{ToolExecutionContext, ToolRegistry, ToolUse};
use serde_json::json;

use crate::support::{Backend, Harness, child_runtime, in_child, run_in_child};

/// The host environment of the child: a secret, an unrelated host variable, a variable
/// to pass through and a locale variable.
const HOST: [(&str, &str); 4] = [
    ("IRIS_PROVIDER_API_KEYS__TAVILY", "secret-value"),
    ("HOST_ONLY_VAR_7F3A", "leaked-host-value"),
    ("PASS_ME", "passed"),
    ("LC_MEASUREMENT", "C"),
];

const PRINT_ENV: &str =
    "import os\nfor k in sorted(os.environ):\n    print(k + '=' + os.environ[k])";

/// `NAME=value` lines as a map (a line without `=` continues a value; ignored).
fn vars(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// What no command may see, whatever the mode.
fn assert_no_host_leak(what: &str, text: &str) {
    assert!(
        !text.contains("secret-value"),
        "{what} saw the secret:\n{text}"
    );
    assert!(
        !text.contains("IRIS_"),
        "{what} saw an IRIS_* variable:\n{text}"
    );
    assert!(
        !text.contains("HOST_ONLY_VAR_7F3A") && !text.contains("leaked-host-value"),
        "{what} saw a host variable that is not allow-listed:\n{text}"
    );
    assert!(!text.contains("NOT_SET_ANYWHERE"), "{what}:\n{text}");
}

/// `exec_command env` and a `run_python` that prints `os.environ`, through the executor
/// as a model would call them: the secret and every other host variable stay out; the
/// allow-listed, passed-through and explicit variables arrive.
#[test]
fn native_tools_get_an_allow_listed_environment() {
    if !in_child() {
        run_in_child("env::native_tools_get_an_allow_listed_environment", &HOST);
        return;
    }
    child_runtime().block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let config = CommandConfig::native()
            .with_env("EXPLICIT_VAR", "explicit")
            .with_env_passthrough(["PASS_ME", "NOT_SET_ANYWHERE_9C1"]);
        let service = iris_command::CommandService::new(config, dir.path()).unwrap();
        service.prepare().await.unwrap();
        let binding = CommandBinding::owned(service);
        let registry = ToolRegistry::new();
        registry.register_many(command_tools(&binding)).unwrap();
        let executor = ToolExecutor::new(registry).with_permission_policy(
            DefaultPermissionPolicy::new().execute_mode(ApprovalMode::Allow),
        );
        let ctx = ToolExecutionContext::new(dir.path()).session_id("s-env");
        let shell = executor
            .execute_one(
                &ToolUse::new("c1", "exec_command", json!({"command": "env"})),
                &ctx,
                None,
            )
            .await;
        let python = executor
            .execute_one(
                &ToolUse::new("c2", "run_python", json!({"code": PRINT_ENV})),
                &ctx,
                None,
            )
            .await;
        let host_path = std::env::var("PATH").unwrap();
        let host_home = std::env::var("HOME").ok();
        for (what, result) in [("exec_command", shell), ("run_python", python)] {
            assert!(!result.is_error(), "{what}: {}", result.model_content());
            let text = result.model_content();
            assert_no_host_leak(what, &text);
            let got = vars(&text);
            assert_eq!(
                got.get("PASS_ME").map(String::as_str),
                Some("passed"),
                "{what}"
            );
            assert_eq!(
                got.get("EXPLICIT_VAR").map(String::as_str),
                Some("explicit"),
                "{what}"
            );
            assert_eq!(
                got.get("LC_MEASUREMENT").map(String::as_str),
                Some("C"),
                "{what}"
            );
            assert_eq!(got.get("HOME"), host_home.as_ref(), "{what}");
            if what == "exec_command" {
                // (A pyenv shim in front of python3 prepends its own directories.)
                assert_eq!(got.get("PATH"), Some(&host_path), "{what}");
            }
            // Nothing but the allow-list, the configured names and what the shell, or
            // a pyenv shim in front of Python, add themselves.
            let extra: Vec<&String> = got
                .keys()
                .filter(|k| {
                    !iris_command::env::is_default_allowed(k)
                        && !k.trim_start_matches('_').starts_with("PYENV_")
                        && !["PASS_ME", "EXPLICIT_VAR", "PWD", "OLDPWD", "SHLVL", "_"]
                            .contains(&k.as_str())
                })
                .collect();
            assert!(extra.is_empty(), "{what} got host variables {extra:?}");
        }
        binding.close().await.unwrap();
    });
}

/// Docker: the container has `docker.environment`, `env_passthrough` and `env`, and
/// nothing of the host besides (not even the host's allow-listed variables).
#[test]
fn docker_commands_get_only_the_configured_environment() {
    if !in_child() {
        run_in_child(
            "env::docker_commands_get_only_the_configured_environment",
            &HOST,
        );
        return;
    }
    child_runtime().block_on(async {
        let mut docker = DockerConfig::default();
        docker
            .environment
            .insert("FROM_DOCKER".into(), "docker value".into());
        let config = CommandConfig::docker(docker)
            .with_env("EXPLICIT_VAR", "explicit")
            .with_env_passthrough(["PASS_ME", "NOT_SET_ANYWHERE_9C1"]);
        let h = Harness::with_config(Backend::Docker, config).await;
        let shell = h.sh("env").await;
        let python = h
            .service
            .execute(
                &Harness::scope("env"),
                CommandRequest::python("py-env", PRINT_ENV, "."),
            )
            .await
            .unwrap();
        for (what, outcome) in [("shell", shell), ("python", python)] {
            assert!(outcome.success(), "{what}: {outcome:?}");
            let text = outcome.combined_output();
            assert_no_host_leak(what, &text);
            let got = vars(&text);
            assert_eq!(
                got.get("FROM_DOCKER").map(String::as_str),
                Some("docker value")
            );
            assert_eq!(
                got.get("EXPLICIT_VAR").map(String::as_str),
                Some("explicit")
            );
            assert_eq!(got.get("PASS_ME").map(String::as_str), Some("passed"));
            assert_eq!(
                got.get("LC_MEASUREMENT"),
                None,
                "{what}: a host variable entered the container"
            );
        }
        h.close().await;
    });
}
