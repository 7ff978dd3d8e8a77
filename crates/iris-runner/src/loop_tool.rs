//! [`RunLoopTool`]: a tool whose calls the run loop answers itself, because what it
//! answers with lives in the run — `ask_question` ([`crate::ask`]), `get_goal` and
//! `report_goal` ([`crate::goal`]), `context_read` and `context_search`
//! ([`crate::context`]), `subagent` ([`crate::subagent`]).
//!
//! The registry holds it so the model sees its schema and the request may carry it;
//! the loop intercepts its calls before the executor, outside the hook and middleware
//! chain (seed 000 says so of `ask_question` and the subagent tool). Called any other
//! way (`iris call`, a host's own executor) it answers a `TOOL_FAILED` error saying
//! that only a run can answer it.

use iris_tools_core::{
    BoxFuture, Tool, ToolDefinition, ToolExecutionContext, ToolInput, ToolOutput, codes,
};

/// A tool the run loop answers; see the [module docs](self). Its constructors live
/// with the tools: [`RunLoopTool::ask_question`], [`RunLoopTool::get_goal`],
/// [`RunLoopTool::report_goal`], [`RunLoopTool::context_read`],
/// [`RunLoopTool::context_search`], [`RunLoopTool::subagent`].
#[derive(Debug)]
pub struct RunLoopTool {
    definition: ToolDefinition,
}

impl RunLoopTool {
    pub(crate) fn new(definition: ToolDefinition) -> Self {
        Self {
            definition: definition.with_group("core"),
        }
    }
}

impl Tool for RunLoopTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// The loop answers these calls one by one, in order.
    fn is_concurrency_safe(&self) -> bool {
        false
    }

    fn run<'a>(
        &'a self,
        _input: ToolInput,
        _ctx: &'a ToolExecutionContext,
    ) -> BoxFuture<'a, ToolOutput> {
        let name = self.definition.name.clone();
        Box::pin(async move {
            ToolOutput::err(
                codes::TOOL_FAILED,
                format!(
                    "`{name}` is answered by a run: only the run loop (AgentRunner, `iris run`) \
                     holds what it needs"
                ),
            )
        })
    }
}
