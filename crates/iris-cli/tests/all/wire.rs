//! A small HTTP/1.1 server on 127.0.0.1 speaking the model providers' streaming wire
//! formats (chunked SSE, JSON errors), for `iris run` against each of them. The event
//! shapes follow the providers' API references, as iris-providers' own tests do
//! (crates/iris-providers/tests/all/support.rs and one file per format).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{Value, json};

/// The key `iris` is given in these tests; no output may ever show it.
pub(crate) const TEST_KEY: &str = "sk-test-key-0123456789abcdef";

/// One request as the server read it.
#[derive(Debug, Clone)]
pub(crate) struct Recorded {
    pub(crate) path: String,
    /// Header names lower-cased.
    pub(crate) headers: Vec<(String, String)>,
    /// The body as JSON (`null` when it is not).
    pub(crate) body: Value,
}

impl Recorded {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What the server answers.
#[derive(Debug, Clone)]
pub(crate) enum Reply {
    /// A 200 `text/event-stream`, chunked, 7 bytes per HTTP chunk (so events and JSON
    /// values are split at arbitrary points).
    Sse(String),
    /// A status with a JSON body.
    Json(u16, Value),
}

type Handler = dyn Fn(usize, &Recorded) -> Reply + Send + Sync;

/// The server: one request per connection, answered by `handler(n, request)` (`n`
/// counts from 0), until it is dropped.
pub(crate) struct Server {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Recorded>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    pub(crate) fn start(
        handler: impl Fn(usize, &Recorded) -> Reply + Send + Sync + 'static,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let handler: Arc<Handler> = Arc::new(handler);
        let (log, stopped) = (Arc::clone(&requests), Arc::clone(&stop));
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(mut stream) = stream else { continue };
                let _ = stream.set_read_timeout(Some(Duration::from_secs(60)));
                let Some(request) = read_request(&mut stream) else {
                    continue;
                };
                let n = {
                    let mut log = log.lock().unwrap();
                    log.push(request.clone());
                    log.len() - 1
                };
                write_reply(&mut stream, handler(n, &request));
            }
        });
        Self {
            addr,
            requests,
            stop,
            thread: Some(thread),
        }
    }

    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub(crate) fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.addr);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn read_request(stream: &mut TcpStream) -> Option<Recorded> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let path = line.split(' ').nth(1)?.to_owned();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Recorded {
        path,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    })
}

fn write_reply(stream: &mut TcpStream, reply: Reply) {
    match reply {
        Reply::Json(status, body) => {
            let body = body.to_string();
            let head = format!(
                "HTTP/1.1 {status} Test\r\ncontent-type: application/json\r\n\
                 content-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body.as_bytes());
        }
        Reply::Sse(body) => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n\
                        cache-control: no-cache\r\ntransfer-encoding: chunked\r\n\
                        connection: close\r\n\r\n";
            if stream.write_all(head.as_bytes()).is_err() {
                return;
            }
            for part in body.as_bytes().chunks(7) {
                let mut chunk = format!("{:x}\r\n", part.len()).into_bytes();
                chunk.extend_from_slice(part);
                chunk.extend_from_slice(b"\r\n");
                if stream
                    .write_all(&chunk)
                    .and_then(|()| stream.flush())
                    .is_err()
                {
                    return;
                }
            }
            let _ = stream.write_all(b"0\r\n\r\n");
        }
    }
    let _ = stream.flush();
    let _ = stream.shutdown(std::net::Shutdown::Both);
}

/// The four wire formats and their fixtures for one task: the model reads
/// `notes.txt` with `read_file`, then answers from what it read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wire {
    /// OpenAI Chat Completions.
    Chat,
    /// OpenAI Responses.
    Responses,
    /// Anthropic Messages.
    Anthropic,
    /// Gemini `generateContent`.
    Gemini,
}

/// What notes.txt holds; the final answer repeats it, and the second request must
/// carry it as the tool result.
pub(crate) const NOTE: &str = "kumquat-42";

impl Wire {
    /// The path the client posts to, under the base URL [`Wire::base_path`].
    pub(crate) fn path(self) -> &'static str {
        match self {
            Wire::Chat => "/v1/chat/completions",
            Wire::Responses => "/v1/responses",
            Wire::Anthropic => "/v1/messages",
            Wire::Gemini => "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
        }
    }

    /// What the base URL ends with.
    pub(crate) fn base_path(self) -> &'static str {
        match self {
            Wire::Chat | Wire::Responses => "/v1",
            Wire::Anthropic => "",
            Wire::Gemini => "/v1beta",
        }
    }

    /// The call id the model's call carries (Gemini sends none: iris numbers it).
    pub(crate) fn call_id(self) -> &'static str {
        match self {
            Wire::Chat | Wire::Responses => "call_abc",
            Wire::Anthropic => "toolu_01",
            Wire::Gemini => "call_1_1",
        }
    }

    /// Whether the request carries the key the way the format sends it.
    fn authorized(self, request: &Recorded) -> bool {
        match self {
            Wire::Chat | Wire::Responses => {
                request.header("authorization") == Some(&format!("Bearer {TEST_KEY}"))
            }
            Wire::Anthropic => request.header("x-api-key") == Some(TEST_KEY),
            Wire::Gemini => request.header("x-goog-api-key") == Some(TEST_KEY),
        }
    }

    /// Whether the request sends `read_file` among its tools.
    fn offers_read_file(self, body: &Value) -> bool {
        let tools = body["tools"].as_array().cloned().unwrap_or_default();
        tools.iter().any(|tool| match self {
            Wire::Chat => tool["function"]["name"] == "read_file",
            Wire::Responses | Wire::Anthropic => tool["name"] == "read_file",
            Wire::Gemini => tool["functionDeclarations"]
                .as_array()
                .is_some_and(|d| d.iter().any(|f| f["name"] == "read_file")),
        })
    }

    /// Whether the request carries `read_file`'s result — the note — for this call, in
    /// the format's own shape.
    pub(crate) fn carries_tool_result(self, body: &Value) -> bool {
        let has_note = |v: &Value| v.to_string().contains(NOTE);
        let items = |key: &str| body[key].as_array().cloned().unwrap_or_default();
        match self {
            Wire::Chat => items("messages").iter().any(|m| {
                m["role"] == "tool"
                    && m["tool_call_id"] == self.call_id()
                    && has_note(&m["content"])
            }),
            Wire::Responses => items("input").iter().any(|i| {
                i["type"] == "function_call_output"
                    && i["call_id"] == self.call_id()
                    && has_note(&i["output"])
            }),
            Wire::Anthropic => items("messages").iter().any(|m| {
                m["role"] == "user"
                    && m["content"].as_array().is_some_and(|blocks| {
                        blocks.iter().any(|b| {
                            b["type"] == "tool_result"
                                && b["tool_use_id"] == self.call_id()
                                && has_note(&b["content"])
                        })
                    })
            }),
            Wire::Gemini => items("contents").iter().any(|c| {
                c["role"] == "user"
                    && c["parts"].as_array().is_some_and(|parts| {
                        parts.iter().any(|p| {
                            p["functionResponse"]["name"] == "read_file"
                                && has_note(&p["functionResponse"]["response"])
                        })
                    })
            }),
        }
    }

    /// The server's answer to the n-th request of the task: turn 1 calls `read_file`
    /// (its arguments split across stream events), turn 2 — only once the request
    /// carries the result — answers. Anything else is an error the run reports.
    pub(crate) fn reply(self, n: usize, request: &Recorded) -> Reply {
        let error = |status: u16, message: &str| {
            Reply::Json(
                status,
                json!({"error": {"message": message, "type": "invalid_request_error",
                    "code": null, "status": "INVALID_ARGUMENT"}}),
            )
        };
        if request.path != self.path() {
            return error(404, &format!("unexpected path {}", request.path));
        }
        if !self.authorized(request) {
            return error(401, "the request does not carry the test key");
        }
        if request.body["stream"] != true && self != Wire::Gemini {
            return error(400, "the request is not streamed");
        }
        match n {
            0 if self.offers_read_file(&request.body) => Reply::Sse(self.first_turn()),
            0 => error(400, "read_file is not among the request's tools"),
            1 if self.carries_tool_result(&request.body) => Reply::Sse(self.final_turn()),
            1 => error(400, "the request does not carry read_file's result"),
            _ => error(400, "a third request"),
        }
    }

    fn first_turn(self) -> String {
        let pieces = ["{\"file_", "path\": \"no", "tes.txt\"}"];
        match self {
            Wire::Chat => openai_sse(&[
                chat_chunk(json!({"role": "assistant", "content": ""}), None),
                chat_chunk(json!({"content": "Reading "}), None),
                chat_chunk(json!({"content": "the note."}), None),
                chat_chunk(
                    json!({"tool_calls": [{"index": 0, "id": "call_abc", "type": "function",
                        "function": {"name": "read_file", "arguments": ""}}]}),
                    None,
                ),
                chat_chunk(
                    json!({"tool_calls": [{"index": 0, "function": {"arguments": pieces[0]}}]}),
                    None,
                ),
                chat_chunk(
                    json!({"tool_calls": [{"index": 0, "function": {"arguments": pieces[1]}}]}),
                    None,
                ),
                chat_chunk(
                    json!({"tool_calls": [{"index": 0, "function": {"arguments": pieces[2]}}]}),
                    None,
                ),
                chat_chunk(json!({}), Some("tool_calls")),
                chat_usage(31, 12),
            ]),
            Wire::Responses => {
                let message = responses_message("msg_1", "Reading the note.");
                let call = json!({"type": "function_call", "id": "fc_1", "call_id": "call_abc",
                    "name": "read_file", "arguments": pieces.concat(), "status": "completed"});
                let mut events = responses_text_events(0, "msg_1", &["Reading ", "the note."]);
                events.push(
                    json!({"type": "response.output_item.added", "output_index": 1,
                    "item": {"type": "function_call", "id": "fc_1", "call_id": "call_abc",
                        "name": "read_file", "arguments": "", "status": "in_progress"}}),
                );
                for piece in pieces {
                    events.push(json!({"type": "response.function_call_arguments.delta",
                        "item_id": "fc_1", "output_index": 1, "delta": piece}));
                }
                events.push(json!({"type": "response.function_call_arguments.done",
                    "item_id": "fc_1", "output_index": 1, "name": "read_file",
                    "arguments": pieces.concat()}));
                events.push(
                    json!({"type": "response.output_item.done", "output_index": 1, "item": call}),
                );
                events.push(responses_completed(json!([message, call]), 31, 12));
                responses_sse(&events)
            }
            Wire::Anthropic => anthropic_sse(&[
                anthropic_start(),
                json!({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "text", "text": ""}}),
                anthropic_text(0, "Reading "),
                json!({"type": "ping"}),
                anthropic_text(0, "the note."),
                json!({"type": "content_block_stop", "index": 0}),
                json!({"type": "content_block_start", "index": 1,
                    "content_block": {"type": "tool_use", "id": "toolu_01", "name": "read_file",
                        "input": {}}}),
                anthropic_json(1, pieces[0]),
                anthropic_json(1, pieces[1]),
                anthropic_json(1, pieces[2]),
                json!({"type": "content_block_stop", "index": 1}),
                json!({"type": "message_delta",
                    "delta": {"stop_reason": "tool_use", "stop_sequence": null},
                    "usage": {"output_tokens": 12}}),
                json!({"type": "message_stop"}),
            ]),
            Wire::Gemini => gemini_sse(&[
                gemini_chunk(json!([{"text": "Reading "}]), None),
                gemini_chunk(json!([{"text": "the note."}]), None),
                gemini_chunk(
                    json!([{"functionCall": {"name": "read_file",
                        "args": {"file_path": "notes.txt"}}}]),
                    Some("STOP"),
                ),
            ]),
        }
    }

    fn final_turn(self) -> String {
        let pieces = ["The note says ", NOTE, "."];
        match self {
            Wire::Chat => {
                let mut chunks: Vec<Value> = pieces
                    .iter()
                    .map(|p| chat_chunk(json!({"content": p}), None))
                    .collect();
                chunks.push(chat_chunk(json!({}), Some("stop")));
                chunks.push(chat_usage(60, 9));
                openai_sse(&chunks)
            }
            Wire::Responses => {
                let mut events = responses_text_events(0, "msg_2", &pieces);
                events.push(responses_completed(
                    json!([responses_message("msg_2", &pieces.concat())]),
                    60,
                    9,
                ));
                responses_sse(&events)
            }
            Wire::Anthropic => {
                let mut events = vec![
                    anthropic_start(),
                    json!({"type": "content_block_start", "index": 0,
                        "content_block": {"type": "text", "text": ""}}),
                ];
                events.extend(pieces.iter().map(|p| anthropic_text(0, p)));
                events.push(json!({"type": "content_block_stop", "index": 0}));
                events.push(json!({"type": "message_delta",
                    "delta": {"stop_reason": "end_turn", "stop_sequence": null},
                    "usage": {"output_tokens": 9}}));
                events.push(json!({"type": "message_stop"}));
                anthropic_sse(&events)
            }
            Wire::Gemini => {
                let last = pieces.len() - 1;
                let chunks: Vec<Value> = pieces
                    .iter()
                    .enumerate()
                    .map(|(i, p)| gemini_chunk(json!([{"text": p}]), (i == last).then_some("STOP")))
                    .collect();
                gemini_sse(&chunks)
            }
        }
    }
}

/// OpenAI-style SSE: `data:` events, then `data: [DONE]`.
pub(crate) fn openai_sse(chunks: &[Value]) -> String {
    let mut body: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    body.push_str("data: [DONE]\n\n");
    body
}

/// Anthropic-style SSE: each event named by its `type`.
fn anthropic_sse(events: &[Value]) -> String {
    events
        .iter()
        .map(|e| {
            format!(
                "event: {}\ndata: {e}\n\n",
                e["type"].as_str().unwrap_or("message")
            )
        })
        .collect()
}

/// OpenAI Responses SSE: named events with their `sequence_number`; no `[DONE]`.
fn responses_sse(events: &[Value]) -> String {
    let numbered: Vec<Value> = events
        .iter()
        .enumerate()
        .map(|(n, e)| {
            let mut e = e.clone();
            e["sequence_number"] = json!(n);
            e
        })
        .collect();
    anthropic_sse(&numbered)
}

/// Gemini `alt=sse`: `data:` events separated by `\r\n\r\n`; no terminator.
fn gemini_sse(chunks: &[Value]) -> String {
    chunks
        .iter()
        .map(|c| format!("data: {c}\r\n\r\n"))
        .collect()
}

pub(crate) fn chat_chunk(delta: Value, finish_reason: Option<&str>) -> Value {
    json!({"id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG", "object": "chat.completion.chunk",
        "created": 1741570283, "model": "gpt-4.1-mini-2025-04-14",
        "choices": [{"index": 0, "delta": delta, "logprobs": null,
            "finish_reason": finish_reason}],
        "usage": null})
}

fn chat_usage(prompt: u64, completion: u64) -> Value {
    json!({"id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG", "object": "chat.completion.chunk",
        "created": 1741570283, "model": "gpt-4.1-mini-2025-04-14", "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}})
}

fn responses_message(id: &str, text: &str) -> Value {
    json!({"id": id, "type": "message", "status": "completed", "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}]})
}

fn responses_object(status: &str, output: Value, usage: Value) -> Value {
    json!({"id": "resp_67ccd3a9da748190", "object": "response", "created_at": 1741476777,
        "status": status, "error": null, "incomplete_details": null,
        "model": "gpt-4.1-mini-2025-04-14", "output": output, "parallel_tool_calls": true,
        "store": false, "usage": usage})
}

/// `response.created`, then a message item streaming `pieces` at `output_index`.
fn responses_text_events(output_index: u64, id: &str, pieces: &[&str]) -> Vec<Value> {
    let text = pieces.concat();
    let mut events = vec![
        json!({"type": "response.created",
            "response": responses_object("in_progress", json!([]), Value::Null)}),
        json!({"type": "response.output_item.added", "output_index": output_index,
            "item": {"id": id, "type": "message", "status": "in_progress", "role": "assistant",
                "content": []}}),
        json!({"type": "response.content_part.added", "item_id": id,
            "output_index": output_index, "content_index": 0,
            "part": {"type": "output_text", "text": "", "annotations": []}}),
    ];
    for piece in pieces {
        events.push(json!({"type": "response.output_text.delta", "item_id": id,
            "output_index": output_index, "content_index": 0, "delta": piece}));
    }
    events.push(json!({"type": "response.output_text.done", "item_id": id,
        "output_index": output_index, "content_index": 0, "text": text}));
    events.push(
        json!({"type": "response.output_item.done", "output_index": output_index,
        "item": responses_message(id, &text)}),
    );
    events
}

fn responses_completed(output: Value, input: u64, out: u64) -> Value {
    json!({"type": "response.completed", "response": responses_object("completed", output,
        json!({"input_tokens": input, "output_tokens": out, "total_tokens": input + out}))})
}

fn anthropic_start() -> Value {
    json!({"type": "message_start", "message": {"id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message", "role": "assistant", "content": [],
        "model": "claude-sonnet-4-5-20250929", "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 472, "output_tokens": 2}}})
}

fn anthropic_text(index: u64, text: &str) -> Value {
    json!({"type": "content_block_delta", "index": index,
        "delta": {"type": "text_delta", "text": text}})
}

fn anthropic_json(index: u64, partial: &str) -> Value {
    json!({"type": "content_block_delta", "index": index,
        "delta": {"type": "input_json_delta", "partial_json": partial}})
}

fn gemini_chunk(parts: Value, finish_reason: Option<&str>) -> Value {
    let mut candidate = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
    if let Some(reason) = finish_reason {
        candidate["finishReason"] = json!(reason);
    }
    json!({"candidates": [candidate], "modelVersion": "gemini-2.5-flash",
        "responseId": "mNHOaNHJKvWD1dkP2KKZ8AQ",
        "usageMetadata": {"promptTokenCount": 31, "candidatesTokenCount": 6,
            "totalTokenCount": 37}})
}
