//! The providers' server-sent-event encodings, as their servers write them.

use serde_json::Value;

/// OpenAI-style SSE: each chunk as a `data:` event, then `data: [DONE]`.
pub fn openai_sse(chunks: &[Value]) -> String {
    let mut body = String::new();
    for chunk in chunks {
        body.push_str(&format!("data: {chunk}\n\n"));
    }
    body.push_str("data: [DONE]\n\n");
    body
}

/// Anthropic-style SSE: each event named by its `type`.
pub fn anthropic_sse(events: &[Value]) -> String {
    let mut body = String::new();
    for event in events {
        let name = event["type"].as_str().unwrap_or("message");
        body.push_str(&format!("event: {name}\ndata: {event}\n\n"));
    }
    body
}

/// OpenAI Responses SSE: each event named by its `type` (as Anthropic's), with its
/// `sequence_number` filled in; no `[DONE]`.
pub fn responses_sse(events: &[Value]) -> String {
    let numbered: Vec<Value> = events
        .iter()
        .enumerate()
        .map(|(i, event)| {
            let mut event = event.clone();
            event["sequence_number"] = Value::from(i);
            event
        })
        .collect();
    anthropic_sse(&numbered)
}

/// Gemini `alt=sse`: each `GenerateContentResponse` as a `data:` event, separated by
/// `\r\n\r\n` as Google's servers write them; no terminator.
pub fn gemini_sse(chunks: &[Value]) -> String {
    chunks
        .iter()
        .map(|c| format!("data: {c}\r\n\r\n"))
        .collect()
}
