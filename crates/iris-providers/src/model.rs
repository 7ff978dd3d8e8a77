//! Provider identity: which wire format ([`ProviderKind`]), which model, where the
//! key comes from ([`ModelConfig`], the agent YAML's `model` section, also what a run
//! record keeps — never a key), and the one factory that builds a client from them
//! ([`ModelConfig::connect`], over one [`HttpOptions`] for every HTTP format).
//!
//! Adding a provider touches its wire file, `lib.rs` (the module) and this file (a
//! [`ProviderKind`] variant: its YAML name, its key variable and its client).
//!
//! ```yaml
//! model:
//!   provider: openai          # openai | openai-responses | anthropic | gemini | scripted
//!   model: gpt-4.1-mini
//!   base_url: http://127.0.0.1:11434/v1   # optional: any OpenAI-compatible server
//!   api_key_env: OPENAI_API_KEY           # optional: the provider's usual variable
//!   max_output_tokens: 1024
//!   temperature: 0.2
//!   strict: false             # OpenAI strict-mode tool schemas
//! ```
//!
//! With `provider: scripted`, `script` is a script file (relative to the YAML file's
//! folder) or the list of turns inline; see [`crate::scripted`]. Every run
//! replays it from its first turn: no key, no network.
//!
//! ```
//! use iris_providers::model::{ModelConfig, ProviderKind};
//!
//! let model: ModelConfig = serde_yaml::from_str("provider: anthropic\nmodel: claude-sonnet-4-5\n")?;
//! assert_eq!(model.provider, ProviderKind::Anthropic);
//! assert_eq!(model.api_key_variable(), Some("ANTHROPIC_API_KEY"));
//! # Ok::<(), serde_yaml::Error>(())
//! ```

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::adapters::Strict;
use crate::provider::CompletionProvider;
use crate::provider_error::ProviderError;
use crate::scripted::{Script, ScriptTurn, ScriptedProvider};
use crate::{anthropic, gemini, openai_chat, openai_responses};

/// The wire format of `model.provider`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ProviderKind {
    /// OpenAI Chat Completions, and every OpenAI-compatible server (vLLM, llama.cpp,
    /// Ollama, LM Studio) through `base_url`.
    #[serde(rename = "openai")]
    OpenAi,
    /// The OpenAI Responses API.
    #[serde(rename = "openai-responses")]
    OpenAiResponses,
    /// Anthropic Messages.
    #[serde(rename = "anthropic")]
    Anthropic,
    /// Google Gemini `generateContent`.
    #[serde(rename = "gemini")]
    Gemini,
    /// [`ScriptedProvider`]: turns replayed from `script`.
    #[serde(rename = "scripted")]
    Scripted,
}

impl ProviderKind {
    /// Every kind, in documentation order.
    pub const ALL: [ProviderKind; 5] = [
        ProviderKind::OpenAi,
        ProviderKind::OpenAiResponses,
        ProviderKind::Anthropic,
        ProviderKind::Gemini,
        ProviderKind::Scripted,
    ];

    /// The YAML spelling, e.g. `openai-responses`.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::OpenAiResponses => "openai-responses",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Gemini => "gemini",
            ProviderKind::Scripted => "scripted",
        }
    }

    /// Parses the YAML spelling.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// The environment variable the key is read from unless `api_key_env` says
    /// otherwise (`None` for `scripted`, which needs no key).
    pub fn default_api_key_env(self) -> Option<&'static str> {
        match self {
            ProviderKind::OpenAi | ProviderKind::OpenAiResponses => Some("OPENAI_API_KEY"),
            ProviderKind::Anthropic => Some("ANTHROPIC_API_KEY"),
            ProviderKind::Gemini => Some("GEMINI_API_KEY"),
            ProviderKind::Scripted => None,
        }
    }

    /// The endpoint used without a `base_url`: the provider's public API (`None` for
    /// `scripted`, which has none).
    pub fn default_base_url(self) -> Option<&'static str> {
        match self {
            ProviderKind::OpenAi => Some(openai_chat::Client::DEFAULT_BASE_URL),
            ProviderKind::OpenAiResponses => Some(openai_responses::Client::DEFAULT_BASE_URL),
            ProviderKind::Anthropic => Some(anthropic::Client::DEFAULT_BASE_URL),
            ProviderKind::Gemini => Some(gemini::Client::DEFAULT_BASE_URL),
            ProviderKind::Scripted => None,
        }
    }

    /// A model name of this provider, for messages that show how to name one
    /// (`iris run --model openai:gpt-4.1-mini`).
    pub fn example_model(self) -> &'static str {
        match self {
            ProviderKind::OpenAi | ProviderKind::OpenAiResponses => "gpt-4.1-mini",
            ProviderKind::Anthropic => "claude-sonnet-4-5",
            ProviderKind::Gemini => "gemini-2.5-flash",
            ProviderKind::Scripted => "scripted",
        }
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a scripted model's turns come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ScriptSource {
    /// A YAML or JSON script file; relative paths are resolved against the agent
    /// YAML's folder when the config is loaded.
    File(PathBuf),
    /// The turns, inline.
    Inline(Vec<ScriptTurn>),
}

/// The `model` section; see the [module docs](self).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// The wire format.
    pub provider: ProviderKind,
    /// The provider's model name; required except for `scripted` (default `scripted`).
    #[serde(default)]
    pub model: Option<String>,
    /// Another server for the same wire format (a local OpenAI-compatible server, a
    /// proxy). Without it, the provider's public API.
    #[serde(default)]
    pub base_url: Option<String>,
    /// The environment variable holding the API key; default
    /// [`ProviderKind::default_api_key_env`]. The key itself never appears in the YAML.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// The output token cap of each request.
    #[serde(default)]
    pub max_output_tokens: Option<u32>,
    /// The sampling temperature.
    #[serde(default)]
    pub temperature: Option<f64>,
    /// OpenAI strict-mode tool schemas (`openai`, `openai-responses`); the run then
    /// undoes strict mode's `null`s before validation. Default `false`.
    #[serde(default)]
    pub strict: bool,
    /// The scripted provider's turns (`provider: scripted` only).
    #[serde(default)]
    pub script: Option<ScriptSource>,
    /// The longest wait, in seconds, for a response's head or its next streamed chunk
    /// (default: the client's, 120 s).
    #[serde(default)]
    pub timeout_seconds: Option<f64>,
}

/// A client built from a [`ModelConfig`] ([`ModelConfig::connect`]): shared by every
/// run, or a script every run replays from its start.
#[derive(Clone)]
pub enum ModelClient {
    /// One client for every run.
    Shared(Arc<dyn CompletionProvider>),
    /// A fresh [`ScriptedProvider`] per run.
    Script(Arc<Script>),
}

impl fmt::Debug for ModelClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelClient::Shared(p) => f.debug_tuple("Shared").field(&p.name()).finish(),
            ModelClient::Script(s) => f
                .debug_struct("Script")
                .field("turns", &s.turns.len())
                .finish(),
        }
    }
}

impl ModelClient {
    /// The provider one run talks to.
    pub fn for_run(&self) -> Arc<dyn CompletionProvider> {
        match self {
            ModelClient::Shared(p) => Arc::clone(p),
            ModelClient::Script(s) => Arc::new(ScriptedProvider::new(Script::clone(s))),
        }
    }
}

impl ModelConfig {
    /// A config for `provider` and `model`, every other field at its default.
    pub fn new(provider: ProviderKind, model: impl Into<String>) -> Self {
        Self {
            provider,
            model: Some(model.into()),
            base_url: None,
            api_key_env: None,
            max_output_tokens: None,
            temperature: None,
            strict: false,
            script: None,
            timeout_seconds: None,
        }
    }

    /// The model name sent to the provider (`scripted` when a script has none).
    pub fn model_name(&self) -> &str {
        self.model.as_deref().unwrap_or("scripted")
    }

    /// The variable the key is read from (`None` for `scripted`).
    pub fn api_key_variable(&self) -> Option<&str> {
        self.api_key_env
            .as_deref()
            .or(self.provider.default_api_key_env())
    }

    /// Whether requests send strict-mode tool schemas.
    pub fn strict_mode(&self) -> Strict {
        if self.strict { Strict::Yes } else { Strict::No }
    }

    /// Checks the rules serde cannot express; `Err((key, message))`, the key spelled
    /// as in the YAML (`model.temperature`).
    ///
    /// # Errors
    /// The first rule broken.
    pub fn check(&self) -> Result<(), (String, String)> {
        let bad = |key: &str, message: String| Err((format!("model.{key}"), message));
        let scripted = self.provider == ProviderKind::Scripted;
        if scripted && self.script.is_none() {
            return bad(
                "script",
                "provider `scripted` needs `script`: a script file or a list of turns".into(),
            );
        }
        if !scripted {
            if self.script.is_some() {
                return bad(
                    "script",
                    format!(
                        "only provider `scripted` reads `script`, not `{}`",
                        self.provider
                    ),
                );
            }
            if self.model.as_deref().is_none_or(|m| m.trim().is_empty()) {
                return bad(
                    "model",
                    format!("provider `{}` needs the model's name", self.provider),
                );
            }
        }
        if let Some(t) = self.temperature
            && !(0.0..=2.0).contains(&t)
        {
            return bad("temperature", format!("{t} is outside 0.0..=2.0"));
        }
        if self.max_output_tokens == Some(0) {
            return bad("max_output_tokens", "must be at least 1".into());
        }
        if let Some(t) = self.timeout_seconds
            && !(t.is_finite() && t > 0.0 && t <= 3600.0)
        {
            return bad("timeout_seconds", format!("{t} is not within (0, 3600]"));
        }
        if self.strict
            && !matches!(
                self.provider,
                ProviderKind::OpenAi | ProviderKind::OpenAiResponses
            )
        {
            return bad(
                "strict",
                format!(
                    "strict mode is an OpenAI feature; provider `{}` has none",
                    self.provider
                ),
            );
        }
        if let Some(ScriptSource::Inline(turns)) = &self.script {
            Script::new(turns.clone()).map_err(|e| ("model.script".to_owned(), e.to_string()))?;
        }
        Ok(())
    }

    /// The API key: the variable's value; `None` when it is unset or empty.
    fn api_key(&self) -> Option<String> {
        let name = self.api_key_variable()?;
        std::env::var(name).ok().filter(|k| !k.trim().is_empty())
    }

    /// Builds the client this config describes: the one place a format's client is
    /// chosen. Retries are not added here: wrap a shared client in a
    /// [`RetryingProvider`](crate::RetryingProvider) (iris-runner's builder does, for
    /// every model it drives).
    ///
    /// The key comes from [`ModelConfig::api_key_variable`]. It may be missing only
    /// when `base_url` points at another server (a local one may need none); then the
    /// server decides, and a `401` is `PROVIDER_AUTH`.
    ///
    /// ```
    /// use iris_providers::model::{ModelClient, ModelConfig, ProviderKind};
    /// let mut config = ModelConfig::new(ProviderKind::OpenAi, "llama3.1");
    /// config.base_url = Some("http://127.0.0.1:11434/v1".into());
    /// let ModelClient::Shared(client) = config.connect()? else { unreachable!() };
    /// assert_eq!(client.name(), "openai");
    /// # Ok::<(), iris_providers::model::ModelError>(())
    /// ```
    ///
    /// # Errors
    /// [`ModelError::KeyMissing`] without a key (and no `base_url`), else the client's
    /// refusal of a base URL, a timeout or a script.
    pub fn connect(&self) -> Result<ModelClient, ModelError> {
        let key = match self.provider {
            ProviderKind::Scripted => String::new(),
            _ => match (self.api_key(), &self.base_url) {
                (Some(key), _) => key,
                (None, Some(_)) => String::new(),
                (None, None) => {
                    return Err(ModelError::KeyMissing {
                        variable: self.api_key_variable().unwrap_or_default().to_owned(),
                        provider: self.provider,
                    });
                }
            },
        };
        let mut options = HttpOptions::new(key);
        if let Some(url) = &self.base_url {
            options = options.base_url(url);
        }
        if let Some(seconds) = self.timeout_seconds {
            options = options.timeout(Duration::from_secs_f64(seconds));
        }
        let client: Arc<dyn CompletionProvider> = match self.provider {
            ProviderKind::Scripted => {
                let script = match &self.script {
                    Some(ScriptSource::Inline(turns)) => Script::new(turns.clone())?,
                    Some(ScriptSource::File(path)) => {
                        ScriptedProvider::from_path(path)?.script().clone()
                    }
                    None => {
                        return Err(ModelError::Provider(ProviderError::Script {
                            reason: "no script".into(),
                        }));
                    }
                };
                return Ok(ModelClient::Script(Arc::new(script)));
            }
            ProviderKind::OpenAi => options.build::<openai_chat::Client>()?,
            ProviderKind::OpenAiResponses => options.build::<openai_responses::Client>()?,
            ProviderKind::Anthropic => options.build::<anthropic::Client>()?,
            ProviderKind::Gemini => options.build::<gemini::Client>()?,
        };
        Ok(ModelClient::Shared(client))
    }
}

/// How to reach a provider over HTTP: one type for every wire format.
///
/// ```
/// use iris_providers::model::HttpOptions;
/// let options = HttpOptions::new("sk-test").base_url("http://127.0.0.1:11434/v1");
/// assert_eq!(options.base_url.as_deref(), Some("http://127.0.0.1:11434/v1"));
/// assert!(!format!("{options:?}").contains("sk-test"), "the key is never shown");
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

/// A wire format's client, as [`HttpOptions::build`] makes it: every client takes the
/// same three settings.
trait HttpClient: CompletionProvider + Sized + 'static {
    fn with_key(api_key: String) -> Self;
    fn base_url(self, url: &str) -> Result<Self, ProviderError>;
    fn timeout(self, timeout: Duration) -> Result<Self, ProviderError>;
}

macro_rules! http_client {
    ($($client:path),*) => {$(
        impl HttpClient for $client {
            fn with_key(api_key: String) -> Self {
                <$client>::new(api_key)
            }
            fn base_url(self, url: &str) -> Result<Self, ProviderError> {
                self.with_base_url(url)
            }
            fn timeout(self, timeout: Duration) -> Result<Self, ProviderError> {
                self.with_timeout(timeout)
            }
        }
    )*};
}

http_client!(
    openai_chat::Client,
    openai_responses::Client,
    anthropic::Client,
    gemini::Client
);

impl HttpOptions {
    /// The client of format `C` with these options.
    fn build<C: HttpClient>(&self) -> Result<Arc<dyn CompletionProvider>, ProviderError> {
        let mut client = C::with_key(self.api_key.clone());
        if let Some(url) = &self.base_url {
            client = client.base_url(url)?;
        }
        if let Some(timeout) = self.timeout {
            client = client.timeout(timeout)?;
        }
        Ok(Arc::new(client))
    }
}

/// Why a [`ModelConfig`] could not become a provider.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// No API key in the environment and no other server named.
    #[error(
        "provider `{provider}` needs an API key: set the environment variable {variable} \
         (or name another with model.api_key_env)"
    )]
    KeyMissing {
        /// The variable that was read.
        variable: String,
        /// The provider.
        provider: ProviderKind,
    },
    /// The client refused the configuration (a bad `base_url`, a bad script, …).
    #[error(transparent)]
    Provider(#[from] ProviderError),
}

impl ModelError {
    /// The stable code: `PROVIDER_AUTH` for a missing key, else the provider's.
    pub fn code(&self) -> &'static str {
        match self {
            ModelError::KeyMissing { .. } => crate::provider_error::codes::PROVIDER_AUTH,
            ModelError::Provider(e) => e.code(),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Every kind: its YAML name parses back, and its config becomes a client (a
    /// loopback `base_url` needs no key); `scripted` becomes a script.
    #[test]
    fn every_kind_parses_and_connects() {
        for kind in ProviderKind::ALL {
            assert_eq!(ProviderKind::parse(kind.as_str()), Some(kind));
            let yaml = format!("provider: {kind}\nmodel: m\nbase_url: http://127.0.0.1:9/v1\n");
            let mut config: ModelConfig = serde_yaml::from_str(&yaml).unwrap();
            if kind == ProviderKind::Scripted {
                config.base_url = None;
                config.script = Some(ScriptSource::Inline(vec![
                    serde_yaml::from_str("text: hi").unwrap(),
                ]));
                assert!(matches!(config.connect().unwrap(), ModelClient::Script(_)));
                continue;
            }
            config.check().unwrap();
            let ModelClient::Shared(client) = config.connect().unwrap() else {
                panic!("{kind}")
            };
            assert!(!client.name().is_empty(), "{kind}");
        }
    }

    /// No key and no other server: `PROVIDER_AUTH`, naming the variable; a bad
    /// timeout or a script for an HTTP provider is refused by `check`.
    #[test]
    fn bad_configs_are_refused_with_their_key() {
        let mut config = ModelConfig::new(ProviderKind::Anthropic, "claude");
        config.api_key_env = Some("IRIS_TEST_KEY_THAT_NO_ONE_SETS".into());
        let e = config.connect().err().unwrap();
        assert_eq!(e.code(), "PROVIDER_AUTH");
        assert!(e.to_string().contains("IRIS_TEST_KEY_THAT_NO_ONE_SETS"));
        config.timeout_seconds = Some(0.0);
        assert_eq!(config.check().unwrap_err().0, "model.timeout_seconds");
        let unknown: Result<ModelConfig, _> =
            serde_yaml::from_str("provider: openai\napi_key: sk\n");
        assert!(unknown.is_err(), "a key in the config itself is refused");
    }
}
