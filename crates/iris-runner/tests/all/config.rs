//! Loading: shapes, defaults, relative paths, environment overrides, error messages.

use std::path::PathBuf;

use iris_executor::ApprovalMode;
use iris_runner::config::{BuiltinKey, ContextPolicyConfig};
use iris_runner::{AgentConfig, codes};

use crate::support::Fixture;

/// Loads `yaml` (no environment) and returns `code: message` of the error, redacted.
fn load_error(yaml: &str) -> String {
    let fx = Fixture::new(yaml, &[]);
    let err = AgentConfig::load_with_env(fx.file(), false).unwrap_err();
    fx.redact(&format!("{}: {err}", err.code()))
}

#[test]
fn config_errors_name_file_key_and_shape() {
    let cases = [
        ("unknown_top_level", "toolz: {}\n"),
        (
            "unknown_builtin",
            "tools:\n  builtin: [file.read, exec.shell]\n",
        ),
        ("wrong_type", "tools:\n  builtin: exec.command\n"),
        ("unknown_nested", "tools:\n  python:\n    funcs: [a:b]\n"),
        (
            "bad_approval_mode",
            "permissions:\n  write_mode: sometimes\n",
        ),
        (
            "deferred_without_enabled",
            "context_policy:\n  enabled: false\n  deferred_tools: true\n",
        ),
        (
            "hook_missing_handler",
            "hooks:\n  - name: x\n    event: tool.before\n",
        ),
        (
            "command_docker_in_native",
            "command:\n  mode: native\n  docker: {}\n",
        ),
        ("skills_require_disabled", "skills:\n  require: [pdf]\n"),
        (
            "middleware_empty_factory",
            "middleware:\n  tools:\n    - factory: ' '\n",
        ),
        ("not_yaml", "tools: [\n"),
        ("mcp_missing_path", "mcp:\n  overrides: {}\n"),
        (
            "web_without_web_tools",
            "tools:\n  builtin: [file.read]\nweb: {timeout_seconds: 5}\n",
        ),
        (
            "script_callable_without_tool_script",
            "tools:\n  builtin: [file.write]\n  script: {callable: [write_file]}\n",
        ),
    ];
    for (name, yaml) in cases {
        insta::assert_snapshot!(name, load_error(yaml), yaml);
    }
}

#[test]
fn missing_file_is_config_not_found() {
    let err = AgentConfig::load_with_env("/nonexistent/iris.yaml", false).unwrap_err();
    assert_eq!(err.code(), codes::CONFIG_NOT_FOUND);
    assert!(err.to_string().starts_with("/nonexistent/iris.yaml: "));
}

#[test]
fn every_builtin_key_parses_in_table_order() {
    let keys: Vec<&str> = BuiltinKey::all().iter().map(|k| k.as_str()).collect();
    let yaml = format!("tools:\n  builtin: [{}]\n", keys.join(", "));
    let fx = Fixture::new(&yaml, &[]);
    let loaded = AgentConfig::load_with_env(fx.file(), false).unwrap();
    assert_eq!(loaded.config.tools.builtin, BuiltinKey::all().to_vec());
    let names: Vec<&str> = BuiltinKey::all().iter().map(|k| k.tool_name()).collect();
    assert_eq!(
        names,
        [
            "read_file",
            "list_files",
            "grep_search",
            "write_file",
            "edit_file",
            "publish_artifact",
            "exec_command",
            "run_python",
            "run_tool_script",
            "ask_question",
            "web_search",
            "web_fetch"
        ]
    );
}

#[test]
fn defaults_match_the_seed() {
    let fx = Fixture::new("{}\n", &[]);
    let loaded = AgentConfig::load_with_env(fx.file(), false).unwrap();
    let c = &loaded.config;
    assert_eq!(
        c.context_policy,
        ContextPolicyConfig {
            enabled: true,
            deferred_tools: false,
            retention: None,
            discovery: iris_discovery::DiscoveryConfig::default(),
        }
    );
    assert_eq!(c.permissions.write_mode, ApprovalMode::Confirm);
    assert_eq!(c.permissions.execute_mode, ApprovalMode::Confirm);
    assert!(!c.skills.enabled);
    assert_eq!(c.skills.root, PathBuf::from(".agents/skills"));
    assert!(c.command.is_none() && c.mcp.is_none() && c.decision.is_none());
    assert_eq!(loaded.workspace, std::path::absolute(fx.root()).unwrap());
}

/// Relative paths resolve against the YAML file's folder, not the process directory.
#[test]
fn relative_paths_resolve_against_the_yaml_folder() {
    let fx = Fixture::new(
        "workspace: ws\ntools:\n  subagent: agents/catalog.yaml\nmcp:\n  path: mcp.json\n  overrides:\n    docs: {required: false, tool_timeout_sec: 5, tool_max_sec: 50}\ndecision:\n  path: ../decision.yaml\n",
        &[],
    );
    let loaded = AgentConfig::load_with_env(fx.file(), false).unwrap();
    let root = std::path::absolute(fx.root()).unwrap();
    let c = &loaded.config;
    let check = |got: &std::path::Path, expect: PathBuf| assert_eq!(got, expect);
    check(&loaded.workspace, root.join("ws"));
    check(
        c.tools.subagent.as_deref().unwrap(),
        root.join("agents/catalog.yaml"),
    );
    check(&c.mcp.as_ref().unwrap().path, root.join("mcp.json"));
    check(
        &c.decision.as_ref().unwrap().path,
        root.join("../decision.yaml"),
    );
    let docs = &c.mcp.as_ref().unwrap().overrides["docs"];
    assert_eq!(docs.required, Some(false));
    assert_eq!(docs.tool_timeout_sec, Some(5.0));
    assert_eq!(docs.tool_max_sec, Some(50.0));
    assert_eq!(docs.trust_annotations, None);
}

/// An absolute path stays as written.
#[test]
fn absolute_workspace_is_kept() {
    let fx = Fixture::new("workspace: /srv/agent\n", &[]);
    let loaded = AgentConfig::load_with_env(fx.file(), false).unwrap();
    assert_eq!(loaded.workspace, PathBuf::from("/srv/agent"));
}

/// The environment half runs in a child process (this test binary, re-run on one test),
/// because edition 2024 makes `set_var` unsafe and the workspace forbids unsafe code.
/// The child prints the loaded keys; the parent checks them.
#[test]
fn env_overrides_nest_with_double_underscore() {
    let fx = Fixture::new("permissions:\n  write_mode: deny\n", &[]);
    if let Some(file) = std::env::var_os("IRIS_RUNNER_TEST_CHILD_CONFIG") {
        let loaded = AgentConfig::load(file).unwrap();
        println!(
            "CHILD tavily={:?} write={} execute={}",
            loaded.config.provider_api_keys.get("tavily"),
            loaded.config.permissions.write_mode,
            loaded.config.permissions.execute_mode
        );
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "config::env_overrides_nest_with_double_underscore",
            "--nocapture",
        ])
        .env("IRIS_RUNNER_TEST_CHILD_CONFIG", fx.file())
        .env("IRIS_PROVIDER_API_KEYS__TAVILY", "tvly-test")
        .env("IRIS_PERMISSIONS__EXECUTE_MODE", "allow")
        .env("IRIS_PYTHON", "python3")
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.contains("CHILD tavily=Some(\"tvly-test\") write=deny execute=allow"),
        "{stdout}"
    );
}

/// docs/configuration.md is checked against the types: its full example parses (so every
/// documented key exists, `deny_unknown_fields` would reject any other), and every
/// top-level key and every builtin key is documented.
#[test]
fn configuration_reference_matches_the_types() {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/configuration.md"),
    )
    .unwrap();
    let start = doc.find("```yaml\n").unwrap() + "```yaml\n".len();
    let yaml = &doc[start..start + doc[start..].find("```").unwrap()];
    let fx = Fixture::new(yaml, &[]);
    let loaded = AgentConfig::load_with_env(fx.file(), false).unwrap();
    assert_eq!(loaded.config.tools.builtin, BuiltinKey::all().to_vec());
    for key in iris_runner::config::TOP_LEVEL_KEYS {
        assert!(
            yaml.contains(&format!("\n{key}:")) || yaml.starts_with(&format!("{key}:")),
            "{key}"
        );
        assert!(doc.contains(&format!("| `{key}")), "{key} has no table row");
    }
    for key in BuiltinKey::all() {
        assert!(
            doc.contains(&format!("`{key}` (`{}`)", key.tool_name())),
            "{key}"
        );
    }
    for code in [
        "CONFIG_NOT_FOUND",
        "CONFIG_INVALID",
        "CONFIG_TOO_LARGE",
        "CONFIG_NOT_A_FILE",
        "CONFIG_REFERENCE",
        "HOST_KEY_UNKNOWN",
        "HOST_FAILED",
        "FEATURE_UNAVAILABLE",
        "ASSEMBLY_FAILED",
    ] {
        assert!(doc.contains(&format!("| `{code}` |")), "{code}");
    }
}
