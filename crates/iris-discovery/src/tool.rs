//! [`ToolSearchTool`]: the model-facing `tool_search`.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use iris_tools_core::{
    BoxFuture, Tool, ToolCapability, ToolDefinition, ToolErrorInfo, ToolExecutionContext,
    ToolInput, ToolOutput, ToolRegistryView, codes,
};

use crate::backend::{DiscoveryAnswer, DiscoveryBackend, DiscoveryRequest, LocalDiscoveryBackend};
use crate::input::{
    ToolSearchInput, ToolSearchOutput, ToolSelection, ToolSummary, summary_description,
};
use crate::state::RevealReceipt;

/// The model-facing name of the discovery tool.
pub const TOOL_SEARCH_NAME: &str = "tool_search";

const DESCRIPTION: &str = "Find deferred specialist tools by describing what you need to do.\n\
Use when no loaded tool fits; the found tools load for your next step.\n\
Precondition: one intent per query; a query may find no tool.";

/// The definition of `tool_search`: group `core`, read capability, eager, and
/// auto-allowed by the default policy (tool discovery has its own auto-allow rule).
///
/// ```
/// use iris_discovery::tool_search_definition;
/// let def = tool_search_definition();
/// assert_eq!(def.name, "tool_search");
/// assert_eq!(def.group, "core");
/// assert!(!def.deferred);
/// assert!(def.auto_allow);
/// ```
pub fn tool_search_definition() -> ToolDefinition {
    ToolDefinition::new(TOOL_SEARCH_NAME, DESCRIPTION, ToolSearchInput::schema())
        .with_capabilities([ToolCapability::Read])
        .with_auto_allow(true)
}

/// `tool_search`: finds deferred tools of the static view it was built with, one per
/// query at most.
///
/// The candidates are the view's deferred tools that are not already active, after
/// the call's `include_groups`; eager tools (which include `load_skill`), agent tools
/// (`subagent`) and `tool_search` itself are never candidates. A backend
/// ([`LocalDiscoveryBackend`] by default) selects a candidate or nothing per query; the
/// result carries `data.selections = [{query, tool|null}]` in input order and
/// `data.tools = [{name, description (≤ 240 chars), group}]` deduplicated by first hit,
/// and a short listing as model content.
///
/// Finding a tool does not make it callable: when the executor runs this tool it
/// certifies the selections into the session's [`crate::DisclosureState`] (through the
/// [`crate::DisclosureLayer`]), and the runtime loads their schemas into the next
/// request.
///
/// ```
/// use iris_discovery::{ToolSearchInput, ToolSearchTool};
/// use iris_tools_core::{FnTool, ToolDefinition, ToolOutput, ToolRegistry, ViewFilter};
/// use serde_json::json;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let registry = ToolRegistry::new();
/// let def = ToolDefinition::new("create_issue", "Create a new issue in the tracker.",
///     json!({"type": "object"})).with_deferred(true).with_group("tracker");
/// registry.register(FnTool::new(def, |_, _| async { ToolOutput::text("#1") })).unwrap();
///
/// let search = ToolSearchTool::new(registry.view(ViewFilter::default()));
/// let found = search.search(&ToolSearchInput::new(["open an issue", "bake bread"])).await.unwrap();
/// assert_eq!(found.output.selections[0].tool.as_deref(), Some("create_issue"));
/// assert_eq!(found.output.selections[1].tool, None);
/// # });
/// ```
pub struct ToolSearchTool {
    definition: ToolDefinition,
    view: ToolRegistryView,
    backend: Arc<dyn DiscoveryBackend>,
}

impl std::fmt::Debug for ToolSearchTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSearchTool")
            .field("view", &self.view.filter())
            .field("backend", &self.backend.name())
            .finish_non_exhaustive()
    }
}

/// What one search produced: the output and the result metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSearchOutcome {
    /// The `data` of the result.
    pub output: ToolSearchOutput,
    /// The result metadata: `discovery = {backend, candidates}` plus the backend's own.
    pub metadata: Map<String, Value>,
}

impl ToolSearchTool {
    /// `tool_search` over `view` with the local backend.
    pub fn new(view: ToolRegistryView) -> Self {
        Self::with_backend(view, Arc::new(LocalDiscoveryBackend::new()))
    }

    /// `tool_search` over `view` with another backend (for example the decision
    /// backend of `iris-decision`).
    pub fn with_backend(view: ToolRegistryView, backend: Arc<dyn DiscoveryBackend>) -> Self {
        Self {
            definition: tool_search_definition(),
            view,
            backend,
        }
    }

    /// The static view searched.
    pub fn view(&self) -> &ToolRegistryView {
        &self.view
    }

    /// The backend's name.
    pub fn backend_name(&self) -> &str {
        self.backend.name()
    }

    /// The allowed candidates, in registration order: deferred tools of the view that
    /// are not active, in `include_groups` (`None`: every group; empty: none).
    pub fn candidates(&self, include_groups: Option<&BTreeSet<String>>) -> Vec<Arc<dyn Tool>> {
        if include_groups.is_some_and(BTreeSet::is_empty) {
            return Vec::new();
        }
        let allow = &self.view.filter().allow;
        self.view
            .available_tools()
            .into_iter()
            .filter(|t| {
                let d = t.definition();
                d.deferred
                    && !allow.contains(&d.name)
                    && !d.has(ToolCapability::Agent)
                    && d.name != TOOL_SEARCH_NAME
                    && include_groups.is_none_or(|g| g.contains(&d.group))
            })
            .collect()
    }

    /// Lets the backend do its per-catalog work now for the current candidates (every
    /// group): the hybrid backend embeds the tools it has not seen, the local one builds
    /// its index. Searches work without it; it only moves that cost off the first
    /// search. Blocking and CPU-bound for the hybrid backend: call it from a blocking
    /// task once the tools are registered.
    ///
    /// # Errors
    /// The backend's error (for the hybrid backend `EMBEDDING_FAILED`).
    pub fn prepare(&self) -> Result<(), ToolErrorInfo> {
        self.backend.prepare(&self.candidates(None))
    }

    /// Runs one search without an executor: nothing is certified or revealed.
    ///
    /// # Errors
    /// `INVALID_INPUT` for a blank or missing query; the backend's own error (for the
    /// decision backend a `DECISION_*` code); `TOOL_FAILED` when the backend answers
    /// with the wrong number of selections or a tool that is not an allowed candidate.
    pub async fn search(
        &self,
        input: &ToolSearchInput,
    ) -> Result<ToolSearchOutcome, ToolErrorInfo> {
        let input = input.clone().checked()?;
        let groups = input.group_filter();
        let candidates = self.candidates(groups.as_ref());
        let request = DiscoveryRequest {
            queries: &input.queries,
            candidates: &candidates,
        };
        let answer = self.backend.discover(request).await?;
        let output = self.output(&input.queries, &candidates, &answer)?;
        let mut metadata = answer.metadata;
        metadata.insert(
            "discovery".to_owned(),
            json!({"backend": self.backend.name(), "candidates": candidates.len()}),
        );
        Ok(ToolSearchOutcome { output, metadata })
    }

    /// Checks the backend's answer and builds the output.
    fn output(
        &self,
        queries: &[String],
        candidates: &[Arc<dyn Tool>],
        answer: &DiscoveryAnswer,
    ) -> Result<ToolSearchOutput, ToolErrorInfo> {
        let backend = self.backend.name();
        if answer.selections.len() != queries.len() {
            return Err(ToolErrorInfo::new(
                codes::TOOL_FAILED,
                format!(
                    "the `{backend}` discovery backend answered {} selections for {} queries",
                    answer.selections.len(),
                    queries.len()
                ),
            )
            .with_detail("backend", backend));
        }
        let mut output = ToolSearchOutput::default();
        for (query, selection) in queries.iter().zip(&answer.selections) {
            if let Some(name) = selection {
                let Some(tool) = candidates.iter().find(|t| t.definition().name == *name) else {
                    return Err(ToolErrorInfo::new(
                        codes::TOOL_FAILED,
                        format!(
                            "the `{backend}` discovery backend selected `{name}`, which is not an \
                             allowed deferred candidate"
                        ),
                    )
                    .with_detail("backend", backend)
                    .with_detail("tool", name.as_str()));
                };
                if !output.tools.iter().any(|t| t.name == *name) {
                    let d = tool.definition();
                    output.tools.push(ToolSummary {
                        name: d.name.clone(),
                        description: summary_description(&d.description),
                        group: d.group.clone(),
                    });
                }
            }
            output.selections.push(ToolSelection {
                query: query.clone(),
                tool: selection.clone(),
            });
        }
        Ok(output)
    }
}

/// The model's view of a search: one line per query, then the found tools.
fn listing(output: &ToolSearchOutput) -> String {
    let found = output
        .selections
        .iter()
        .filter(|s| s.tool.is_some())
        .count();
    let mut text = if output.tools.is_empty() {
        let which = match output.selections.len() {
            1 => "the query".to_owned(),
            n => format!("any of the {n} queries"),
        };
        format!(
            "No deferred tool matched {which}. Rephrase with other words, or widen \
             include_groups.\n"
        )
    } else {
        format!(
            "Found tools for {found} of {} queries. Their schemas load with your next \
             step; call them then.\n",
            output.selections.len()
        )
    };
    for (i, s) in output.selections.iter().enumerate() {
        let tool = s.tool.as_deref().unwrap_or("no matching tool");
        // Debug formatting quotes the query and escapes newlines in it.
        let _ = writeln!(text, "{}. {:?} -> {tool}", i + 1, s.query);
    }
    if !output.tools.is_empty() {
        text.push_str("Tools:\n");
        for t in &output.tools {
            let _ = writeln!(text, "- {} [{}]: {}", t.name, t.group, t.description);
        }
    }
    text.truncate(text.trim_end().len());
    text
}

impl Tool for ToolSearchTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn validate_input(&self, raw: Value) -> Result<ToolInput, ToolErrorInfo> {
        let input = ToolSearchInput::parse(raw.clone())?;
        Ok(ToolInput::with_parsed(raw, input))
    }

    fn run<'a>(
        &'a self,
        mut input: ToolInput,
        ctx: &'a ToolExecutionContext,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let input = match input.take_parsed::<ToolSearchInput>() {
                Some(input) => input,
                None => match ToolSearchInput::parse(input.into_value()) {
                    Ok(input) => input,
                    Err(info) => return ToolOutput::error(info),
                },
            };
            match self.search(&input).await {
                Ok(outcome) => {
                    // The certification receipt is present only when the disclosure layer runs
                    // this very tool; see `RevealReceipt`.
                    if let Some(receipt) = ctx.extensions.get::<RevealReceipt>() {
                        receipt.record(
                            outcome
                                .output
                                .tools
                                .iter()
                                .map(|t| t.name.clone())
                                .collect(),
                        );
                    }
                    let text = listing(&outcome.output);
                    let mut result = ToolOutput::text(text);
                    result.data = match serde_json::to_value(&outcome.output) {
                        Ok(Value::Object(data)) => data,
                        _ => Map::new(),
                    };
                    result.metadata = outcome.metadata;
                    result
                }
                Err(info) => ToolOutput::error(info),
            }
        })
    }

    fn is_concurrency_safe(&self) -> bool {
        true
    }
}
