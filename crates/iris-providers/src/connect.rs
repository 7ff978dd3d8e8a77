//! One client factory for every HTTP wire format: [`connect`] builds the client of a
//! [`Provider`] from one [`HttpOptions`], so a host (or iris-runner's agent YAML)
//! never repeats a block per format.

use std::sync::Arc;
use std::time::Duration;

use crate::adapters::Provider;
use crate::provider::CompletionProvider;
use crate::provider_error::ProviderError;
use crate::{anthropic, gemini, openai_chat, openai_responses};

/// How to reach a provider over HTTP: one type for every wire format.
///
/// ```
/// use iris_providers::connect::{HttpOptions, connect};
/// use iris_providers::Provider;
/// let options = HttpOptions::new("sk-test").base_url("http://127.0.0.1:11434/v1");
/// let client = connect(Provider::OpenAiChat, &options).unwrap();
/// assert_eq!(client.name(), "openai");
/// ```
#[derive(Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct HttpOptions {
    /// The API key (may be empty for a local server that needs none).
    pub api_key: String,
    /// Another server for the wire format; `None`: the provider's public API.
    pub base_url: Option<String>,
    /// The longest wait for a response's head or its next streamed chunk; `None`: the
    /// client's default, 120 s.
    pub timeout: Option<Duration>,
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key is a secret: only whether there is one.
        f.debug_struct("HttpOptions")
            .field("api_key", &(!self.api_key.is_empty()))
            .field("base_url", &self.base_url)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl HttpOptions {
    /// Options with `api_key` and every default.
    pub fn new(api_key: impl Into<String>) -> Self {
        Self {
            api_key: api_key.into(),
            ..Self::default()
        }
    }

    /// Sets the base URL.
    #[must_use]
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = Some(url.into());
        self
    }

    /// Sets the timeout.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
}

/// The client of `provider`'s wire format, configured by `options`. Retries are not
/// added here: wrap the client in a [`RetryingProvider`](crate::RetryingProvider)
/// (iris-runner's builder does, for every model it drives).
///
/// # Errors
/// [`ProviderError::Config`] for a base URL or a timeout the client refuses.
pub fn connect(
    provider: Provider,
    options: &HttpOptions,
) -> Result<Arc<dyn CompletionProvider>, ProviderError> {
    // The one place where a format's client is chosen; every client takes the same
    // three settings.
    macro_rules! build {
        ($client:path) => {{
            let mut client = <$client>::new(options.api_key.clone());
            if let Some(url) = &options.base_url {
                client = client.with_base_url(url)?;
            }
            if let Some(timeout) = options.timeout {
                client = client.with_timeout(timeout)?;
            }
            Arc::new(client) as Arc<dyn CompletionProvider>
        }};
    }
    Ok(match provider {
        Provider::OpenAiChat => build!(openai_chat::Client),
        Provider::OpenAiResponses => build!(openai_responses::Client),
        Provider::AnthropicMessages => build!(anthropic::Client),
        Provider::Gemini => build!(gemini::Client),
    })
}
