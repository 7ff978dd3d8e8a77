//! [`AgentRunner`]: the run loop. One model request per turn; the model's tool calls go
//! through the executor (parallel read windows, barriers in order); their results go
//! back into the history; until a final answer, `max_turns`, cancellation or a wait.
//!
//! ```
//! use iris_runner::{AgentRunner, RunOutcome};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
//! let dir = tempfile::tempdir()?;
//! std::fs::write(dir.path().join("notes.txt"), "buy milk\n")?;
//! std::fs::write(dir.path().join("iris.yaml"), r#"
//! tools: {builtin: [file.read]}
//! instructions: Answer from the files.
//! model:
//!   provider: scripted
//!   script:
//!     - tool_calls: [{name: read_file, arguments: {file_path: notes.txt}}]
//!     - {expect_tool_results: 1, text: "The note says: buy milk."}
//! "#)?;
//! let runner = AgentRunner::from_config_path(dir.path().join("iris.yaml")).await?;
//! let outcome = runner.run("What does the note say?").await;
//! let RunOutcome::Completed { output, turns, .. } = &outcome else { panic!("{outcome:?}") };
//! assert_eq!(output, "The note says: buy milk.");
//! assert_eq!(*turns, 2);
//! runner.close().await?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use futures_core::Stream;
use iris_discovery::{DisclosureState, SchemaBudget};
use iris_executor::ToolExecutor;
use iris_hooks::{EventCommon, HookDispatcher, RunStatus};
use iris_providers::chat::{
    CompletionRequest, CompletionResponse, Message, ModelToolCall, StopReason, StreamEvent, Usage,
};
use iris_providers::{
    CompletionProvider, ProviderError, Strict, StrictModeCall, StrictNullsLayer, next,
};
use iris_tools_core::{
    BoxFuture, CancellationSignal, ToolErrorInfo, ToolExecutionContext, ToolOutput, ToolResult,
    ToolUse, ViewFilter, codes as core_codes,
};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tracing::Instrument;

use crate::assemble::{ToolEnvironment, build_tool_registry};
use crate::config::{AgentConfig, DEFAULT_MAX_TURNS, LoadedConfig};
use crate::error::{Error, Result, codes};
use crate::host::HostRegistry;
use crate::model::{ModelConfig, ProviderSource};
use crate::outcome::{ApprovalRequest, Interaction, RunError, RunEvent, RunOutcome};

/// The `tracing` target of the loop's spans (`invoke_agent`, `chat`).
pub const TRACING_TARGET: &str = "iris_runner";

/// How many characters of revealed deferred tools' specs one request carries by
/// default (see [`SchemaBudget`]); active tools are always sent.
pub const DEFAULT_REVEALED_SCHEMA_CHARS: usize = 40_000;

/// What a human (or a policy standing in for one) answers about a call.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ApprovalDecision {
    /// Run the call, exactly with the arguments shown.
    Approve,
    /// Do not run it; the model gets `APPROVAL_DENIED` with the reason.
    Deny {
        /// Why, shown to the model.
        reason: String,
    },
    /// Nobody can answer now: the run stops as [`RunOutcome::Waiting`].
    Defer,
}

/// Answers approvals while a run is in flight (a TTY prompt, a UI, a policy).
///
/// Without a handler, a call that needs a human makes the run end as
/// [`RunOutcome::Waiting`]. Permission is checked again when an approved call runs.
pub trait ApprovalHandler: Send + Sync {
    /// The answer for one call.
    fn decide<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalDecision>;
}

impl<F> ApprovalHandler for F
where
    F: Fn(&ApprovalRequest) -> ApprovalDecision + Send + Sync,
{
    fn decide<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalDecision> {
        let decision = self(request);
        Box::pin(async move { decision })
    }
}

/// The input of one run: a prompt, optionally after an earlier conversation.
///
/// ```
/// use iris_runner::RunInput;
/// use iris_providers::chat::Message;
/// let input = RunInput::new("And now?")
///     .with_history(vec![Message::user("Hi"), Message::assistant("Hello.")])
///     .session_id("s-1");
/// assert_eq!(input.prompt.as_deref(), Some("And now?"));
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct RunInput {
    /// The user's message; `None` to continue from the history alone.
    pub prompt: Option<String>,
    /// The conversation so far (a completed run's `history`).
    pub history: Vec<Message>,
    /// The session id (artifacts and read observations are per session); default: the
    /// run id.
    pub session_id: Option<String>,
    /// Raising it cancels the run: the model request is abandoned, in-flight calls
    /// are cancelled (their processes killed), and the run ends as `Cancelled`.
    pub cancellation: Option<CancellationSignal>,
}

impl RunInput {
    /// A run of one prompt.
    pub fn new(prompt: impl Into<String>) -> Self {
        Self {
            prompt: Some(prompt.into()),
            ..Self::default()
        }
    }

    /// Continues after `history`.
    #[must_use]
    pub fn with_history(mut self, history: Vec<Message>) -> Self {
        self.history = history;
        self
    }

    /// Sets the session id.
    #[must_use]
    pub fn session_id(mut self, id: impl Into<String>) -> Self {
        self.session_id = Some(id.into());
        self
    }

    /// Sets the cancellation signal.
    #[must_use]
    pub fn cancellation(mut self, signal: CancellationSignal) -> Self {
        self.cancellation = Some(signal);
        self
    }
}

impl From<&str> for RunInput {
    fn from(prompt: &str) -> Self {
        Self::new(prompt)
    }
}

impl From<String> for RunInput {
    fn from(prompt: String) -> Self {
        Self::new(prompt)
    }
}

struct Inner {
    provider: ProviderSource,
    provider_name: String,
    model: String,
    instructions: Option<String>,
    max_turns: u32,
    max_output_tokens: Option<u32>,
    temperature: Option<f64>,
    strict: Strict,
    executor: ToolExecutor,
    workspace: PathBuf,
    agent_id: String,
    hooks: Option<HookDispatcher>,
    approvals: Option<Arc<dyn ApprovalHandler>>,
    view_filter: ViewFilter,
    schema_budget: SchemaBudget,
    env: Option<ToolEnvironment>,
}

/// The run loop over one tool layer and one model; see the [module docs](self).
///
/// Cheap to clone (shared); runs may proceed concurrently, each with its own history,
/// disclosure state and cancellation.
#[derive(Clone)]
pub struct AgentRunner {
    inner: Arc<Inner>,
}

impl fmt::Debug for AgentRunner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentRunner")
            .field("provider", &self.inner.provider_name)
            .field("model", &self.inner.model)
            .field("max_turns", &self.inner.max_turns)
            .field("workspace", &self.inner.workspace)
            .finish_non_exhaustive()
    }
}

impl AgentRunner {
    /// Loads the agent YAML (plus `IRIS_` environment overrides), assembles its tool
    /// layer and builds its model (seed 000: `AgentRunner.from_config_path`).
    ///
    /// # Errors
    /// Loading and assembly errors ([`AgentConfig::load`], [`build_tool_registry`]),
    /// and [`Error::Model`] when `model` is missing or cannot become a provider.
    pub async fn from_config_path(path: impl AsRef<Path>) -> Result<Self> {
        let loaded = AgentConfig::load(path)?;
        Self::from_loaded(&loaded, &HostRegistry::new(), None).await
    }

    /// Like [`AgentRunner::from_config_path`] for a config already loaded, with the
    /// host's registered keys, and optionally a `model` replacing the YAML's (what
    /// `iris run --model` does). The runner owns the assembled environment:
    /// [`AgentRunner::close`] closes it.
    ///
    /// # Errors
    /// As [`AgentRunner::from_config_path`].
    pub async fn from_loaded(
        loaded: &LoadedConfig,
        host: &HostRegistry,
        model: Option<ModelConfig>,
    ) -> Result<Self> {
        let model_error = |code: &'static str, message: String| Error::Model {
            file: loaded.file.clone(),
            code,
            message,
        };
        let model = match model.or_else(|| loaded.config.model.clone()) {
            Some(model) => model,
            None => {
                return Err(model_error(
                    codes::CONFIG_INVALID,
                    "the agent YAML has no `model` section; add one, e.g. \
                     `model: {provider: openai, model: gpt-4.1-mini}`"
                        .into(),
                ));
            }
        };
        model.check().map_err(|(key, message)| {
            model_error(codes::CONFIG_INVALID, format!("{key}: {message}"))
        })?;
        let provider = model
            .provider()
            .map_err(|e| model_error(e.code(), e.to_string()))?;
        let env = build_tool_registry(loaded, host).await?;
        let mut builder = AgentRunnerBuilder::from_source(provider, env.executor.clone())
            .provider_name(model.provider.as_str())
            .model(model.model_name())
            .workspace(env.workspace.clone())
            .max_turns(loaded.config.max_turns)
            .strict(model.strict_mode());
        if let Some(text) = &loaded.config.instructions {
            builder = builder.instructions(text.clone());
        }
        if let Some(max) = model.max_output_tokens {
            builder = builder.max_output_tokens(max);
        }
        if let Some(t) = model.temperature {
            builder = builder.temperature(t);
        }
        if let Some(hooks) = &env.hooks {
            builder = builder.hooks(hooks.clone());
        }
        if let Some(stem) = loaded.file.file_stem().and_then(|s| s.to_str()) {
            builder = builder.agent_id(stem);
        }
        builder.env = Some(env);
        Ok(builder.build())
    }

    /// A builder for hosts that assemble the tool layer in Rust.
    ///
    /// ```
    /// use iris_executor::ToolExecutor;
    /// use iris_providers::ScriptedProvider;
    /// use iris_runner::AgentRunner;
    /// use iris_tools_core::ToolRegistry;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let executor = ToolExecutor::new(ToolRegistry::new());
    /// let provider = ScriptedProvider::from_yaml("- text: Hello!").unwrap();
    /// let runner = AgentRunner::builder(provider, executor).workspace(".").build();
    /// assert_eq!(runner.run("Hi").await.output(), Some("Hello!"));
    /// # });
    /// ```
    pub fn builder(
        provider: impl CompletionProvider + 'static,
        executor: ToolExecutor,
    ) -> AgentRunnerBuilder {
        let provider: Arc<dyn CompletionProvider> = Arc::new(provider);
        let name = provider.name().to_owned();
        AgentRunnerBuilder::from_source(ProviderSource::Shared(provider), executor)
            .provider_name(name)
    }

    /// The executor the runner sends calls through.
    pub fn executor(&self) -> &ToolExecutor {
        &self.inner.executor
    }

    /// The environment [`AgentRunner::from_config_path`] assembled (`None` for a
    /// runner built with [`AgentRunner::builder`]).
    pub fn environment(&self) -> Option<&ToolEnvironment> {
        self.inner.env.as_ref()
    }

    /// The provider's name (`openai`, `scripted`, …) and the model.
    pub fn model(&self) -> (&str, &str) {
        (&self.inner.provider_name, &self.inner.model)
    }

    /// Closes what the runner assembled (MCP servers, the command service). Safe to
    /// call twice; a no-op for a builder runner.
    ///
    /// # Errors
    /// As [`ToolEnvironment::close`].
    pub async fn close(&self) -> Result<()> {
        match &self.inner.env {
            Some(env) => env.close().await,
            None => Ok(()),
        }
    }

    /// Runs to the end and returns how it ended. The model is asked for whole turns
    /// (no streaming); use [`AgentRunner::run_streamed`] to watch.
    pub async fn run(&self, input: impl Into<RunInput>) -> RunOutcome {
        let mut sink = Sink::None;
        self.drive(input.into(), &mut sink).await
    }

    /// Starts a run and streams its [`RunEvent`]s, ending with
    /// [`RunEvent::Finished`]. The model's text arrives as it is generated.
    ///
    /// The run proceeds on its own task; dropping the stream cancels it (in-flight
    /// calls are cancelled, `run.finished` hooks still fire).
    pub fn run_streamed(&self, input: impl Into<RunInput>) -> RunStream {
        let mut input = input.into();
        let cancel = input
            .cancellation
            .get_or_insert_with(CancellationSignal::new)
            .clone();
        let (tx, rx) = mpsc::unbounded_channel();
        let runner = self.clone();
        tokio::spawn(async move {
            let mut sink = Sink::Channel(tx);
            let outcome = runner.drive(input, &mut sink).await;
            sink.emit(RunEvent::Finished { outcome });
        });
        RunStream { rx, cancel }
    }

    /// The loop, for both entry points.
    async fn drive(&self, input: RunInput, sink: &mut Sink) -> RunOutcome {
        let inner = &*self.inner;
        let run_id = new_run_id();
        let session_id = input.session_id.clone().unwrap_or_else(|| run_id.clone());
        let span = tracing::info_span!(
            target: TRACING_TARGET,
            "invoke_agent",
            "otel.name" = format!("invoke_agent {}", inner.agent_id),
            "gen_ai.operation.name" = "invoke_agent",
            "gen_ai.agent.name" = inner.agent_id.as_str(),
            "gen_ai.provider.name" = inner.provider_name.as_str(),
            "gen_ai.request.model" = inner.model.as_str(),
            "gen_ai.conversation.id" = session_id.as_str(),
            "iris.run.id" = run_id.as_str(),
            "iris.run.status" = tracing::field::Empty,
            "iris.run.turns" = tracing::field::Empty,
            "gen_ai.usage.input_tokens" = tracing::field::Empty,
            "gen_ai.usage.output_tokens" = tracing::field::Empty,
            "error.type" = tracing::field::Empty,
        );
        let mut state = RunState {
            run_id,
            session_id,
            cancel: input.cancellation.clone().unwrap_or_default(),
            disclosure: DisclosureState::new(),
            history: input.history.clone(),
            usage: Usage::default(),
            turns: 0,
        };
        let outcome = self
            .drive_inner(input, &mut state, sink)
            .instrument(span.clone())
            .await;
        span.record("iris.run.status", outcome.status());
        span.record("iris.run.turns", state.turns);
        span.record("gen_ai.usage.input_tokens", state.usage.input_tokens);
        span.record("gen_ai.usage.output_tokens", state.usage.output_tokens);
        if let RunOutcome::Failed { error } = &outcome {
            span.record("error.type", error.code.as_str());
        }
        outcome
    }

    async fn drive_inner(
        &self,
        input: RunInput,
        state: &mut RunState,
        sink: &mut Sink,
    ) -> RunOutcome {
        let inner = &*self.inner;
        let provider = inner.provider.for_run();
        sink.emit(RunEvent::RunStarted {
            run_id: state.run_id.clone(),
            provider: inner.provider_name.clone(),
            model: inner.model.clone(),
        });
        let input_json = json!({
            "prompt": input.prompt,
            "history_messages": input.history.len(),
        });
        if let Some(prompt) = input.prompt {
            state.history.push(Message::user(prompt));
        }
        if state.history.is_empty() {
            let outcome = RunOutcome::Failed {
                error: RunError::new(
                    codes::RUN_INPUT_INVALID,
                    "a run needs a prompt or a history to continue",
                ),
            };
            return outcome;
        }
        self.fire_started(state, input_json).await;
        let outcome = self.turns(&*provider, state, sink).await;
        self.fire_finished(state, &outcome).await;
        outcome
    }

    /// Turns until the run ends.
    async fn turns(
        &self,
        provider: &dyn CompletionProvider,
        state: &mut RunState,
        sink: &mut Sink,
    ) -> RunOutcome {
        let inner = &*self.inner;
        let view = inner.executor.registry().view(inner.view_filter.clone());
        loop {
            if state.cancel.requested() {
                return RunOutcome::Cancelled;
            }
            if state.turns >= inner.max_turns {
                return RunOutcome::Failed {
                    error: RunError::new(
                        codes::RUN_MAX_TURNS,
                        format!(
                            "the model still asked for tools after {} model requests \
                             (max_turns)",
                            inner.max_turns
                        ),
                    ),
                };
            }
            state.turns += 1;
            let turn = state.turns;
            let sent = state.disclosure.request_specs(&view, inner.schema_budget);
            let sent_names: BTreeSet<String> = sent.specs.iter().map(|s| s.name.clone()).collect();
            sink.emit(RunEvent::TurnStarted {
                turn,
                tools: sent.specs.iter().map(|s| s.name.clone()).collect(),
            });
            let mut request = CompletionRequest::new(inner.model.clone())
                .with_messages(state.history.iter().cloned())
                .with_tools(sent.specs)
                .with_strict(inner.strict);
            request.instructions.clone_from(&inner.instructions);
            request.max_output_tokens = inner.max_output_tokens;
            request.temperature = inner.temperature;

            let response = tokio::select! {
                biased;
                () = state.cancel.cancelled() => return RunOutcome::Cancelled,
                r = self.request(provider, &request, sink).instrument(chat_span(inner, &request)) => r,
            };
            let response = match response.and_then(CompletionResponse::check_refusal) {
                Ok(r) => r,
                Err(e) => {
                    return RunOutcome::Failed {
                        error: RunError::new(e.code(), e.to_string()),
                    };
                }
            };
            state.usage += response.usage;
            sink.emit(RunEvent::Usage {
                turn,
                usage: response.usage,
                total: state.usage,
            });
            state.history.push(response.to_message());
            if response.tool_calls.is_empty() {
                return RunOutcome::Completed {
                    output: response.text,
                    usage: state.usage,
                    turns: state.turns,
                    history: std::mem::take(&mut state.history),
                };
            }
            let ctx = self.turn_context(state, turn);
            match self
                .run_calls(&response.tool_calls, &sent_names, &ctx, state, turn, sink)
                .await
            {
                Ok(results) => {
                    state.history.push(Message::tool_results(&results));
                    if state.cancel.requested() {
                        return RunOutcome::Cancelled;
                    }
                }
                Err(waiting) => return waiting,
            }
        }
    }

    /// One model request: whole, or streamed with text deltas forwarded.
    async fn request(
        &self,
        provider: &dyn CompletionProvider,
        request: &CompletionRequest,
        sink: &mut Sink,
    ) -> std::result::Result<CompletionResponse, ProviderError> {
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

    /// The context every call of one turn shares.
    fn turn_context(&self, state: &RunState, turn: u32) -> ToolExecutionContext {
        let inner = &*self.inner;
        let mut ctx = ToolExecutionContext::new(&inner.workspace)
            .session_id(state.session_id.clone())
            .agent_id(inner.agent_id.clone())
            .run_id(state.run_id.clone())
            .activation_id(format!("{}:{turn}", state.run_id))
            .cancellation(state.cancel.clone());
        ctx = state.disclosure.attach(ctx);
        if inner.strict == Strict::Yes {
            ctx = ctx.with_extension(StrictModeCall);
        }
        ctx
    }

    /// Runs one turn's calls in the executor's plan order. Calls the model could not
    /// make (malformed arguments, a tool this request did not carry) get an error
    /// result without running. `Err` is the waiting outcome: a call needs a human
    /// nobody here could answer; it and every later call of the turn did not run.
    async fn run_calls(
        &self,
        calls: &[ModelToolCall],
        sent: &BTreeSet<String>,
        ctx: &ToolExecutionContext,
        state: &RunState,
        turn: u32,
        sink: &mut Sink,
    ) -> std::result::Result<Vec<ToolResult>, RunOutcome> {
        let inner = &*self.inner;
        let registry = inner.executor.registry();
        let mut slots: Vec<Option<ToolResult>> = vec![None; calls.len()];
        let mut runnable: Vec<(usize, ToolUse)> = Vec::with_capacity(calls.len());
        let mut refuse =
            |slot: &mut Option<ToolResult>, call: &ModelToolCall, result: ToolResult| {
                sink.emit(RunEvent::ToolCallStarted {
                    turn,
                    call_id: call.id.clone(),
                    tool_name: call.name.clone(),
                    arguments: call.arguments.clone(),
                });
                sink.emit(RunEvent::ToolCallFinished {
                    turn,
                    result: result.clone(),
                });
                *slot = Some(result);
            };
        for (i, call) in calls.iter().enumerate() {
            if let Some(result) = call.problem_result() {
                refuse(&mut slots[i], call, result);
                continue;
            }
            if let Ok(tool) = registry.get(&call.name) {
                let def = tool.definition();
                if !sent.contains(&def.name) {
                    let hint = if def.deferred {
                        "; find it with tool_search first"
                    } else {
                        ""
                    };
                    let output = ToolOutput::error(
                        ToolErrorInfo::new(
                            core_codes::TOOL_NOT_LOADED,
                            format!(
                                "`{}` is not among the tools of this request{hint}",
                                def.name
                            ),
                        )
                        .with_detail("tool_name", def.name.as_str()),
                    );
                    refuse(&mut slots[i], call, output.into_result(&call.id, &def.name));
                    continue;
                }
            }
            if let Some(tool_use) = call.to_tool_use() {
                runnable.push((i, tool_use));
            }
        }
        let uses: Vec<ToolUse> = runnable.iter().map(|(_, u)| u.clone()).collect();
        let plan = inner.executor.prepare_many(&uses, ctx);
        for batch in plan.batches() {
            let batch_uses = &uses[batch.indices()];
            for u in batch_uses {
                sink.emit(RunEvent::ToolCallStarted {
                    turn,
                    call_id: u.id.clone(),
                    tool_name: u.name.clone(),
                    arguments: u.input.clone(),
                });
            }
            let results = if batch.is_parallel() && batch.len() > 1 {
                inner.executor.execute_many(batch_uses, ctx).await
            } else {
                let mut one = Vec::with_capacity(batch_uses.len());
                for u in batch_uses {
                    one.push(inner.executor.execute_one(u, ctx, None).await);
                }
                one
            };
            for (offset, mut result) in results.into_iter().enumerate() {
                let position = batch.indices().start + offset;
                let tool_use = &uses[position];
                if let Some(approval) = result.output.approval().cloned() {
                    let request = ApprovalRequest {
                        run_id: state.run_id.clone(),
                        call_id: tool_use.id.clone(),
                        tool_name: result.tool_name.clone(),
                        arguments: approval.arguments.clone(),
                        reason: approval.reason.clone(),
                    };
                    sink.emit(RunEvent::ApprovalRequested {
                        request: request.clone(),
                    });
                    let decision = match &inner.approvals {
                        Some(handler) => handler.decide(&request).await,
                        None => ApprovalDecision::Defer,
                    };
                    result = match decision {
                        ApprovalDecision::Approve => {
                            inner
                                .executor
                                .execute_one(tool_use, ctx, Some(&tool_use.id))
                                .await
                        }
                        ApprovalDecision::Deny { reason } => ToolOutput::error(
                            ToolErrorInfo::new(
                                core_codes::APPROVAL_DENIED,
                                format!(
                                    "the user denied this `{}` call: {reason}",
                                    result.tool_name
                                ),
                            )
                            .with_detail("reason", reason),
                        )
                        .into_result(&tool_use.id, &result.tool_name),
                        ApprovalDecision::Defer => {
                            return Err(RunOutcome::Waiting {
                                run_id: state.run_id.clone(),
                                interaction: Interaction::Approval(request),
                            });
                        }
                    };
                }
                sink.emit(RunEvent::ToolCallFinished {
                    turn,
                    result: result.clone(),
                });
                slots[runnable[position].0] = Some(result);
            }
        }
        Ok(slots
            .into_iter()
            .zip(calls)
            .map(|(slot, call)| {
                slot.unwrap_or_else(|| {
                    ToolOutput::err(core_codes::CANCELLED, "the call did not run")
                        .into_result(&call.id, &call.name)
                })
            })
            .collect())
    }

    async fn fire_started(&self, state: &RunState, input: Value) {
        let Some(hooks) = &self.inner.hooks else {
            return;
        };
        let run = json!({
            "run_id": state.run_id,
            "agent_id": self.inner.agent_id,
            "session_id": state.session_id,
            "provider": self.inner.provider_name,
            "model": self.inner.model,
            "max_turns": self.inner.max_turns,
        });
        hooks.run_started(self.common(state), run, input).await;
    }

    async fn fire_finished(&self, state: &RunState, outcome: &RunOutcome) {
        let Some(hooks) = &self.inner.hooks else {
            return;
        };
        let status = match outcome {
            RunOutcome::Completed { .. } => RunStatus::Completed,
            RunOutcome::Waiting { .. } => RunStatus::Waiting,
            RunOutcome::Failed { .. } => RunStatus::Failed,
            RunOutcome::Cancelled => RunStatus::Cancelled,
        };
        let mut result = json!({
            "status": outcome.status(),
            "turns": state.turns,
            "usage": state.usage,
        });
        match outcome {
            RunOutcome::Completed { output, .. } => result["output"] = json!(output),
            RunOutcome::Waiting { interaction, .. } => result["interaction"] = json!(interaction),
            RunOutcome::Failed { error } => result["error"] = json!(error),
            RunOutcome::Cancelled => {}
        }
        hooks.run_finished(self.common(state), result, status).await;
    }

    fn common(&self, state: &RunState) -> EventCommon {
        EventCommon {
            agent_id: self.inner.agent_id.clone(),
            session_id: state.session_id.clone(),
            workspace: self.inner.workspace.clone(),
            run_id: state.run_id.clone(),
            activation_id: format!("{}:{}", state.run_id, state.turns),
            occurred_at: iris_hooks::event::rfc3339_now(),
        }
    }
}

/// One run's mutable state.
struct RunState {
    run_id: String,
    session_id: String,
    cancel: CancellationSignal,
    disclosure: DisclosureState,
    history: Vec<Message>,
    usage: Usage,
    turns: u32,
}

/// Where events go: nowhere (`run`) or a channel (`run_streamed`).
enum Sink {
    None,
    Channel(mpsc::UnboundedSender<RunEvent>),
}

impl Sink {
    fn is_streaming(&self) -> bool {
        matches!(self, Sink::Channel(_))
    }

    fn emit(&mut self, event: RunEvent) {
        if let Sink::Channel(tx) = self {
            // A dropped receiver cancelled the run already; the event has no reader.
            let _ = tx.send(event);
        }
    }
}

/// The events of a streamed run ([`AgentRunner::run_streamed`]); a `Stream` of
/// [`RunEvent`] whose last item is [`RunEvent::Finished`]. Dropping it cancels the run.
#[derive(Debug)]
pub struct RunStream {
    rx: mpsc::UnboundedReceiver<RunEvent>,
    cancel: CancellationSignal,
}

impl RunStream {
    /// The next event; `None` after [`RunEvent::Finished`].
    pub async fn next(&mut self) -> Option<RunEvent> {
        self.rx.recv().await
    }

    /// The run's cancellation signal: raising it cancels the run, which still ends
    /// with [`RunEvent::Finished`] (`Cancelled`).
    pub fn cancellation(&self) -> &CancellationSignal {
        &self.cancel
    }
}

impl Stream for RunStream {
    type Item = RunEvent;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<RunEvent>> {
        self.get_mut().rx.poll_recv(cx)
    }
}

impl Drop for RunStream {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// Builds an [`AgentRunner`] from parts ([`AgentRunner::builder`]).
pub struct AgentRunnerBuilder {
    provider: ProviderSource,
    provider_name: String,
    model: String,
    instructions: Option<String>,
    max_turns: u32,
    max_output_tokens: Option<u32>,
    temperature: Option<f64>,
    strict: Strict,
    executor: ToolExecutor,
    workspace: PathBuf,
    agent_id: String,
    hooks: Option<HookDispatcher>,
    approvals: Option<Arc<dyn ApprovalHandler>>,
    view_filter: ViewFilter,
    schema_budget: SchemaBudget,
    env: Option<ToolEnvironment>,
}

impl fmt::Debug for AgentRunnerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentRunnerBuilder")
            .field("provider", &self.provider_name)
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

impl AgentRunnerBuilder {
    fn from_source(provider: ProviderSource, executor: ToolExecutor) -> Self {
        Self {
            provider,
            provider_name: String::new(),
            model: "default".into(),
            instructions: None,
            max_turns: DEFAULT_MAX_TURNS,
            max_output_tokens: None,
            temperature: None,
            strict: Strict::No,
            executor,
            workspace: PathBuf::from("."),
            agent_id: "agent".into(),
            hooks: None,
            approvals: None,
            view_filter: ViewFilter::default(),
            schema_budget: SchemaBudget::chars(DEFAULT_REVEALED_SCHEMA_CHARS),
            env: None,
        }
    }

    fn provider_name(mut self, name: impl Into<String>) -> Self {
        self.provider_name = name.into();
        self
    }

    /// The model name sent with every request (default `default`).
    #[must_use]
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = model.into();
        self
    }

    /// The system prompt.
    #[must_use]
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = Some(text.into());
        self
    }

    /// The model requests one run may make (default 50; at least 1).
    #[must_use]
    pub fn max_turns(mut self, turns: u32) -> Self {
        self.max_turns = turns.max(1);
        self
    }

    /// The output token cap of each request.
    #[must_use]
    pub fn max_output_tokens(mut self, max: u32) -> Self {
        self.max_output_tokens = Some(max);
        self
    }

    /// The sampling temperature.
    #[must_use]
    pub fn temperature(mut self, temperature: f64) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Sends strict-mode tool schemas; calls then run with [`StrictModeCall`] and
    /// the executor gets a [`StrictNullsLayer`].
    #[must_use]
    pub fn strict(mut self, strict: Strict) -> Self {
        self.strict = strict;
        self
    }

    /// The workspace every call runs in (default `.`).
    #[must_use]
    pub fn workspace(mut self, workspace: impl Into<PathBuf>) -> Self {
        self.workspace = workspace.into();
        self
    }

    /// The agent id (hooks, traces); default `agent`, or the YAML file's stem.
    #[must_use]
    pub fn agent_id(mut self, id: impl Into<String>) -> Self {
        self.agent_id = id.into();
        self
    }

    /// The hooks whose `run.started` / `run.finished` registrations the loop fires.
    /// (Tool hooks are the executor's: give it the same dispatcher.)
    #[must_use]
    pub fn hooks(mut self, hooks: HookDispatcher) -> Self {
        self.hooks = Some(hooks);
        self
    }

    /// Answers approvals during a run; without one, a call that needs a human makes
    /// the run wait.
    #[must_use]
    pub fn approval_handler(mut self, handler: impl ApprovalHandler + 'static) -> Self {
        self.approvals = Some(Arc::new(handler));
        self
    }

    /// Which tools of the registry the model sees (default: every non-system tool).
    #[must_use]
    pub fn view_filter(mut self, filter: ViewFilter) -> Self {
        self.view_filter = filter;
        self
    }

    /// The budget for revealed deferred tools' specs per request (default
    /// [`DEFAULT_REVEALED_SCHEMA_CHARS`]).
    #[must_use]
    pub fn schema_budget(mut self, budget: SchemaBudget) -> Self {
        self.schema_budget = budget;
        self
    }

    /// The runner.
    pub fn build(self) -> AgentRunner {
        let executor = if self.strict == Strict::Yes {
            self.executor.with_layer(StrictNullsLayer)
        } else {
            self.executor
        };
        let provider_name = if self.provider_name.is_empty() {
            "unknown".to_owned()
        } else {
            self.provider_name
        };
        AgentRunner {
            inner: Arc::new(Inner {
                provider: self.provider,
                provider_name,
                model: self.model,
                instructions: self.instructions,
                max_turns: self.max_turns,
                max_output_tokens: self.max_output_tokens,
                temperature: self.temperature,
                strict: self.strict,
                executor,
                workspace: self.workspace,
                agent_id: self.agent_id,
                hooks: self.hooks,
                approvals: self.approvals,
                view_filter: self.view_filter,
                schema_budget: self.schema_budget,
                env: self.env,
            }),
        }
    }
}

/// The `chat` span of one model request (OpenTelemetry GenAI conventions).
fn chat_span(inner: &Inner, request: &CompletionRequest) -> tracing::Span {
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

fn stop_name(stop: &StopReason) -> &str {
    match stop {
        StopReason::EndTurn => "stop",
        StopReason::ToolUse => "tool_calls",
        StopReason::MaxTokens => "length",
        StopReason::Refusal => "content_filter",
        StopReason::Other(other) => other,
        _ => "other",
    }
}

/// A run id unique in this process and unlikely to repeat across processes:
/// `run_<unix millis, hex>_<pid, hex>_<counter>`.
fn new_run_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("run_{millis:x}_{:x}_{n}", std::process::id())
}
