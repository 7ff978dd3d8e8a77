//! [`ToolDefinition`]: what a tool is called, what it does, and how its results are kept.

use std::collections::BTreeSet;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// Longest allowed tool name, in characters.
pub const MAX_TOOL_NAME_LEN: usize = 64;
/// Default [`ToolDefinition::max_result_chars`].
pub const DEFAULT_MAX_RESULT_CHARS: usize = 50_000;
/// Default [`ToolDefinition::preview_chars`].
pub const DEFAULT_PREVIEW_CHARS: usize = 8_000;
/// Default group of a tool.
pub const DEFAULT_GROUP: &str = "core";

/// A side effect a tool declares. Declarations drive permission and parallelism.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolCapability {
    /// Reads local state.
    Read,
    /// Writes local state.
    Write,
    /// Executes programs.
    Execute,
    /// Talks to the network.
    Network,
    /// Proxies an MCP server.
    Mcp,
    /// Runs another agent.
    Agent,
}

impl ToolCapability {
    /// Every capability, in declaration order.
    pub const ALL: [ToolCapability; 6] = [
        ToolCapability::Read,
        ToolCapability::Write,
        ToolCapability::Execute,
        ToolCapability::Network,
        ToolCapability::Mcp,
        ToolCapability::Agent,
    ];

    /// The lower-case name used in YAML and JSON (`"read"`, `"write"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            ToolCapability::Read => "read",
            ToolCapability::Write => "write",
            ToolCapability::Execute => "execute",
            ToolCapability::Network => "network",
            ToolCapability::Mcp => "mcp",
            ToolCapability::Agent => "agent",
        }
    }
}

/// How a long result body is previewed once saved as an artifact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PreviewMode {
    /// Keep the first `preview_chars` characters.
    #[default]
    Head,
    /// Keep the first and last halves of `preview_chars`.
    HeadTail,
}

/// Whether an old result may be reduced to a preview in a run's context view.
///
/// Read by the run loop's context view: with
/// `context_policy.retention` set (`iris_runner::context::RetentionConfig`), old
/// [`ContextRetention::Observation`] results are sent as previews while the store
/// keeps the full record; see the `context_retention` row of
/// `docs/seed-coverage.md`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContextRetention {
    /// Keep the result as it is.
    #[default]
    Keep,
    /// An observation: old results may be shortened to a preview.
    Observation,
}

/// Everything the registry, the model and the executor know about one tool.
///
/// Build one with [`ToolDefinition::new`], adjust it with the `with_*` methods, and
/// check it with [`ToolDefinition::validate`] (the registry validates on registration).
///
/// ```
/// use iris_tools_core::{ToolCapability, ToolDefinition};
/// use serde_json::json;
///
/// let def = ToolDefinition::new(
///     "read_config",
///     "Read one key from the application config.",
///     json!({"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}),
/// )
/// .with_capabilities([ToolCapability::Read])
/// .with_group("config");
/// assert!(def.validate().is_ok());
/// assert_eq!(def.max_result_chars, 50_000);
///
/// let bad = ToolDefinition::new("read-config", "x", json!({"type": "object"}));
/// assert_eq!(bad.validate().unwrap_err().code(), "INVALID_DEFINITION");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolDefinition {
    /// Canonical name: `^[A-Za-z_][A-Za-z0-9_]*$`, at most 64 characters.
    pub name: String,
    /// What the tool does, for the model. Non-empty.
    pub description: String,
    /// JSON Schema (2020-12) of the input; the root is `"type": "object"`.
    pub input_schema: Value,
    /// Declared side effects.
    #[serde(default)]
    pub capabilities: BTreeSet<ToolCapability>,
    /// Catalog group used for filtering and discovery.
    #[serde(default = "default_group")]
    pub group: String,
    /// Other names the executor accepts for this tool.
    #[serde(default)]
    pub aliases: Vec<String>,
    /// Deferred disclosure: the schema is sent only after discovery.
    #[serde(default)]
    pub deferred: bool,
    /// Final model bodies longer than this are saved as an artifact.
    #[serde(default = "default_max_result_chars")]
    pub max_result_chars: usize,
    /// Characters kept as a preview once a body is saved.
    #[serde(default = "default_preview_chars")]
    pub preview_chars: usize,
    /// Head or head+tail preview.
    #[serde(default)]
    pub preview_mode: PreviewMode,
    /// Whether old results may be reduced in the context view.
    #[serde(default)]
    pub context_retention: ContextRetention,
    /// Free-form metadata (tags, version, examples, MCP identity, …).
    #[serde(default)]
    pub metadata: Map<String, Value>,
    /// Per-tool deadline cap: it replaces the runtime's 60 s default rather than being
    /// capped by it; `None` means the runtime default.
    #[serde(default, with = "opt_duration_secs")]
    pub timeout: Option<Duration>,
    /// Internal tool, hidden from normal listings and search unless asked for.
    #[serde(default)]
    pub system_use: bool,
    /// The default permission policy runs this tool without asking although it
    /// declares `network` or `agent` (as the built-in web, tool discovery, memory
    /// search and subagent tools). Ignored when `write`, `execute` or `mcp` is
    /// declared. Set only by Rust code: it is never read from serialized data, so a
    /// definition that arrives as JSON (an MCP server's catalog) cannot claim it.
    #[serde(skip)]
    pub auto_allow: bool,
    /// Running the tool twice with the same arguments and the same
    /// [idempotency key](crate::ToolExecutionContext::idempotency_key) has the effect
    /// of running it once. A durable run re-runs such a call when a crash left it in
    /// doubt; any other side-effecting call is asked about instead. Set only by Rust
    /// code, like [`auto_allow`](Self::auto_allow): never read from serialized data.
    #[serde(skip)]
    pub idempotent: bool,
    /// A background tool: the run loop does not wait for the result. A call
    /// answers at once with a receipt (`task_id`, `status: running`); the result
    /// reaches the conversation on a later turn, and a run does not complete while
    /// such calls are outstanding (unless the agent YAML's `background_calls` says
    /// `drop`). Set only by Rust code, never read from serialized data.
    #[serde(skip)]
    pub background: bool,
    /// Whether a `run_tool_script` program may call this tool: `None` (the default)
    /// means yes for read-only tools and, for others, only when the agent YAML lists
    /// the tool under `tools.script.callable`; `Some(false)` never; `Some(true)`
    /// always. Inner calls are still checked like any call (permission, hooks, …).
    /// Set only by Rust code, never read from serialized data.
    #[serde(skip)]
    pub script_callable: Option<bool>,
}

fn default_group() -> String {
    DEFAULT_GROUP.to_owned()
}
fn default_max_result_chars() -> usize {
    DEFAULT_MAX_RESULT_CHARS
}
fn default_preview_chars() -> usize {
    DEFAULT_PREVIEW_CHARS
}

mod opt_duration_secs {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub(super) fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&d.as_secs_f64()),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        let secs = Option::<f64>::deserialize(d)?;
        match secs {
            None => Ok(None),
            Some(s) if s.is_finite() && s > 0.0 => {
                Duration::try_from_secs_f64(s).map(Some).map_err(|_| {
                    serde::de::Error::custom(format!("timeout of {s} seconds is too large"))
                })
            }
            Some(s) => Err(serde::de::Error::custom(format!(
                "timeout must be a positive finite number of seconds, got {s}"
            ))),
        }
    }
}

/// Checks a tool name against the rules: 1–64 characters, `^[A-Za-z_][A-Za-z0-9_]*$`.
///
/// Returns the reason when the name is invalid.
pub fn check_tool_name(name: &str) -> std::result::Result<(), String> {
    let mut chars = name.chars();
    let Some(first) = chars.next() else {
        return Err("name must not be empty".into());
    };
    let len = name.chars().count();
    if len > MAX_TOOL_NAME_LEN {
        return Err(format!(
            "name is {len} characters; at most {MAX_TOOL_NAME_LEN} allowed"
        ));
    }
    if !(first.is_ascii_alphabetic() || first == '_') {
        return Err(format!(
            "name must start with a letter or `_`, not `{}`",
            printable(&first.to_string())
        ));
    }
    if let Some(bad) = chars.find(|c| !(c.is_ascii_alphanumeric() || *c == '_')) {
        return Err(format!(
            "name may contain only ASCII letters, digits and `_`; found `{}`",
            printable(&bad.to_string())
        ));
    }
    Ok(())
}

/// `text` with control characters escaped (`\n`, `\u{0}`, …), so an error message
/// quoting an invalid name stays on one line and shows what was actually there.
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

impl ToolDefinition {
    /// A definition with the required fields and every documented default.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            input_schema,
            capabilities: BTreeSet::new(),
            group: default_group(),
            aliases: Vec::new(),
            deferred: false,
            max_result_chars: DEFAULT_MAX_RESULT_CHARS,
            preview_chars: DEFAULT_PREVIEW_CHARS,
            preview_mode: PreviewMode::Head,
            context_retention: ContextRetention::Keep,
            metadata: Map::new(),
            timeout: None,
            system_use: false,
            auto_allow: false,
            idempotent: false,
            background: false,
            script_callable: None,
        }
    }

    /// Like [`ToolDefinition::new`] followed by [`ToolDefinition::validate`].
    pub fn try_new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
    ) -> Result<Self> {
        let def = Self::new(name, description, input_schema);
        def.validate()?;
        Ok(def)
    }

    /// Checks name, aliases, description, schema root, the preview and result limits
    /// (positive) and the timeout (positive when set). Never panics.
    pub fn validate(&self) -> Result<()> {
        // The name is quoted in a one-line message; control characters in an invalid
        // name are shown escaped rather than breaking the line.
        let invalid = |reason: String| Error::InvalidDefinition {
            name: printable(&self.name),
            reason,
        };
        check_tool_name(&self.name).map_err(invalid)?;
        for alias in &self.aliases {
            let quoted = printable(alias);
            check_tool_name(alias).map_err(|r| invalid(format!("alias `{quoted}`: {r}")))?;
            if alias == &self.name {
                return Err(invalid(format!("alias `{quoted}` repeats the tool name")));
            }
        }
        if self.description.trim().is_empty() {
            return Err(invalid("description must not be empty".into()));
        }
        match self.input_schema.as_object() {
            None => return Err(invalid("input_schema must be a JSON object".into())),
            Some(schema) => match schema.get("type") {
                Some(Value::String(t)) if t == "object" => {}
                other => {
                    return Err(invalid(format!(
                        "input_schema root must have \"type\": \"object\", found {}",
                        other.map_or_else(|| "no type".to_owned(), Value::to_string)
                    )));
                }
            },
        }
        if self.preview_chars == 0 {
            return Err(invalid("preview_chars must be positive".into()));
        }
        if self.max_result_chars == 0 {
            return Err(invalid("max_result_chars must be positive".into()));
        }
        // A zero deadline would time every call out before its body starts, and the
        // serialized form (seconds) refuses it, so it could not round-trip either.
        if self.timeout.is_some_and(|t| t.is_zero()) {
            return Err(invalid("timeout must be positive".into()));
        }
        Ok(())
    }

    /// Replaces the declared capabilities.
    #[must_use]
    pub fn with_capabilities(mut self, caps: impl IntoIterator<Item = ToolCapability>) -> Self {
        self.capabilities = caps.into_iter().collect();
        self
    }

    /// Sets the group.
    #[must_use]
    pub fn with_group(mut self, group: impl Into<String>) -> Self {
        self.group = group.into();
        self
    }

    /// Replaces the aliases.
    #[must_use]
    pub fn with_aliases<S: Into<String>>(mut self, aliases: impl IntoIterator<Item = S>) -> Self {
        self.aliases = aliases.into_iter().map(Into::into).collect();
        self
    }

    /// Marks the tool as deferred (or eager).
    #[must_use]
    pub fn with_deferred(mut self, deferred: bool) -> Self {
        self.deferred = deferred;
        self
    }

    /// Sets the per-tool deadline cap.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Sets the artifact threshold.
    #[must_use]
    pub fn with_max_result_chars(mut self, n: usize) -> Self {
        self.max_result_chars = n;
        self
    }

    /// Sets the preview length and mode used once a body is saved.
    #[must_use]
    pub fn with_preview(mut self, chars: usize, mode: PreviewMode) -> Self {
        self.preview_chars = chars;
        self.preview_mode = mode;
        self
    }

    /// Sets context retention.
    #[must_use]
    pub fn with_context_retention(mut self, retention: ContextRetention) -> Self {
        self.context_retention = retention;
        self
    }

    /// Marks the tool as an internal system tool (hidden unless asked for).
    #[must_use]
    pub fn with_system_use(mut self, system_use: bool) -> Self {
        self.system_use = system_use;
        self
    }

    /// Lets the default permission policy run the tool without asking despite a
    /// `network` or `agent` capability; see [`ToolDefinition::auto_allow`].
    #[must_use]
    pub fn with_auto_allow(mut self, auto_allow: bool) -> Self {
        self.auto_allow = auto_allow;
        self
    }

    /// Declares the tool idempotent under its idempotency key; see
    /// [`ToolDefinition::idempotent`].
    #[must_use]
    pub fn with_idempotent(mut self, idempotent: bool) -> Self {
        self.idempotent = idempotent;
        self
    }

    /// Makes the tool a background tool; see [`ToolDefinition::background`].
    #[must_use]
    pub fn with_background(mut self, background: bool) -> Self {
        self.background = background;
        self
    }

    /// Opts the tool in to (or out of) `run_tool_script` programs; see
    /// [`ToolDefinition::script_callable`].
    #[must_use]
    pub fn with_script_callable(mut self, callable: bool) -> Self {
        self.script_callable = Some(callable);
        self
    }

    /// Inserts one metadata entry.
    #[must_use]
    pub fn with_metadata(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// The tags stored under `metadata.tags` (empty when none).
    pub fn tags(&self) -> Vec<&str> {
        self.metadata
            .get("tags")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }

    /// Whether the definition declares a capability.
    pub fn has(&self, cap: ToolCapability) -> bool {
        self.capabilities.contains(&cap)
    }

    /// The provider-neutral spec a model request carries.
    pub fn to_spec(&self) -> crate::spec::ToolSpec {
        crate::spec::ToolSpec {
            name: self.name.clone(),
            description: self.description.clone(),
            input_schema: self.input_schema.clone(),
        }
    }
}
