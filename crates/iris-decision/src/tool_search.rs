//! [`DecisionDiscoveryBackend`]: `tool_search` answered by a decision model.
//!
//! `iris-discovery` owns `tool_search` (input, static view, output, certification);
//! this adapter only replaces its local ranking: one [`decide_tools`] request over
//! exactly the allowed deferred candidates the tool hands it.

use std::sync::Arc;

use iris_discovery::{DiscoveryAnswer, DiscoveryBackend, DiscoveryRequest, ToolSearchTool};
use iris_tools_core::{BoxFuture, ToolDefinition, ToolErrorInfo, ToolRegistryView};

use crate::discovery::{MAX_DISCOVERY_TOOLS, decide_tools};
use crate::error::Error;
use crate::evaluator::DecisionEvaluator;

/// The decision backend of `tool_search` (`tools.discovery = true` in the decision
/// config).
///
/// Each call asks the evaluator ONE request with a Choice question per query over
/// every allowed deferred candidate plus `none`. More than 254 candidates is a
/// `DECISION_TOO_MANY_TOOLS` error (nothing is trimmed and nothing is sent); every
/// evaluator error becomes the tool's error with its `DECISION_*` code. There is
/// never a fallback to local search. The decision (feature, provider, model,
/// question_count, usage) is recorded in the result's `metadata.decision`.
///
/// ```
/// use std::sync::Arc;
/// use iris_decision::{DecisionDiscoveryBackend, JevClient};
/// use iris_discovery::ToolSearchTool;
/// use iris_tools_core::{ToolRegistry, ViewFilter};
///
/// let registry = ToolRegistry::new();
/// let client = Arc::new(JevClient::new("sk-test").unwrap());
/// let backend = DecisionDiscoveryBackend::new(client);
/// let search = ToolSearchTool::with_backend(registry.view(ViewFilter::default()), Arc::new(backend));
/// assert_eq!(search.backend_name(), "decision");
/// ```
#[derive(Debug, Clone)]
pub struct DecisionDiscoveryBackend {
    evaluator: Arc<dyn DecisionEvaluator>,
}

impl DecisionDiscoveryBackend {
    /// A backend asking `evaluator` (a [`crate::JevClient`], an
    /// [`crate::EvaluatorHandle`], or a host's own evaluator).
    pub fn new(evaluator: Arc<dyn DecisionEvaluator>) -> Self {
        Self { evaluator }
    }
}

impl DiscoveryBackend for DecisionDiscoveryBackend {
    fn name(&self) -> &str {
        "decision"
    }

    fn discover<'a>(
        &'a self,
        request: DiscoveryRequest<'a>,
    ) -> BoxFuture<'a, Result<DiscoveryAnswer, ToolErrorInfo>> {
        Box::pin(async move {
            // Checked before copying definitions: a catalog too large for one decision
            // is an error whatever its size, and copying it first would be waste.
            if request.candidates.len() > MAX_DISCOVERY_TOOLS {
                return Err(Error::TooManyTools {
                    count: request.candidates.len(),
                    max: MAX_DISCOVERY_TOOLS,
                }
                .to_info());
            }
            let candidates: Vec<ToolDefinition> = request
                .candidates
                .iter()
                .map(|t| t.definition().clone())
                .collect();
            let outcome = decide_tools(self.evaluator.as_ref(), request.queries, &candidates)
                .await
                .map_err(|e| e.to_info())?;
            let metadata = outcome.metadata();
            Ok(DiscoveryAnswer {
                selections: outcome.selections.into_iter().map(|s| s.tool).collect(),
                metadata,
            })
        })
    }
}

/// `tool_search` over `view`, answered by `evaluator` through
/// [`DecisionDiscoveryBackend`].
pub fn decision_tool_search(
    view: ToolRegistryView,
    evaluator: Arc<dyn DecisionEvaluator>,
) -> ToolSearchTool {
    ToolSearchTool::with_backend(view, Arc::new(DecisionDiscoveryBackend::new(evaluator)))
}
