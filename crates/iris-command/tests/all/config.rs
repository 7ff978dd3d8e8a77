//! `CommandConfig`: defaults, the Docker table and every validation rule.

use iris_command::{CommandConfig, DockerConfig};

/// Parses YAML; `Ok` compares the effective config's JSON (an expectation without a
/// `sandbox` key expects the default sandbox), `Err` looks for a fragment.
fn check(yaml: &str, expect: Result<serde_json::Value, &str>) {
    let got = serde_yaml::from_str::<CommandConfig>(yaml);
    match (got, expect) {
        (Ok(config), Ok(mut json)) => {
            if let Some(map) = json.as_object_mut() {
                map.entry("sandbox").or_insert_with(|| {
                    serde_json::json!({"filesystem": "workspace-write", "deny_read": [],
                        "protected": [], "network": "off", "escalation": "never"})
                });
            }
            assert_eq!(serde_json::to_value(&config).unwrap(), json, "{yaml}");
            config.validate().unwrap();
        }
        (Err(e), Err(fragment)) => {
            assert!(
                e.to_string().contains(fragment),
                "{yaml}: `{e}` lacks `{fragment}`"
            );
        }
        (got, expect) => panic!("{yaml}: got {got:?}, expected {expect:?}"),
    }
}

#[test]
fn config_table() {
    use serde_json::json;
    check(
        "{}",
        Ok(
            json!({"mode": "native", "timeout_seconds": 120.0, "env": {}, "env_passthrough": [], "docker": null}),
        ),
    );
    check(
        "mode: native\ntimeout_seconds: 5",
        Ok(
            json!({"mode": "native", "timeout_seconds": 5.0, "env": {}, "env_passthrough": [], "docker": null}),
        ),
    );
    check(
        "timeout_seconds: 0.5",
        Ok(
            json!({"mode": "native", "timeout_seconds": 0.5, "env": {}, "env_passthrough": [], "docker": null}),
        ),
    );
    check(
        "mode: docker",
        Ok(
            json!({"mode": "docker", "timeout_seconds": 120.0, "env": {}, "env_passthrough": [], "docker": null}),
        ),
    );
    check(
        "mode: docker\ndocker: {}",
        Ok(
            json!({"mode": "docker", "timeout_seconds": 120.0, "env": {}, "env_passthrough": [], "docker": {
            "image": "iris-command:local", "endpoint": null, "network": "none", "cpus": 2.0,
            "memory_mb": 1024, "pids_limit": 128, "environment": {}}}),
        ),
    );
    check(
        "mode: docker\ndocker: {image: my:tag, endpoint: 'unix:///run/docker.sock', network: bridge, cpus: 0.5, memory_mb: 64, pids_limit: 1, environment: {A: b}}",
        Ok(
            json!({"mode": "docker", "timeout_seconds": 120.0, "env": {}, "env_passthrough": [], "docker": {
            "image": "my:tag", "endpoint": "unix:///run/docker.sock", "network": "bridge", "cpus": 0.5,
            "memory_mb": 64, "pids_limit": 1, "environment": {"A": "b"}}}),
        ),
    );
    check(
        "mode: docker\ndocker: {endpoint: 'npipe:////./pipe/docker_engine'}",
        Ok(
            json!({"mode": "docker", "timeout_seconds": 120.0, "env": {}, "env_passthrough": [], "docker": {
            "image": "iris-command:local", "endpoint": "npipe:////./pipe/docker_engine", "network": "none",
            "cpus": 2.0, "memory_mb": 1024, "pids_limit": 128, "environment": {}}}),
        ),
    );

    // Native may not declare docker, even an empty section.
    check(
        "mode: native\ndocker: {}",
        Err("native mode may not declare a docker section"),
    );
    check(
        "docker: {image: x}",
        Err("native mode may not declare a docker section"),
    );
    // The root timeout.
    check(
        "timeout_seconds: 0",
        Err("`timeout_seconds`: must be a positive finite number"),
    );
    check("timeout_seconds: -1", Err("positive finite"));
    check("timeout_seconds: .inf", Err("positive finite"));
    check("timeout_seconds: .nan", Err("positive finite"));
    // Endpoints: local sockets only.
    check(
        "mode: docker\ndocker: {endpoint: 'tcp://1.2.3.4:2375'}",
        Err("only unix://<path> or npipe://<name>"),
    );
    check(
        "mode: docker\ndocker: {endpoint: 'http://localhost:2375'}",
        Err("is not a local engine socket"),
    );
    check(
        "mode: docker\ndocker: {endpoint: 'ssh://host'}",
        Err("is not a local engine socket"),
    );
    check(
        "mode: docker\ndocker: {endpoint: 'unix://relative.sock'}",
        Err("absolute socket path"),
    );
    check(
        "mode: docker\ndocker: {endpoint: 'npipe://'}",
        Err("is not a local engine socket"),
    );
    // Network, resources and environment.
    check(
        "mode: docker\ndocker: {network: host}",
        Err("unknown variant `host`"),
    );
    check(
        "mode: docker\ndocker: {cpus: 0}",
        Err("`docker.cpus`: must be a positive finite number"),
    );
    check("mode: docker\ndocker: {cpus: -2}", Err("docker.cpus"));
    check("mode: docker\ndocker: {cpus: .inf}", Err("docker.cpus"));
    check(
        "mode: docker\ndocker: {memory_mb: 0}",
        Err("`docker.memory_mb`: must be a positive integer"),
    );
    check(
        "mode: docker\ndocker: {memory_mb: 1.5}",
        Err("invalid type"),
    );
    check("mode: docker\ndocker: {memory_mb: -1}", Err("invalid type"));
    check(
        "mode: docker\ndocker: {pids_limit: 0}",
        Err("`docker.pids_limit`: must be a positive integer"),
    );
    check(
        "mode: docker\ndocker: {image: ' '}",
        Err("`docker.image`: must not be empty"),
    );
    check(
        "mode: docker\ndocker: {environment: {'A=B': c}}",
        Err("docker.environment"),
    );
    check(
        "mode: docker\ndocker: {environment: {'': c}}",
        Err("docker.environment"),
    );
    // The commands' environment: explicit values and host passthrough, both modes.
    check(
        "env: {CI: '1', EMPTY: ''}\nenv_passthrough: [SSH_AUTH_SOCK, LANG]",
        Ok(json!({"mode": "native", "timeout_seconds": 120.0,
            "env": {"CI": "1", "EMPTY": ""}, "env_passthrough": ["SSH_AUTH_SOCK", "LANG"], "docker": null})),
    );
    check(
        "mode: docker\nenv: {CI: '1'}\nenv_passthrough: [TOKEN]\ndocker: {environment: {A: b}}",
        Ok(json!({"mode": "docker", "timeout_seconds": 120.0,
            "env": {"CI": "1"}, "env_passthrough": ["TOKEN"], "docker": {
            "image": "iris-command:local", "endpoint": null, "network": "none", "cpus": 2.0,
            "memory_mb": 1024, "pids_limit": 128, "environment": {"A": "b"}}})),
    );
    check(
        "env: {'A=B': c}",
        Err("`env`: variable name `A=B` must be non-empty"),
    );
    check(
        "env: {'': c}",
        Err("`env`: variable name `` must be non-empty"),
    );
    check(
        "env: {A: \"x\\0y\"}",
        Err("`env`: the value of `A` contains a NUL byte"),
    );
    check(
        "env_passthrough: ['']",
        Err("`env_passthrough`: variable name"),
    );
    check(
        "env_passthrough: ['A=B']",
        Err("`env_passthrough`: variable name"),
    );
    check("env_passthrough: [A, [b]]", Err("invalid type"));
    check("env_passthrough: A", Err("invalid type"));
    // IRIS_* never reaches a command, whichever key lists it and in any case; the
    // message names the variable, never a value.
    for yaml in [
        "env_passthrough: [IRIS_PROVIDER_API_KEYS__TAVILY]",
        "env_passthrough: [iris_python]",
        "env: {IRIS_PROVIDER_API_KEYS__TAVILY: tvly-secret-value}",
        "mode: docker\ndocker: {environment: {Iris_Token: tvly-secret-value}}",
    ] {
        check(
            yaml,
            Err(
                "is an Iris variable: IRIS_* variables hold Iris's own settings and secrets and never reach commands or hooks",
            ),
        );
        let message = serde_yaml::from_str::<CommandConfig>(yaml)
            .unwrap_err()
            .to_string();
        assert!(!message.contains("tvly-secret-value"), "{message}");
    }
    check(
        "env: {IRISH: ok}",
        Ok(json!({"mode": "native", "timeout_seconds": 120.0,
        "env": {"IRISH": "ok"}, "env_passthrough": [], "docker": null})),
    );
    // The sandbox: every key, and what each refuses.
    check(
        "sandbox: {filesystem: read-only, deny_read: [/srv/keys, ~/.pgpass], protected: [agent.yaml], network: {allow: [pypi.org, '*.pythonhosted.org']}}",
        Ok(
            json!({"mode": "native", "timeout_seconds": 120.0, "env": {}, "env_passthrough": [],
            "docker": null, "sandbox": {"filesystem": "read-only",
            "deny_read": ["/srv/keys", "~/.pgpass"], "protected": ["agent.yaml"],
            "network": {"allow": ["pypi.org", "*.pythonhosted.org"]}, "escalation": "never"}}),
        ),
    );
    check(
        "sandbox: {filesystem: off, network: on}",
        Ok(
            json!({"mode": "native", "timeout_seconds": 120.0, "env": {}, "env_passthrough": [],
            "docker": null, "sandbox": {"filesystem": "off", "deny_read": [], "protected": [],
            "network": "on", "escalation": "never"}}),
        ),
    );
    check("sandbox: {filesystem: none}", Err("unknown variant `none`"));
    check(
        "sandbox: {deny_read: [relative/key]}",
        Err("`sandbox.deny_read`: `relative/key` must be absolute"),
    );
    check("sandbox: {protected: [../up]}", Err("`sandbox.protected`"));
    check(
        "sandbox: {network: {allow: []}}",
        Err("`sandbox.network.allow`: lists no domain"),
    );
    check(
        "sandbox: {network: {allow: ['https://pypi.org']}}",
        Err("is not a lowercase domain name"),
    );
    check(
        "mode: docker\ndocker: {network: bridge}\nsandbox: {network: {allow: [pypi.org]}}",
        Err("cannot be combined with docker.network: bridge"),
    );
    check(
        "sandbox: {escalation: ask}",
        Ok(
            json!({"mode": "native", "timeout_seconds": 120.0, "env": {}, "env_passthrough": [],
            "docker": null, "sandbox": {"filesystem": "workspace-write", "deny_read": [],
            "protected": [], "network": "off", "escalation": "ask"}}),
        ),
    );
    check(
        "sandbox: {escalation: always}",
        Err("unknown variant `always`"),
    );
    check(
        "mode: docker\nsandbox: {escalation: ask}",
        Err("`sandbox.escalation`: `ask` is not available in docker mode"),
    );
    // Unknown fields are refused at both levels.
    check(
        "mode: docker\ndocker: {imagee: x}",
        Err("unknown field `imagee`"),
    );
    check("timeout: 5", Err("unknown field `timeout`"));
    check("mode: podman", Err("unknown variant `podman`"));
}

#[test]
fn defaults_match_the_seed_table() {
    let docker = CommandConfig::docker(DockerConfig::default());
    insta::assert_json_snapshot!("docker_defaults", docker);
    assert_eq!(CommandConfig::default(), CommandConfig::native());
    assert!(CommandConfig::native().docker_config().is_none());
    assert_eq!(
        serde_json::from_str::<CommandConfig>(r#"{"mode": "docker"}"#)
            .unwrap()
            .docker_config(),
        Some(DockerConfig::default())
    );
}

#[test]
fn configs_built_in_code_are_checked_by_the_service() {
    let dir = tempfile::tempdir().unwrap();
    let bad = CommandConfig {
        docker: Some(DockerConfig::default()),
        ..CommandConfig::native()
    };
    let err = iris_command::CommandService::new(bad, dir.path()).unwrap_err();
    assert_eq!(err.code(), "INVALID_COMMAND_CONFIG");
    let err =
        iris_command::CommandService::new(CommandConfig::native(), dir.path().join("missing"))
            .unwrap_err();
    assert_eq!(err.code(), "INVALID_COMMAND_CONFIG");
    assert!(err.to_string().contains("workspace_root"), "{err}");
}
