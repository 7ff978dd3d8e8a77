//! [`ToolRegistry`] holds tool objects; [`ToolRegistryView`] filters a read-only scope.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, PoisonError, RwLock};

use crate::definition::ToolDefinition;
use crate::error::{Error, Result};
use crate::spec::ToolSpec;
use crate::tool::Tool;

#[derive(Default)]
struct Inner {
    /// Tools in registration order.
    tools: Vec<Arc<dyn Tool>>,
    /// Canonical name or alias → index into `tools`.
    names: HashMap<String, usize>,
}

/// The full set of tool objects, shared by clones (`Arc` inside).
///
/// ```
/// use iris_tools_core::{ToolRegistry, ToolDefinition, FnTool, ToolOutput};
/// use serde_json::json;
///
/// let registry = ToolRegistry::new();
/// let def = ToolDefinition::new("ping", "Answer pong.", json!({"type": "object"}))
///     .with_aliases(["p"]);
/// registry.register(FnTool::new(def, |_input, _ctx| async { ToolOutput::text("pong") })).unwrap();
/// assert_eq!(registry.get("p").unwrap().definition().name, "ping");
/// assert_eq!(registry.get("nope").unwrap_err().code(), "TOOL_NOT_FOUND");
/// ```
#[derive(Clone, Default)]
pub struct ToolRegistry {
    inner: Arc<RwLock<Inner>>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("tools", &self.names())
            .finish()
    }
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        // A panic while holding the lock cannot leave `Inner` half-updated: every
        // mutation is prepared first and published in one step.
        self.inner.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers one tool after validating its definition.
    pub fn register(&self, tool: impl Tool) -> Result<()> {
        self.register_many([Arc::new(tool) as Arc<dyn Tool>])
    }

    /// Registers an already shared tool.
    pub fn register_arc(&self, tool: Arc<dyn Tool>) -> Result<()> {
        self.register_many([tool])
    }

    /// Registers several tools all-or-nothing: every definition and every name and
    /// alias is checked first (against the registry and each other); only then are
    /// all published. On error the registry is unchanged.
    pub fn register_many(&self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Result<()> {
        let tools: Vec<Arc<dyn Tool>> = tools.into_iter().collect();
        let mut inner = self.write();
        let mut pending: HashMap<String, String> = HashMap::new();
        for tool in &tools {
            let def = tool.definition();
            def.validate()?;
            let mut names = vec![(def.name.clone(), format!("tool `{}`", def.name))];
            names.extend(
                def.aliases
                    .iter()
                    .map(|a| (a.clone(), format!("alias of `{}`", def.name))),
            );
            for (name, what) in names {
                if let Some(&idx) = inner.names.get(&name) {
                    let holder = &inner.tools[idx].definition().name;
                    let existing = if holder == &name {
                        format!("tool `{holder}`")
                    } else {
                        format!("alias of `{holder}`")
                    };
                    return Err(Error::Conflict { name, existing });
                }
                if let Some(existing) = pending.get(&name) {
                    return Err(Error::Conflict {
                        name,
                        existing: existing.clone(),
                    });
                }
                pending.insert(name, what);
            }
        }
        for tool in tools {
            let idx = inner.tools.len();
            let def = tool.definition();
            inner.names.insert(def.name.clone(), idx);
            for alias in &def.aliases {
                inner.names.insert(alias.clone(), idx);
            }
            inner.tools.push(tool);
        }
        Ok(())
    }

    /// Looks a tool up by canonical name or alias.
    pub fn get(&self, name_or_alias: &str) -> Result<Arc<dyn Tool>> {
        let inner = self.read();
        inner
            .names
            .get(name_or_alias)
            .map(|&i| Arc::clone(&inner.tools[i]))
            .ok_or_else(|| Error::NotFound(name_or_alias.to_owned()))
    }

    /// Whether a name or alias is registered.
    pub fn contains(&self, name_or_alias: &str) -> bool {
        self.read().names.contains_key(name_or_alias)
    }

    /// Canonical names in registration order.
    pub fn names(&self) -> Vec<String> {
        self.read()
            .tools
            .iter()
            .map(|t| t.definition().name.clone())
            .collect()
    }

    /// Every tool in registration order.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.read().tools.clone()
    }

    /// Number of registered tools.
    pub fn len(&self) -> usize {
        self.read().tools.len()
    }

    /// Whether the registry is empty.
    pub fn is_empty(&self) -> bool {
        self.read().tools.is_empty()
    }

    /// A read-only filtered view.
    pub fn view(&self, filter: ViewFilter) -> ToolRegistryView {
        ToolRegistryView {
            registry: self.clone(),
            filter,
        }
    }
}

/// The filters of a [`ToolRegistryView`], on canonical names.
///
/// Order: `deny` first, then `include_groups` limits, then `allow` may admit tools
/// outside the groups and activates deferred ones. `system_use` tools stay hidden
/// unless `include_system` is set or they are allowed by name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ViewFilter {
    /// Groups in scope; `None` means every group.
    pub include_groups: Option<BTreeSet<String>>,
    /// Names admitted outside the groups and activated when deferred.
    pub allow: BTreeSet<String>,
    /// Names never in scope.
    pub deny: BTreeSet<String>,
    /// Whether `system_use` tools are listed.
    pub include_system: bool,
}

impl ViewFilter {
    /// Limits the view to these groups.
    #[must_use]
    pub fn groups<S: Into<String>>(mut self, groups: impl IntoIterator<Item = S>) -> Self {
        self.include_groups = Some(groups.into_iter().map(Into::into).collect());
        self
    }

    /// Admits and activates these names.
    #[must_use]
    pub fn allow<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.allow.extend(names.into_iter().map(Into::into));
        self
    }

    /// Excludes these names.
    #[must_use]
    pub fn deny<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.deny.extend(names.into_iter().map(Into::into));
        self
    }

    /// Lists `system_use` tools too.
    #[must_use]
    pub fn include_system(mut self, yes: bool) -> Self {
        self.include_system = yes;
        self
    }

    fn admits(&self, def: &ToolDefinition) -> bool {
        if self.deny.contains(&def.name) {
            return false;
        }
        let allowed = self.allow.contains(&def.name);
        if def.system_use && !self.include_system && !allowed {
            return false;
        }
        match &self.include_groups {
            Some(groups) if !groups.contains(&def.group) => allowed,
            _ => true,
        }
    }

    fn activates(&self, def: &ToolDefinition) -> bool {
        !def.deferred || self.allow.contains(&def.name)
    }
}

/// A read-only filtered scope of a registry. It reads the registry live, so tools
/// registered later (for example by MCP) appear when they pass the filter.
#[derive(Debug, Clone)]
pub struct ToolRegistryView {
    registry: ToolRegistry,
    filter: ViewFilter,
}

impl ToolRegistryView {
    /// The filter in force.
    pub fn filter(&self) -> &ViewFilter {
        &self.filter
    }

    /// Delegates to the registry's lookup. Not an authorization check.
    pub fn get(&self, name_or_alias: &str) -> Result<Arc<dyn Tool>> {
        self.registry.get(name_or_alias)
    }

    /// Every tool in static scope, deferred included, in registration order.
    pub fn available_tools(&self) -> Vec<Arc<dyn Tool>> {
        let inner = self.registry.read();
        inner
            .tools
            .iter()
            .filter(|t| self.filter.admits(t.definition()))
            .cloned()
            .collect()
    }

    /// The available tools that are eager or explicitly allowed.
    pub fn active_tools(&self) -> Vec<Arc<dyn Tool>> {
        self.available_tools()
            .into_iter()
            .filter(|t| self.filter.activates(t.definition()))
            .collect()
    }

    /// Whether a canonical name is in static scope.
    pub fn is_available(&self, name: &str) -> bool {
        self.registry
            .get(name)
            .is_ok_and(|t| t.definition().name == name && self.filter.admits(t.definition()))
    }

    /// Provider-neutral specs of the active tools.
    pub fn active_specs(&self) -> Vec<ToolSpec> {
        self.active_tools()
            .iter()
            .map(|t| t.definition().to_spec())
            .collect()
    }

    /// Specs of the named available tools, in registration order (not argument
    /// order); unknown or out-of-scope names are skipped.
    pub fn specs_for<S: AsRef<str>>(&self, names: &[S]) -> Vec<ToolSpec> {
        let wanted: BTreeSet<&str> = names.iter().map(AsRef::as_ref).collect();
        self.available_tools()
            .iter()
            .map(|t| t.definition())
            .filter(|d| wanted.contains(d.name.as_str()))
            .map(ToolDefinition::to_spec)
            .collect()
    }
}
