//! [`Agents`]: the agent YAMLs one server serves, by name, over one run store.

use std::collections::BTreeMap;
use std::sync::Arc;

use iris_runner::config::RunStoreConfig;
use iris_runner::{AgentRunner, HostRegistry, LoadedConfig, open_store};

use crate::error::ServeError;
use crate::ledger::LeaseLedger;

/// The name `iris --config FILE serve` gives the `--config` agent.
pub const DEFAULT_AGENT: &str = "default";

/// The agents a server serves: one [`AgentRunner`] per name, all over one run store
/// (the first agent's `run_store`; every other agent's must name the same store), each
/// run's `agent_id` being the agent's name.
pub struct Agents {
    pub(crate) runners: BTreeMap<String, AgentRunner>,
    pub(crate) store: Arc<LeaseLedger>,
    /// Variables whose values are secrets the served runs must not show (model keys,
    /// the database URL).
    pub(crate) secret_vars: Vec<String>,
}

impl std::fmt::Debug for Agents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agents")
            .field("names", &self.runners.keys().collect::<Vec<_>>())
            .field("store", &self.store)
            .finish_non_exhaustive()
    }
}

/// Which store a YAML's `run_store` names, as text two YAMLs can be compared by: the
/// resolved SQLite file, the PostgreSQL URL's variable, or `memory`.
fn store_identity(loaded: &LoadedConfig) -> String {
    match &loaded.config.run_store {
        RunStoreConfig::Sqlite { path } => {
            let path = loaded.workspace.join(
                path.as_deref()
                    .unwrap_or(std::path::Path::new(".iris/runs.db")),
            );
            format!("sqlite {}", path.display())
        }
        RunStoreConfig::Postgres { url_env } => format!("postgres (url_env {url_env})"),
        RunStoreConfig::Memory => "memory".to_owned(),
    }
}

/// Whether `name` can name an agent: 1 to 64 of `[A-Za-z0-9_.-]`.
fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// No agent, a malformed name or one given twice is `SERVE_AGENT_INVALID`.
fn check_names(specs: &[(String, LoadedConfig)]) -> Result<(), ServeError> {
    if specs.is_empty() {
        return Err(ServeError::Agent {
            message: "no agent to serve".into(),
        });
    }
    let mut seen = std::collections::BTreeSet::new();
    for (name, _) in specs {
        if !valid_name(name) {
            return Err(ServeError::Agent {
                message: format!(
                    "the agent name `{name}` must be 1 to 64 letters, digits, `_`, `.` or `-`"
                ),
            });
        }
        if !seen.insert(name.as_str()) {
            return Err(ServeError::Agent {
                message: format!("the agent name `{name}` is given twice"),
            });
        }
    }
    Ok(())
}

impl Agents {
    /// Assembles each agent (`name`, loaded YAML; the first one's `run_store` is the
    /// server's) with the host's registered keys. Every runner starts its tools now
    /// (MCP servers, the command service); [`Agents::close`] stops them.
    ///
    /// # Errors
    /// `SERVE_AGENT_INVALID` (no agent, a repeated or malformed name),
    /// `SERVE_RUN_STORE_MISMATCH` (the YAMLs name different run stores), and the
    /// runner's errors for a YAML that cannot be assembled or a store that cannot be
    /// opened.
    pub async fn build(
        specs: Vec<(String, LoadedConfig)>,
        host: &HostRegistry,
    ) -> Result<Self, ServeError> {
        let Some((first_name, first)) = specs.first() else {
            return Err(ServeError::Agent {
                message: "no agent to serve".into(),
            });
        };
        check_names(&specs)?;
        let identity = store_identity(first);
        for (name, loaded) in &specs {
            let other = store_identity(loaded);
            if other != identity {
                return Err(ServeError::RunStoreMismatch {
                    message: format!(
                        "the agents of one server share one run store: `{first_name}` ({}) uses \
                         {identity}, `{name}` ({}) uses {other}",
                        first.file.display(),
                        loaded.file.display()
                    ),
                });
            }
        }
        let shared = open_store(first)
            .await
            .map_err(|source| ServeError::Runner {
                name: first_name.clone(),
                source,
            })?;
        Self::with_store(specs, host, shared).await
    }

    /// [`Agents::build`] over a store the host opened: it replaces every YAML's
    /// `run_store` (as [`AgentRunnerBuilder::run_store`](iris_runner::AgentRunnerBuilder::run_store)
    /// does for one runner), so the YAMLs need not agree.
    ///
    /// # Errors
    /// As [`Agents::build`], without `SERVE_RUN_STORE_MISMATCH`.
    pub async fn with_store(
        specs: Vec<(String, LoadedConfig)>,
        host: &HostRegistry,
        store: Arc<dyn iris_runner::RunStore>,
    ) -> Result<Self, ServeError> {
        check_names(&specs)?;
        let store = Arc::new(LeaseLedger::new(store));
        let mut secret_vars = Vec::new();
        let mut runners = BTreeMap::new();
        for (name, loaded) in specs {
            if let Some(var) = loaded
                .config
                .model
                .as_ref()
                .and_then(|m| m.api_key_variable())
            {
                secret_vars.push(var.to_owned());
            }
            if let RunStoreConfig::Postgres { url_env } = &loaded.config.run_store {
                secret_vars.push(url_env.clone());
            }
            // The builder opens the YAML's store too; the shared one replaces it, so
            // every agent's runs (and their leases) go through one ledger.
            let built = AgentRunner::builder_from_loaded(&loaded, host, None).await;
            let runner = match built {
                Ok(builder) => builder
                    .run_store(Arc::clone(&store) as Arc<dyn iris_runner::RunStore>)
                    .agent_id(name.clone())
                    .build(),
                Err(source) => {
                    for runner in runners.values() {
                        let _ = AgentRunner::close(runner).await;
                    }
                    return Err(ServeError::Runner { name, source });
                }
            };
            runners.insert(name, runner);
        }
        Ok(Self {
            runners,
            store,
            secret_vars,
        })
    }

    /// The agents' names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.runners.keys().map(String::as_str)
    }

    /// The run store, in words (`sqlite <path>`, `postgres`, `memory`).
    pub fn store_description(&self) -> String {
        iris_runner::RunStore::describe(&*self.store)
    }

    /// Stops what the agents started (MCP servers, command services). Call it after
    /// the server stopped.
    ///
    /// # Errors
    /// The first agent whose tools failed to close.
    pub async fn close(&self) -> Result<(), ServeError> {
        let mut first = None;
        for (name, runner) in &self.runners {
            if let Err(source) = runner.close().await
                && first.is_none()
            {
                first = Some(ServeError::Runner {
                    name: name.clone(),
                    source,
                });
            }
        }
        first.map_or(Ok(()), Err)
    }
}
