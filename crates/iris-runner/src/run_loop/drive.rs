//! The run's turns: the model request of each turn and what ends the run.

#[allow(clippy::wildcard_imports)] // The loop's shared types and imports, as in one file.
use super::*;
use crate::loop_tool::registered;
use crate::loop_tools::store_secret::StoreSecret;

/// The `chat` span of one model request (OpenTelemetry GenAI conventions).
pub(super) fn chat_span(inner: &Inner, request: &CompletionRequest) -> tracing::Span {
    tracing::info_span!(
        target: TRACING_TARGET,
        "chat",
        "otel.name" = format!("chat {}", request.model),
        "gen_ai.operation.name" = "chat",
        "gen_ai.provider.name" = inner.provider_name.as_str(),
        "gen_ai.request.model" = request.model.as_str(),
        "gen_ai.request.max_tokens" = request.max_output_tokens,
        "gen_ai.request.temperature" = request.temperature,
        "iris.request.tools" = request.tools.len(),
        "gen_ai.response.id" = tracing::field::Empty,
        "gen_ai.response.model" = tracing::field::Empty,
        "gen_ai.response.finish_reasons" = tracing::field::Empty,
        "gen_ai.usage.input_tokens" = tracing::field::Empty,
        "gen_ai.usage.output_tokens" = tracing::field::Empty,
        "error.type" = tracing::field::Empty,
    )
}

pub(super) fn stop_name(stop: &StopReason) -> &str {
    match stop {
        StopReason::EndTurn => "stop",
        StopReason::ToolUse => "tool_calls",
        StopReason::MaxTokens => "length",
        StopReason::Refusal => "content_filter",
        StopReason::Other(other) => other,
        _ => "other",
    }
}

impl AgentRunner {
    /// The run's turns until it ends: a pending turn's calls first, then requests.
    pub(super) async fn drive(&self, state: &mut RunState, sink: &mut Sink) -> RunOutcome {
        let inner = &*self.inner;
        let provider = inner.provider.for_run();
        let view = inner
            .executor
            .registry()
            .view(inner.config.view_filter.clone());
        loop {
            if state.record.pending.is_some()
                && let Err(stop) = self.finish_turn(state, sink).await
            {
                return stop;
            }
            // A loop tool that ended the run (`report_goal(done)`) did so once its
            // turn ran: its answer is the run's.
            if let Some(output) = state.record.final_answer.clone() {
                // Streams show the answer like any other: it is the run's last text.
                sink.emit(RunEvent::TextDelta {
                    text: output.clone(),
                });
                state
                    .record
                    .history
                    .push(Message::assistant(output.clone()));
                return RunOutcome::Completed {
                    output,
                    usage: state.record.usage,
                    turns: state.record.turns,
                    history: state.record.history.to_vec(),
                };
            }
            if state.cancel.requested() {
                return RunOutcome::Cancelled;
            }
            self.collect_background(state, sink);
            self.deliver_background(state);
            if state.record.turns >= inner.config.max_turns {
                // Under `background_calls: wait` the loop also comes back here after
                // an answer that came while background calls ran: then the model did
                // not ask for tools, and the run ends for want of a request to give it
                // their results.
                let answered = state
                    .record
                    .history
                    .iter()
                    .rev()
                    .find(|m| m.role == Role::Assistant)
                    .is_some_and(|m| !m.content.iter().any(|p| matches!(p, Part::ToolCall { .. })));
                let message = if answered {
                    format!(
                        "the model answered while background calls were running, and after {} \
                         model requests (max_turns) none is left to give it their results",
                        inner.config.max_turns
                    )
                } else {
                    format!(
                        "the model still asked for tools after {} model requests (max_turns)",
                        inner.config.max_turns
                    )
                };
                return failed(RunError::new(codes::RUN_MAX_TURNS, message));
            }
            let driven = state.driven();
            if let Err(e) = inner.config.limits.before_request(
                state.record.usage,
                &state.record.spent,
                &inner.config.model,
                driven,
            ) {
                return failed(e);
            }
            state.record.turns += 1;
            let turn = state.record.turns;
            crate::mcp_host::refresh_catalog(inner.parts.mcp.as_deref()).await;
            let disclosure = state
                .layers
                .get::<DisclosureState>()
                .cloned()
                .unwrap_or_default();
            let mut sent = disclosure.request_specs(&view, inner.config.schema_budget);
            // After an auth failure that named a secret of this run, the loop's own
            // `store_secret` (a system-use tool, outside every view; found by type) is
            // offered.
            if !state.record.secrets_asked.is_empty()
                && !sent.specs.iter().any(|s| s.name == STORE_SECRET)
                && let Some(tool) =
                    registered::<StoreSecret>(inner.executor.registry(), STORE_SECRET)
            {
                sent.specs.push(tool.definition().to_spec());
            }
            let sent_names: Vec<String> = sent.specs.iter().map(|s| s.name.clone()).collect();
            sink.emit(RunEvent::TurnStarted {
                turn,
                tools: sent_names.clone(),
            });
            // A clone of the history shares its messages: the request costs the same
            // at turn 1,000 as at turn 10.
            let history = inner
                .config
                .retention
                .as_ref()
                .and_then(|r| request_history(&state.record.history, inner.executor.registry(), r))
                .unwrap_or_else(|| state.record.history.clone());
            let mut request = CompletionRequest::new(inner.config.model.clone())
                .with_history(history)
                .with_tools(sent.specs)
                .with_strict(inner.config.strict);
            request.instructions.clone_from(&inner.config.instructions);
            request.max_output_tokens = inner.config.max_output_tokens;
            request.temperature = inner.config.temperature;

            let response = tokio::select! {
                biased;
                () = state.cancel.cancelled() => return RunOutcome::Cancelled,
                r = self.request(&*provider, &request, sink).instrument(chat_span(inner, &request)) => r,
            };
            let response = match response.and_then(CompletionResponse::check_refusal) {
                Ok(r) => r,
                Err(e) => return failed(RunError::new(e.code(), e.to_string())),
            };
            state.record.usage += response.usage;
            sink.emit(RunEvent::Usage {
                turn,
                usage: response.usage,
                total: state.record.usage,
            });
            state.record.history.push(response.to_message());
            if response.tool_calls.is_empty() && !state.background.is_empty() {
                if inner.config.background_calls == BackgroundCalls::Wait {
                    // The answer came before the background calls finished: wait for
                    // the next one, give the model its result, and ask again.
                    tokio::select! {
                        biased;
                        () = state.cancel.cancelled() => return RunOutcome::Cancelled,
                        joined = state.background.join_next() => {
                            if let Some(joined) = joined {
                                push_joined(state, Some(sink), joined);
                            }
                        }
                    }
                    if let Err(stop) = self.save(state).await {
                        return stop;
                    }
                    continue;
                }
                stop_background(state, Some(sink)).await;
            }
            if response.tool_calls.is_empty() {
                return RunOutcome::Completed {
                    output: response.text,
                    usage: state.record.usage,
                    turns: state.record.turns,
                    history: state.record.history.to_vec(),
                };
            }
            let calls = response.tool_calls;
            state.record.pending = Some(PendingTurn {
                turn,
                results: vec![None; calls.len()],
                calls,
                sent: sent_names,
            });
            if let Err(stop) = self.save(state).await {
                return stop;
            }
            if self.store().is_some() {
                let calls = state
                    .record
                    .pending
                    .as_ref()
                    .map(|p| p.calls.clone())
                    .unwrap_or_default();
                for (i, call) in calls.iter().enumerate() {
                    if let Err(stop) = self.journal(state, i, call, CallState::Planned, None).await
                    {
                        return stop;
                    }
                }
            }
        }
    }

    /// One model request: whole, or streamed with text deltas forwarded.
    pub(super) async fn request(
        &self,
        provider: &dyn CompletionProvider,
        request: &CompletionRequest,
        sink: &mut Sink,
    ) -> Result<CompletionResponse, ProviderError> {
        let span = tracing::Span::current();
        let result = if sink.is_streaming() {
            let mut stream = provider.stream(request);
            let mut done = None;
            while let Some(event) = next(&mut stream).await {
                match event? {
                    StreamEvent::TextDelta(text) => sink.emit(RunEvent::TextDelta { text }),
                    StreamEvent::Completed(response) => {
                        done = Some(response);
                        break;
                    }
                    _ => {}
                }
            }
            done.ok_or_else(|| ProviderError::BadResponse {
                reason: "the stream ended without a completed turn".into(),
            })
        } else {
            provider.complete(request).await
        };
        match &result {
            Ok(r) => {
                span.record("gen_ai.usage.input_tokens", r.usage.input_tokens);
                span.record("gen_ai.usage.output_tokens", r.usage.output_tokens);
                span.record("gen_ai.response.finish_reasons", stop_name(&r.stop));
                if let Some(id) = &r.id {
                    span.record("gen_ai.response.id", id.as_str());
                }
                if let Some(model) = &r.model {
                    span.record("gen_ai.response.model", model.as_str());
                }
            }
            Err(e) => {
                span.record("error.type", e.code());
            }
        }
        result
    }
}
