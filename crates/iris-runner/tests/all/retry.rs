//! Both routes to a runner — a YAML's `model` and `AgentRunner::builder` over a client
//! — retry a provider that is unavailable for a moment: a local OpenAI-compatible
//! server on 127.0.0.1 answers 503 once, then the answer.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use iris_executor::ToolExecutor;
use iris_providers::openai_chat;
use iris_runner::{AgentConfig, AgentRunner, HostRegistry};
use iris_tools_core::ToolRegistry;
use serde_json::json;

use crate::support::runtime;

/// Serves Chat Completions: the first request gets 503, every later one an answer.
/// Returns the base URL and the request count.
fn flaky_server() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let count = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&count);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let (status, reply) = if seen.fetch_add(1, Ordering::SeqCst) == 0 {
                (
                    "503 Service Unavailable",
                    json!({"error": {"message": "overloaded", "type": "server_error"}}),
                )
            } else {
                (
                    "200 OK",
                    json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 1,
                        "model": "local", "choices": [{"index": 0, "finish_reason": "stop",
                        "message": {"role": "assistant", "content": "Hello after a retry."}}],
                        "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}}),
                )
            };
            let reply = reply.to_string();
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\nretry-after: 0\r\n\
                 content-length: {}\r\nconnection: close\r\n\r\n{reply}",
                reply.len()
            );
        }
    });
    (url, count)
}

#[test]
fn both_routes_retry_a_503() {
    runtime().block_on(async {
        // The Rust route: a client and an executor.
        let (url, count) = flaky_server();
        let client = openai_chat::Client::new("").with_base_url(&url).unwrap();
        let runner = AgentRunner::builder(client, ToolExecutor::new(ToolRegistry::new()))
            .model("local")
            .build();
        let outcome = runner.run("Hi").await;
        assert_eq!(
            outcome.output(),
            Some("Hello after a retry."),
            "{outcome:?}"
        );
        assert_eq!(count.load(Ordering::SeqCst), 2);

        // The YAML route.
        let (url, count) = flaky_server();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("iris.yaml");
        std::fs::write(
            &file,
            format!("model: {{provider: openai, model: local, base_url: \"{url}\"}}\n"),
        )
        .unwrap();
        let loaded = AgentConfig::load_with_env(&file, false).unwrap();
        let runner = AgentRunner::builder_from_loaded(&loaded, &HostRegistry::new(), None)
            .await
            .unwrap()
            .build();
        let outcome = runner.run("Hi").await;
        assert_eq!(
            outcome.output(),
            Some("Hello after a retry."),
            "{outcome:?}"
        );
        assert_eq!(count.load(Ordering::SeqCst), 2);
        runner.close().await.unwrap();
    });
}
