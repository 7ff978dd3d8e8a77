//! [`ToolBatchPlan`]: how a list of calls is cut into parallel windows and barriers.

use std::fmt;
use std::ops::Range;

/// One batch of adjacent calls in a [`ToolBatchPlan`].
///
/// A parallel batch is a maximal run of adjacent calls whose tools are read-only and
/// concurrency-safe; its calls run at the same time. Every other call (a write, an
/// execute, a tool that is not concurrency-safe, an unknown tool) is a batch of its
/// own that runs after everything before it finished and before anything after it
/// starts: a barrier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolBatch {
    calls: Range<usize>,
    parallel: bool,
}

impl ToolBatch {
    /// Indices of the calls in this batch, into the slice given to
    /// [`crate::ToolExecutor::prepare_many`].
    pub fn indices(&self) -> Range<usize> {
        self.calls.clone()
    }

    /// Whether the calls may run concurrently (read-only and concurrency-safe). A
    /// lone read is a parallel batch of one; a barrier is never parallel.
    pub fn is_parallel(&self) -> bool {
        self.parallel
    }

    /// Number of calls in the batch (at least one).
    pub fn len(&self) -> usize {
        self.calls.len()
    }

    /// Always false: a plan holds no empty batch. Present for the `len` convention.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }
}

/// The execution plan of [`crate::ToolExecutor::execute_many`]: batches in call order.
///
/// Concurrency happens only inside parallel windows: adjacent read-only, concurrency-safe calls
/// form one parallel window; anything else is an ordered barrier, so "read, write,
/// read" keeps its order. `Display` renders a compact form for logs and tests.
///
/// ```
/// use iris_tools_core::{FnTool, ToolCapability, ToolDefinition, ToolExecutionContext, ToolOutput, ToolRegistry, ToolUse};
/// use iris_executor::ToolExecutor;
/// use serde_json::json;
///
/// let registry = ToolRegistry::new();
/// for (name, cap) in [("read", ToolCapability::Read), ("write", ToolCapability::Write)] {
///     let def = ToolDefinition::new(name, "Test tool.", json!({"type": "object"}))
///         .with_capabilities([cap]);
///     registry.register(FnTool::new(def, |_, _| async { ToolOutput::text("ok") })).unwrap();
/// }
/// let executor = ToolExecutor::new(registry);
/// let calls: Vec<ToolUse> = ["read", "read", "write", "read"]
///     .iter()
///     .enumerate()
///     .map(|(i, n)| ToolUse::new(format!("c{i}"), *n, json!({})))
///     .collect();
/// let plan = executor.prepare_many(&calls, &ToolExecutionContext::new("."));
/// assert_eq!(plan.to_string(), "par[0..2] seq[2] par[3]");
/// assert_eq!(plan.batches().len(), 3);
/// assert!(plan.batches()[0].is_parallel());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ToolBatchPlan {
    batches: Vec<ToolBatch>,
}

impl ToolBatchPlan {
    /// Builds the plan from one flag per call: `true` when the call may join a
    /// parallel window.
    pub(crate) fn from_flags(flags: impl IntoIterator<Item = bool>) -> Self {
        let mut batches: Vec<ToolBatch> = Vec::new();
        for (index, parallel) in flags.into_iter().enumerate() {
            match batches.last_mut() {
                Some(last) if parallel && last.parallel => last.calls.end = index + 1,
                _ => batches.push(ToolBatch {
                    calls: index..index + 1,
                    parallel,
                }),
            }
        }
        Self { batches }
    }

    /// The batches, in call order.
    pub fn batches(&self) -> &[ToolBatch] {
        &self.batches
    }

    /// Total number of calls the plan covers.
    pub fn call_count(&self) -> usize {
        self.batches.iter().map(ToolBatch::len).sum()
    }

    /// Whether the plan has no calls.
    pub fn is_empty(&self) -> bool {
        self.batches.is_empty()
    }
}

impl fmt::Display for ToolBatchPlan {
    /// `par[0..2] seq[2] par[3]`: parallel windows with their index range, barriers
    /// with their single index.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, batch) in self.batches.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            let kind = if batch.parallel { "par" } else { "seq" };
            if batch.len() == 1 {
                write!(f, "{kind}[{}]", batch.calls.start)?;
            } else {
                write!(f, "{kind}[{}..{}]", batch.calls.start, batch.calls.end)?;
            }
        }
        Ok(())
    }
}
