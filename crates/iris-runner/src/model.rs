//! The agent YAML's `model` section: which wire format, which model, where the key
//! comes from, and how the provider client is built from it.
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
//! folder) or the list of turns inline; see [`iris_providers::scripted`]. Every run
//! replays it from its first turn: no key, no network.
//!
//! ```
//! use iris_runner::model::{ModelConfig, ProviderKind};
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

use iris_providers::scripted::{Script, ScriptTurn};
use iris_providers::{
    CompletionProvider, Provider, ProviderError, ScriptedProvider, Strict,
    connect::{HttpOptions, connect},
};
use serde::{Deserialize, Serialize};

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

/// A provider built from a [`ModelConfig`]: shared by every run, or a script every
/// run replays from its start.
#[derive(Clone)]
pub(crate) enum ProviderSource {
    /// One client for every run.
    Shared(Arc<dyn CompletionProvider>),
    /// A fresh [`ScriptedProvider`] per run.
    Script(Arc<Script>),
}

impl fmt::Debug for ProviderSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProviderSource::Shared(p) => f.debug_tuple("Shared").field(&p.name()).finish(),
            ProviderSource::Script(s) => f
                .debug_struct("Script")
                .field("turns", &s.turns.len())
                .finish(),
        }
    }
}

impl ProviderSource {
    /// The provider one run talks to.
    pub(crate) fn for_run(&self) -> Arc<dyn CompletionProvider> {
        match self {
            ProviderSource::Shared(p) => Arc::clone(p),
            ProviderSource::Script(s) => Arc::new(ScriptedProvider::new(Script::clone(s))),
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

    /// Checks the rules serde cannot express; `Err((key, message))`.
    pub(crate) fn check(&self) -> Result<(), (String, String)> {
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

    /// Builds the provider this section describes. Retries are not added here: the
    /// runner's builder wraps every network provider, of either route, in one
    /// [`RetryingProvider`](iris_providers::RetryingProvider).
    ///
    /// The key comes from [`ModelConfig::api_key_variable`]. It may be missing only
    /// when `base_url` points at another server (a local one may need none); then the
    /// server decides, and a `401` is `PROVIDER_AUTH`.
    pub(crate) fn provider(&self) -> Result<ProviderSource, ModelError> {
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
                return Ok(ProviderSource::Script(Arc::new(script)));
            }
            ProviderKind::OpenAi => connect(Provider::OpenAiChat, &options)?,
            ProviderKind::OpenAiResponses => connect(Provider::OpenAiResponses, &options)?,
            ProviderKind::Anthropic => connect(Provider::AnthropicMessages, &options)?,
            ProviderKind::Gemini => connect(Provider::Gemini, &options)?,
        };
        Ok(ProviderSource::Shared(client))
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
            ModelError::KeyMissing { .. } => iris_providers::provider_error::codes::PROVIDER_AUTH,
            ModelError::Provider(e) => e.code(),
        }
    }
}
