//! The YAML `hooks:` list and the factory registry that resolves handler names.
//!
//! ```yaml
//! hooks:
//!   - name: no-rm
//!     event: tool.before
//!     tools: [exec_command]
//!     timeout_seconds: 5
//!     handler: {type: command, command: ./hooks/no-rm.sh}
//!   - name: audit
//!     event: tool.after
//!     handler: {type: factory, factory: "audit:make", options: {level: info}}
//! ```
//!
//! Rust cannot import a module by name the way the Python reference's
//! `{type: python, factory: "module:factory"}` does, so the host registers factories in
//! a [`HookFactoryRegistry`] under any string key (`module:factory` style keeps YAML
//! written for the Python reference working) and `type: python` is accepted as an alias of
//! `type: factory`.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use crate::error::{HookError, HookErrorKind};
use crate::event::HookEventKind;
use crate::registration::{
    DEFAULT_HOOK_TIMEOUT_SECONDS, HookHandler, HookRegistration, MAX_HOOK_TIMEOUT_SECONDS,
    timeout_from_seconds,
};

/// One item of the YAML `hooks:` list.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookSpec {
    /// Non-empty name.
    pub name: String,
    /// `run.started`, `run.finished`, `tool.before` or `tool.after`.
    pub event: String,
    /// How the hook runs.
    pub handler: HandlerSpec,
    /// For tool events: the tools it applies to.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// Deadline in seconds (default 10; positive, at most
    /// [`MAX_HOOK_TIMEOUT_SECONDS`]). A command hook is also capped by the command
    /// service's root `command.timeout_seconds` (default 120): it times out at the
    /// shorter of the two, with a `HOOK_TIMEOUT` naming the limit that applied.
    #[serde(default)]
    pub timeout_seconds: Option<f64>,
}

/// The `handler:` mapping of a hook.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum HandlerSpec {
    /// A shell command; takes no options.
    Command {
        /// The command line, run with `/bin/sh -c`.
        command: String,
    },
    /// An HTTP endpoint the event is POSTed to ([`crate::http::HttpHook`]).
    Http {
        /// `https://…`, or `http://` to this machine only.
        url: String,
        /// Request headers; values may name environment variables as `${NAME}`.
        #[serde(default)]
        headers: BTreeMap<String, String>,
        /// The request's own timeout in seconds (the hook's `timeout_seconds` applies
        /// too; the shorter wins).
        #[serde(default)]
        timeout_seconds: Option<f64>,
    },
    /// A handler built by a factory the host registered by name.
    #[serde(alias = "python")]
    Factory {
        /// The factory key.
        factory: String,
        /// Options passed to the factory.
        #[serde(default)]
        options: Value,
    },
}

/// Builds a handler from its YAML options.
pub type HookFactory = dyn Fn(&Value) -> Result<Arc<dyn HookHandler>, HookError> + Send + Sync;

/// Builds a command handler from its command line (iris-hooks' command hooks, or a
/// test double).
pub type CommandHandlerFactory<'a> = dyn Fn(&str) -> Result<Arc<dyn HookHandler>, HookError> + 'a;

/// Named hook factories the host provides.
///
/// ```
/// use std::sync::Arc;
/// use iris_hooks::config::{HookFactoryRegistry, HookSpec};
/// use iris_hooks::{HookEvent, HookHandler, HookResult};
///
/// let mut factories = HookFactoryRegistry::new();
/// factories.register("audit:make", |_options| {
///     Ok(Arc::new(|_e: HookEvent| async { Ok(HookResult::None) }) as Arc<dyn HookHandler>)
/// });
/// let specs: Vec<HookSpec> = serde_json::from_value(serde_json::json!([
///     {"name": "audit", "event": "tool.after", "handler": {"type": "python", "factory": "audit:make"}}
/// ])).unwrap();
/// let regs = factories.build(&specs, None).unwrap();
/// assert_eq!(regs[0].name, "audit");
/// ```
#[derive(Default)]
pub struct HookFactoryRegistry {
    factories: BTreeMap<String, Arc<HookFactory>>,
}

impl std::fmt::Debug for HookFactoryRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookFactoryRegistry")
            .field("factories", &self.names())
            .finish()
    }
}

impl HookFactoryRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a factory under a key (replacing any previous one).
    pub fn register(
        &mut self,
        key: impl Into<String>,
        factory: impl Fn(&Value) -> Result<Arc<dyn HookHandler>, HookError> + Send + Sync + 'static,
    ) {
        self.factories.insert(key.into(), Arc::new(factory));
    }

    /// Registered keys, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.factories.keys().map(String::as_str).collect()
    }

    /// The first spec whose handler names a factory this registry does not hold: its
    /// index and the factory's name. [`build`](Self::build) fails on that spec with
    /// `HOOK_UNKNOWN_FACTORY`; a host that reports a missing name its own way asks here
    /// first (iris-runner reports `HOST_KEY_UNKNOWN`, as for every YAML key naming host
    /// code).
    ///
    /// ```
    /// use iris_hooks::config::{HookFactoryRegistry, HookSpec};
    ///
    /// let specs: Vec<HookSpec> = serde_json::from_value(serde_json::json!([
    ///     {"name": "log", "event": "tool.after", "handler": {"type": "command", "command": "true"}},
    ///     {"name": "audit", "event": "tool.after", "handler": {"type": "python", "factory": "audit:make"}},
    /// ])).unwrap();
    /// assert_eq!(HookFactoryRegistry::new().unknown_factory(&specs), Some((1, "audit:make")));
    /// ```
    pub fn unknown_factory<'s>(&self, specs: &'s [HookSpec]) -> Option<(usize, &'s str)> {
        specs
            .iter()
            .enumerate()
            .find_map(|(i, spec)| match &spec.handler {
                HandlerSpec::Factory { factory, .. } if !self.factories.contains_key(factory) => {
                    Some((i, factory.as_str()))
                }
                _ => None,
            })
    }

    /// Turns YAML specs into registrations, in order. `commands` builds command
    /// handlers; without it a command hook is a configuration error.
    pub fn build(
        &self,
        specs: &[HookSpec],
        commands: Option<&CommandHandlerFactory<'_>>,
    ) -> Result<Vec<HookRegistration>, HookError> {
        specs
            .iter()
            .enumerate()
            .map(|(i, spec)| self.build_one(i, spec, commands))
            .collect()
    }

    fn build_one(
        &self,
        index: usize,
        spec: &HookSpec,
        commands: Option<&CommandHandlerFactory<'_>>,
    ) -> Result<HookRegistration, HookError> {
        let at = |msg: String| {
            HookError::new(
                HookErrorKind::InvalidConfig,
                format!("hooks[{index}] (`{}`): {msg}", spec.name),
            )
        };
        // Checked before any handler is built, so a bad timeout starts nothing.
        let timeout_seconds = spec.timeout_seconds.unwrap_or(DEFAULT_HOOK_TIMEOUT_SECONDS);
        if timeout_from_seconds(timeout_seconds).is_none() {
            return Err(at(format!(
                "`timeout_seconds` must be a positive number of seconds no larger than \
                 {MAX_HOOK_TIMEOUT_SECONDS:e}, got {timeout_seconds:?}"
            )));
        }
        let event = HookEventKind::parse(&spec.event).ok_or_else(|| {
            at(format!(
                "unknown event `{}`; expected run.started, run.finished, tool.before or tool.after",
                spec.event
            ))
        })?;
        let handler: Arc<dyn HookHandler> = match &spec.handler {
            HandlerSpec::Command { command } => {
                if command.trim().is_empty() {
                    return Err(at("handler.command must not be empty".into()));
                }
                let make = commands
                    .ok_or_else(|| at("command hooks are not available in this host".into()))?;
                make(command).map_err(|e| at(e.message))?
            }
            HandlerSpec::Http {
                url,
                headers,
                timeout_seconds,
            } => Arc::new(
                crate::http::HttpHook::new(url, headers, *timeout_seconds)
                    .map_err(|e| at(e.message))?,
            ),
            HandlerSpec::Factory { factory, options } => {
                let make = self.factories.get(factory).ok_or_else(|| {
                    HookError::new(
                        HookErrorKind::UnknownFactory,
                        format!(
                            "hooks[{index}] (`{}`): no hook factory named `{factory}`; registered: [{}]",
                            spec.name,
                            self.names().join(", ")
                        ),
                    )
                })?;
                make(options)
                    .map_err(|e| at(format!("factory `{factory}` failed: {}", e.message)))?
            }
        };
        let reg = HookRegistration::builder_shared(event, spec.name.clone(), handler)
            .timeout_seconds(timeout_seconds);
        let reg = match &spec.tools {
            Some(tools) => reg.tools(tools.iter().cloned()),
            None => reg,
        };
        reg.build().map_err(|e| at(e.message))
    }
}
