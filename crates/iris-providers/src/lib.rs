#![doc = include_str!("../README.md")]

pub mod adapters;
pub mod anthropic;
mod assembly;
pub mod chat;
mod client;
pub mod error;
pub mod gemini;
mod history;
mod http;
pub mod lint;
pub mod model;
pub mod openai_chat;
pub mod openai_responses;
pub mod provider;
pub mod provider_error;
pub mod retry;
pub mod scripted;
mod sse;
mod streaming;
pub mod strict_nulls;

pub use adapters::{Provider, Strict, strip_strict_nulls, to_provider};
pub use error::{Error, Result};
pub use provider::{CompletionProvider, ProviderStream, collect, next};
pub use provider_error::ProviderError;
pub use retry::{RetryPolicy, RetryingProvider};
pub use scripted::ScriptedProvider;
pub use strict_nulls::{StrictModeCall, StrictNullsLayer};
