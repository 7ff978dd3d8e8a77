//! [`ToolExecutionContext`] and [`CancellationSignal`]: what a running call knows.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Map, Value};
use tokio::sync::Notify;

use crate::error::{ToolErrorInfo, codes};

/// A cooperative cancellation flag shared by the host and running calls.
///
/// Cloning shares the flag. The executor races every body against
/// [`CancellationSignal::cancelled`], so a body that never checks is still dropped.
///
/// ```
/// use iris_tools_core::CancellationSignal;
/// let signal = CancellationSignal::new();
/// assert!(!signal.requested());
/// signal.cancel();
/// assert!(signal.requested());
/// assert_eq!(signal.raise_if_requested().unwrap_err().code, "CANCELLED");
/// ```
#[derive(Debug, Clone, Default)]
pub struct CancellationSignal {
    inner: Arc<CancelInner>,
}

#[derive(Debug, Default)]
struct CancelInner {
    flag: AtomicBool,
    notify: Notify,
}

impl CancellationSignal {
    /// A fresh, un-cancelled signal.
    pub fn new() -> Self {
        Self::default()
    }

    /// Requests cancellation; wakes every waiter. Idempotent.
    pub fn cancel(&self) {
        self.inner.flag.store(true, Ordering::SeqCst);
        self.inner.notify.notify_waiters();
    }

    /// Whether cancellation was requested.
    pub fn requested(&self) -> bool {
        self.inner.flag.load(Ordering::SeqCst)
    }

    /// `Err(CANCELLED)` once cancellation was requested.
    pub fn raise_if_requested(&self) -> Result<(), ToolErrorInfo> {
        if self.requested() {
            Err(ToolErrorInfo::new(
                codes::CANCELLED,
                "the call was cancelled",
            ))
        } else {
            Ok(())
        }
    }

    /// Completes when cancellation is requested (immediately if it already was).
    pub async fn cancelled(&self) {
        loop {
            let notified = self.inner.notify.notified();
            tokio::pin!(notified);
            // Register before checking the flag so a cancel between the check and
            // the await is not missed.
            notified.as_mut().enable();
            if self.requested() {
                return;
            }
            notified.await;
        }
    }
}

/// A type-keyed map for internal control slots (command bindings, stop handles, …)
/// that layers attach to a context without core knowing their types.
#[derive(Clone, Default)]
pub struct Extensions {
    map: HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
}

impl Extensions {
    /// Stores a value, replacing any of the same type.
    pub fn insert<T: Any + Send + Sync>(&mut self, value: T) {
        self.map.insert(TypeId::of::<T>(), Arc::new(value));
    }

    /// Borrows a value by type.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.map
            .get(&TypeId::of::<T>())
            .and_then(|v| v.downcast_ref())
    }

    /// Number of stored values.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether no value is stored.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

impl std::fmt::Debug for Extensions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Extensions")
            .field("len", &self.map.len())
            .finish()
    }
}

/// What one call runs with: the workspace, identities, permission mode, read state,
/// cancellation and deadline.
///
/// ```
/// use iris_tools_core::ToolExecutionContext;
/// let ctx = ToolExecutionContext::new("/srv/workspace").session_id("s-1").agent_id("main");
/// assert_eq!(ctx.permission_mode, "default");
/// assert_eq!(ctx.session_id, "s-1");
/// ```
#[derive(Debug, Clone)]
pub struct ToolExecutionContext {
    /// The agent workspace; every path is confined to it.
    pub workspace_root: PathBuf,
    /// The current call id (set by the executor for each call).
    pub call_id: String,
    /// The current canonical tool name (set by the executor for each call).
    pub tool_name: String,
    /// Session id; also names the artifact directory.
    pub session_id: String,
    /// Agent id.
    pub agent_id: String,
    /// Run id, when a runner drives the call.
    pub run_id: String,
    /// Activation id (one model step), when a runner drives the call.
    pub activation_id: String,
    /// Permission mode, `"default"` unless the host says otherwise.
    pub permission_mode: String,
    /// Free-form metadata.
    pub metadata: Map<String, Value>,
    /// The file service's read observations for this session (owned by iris-files).
    pub read_state: Option<Arc<dyn Any + Send + Sync>>,
    /// Cancellation for the run.
    pub cancellation: Option<CancellationSignal>,
    /// Runtime deadline for one call, in seconds.
    pub tool_timeout_seconds: Option<f64>,
    /// Internal control slots.
    pub extensions: Extensions,
}

impl ToolExecutionContext {
    /// A context for a workspace, every other field at its default.
    pub fn new(workspace_root: impl Into<PathBuf>) -> Self {
        Self {
            workspace_root: workspace_root.into(),
            call_id: String::new(),
            tool_name: String::new(),
            session_id: String::new(),
            agent_id: String::new(),
            run_id: String::new(),
            activation_id: String::new(),
            permission_mode: "default".to_owned(),
            metadata: Map::new(),
            read_state: None,
            cancellation: None,
            tool_timeout_seconds: None,
            extensions: Extensions::default(),
        }
    }

    /// Sets the session id.
    #[must_use]
    pub fn session_id(mut self, id: impl Into<String>) -> Self {
        self.session_id = id.into();
        self
    }

    /// Sets the agent id.
    #[must_use]
    pub fn agent_id(mut self, id: impl Into<String>) -> Self {
        self.agent_id = id.into();
        self
    }

    /// Sets the run id.
    #[must_use]
    pub fn run_id(mut self, id: impl Into<String>) -> Self {
        self.run_id = id.into();
        self
    }

    /// Sets the permission mode.
    #[must_use]
    pub fn permission_mode(mut self, mode: impl Into<String>) -> Self {
        self.permission_mode = mode.into();
        self
    }

    /// Attaches a cancellation signal.
    #[must_use]
    pub fn cancellation(mut self, signal: CancellationSignal) -> Self {
        self.cancellation = Some(signal);
        self
    }

    /// Sets the runtime per-call deadline in seconds.
    #[must_use]
    pub fn tool_timeout_seconds(mut self, seconds: f64) -> Self {
        self.tool_timeout_seconds = Some(seconds);
        self
    }

    /// Attaches read state.
    #[must_use]
    pub fn read_state(mut self, state: Arc<dyn Any + Send + Sync>) -> Self {
        self.read_state = Some(state);
        self
    }

    /// The workspace root.
    pub fn workspace(&self) -> &Path {
        &self.workspace_root
    }

    /// Whether cancellation was requested.
    pub fn cancel_requested(&self) -> bool {
        self.cancellation
            .as_ref()
            .is_some_and(CancellationSignal::requested)
    }
}
