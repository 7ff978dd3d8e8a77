//! [`TypedToolBuilder`] and [`TypedTool`]: a tool from an explicit input type and a
//! closure.

use std::collections::{BTreeSet, HashSet};
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::input::{PresetCheck, PresetSlot, TypedCore, check_as, split_presets};
use super::{IntoToolOutput, schema_for_input};
use crate::context::ToolExecutionContext;
use crate::definition::{ContextRetention, ToolCapability, ToolDefinition};
use crate::error::{Error, Result, ToolErrorInfo};
use crate::result::ToolOutput;
use crate::tool::{BoxFuture, Tool, ToolInput, ToolTimeoutOwner};

/// Collects a typed tool's settings: the parameter table for
/// `CallableTool`/`register_function`, in builder form. Finish with
/// [`TypedToolBuilder::build`].
#[derive(Debug, Clone)]
pub struct TypedToolBuilder {
    name: String,
    description: Option<String>,
    capabilities: BTreeSet<ToolCapability>,
    group: Option<String>,
    aliases: Vec<String>,
    deferred: bool,
    tags: Vec<String>,
    examples: Vec<Value>,
    version: Option<String>,
    deprecated: bool,
    deprecation_message: Option<String>,
    timeout: Option<Duration>,
    concurrency_safe: bool,
    auto_allow: bool,
    idempotent: bool,
    background: bool,
    context_retention: ContextRetention,
    timeout_owner: ToolTimeoutOwner,
    metadata: Map<String, Value>,
    presets: Vec<PresetDecl>,
}

/// A preset as the builder records it: declared (by `#[tool]`) or bound (by the
/// builder's `.preset`).
#[derive(Clone)]
struct PresetDecl {
    name: String,
    check: Option<PresetCheck>,
    value: Option<std::result::Result<Value, String>>,
}

/// A preset value from the builder, or why it could not be serialized.
type PresetBinding = (String, std::result::Result<Value, String>);

impl fmt::Debug for PresetDecl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PresetDecl")
            .field("name", &self.name)
            .field("bound", &self.value.is_some())
            .finish_non_exhaustive()
    }
}

impl TypedToolBuilder {
    fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: None,
            capabilities: BTreeSet::new(),
            group: None,
            aliases: Vec::new(),
            deferred: false,
            tags: Vec::new(),
            examples: Vec::new(),
            version: None,
            deprecated: false,
            deprecation_message: None,
            timeout: None,
            concurrency_safe: true,
            auto_allow: false,
            idempotent: false,
            background: false,
            context_retention: ContextRetention::Keep,
            timeout_owner: ToolTimeoutOwner::Runtime,
            metadata: Map::new(),
            presets: Vec::new(),
        }
    }

    /// What the tool does, for the model. Defaults to the tool name.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Declared side effects (default: none).
    #[must_use]
    pub fn capabilities(mut self, capabilities: impl IntoIterator<Item = ToolCapability>) -> Self {
        self.capabilities = capabilities.into_iter().collect();
        self
    }

    /// Catalog group (default `"core"`).
    #[must_use]
    pub fn group(mut self, group: impl Into<String>) -> Self {
        self.group = Some(group.into());
        self
    }

    /// Other names the executor accepts.
    #[must_use]
    pub fn aliases<S: Into<String>>(mut self, aliases: impl IntoIterator<Item = S>) -> Self {
        self.aliases = aliases.into_iter().map(Into::into).collect();
        self
    }

    /// Deferred disclosure: the schema is only sent after discovery (default false).
    #[must_use]
    pub fn deferred(mut self, deferred: bool) -> Self {
        self.deferred = deferred;
        self
    }

    /// Search tags, stored as `metadata.tags`.
    #[must_use]
    pub fn tags<S: Into<String>>(mut self, tags: impl IntoIterator<Item = S>) -> Self {
        self.tags = tags.into_iter().map(Into::into).collect();
        self
    }

    /// Example inputs, stored as `metadata.examples`.
    #[must_use]
    pub fn examples(mut self, examples: impl IntoIterator<Item = Value>) -> Self {
        self.examples = examples.into_iter().collect();
        self
    }

    /// Version, stored as `metadata.version`.
    #[must_use]
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = Some(version.into());
        self
    }

    /// Marks the tool deprecated: the notice is appended to the description and
    /// `metadata.deprecated` is set. There is no compatibility shim.
    #[must_use]
    pub fn deprecated(mut self, deprecated: bool) -> Self {
        self.deprecated = deprecated;
        self
    }

    /// The text of the deprecation notice (used only when deprecated).
    #[must_use]
    pub fn deprecation_message(mut self, message: impl Into<String>) -> Self {
        self.deprecation_message = Some(message.into());
        self
    }

    /// Per-tool deadline cap.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Whether calls may overlap (default true; actual parallelism also needs a
    /// read-only tool).
    #[must_use]
    pub fn concurrency_safe(mut self, concurrency_safe: bool) -> Self {
        self.concurrency_safe = concurrency_safe;
        self
    }

    /// Lets the default permission policy run the tool without asking despite a
    /// `network` or `agent` capability (see [`ToolDefinition::auto_allow`]).
    #[must_use]
    pub fn auto_allow(mut self, auto_allow: bool) -> Self {
        self.auto_allow = auto_allow;
        self
    }

    /// Declares the tool idempotent under its idempotency key (see
    /// [`ToolDefinition::idempotent`]).
    #[must_use]
    pub fn idempotent(mut self, idempotent: bool) -> Self {
        self.idempotent = idempotent;
        self
    }

    /// Makes the tool a background tool (see [`ToolDefinition::background`]).
    #[must_use]
    pub fn background(mut self, background: bool) -> Self {
        self.background = background;
        self
    }

    /// Whether old results may be reduced in a run's context view (default keep).
    #[must_use]
    pub fn context_retention(mut self, retention: ContextRetention) -> Self {
        self.context_retention = retention;
        self
    }

    /// Who enforces the deadline (default the runtime); a tool that kills its own
    /// processes on time says [`ToolTimeoutOwner::Tool`].
    #[must_use]
    pub fn timeout_owner(mut self, owner: ToolTimeoutOwner) -> Self {
        self.timeout_owner = owner;
        self
    }

    /// One extra metadata entry.
    #[must_use]
    pub fn metadata(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// Binds a host value to the input field `name` (the Python reference's `preset_kwargs`): the
    /// field disappears from the visible schema, the model may not set it, and every
    /// call receives this value. Checked against the field's schema in
    /// [`TypedToolBuilder::build`].
    #[must_use]
    pub fn preset(mut self, name: impl Into<String>, value: impl Serialize) -> Self {
        let name = name.into();
        let value = serde_json::to_value(value).map_err(|e| e.to_string());
        match self.presets.iter_mut().find(|p| p.name == name) {
            Some(slot) => slot.value = Some(value),
            None => self.presets.push(PresetDecl {
                name,
                check: None,
                value: Some(value),
            }),
        }
        self
    }

    /// Declares a preset of type `T` without a value (what `#[preset]` does).
    #[doc(hidden)]
    #[must_use]
    pub fn declare_preset<T: DeserializeOwned>(mut self, name: &str) -> Self {
        self.presets.push(PresetDecl {
            name: name.to_owned(),
            check: Some(check_as::<T>),
            value: None,
        });
        self
    }

    fn assemble<I: JsonSchema>(self) -> (TypedCore, Vec<PresetBinding>) {
        let mut description = self
            .description
            .filter(|d| !d.trim().is_empty())
            .unwrap_or_else(|| self.name.clone());
        let mut metadata = Map::new();
        if !self.tags.is_empty() {
            metadata.insert("tags".into(), self.tags.into());
        }
        if !self.examples.is_empty() {
            metadata.insert("examples".into(), self.examples.into());
        }
        if let Some(version) = self.version {
            metadata.insert("version".into(), version.into());
        }
        if self.deprecated {
            match &self.deprecation_message {
                Some(message) => description.push_str(&format!("\n\nDeprecated: {message}")),
                None => description.push_str("\n\nDeprecated."),
            }
            metadata.insert("deprecated".into(), true.into());
            if let Some(message) = self.deprecation_message {
                metadata.insert("deprecation_message".into(), message.into());
            }
        }
        metadata.extend(self.metadata);

        let mut schema = schema_for_input::<I>();
        let names: Vec<String> = self.presets.iter().map(|p| p.name.clone()).collect();
        let sub_schemas = split_presets(&mut schema, &names);

        let mut definition = ToolDefinition::new(self.name, description, schema)
            .with_capabilities(self.capabilities)
            .with_aliases(self.aliases)
            .with_deferred(self.deferred)
            .with_auto_allow(self.auto_allow)
            .with_idempotent(self.idempotent)
            .with_background(self.background)
            .with_context_retention(self.context_retention);
        if let Some(group) = self.group {
            definition = definition.with_group(group);
        }
        definition.timeout = self.timeout;
        definition.metadata = metadata;

        let mut bindings = Vec::new();
        let presets = self
            .presets
            .into_iter()
            .zip(sub_schemas)
            .map(|(decl, schema)| {
                if let Some(value) = decl.value {
                    bindings.push((decl.name.clone(), value));
                }
                PresetSlot {
                    name: decl.name,
                    schema,
                    check: decl.check,
                    value: None,
                }
            })
            .collect();
        let core = TypedCore {
            definition,
            presets,
            concurrency_safe: self.concurrency_safe,
            timeout_owner: self.timeout_owner,
        };
        (core, bindings)
    }

    /// The shared core without validation; `#[tool]` checked everything at compile
    /// time, and the registry validates the definition again on registration.
    #[doc(hidden)]
    pub fn into_core<I: JsonSchema>(self) -> TypedCore {
        self.assemble::<I>().0
    }

    /// Finishes the tool with its body: an async closure taking the parsed input and
    /// an owned clone of the call context.
    ///
    /// Fails with [`Error::InvalidDefinition`] when the definition breaks a rule
    /// (name, aliases, a schema whose root is not an object), when a preset names no
    /// input field, or when a preset value does not fit its field.
    pub fn build<I, F, Fut, R>(self, body: F) -> Result<TypedTool<I, F>>
    where
        I: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(I, ToolExecutionContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoToolOutput,
    {
        let (mut core, bindings) = self.assemble::<I>();
        core.definition.validate()?;
        let properties: HashSet<String> = schema_for_input::<I>()
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        for (name, value) in bindings {
            let invalid = |reason: String| Error::InvalidDefinition {
                name: core.definition.name.clone(),
                reason,
            };
            if !properties.contains(&name) {
                return Err(invalid(format!(
                    "preset `{name}` is not a field of the input type"
                )));
            }
            let value = value
                .map_err(|e| invalid(format!("preset `{name}` could not be serialized: {e}")))?;
            core.bind_preset(&name, value)?;
        }
        Ok(TypedTool {
            core,
            body,
            input: PhantomData,
        })
    }
}

/// A tool with an explicit input type and a closure body. Build one with [`TypedTool::builder`].
///
/// The executor calls [`Tool::validate_input`] (the one typed parse into `I`, with the
/// presets merged in: bad input is `INVALID_INPUT` before anything runs), then
/// [`Tool::run`], which hands the parsed `I` to the closure and converts its output
/// with [`IntoToolOutput`].
pub struct TypedTool<I, F> {
    core: TypedCore,
    body: F,
    input: PhantomData<fn() -> I>,
}

impl<I, F> fmt::Debug for TypedTool<I, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypedTool")
            .field("core", &self.core)
            .finish_non_exhaustive()
    }
}

impl<I, F: Clone> Clone for TypedTool<I, F> {
    fn clone(&self) -> Self {
        Self {
            core: self.core.clone(),
            body: self.body.clone(),
            input: PhantomData,
        }
    }
}

impl TypedTool<(), ()> {
    /// Starts a builder for a tool called `name` (checked by
    /// [`TypedToolBuilder::build`]).
    pub fn builder(name: impl Into<String>) -> TypedToolBuilder {
        TypedToolBuilder::new(name)
    }
}

impl<I, F> TypedTool<I, F> {
    /// Binds (or re-binds) a preset after building; see [`TypedToolBuilder::preset`].
    ///
    /// Fails with [`Error::InvalidDefinition`] for an unknown preset name or a value
    /// that does not fit the field's schema.
    pub fn preset(mut self, name: &str, value: impl Serialize) -> Result<Self> {
        self.core.bind_preset(name, value)?;
        Ok(self)
    }

    /// Names of presets that still have no value.
    pub fn unbound_presets(&self) -> Vec<&str> {
        self.core.unbound_presets()
    }
}

impl<I, F, Fut, R> Tool for TypedTool<I, F>
where
    I: DeserializeOwned + Send + Sync + 'static,
    F: Fn(I, ToolExecutionContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R> + Send + 'static,
    R: IntoToolOutput,
{
    fn definition(&self) -> &ToolDefinition {
        self.core.definition()
    }

    fn validate_input(&self, raw: Value) -> std::result::Result<ToolInput, ToolErrorInfo> {
        self.core.validate::<I>(raw)
    }

    fn run<'a>(
        &'a self,
        mut input: ToolInput,
        ctx: &'a ToolExecutionContext,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            // Parsed by `validate_input`; parse here only when `run` is called directly.
            let parsed = match input.take_parsed::<I>() {
                Some(parsed) => Ok(parsed),
                None => self.core.parse::<I>(input.value()),
            };
            match parsed {
                Ok(parsed) => (self.body)(parsed, ctx.clone()).await.into_tool_output(),
                Err(error) => ToolOutput::error(error),
            }
        })
    }

    fn is_concurrency_safe(&self) -> bool {
        self.core.concurrency_safe()
    }

    fn timeout_owner(&self) -> ToolTimeoutOwner {
        self.core.timeout_owner()
    }
}
