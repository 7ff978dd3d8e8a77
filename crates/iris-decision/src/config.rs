//! [`DecisionConfig`]: the standalone decision YAML an agent's `decision.path` points to.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::evaluator::{DecisionEvaluator, EvaluatorHandle};
use crate::jev::{JevClient, timeout_from_seconds};

/// The only provider: Typesafe, serving the Jev models.
pub const PROVIDER_TYPESAFE: &str = "typesafe";
/// The default decision model.
pub const DEFAULT_MODEL: &str = "jev-1.13.0";
/// The default total deadline of one decision request, in seconds.
pub const DEFAULT_TIMEOUT_SECONDS: f64 = 5.0;

/// The decision configuration: which provider and model answer, how long one request
/// may take, and which junctions use decisions.
///
/// Every junction is off by default; an evaluator is needed only when one is on.
/// Unknown fields are rejected so a typo cannot silently leave a junction off.
///
/// ```
/// use iris_decision::DecisionConfig;
///
/// let config: DecisionConfig = serde_yaml::from_str("tools:\n  discovery: true\n").unwrap();
/// assert_eq!(config.provider, "typesafe");
/// assert_eq!(config.model, "jev-1.13.0");
/// assert_eq!(config.timeout_seconds, 5.0);
/// assert!(config.tools.discovery && !config.memory.recall);
///
/// // Decision discovery replaces the search behind `tool_search`, so it needs deferred tools.
/// let err = config.validate(false).unwrap_err();
/// assert_eq!(err.code(), "DECISION_INVALID_CONFIG");
/// assert!(config.validate(true).is_ok());
///
/// assert!(serde_yaml::from_str::<DecisionConfig>("tools:\n  discovry: true\n").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DecisionConfig {
    /// Who answers. Only `typesafe` exists. Default `typesafe`.
    pub provider: String,
    /// The decision model. Default `jev-1.13.0`.
    pub model: String,
    /// Total deadline of one decision request, in seconds. Default `5.0`.
    pub timeout_seconds: f64,
    /// The service's base URL (requests go to `{base_url}/decisions`); `None` uses
    /// [`crate::DEFAULT_BASE_URL`]. An absolute `https://` URL, or `http://` to a
    /// loopback address (for local servers and tests).
    pub base_url: Option<String>,
    /// Tool junctions.
    pub tools: DecisionToolsConfig,
    /// Memory junctions (none is built yet: see [`DecisionMemoryConfig`]).
    pub memory: DecisionMemoryConfig,
}

/// The `tools` junctions of a [`DecisionConfig`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DecisionToolsConfig {
    /// `tool_search` asks the decision model instead of ranking locally. Requires
    /// `context_policy.deferred_tools = true`. Default `false`.
    pub discovery: bool,
}

/// The `memory` junctions of a [`DecisionConfig`]: the Python reference's key, accepted so that a
/// config written for it gets a clear refusal rather than an unknown-field error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DecisionMemoryConfig {
    /// Memory recall (the decision model choosing which memories apply). It needs
    /// memory tools (`memory_search` / `memory_fetch`), which this release does not
    /// build, so [`DecisionConfig::validate`] refuses `true`. Default `false`.
    pub recall: bool,
}

/// Why [`DecisionConfig::validate`] refuses `memory.recall: true`.
const MEMORY_RECALL_UNAVAILABLE: &str = "is not built in this release (memory recall needs \
     memory tools, memory_search / memory_fetch, which do not exist yet); set it to false or \
     remove it";

impl Default for DecisionConfig {
    fn default() -> Self {
        Self {
            provider: PROVIDER_TYPESAFE.to_owned(),
            model: DEFAULT_MODEL.to_owned(),
            timeout_seconds: DEFAULT_TIMEOUT_SECONDS,
            base_url: None,
            tools: DecisionToolsConfig::default(),
            memory: DecisionMemoryConfig::default(),
        }
    }
}

impl DecisionConfig {
    /// Checks the section: a supported provider, a non-blank model, a positive finite
    /// timeout, `tools.discovery` only when `context_policy.deferred_tools` is on
    /// (`deferred_tools_enabled`), and `memory.recall` off (not built yet).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the field (`provider`, `model`,
    /// `timeout_seconds`, `base_url`, `tools.discovery`, `memory.recall`).
    pub fn validate(&self, deferred_tools_enabled: bool) -> Result<()> {
        check_provider(&self.provider)?;
        if self.model.trim().is_empty() {
            return Err(Error::config("model", "must not be empty"));
        }
        timeout_from_seconds(self.timeout_seconds)?;
        if let Some(url) = &self.base_url {
            crate::jev::parse_base_url(url)?;
        }
        if self.tools.discovery && !deferred_tools_enabled {
            return Err(Error::config(
                "tools.discovery",
                "requires context_policy.deferred_tools = true (decision discovery only \
                 replaces the search behind tool_search)",
            ));
        }
        if self.memory.recall {
            return Err(Error::config("memory.recall", MEMORY_RECALL_UNAVAILABLE));
        }
        Ok(())
    }

    /// Whether any junction is on, so an evaluator is needed (`tools.discovery`: the
    /// only junction built).
    pub fn needs_evaluator(&self) -> bool {
        self.tools.discovery
    }

    /// The evaluator for this configuration, reading the key from the process
    /// environment. See [`DecisionConfig::evaluator_with`].
    ///
    /// # Errors
    /// As [`DecisionConfig::evaluator_with`].
    pub fn evaluator(
        &self,
        injected: Option<Arc<dyn DecisionEvaluator>>,
    ) -> Result<Option<EvaluatorHandle>> {
        self.evaluator_with(injected, |name| std::env::var(name).ok())
    }

    /// The evaluator for this configuration: `None` when no junction is on; the host's
    /// evaluator as [`EvaluatorHandle::Borrowed`] when one is injected; otherwise a
    /// [`JevClient`] with this model and timeout and the key from
    /// `IRIS_PROVIDER_API_KEYS__TYPESAFE` (read through `lookup`), as
    /// [`EvaluatorHandle::Owned`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// use iris_decision::{DecisionConfig, DecisionToolsConfig, JevClient};
    ///
    /// let off = DecisionConfig::default();
    /// assert!(off.evaluator_with(None, |_| None)?.is_none()); // no key needed
    ///
    /// let on = DecisionConfig { tools: DecisionToolsConfig { discovery: true }, ..DecisionConfig::default() };
    /// assert_eq!(on.evaluator_with(None, |_| None).unwrap_err().code(), "DECISION_AUTH");
    /// let owned = on.evaluator_with(None, |_| Some("sk-1".into()))?.unwrap();
    /// assert!(owned.is_owned());
    ///
    /// let host = Arc::new(JevClient::new("host-key")?);
    /// let borrowed = on.evaluator_with(Some(host), |_| None)?.unwrap();
    /// assert!(!borrowed.is_owned());
    /// # Ok::<(), iris_decision::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Auth`] when a client must be built and the key is missing or malformed;
    /// [`Error::InvalidConfig`] for a bad provider, model or timeout.
    pub fn evaluator_with(
        &self,
        injected: Option<Arc<dyn DecisionEvaluator>>,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<EvaluatorHandle>> {
        if !self.needs_evaluator() {
            return Ok(None);
        }
        if let Some(evaluator) = injected {
            return Ok(Some(EvaluatorHandle::Borrowed(evaluator)));
        }
        check_provider(&self.provider)?;
        let client = JevClient::from_env_with(lookup)?
            .with_model(self.model.clone())?
            .with_timeout_seconds(self.timeout_seconds)?;
        let client = match &self.base_url {
            Some(url) => client.with_base_url(url)?,
            None => client,
        };
        Ok(Some(EvaluatorHandle::Owned(Arc::new(client))))
    }
}

fn check_provider(provider: &str) -> Result<()> {
    if provider == PROVIDER_TYPESAFE {
        Ok(())
    } else {
        // The value is not quoted: a decision file is repository content, and a
        // misplaced key could sit here.
        Err(Error::config(
            "provider",
            format!("is not supported; the only supported provider is `{PROVIDER_TYPESAFE}`"),
        ))
    }
}
