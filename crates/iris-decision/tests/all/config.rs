//! The decision YAML: defaults, unknown fields, validation, and which evaluator it needs.

use std::sync::Arc;

use iris_decision::{
    DecisionConfig, DecisionEvaluator, DecisionMemoryConfig, DecisionToolsConfig, EvaluatorHandle,
    JevClient,
};

use crate::support::{Scripted, code_of};

#[test]
fn defaults_are_the_seed_defaults() {
    let from_empty: DecisionConfig = serde_yaml::from_str("{}").unwrap();
    assert_eq!(from_empty, DecisionConfig::default());
    assert_eq!(
        DecisionConfig::default(),
        DecisionConfig {
            provider: "typesafe".into(),
            model: "jev-1.13.0".into(),
            timeout_seconds: 5.0,
            base_url: None,
            tools: DecisionToolsConfig { discovery: false },
            memory: DecisionMemoryConfig { recall: false },
        }
    );
}

/// Parses `yaml`; `expect` is `Ok(config)` or `Err(substring of the serde error)`.
fn check_parse(yaml: &str, expect: Result<DecisionConfig, &str>) {
    let got = serde_yaml::from_str::<DecisionConfig>(yaml);
    match (got, expect) {
        (Ok(got), Ok(want)) => assert_eq!(got, want, "{yaml}"),
        (Err(e), Err(needle)) => assert!(e.to_string().contains(needle), "{yaml}: {e}"),
        (got, expect) => panic!("{yaml}: got {got:?}, expected {expect:?}"),
    }
}

#[test]
fn yaml_table() {
    let on = |discovery, recall| DecisionConfig {
        tools: DecisionToolsConfig { discovery },
        memory: DecisionMemoryConfig { recall },
        ..DecisionConfig::default()
    };
    let cases: Vec<(&str, Result<DecisionConfig, &str>)> = vec![
        (
            "provider: typesafe\nmodel: jev-2\ntimeout_seconds: 1.5\ntools:\n  discovery: true\nmemory:\n  recall: true\n",
            Ok(DecisionConfig {
                model: "jev-2".into(),
                timeout_seconds: 1.5,
                ..on(true, true)
            }),
        ),
        ("tools:\n  discovery: true\n", Ok(on(true, false))),
        ("memory:\n  recall: true\n", Ok(on(false, true))),
        (
            "timeout_seconds: 3\n",
            Ok(DecisionConfig {
                timeout_seconds: 3.0,
                ..DecisionConfig::default()
            }),
        ),
        ("modle: jev\n", Err("unknown field `modle`")),
        (
            "tools:\n  discovry: true\n",
            Err("unknown field `discovry`"),
        ),
        ("memory:\n  recal: true\n", Err("unknown field `recal`")),
        ("tools:\n  discovery: yes please\n", Err("invalid type")),
    ];
    for (yaml, expect) in cases {
        check_parse(yaml, expect);
    }
}

/// Validates `config` with `deferred_tools`; `expect` is `None` or the exact message.
fn check_validate(case: &str, config: DecisionConfig, deferred_tools: bool, expect: Option<&str>) {
    match (config.validate(deferred_tools), expect) {
        (Ok(()), None) => {}
        (Err(e), Some(message)) => {
            assert_eq!(e.code(), "DECISION_INVALID_CONFIG", "{case}");
            assert_eq!(e.to_string(), message, "{case}");
        }
        (got, expect) => panic!("{case}: got {got:?}, expected {expect:?}"),
    }
}

#[test]
fn validation_table() {
    let p = "invalid decision configuration: ";
    let discovery = DecisionConfig {
        tools: DecisionToolsConfig { discovery: true },
        ..DecisionConfig::default()
    };
    let cases: Vec<(&str, DecisionConfig, bool, Option<String>)> = vec![
        (
            "defaults without deferred tools",
            DecisionConfig::default(),
            false,
            None,
        ),
        (
            "defaults with deferred tools",
            DecisionConfig::default(),
            true,
            None,
        ),
        (
            "discovery with deferred tools",
            discovery.clone(),
            true,
            None,
        ),
        (
            "discovery without deferred tools",
            discovery,
            false,
            Some(format!(
                "{p}`tools.discovery` requires context_policy.deferred_tools = true (decision \
                 discovery only replaces the search behind tool_search)"
            )),
        ),
        (
            "memory recall is refused: no memory tools are built",
            DecisionConfig {
                memory: DecisionMemoryConfig { recall: true },
                ..DecisionConfig::default()
            },
            true,
            Some(format!(
                "{p}`memory.recall` is not built in this release (memory recall needs memory \
                 tools, memory_search / memory_fetch, which do not exist yet); set it to false \
                 or remove it"
            )),
        ),
        (
            "unknown provider",
            DecisionConfig {
                provider: "openai".into(),
                ..DecisionConfig::default()
            },
            true,
            Some(format!(
                "{p}`provider` is not supported; the only supported provider is `typesafe`"
            )),
        ),
        (
            "blank model",
            DecisionConfig {
                model: " ".into(),
                ..DecisionConfig::default()
            },
            true,
            Some(format!("{p}`model` must not be empty")),
        ),
        (
            "zero timeout",
            DecisionConfig {
                timeout_seconds: 0.0,
                ..DecisionConfig::default()
            },
            true,
            Some(format!(
                "{p}`timeout_seconds` is 0.0; must be a positive number of seconds"
            )),
        ),
        (
            "negative timeout",
            DecisionConfig {
                timeout_seconds: -1.0,
                ..DecisionConfig::default()
            },
            true,
            Some(format!(
                "{p}`timeout_seconds` is -1.0; must be a positive number of seconds"
            )),
        ),
        (
            "infinite timeout",
            DecisionConfig {
                timeout_seconds: f64::INFINITY,
                ..DecisionConfig::default()
            },
            true,
            Some(format!(
                "{p}`timeout_seconds` is inf; must be a positive number of seconds"
            )),
        ),
        (
            "a base URL that is neither https nor loopback http",
            DecisionConfig {
                base_url: Some("http://decisions.example.com/v1".into()),
                ..DecisionConfig::default()
            },
            true,
            Some(format!(
                "{p}`base_url` uses plain http to a non-loopback host; the API key needs https"
            )),
        ),
        (
            "a loopback base URL for a local server",
            DecisionConfig {
                base_url: Some("http://127.0.0.1:8080/v1".into()),
                ..DecisionConfig::default()
            },
            true,
            None,
        ),
        (
            "timeout too large for a duration",
            DecisionConfig {
                timeout_seconds: 1e300,
                ..DecisionConfig::default()
            },
            true,
            Some(format!("{p}`timeout_seconds` is 1e300; too large")),
        ),
    ];
    for (case, config, deferred, expect) in cases {
        check_validate(case, config, deferred, expect.as_deref());
    }
}

#[derive(Debug, PartialEq)]
enum Want {
    NoEvaluator,
    Owned {
        model: &'static str,
        timeout_ms: u128,
    },
    Borrowed,
    Error(&'static str),
}

/// Resolves the evaluator with an optional injected one and an environment holding
/// `key` (or nothing).
fn check_evaluator(
    case: &str,
    config: &DecisionConfig,
    inject: bool,
    key: Option<&str>,
    want: Want,
) {
    let injected: Option<Arc<dyn DecisionEvaluator>> =
        inject.then(|| Arc::new(Scripted::choosing(|_| None)) as Arc<dyn DecisionEvaluator>);
    let got = config.evaluator_with(injected, |name| {
        assert_eq!(name, "IRIS_PROVIDER_API_KEYS__TYPESAFE");
        key.map(str::to_owned)
    });
    let got = match got {
        Ok(None) => Want::NoEvaluator,
        Ok(Some(EvaluatorHandle::Owned(client))) => Want::Owned {
            model: if client.model() == "jev-2" {
                "jev-2"
            } else {
                "jev-1.13.0"
            },
            timeout_ms: client.timeout().as_millis(),
        },
        Ok(Some(EvaluatorHandle::Borrowed(_))) => Want::Borrowed,
        Err(e) => Want::Error(e.code()),
    };
    assert_eq!(got, want, "{case}");
}

#[test]
fn evaluator_is_needed_only_when_a_junction_is_on() {
    let off = DecisionConfig::default();
    let discovery = DecisionConfig {
        model: "jev-2".into(),
        timeout_seconds: 1.25,
        tools: DecisionToolsConfig { discovery: true },
        ..DecisionConfig::default()
    };
    let recall = DecisionConfig {
        memory: DecisionMemoryConfig { recall: true },
        ..DecisionConfig::default()
    };
    let bad_provider = DecisionConfig {
        provider: "other".into(),
        ..discovery.clone()
    };
    check_evaluator("off: no key needed", &off, false, None, Want::NoEvaluator);
    check_evaluator(
        "off: an injected one is not used",
        &off,
        true,
        None,
        Want::NoEvaluator,
    );
    check_evaluator(
        "discovery: built from config and env",
        &discovery,
        false,
        Some("sk-1"),
        Want::Owned {
            model: "jev-2",
            timeout_ms: 1250,
        },
    );
    check_evaluator(
        "recall alone (refused by validate): no evaluator",
        &recall,
        false,
        Some("sk-1"),
        Want::NoEvaluator,
    );
    check_evaluator(
        "missing key",
        &discovery,
        false,
        None,
        Want::Error("DECISION_AUTH"),
    );
    check_evaluator(
        "blank key",
        &discovery,
        false,
        Some("  "),
        Want::Error("DECISION_AUTH"),
    );
    check_evaluator(
        "injected wins, no key needed",
        &discovery,
        true,
        None,
        Want::Borrowed,
    );
    check_evaluator(
        "bad provider",
        &bad_provider,
        false,
        Some("sk"),
        Want::Error("DECISION_INVALID_CONFIG"),
    );
}

/// `from_env_with` asks its lookup for the documented variable, and only for it.
#[test]
fn from_env_with_reads_the_documented_variable() {
    let asked = std::cell::RefCell::new(Vec::new());
    let client = JevClient::from_env_with(|name| {
        asked.borrow_mut().push(name.to_owned());
        (name == "IRIS_PROVIDER_API_KEYS__TYPESAFE").then(|| "sk-1".to_owned())
    });
    assert_eq!(code_of(&client), "OK");
    assert_eq!(*asked.borrow(), ["IRIS_PROVIDER_API_KEYS__TYPESAFE"]);
}

/// The marker that makes [`from_env_in_a_child`] check a key its parent set.
const CHILD_MARKER: &str = "IRIS_DECISION_FROM_ENV_CHILD";

/// `from_env` reads the process environment: this test binary runs itself again with
/// the variable set (the parent's environment is shared by every test, so it is never
/// changed), then with it empty.
#[test]
fn from_env_reads_the_process_environment() {
    let exe = std::env::current_exe().unwrap();
    for (value, expect) in [("sk-from-env", "OK"), ("  ", "DECISION_AUTH")] {
        let out = std::process::Command::new(&exe)
            .args(["--exact", "config::from_env_in_a_child", "--nocapture"])
            .env("IRIS_PROVIDER_API_KEYS__TYPESAFE", value)
            .env(CHILD_MARKER, expect)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{value:?}: {out:?}");
        assert!(stdout.contains("1 passed"), "{value:?}: {stdout}");
        assert!(
            stdout.contains(&format!("from_env gave {expect}")),
            "{stdout}"
        );
    }
}

/// The child half of [`from_env_reads_the_process_environment`]; run directly, it has
/// no marker and checks nothing the parent's environment could change.
#[test]
fn from_env_in_a_child() {
    if let Ok(expect) = std::env::var(CHILD_MARKER) {
        let got = code_of(&JevClient::from_env());
        assert_eq!(got, expect);
        println!("from_env gave {got}");
    }
}

/// `base_url` in the decision YAML reaches the client, both ways it is built.
#[test]
fn the_base_url_comes_from_the_yaml() {
    let config: DecisionConfig =
        serde_yaml::from_str("base_url: http://127.0.0.1:9/v1\ntools:\n  discovery: true\n")
            .unwrap();
    assert_eq!(config.base_url.as_deref(), Some("http://127.0.0.1:9/v1"));
    let client = JevClient::from_config(&config, "sk-1").unwrap();
    assert_eq!(client.base_url(), "http://127.0.0.1:9/v1");
    match config
        .evaluator_with(None, |_| Some("sk-1".into()))
        .unwrap()
    {
        Some(EvaluatorHandle::Owned(client)) => {
            assert_eq!(client.base_url(), "http://127.0.0.1:9/v1");
        }
        other => panic!("expected an owned client, got {other:?}"),
    }
    let default = JevClient::from_config(&DecisionConfig::default(), "sk-1").unwrap();
    assert_eq!(default.base_url(), iris_decision::DEFAULT_BASE_URL);
}
