//! The `otel` feature end to end: real runs with the scripted provider, exported by the
//! real OTLP/HTTP exporter to a receiver on 127.0.0.1 that decodes what arrives
//! (HTTP/protobuf with the OTLP protobuf messages, HTTP/JSON with the protobuf JSON
//! mapping) into one span model the assertions read.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

use iris_runner::otel::{self, OtelConfig, OtelError, Protocol, codes};
use iris_runner::{AgentRunner, RunOutcome};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value;
use prost::Message as _;
use serde_json::Value;
use tracing_subscriber::layer::SubscriberExt;

use crate::support::Fixture;

// ---------------------------------------------------------------------------------------
// The receiver: a minimal HTTP/1.1 server (keep-alive, Content-Length bodies) that stores
// every request and answers with the status it is set to.

#[derive(Debug, Clone)]
struct Received {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Received {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// The status that makes the receiver close the connection without answering.
const HANG_UP: u16 = 0;

struct Collector {
    addr: SocketAddr,
    status: Arc<AtomicU16>,
    requests: Arc<Mutex<Vec<Received>>>,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<Vec<JoinHandle<()>>>>,
}

impl Collector {
    fn start(status: u16) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let status = Arc::new(AtomicU16::new(status));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let accept = {
            let (status, requests, stop) = (status.clone(), requests.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut connections = Vec::new();
                for stream in listener.incoming() {
                    if stop.load(Ordering::Acquire) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let (status, requests) = (status.clone(), requests.clone());
                    connections.push(std::thread::spawn(move || {
                        serve(stream, &status, &requests)
                    }));
                }
                connections
            })
        };
        Self {
            addr,
            status,
            requests,
            stop,
            accept: Some(accept),
        }
    }

    fn endpoint(&self) -> String {
        format!("http://{}/v1/traces", self.addr)
    }

    fn requests(&self) -> Vec<Received> {
        self.requests.lock().unwrap().clone()
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.addr);
        if let Some(accept) = self.accept.take() {
            for connection in accept.join().unwrap() {
                let _ = connection.join();
            }
        }
    }
}

fn serve(stream: TcpStream, status: &AtomicU16, requests: &Mutex<Vec<Received>>) {
    // A silent client ends its connection thread after this long.
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let (Some(method), Some(path)) = (parts.next(), parts.next()) else {
            return;
        };
        let (method, path) = (method.to_owned(), path.to_owned());
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            let (name, value) = line.split_once(':').unwrap();
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
        let received = Received {
            method,
            path,
            headers,
            body: Vec::new(),
        };
        assert_eq!(
            received.header("transfer-encoding"),
            None,
            "the exporter sends Content-Length bodies"
        );
        let length: usize = received
            .header("content-length")
            .map_or(0, |v| v.parse().unwrap());
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let json = received.header("content-type") == Some("application/json");
        requests.lock().unwrap().push(Received { body, ..received });
        let code = status.load(Ordering::Acquire);
        if code == HANG_UP {
            return;
        }
        // An empty ExportTraceServiceResponse: no bytes in protobuf, `{}` in JSON.
        let (content_type, answer) = if json {
            ("application/json", "{}")
        } else {
            ("application/x-protobuf", "")
        };
        let response = format!(
            "HTTP/1.1 {code} Status\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n{answer}",
            answer.len()
        );
        if writer.write_all(response.as_bytes()).is_err() {
            return;
        }
    }
}

// ---------------------------------------------------------------------------------------
// One span model for both wire formats.

#[derive(Debug, Clone, PartialEq)]
enum Attr {
    Str(String),
    Int(i64),
    Double(f64),
    Bool(bool),
    StrArray(Vec<String>),
}

#[derive(Debug, Clone)]
struct Span {
    trace_id: String,
    span_id: String,
    parent_span_id: String,
    name: String,
    /// The OTLP `SpanKind` number: 1 internal, 2 server, 3 client.
    kind: i32,
    start: u64,
    end: u64,
    attributes: BTreeMap<String, Attr>,
    /// The OTLP `StatusCode` number: 0 unset, 1 ok, 2 error.
    status_code: i32,
    status_message: String,
}

impl Span {
    fn attr(&self, key: &str) -> Option<&Attr> {
        self.attributes.get(key)
    }
    fn str(&self, key: &str) -> &str {
        match self.attr(key) {
            Some(Attr::Str(s)) => s,
            other => panic!("{}: `{key}` is not a string: {other:?}", self.name),
        }
    }
    fn int(&self, key: &str) -> i64 {
        match self.attr(key) {
            Some(Attr::Int(n)) => *n,
            other => panic!("{}: `{key}` is not an int: {other:?}", self.name),
        }
    }
}

/// What one export delivered: the resource's and the scope's identity, and the spans.
#[derive(Debug, Default)]
struct Export {
    service_names: Vec<String>,
    scopes: Vec<String>,
    spans: Vec<Span>,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn decode_protobuf(requests: &[Received]) -> Export {
    let mut export = Export::default();
    for request in requests {
        let message = ExportTraceServiceRequest::decode(request.body.as_slice()).unwrap();
        for rs in message.resource_spans {
            for kv in rs.resource.unwrap().attributes {
                if kv.key == "service.name" {
                    let value = proto_attr(kv.value.unwrap().value.unwrap());
                    let Attr::Str(name) = value else { panic!() };
                    export.service_names.push(name);
                }
            }
            for ss in rs.scope_spans {
                export.scopes.push(ss.scope.unwrap().name);
                for s in ss.spans {
                    let status = s.status.unwrap_or_default();
                    export.spans.push(Span {
                        trace_id: hex(&s.trace_id),
                        span_id: hex(&s.span_id),
                        parent_span_id: hex(&s.parent_span_id),
                        name: s.name,
                        kind: s.kind,
                        start: s.start_time_unix_nano,
                        end: s.end_time_unix_nano,
                        attributes: s
                            .attributes
                            .into_iter()
                            .map(|kv| (kv.key, proto_attr(kv.value.unwrap().value.unwrap())))
                            .collect(),
                        status_code: status.code,
                        status_message: status.message,
                    });
                }
            }
        }
    }
    export
}

fn proto_attr(value: any_value::Value) -> Attr {
    match value {
        any_value::Value::StringValue(s) => Attr::Str(s),
        any_value::Value::IntValue(n) => Attr::Int(n),
        any_value::Value::DoubleValue(d) => Attr::Double(d),
        any_value::Value::BoolValue(b) => Attr::Bool(b),
        any_value::Value::ArrayValue(a) => Attr::StrArray(
            a.values
                .into_iter()
                .map(|v| match proto_attr(v.value.unwrap()) {
                    Attr::Str(s) => s,
                    other => panic!("a non-string array element: {other:?}"),
                })
                .collect(),
        ),
        other => panic!("an attribute type Iris does not send: {other:?}"),
    }
}

/// Decodes OTLP/JSON per the specification's protobuf-JSON mapping: lowerCamelCase keys,
/// trace and span ids as hex strings, 64-bit integers as decimal strings, enums as numbers.
fn decode_json(requests: &[Received]) -> Export {
    let mut export = Export::default();
    for request in requests {
        let message: Value = serde_json::from_slice(&request.body).unwrap();
        for rs in message["resourceSpans"].as_array().unwrap() {
            for kv in rs["resource"]["attributes"].as_array().unwrap() {
                if kv["key"] == "service.name" {
                    let Attr::Str(name) = json_attr(&kv["value"]) else {
                        panic!()
                    };
                    export.service_names.push(name);
                }
            }
            for ss in rs["scopeSpans"].as_array().unwrap() {
                export
                    .scopes
                    .push(ss["scope"]["name"].as_str().unwrap().to_owned());
                for s in ss["spans"].as_array().unwrap() {
                    let id = |key: &str| {
                        let text = s[key].as_str().unwrap_or("").to_owned();
                        assert!(
                            text.chars()
                                .all(|c| c.is_ascii_hexdigit() && !c.is_uppercase()),
                            "`{key}` is not lowercase hex: {text}"
                        );
                        text
                    };
                    let nanos = |key: &str| -> u64 {
                        s[key]
                            .as_str()
                            .unwrap_or_else(|| panic!("`{key}` is not a decimal string"))
                            .parse()
                            .unwrap()
                    };
                    export.spans.push(Span {
                        trace_id: id("traceId"),
                        span_id: id("spanId"),
                        parent_span_id: id("parentSpanId"),
                        name: s["name"].as_str().unwrap().to_owned(),
                        kind: i32::try_from(s["kind"].as_i64().unwrap()).unwrap(),
                        start: nanos("startTimeUnixNano"),
                        end: nanos("endTimeUnixNano"),
                        attributes: s["attributes"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|kv| {
                                (
                                    kv["key"].as_str().unwrap().to_owned(),
                                    json_attr(&kv["value"]),
                                )
                            })
                            .collect(),
                        status_code: s["status"]["code"]
                            .as_i64()
                            .map_or(0, |c| i32::try_from(c).unwrap()),
                        status_message: s["status"]["message"].as_str().unwrap_or("").to_owned(),
                    });
                }
            }
        }
    }
    export
}

fn json_attr(value: &Value) -> Attr {
    let (kind, inner) = value.as_object().unwrap().iter().next().unwrap();
    match kind.as_str() {
        "stringValue" => Attr::Str(inner.as_str().unwrap().to_owned()),
        "intValue" => Attr::Int(
            inner
                .as_str()
                .expect("an int64 is a decimal string in OTLP/JSON")
                .parse()
                .unwrap(),
        ),
        "doubleValue" => Attr::Double(inner.as_f64().unwrap()),
        "boolValue" => Attr::Bool(inner.as_bool().unwrap()),
        "arrayValue" => Attr::StrArray(
            inner["values"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| match json_attr(v) {
                    Attr::Str(s) => s,
                    other => panic!("a non-string array element: {other:?}"),
                })
                .collect(),
        ),
        other => panic!("an attribute type Iris does not send: {other}"),
    }
}

// ---------------------------------------------------------------------------------------
// Capturing this module's own diagnostics, which the exporter logs from the SDK's export
// thread: a process-wide subscriber that keeps only events on `otel::TRACING_TARGET`.
// Tests on other threads that install their own subscriber (as the runs below do) are
// not affected; without one, only these events are kept.

#[derive(Debug, Clone)]
struct Logged {
    level: tracing::Level,
    fields: String,
}

fn logged() -> &'static Mutex<Vec<Logged>> {
    static LOGGED: OnceLock<Mutex<Vec<Logged>>> = OnceLock::new();
    LOGGED.get_or_init(|| {
        struct Capture;
        impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Capture {
            fn on_event(
                &self,
                event: &tracing::Event<'_>,
                _: tracing_subscriber::layer::Context<'_, S>,
            ) {
                if event.metadata().target() != otel::TRACING_TARGET {
                    return;
                }
                struct Fields(String);
                impl tracing::field::Visit for Fields {
                    fn record_debug(
                        &mut self,
                        field: &tracing::field::Field,
                        value: &dyn std::fmt::Debug,
                    ) {
                        self.0.push_str(&format!("{}={value:?} ", field.name()));
                    }
                }
                let mut fields = Fields(String::new());
                event.record(&mut fields);
                logged().lock().unwrap().push(Logged {
                    level: *event.metadata().level(),
                    fields: fields.0,
                });
            }
        }
        tracing::subscriber::set_global_default(tracing_subscriber::registry().with(Capture))
            .unwrap();
        Mutex::new(Vec::new())
    })
}

fn logged_for(endpoint: &str) -> Vec<Logged> {
    logged()
        .lock()
        .unwrap()
        .iter()
        .filter(|l| l.fields.contains(endpoint))
        .cloned()
        .collect()
}

// ---------------------------------------------------------------------------------------
// Runs.

const SECRET: &str = "sk-otel-test-5ecret";

/// Runs the agent in `yaml` (files `a.txt`) with every span exported per `config`, on a
/// current-thread runtime so every span of the run is seen by this thread's subscriber.
/// Returns the outcome; `finish` ends the export (shutdown or drop).
fn traced_run(yaml: &str, config: &OtelConfig, finish: impl FnOnce(otel::OtelGuard)) -> RunOutcome {
    let fx = Fixture::new(yaml, &[("a.txt", "alpha\n")]);
    let (layer, guard) = otel::layer(config).unwrap();
    let subscriber = tracing_subscriber::registry().with(layer);
    let outcome = tracing::subscriber::with_default(subscriber, || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async {
                let runner = AgentRunner::from_config_path(fx.file()).await.unwrap();
                runner.run("Read a.txt and missing.txt").await
            })
    });
    finish(guard);
    outcome
}

const TWO_TURNS: &str = r"
tools: {builtin: [file.read]}
model:
  provider: scripted
  model: scripted-otel
  max_output_tokens: 256
  temperature: 0.25
  script:
    - text: Reading both.
      usage: {input_tokens: 11, output_tokens: 7}
      tool_calls:
        - {name: read_file, arguments: {file_path: a.txt}}
        - {name: read_file, arguments: {file_path: missing.txt}}
    - expect_tool_results: 2
      text: Done.
      usage: {input_tokens: 20, output_tokens: 5}
";

/// The checks every exported run passes: one trace, `invoke_agent` its only root, every
/// other span its descendant and inside its time range, ids well formed.
fn check_tree(spans: &[Span]) -> &Span {
    let roots: Vec<&Span> = spans
        .iter()
        .filter(|s| s.parent_span_id.is_empty())
        .collect();
    assert_eq!(roots.len(), 1, "one root: {spans:#?}");
    let root = roots[0];
    assert_eq!(root.str("gen_ai.operation.name"), "invoke_agent");
    assert_eq!(root.trace_id.len(), 32);
    assert_ne!(root.trace_id, "0".repeat(32));
    for span in spans {
        assert_eq!(
            span.trace_id, root.trace_id,
            "{} is in another trace",
            span.name
        );
        assert_eq!(span.span_id.len(), 16);
        assert!(
            span.start <= span.end,
            "{} ends before it starts",
            span.name
        );
        // Walk up to the root: every span descends from invoke_agent.
        let mut at = span;
        for _ in 0..spans.len() {
            if at.parent_span_id.is_empty() {
                break;
            }
            at = spans
                .iter()
                .find(|s| s.span_id == at.parent_span_id)
                .unwrap_or_else(|| panic!("{}'s parent was not exported", at.name));
        }
        assert_eq!(
            at.span_id, root.span_id,
            "{} does not descend from the root",
            span.name
        );
        assert!(
            span.start >= root.start && span.end <= root.end,
            "{} outside the run",
            span.name
        );
    }
    root
}

fn by_operation<'a>(spans: &'a [Span], operation: &str) -> Vec<&'a Span> {
    let mut found: Vec<&Span> = spans
        .iter()
        .filter(|s| s.attr("gen_ai.operation.name") == Some(&Attr::Str(operation.into())))
        .collect();
    found.sort_by_key(|s| s.start);
    found
}

const INTERNAL: i32 = 1;
const CLIENT: i32 = 3;
const STATUS_UNSET: i32 = 0;
const STATUS_ERROR: i32 = 2;

#[test]
fn a_run_arrives_as_one_genai_trace_over_http_protobuf() {
    let collector = Collector::start(200);
    let config = OtelConfig::new(collector.endpoint())
        .with_header("x-api-key", SECRET)
        .with_service_name("iris-otel-test");
    assert!(!format!("{config:?}").contains(SECRET), "{config:?}");
    let outcome = traced_run(TWO_TURNS, &config, |guard| guard.shutdown().unwrap());
    let RunOutcome::Completed { output, usage, .. } = &outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(output, "Done.");
    assert_eq!((usage.input_tokens, usage.output_tokens), (31, 12));

    let requests = collector.requests();
    assert!(!requests.is_empty(), "nothing was exported");
    for r in &requests {
        assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/v1/traces"));
        assert_eq!(r.header("content-type"), Some("application/x-protobuf"));
        assert_eq!(r.header("x-api-key"), Some(SECRET));
    }
    let export = decode_protobuf(&requests);
    assert!(export.service_names.iter().all(|n| n == "iris-otel-test"));
    assert!(
        export.scopes.iter().all(|n| n == "iris"),
        "{:?}",
        export.scopes
    );
    let spans = export.spans;
    assert_eq!(spans.len(), 5, "{spans:#?}");

    let root = check_tree(&spans);
    assert_eq!(root.name, "invoke_agent iris");
    assert_eq!(root.kind, INTERNAL);
    assert_eq!(root.str("gen_ai.agent.name"), "iris");
    assert_eq!(root.str("gen_ai.provider.name"), "scripted");
    assert_eq!(root.str("gen_ai.request.model"), "scripted-otel");
    assert_eq!(root.str("gen_ai.conversation.id"), root.str("iris.run.id"));
    assert_eq!(root.str("iris.run.status"), "completed");
    assert_eq!(root.int("iris.run.turns"), 2);
    assert_eq!(root.int("gen_ai.usage.input_tokens"), 31);
    assert_eq!(root.int("gen_ai.usage.output_tokens"), 12);
    assert_eq!(root.attr("error.type"), None);
    assert_eq!(root.status_code, STATUS_UNSET);

    let chats = by_operation(&spans, "chat");
    assert_eq!(chats.len(), 2);
    let expected = [
        ("scripted_1", 11, 7, "tool_calls"),
        ("scripted_2", 20, 5, "stop"),
    ];
    for (chat, (id, input, output, finish)) in chats.iter().zip(expected) {
        assert_eq!(chat.parent_span_id, root.span_id);
        assert_eq!(chat.name, "chat scripted-otel");
        assert_eq!(chat.kind, CLIENT);
        assert_eq!(chat.str("gen_ai.provider.name"), "scripted");
        assert_eq!(chat.str("gen_ai.request.model"), "scripted-otel");
        assert_eq!(chat.int("gen_ai.request.max_tokens"), 256);
        assert_eq!(
            chat.attr("gen_ai.request.temperature"),
            Some(&Attr::Double(0.25))
        );
        assert_eq!(chat.int("iris.request.tools"), 1);
        assert_eq!(chat.str("gen_ai.response.id"), id);
        assert_eq!(chat.str("gen_ai.response.model"), "scripted-otel");
        assert_eq!(chat.int("gen_ai.usage.input_tokens"), input);
        assert_eq!(chat.int("gen_ai.usage.output_tokens"), output);
        assert_eq!(
            chat.attr("gen_ai.response.finish_reasons"),
            Some(&Attr::StrArray(vec![finish.to_owned()]))
        );
        assert_eq!(chat.attr("error.type"), None);
        assert_eq!(chat.status_code, STATUS_UNSET);
    }
    // The tools ran between the two model requests.
    let tools = by_operation(&spans, "execute_tool");
    assert_eq!(tools.len(), 2);
    for tool in &tools {
        assert_eq!(tool.parent_span_id, root.span_id);
        assert_eq!(tool.name, "execute_tool read_file");
        assert_eq!(tool.kind, INTERNAL);
        assert_eq!(tool.str("gen_ai.tool.name"), "read_file");
        assert!(tool.start >= chats[0].end && tool.end <= chats[1].start);
    }
    let ok = tools
        .iter()
        .find(|t| t.str("gen_ai.tool.call.id") == "call_1_1")
        .unwrap();
    assert_eq!(ok.str("iris.tool.outcome"), "ok");
    assert_eq!(ok.attr("error.type"), None);
    assert_eq!(ok.status_code, STATUS_UNSET);
    let failed = tools
        .iter()
        .find(|t| t.str("gen_ai.tool.call.id") == "call_1_2")
        .unwrap();
    let code = failed.str("error.type");
    assert_eq!(code, "FILE_NOT_FOUND");
    assert_eq!(failed.str("iris.tool.outcome"), code);
    assert_eq!(failed.status_code, STATUS_ERROR);
    assert_eq!(failed.status_message, code);
}

const FAILING: &str = r"
tools: {builtin: [file.read]}
model:
  provider: scripted
  script:
    - tool_calls: [{name: read_file, arguments: {file_path: a.txt}}]
";

#[test]
fn a_failed_run_arrives_over_http_json_and_dropping_the_guard_flushes_it() {
    let collector = Collector::start(200);
    let config = OtelConfig::new(collector.endpoint()).with_protocol(Protocol::HttpJson);
    let outcome = traced_run(FAILING, &config, drop);
    let RunOutcome::Failed { error } = &outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(error.code, "PROVIDER_SCRIPT_EXHAUSTED");

    let requests = collector.requests();
    for r in &requests {
        assert_eq!(r.header("content-type"), Some("application/json"));
    }
    let export = decode_json(&requests);
    assert!(
        export.service_names.iter().all(|n| n == "iris"),
        "{:?}",
        export.service_names
    );
    let spans = export.spans;
    assert_eq!(spans.len(), 4, "{spans:#?}");
    let root = check_tree(&spans);
    assert_eq!(root.str("iris.run.status"), "failed");
    assert_eq!(root.str("error.type"), "PROVIDER_SCRIPT_EXHAUSTED");
    assert_eq!(root.status_code, STATUS_ERROR);
    assert_eq!(root.status_message, "PROVIDER_SCRIPT_EXHAUSTED");
    assert_eq!(root.int("iris.run.turns"), 2);

    let chats = by_operation(&spans, "chat");
    assert_eq!(chats.len(), 2);
    assert_eq!(chats[0].kind, CLIENT);
    assert_eq!(chats[0].status_code, STATUS_UNSET);
    assert_eq!(chats[0].name, "chat scripted");
    assert_eq!(chats[1].str("error.type"), "PROVIDER_SCRIPT_EXHAUSTED");
    assert_eq!(chats[1].status_code, STATUS_ERROR);
    assert_eq!(chats[1].attr("gen_ai.usage.input_tokens"), None);
    let tools = by_operation(&spans, "execute_tool");
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].str("iris.tool.outcome"), "ok");
    assert_eq!(tools[0].status_code, STATUS_UNSET);
}

/// One span through `layer`'s subscriber on this thread.
fn one_span(subscriber: &tracing::Dispatch, name: &'static str) {
    tracing::dispatcher::with_default(subscriber, || {
        let span = tracing::info_span!("probe", "otel.name" = name);
        drop(span.enter());
    });
}

#[test]
fn a_refusing_collector_is_a_typed_error_logged_once_per_outage() {
    let collector = Collector::start(401);
    let config = OtelConfig::new(collector.endpoint()).with_header("authorization", SECRET);
    let endpoint = collector.endpoint();
    logged();
    let (layer, guard) = otel::layer(&config).unwrap();
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(layer));

    one_span(&dispatch, "first");
    let error = guard.flush().unwrap_err();
    assert_eq!(error.code(), codes::OTEL_EXPORT_FAILED);
    assert!(
        matches!(
            error,
            OtelError::ExportFailed {
                failed_spans: 1,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("401"), "{error}");
    assert!(!error.to_string().contains(SECRET));
    one_span(&dispatch, "second");
    let error = guard.flush().unwrap_err();
    assert!(
        matches!(
            error,
            OtelError::ExportFailed {
                failed_spans: 1,
                ..
            }
        ),
        "{error:?}"
    );
    let logs = logged_for(&endpoint);
    assert_eq!(logs.len(), 1, "one warning for the outage: {logs:?}");
    assert_eq!(logs[0].level, tracing::Level::WARN);
    assert!(logs[0].fields.contains("401"), "{logs:?}");
    assert!(logs.iter().all(|l| !l.fields.contains(SECRET)));

    // The collector recovers: the flush succeeds and the recovery is logged.
    collector.status.store(200, Ordering::Release);
    one_span(&dispatch, "third");
    guard.flush().unwrap();
    let stats = guard.stats();
    assert_eq!((stats.exported_spans, stats.failed_spans), (1, 2));
    let logs = logged_for(&endpoint);
    assert_eq!(logs.len(), 2, "{logs:?}");
    assert_eq!(logs[1].level, tracing::Level::INFO);

    // A new outage is logged again, and shutdown reports what it lost.
    collector.status.store(503, Ordering::Release);
    one_span(&dispatch, "fourth");
    let error = guard.shutdown().unwrap_err();
    assert!(
        matches!(
            error,
            OtelError::ExportFailed {
                failed_spans: 1,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("503"), "{error}");
    assert_eq!(logged_for(&endpoint).len(), 3);
    // Every request carried the header. A 401 is final; a 503 is retried (with backoff,
    // within the request timeout) before the batch counts as failed.
    let requests = collector.requests();
    assert!(
        requests
            .iter()
            .all(|r| r.header("authorization") == Some(SECRET))
    );
    let mut sent: BTreeMap<String, usize> = BTreeMap::new();
    for span in decode_protobuf(&requests).spans {
        *sent.entry(span.name).or_default() += 1;
    }
    assert_eq!(
        (sent["first"], sent["second"], sent["third"]),
        (1, 1, 1),
        "{sent:?}"
    );
    assert!(sent["fourth"] > 1, "{sent:?}");
    assert_eq!(sent.len(), 4, "{sent:?}");
}

#[test]
fn a_collector_that_hangs_up_fails_the_shutdown_counting_the_lost_spans() {
    let collector = Collector::start(HANG_UP);
    let config = OtelConfig::new(collector.endpoint()).with_timeout(Duration::from_secs(2));
    let (layer, guard) = otel::layer(&config).unwrap();
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(layer));
    for _ in 0..3 {
        one_span(&dispatch, "lost");
    }
    let error = guard.shutdown().unwrap_err();
    assert_eq!(error.code(), codes::OTEL_EXPORT_FAILED);
    assert!(
        matches!(
            error,
            OtelError::ExportFailed {
                failed_spans: 3,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("network error"), "{error}");
    // No answer is retryable: the one batch was sent more than once.
    assert!(collector.requests().len() > 1);
}

#[test]
fn a_targets_filter_keeps_only_iris_spans() {
    use tracing_subscriber::Layer as _;

    let collector = Collector::start(200);
    let (layer, guard) = otel::layer(&OtelConfig::new(collector.endpoint())).unwrap();
    let only_iris = tracing_subscriber::filter::Targets::new()
        .with_target("iris_runner", tracing::Level::INFO)
        .with_target("iris::executor", tracing::Level::INFO);
    let subscriber = tracing_subscriber::registry().with(layer.with_filter(only_iris));
    tracing::subscriber::with_default(subscriber, || {
        drop(tracing::info_span!(target: "iris_runner", "kept").entered());
        drop(tracing::info_span!(target: "hyper::client", "dropped").entered());
    });
    guard.shutdown().unwrap();
    let names: Vec<String> = decode_protobuf(&collector.requests())
        .spans
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(names, ["kept"]);
}

// ---------------------------------------------------------------------------------------
// Configuration.

fn lookup(vars: &[(&str, &str)]) -> Result<OtelConfig, OtelError> {
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    OtelConfig::from_lookup(move |name| {
        vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    })
}

#[test]
fn the_environment_configures_endpoint_headers_service_protocol_and_timeout() {
    let defaults = lookup(&[]).unwrap();
    assert_eq!(defaults, OtelConfig::default());
    assert_eq!(defaults.endpoint(), otel::DEFAULT_ENDPOINT);
    assert_eq!(defaults.endpoint(), "http://localhost:4318/v1/traces");
    assert_eq!(defaults.service_name(), "iris");
    assert_eq!(defaults.protocol(), Protocol::HttpProtobuf);
    assert_eq!(defaults.timeout(), Duration::from_secs(10));
    assert_eq!(defaults.header_names().count(), 0);

    // The base endpoint gets the signal path; the traces endpoint is used as is and wins.
    let check_endpoint = |vars: &[(&str, &str)], expected: &str| {
        assert_eq!(lookup(vars).unwrap().endpoint(), expected, "{vars:?}");
    };
    check_endpoint(
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318")],
        "http://collector:4318/v1/traces",
    );
    check_endpoint(
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector/otlp/")],
        "https://collector/otlp/v1/traces",
    );
    check_endpoint(
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://base:4318"),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "http://traces:9999/custom",
            ),
        ],
        "http://traces:9999/custom",
    );
    check_endpoint(
        &[
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", " "),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", ""),
        ],
        otel::DEFAULT_ENDPOINT,
    );

    let config = lookup(&[
        (
            "OTEL_EXPORTER_OTLP_HEADERS",
            "api-key=general, team = agents%2Fcore ,",
        ),
        ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "API-KEY=for%20traces"),
        ("OTEL_SERVICE_NAME", "billing-agent"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
        ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json"),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "30000"),
        ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "2500"),
    ])
    .unwrap();
    assert_eq!(
        config.header_names().collect::<Vec<_>>(),
        ["team", "API-KEY"]
    );
    assert_eq!(
        config,
        OtelConfig::default()
            .with_header("team", "agents/core")
            .with_header("API-KEY", "for traces")
            .with_service_name("billing-agent")
            .with_protocol(Protocol::HttpJson)
            .with_timeout(Duration::from_millis(2500))
    );
    let debug = format!("{config:?}");
    assert!(
        !debug.contains("for traces") && !debug.contains("agents/core"),
        "{debug}"
    );
    assert_eq!(
        lookup(&[("OTEL_EXPORTER_OTLP_TIMEOUT", "750")])
            .unwrap()
            .timeout(),
        Duration::from_millis(750)
    );
    assert_eq!(Protocol::HttpJson.as_str(), "http/json");
    assert_eq!(Protocol::HttpProtobuf.as_str(), "http/protobuf");
}

/// `from_env` reads the real process environment: the test re-runs itself (this test
/// only) with OTEL variables set, and the child checks what `from_env` made of them.
#[test]
fn from_env_reads_the_process_environment() {
    const CHILD: &str = "IRIS_OTEL_FROM_ENV_CHILD";
    if std::env::var_os(CHILD).is_some() {
        let config = OtelConfig::from_env().unwrap();
        assert_eq!(config.endpoint(), "http://127.0.0.1:4318/v1/traces");
        assert_eq!(config.header_names().collect::<Vec<_>>(), ["x-api-key"]);
        assert_eq!(config.service_name(), "from-env");
        assert_eq!(config.protocol(), Protocol::HttpJson);
        assert_eq!(config.timeout(), Duration::from_millis(1234));
        return;
    }
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["otel::from_env_reads_the_process_environment", "--exact"])
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_HEADERS")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
        .env(CHILD, "1")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318/")
        .env("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=hunter2")
        .env("OTEL_SERVICE_NAME", "from-env")
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
        .env("OTEL_EXPORTER_OTLP_TIMEOUT", "1234")
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "the child's checks failed");
}

#[test]
fn malformed_environment_values_are_typed_errors_that_never_quote_a_header_value() {
    let check = |vars: &[(&str, &str)], code: &str, mentions: &str| {
        let error = lookup(vars).unwrap_err();
        assert_eq!(error.code(), code, "{vars:?}: {error}");
        assert!(error.to_string().contains(mentions), "{error}");
        assert!(!error.to_string().contains("hunter2"), "{error}");
    };
    check(
        &[("OTEL_EXPORTER_OTLP_HEADERS", "api-key=hunter2,novalue")],
        codes::OTEL_INVALID_HEADER,
        "OTEL_EXPORTER_OTLP_HEADERS",
    );
    check(
        &[("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "=hunter2")],
        codes::OTEL_INVALID_HEADER,
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    );
    check(
        &[("OTEL_EXPORTER_OTLP_HEADERS", "api-key=hunter2%zz")],
        codes::OTEL_INVALID_HEADER,
        "api-key",
    );
    check(
        &[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")],
        codes::OTEL_UNSUPPORTED_PROTOCOL,
        "grpc",
    );
    check(
        &[("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "thrift")],
        codes::OTEL_INVALID_SETTING,
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    );
    check(
        &[("OTEL_EXPORTER_OTLP_TIMEOUT", "5s")],
        codes::OTEL_INVALID_SETTING,
        "OTEL_EXPORTER_OTLP_TIMEOUT",
    );
}

fn refused(config: &OtelConfig) -> OtelError {
    match otel::layer::<tracing_subscriber::Registry>(config) {
        Ok(_) => panic!("{config:?} was accepted"),
        Err(e) => e,
    }
}

#[test]
fn layer_refuses_non_http_endpoints_bad_headers_and_settings_with_typed_errors() {
    for endpoint in [
        "grpc://localhost:4317",
        "ftp://collector/v1/traces",
        "unix:///tmp/otel.sock",
        "localhost:4318/v1/traces",
        "/v1/traces",
        "http://",
        "",
    ] {
        let error = refused(&OtelConfig::new(endpoint));
        assert_eq!(
            error.code(),
            codes::OTEL_INVALID_ENDPOINT,
            "{endpoint}: {error}"
        );
        assert!(matches!(&error, OtelError::InvalidEndpoint { endpoint: e, .. } if e == endpoint));
    }
    // A password in the endpoint is never shown.
    let with_password = OtelConfig::new("ftp://user:hunter2@collector/v1/traces");
    let error = refused(&with_password);
    assert!(!error.to_string().contains("hunter2"), "{error}");
    assert!(error.to_string().contains("***"), "{error}");
    assert!(!format!("{with_password:?}").contains("hunter2"));

    let base = OtelConfig::new("https://collector.example/v1/traces");
    let check = |config: OtelConfig, code: &str, mentions: &str| {
        let error = refused(&config);
        assert_eq!(error.code(), code, "{error}");
        assert!(error.to_string().contains(mentions), "{error}");
        assert!(!error.to_string().contains("hunter2"), "{error}");
    };
    check(
        base.clone().with_header("bad name", "hunter2"),
        codes::OTEL_INVALID_HEADER,
        "bad name",
    );
    check(
        base.clone()
            .with_header("api-key", "hunter2\r\nx-injected: 1"),
        codes::OTEL_INVALID_HEADER,
        "api-key",
    );
    check(
        base.clone().with_timeout(Duration::ZERO),
        codes::OTEL_INVALID_SETTING,
        "with_timeout",
    );
    check(
        base.clone().with_service_name(" "),
        codes::OTEL_INVALID_SETTING,
        "with_service_name",
    );
    // A URL the URL parser accepts and the HTTP stack cannot carry (longer than http's
    // 64 KiB URI limit): the exporter itself refuses it.
    let long = format!("http://collector/{}", "a".repeat(70_000));
    check(
        OtelConfig::new(long),
        codes::OTEL_EXPORTER_FAILED,
        "endpoint",
    );

    // A valid config builds, inside a Tokio runtime as well (the blocking HTTP client is
    // built on a thread of its own), and shuts down cleanly with nothing to send.
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(async {
            let (_layer, guard) = otel::layer::<tracing_subscriber::Registry>(
                &base.clone().with_header("api-key", "hunter2"),
            )
            .unwrap();
            assert!(!format!("{guard:?}").contains("hunter2"));
            assert_eq!(guard.stats(), otel::ExportStats::default());
            guard.shutdown().unwrap();
        });
}
