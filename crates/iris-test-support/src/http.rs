//! [`TestServer`]: an HTTP/1.1 server on 127.0.0.1 for the HTTP clients' tests. Each
//! connection carries one request (`connection: close`); the server records it and
//! answers with a scripted [`Reply`]. Dropping the server ends every connection it
//! holds.
//!
//! ```
//! use iris_test_support::http::{Reply, TestServer};
//! use serde_json::json;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let server = TestServer::start(Reply::json(json!({"ok": true}))).await;
//! assert!(server.url().starts_with("http://127.0.0.1:"));
//! assert!(server.requests().is_empty());
//! # });
//! ```

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

/// What the server answers to one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A complete answer with a `content-length`.
    Body {
        /// The status code.
        status: u16,
        /// Extra headers, in order.
        headers: Vec<(String, String)>,
        /// The body.
        body: String,
    },
    /// A 200 `text/event-stream` sent with chunked transfer encoding, `piece` bytes per
    /// HTTP chunk (so SSE lines and JSON values are split at arbitrary points).
    /// `complete: false` drops the connection before the final chunk: a cut-off stream.
    Sse {
        /// The whole event stream.
        body: String,
        /// Bytes per HTTP chunk.
        piece: usize,
        /// Whether the final chunk is sent.
        complete: bool,
    },
    /// A complete answer whose body is any bytes (an archive, an image).
    Bytes {
        /// The status code.
        status: u16,
        /// The `content-type`.
        content_type: String,
        /// The body.
        body: Arc<[u8]>,
    },
    /// Read the request, then never answer (the connection stays open).
    Hang,
    /// Send a 200 JSON head declaring `declared_len` bytes and then only `sent`, then
    /// never finish.
    PartialBody {
        /// The declared `content-length`.
        declared_len: usize,
        /// What is sent of the body.
        sent: String,
    },
    /// Send a 200 head, then one byte of a huge body every `every`, forever: the body
    /// keeps moving, so only a total deadline (not an idle timeout) can end it.
    Trickle {
        /// The pause between bytes.
        every: Duration,
    },
}

impl Reply {
    /// A 200 with a JSON body.
    pub fn json(body: Value) -> Self {
        Self::status_json(200, body)
    }

    /// Any status with a JSON body.
    pub fn status_json(status: u16, body: Value) -> Self {
        Self::raw(status, "application/json", &body.to_string())
    }

    /// Any status with a raw body of `content_type`.
    pub fn raw(status: u16, content_type: &str, body: &str) -> Self {
        Reply::Body {
            status,
            headers: vec![("content-type".into(), content_type.into())],
            body: body.into(),
        }
    }

    /// A 200 with a binary body of `content_type`.
    pub fn bytes(content_type: &str, body: impl Into<Arc<[u8]>>) -> Self {
        Reply::Bytes {
            status: 200,
            content_type: content_type.into(),
            body: body.into(),
        }
    }

    /// A complete SSE stream of these events, split into 7-byte HTTP chunks.
    pub fn sse(body: impl Into<String>) -> Self {
        Reply::Sse {
            body: body.into(),
            piece: 7,
            complete: true,
        }
    }

    /// A stream of these events that breaks off: the connection drops before the
    /// final HTTP chunk, 16 bytes a chunk.
    pub fn cut_off(body: impl Into<String>) -> Self {
        Reply::Sse {
            body: body.into(),
            piece: 16,
            complete: false,
        }
    }

    /// Adds a header to a complete answer.
    #[must_use]
    pub fn header(mut self, name: &str, value: &str) -> Self {
        if let Reply::Body { headers, .. } = &mut self {
            headers.push((name.into(), value.into()));
        }
        self
    }
}

/// One request as the server received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// `GET`, `POST`, …
    pub method: String,
    /// The request target (path and query).
    pub path: String,
    /// Header names lower-cased, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The body bytes as sent, as text, for exact comparisons.
    pub raw_body: String,
    /// The body parsed as JSON (`null` when it is not JSON).
    pub body: Value,
}

impl Recorded {
    /// The body as JSON; fails the test when it is not JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.raw_body).unwrap()
    }

    /// The value of a header (`name` lower-case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

type Handler = Arc<dyn Fn(&Recorded) -> Reply + Send + Sync>;

/// The server; see the module docs.
#[derive(Debug)]
pub struct TestServer {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Recorded>>>,
    seen: watch::Receiver<usize>,
    task: JoinHandle<()>,
}

impl TestServer {
    /// A server that answers every request with `reply`.
    pub async fn start(reply: Reply) -> Self {
        Self::with_handler(move |_| reply.clone()).await
    }

    /// A server answering the n-th request with the n-th reply (the last one repeats).
    pub async fn sequence(replies: Vec<Reply>) -> Self {
        assert!(!replies.is_empty(), "a sequence needs a reply");
        let next = Mutex::new(0_usize);
        Self::with_handler(move |_| {
            let mut n = next.lock().unwrap();
            let reply = replies[(*n).min(replies.len() - 1)].clone();
            *n += 1;
            reply
        })
        .await
    }

    /// A server whose answer depends on the request.
    pub async fn with_handler(
        handler: impl Fn(&Recorded) -> Reply + Send + Sync + 'static,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (count, seen) = watch::channel(0_usize);
        let count = Arc::new(count);
        let handler: Handler = Arc::new(handler);
        let log = Arc::clone(&requests);
        let task = tokio::spawn(async move {
            // Connection tasks live in the set, so aborting this task ends them all.
            let mut connections = JoinSet::new();
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                connections.spawn(serve(
                    stream,
                    Arc::clone(&handler),
                    Arc::clone(&log),
                    Arc::clone(&count),
                ));
            }
        });
        Self {
            addr,
            requests,
            seen,
            task,
        }
    }

    /// `http://127.0.0.1:<port>`: the base URL to give a client.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    /// The only request received; fails the test if there were more or none.
    pub fn only_request(&self) -> Recorded {
        let requests = self.requests();
        assert_eq!(requests.len(), 1, "{requests:#?}");
        requests.into_iter().next().unwrap()
    }

    /// Waits until at least `n` requests have arrived (no polling).
    pub async fn wait_for_requests(&self, n: usize) {
        let mut seen = self.seen.clone();
        seen.wait_for(|count| *count >= n).await.unwrap();
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
    log: Arc<Mutex<Vec<Recorded>>>,
    count: Arc<watch::Sender<usize>>,
) {
    let Some(request) = read_request(&mut stream).await else {
        return;
    };
    let reply = handler(&request);
    log.lock().unwrap().push(request);
    count.send_modify(|n| *n += 1);
    // The client may have given up already: a failed write is not a test failure.
    match reply {
        Reply::Body {
            status,
            headers,
            body,
        } => {
            let mut head = format!("HTTP/1.1 {status} Test\r\n");
            for (name, value) in &headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str(&format!(
                "content-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            ));
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.write_all(body.as_bytes()).await;
            let _ = stream.shutdown().await;
        }
        Reply::Sse {
            body,
            piece,
            complete,
        } => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n\
                        cache-control: no-cache\r\ntransfer-encoding: chunked\r\n\
                        connection: close\r\n\r\n";
            if stream.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            for part in body.as_bytes().chunks(piece.max(1)) {
                let mut chunk = format!("{:x}\r\n", part.len()).into_bytes();
                chunk.extend_from_slice(part);
                chunk.extend_from_slice(b"\r\n");
                if stream.write_all(&chunk).await.is_err() {
                    return;
                }
                let _ = stream.flush().await;
            }
            if complete {
                let _ = stream.write_all(b"0\r\n\r\n").await;
                let _ = stream.shutdown().await;
            }
            // Otherwise the stream is dropped here: the body ends without its last
            // chunk, as when a connection breaks mid-answer.
        }
        Reply::Bytes {
            status,
            content_type,
            body,
        } => {
            let head = format!(
                "HTTP/1.1 {status} Test\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.write_all(&body).await;
            let _ = stream.shutdown().await;
        }
        Reply::Hang => std::future::pending::<()>().await,
        Reply::PartialBody { declared_len, sent } => {
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {declared_len}\r\nconnection: close\r\n\r\n"
            );
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.write_all(sent.as_bytes()).await;
            let _ = stream.flush().await;
            std::future::pending::<()>().await;
        }
        Reply::Trickle { every } => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1000000\r\nconnection: close\r\n\r\n";
            if stream.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            let mut tick = tokio::time::interval(every);
            loop {
                tick.tick().await;
                if stream.write_all(b" ").await.is_err() {
                    return;
                }
            }
        }
    }
}

/// Reads one HTTP/1.1 request with a `content-length` body.
async fn read_request(stream: &mut TcpStream) -> Option<Recorded> {
    let mut buf = Vec::new();
    let mut chunk = [0_u8; 8192];
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
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
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
    Some(Recorded {
        method,
        path,
        headers,
        raw_body: String::from_utf8_lossy(&body).into_owned(),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    })
}
