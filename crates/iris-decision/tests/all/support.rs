//! Shared test helpers: the documented wire format on iris-test-support's HTTP server
//! (127.0.0.1), a scripted in-process evaluator, and small builders.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use iris_decision::{
    BoxFuture, ChoiceAnswer, DecisionAnswer, DecisionEvaluator, DecisionQuestion, DecisionRequest,
    DecisionResponse, DecisionUsage, Error, JevClient, Result,
};
use iris_tools_core::ToolDefinition;
use serde_json::{Value, json};

/// The key every test client uses; tests assert it never leaks.
pub(crate) const KEY: &str = "sk-test-7f3a9c2e-secret";

pub(crate) use iris_test_support::http::{Reply, TestServer};

type Script = Box<dyn Fn(&DecisionRequest) -> Result<DecisionResponse> + Send + Sync>;

/// A complete answer with a JSON content type and any body (valid JSON or not).
pub(crate) fn status(code: u16, body: String) -> Reply {
    Reply::raw(code, "application/json", &body)
}

/// The decision service's side of the shared test server.
pub(crate) trait JevServer {
    /// A server that answers like the documented service: see [`jev_answers`].
    async fn jev() -> TestServer;
    /// The base URL a client is given: the server's root plus `/v1`.
    fn base_url(&self) -> String;
    /// A client for this server with the test key and a deadline.
    fn client(&self, timeout_seconds: f64) -> JevClient;
}

impl JevServer for TestServer {
    async fn jev() -> TestServer {
        TestServer::with_handler(|r| Reply::json(jev_answers(&r.json()))).await
    }

    fn base_url(&self) -> String {
        format!("{}/v1", self.url())
    }

    fn client(&self, timeout_seconds: f64) -> JevClient {
        JevClient::new(KEY)
            .unwrap()
            .with_base_url(&self.base_url())
            .unwrap()
            .with_timeout_seconds(timeout_seconds)
            .unwrap()
    }
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
