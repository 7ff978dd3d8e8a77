//! The run's span and its `run.started` / `run.finished` hooks.

#[allow(clippy::wildcard_imports)] // The loop's shared types and imports, as in one file.
use super::*;

pub(super) trait Recorded {
    fn recorded(self, span: &tracing::Span, state: &RunState) -> Self;
}

impl Recorded for RunOutcome {
    /// Records the run's end on its `invoke_agent` span.
    fn recorded(self, span: &tracing::Span, state: &RunState) -> Self {
        span.record("iris.run.status", self.status());
        span.record("iris.run.turns", state.record.turns);
        span.record("gen_ai.usage.input_tokens", state.record.usage.input_tokens);
        span.record(
            "gen_ai.usage.output_tokens",
            state.record.usage.output_tokens,
        );
        if let RunOutcome::Failed { error } = &self {
            span.record("error.type", error.code.as_str());
        }
        self
    }
}

impl AgentRunner {
    pub(super) fn run_span(&self, state: &RunState) -> tracing::Span {
        let inner = &*self.inner;
        tracing::info_span!(
            target: TRACING_TARGET,
            "invoke_agent",
            "otel.name" = format!("invoke_agent {}", inner.config.agent_id),
            "gen_ai.operation.name" = "invoke_agent",
            "gen_ai.agent.name" = inner.config.agent_id.as_str(),
            "gen_ai.provider.name" = inner.provider_name.as_str(),
            "gen_ai.request.model" = inner.config.model.as_str(),
            "gen_ai.conversation.id" = state.record.session_id.as_str(),
            "iris.run.id" = state.record.run_id.as_str(),
            "iris.run.status" = tracing::field::Empty,
            "iris.run.turns" = tracing::field::Empty,
            "gen_ai.usage.input_tokens" = tracing::field::Empty,
            "gen_ai.usage.output_tokens" = tracing::field::Empty,
            "error.type" = tracing::field::Empty,
        )
    }

    /// Fires `run.started`; returns the hooks' additional context for the run's first
    /// model request (bounded by the dispatcher), in declared order.
    pub(super) async fn fire_started(&self, state: &RunState, input: Value) -> Vec<String> {
        let Some(hooks) = &self.inner.parts.hooks else {
            return Vec::new();
        };
        let run = json!({
            "run_id": state.record.run_id,
            "agent_id": self.inner.config.agent_id,
            "session_id": state.record.session_id,
            "provider": self.inner.provider_name,
            "model": self.inner.config.model,
            "max_turns": self.inner.config.max_turns,
        });
        hooks
            .run_started(self.common(state), run, input)
            .await
            .additional_context
    }

    pub(super) async fn fire_finished(&self, state: &RunState, outcome: &RunOutcome) {
        let Some(hooks) = &self.inner.parts.hooks else {
            return;
        };
        let status = match outcome {
            RunOutcome::Completed { .. } => HookRunStatus::Completed,
            RunOutcome::Waiting { .. } => HookRunStatus::Waiting,
            RunOutcome::Failed { .. } => HookRunStatus::Failed,
            RunOutcome::Cancelled => HookRunStatus::Cancelled,
        };
        let mut result = json!({
            "status": outcome.status(),
            "turns": state.record.turns,
            "usage": state.record.usage,
        });
        match outcome {
            RunOutcome::Completed { output, .. } => result["output"] = json!(output),
            RunOutcome::Waiting { interaction, .. } => result["interaction"] = json!(interaction),
            RunOutcome::Failed { error } => result["error"] = json!(error),
            RunOutcome::Cancelled => {}
        }
        hooks.run_finished(self.common(state), result, status).await;
    }

    pub(super) fn common(&self, state: &RunState) -> EventCommon {
        EventCommon {
            agent_id: self.inner.config.agent_id.clone(),
            session_id: state.record.session_id.clone(),
            workspace: self.inner.config.workspace.clone(),
            run_id: state.record.run_id.clone(),
            activation_id: format!("{}:{}", state.record.run_id, state.record.turns),
            parent_call_id: None,
            occurred_at: iris_hooks::event::rfc3339_now(),
        }
    }
}
