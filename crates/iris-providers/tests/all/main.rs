//! Integration tests of iris-providers: one binary, one module per area.

mod adapters;
mod anthropic;
mod chat;
mod gemini;
mod lint;
mod openai_chat;
mod openai_responses;
mod retry;
mod scripted;
mod strict_nulls;
mod support;
mod wire_formats;
