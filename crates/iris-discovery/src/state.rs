//! [`DisclosureState`]: which deferred tools a session revealed, and which of them the
//! current request actually loaded.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use iris_tools_core::ToolExecutionContext;
use iris_tools_core::ToolRegistryView;
use iris_tools_core::ToolSpec;

/// How many characters of revealed tools' specs one request may carry.
///
/// A revealed deferred tool costs the length, in characters, of its serialized
/// [`ToolSpec`] (name, description and input schema: what the provider request
/// carries for it). Active tools are not charged: they are sent on every request
/// whatever discovery does.
///
/// ```
/// use iris_discovery::SchemaBudget;
/// assert_eq!(SchemaBudget::chars(20_000).max_chars(), 20_000);
/// assert_eq!(SchemaBudget::UNLIMITED.max_chars(), usize::MAX);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchemaBudget(usize);

impl SchemaBudget {
    /// No limit.
    pub const UNLIMITED: SchemaBudget = SchemaBudget(usize::MAX);

    /// At most `max_chars` characters of revealed specs per request.
    pub const fn chars(max_chars: usize) -> Self {
        Self(max_chars)
    }

    /// The limit in characters.
    pub const fn max_chars(self) -> usize {
        self.0
    }
}

/// What [`DisclosureState::request_specs`] decided for one model request.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RequestSpecs {
    /// The specs to send: active tools plus the revealed deferred tools that fit, in
    /// registration order (a stable order keeps provider prompt caches warm).
    pub specs: Vec<ToolSpec>,
    /// Revealed deferred tools whose full spec is in `specs`, in reveal order.
    pub loaded: Vec<String>,
    /// Revealed deferred tools that did not fit the budget: they stay unloaded (and
    /// uncallable) for this request, in reveal order.
    pub over_budget: Vec<String>,
    /// Revealed tools no longer in the view's static scope, in reveal order.
    pub unavailable: Vec<String>,
    /// Characters of revealed specs sent.
    pub revealed_chars: usize,
}

#[derive(Debug, Default)]
struct Inner {
    /// Revealed names in order of first reveal.
    revealed: Vec<String>,
    /// Every name whose full spec the last request carried.
    loaded: BTreeSet<String>,
}

/// Per-session disclosure state: the deferred tools `tool_search` revealed, and the
/// tools whose full schema the current request carries.
///
/// Cheap to clone; clones share one state (`Arc<Mutex<_>>`). A runtime creates one per
/// session and attaches it to the execution context
/// ([`DisclosureState::attach`]). Then:
///
/// 1. only the executor adds revealed tools, and only from a real `tool_search` body
///    (see the crate docs);
/// 2. before each model request the runtime calls [`DisclosureState::request_specs`]:
///    active specs plus revealed deferred specs within a budget; those become the
///    loaded set;
/// 3. the executor refuses a call to a deferred tool outside the loaded set with
///    `TOOL_NOT_LOADED`.
///
/// Without a state on the context the executor behaves as if discovery did not exist.
///
/// ```
/// use iris_discovery::DisclosureState;
/// use iris_tools_core::ToolExecutionContext;
///
/// let state = DisclosureState::new();
/// let ctx = state.attach(ToolExecutionContext::new("/srv/ws").session_id("s-1"));
/// assert!(DisclosureState::of(&ctx).is_some());
/// assert!(state.revealed().is_empty());
/// ```
#[derive(Debug, Clone, Default)]
pub struct DisclosureState {
    inner: Arc<Mutex<Inner>>,
}

impl DisclosureState {
    /// An empty state: nothing revealed, nothing loaded.
    pub fn new() -> Self {
        Self::default()
    }

    /// A state restored from a persisted session: these names count as revealed (in
    /// this order); nothing is loaded until the next [`DisclosureState::request_specs`].
    pub fn from_revealed<S: Into<String>>(names: impl IntoIterator<Item = S>) -> Self {
        let state = Self::new();
        state.reveal(names.into_iter().map(Into::into));
        state
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Every update is a single push or a whole-set replacement, so a panic while
        // holding the lock cannot leave the state half-changed.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The context with this state attached (in [`ToolExecutionContext::extensions`]).
    #[must_use]
    pub fn attach(&self, mut ctx: ToolExecutionContext) -> ToolExecutionContext {
        ctx.extensions.insert(self.clone());
        ctx
    }

    /// The state attached to a context, if any.
    pub fn of(ctx: &ToolExecutionContext) -> Option<&DisclosureState> {
        ctx.extensions.get::<DisclosureState>()
    }

    /// Revealed tool names, in order of first reveal.
    pub fn revealed(&self) -> Vec<String> {
        self.lock().revealed.clone()
    }

    /// Whether `name` was revealed.
    pub fn is_revealed(&self, name: &str) -> bool {
        self.lock().revealed.iter().any(|n| n == name)
    }

    /// Names whose full spec the last request carried (active and loaded revealed).
    pub fn loaded(&self) -> BTreeSet<String> {
        self.lock().loaded.clone()
    }

    /// Whether the last request carried `name`'s full spec.
    pub fn is_loaded(&self, name: &str) -> bool {
        self.lock().loaded.contains(name)
    }

    /// Records revealed names; returns the ones that were new. Crate-private: only the
    /// executor reveals, from a certified `tool_search` body.
    pub(crate) fn reveal(&self, names: impl IntoIterator<Item = String>) -> Vec<String> {
        let mut inner = self.lock();
        let mut fresh = Vec::new();
        for name in names {
            if !inner.revealed.contains(&name) {
                inner.revealed.push(name.clone());
                fresh.push(name);
            }
        }
        fresh
    }

    /// The specs for the next model request, and the new loaded set.
    ///
    /// Active tools of `view` are always sent. Revealed deferred tools of the view are
    /// added newest reveal first while they fit `budget` (a tool too large to fit is
    /// skipped and smaller, older ones may still fit): the tools the model asked for
    /// last are the ones it is about to call. Every name in the returned specs
    /// becomes the loaded set, replacing the previous one: a tool is callable only
    /// while the current request carries its schema.
    ///
    /// ```
    /// use iris_discovery::{DisclosureState, SchemaBudget};
    /// use iris_tools_core::{FnTool, ToolDefinition, ToolRegistry, ToolOutput, ViewFilter};
    /// use serde_json::json;
    ///
    /// let registry = ToolRegistry::new();
    /// for (name, deferred) in [("read_file", false), ("create_issue", true)] {
    ///     let def = ToolDefinition::new(name, "A test tool.", json!({"type": "object"}))
    ///         .with_deferred(deferred);
    ///     registry.register(FnTool::new(def, |_, _| async { ToolOutput::text("ok") })).unwrap();
    /// }
    /// let view = registry.view(ViewFilter::default());
    ///
    /// let state = DisclosureState::from_revealed(["create_issue"]);
    /// let sent = state.request_specs(&view, SchemaBudget::UNLIMITED);
    /// let names: Vec<&str> = sent.specs.iter().map(|s| s.name.as_str()).collect();
    /// assert_eq!(names, ["read_file", "create_issue"]);
    /// assert!(state.is_loaded("create_issue"));
    ///
    /// let tight = state.request_specs(&view, SchemaBudget::chars(10));
    /// assert_eq!(tight.over_budget, ["create_issue"]);
    /// assert!(!state.is_loaded("create_issue"));
    /// ```
    pub fn request_specs(&self, view: &ToolRegistryView, budget: SchemaBudget) -> RequestSpecs {
        let available = view.available_tools();
        let active: BTreeSet<String> = view
            .active_tools()
            .iter()
            .map(|t| t.definition().name.clone())
            .collect();
        let by_name: HashMap<&str, usize> = available
            .iter()
            .enumerate()
            .map(|(i, t)| (t.definition().name.as_str(), i))
            .collect();

        let revealed = self.revealed();
        let mut sent = active;
        let mut loaded = Vec::new();
        let mut over_budget = Vec::new();
        let mut unavailable = Vec::new();
        let mut used = 0usize;
        for name in revealed.iter().rev() {
            if sent.contains(name) {
                continue;
            }
            let Some(&i) = by_name.get(name.as_str()) else {
                unavailable.push(name.clone());
                continue;
            };
            let cost = spec_chars(&available[i].definition().to_spec());
            match used.checked_add(cost) {
                Some(total) if total <= budget.max_chars() => {
                    used = total;
                    sent.insert(name.clone());
                    loaded.push(name.clone());
                }
                _ => over_budget.push(name.clone()),
            }
        }
        // Reported in reveal order, like `revealed()`.
        loaded.reverse();
        over_budget.reverse();
        unavailable.reverse();

        let specs = available
            .iter()
            .map(|t| t.definition())
            .filter(|d| sent.contains(&d.name))
            .map(iris_tools_core::ToolDefinition::to_spec)
            .collect();
        self.lock().loaded = sent;
        RequestSpecs {
            specs,
            loaded,
            over_budget,
            unavailable,
            revealed_chars: used,
        }
    }
}

/// Characters of a spec as a provider request carries it (serialized JSON).
fn spec_chars(spec: &ToolSpec) -> usize {
    // A `ToolSpec` is strings and a JSON value: serializing it cannot fail. Should it
    // ever, the spec counts as too large rather than free.
    serde_json::to_string(spec).map_or(usize::MAX, |s| s.chars().count())
}

/// The executor's receipt for one `tool_search` call: the real body writes its
/// selected names here, the executor reads them after the body. Crate-private on
/// purpose: no code outside this crate can name it, so no other tool, middleware or
/// hook can fill it, and a result's `data` is never read for certification.
#[derive(Debug, Clone, Default)]
pub(crate) struct RevealReceipt(Arc<Mutex<Option<Vec<String>>>>);

impl RevealReceipt {
    /// Called by the `tool_search` body with its deduplicated selections.
    pub(crate) fn record(&self, names: Vec<String>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(names);
    }

    /// What the body recorded, if it finished.
    pub(crate) fn take(&self) -> Option<Vec<String>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}
