//! The tool-call journal: each call's planned → started → finished, and a recovered turn settled from it.

#[allow(clippy::wildcard_imports)] // The loop's shared types and imports, as in one file.
use super::*;

impl AgentRunner {
    /// Records a call's journal state (a no-op without a store).
    pub(crate) async fn journal(
        &self,
        state: &RunState,
        index: usize,
        call: &ModelToolCall,
        call_state: CallState,
        result: Option<&ToolResult>,
    ) -> Result<(), Stop> {
        let Some(store) = self.store() else {
            return Ok(());
        };
        let turn = state
            .record
            .pending
            .as_ref()
            .map_or(state.record.turns, |p| p.turn);
        let entry = JournalEntry {
            turn,
            index,
            call_id: call.id.clone(),
            tool_name: call.name.clone(),
            state: call_state,
            result: result.cloned(),
        };
        store
            .journal(&state.record.run_id, &state.owner, &entry)
            .await
            .map_err(failed)
    }

    /// Fills a recovered turn's results from the journal; asks about a call left in
    /// doubt that may not simply run again.
    pub(super) async fn settle_journal(&self, state: &mut RunState) -> Result<(), Stop> {
        let Some(turn) = state.record.pending.clone() else {
            return Ok(());
        };
        let Some(store) = self.store() else {
            return Ok(());
        };
        let rows = store
            .journal_of(&state.record.run_id, turn.turn)
            .await
            .map_err(failed)?;
        let registry = self.inner.executor.registry();
        for row in rows {
            let Some(slot) = turn.calls.iter().position(|c| c.id == row.call_id) else {
                continue;
            };
            if state
                .record
                .pending
                .as_ref()
                .is_some_and(|p| p.results[slot].is_some())
            {
                continue;
            }
            match row.state {
                CallState::Finished => {
                    if let (Some(result), Some(p)) = (row.result, state.record.pending.as_mut()) {
                        p.results[slot] = Some(result);
                    }
                }
                CallState::Planned => {}
                CallState::Started => {
                    let call = &turn.calls[slot];
                    let safe = registry
                        .get(&call.name)
                        .is_ok_and(|t| t.is_read_only() || t.is_idempotent());
                    if !safe {
                        let request = InDoubtRequest {
                            id: interaction_id(&state.record.run_id, &call.id),
                            run_id: state.record.run_id.clone(),
                            call_id: call.id.clone(),
                            tool_name: call.name.clone(),
                            arguments: call.arguments.clone(),
                        };
                        return Err(self.wait(state, slot, Interaction::InDoubt(request)).await);
                    }
                    // Read-only or idempotent: it runs again (with the same
                    // idempotency key, `<run id>:<call id>`).
                }
            }
        }
        self.save(state).await
    }
}
