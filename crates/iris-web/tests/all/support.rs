//! A tiny HTTP/1.1 server on 127.0.0.1 that speaks Tavily's wire format, and helpers
//! shared by the test modules.
#![allow(dead_code)] // Each module uses a different subset of the helpers.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use iris_tools_core::{Tool, ToolExecutionContext, ToolOutput};
use iris_web::{TavilyClient, WebFetchTool, WebSearchTool};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// The key every test client sends; tests check it never leaks.
pub(crate) const TEST_KEY: &str = "tvly-test-key-0123456789";

/// What the server answers to one request.
#[derive(Debug, Clone)]
pub(crate) enum Reply {
    /// A complete answer.
    Answer {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// Read the request, then never answer (a server slower than any deadline).
    Hang,
    /// Send a 200 head and the start of the body, then never finish it.
    HangInBody,
}

impl Reply {
    /// A 200 with a JSON body.
    pub(crate) fn json(body: Value) -> Self {
        Self::status_json(200, body)
    }

    /// Any status with a JSON body.
    pub(crate) fn status_json(status: u16, body: Value) -> Self {
        Reply::Answer {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_string(),
        }
    }

    /// Any status with a raw body.
    pub(crate) fn raw(status: u16, content_type: &str, body: &str) -> Self {
        Reply::Answer {
            status,
            headers: vec![("content-type".into(), content_type.into())],
            body: body.into(),
        }
    }

    /// Adds a header to an answer.
    pub(crate) fn header(mut self, name: &str, value: &str) -> Self {
        if let Reply::Answer { headers, .. } = &mut self {
            headers.push((name.into(), value.into()));
        }
        self
    }
}

/// One request as the server received it.
#[derive(Debug, Clone)]
pub(crate) struct Recorded {
    pub(crate) method: String,
    pub(crate) path: String,
    /// Header names lower-cased, in arrival order.
    pub(crate) headers: Vec<(String, String)>,
    /// The body bytes as sent, for exact comparisons.
    pub(crate) raw_body: String,
    /// The body parsed as JSON (`null` when it is not JSON).
    pub(crate) body: Value,
}

impl Recorded {
    /// The value of a header.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

type Handler = Arc<dyn Fn(&Recorded) -> Reply + Send + Sync>;

/// The server: every connection carries one request and gets the handler's reply.
pub(crate) struct TestServer {
    addr: std::net::SocketAddr,
    requests: Arc<Mutex<Vec<Recorded>>>,
    seen: watch::Receiver<usize>,
}

impl TestServer {
    /// A server that answers every request with `reply`.
    pub(crate) async fn start(reply: Reply) -> Self {
        Self::with_handler(move |_| reply.clone()).await
    }

    /// A server whose answer depends on the request.
    pub(crate) async fn with_handler(
        handler: impl Fn(&Recorded) -> Reply + Send + Sync + 'static,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (count_tx, seen) = watch::channel(0_usize);
        let count_tx = Arc::new(count_tx);
        let handler: Handler = Arc::new(handler);
        let log = Arc::clone(&requests);
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let (handler, log, count_tx) = (
                    Arc::clone(&handler),
                    Arc::clone(&log),
                    Arc::clone(&count_tx),
                );
                tokio::spawn(async move {
                    serve(stream, handler, log, count_tx).await;
                });
            }
        });
        Self {
            addr,
            requests,
            seen,
        }
    }

    /// The base URL to give the client.
    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request received so far.
    pub(crate) fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    /// Waits until `n` requests have arrived.
    pub(crate) async fn wait_for_requests(&self, n: usize) {
        let mut seen = self.seen.clone();
        seen.wait_for(|count| *count >= n).await.unwrap();
    }
}

async fn serve(
    mut stream: TcpStream,
    handler: Handler,
    log: Arc<Mutex<Vec<Recorded>>>,
    count_tx: Arc<watch::Sender<usize>>,
) {
    let Some(request) = read_request(&mut stream).await else {
        return;
    };
    let reply = handler(&request);
    log.lock().unwrap().push(request);
    count_tx.send_modify(|n| *n += 1);
    match reply {
        Reply::Hang => std::future::pending::<()>().await,
        Reply::HangInBody => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{\"results\": [";
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.flush().await;
            std::future::pending::<()>().await;
        }
        Reply::Answer {
            status,
            headers,
            body,
        } => {
            let mut head = format!(
                "HTTP/1.1 {status} Test\r\ncontent-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("\r\n");
            // The client may have given up already; a failed write is not a test failure.
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.write_all(body.as_bytes()).await;
            let _ = stream.shutdown().await;
        }
    }
}

/// Reads one HTTP/1.1 request with a `content-length` body.
async fn read_request(stream: &mut TcpStream) -> Option<Recorded> {
    let mut buf = Vec::new();
    let mut chunk = [0_u8; 4096];
    let head_end = loop {
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8(buf[..head_end].to_vec()).ok()?;
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_owned();
    let path = request_line.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    let raw_body = String::from_utf8_lossy(&body).into_owned();
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Some(Recorded {
        method,
        path,
        headers,
        raw_body,
        body,
    })
}

/// A client with the test key pointed at `server`.
pub(crate) fn client(server: &TestServer) -> Arc<TavilyClient> {
    Arc::new(
        TavilyClient::new(TEST_KEY)
            .with_base_url(&server.url())
            .unwrap(),
    )
}

/// A client with the test key and a short deadline, for servers that hang.
pub(crate) fn impatient_client(server: &TestServer) -> Arc<TavilyClient> {
    Arc::new(
        TavilyClient::new(TEST_KEY)
            .with_base_url(&server.url())
            .unwrap()
            .with_timeout(Duration::from_millis(50))
            .unwrap(),
    )
}

/// A context for a call.
pub(crate) fn ctx() -> ToolExecutionContext {
    ToolExecutionContext::new(std::env::temp_dir())
}

/// Runs `tool` the way the executor does: validate, then run with the validated input
/// (normalized, and already parsed).
pub(crate) async fn call(tool: &dyn Tool, input: Value) -> ToolOutput {
    call_with(tool, input, &ctx()).await
}

/// [`call`] with a given context.
pub(crate) async fn call_with(
    tool: &dyn Tool,
    input: Value,
    ctx: &ToolExecutionContext,
) -> ToolOutput {
    match tool.validate_input(input) {
        Ok(valid) => tool.run(valid, ctx).await,
        Err(info) => ToolOutput::error(info),
    }
}

/// A `web_search` tool over `client`.
pub(crate) fn search_tool(client: Arc<TavilyClient>) -> WebSearchTool {
    WebSearchTool::new(client)
}

/// A `web_fetch` tool over `client`.
pub(crate) fn fetch_tool(client: Arc<TavilyClient>) -> WebFetchTool {
    WebFetchTool::new(client)
}

/// A realistic `/search` answer with two hits.
pub(crate) fn search_answer() -> Value {
    json!({
        "query": "rust async runtime",
        "follow_up_questions": null,
        "answer": null,
        "images": [],
        "results": [
            {
                "title": "Tokio - An asynchronous Rust runtime",
                "url": "https://tokio.rs/",
                "content": "Tokio is an event-driven, non-blocking I/O platform\nfor writing asynchronous applications with Rust.",
                "score": 0.91,
                "raw_content": null
            },
            {
                "title": "async-std",
                "url": "https://async.rs/",
                "content": "Async version of the Rust standard library.",
                "score": 0.72,
                "raw_content": null
            }
        ],
        "response_time": 1.02,
        "request_id": "123e4567-e89b-12d3-a456-426614174111"
    })
}

/// The result as JSON with the error, data and content, for snapshots and leak checks.
pub(crate) fn result_json(result: &ToolOutput) -> Value {
    serde_json::to_value(result).unwrap()
}
