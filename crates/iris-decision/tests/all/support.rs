//! Shared test helpers: a real HTTP server on 127.0.0.1 that speaks the documented
//! wire format, a scripted in-process evaluator, and small builders.

use std::collections::BTreeMap;
use std::future::pending;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use iris_decision::{
    BoxFuture, ChoiceAnswer, DecisionAnswer, DecisionEvaluator, DecisionQuestion, DecisionRequest,
    DecisionResponse, DecisionUsage, Error, JevClient, Result,
};
use iris_tools_core::ToolDefinition;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::task::{JoinHandle, JoinSet};

/// The key every test client uses; tests assert it never leaks.
pub(crate) const KEY: &str = "sk-test-7f3a9c2e-secret";

/// One request the server received.
#[derive(Debug, Clone)]
pub(crate) struct Recorded {
    pub(crate) method: String,
    pub(crate) path: String,
    /// Header names lower-cased.
    pub(crate) headers: BTreeMap<String, String>,
    pub(crate) body: Vec<u8>,
}

impl Recorded {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

/// What the server does with one request.
pub(crate) enum Reply {
    /// A complete response with a status and a body.
    Status(u16, String),
    /// A complete response with extra headers.
    WithHeaders(u16, Vec<(&'static str, String)>, String),
    /// Read the request, never answer (the connection stays open).
    Stall,
    /// Send the headers and part of a longer body, then never finish.
    PartialBody { declared_len: usize, sent: String },
    /// Send the headers, then one byte of a huge body every `every`, forever: the body
    /// keeps moving, so only a total deadline (not an idle timeout) can end it.
    Trickle { every: Duration },
}

impl Reply {
    pub(crate) fn json(status: u16, body: Value) -> Self {
        Reply::Status(status, body.to_string())
    }
}

type Handler = Arc<dyn Fn(&Recorded) -> Reply + Send + Sync>;
type Script = Box<dyn Fn(&DecisionRequest) -> Result<DecisionResponse> + Send + Sync>;

/// A one-file HTTP/1.1 server on 127.0.0.1: enough of the protocol for one request per
/// connection (`Connection: close`). Dropping it ends every connection it holds.
pub(crate) struct TestServer {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Recorded>>>,
    arrived: Arc<Notify>,
    task: JoinHandle<()>,
}

impl TestServer {
    pub(crate) async fn start(
        handler: impl Fn(&Recorded) -> Reply + Send + Sync + 'static,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let arrived = Arc::new(Notify::new());
        let handler: Handler = Arc::new(handler);
        let task = tokio::spawn({
            let requests = requests.clone();
            let arrived = arrived.clone();
            async move {
                // Connection tasks live in the set, so aborting this task ends them all.
                let mut connections = JoinSet::new();
                loop {
                    let Ok((stream, _)) = listener.accept().await else {
                        return;
                    };
                    connections.spawn(serve(
                        stream,
                        handler.clone(),
                        requests.clone(),
                        arrived.clone(),
                    ));
                }
            }
        });
        Self {
            addr,
            requests,
            arrived,
            task,
        }
    }

    /// A server that answers like the documented service: see [`jev_answers`].
    pub(crate) async fn jev() -> Self {
        Self::start(|r| Reply::json(200, jev_answers(&r.json()))).await
    }

    pub(crate) fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// A client for this server with the test key and a deadline.
    pub(crate) fn client(&self, timeout_seconds: f64) -> JevClient {
        JevClient::new(KEY)
            .unwrap()
            .with_base_url(&self.base_url())
            .unwrap()
            .with_timeout_seconds(timeout_seconds)
            .unwrap()
    }

    pub(crate) fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    /// Waits until at least `n` requests have arrived (no polling, no sleeping).
    pub(crate) async fn wait_for_requests(&self, n: usize) {
        loop {
            let notified = self.arrived.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.requests.lock().unwrap().len() >= n {
                return;
            }
            notified.await;
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(
    mut stream: TcpStream,
    handler: Handler,
    requests: Arc<Mutex<Vec<Recorded>>>,
    arrived: Arc<Notify>,
) {
    let Some(request) = read_request(&mut stream).await else {
        return;
    };
    let reply = handler(&request);
    requests.lock().unwrap().push(request);
    arrived.notify_waiters();
    let head = |status: u16, len: usize, extra: &[(&str, String)]| {
        let mut head = format!(
            "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {len}\r\nconnection: close\r\n",
            reason(status)
        );
        for (name, value) in extra {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        head
    };
    let result = match reply {
        Reply::Status(status, body) => {
            let text = head(status, body.len(), &[]) + &body;
            stream.write_all(text.as_bytes()).await
        }
        Reply::WithHeaders(status, extra, body) => {
            let text = head(status, body.len(), &extra) + &body;
            stream.write_all(text.as_bytes()).await
        }
        Reply::Stall => pending().await,
        Reply::PartialBody { declared_len, sent } => {
            let text = head(200, declared_len, &[]) + &sent;
            stream.write_all(text.as_bytes()).await.unwrap();
            pending().await
        }
        Reply::Trickle { every } => {
            stream
                .write_all(head(200, 1_000_000, &[]).as_bytes())
                .await
                .unwrap();
            let mut tick = tokio::time::interval(every);
            loop {
                tick.tick().await;
                if stream.write_all(b" ").await.is_err() {
                    return;
                }
            }
        }
    };
    if result.is_ok() {
        let _ = stream.shutdown().await;
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        302 => "Found",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

/// Reads one HTTP/1.1 request with a `content-length` body.
async fn read_request(stream: &mut TcpStream) -> Option<Recorded> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_owned();
    let path = first.next()?.to_owned();
    let headers: BTreeMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let len: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < len {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some(Recorded {
        method,
        path,
        headers,
        body,
    })
}

/// The answers a well-behaved service gives to a wire request: each choice goes to the
/// first non-`none` option whose name (split on `_`) shares a word with the
/// instructions, else `none`; booleans get 0.75; scores put everything on the top level.
pub(crate) fn jev_answers(request: &Value) -> Value {
    let mut answers = serde_json::Map::new();
    for (id, q) in request["questions"].as_object().unwrap() {
        let instructions = q["instructions"].as_str().unwrap().to_lowercase();
        let words: Vec<&str> = instructions
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.len() > 2)
            .collect();
        let answer = match q["type"].as_str().unwrap() {
            "choice" => {
                let options = q["options"].as_object().unwrap();
                let choice = options
                    .keys()
                    .filter(|o| *o != "none")
                    .find(|o| o.split('_').any(|part| words.contains(&part)))
                    .cloned()
                    .unwrap_or_else(|| "none".to_owned());
                let probabilities = if choice == "none" {
                    json!({"none": 1.0})
                } else {
                    json!({choice.clone(): 0.9, "none": 0.1})
                };
                json!({"type": "choice", "choice": choice, "probabilities": probabilities, "confidence": 0.9})
            }
            "boolean" => json!({"type": "boolean", "probability": 0.75}),
            "score" => {
                let levels = q["levels"].as_array().unwrap();
                let mut probabilities = vec![0.0; levels.len()];
                *probabilities.last_mut().unwrap() = 1.0;
                json!({"type": "score", "score": 1.0, "probabilities": probabilities, "levels": levels, "confidence": 0.6})
            }
            other => panic!("unknown question type {other}"),
        };
        answers.insert(id.clone(), answer);
    }
    json!({"model": "jev-1.13.0", "answers": answers, "usage": {"input_tokens": 321, "output_tokens": 7}})
}

/// An in-process evaluator: records each request and answers with a script.
pub(crate) struct Scripted {
    pub(crate) calls: AtomicUsize,
    pub(crate) seen: Mutex<Vec<DecisionRequest>>,
    script: Script,
}

impl Scripted {
    pub(crate) fn new(
        script: impl Fn(&DecisionRequest) -> Result<DecisionResponse> + Send + Sync + 'static,
    ) -> Self {
        Self {
            calls: AtomicUsize::new(0),
            seen: Mutex::new(Vec::new()),
            script: Box::new(script),
        }
    }

    /// Answers each choice question with `pick(instructions)` (or `none`).
    pub(crate) fn choosing(pick: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        Self::new(move |request| {
            let answers = request
                .questions
                .iter()
                .map(|(id, q)| {
                    let DecisionQuestion::Choice(q) = q else {
                        panic!("discovery asks choice questions only")
                    };
                    let choice = pick(&q.instructions).unwrap_or_else(|| "none".to_owned());
                    (id.clone(), choice_answer(&choice))
                })
                .collect();
            Ok(response(answers))
        })
    }

    pub(crate) fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl DecisionEvaluator for Scripted {
    fn evaluate<'a>(
        &'a self,
        request: &'a DecisionRequest,
    ) -> BoxFuture<'a, Result<DecisionResponse>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.seen.lock().unwrap().push(request.clone());
        let result = (self.script)(request);
        Box::pin(async move { result })
    }
}

/// A certain choice answer.
pub(crate) fn choice_answer(choice: &str) -> DecisionAnswer {
    DecisionAnswer::Choice(ChoiceAnswer {
        choice: choice.to_owned(),
        probabilities: [(choice.to_owned(), 1.0)].into(),
        confidence: 0.95,
    })
}

/// A response from the scripted provider.
pub(crate) fn response(answers: BTreeMap<String, DecisionAnswer>) -> DecisionResponse {
    DecisionResponse {
        provider: "scripted".into(),
        model: "script-1".into(),
        answers,
        usage: DecisionUsage {
            input_tokens: 1000,
            output_tokens: 12,
        },
    }
}

/// A deferred tool definition.
pub(crate) fn tool(name: &str, description: &str) -> ToolDefinition {
    ToolDefinition::new(name, description, json!({"type": "object"})).with_deferred(true)
}

/// `n` distinct deferred tools `tool_000`, `tool_001`, ….
pub(crate) fn tools(n: usize) -> Vec<ToolDefinition> {
    (0..n)
        .map(|i| {
            tool(
                &format!("tool_{i:03}"),
                &format!("Synthetic tool number {i}."),
            )
        })
        .collect()
}

pub(crate) fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

/// The error's code, or `OK`.
pub(crate) fn code_of<T>(result: &std::result::Result<T, Error>) -> &'static str {
    match result {
        Ok(_) => "OK",
        Err(e) => e.code(),
    }
}
