//! Credential auto-heal: `store_secret`, the secret a human types, and where
//! it goes.
//!
//! A tool that cannot authenticate (no key, `401`, `403`, an expired key) fails with an
//! error whose `details.secret` names the secret it needs, e.g. `web_search`'s
//! `WEB_AUTH_REQUIRED` naming `IRIS_PROVIDER_API_KEYS__TAVILY`. When some
//! [`SecretTarget`] of the run declares that name, the run loop
//!
//! 1. adds a hint to the error the model reads (call `store_secret` with the key), and
//!    offers `store_secret` in the following requests — it is a `system_use` tool,
//!    otherwise hidden from the catalog (`iris tools list --all` shows it);
//! 2. answers a `store_secret {"key": …}` call itself, outside the hook and middleware
//!    chain: the host's [`InteractionHandler`](crate::InteractionHandler) is asked
//!    (`iris run` prompts on the terminal without echo), or the run waits
//!    on an [`Interaction::Secret`](crate::Interaction::Secret) that
//!    [`AgentRunner::resume`](crate::AgentRunner::resume) answers with
//!    [`Answer::Secret`](crate::Answer::Secret) (`iris resume RUN --secret-stdin`);
//! 3. hands the value to the host's [`SecretStore`] and to every target that declared
//!    the name (the Tavily client of `web_search`/`web_fetch`, the decision model's
//!    client behind `tool_search`, MCP servers whose HTTP credentials read the
//!    variable), then tells the model
//!    the secret is stored — never the value; a target that cannot use the value
//!    (a key no HTTP header can carry) makes the call `SECRET_REJECTED` instead.
//!
//! The value is a [`SecretValue`]: its `Debug` and `Serialize` are redacted and it has
//! no `Display`, so it reaches no history, run record, event, log, trace or result. A
//! run accepts at most [`MAX_SECRET_ROUNDS`] `store_secret` rounds per secret; after
//! that the call fails with `SECRET_ROUNDS_EXHAUSTED` and the tool's failure stands.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use iris_decision::JevClient;
use iris_mcp::MCPManager;
use iris_web::{ApiKey, TavilyClient};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::loop_tools::store_secret::STORE_SECRET;

/// `store_secret` rounds one run accepts per secret: two, then the failure stands.
pub const MAX_SECRET_ROUNDS: u32 = 2;

/// Error codes of `store_secret` results.
pub mod codes {
    /// No tool of this run uses the named secret (the model named a key no
    /// failure asked for).
    pub const SECRET_UNKNOWN: &str = "SECRET_UNKNOWN";
    /// The secret was supplied [`MAX_SECRET_ROUNDS`](super::MAX_SECRET_ROUNDS) times in
    /// this run already; the tool's failure stands.
    pub const SECRET_ROUNDS_EXHAUSTED: &str = "SECRET_ROUNDS_EXHAUSTED";
    /// The human declined to give the secret.
    pub const SECRET_DECLINED: &str = "SECRET_DECLINED";
    /// The host's [`SecretStore`](super::SecretStore) refused the value.
    pub const SECRET_STORE_FAILED: &str = "SECRET_STORE_FAILED";
    /// A tool that uses the secret cannot use the value (e.g. a key with characters an
    /// HTTP header cannot carry); it keeps its old one.
    pub const SECRET_REJECTED: &str = "SECRET_REJECTED";
}

/// A secret's value. It never prints: `Debug` shows `SecretValue(<redacted>)`,
/// serializing writes `"<redacted>"`, and there is no `Display`. Deserializing reads a
/// plain string, so a host can pass one in a JSON answer.
///
/// ```
/// use iris_runner::SecretValue;
/// let value = SecretValue::new("tvly-abc");
/// assert_eq!(format!("{value:?}"), "SecretValue(<redacted>)");
/// assert_eq!(serde_json::to_string(&value).unwrap(), "\"<redacted>\"");
/// assert_eq!(value.expose(), "tvly-abc");
/// assert!(SecretValue::new(" \n").is_blank());
/// ```
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct SecretValue(String);

impl SecretValue {
    /// Wraps a value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value, for a [`SecretStore`] or a [`SecretTarget`] that must use it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether the value is empty or whitespace only (such an answer is refused).
    pub fn is_blank(&self) -> bool {
        self.0.trim().is_empty()
    }
}

impl fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretValue(<redacted>)")
    }
}

impl Serialize for SecretValue {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str("<redacted>")
    }
}

/// Something that uses secrets and accepts new values at run time (a client whose
/// key is wrong or missing). The runner gives it every value stored for a name it
/// declares.
pub trait SecretTarget: Send + Sync + fmt::Debug {
    /// The secret names it uses, as its auth errors name them in `details.secret`.
    fn secret_names(&self) -> Vec<String>;

    /// Uses `value` for `name` from now on.
    ///
    /// # Errors
    /// Why it cannot use the value (shown to the model as `SECRET_REJECTED`; it must
    /// not contain the value). The target keeps what it had.
    fn set_secret(&self, name: &str, value: &SecretValue) -> Result<(), String>;
}

/// The Tavily client of `web_search` and `web_fetch`: it declares the secret its
/// `WEB_AUTH_REQUIRED` errors name and takes a new key with
/// [`TavilyClient::set_api_key`].
impl SecretTarget for TavilyClient {
    fn secret_names(&self) -> Vec<String> {
        vec![self.secret_name().to_owned()]
    }

    fn set_secret(&self, name: &str, value: &SecretValue) -> Result<(), String> {
        if name == self.secret_name() {
            self.set_api_key(ApiKey::new(value.expose()));
        }
        Ok(())
    }
}

/// The decision model's client (`tool_search` with the decision backend): it declares
/// the secret its `DECISION_AUTH` errors name and takes a new key with
/// [`JevClient::set_api_key`] (a blank or malformed value is refused; the old key stays).
impl SecretTarget for JevClient {
    fn secret_names(&self) -> Vec<String> {
        vec![self.secret_name().to_owned()]
    }

    fn set_secret(&self, name: &str, value: &SecretValue) -> Result<(), String> {
        if name == self.secret_name() {
            // The client's message names the fault, never the value.
            self.set_api_key(value.expose())
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

/// The MCP servers of an agent: they declare the host variables their HTTP
/// credentials come from (`bearer_token_env_var`, `env_http_headers`, `${VAR}` in
/// `headers` or the URL), which `MCP_AUTH_REQUIRED` errors name; a new value
/// reconnects the servers that read it ([`MCPManager::set_secret`]).
impl SecretTarget for MCPManager {
    fn secret_names(&self) -> Vec<String> {
        MCPManager::secret_names(self)
    }

    fn set_secret(&self, name: &str, value: &SecretValue) -> Result<(), String> {
        MCPManager::set_secret(self, name, value.expose());
        Ok(())
    }
}

/// The host's secret store: where a value a human gave goes besides the tools (a
/// keychain, a vault), and where the runner looks for values when it is built.
pub trait SecretStore: Send + Sync {
    /// Keeps `value` under `name`.
    ///
    /// # Errors
    /// Why the store refused it (shown to the model as `SECRET_STORE_FAILED`; it must
    /// not contain the value).
    fn put(&self, name: &str, value: &SecretValue) -> Result<(), String>;

    /// The value kept under `name`, if any.
    fn get(&self, name: &str) -> Option<SecretValue>;
}

/// The default [`SecretStore`]: this process's memory, gone when it exits. A value
/// given to `iris resume` serves that process's part of the run.
#[derive(Default)]
pub struct MemorySecretStore {
    values: Mutex<BTreeMap<String, SecretValue>>,
}

impl MemorySecretStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

impl fmt::Debug for MemorySecretStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> = self
            .values
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .cloned()
            .collect();
        f.debug_struct("MemorySecretStore")
            .field("names", &names)
            .finish()
    }
}

impl SecretStore for MemorySecretStore {
    fn put(&self, name: &str, value: &SecretValue) -> Result<(), String> {
        self.values
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name.to_owned(), value.clone());
        Ok(())
    }

    fn get(&self, name: &str) -> Option<SecretValue> {
        self.values
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .cloned()
    }
}

/// A runner's secret targets and store.
#[derive(Clone)]
pub(crate) struct Secrets {
    targets: Vec<Arc<dyn SecretTarget>>,
    /// A `subagent` child's: the targets of the runs above it. A value given in the
    /// child reaches them too (the parent's clients use the healed key at once), but
    /// they declare nothing here: the child offers `store_secret` for its own tools.
    ancestors: Vec<Arc<dyn SecretTarget>>,
    store: Arc<dyn SecretStore>,
}

impl Secrets {
    /// The targets over `store`; values the store holds already go to the targets.
    pub(crate) fn new(targets: Vec<Arc<dyn SecretTarget>>, store: Arc<dyn SecretStore>) -> Self {
        for target in &targets {
            for name in target.secret_names() {
                if let Some(value) = store.get(&name)
                    && let Err(reason) = target.set_secret(&name, &value)
                {
                    tracing::warn!(secret = %name, %reason, "a stored secret was refused");
                }
            }
        }
        Self {
            targets,
            ancestors: Vec::new(),
            store,
        }
    }

    /// These secrets with `ancestors` (the parent run's targets and the ones above
    /// it) also given every value delivered here.
    pub(crate) fn with_ancestors(mut self, ancestors: Vec<Arc<dyn SecretTarget>>) -> Self {
        self.ancestors = ancestors;
        self
    }

    /// This run's targets and its ancestors': what a child of this run delivers to.
    pub(crate) fn lineage(&self) -> Vec<Arc<dyn SecretTarget>> {
        self.targets
            .iter()
            .chain(&self.ancestors)
            .cloned()
            .collect()
    }

    /// The host's store.
    pub(crate) fn store(&self) -> Arc<dyn SecretStore> {
        Arc::clone(&self.store)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.targets.is_empty()
    }

    /// Whether a target declares `name`.
    pub(crate) fn declares(&self, name: &str) -> bool {
        self.targets
            .iter()
            .any(|t| t.secret_names().iter().any(|n| n == name))
    }

    /// Every declared name, sorted.
    pub(crate) fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.targets.iter().flat_map(|t| t.secret_names()).collect();
        names.sort();
        names.dedup();
        names
    }

    /// Stores `value` under `name` in the host's store and gives it to every target
    /// that declares the name, this run's and its ancestors'.
    ///
    /// # Errors
    /// `(code, reason)`: `SECRET_STORE_FAILED` when the store refused it (no target got
    /// it), `SECRET_REJECTED` with every refusing target's reason otherwise.
    pub(crate) fn deliver(
        &self,
        name: &str,
        value: &SecretValue,
    ) -> Result<(), (&'static str, String)> {
        self.store
            .put(name, value)
            .map_err(|reason| (codes::SECRET_STORE_FAILED, reason))?;
        let refused: Vec<String> = self
            .targets
            .iter()
            .chain(&self.ancestors)
            .filter(|target| target.secret_names().iter().any(|n| n == name))
            .filter_map(|target| target.set_secret(name, value).err())
            .collect();
        if refused.is_empty() {
            Ok(())
        } else {
            Err((codes::SECRET_REJECTED, refused.join("; ")))
        }
    }
}

impl fmt::Debug for Secrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Secrets")
            .field("names", &self.names())
            .finish_non_exhaustive()
    }
}

/// The secret an auth failure asks for: `details.secret` of a failed result.
pub(crate) fn asked_secret(result: &iris_tools_core::ToolResult) -> Option<String> {
    let info = result.output.error_info()?;
    info.details
        .get("secret")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn values_reach_the_store_and_the_declaring_targets_only() {
        let tavily = Arc::new(TavilyClient::from_env_var("IRIS_TEST_UNSET_TAVILY_KEY"));
        let other = Arc::new(TavilyClient::from_env_var("IRIS_TEST_UNSET_OTHER_KEY"));
        let store = Arc::new(MemorySecretStore::new());
        let secrets = Secrets::new(vec![tavily.clone(), other.clone()], store.clone());
        assert!(secrets.declares("IRIS_TEST_UNSET_TAVILY_KEY"));
        assert!(!secrets.declares("NOPE"));
        assert!(!tavily.has_api_key());
        secrets
            .deliver("IRIS_TEST_UNSET_TAVILY_KEY", &SecretValue::new("v1"))
            .unwrap();
        assert!(tavily.has_api_key());
        assert!(!other.has_api_key());
        assert_eq!(
            store.get("IRIS_TEST_UNSET_TAVILY_KEY").unwrap().expose(),
            "v1"
        );
        assert!(!format!("{store:?}{secrets:?}").contains("v1"));
        // A store that holds a value heals a new target when the runner is built.
        let fresh = Arc::new(TavilyClient::from_env_var("IRIS_TEST_UNSET_TAVILY_KEY"));
        let _ = Secrets::new(vec![fresh.clone()], store);
        assert!(fresh.has_api_key());
    }
}
