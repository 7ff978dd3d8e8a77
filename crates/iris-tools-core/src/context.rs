//! [`ToolExecutionContext`] and [`CancellationSignal`]: what a running call knows.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::Notify;

use crate::error::{ToolErrorInfo, codes};
use crate::result::ToolOutput;
use crate::tool::BoxFuture;

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
            let mut notified = std::pin::pin!(notified);
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

/// A type-keyed map for state that layers attach to a context without core knowing
/// their types: the file service's read observations, a command binding, the
/// discovery layer's disclosure state, stop handles.
///
/// Cloning is cheap (the map is shared until the next insert), since every call's
/// context is a clone of the caller's.
///
/// ```
/// use iris_tools_core::Extensions;
///
/// #[derive(Debug, PartialEq)]
/// struct ReadState(u32);
///
/// let mut ext = Extensions::default();
/// ext.insert(ReadState(7));
/// let copy = ext.clone();
/// assert_eq!(copy.get::<ReadState>(), Some(&ReadState(7)));
/// assert!(copy.get::<String>().is_none());
/// let mut without = copy.clone();
/// without.remove::<ReadState>();
/// assert!(without.get::<ReadState>().is_none());
/// assert!(copy.get::<ReadState>().is_some(), "the clone keeps it");
/// ```
#[derive(Clone, Default)]
pub struct Extensions {
    map: Arc<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
}

impl Extensions {
    /// Stores a value, replacing any of the same type.
    pub fn insert<T: Any + Send + Sync>(&mut self, value: T) {
        self.insert_arc(Arc::new(value));
    }

    /// Stores a shared value, replacing any of the same type.
    pub fn insert_arc<T: Any + Send + Sync>(&mut self, value: Arc<T>) {
        Arc::make_mut(&mut self.map).insert(TypeId::of::<T>(), value);
    }

    /// The shared value of type `T`, when one is stored.
    pub fn get_arc<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        self.map
            .get(&TypeId::of::<T>())
            .and_then(|v| Arc::clone(v).downcast::<T>().ok())
    }

    /// Borrows a value by type.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.map
            .get(&TypeId::of::<T>())
            .and_then(|v| v.downcast_ref())
    }

    /// Removes the value of type `T`, when one is stored (a layer that must not pass
    /// an extension on to the work it starts).
    pub fn remove<T: Any + Send + Sync>(&mut self) {
        if self.map.contains_key(&TypeId::of::<T>()) {
            Arc::make_mut(&mut self.map).remove(&TypeId::of::<T>());
        }
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

/// What one call runs with: the workspace, identities, cancellation, deadline and the
/// layers' typed [`Extensions`].
///
/// ```
/// use std::time::Duration;
/// use iris_tools_core::ToolExecutionContext;
/// let ctx = ToolExecutionContext::new("/srv/workspace")
///     .session_id("s-1")
///     .agent_id("main")
///     .tool_timeout(Duration::from_secs(20));
/// assert_eq!(ctx.session_id, "s-1");
/// assert_eq!(ctx.tool_timeout, Some(Duration::from_secs(20)));
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ToolExecutionContext {
    /// The agent workspace; every path is confined to it.
    pub workspace_root: PathBuf,
    /// The current call id (set by the executor for each call).
    pub call_id: String,
    /// The current canonical tool name (set by the executor for each call).
    pub tool_name: String,
    /// The call this one runs inside, when a tool makes calls of its own through the
    /// executor (a `run_tool_script` program's inner calls); hooks see it.
    pub parent_call_id: Option<String>,
    /// Session id; also names the artifact directory.
    pub session_id: String,
    /// Agent id.
    pub agent_id: String,
    /// Run id, when a runner drives the call.
    pub run_id: String,
    /// Activation id (one model step), when a runner drives the call.
    pub activation_id: String,
    /// Free-form metadata.
    pub metadata: Map<String, Value>,
    /// Cancellation for the run.
    pub cancellation: Option<CancellationSignal>,
    /// Runtime deadline for one call. Inside a call, the executor sets it to the
    /// call's effective deadline; a zero deadline has already passed.
    pub tool_timeout: Option<Duration>,
    /// Typed state layers attach (read observations, command binding, disclosure).
    pub extensions: Extensions,
}

impl ToolExecutionContext {
    /// A context for a workspace, every other field at its default.
    pub fn new(workspace_root: impl Into<PathBuf>) -> Self {
        Self {
            workspace_root: workspace_root.into(),
            call_id: String::new(),
            tool_name: String::new(),
            parent_call_id: None,
            session_id: String::new(),
            agent_id: String::new(),
            run_id: String::new(),
            activation_id: String::new(),
            metadata: Map::new(),
            cancellation: None,
            tool_timeout: None,
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

    /// Sets the activation id (one model step).
    #[must_use]
    pub fn activation_id(mut self, id: impl Into<String>) -> Self {
        self.activation_id = id.into();
        self
    }

    /// The key an idempotent tool uses to make a repeated run of the same call a
    /// no-op: `<run_id>:<call_id>`, the same in every attempt of one call of one run
    /// (a durable run re-runs a call a crash left in doubt with the same key). Empty
    /// run or call ids give an empty part (`:call_1` outside a runner).
    ///
    /// ```
    /// use iris_tools_core::ToolExecutionContext;
    /// let mut ctx = ToolExecutionContext::new("/srv/ws").run_id("run_1");
    /// ctx.call_id = "call_7".into();
    /// assert_eq!(ctx.idempotency_key(), "run_1:call_7");
    /// ```
    pub fn idempotency_key(&self) -> String {
        format!("{}:{}", self.run_id, self.call_id)
    }

    /// Attaches a cancellation signal.
    #[must_use]
    pub fn cancellation(mut self, signal: CancellationSignal) -> Self {
        self.cancellation = Some(signal);
        self
    }

    /// Sets the runtime per-call deadline.
    #[must_use]
    pub fn tool_timeout(mut self, timeout: Duration) -> Self {
        self.tool_timeout = Some(timeout);
        self
    }

    /// Attaches a typed extension (see [`Extensions`]).
    #[must_use]
    pub fn with_extension<T: Any + Send + Sync>(mut self, value: T) -> Self {
        self.extensions.insert(value);
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

/// The rest of a call that a tool hands to its host to finish in the background
/// (see [`BackgroundHandoff`]): the call answers with a receipt now, and `work`'s
/// output is the call's real result, delivered later.
#[non_exhaustive]
pub struct BackgroundWork {
    /// The call the work belongs to (the context's `call_id`).
    pub call_id: String,
    /// The call's canonical tool name (the context's `tool_name`).
    pub tool_name: String,
    /// What the work follows, as JSON a host can persist and hand back to the tool's
    /// layer to follow it again after a restart (an MCP task's server, tool and task
    /// id); `None` when the work cannot be re-attached.
    pub reference: Option<Value>,
    /// The work; it resolves to the call's final output. It watches the context's
    /// cancellation itself (nothing races it), and dropping it abandons the work.
    pub work: BoxFuture<'static, ToolOutput>,
}

impl BackgroundWork {
    /// Work for call `call_id` of `tool_name`.
    pub fn new(
        call_id: impl Into<String>,
        tool_name: impl Into<String>,
        reference: Option<Value>,
        work: BoxFuture<'static, ToolOutput>,
    ) -> Self {
        Self {
            call_id: call_id.into(),
            tool_name: tool_name.into(),
            reference,
            work,
        }
    }
}

impl std::fmt::Debug for BackgroundWork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackgroundWork")
            .field("call_id", &self.call_id)
            .field("tool_name", &self.tool_name)
            .field("reference", &self.reference)
            .finish_non_exhaustive()
    }
}

/// A host that takes background work, put into [`ToolExecutionContext::extensions`]
/// by a run loop: a tool that learns mid-call that its work will go on for long (an
/// MCP server that made the call a task) hands the rest to it and answers with a
/// receipt. Without one (a call made on its own, outside a run loop) the tool
/// finishes the work within the call.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use iris_tools_core::{
///     BackgroundHandoff, BackgroundWork, CancellationSignal, ToolExecutionContext, ToolOutput,
/// };
/// let taken = Arc::new(Mutex::new(Vec::new()));
/// let sink = Arc::clone(&taken);
/// let handoff = BackgroundHandoff::new(CancellationSignal::new(), move |work: BackgroundWork| {
///     sink.lock().unwrap().push(work);
///     Ok(())
/// });
/// let ctx = ToolExecutionContext::new("/srv/ws").with_extension(handoff);
/// let work = BackgroundWork::new("c1", "slow", None, Box::pin(async { ToolOutput::text("done") }));
/// assert!(ctx.extensions.get::<BackgroundHandoff>().unwrap().hand_off(work).is_ok());
/// assert_eq!(taken.lock().unwrap()[0].call_id, "c1");
/// ```
#[derive(Clone)]
pub struct BackgroundHandoff {
    take: Arc<HandoffFn>,
    cancellation: CancellationSignal,
}

type HandoffFn = dyn Fn(BackgroundWork) -> Result<(), BackgroundWork> + Send + Sync;

impl BackgroundHandoff {
    /// A host calling `take` with each piece of work; `take` gives the work back
    /// (`Err`) when it cannot take it, and the tool then finishes it in the call.
    /// `cancellation` is what the host cancels when it gives its background work up
    /// (the run was cancelled, or ended without waiting for it).
    pub fn new(
        cancellation: CancellationSignal,
        take: impl Fn(BackgroundWork) -> Result<(), BackgroundWork> + Send + Sync + 'static,
    ) -> Self {
        Self {
            take: Arc::new(take),
            cancellation,
        }
    }

    /// Hands `work` to the host: `Err(work)` when the host did not take it.
    pub fn hand_off(&self, work: BackgroundWork) -> Result<(), BackgroundWork> {
        (self.take)(work)
    }

    /// The signal background work watches instead of its call's: the host cancels
    /// it when it gives the work up. A process that dies cancels nothing, so work a
    /// server keeps (an MCP task) outlives it and can be followed again.
    pub fn cancellation(&self) -> &CancellationSignal {
        &self.cancellation
    }
}

impl std::fmt::Debug for BackgroundHandoff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackgroundHandoff").finish_non_exhaustive()
    }
}
