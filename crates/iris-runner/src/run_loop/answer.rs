//! An answer applied to the call that raised its interaction: the one place both
//! routes meet, an answer given in process by the run's
//! [`InteractionHandler`](crate::InteractionHandler) and one given on resume.

#[allow(clippy::wildcard_imports)] // The loop's shared types and imports, as in one file.
use super::*;

impl AgentRunner {
    /// Asks the run's interaction handler; `None` when the run must wait.
    pub(crate) async fn ask(&self, interaction: &Interaction) -> Option<Accepted> {
        crate::interaction::ask(self.inner.parts.interactions.as_ref(), interaction).await
    }

    /// What a checked answer does to its call: the call runs (approved, with the
    /// arguments the human saw, or re-run), its result is decided, or a secret goes
    /// to the host's store and the tools that use it. `Err` stops the run (a store
    /// failure, or the call asked for something nobody can give now).
    pub(super) async fn settle_answer(
        &self,
        state: &mut RunState,
        slot: usize,
        call: &ModelToolCall,
        answer: CallAnswer,
        ctx: &ToolExecutionContext,
    ) -> Result<ToolResult, Stop> {
        match answer {
            CallAnswer::Result { output, tool } => Ok(output.into_result(&call.id, &tool)),
            CallAnswer::Secret { key, value } => Ok(self
                .deliver_secret(state, &key, &value)
                .into_result(&call.id, STORE_SECRET)),
            CallAnswer::Run { approved } => match call.to_tool_use() {
                Some(tool_use) => {
                    self.run_approved(state, slot, call, &tool_use, ctx, approved.as_ref())
                        .await
                }
                None => Ok(ToolOutput::err(
                    core_codes::INVALID_INPUT,
                    format!("call `{}` has unusable arguments and cannot run", call.id),
                )
                .into_result(&call.id, &call.name)),
            },
        }
    }
}
