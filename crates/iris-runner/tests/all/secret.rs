//! Credential auto-heal through the loop: a local server speaking Tavily's wire format
//! answers 401 until the right key arrives; the model calls `store_secret`; the value
//! reaches the web tools and nothing else.

use std::io::Write;
use std::sync::{Arc, Mutex};

use iris_runner::secret::codes as secret_codes;
use iris_runner::{
    AgentConfig, AgentRunner, Answer, HostRegistry, Interaction, InteractionHandler, RunEvent,
    RunOutcome, SecretRequest, SecretValue,
};
use iris_tools_core::BoxFuture;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::support::{Fixture, events, finished, outcome};

/// The value the fake server accepts; every test checks it leaks nowhere.
const GOOD_KEY: &str = "tvly-good-7f3a9c1e5b";
const KEY_NAME: &str = "IRIS_PROVIDER_API_KEYS__TAVILY";

/// A server on 127.0.0.1 that answers `ok(request body)` with 200 for
/// `Authorization: Bearer GOOD_KEY`, 401 otherwise, recording each request's bearer.
struct FakeService {
    url: String,
    bearers: Arc<Mutex<Vec<String>>>,
}

/// Speaks Tavily's `/search`: one result.
struct FakeTavily;

impl FakeTavily {
    async fn start() -> FakeService {
        FakeService::start(|_| {
            json!({
                "query": "rust", "answer": null, "images": [],
                "results": [{"title": "Tokio", "url": "https://tokio.rs/",
                    "content": "An asynchronous Rust runtime.", "score": 0.9}],
                "response_time": 0.1
            })
        })
        .await
    }
}

impl FakeService {
    async fn start(ok: fn(&serde_json::Value) -> serde_json::Value) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let bearers = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&bearers);
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let log = Arc::clone(&log);
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut chunk = [0_u8; 4096];
                    let (head_end, length) = loop {
                        let n = stream.read(&mut chunk).await.unwrap_or(0);
                        if n == 0 {
                            return;
                        }
                        buf.extend_from_slice(&chunk[..n]);
                        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                            let length = head
                                .lines()
                                .find_map(|l| l.strip_prefix("content-length:"))
                                .and_then(|v| v.trim().parse::<usize>().ok())
                                .unwrap_or(0);
                            break (end, length);
                        }
                    };
                    while buf.len() < head_end + 4 + length {
                        let n = stream.read(&mut chunk).await.unwrap_or(0);
                        if n == 0 {
                            break;
                        }
                        buf.extend_from_slice(&chunk[..n]);
                    }
                    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
                    let body: serde_json::Value =
                        serde_json::from_slice(&buf[head_end + 4..]).unwrap_or_default();
                    let bearer = head
                        .lines()
                        .find_map(|l| {
                            let (name, value) = l.split_once(':')?;
                            name.eq_ignore_ascii_case("authorization")
                                .then(|| value.trim().trim_start_matches("Bearer ").to_owned())
                        })
                        .unwrap_or_default();
                    let authorized = bearer == GOOD_KEY;
                    log.lock().unwrap().push(bearer);
                    let (status, body) = if authorized {
                        ("200 OK", ok(&body).to_string())
                    } else {
                        (
                            "401 Unauthorized",
                            json!({"detail": {"error": "Unauthorized: missing or invalid API key."}})
                                .to_string(),
                        )
                    };
                    let reply = format!(
                        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = stream.write_all(reply.as_bytes()).await;
                    let _ = stream.shutdown().await;
                });
            }
        });
        Self { url, bearers }
    }

    fn bearers(&self) -> Vec<String> {
        self.bearers.lock().unwrap().clone()
    }
}

/// An agent with `web_search` against `server`, a scripted model and `extra` YAML.
fn agent(server: &FakeService, extra: &str, script: &str) -> Fixture {
    Fixture::new(
        &format!(
            "tools: {{builtin: [web.search]}}\nweb: {{base_url: \"{}\", timeout_seconds: 10}}\n{extra}model:\n  provider: scripted\n  script:\n{script}",
            server.url
        ),
        &[],
    )
}

/// search → store_secret → search → answer.
const HEAL: &str = r#"    - tool_calls: [{name: web_search, arguments: {query: rust runtime}}]
    - expect_tool_results: 1
      tool_calls: [{name: store_secret, arguments: {key: IRIS_PROVIDER_API_KEYS__TAVILY}}]
    - expect_tool_results: 1
      tool_calls: [{name: web_search, arguments: {query: rust runtime}}]
    - {expect_tool_results: 1, text: Tokio is the runtime.}
"#;

/// Answers secrets from a list (then nothing), counting the asks.
#[derive(Default)]
struct Secrets {
    values: Mutex<Vec<String>>,
    asked: Mutex<Vec<SecretRequest>>,
}

impl InteractionHandler for Secrets {
    fn answer<'a>(&'a self, interaction: &'a Interaction) -> BoxFuture<'a, Option<Answer>> {
        let Interaction::Secret(request) = interaction else {
            return Box::pin(async { None });
        };
        self.asked.lock().unwrap().push(request.clone());
        let mut values = self.values.lock().unwrap();
        let next = (!values.is_empty()).then(|| Answer::Secret {
            value: SecretValue::new(values.remove(0)),
        });
        Box::pin(async move { next })
    }
}

/// A runner over `fx` (and `host`) whose handler answers secrets with `values` in
/// order, then nothing; and that handler, to count what it was asked.
async fn answering_runner(
    fx: &Fixture,
    host: &HostRegistry,
    values: &[&str],
) -> (AgentRunner, Arc<Secrets>) {
    let loaded = AgentConfig::load_with_env(fx.file(), false).unwrap();
    let handler = Arc::new(Secrets {
        values: Mutex::new(values.iter().map(|v| (*v).to_owned()).collect()),
        ..Secrets::default()
    });
    let runner = AgentRunner::builder_from_loaded(&loaded, host, None)
        .await
        .unwrap()
        .interaction_handler(ArcHandler(Arc::clone(&handler)))
        .build();
    (runner, handler)
}

/// Captures every `tracing` event and span (TRACE, with span fields) into a buffer.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

/// Every byte under `dir` (the run store's database and its WAL, any artifact).
fn all_bytes(dir: &std::path::Path) -> Vec<u8> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                out.extend(bytes);
            }
        }
    }
    out
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// The whole flow without a handler: the missing key fails the search, the model
/// calls `store_secret`, the run waits on a `secret` interaction; another runner (a
/// new process) resumes it with the value; the search is retried with the key and
/// the run completes. The value appears in no history, event, store byte or log line.
///
/// Logs and spans are captured by a global subscriber, so the test re-runs itself
/// alone in a child process (`IRIS_SECRET_LEAK_CHILD` set): a scoped subscriber would
/// miss what other tests' threads registered first.
#[test]
fn a_missing_key_is_healed_through_a_secret_interaction() {
    if std::env::var_os("IRIS_SECRET_LEAK_CHILD").is_some() {
        heal_and_grep();
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "secret::a_missing_key_is_healed_through_a_secret_interaction",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("IRIS_SECRET_LEAK_CHILD", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn heal_and_grep() {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(captured.clone())
        .with_max_level(tracing::Level::TRACE)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::FULL)
        .with_ansi(false)
        .finish();
    tracing::subscriber::set_global_default(subscriber).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (fx, events, outcome, server_bearers) = rt.block_on(async {
        let server = FakeTavily::start().await;
        let fx = agent(&server, "", HEAL);
        let loaded = AgentConfig::load_with_env(fx.file(), false).unwrap();
        let first = AgentRunner::builder_from_loaded(&loaded, &HostRegistry::new(), None)
            .await
            .unwrap()
            .build();
        let mut stream = first.run_streamed("Which runtime?");
        let mut events = Vec::new();
        while let Some(event) = stream.next().await {
            events.push(event);
        }
        let Some(RunEvent::Finished {
            outcome:
                RunOutcome::Waiting {
                    run_id,
                    interaction,
                },
        }) = events.last().cloned()
        else {
            panic!("{:?}", events.last())
        };
        let Interaction::Secret(request) = &interaction else {
            panic!("{interaction:?}")
        };
        assert_eq!(request.key, KEY_NAME);
        assert_eq!(request.tools, ["web_search"]);
        assert_eq!(interaction.kind(), "secret");
        assert!(interaction.summary().contains(KEY_NAME));
        // The first search failed with the auth error and a hint naming the tool.
        let first_result = events
            .iter()
            .find_map(|e| match e {
                RunEvent::ToolCallFinished { result, .. } => Some(result.clone()),
                _ => None,
            })
            .unwrap();
        assert_eq!(first_result.error_code(), Some("WEB_AUTH_REQUIRED"));
        assert!(first_result.model_content().contains("call `store_secret`"));
        // `store_secret` was offered in the request after the failure only.
        let offered: Vec<Vec<String>> = events
            .iter()
            .filter_map(|e| match e {
                RunEvent::TurnStarted { tools, .. } => Some(tools.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(
            offered,
            [vec!["web_search"], vec!["web_search", "store_secret"]]
        );
        first.close().await.unwrap();

        // A blank value is refused before anything happens.
        let second = AgentRunner::builder_from_loaded(&loaded, &HostRegistry::new(), None)
            .await
            .unwrap()
            .build();
        let blank = second
            .resume(
                &run_id,
                interaction.id(),
                Answer::Secret {
                    value: SecretValue::new("  "),
                },
            )
            .await
            .unwrap_err();
        assert_eq!(blank.code, "RUN_ANSWER_INVALID");
        let mut resumed = second.resume_streamed(
            &run_id,
            interaction.id(),
            Answer::Secret {
                value: SecretValue::new(GOOD_KEY),
            },
        );
        while let Some(event) = resumed.next().await {
            events.push(event);
        }
        let Some(RunEvent::Finished { outcome }) = events.last().cloned() else {
            panic!()
        };
        second.close().await.unwrap();
        (fx, events, outcome, server.bearers())
    });
    assert_eq!(
        outcome.output(),
        Some("Tokio is the runtime."),
        "{outcome:?}"
    );
    // A missing key costs no request: the server saw only the healed search.
    assert_eq!(server_bearers, [GOOD_KEY]);
    let RunOutcome::Completed { history, .. } = &outcome else {
        panic!()
    };
    let history_json = serde_json::to_string(history).unwrap();
    assert!(history_json.contains("The secret `IRIS_PROVIDER_API_KEYS__TAVILY` is stored"));
    let events_json = serde_json::to_string(&events).unwrap();
    let logs = captured.0.lock().unwrap().clone();
    assert!(
        contains(&logs, "execute_tool") && contains(&logs, "web_search"),
        "the capture saw the run's calls ({} bytes): {}",
        logs.len(),
        String::from_utf8_lossy(&logs[..logs.len().min(2000)])
    );
    for (what, bytes) in [
        ("history", history_json.as_bytes().to_vec()),
        ("events", events_json.into_bytes()),
        ("logs and spans", logs),
        ("run store and workspace", all_bytes(fx.root())),
    ] {
        assert!(
            !contains(&bytes, GOOD_KEY),
            "the secret leaked into the {what}"
        );
    }
}

/// With a handler (a terminal, a UI), the run does not wait: a rejected key gets
/// two rounds, then `store_secret` fails with `SECRET_ROUNDS_EXHAUSTED` and the
/// search's failure stands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_key_gets_two_rounds_then_the_failure_stands() {
    let server = FakeTavily::start().await;
    let script = r#"    - tool_calls: [{name: web_search, arguments: {query: q}}]
    - expect_tool_results: 1
      tool_calls: [{name: store_secret, arguments: {key: IRIS_PROVIDER_API_KEYS__TAVILY}}]
    - expect_tool_results: 1
      tool_calls: [{name: web_search, arguments: {query: q}}]
    - expect_tool_results: 1
      tool_calls: [{name: store_secret, arguments: {key: IRIS_PROVIDER_API_KEYS__TAVILY}}]
    - expect_tool_results: 1
      tool_calls: [{name: web_search, arguments: {query: q}}]
    - expect_tool_results: 1
      tool_calls: [{name: store_secret, arguments: {key: IRIS_PROVIDER_API_KEYS__TAVILY}}]
    - {expect_tool_results: 1, text: gave up}
"#;
    let fx = agent(
        &server,
        "provider_api_keys: {tavily: tvly-stale}\nrun_store: {kind: memory}\n",
        script,
    );
    let (runner, handler) =
        answering_runner(&fx, &HostRegistry::new(), &["tvly-wrong-1", "tvly-wrong-2"]).await;
    let outcome = runner.run("search").await;
    assert_eq!(outcome.output(), Some("gave up"), "{outcome:?}");
    assert_eq!(handler.asked.lock().unwrap().len(), 2);
    let RunOutcome::Completed { history, .. } = &outcome else {
        panic!()
    };
    let text = serde_json::to_string(history).unwrap();
    assert!(
        text.contains(secret_codes::SECRET_ROUNDS_EXHAUSTED),
        "{text}"
    );
    assert!(text.contains("was supplied 2 times in this run and still fails"));
    assert_eq!(
        server.bearers(),
        ["tvly-stale", "tvly-wrong-1", "tvly-wrong-2"]
    );
    for leaked in ["tvly-stale", "tvly-wrong-1", "tvly-wrong-2"] {
        assert!(!text.contains(leaked), "{leaked} leaked into the history");
    }
    runner.close().await.unwrap();
}

/// A key no tool declares is refused (`SECRET_UNKNOWN`) without asking anyone; a
/// declined secret answers `SECRET_DECLINED`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_keys_are_refused_and_a_denied_secret_is_declined() {
    let server = FakeTavily::start().await;
    let script = r#"    - tool_calls: [{name: web_search, arguments: {query: q}}]
    - expect_tool_results: 1
      tool_calls: [{name: store_secret, arguments: {key: AWS_SECRET_ACCESS_KEY}}]
    - expect_tool_results: 1
      tool_calls: [{name: store_secret, arguments: {key: IRIS_PROVIDER_API_KEYS__TAVILY}}]
    - {expect_tool_results: 1, text: no key}
"#;
    let fx = agent(&server, "", script);
    let runner = AgentRunner::from_config_path(fx.file()).await.unwrap();
    let RunOutcome::Waiting {
        run_id,
        interaction,
    } = runner.run("search").await
    else {
        panic!()
    };
    let outcome = runner
        .resume(
            &run_id,
            interaction.id(),
            Answer::Deny {
                reason: "not now".into(),
            },
        )
        .await
        .unwrap();
    let RunOutcome::Completed { history, .. } = &outcome else {
        panic!("{outcome:?}")
    };
    let text = serde_json::to_string(history).unwrap();
    assert!(text.contains(secret_codes::SECRET_UNKNOWN), "{text}");
    assert!(text.contains(secret_codes::SECRET_DECLINED), "{text}");
    assert!(text.contains("not now"));
    runner.close().await.unwrap();
}

/// `store_secret` is a system-use tool: not in the ordinary catalog, listed when
/// system tools are asked for, and only with a tool that uses a secret.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_secret_is_a_system_tool_installed_with_the_web_tools() {
    let server = FakeTavily::start().await;
    let fx = agent(&server, "", "    - {text: hi}\n");
    let loaded = AgentConfig::load_with_env(fx.file(), false).unwrap();
    let env = iris_runner::build_tool_registry(&loaded, &HostRegistry::new())
        .await
        .unwrap();
    let def = env
        .registry
        .get("store_secret")
        .unwrap()
        .definition()
        .clone();
    assert!(def.system_use);
    let plain = env.registry.view(iris_tools_core::ViewFilter::default());
    let names: Vec<String> = plain
        .available_tools()
        .iter()
        .map(|t| t.definition().name.clone())
        .collect();
    assert_eq!(names, ["web_search"]);
    assert_eq!(env.secret_targets.len(), 1);
    env.close().await.unwrap();

    let none = Fixture::new("tools: {builtin: [file.read]}\n", &[]);
    let loaded = AgentConfig::load_with_env(none.file(), false).unwrap();
    let env = iris_runner::build_tool_registry(&loaded, &HostRegistry::new())
        .await
        .unwrap();
    assert!(env.registry.get("store_secret").is_err());
    env.close().await.unwrap();
}

/// A shared handler.
struct ArcHandler(Arc<Secrets>);

impl InteractionHandler for ArcHandler {
    fn answer<'a>(&'a self, interaction: &'a Interaction) -> BoxFuture<'a, Option<Answer>> {
        self.0.answer(interaction)
    }
}

/// Answers a Jev `/decisions` request: each choice question picks the first tool whose
/// name shares a word with its instructions.
fn jev_answers(request: &serde_json::Value) -> serde_json::Value {
    let mut answers = serde_json::Map::new();
    for (id, q) in request["questions"].as_object().unwrap() {
        let text = q["instructions"].as_str().unwrap().to_lowercase();
        let choice = q["options"]
            .as_object()
            .unwrap()
            .keys()
            .filter(|o| *o != "none")
            .find(|o| o.split('_').any(|part| text.contains(part)))
            .cloned()
            .unwrap_or_else(|| "none".to_owned());
        answers.insert(
            id.clone(),
            json!({"type": "choice", "choice": choice, "probabilities": {choice.clone(): 1.0}, "confidence": 0.9}),
        );
    }
    json!({"model": "jev-1.13.0", "answers": answers, "usage": {"input_tokens": 10, "output_tokens": 1}})
}

/// A host whose registrar `app:billing` adds one deferred tool, `create_invoice`.
fn billing_host() -> HostRegistry {
    HostRegistry::new().registrar("app:billing", |registry: &iris_tools_core::ToolRegistry| {
        let def = iris_tools_core::ToolDefinition::new(
            "create_invoice",
            "Create an invoice for a customer.",
            json!({"type": "object"}),
        )
        .with_deferred(true);
        registry
            .register(iris_tools_core::FnTool::new(def, |_i, _c| async {
                iris_tools_core::ToolOutput::text("ok")
            }))
            .map_err(|e| e.to_string())
    })
}

/// `tool_search` on the decision model: the service rejects the configured key
/// (`DECISION_AUTH`, naming `IRIS_PROVIDER_API_KEYS__TYPESAFE`); `store_secret` gives
/// the client a new one and the search succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_decision_models_rejected_key_is_healed() {
    let jev = FakeService::start(jev_answers).await;
    let fx = Fixture::new(
        r#"tools: {python: {registrars: ["app:billing"]}}
context_policy: {deferred_tools: true}
decision: {path: decision.yaml}
provider_api_keys: {typesafe: sk-stale}
run_store: {kind: memory}
model:
  provider: scripted
  script:
    - tool_calls: [{name: tool_search, arguments: {queries: ["create an invoice"]}}]
    - expect_tool_results: 1
      tool_calls: [{name: store_secret, arguments: {key: IRIS_PROVIDER_API_KEYS__TYPESAFE}}]
    - expect_tool_results: 1
      tool_calls: [{name: tool_search, arguments: {queries: ["create an invoice"]}}]
    - {expect_tool_results: 1, text: found it}
"#,
        &[(
            "decision.yaml",
            &format!("tools: {{discovery: true}}\nbase_url: {}\n", jev.url),
        )],
    );
    let host = billing_host();
    let (runner, handler) = answering_runner(&fx, &host, &[GOOD_KEY]).await;
    let all = events(&runner, "bill them").await;
    let results = finished(&all);
    assert_eq!(outcome(&all).output(), Some("found it"));
    assert_eq!(
        results[0].error_code(),
        Some("DECISION_AUTH"),
        "{:?}",
        results[0]
    );
    assert!(
        results[0]
            .model_content()
            .contains("IRIS_PROVIDER_API_KEYS__TYPESAFE")
    );
    assert_eq!(results[1].error_code(), None, "{:?}", results[1]);
    assert_eq!(results[2].error_code(), None, "{:?}", results[2]);
    assert!(
        results[2].model_content().contains("create_invoice"),
        "{:?}",
        results[2]
    );
    assert_eq!(handler.asked.lock().unwrap()[0].tools, ["tool_search"]);
    assert_eq!(jev.bearers(), ["sk-stale", GOOD_KEY]);
    runner.close().await.unwrap();
}

/// A value the decision client cannot use (a space inside: no HTTP header carries it)
/// is not reported as stored: `store_secret` fails with `SECRET_REJECTED`, and the client
/// keeps its old key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_value_the_decision_client_refuses_is_not_reported_as_stored() {
    let jev = FakeService::start(jev_answers).await;
    let fx = Fixture::new(
        r#"tools: {python: {registrars: ["app:billing"]}}
context_policy: {deferred_tools: true}
decision: {path: decision.yaml}
provider_api_keys: {typesafe: sk-stale}
run_store: {kind: memory}
model:
  provider: scripted
  script:
    - tool_calls: [{name: tool_search, arguments: {queries: ["create an invoice"]}}]
    - expect_tool_results: 1
      tool_calls: [{name: store_secret, arguments: {key: IRIS_PROVIDER_API_KEYS__TYPESAFE}}]
    - expect_tool_results: 1
      tool_calls: [{name: tool_search, arguments: {queries: ["create an invoice"]}}]
    - {expect_tool_results: 1, text: gave up}
"#,
        &[(
            "decision.yaml",
            &format!("tools: {{discovery: true}}\nbase_url: {}\n", jev.url),
        )],
    );
    let host = billing_host();
    let (runner, _handler) = answering_runner(&fx, &host, &["sk bad key"]).await;
    let all = events(&runner, "bill them").await;
    let results = finished(&all);
    assert_eq!(
        results[0].error_code(),
        Some("DECISION_AUTH"),
        "{:?}",
        results[0]
    );
    assert_eq!(
        results[1].error_code(),
        Some("SECRET_REJECTED"),
        "{:?}",
        results[1]
    );
    assert!(
        !results[1].model_content().contains("is stored"),
        "{:?}",
        results[1]
    );
    assert!(
        !results[1].model_content().contains("sk bad key"),
        "{:?}",
        results[1]
    );
    // The old key stays.
    assert_eq!(jev.bearers(), ["sk-stale", "sk-stale"]);
    runner.close().await.unwrap();
}

/// An MCP server behind a bearer check, its token from `${FIXTURE_TOKEN:-…}`: the
/// token expires while the run is going, the call fails with `MCP_AUTH_REQUIRED`
/// naming `FIXTURE_TOKEN`, `store_secret` supplies the new one, and the retried call
/// reaches the reconnected server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_servers_expired_token_is_healed() {
    const OLD: &str = "tok-old-5c6d7e8f";
    const NEW: &str = "tok-new-9a0b1c2d";
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, format!("{OLD}\n")).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let _server = KillOnDrop(
        std::process::Command::new(crate::support::python())
            .arg(crate::support::mcp_fixtures().join("sdk_server.py"))
            .args([
                "--transport",
                "streamable-http",
                "--port",
                &port.to_string(),
            ])
            .args(["--bearer-file", tokens.to_str().unwrap()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let started = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(started.elapsed() < std::time::Duration::from_secs(30));
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let mcp = json!({"mcpServers": {"secure": {
        "url": format!("http://127.0.0.1:{port}/mcp"),
        "headers": {"Authorization": format!("Bearer ${{FIXTURE_TOKEN:-{OLD}}}")},
    }}});
    let fx = Fixture::new(
        r#"mcp: {path: mcp.json, overrides: {secure: {trust_annotations: true}}}
run_store: {kind: memory}
model:
  provider: scripted
  script:
    - tool_calls: [{name: mcp__secure__echo, arguments: {text: hello}}]
    - expect_tool_results: 1
      tool_calls: [{name: store_secret, arguments: {key: FIXTURE_TOKEN}}]
    - expect_tool_results: 1
      tool_calls: [{name: mcp__secure__echo, arguments: {text: hello again}}]
    - {expect_tool_results: 1, text: done}
"#,
        &[("mcp.json", &mcp.to_string())],
    );
    let (runner, handler) = answering_runner(&fx, &HostRegistry::new(), &[NEW]).await;
    // The server expires the old token before the run's first call.
    std::fs::write(&tokens, format!("{NEW}\n")).unwrap();
    let all = events(&runner, "echo").await;
    let results = finished(&all);
    let outcome = outcome(&all);
    assert_eq!(outcome.output(), Some("done"), "{outcome:?}");
    assert_eq!(
        results[0].error_code(),
        Some("MCP_AUTH_REQUIRED"),
        "{:?}",
        results[0]
    );
    assert!(results[0].model_content().contains("call `store_secret`"));
    assert_eq!(handler.asked.lock().unwrap()[0].key, "FIXTURE_TOKEN");
    assert_eq!(results[2].error_code(), None, "{:?}", results[2]);
    assert!(results[2].model_content().contains("hello again"));
    let RunOutcome::Completed { history, .. } = &outcome else {
        panic!()
    };
    let text = serde_json::to_string(history).unwrap();
    assert!(
        !text.contains(NEW) && !text.contains(OLD),
        "a token leaked: {text}"
    );
    runner.close().await.unwrap();
}

/// A child process killed (and reaped) when the test ends, also when it fails.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A key a `subagent` child heals reaches the parent's own web tools too: the child's
/// search fails, its `store_secret` is answered once, and the parent's next search
/// uses the key without asking again (before, the parent's client kept its missing
/// key and failed without a request).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_healed_in_a_subagent_reaches_the_parent() {
    let server = FakeTavily::start().await;
    let web = format!(
        "web: {{base_url: \"{}\", timeout_seconds: 10}}\n",
        server.url
    );
    let parent = format!(
        "tools: {{builtin: [web.search], subagent: agents.yaml}}\n{web}run_store: {{kind: memory}}\n\
         model:\n  provider: scripted\n  script:\n\
         \x20   - tool_calls: [{{name: subagent, arguments: {{prompt: search for me}}}}]\n\
         \x20   - expect_tool_results: 1\n\
         \x20     tool_calls: [{{name: web_search, arguments: {{query: rust runtime}}}}]\n\
         \x20   - {{expect_tool_results: 1, text: both searched}}\n"
    );
    let child = format!(
        "tools: {{builtin: [web.search]}}\n{web}model:\n  provider: scripted\n  script:\n{HEAL}"
    );
    let fx = Fixture::new(
        &parent,
        &[
            (
                "agents.yaml",
                "default: searcher\nagents:\n  searcher: {path: agents/searcher.yaml, description: Searches.}\n",
            ),
            ("agents/searcher.yaml", &child),
        ],
    );
    let (runner, handler) = answering_runner(&fx, &HostRegistry::new(), &[GOOD_KEY]).await;
    let outcome = runner.run("search, and let a child search first").await;
    assert_eq!(outcome.output(), Some("both searched"), "{outcome:?}");
    assert_eq!(
        handler.asked.lock().unwrap().len(),
        1,
        "asked once, in the child"
    );
    // The child's first search failed before any request (no key); its retry, then
    // the parent's own search, carried the healed key.
    assert_eq!(server.bearers(), [GOOD_KEY, GOOD_KEY]);
    let RunOutcome::Completed { history, .. } = &outcome else {
        panic!()
    };
    let text = serde_json::to_string(history).unwrap();
    assert!(!text.contains(GOOD_KEY), "the key leaked into the history");
    runner.close().await.unwrap();
}
