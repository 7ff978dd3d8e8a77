//! [`HostRegistry`]: what the host program offers the YAML by name.
//!
//! The Python reference imports `module:function` strings. Rust cannot, so the host
//! registers each tool, registrar, middleware factory and hook factory under such a key
//! and the YAML (`tools.host.functions`, `tools.host.registrars`,
//! `middleware.tools[].factory`, `hooks[].handler.factory`) refers to it.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use iris_decision::DecisionEvaluator;
use iris_executor::ToolMiddleware;
use iris_hooks::config::HookFactoryRegistry;
use iris_hooks::{HookError, HookHandler};
use iris_tools_core::{Tool, ToolRegistry};
use serde_json::Value;

/// Builds one tool for `tools.host.functions`.
pub type FunctionFactory = dyn Fn() -> Arc<dyn Tool> + Send + Sync;
/// Registers any number of tools for `tools.host.registrars`.
pub type Registrar = dyn Fn(&ToolRegistry) -> Result<(), String> + Send + Sync;
/// Builds a middleware from its YAML options for `middleware.tools`.
pub type MiddlewareFactory =
    dyn Fn(&Value) -> Result<Arc<dyn ToolMiddleware>, String> + Send + Sync;

/// Named tools, registrars and factories the YAML may refer to.
///
/// ```
/// use std::sync::Arc;
/// use iris_runner::HostRegistry;
/// use iris_tools_core::{FnTool, ToolDefinition, ToolOutput};
/// use serde_json::json;
///
/// let host = HostRegistry::new().function("app.tools:greet", || {
///     let def = ToolDefinition::new("greet_user", "Greet the user by name.", json!({"type": "object"}));
///     Arc::new(FnTool::new(def, |_input, _ctx| async { ToolOutput::text("hello") }))
/// });
/// assert_eq!(host.function_keys(), vec!["app.tools:greet"]);
/// ```
#[derive(Default, Clone)]
pub struct HostRegistry {
    functions: BTreeMap<String, Arc<FunctionFactory>>,
    registrars: BTreeMap<String, Arc<Registrar>>,
    middleware: BTreeMap<String, Arc<MiddlewareFactory>>,
    hooks: BTreeMap<String, Arc<HookFactory>>,
    decision_evaluator: Option<Arc<dyn DecisionEvaluator>>,
}

/// Builds a hook handler from its YAML options for `hooks[].handler.factory`.
pub type HookFactory = dyn Fn(&Value) -> Result<Arc<dyn HookHandler>, HookError> + Send + Sync;

impl fmt::Debug for HostRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostRegistry")
            .field("functions", &self.function_keys())
            .field("registrars", &self.registrar_keys())
            .field("middleware", &self.middleware_keys())
            .field("hooks", &self.hook_keys())
            .field("decision_evaluator", &self.decision_evaluator.is_some())
            .finish()
    }
}

impl HostRegistry {
    /// An empty registry: the YAML can then use built-ins, command hooks, skills and
    /// everything else that needs no host code.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a tool under `key` for `tools.host.functions`.
    #[must_use]
    pub fn function(
        mut self,
        key: impl Into<String>,
        make: impl Fn() -> Arc<dyn Tool> + Send + Sync + 'static,
    ) -> Self {
        self.functions.insert(key.into(), Arc::new(make));
        self
    }

    /// Registers a registrar under `key` for `tools.host.registrars`.
    #[must_use]
    pub fn registrar(
        mut self,
        key: impl Into<String>,
        register: impl Fn(&ToolRegistry) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.registrars.insert(key.into(), Arc::new(register));
        self
    }

    /// Registers a middleware factory under `key` for `middleware.tools[].factory`.
    #[must_use]
    pub fn middleware(
        mut self,
        key: impl Into<String>,
        make: impl Fn(&Value) -> Result<Arc<dyn ToolMiddleware>, String> + Send + Sync + 'static,
    ) -> Self {
        self.middleware.insert(key.into(), Arc::new(make));
        self
    }

    /// Registers a hook factory under `key` for `hooks[].handler` of type `python` /
    /// `factory`.
    #[must_use]
    pub fn hook(
        mut self,
        key: impl Into<String>,
        make: impl Fn(&Value) -> Result<Arc<dyn HookHandler>, HookError> + Send + Sync + 'static,
    ) -> Self {
        self.hooks.insert(key.into(), Arc::new(make));
        self
    }

    /// Injects the evaluator that answers `tool_search` when `decision.tools.discovery`
    /// is on, instead of a `JevClient` built from `provider_api_keys.typesafe`. It stays
    /// the host's: [`crate::ToolEnvironment::close`] never closes it, so one evaluator
    /// can serve many environments.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use iris_decision::JevClient;
    /// use iris_runner::HostRegistry;
    ///
    /// let host = HostRegistry::new().decision_evaluator(Arc::new(JevClient::new("host-key")?));
    /// assert!(format!("{host:?}").contains("decision_evaluator: true"));
    /// # Ok::<(), iris_decision::Error>(())
    /// ```
    #[must_use]
    pub fn decision_evaluator(mut self, evaluator: Arc<dyn DecisionEvaluator>) -> Self {
        self.decision_evaluator = Some(evaluator);
        self
    }

    /// Registered function keys, sorted.
    pub fn function_keys(&self) -> Vec<&str> {
        self.functions.keys().map(String::as_str).collect()
    }

    /// Registered registrar keys, sorted.
    pub fn registrar_keys(&self) -> Vec<&str> {
        self.registrars.keys().map(String::as_str).collect()
    }

    /// Registered middleware factory keys, sorted.
    pub fn middleware_keys(&self) -> Vec<&str> {
        self.middleware.keys().map(String::as_str).collect()
    }

    /// Registered hook factory keys, sorted.
    pub fn hook_keys(&self) -> Vec<&str> {
        self.hooks.keys().map(String::as_str).collect()
    }

    pub(crate) fn get_function(&self, key: &str) -> Option<&Arc<FunctionFactory>> {
        self.functions.get(key)
    }

    pub(crate) fn get_registrar(&self, key: &str) -> Option<&Arc<Registrar>> {
        self.registrars.get(key)
    }

    pub(crate) fn get_decision_evaluator(&self) -> Option<&Arc<dyn DecisionEvaluator>> {
        self.decision_evaluator.as_ref()
    }

    pub(crate) fn get_middleware(&self, key: &str) -> Option<&Arc<MiddlewareFactory>> {
        self.middleware.get(key)
    }

    /// iris-hooks' factory registry holding every hook factory.
    pub(crate) fn hook_factories(&self) -> HookFactoryRegistry {
        let mut registry = HookFactoryRegistry::new();
        for (key, make) in &self.hooks {
            let make = Arc::clone(make);
            registry.register(key.clone(), move |options: &Value| make(options));
        }
        registry
    }
}
