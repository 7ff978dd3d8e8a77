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

use std::fmt;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_core::Stream;
use iris_discovery::SchemaBudget;
use iris_executor::ToolExecutor;
use iris_hooks::HookDispatcher;
use iris_mcp::MCPManager;
use iris_providers::chat::Message;
use iris_providers::{CompletionProvider, RetryPolicy, RetryingProvider, Strict, StrictNullsLayer};
use iris_tools_core::{BoxFuture, CancellationSignal, ViewFilter};
use tokio::sync::mpsc;

use crate::assemble::{ToolEnvironment, build_tool_registry};
use crate::budget::Limits;
use crate::config::{
    AgentConfig, BackgroundCalls, DEFAULT_MAX_TURNS, LoadedConfig, RunStoreConfig,
};
use crate::context::RetentionConfig;
use crate::error::{Error, Result, codes};
use crate::host::HostRegistry;
use crate::interaction::InteractionHandler;
use crate::loop_tool::RunLoopTool;
use crate::model::{ModelClient, ModelConfig};
use crate::outcome::{Answer, RunError, RunEvent, RunOutcome};
use crate::run_loop::{DEFAULT_LEASE_TTL, Sink};
use crate::secret::{MemorySecretStore, STORE_SECRET, SecretStore, SecretTarget, Secrets};
use crate::store::{MemoryRunStore, PostgresRunStore, RunStore, SqliteRunStore};
use crate::subagent::{ChildProviderFactory, Subagents};
use iris_command::CommandBinding;

/// The `tracing` target of the loop's spans (`invoke_agent`, `chat`).
pub const TRACING_TARGET: &str = "iris_runner";

/// How many characters of revealed deferred tools' specs one request carries by
/// default (see [`SchemaBudget`]); active tools are always sent.
pub const DEFAULT_REVEALED_SCHEMA_CHARS: usize = 40_000;

/// Why an MCP server's request for input is not answered when the run has no
/// [`InteractionHandler`] at all: the run waits for it (a 2026-07-28 session) or it
/// is declined (an older one).
pub const ELICITATION_NO_HOST: &str =
    "nobody can answer during this run (it has no interaction handler: a non-interactive run)";

/// Why an MCP server's request for input is not answered when the run's
/// [`InteractionHandler`] left it for later (`None`): the run waits for it (a
/// 2026-07-28 session) or it is declined (an older one, which cannot wait).
pub const ELICITATION_NOT_ANSWERED: &str =
    "the run's interaction handler did not answer it now (it is left for resume)";

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
    /// A `subagent` child run's id and parent ([`crate::subagent`]).
    pub(crate) child: Option<crate::subagent::ChildStart>,
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

/// The built runner: the builder's [`RunnerConfig`] and [`RunnerParts`] moved in
/// whole, and what `build` derives from the rest (the retrying provider, the executor
/// with its strict-mode layer, the secrets).
pub(crate) struct Inner {
    /// The settings, as the builder held them.
    pub(crate) config: RunnerConfig,
    /// What the run works with, as the builder held it.
    pub(crate) parts: RunnerParts,
    pub(crate) provider: ModelClient,
    pub(crate) provider_name: String,
    pub(crate) executor: ToolExecutor,
    pub(crate) secrets: Secrets,
}

/// What a runner works with besides its settings and its model and executor, one
/// struct held by [`AgentRunnerBuilder`] and moved whole into the runner.
#[derive(Default)]
pub(crate) struct RunnerParts {
    /// The hooks whose `run.started` / `run.finished` the loop fires.
    pub(crate) hooks: Option<HookDispatcher>,
    pub(crate) interactions: Option<Arc<dyn InteractionHandler>>,
    pub(crate) store: Option<Arc<dyn RunStore>>,
    /// The tool environment the runner owns and closes (YAML route).
    pub(crate) env: Option<ToolEnvironment>,
    pub(crate) subagents: Option<Arc<Subagents>>,
    pub(crate) child_providers: Option<Arc<dyn ChildProviderFactory>>,
    pub(crate) is_child: bool,
    /// The MCP manager whose catalog is refreshed between model requests.
    pub(crate) mcp: Option<Arc<MCPManager>>,
    /// The model configuration the provider was built from (YAML route), stored
    /// with each new run.
    pub(crate) model_config: Option<ModelConfig>,
}

/// The plain settings of a runner, one struct held by [`AgentRunnerBuilder`] and by
/// the runner it builds (never copied field by field); the builder's setters write
/// them, the loop reads them.
#[derive(Debug, Clone)]
pub(crate) struct RunnerConfig {
    pub(crate) model: String,
    pub(crate) instructions: Option<String>,
    pub(crate) max_turns: u32,
    pub(crate) max_output_tokens: Option<u32>,
    pub(crate) temperature: Option<f64>,
    pub(crate) strict: Strict,
    pub(crate) workspace: PathBuf,
    pub(crate) agent_id: String,
    pub(crate) view_filter: ViewFilter,
    pub(crate) schema_budget: SchemaBudget,
    pub(crate) goal: Option<String>,
    pub(crate) retention: Option<RetentionConfig>,
    pub(crate) background_calls: BackgroundCalls,
    pub(crate) lease_ttl: Duration,
    pub(crate) limits: Limits,
}

impl Default for RunnerConfig {
    fn default() -> Self {
        Self {
            model: "default".into(),
            instructions: None,
            max_turns: DEFAULT_MAX_TURNS,
            max_output_tokens: None,
            temperature: None,
            strict: Strict::No,
            workspace: PathBuf::from("."),
            agent_id: "agent".into(),
            view_filter: ViewFilter::default(),
            schema_budget: SchemaBudget::chars(DEFAULT_REVEALED_SCHEMA_CHARS),
            goal: None,
            retention: None,
            background_calls: BackgroundCalls::Wait,
            lease_ttl: DEFAULT_LEASE_TTL,
            limits: Limits::default(),
        }
    }
}

/// The run loop over one tool layer and one model; see the [module docs](self).
///
/// Cheap to clone (shared); runs may proceed concurrently, each with its own history,
/// disclosure state and cancellation.
#[derive(Clone)]
pub struct AgentRunner {
    pub(crate) inner: Arc<Inner>,
}

impl fmt::Debug for AgentRunner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentRunner")
            .field("provider", &self.inner.provider_name)
            .field("model", &self.inner.config.model)
            .field("max_turns", &self.inner.config.max_turns)
            .field("workspace", &self.inner.config.workspace)
            .finish_non_exhaustive()
    }
}

/// Where a runner built from a YAML gets its tool layer
/// ([`AgentRunner::builder_from_loaded`]). A `&HostRegistry` or a `&ToolEnvironment`
/// converts into it.
#[derive(Debug, Clone, Copy)]
pub enum ToolSource<'a> {
    /// Assemble the YAML's tool layer with these host keys; the built runner owns it
    /// and closes it with [`AgentRunner::close`].
    Assemble(&'a HostRegistry),
    /// An environment the caller assembled from the same YAML and keeps (and closes):
    /// for hosts that manage its lifetime themselves, such as the `iris` CLI, which
    /// closes it on a signal.
    Assembled(&'a ToolEnvironment),
}

impl<'a> From<&'a HostRegistry> for ToolSource<'a> {
    fn from(host: &'a HostRegistry) -> Self {
        ToolSource::Assemble(host)
    }
}

impl<'a> From<&'a ToolEnvironment> for ToolSource<'a> {
    fn from(env: &'a ToolEnvironment) -> Self {
        ToolSource::Assembled(env)
    }
}

impl AgentRunner {
    /// A convenience over [`AgentRunner::builder_from_loaded`]: loads the agent YAML
    /// (plus `IRIS_` environment overrides), assembles its tool layer with no host
    /// keys and builds the runner with nothing added.
    ///
    /// # Errors
    /// As [`AgentRunner::builder_from_loaded`], and [`AgentConfig::load`]'s.
    pub async fn from_config_path(path: impl AsRef<Path>) -> Result<Self> {
        let loaded = AgentConfig::load(path)?;
        Ok(
            Self::builder_from_loaded(&loaded, &HostRegistry::new(), None)
                .await?
                .build(),
        )
    }

    /// The YAML route, one of the two routes to a runner beside
    /// [`AgentRunner::builder`]: a builder holding everything `loaded` says (and, with
    /// `model`, that model instead of the YAML's, as `iris run --model` does), its run
    /// store opened, over the tool layer `tools` names — assembled here with the
    /// host's keys (a `&HostRegistry`; the runner owns it) or one the caller assembled
    /// from `loaded` and keeps (a `&ToolEnvironment`). A host adds what YAML cannot
    /// say — an [`InteractionHandler`] (a terminal prompt, a UI), a view filter —
    /// before [`AgentRunnerBuilder::build`], which both routes end in and which adds
    /// the same retries and defaults.
    ///
    /// # Errors
    /// [`Error::Model`] when `model` (or the YAML's) is missing or cannot become a
    /// provider, [`Error::Store`] when the run store cannot be opened, and assembly
    /// errors ([`build_tool_registry`]).
    pub async fn builder_from_loaded(
        loaded: &LoadedConfig,
        tools: impl Into<ToolSource<'_>>,
        model: Option<ModelConfig>,
    ) -> Result<AgentRunnerBuilder> {
        let (model, provider) = checked_model(loaded, model)?;
        let store = open_store(loaded).await?;
        let builder = match tools.into() {
            ToolSource::Assemble(host) => {
                let env = build_tool_registry(loaded, host).await?;
                let mut builder = AgentRunnerBuilder::from_yaml(loaded, &env, &model, provider);
                builder.parts.env = Some(env);
                builder
            }
            ToolSource::Assembled(env) => {
                AgentRunnerBuilder::from_yaml(loaded, env, &model, provider)
            }
        };
        Ok(builder.run_store(store))
    }

    /// Checks the model a runner from `loaded` would use (`model`, else the YAML's)
    /// and builds its provider, starting nothing: a missing section, a missing key, a
    /// bad `base_url` or an unreadable script are refused before any tool or server
    /// starts.
    ///
    /// # Errors
    /// As [`AgentRunner::builder_from_loaded`] for the model.
    pub fn check_model(loaded: &LoadedConfig, model: Option<ModelConfig>) -> Result<()> {
        checked_model(loaded, model).map(|_| ())
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
        AgentRunnerBuilder::from_source(ModelClient::Shared(provider), executor).provider_name(name)
    }

    /// The executor the runner sends calls through.
    pub fn executor(&self) -> &ToolExecutor {
        &self.inner.executor
    }

    /// The environment [`AgentRunner::from_config_path`] assembled (`None` for a
    /// runner built with [`AgentRunner::builder`]).
    pub fn environment(&self) -> Option<&ToolEnvironment> {
        self.inner.parts.env.as_ref()
    }

    /// The provider's name (`openai`, `scripted`, …) and the model.
    pub fn model(&self) -> (&str, &str) {
        (&self.inner.provider_name, &self.inner.config.model)
    }

    /// Closes what the runner assembled (MCP servers, the command service). Safe to
    /// call twice; a no-op for a builder runner.
    ///
    /// # Errors
    /// As [`ToolEnvironment::close`].
    pub async fn close(&self) -> Result<()> {
        match &self.inner.parts.env {
            Some(env) => env.close().await,
            None => Ok(()),
        }
    }

    /// Runs to the end and returns how it ended. The model is asked for whole turns
    /// (no streaming); use [`AgentRunner::run_streamed`] to watch.
    pub async fn run(&self, input: impl Into<RunInput>) -> RunOutcome {
        let mut sink = Sink::None;
        self.drive_new(input.into(), &mut sink).await
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
            let outcome = runner.drive_new(input, &mut sink).await;
            sink.emit(RunEvent::Finished { outcome });
        });
        RunStream { rx, cancel }
    }

    /// Continues a waiting run with the answer to its pending interaction, to its
    /// end (or its next wait). The run may have waited in another process: its
    /// state comes from the run store. An approved call is checked against the
    /// current permission policy and workspace when it runs.
    ///
    /// # Errors
    /// Before the run continues: `RUN_NOT_FOUND` (no such run, or no store),
    /// `RUN_BUSY` (another process drives it), `RUN_NOT_WAITING`,
    /// `RUN_INTERACTION_STALE` (not the pending interaction: answered already, or
    /// never asked), `RUN_ANSWER_INVALID` (the wrong kind of answer, or not one of a
    /// question's options), `RUN_STORE_FAILED`.
    pub async fn resume(
        &self,
        run_id: &str,
        interaction_id: &str,
        answer: Answer,
    ) -> std::result::Result<RunOutcome, RunError> {
        let mut sink = Sink::None;
        self.drive_resume(
            run_id,
            interaction_id,
            answer,
            CancellationSignal::new(),
            &mut sink,
        )
        .await
    }

    /// [`AgentRunner::resume`], streaming the continued run's events (the stream
    /// holds exactly one `Finished` event, or nothing but the error).
    pub fn resume_streamed(
        &self,
        run_id: &str,
        interaction_id: &str,
        answer: Answer,
    ) -> ResumeStream {
        let (run_id, interaction_id) = (run_id.to_owned(), interaction_id.to_owned());
        self.stream_continued(move |runner, cancel, mut sink| {
            Box::pin(async move {
                let result = runner
                    .drive_resume(&run_id, &interaction_id, answer, cancel, &mut sink)
                    .await;
                (result, sink)
            })
        })
    }

    /// Continues a run that stopped at a limit of its budget (`failed` with
    /// `RUN_BUDGET_EXCEEDED`), under this runner's limits — raise the one it reached
    /// ([`AgentRunnerBuilder::limits`]) or it stops again at once. The calls its turn
    /// held back run first, then the next model request.
    ///
    /// # Errors
    /// As [`AgentRunner::resume`]; `RUN_NOT_WAITING` for a run that did not stop at a
    /// budget.
    pub async fn resume_exceeded(&self, run_id: &str) -> std::result::Result<RunOutcome, RunError> {
        let mut sink = Sink::None;
        self.drive_exceeded(run_id, CancellationSignal::new(), &mut sink)
            .await
    }

    /// [`AgentRunner::resume_exceeded`], streaming the continued run's events.
    pub fn resume_exceeded_streamed(&self, run_id: &str) -> ResumeStream {
        let run_id = run_id.to_owned();
        self.stream_continued(move |runner, cancel, mut sink| {
            Box::pin(async move {
                let result = runner.drive_exceeded(&run_id, cancel, &mut sink).await;
                (result, sink)
            })
        })
    }

    /// Takes over a run whose process died while it was `running` (its lease
    /// expired) and drives it on. The journal decides each call of the turn in
    /// progress: finished calls keep their recorded results, calls that never started
    /// run, and a call that started is re-run when its tool is read-only or
    /// idempotent (same [idempotency key](iris_tools_core::ToolExecutionContext::idempotency_key)),
    /// else the run waits on an [`Interaction::InDoubt`](crate::Interaction::InDoubt).
    ///
    /// # Errors
    /// As [`AgentRunner::resume`]; `RUN_BUSY` while the dead process's lease has not
    /// expired yet.
    pub async fn recover(&self, run_id: &str) -> std::result::Result<RunOutcome, RunError> {
        let mut sink = Sink::None;
        self.drive_recover(run_id, CancellationSignal::new(), &mut sink)
            .await
    }

    /// [`AgentRunner::recover`], streaming the run's events from the take-over on (a
    /// refusal, such as `RUN_BUSY`, ends the stream at once: see
    /// [`ResumeStream::error`]).
    pub fn recover_streamed(&self, run_id: &str) -> ResumeStream {
        let run_id = run_id.to_owned();
        self.stream_continued(move |runner, cancel, mut sink| {
            Box::pin(async move {
                let result = runner.drive_recover(&run_id, cancel, &mut sink).await;
                (result, sink)
            })
        })
    }

    /// Drives a stored run on (`drive`: a resume, a take-over, a budget continuation)
    /// in a task whose events stream to the caller: then `Finished`, or nothing but
    /// the refusal ([`ResumeStream::error`]).
    fn stream_continued(
        &self,
        drive: impl FnOnce(AgentRunner, CancellationSignal, Sink) -> BoxFuture<'static, Continued>
        + Send
        + 'static,
    ) -> ResumeStream {
        let cancel = CancellationSignal::new();
        let (tx, rx) = mpsc::unbounded_channel();
        let (err_tx, err_rx) = tokio::sync::oneshot::channel();
        let task = drive(self.clone(), cancel.clone(), Sink::Channel(tx));
        tokio::spawn(async move {
            match task.await {
                (Ok(outcome), mut sink) => sink.emit(RunEvent::Finished { outcome }),
                (Err(e), _) => {
                    let _ = err_tx.send(e);
                }
            }
        });
        ResumeStream {
            events: RunStream { rx, cancel },
            error: Some(err_rx),
        }
    }

    /// The run store, when the runner has one (the YAML's `run_store`, or
    /// [`AgentRunnerBuilder::run_store`]).
    pub fn run_store(&self) -> Option<&Arc<dyn RunStore>> {
        self.inner.parts.store.as_ref()
    }
}

/// What a continued run's task ends with: its outcome or refusal, and its sink.
type Continued = (std::result::Result<RunOutcome, RunError>, Sink);

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

/// The events of a resumed run ([`AgentRunner::resume_streamed`]), or why it could
/// not be resumed.
#[derive(Debug)]
pub struct ResumeStream {
    events: RunStream,
    error: Option<tokio::sync::oneshot::Receiver<RunError>>,
}

impl ResumeStream {
    /// The next event; `None` after [`RunEvent::Finished`], or when the resume was
    /// refused (see [`ResumeStream::error`]).
    pub async fn next(&mut self) -> Option<RunEvent> {
        self.events.next().await
    }

    /// Why the resume was refused, once the stream ended without `Finished`.
    pub async fn error(&mut self) -> Option<RunError> {
        match self.error.take() {
            Some(rx) => rx.await.ok(),
            None => None,
        }
    }

    /// The resumed run's cancellation signal.
    pub fn cancellation(&self) -> &CancellationSignal {
        self.events.cancellation()
    }
}

/// Builds an [`AgentRunner`] from parts ([`AgentRunner::builder`]).
pub struct AgentRunnerBuilder {
    config: RunnerConfig,
    parts: RunnerParts,
    provider: ModelClient,
    provider_name: String,
    executor: ToolExecutor,
    secret_targets: Vec<Arc<dyn SecretTarget>>,
    /// A child's: the targets of the runs above it ([`Secrets::with_ancestors`]).
    ancestor_secret_targets: Vec<Arc<dyn SecretTarget>>,
    secret_store: Option<Arc<dyn SecretStore>>,
    retry: RetryPolicy,
}

impl fmt::Debug for AgentRunnerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentRunnerBuilder")
            .field("provider", &self.provider_name)
            .field("model", &self.config.model)
            .finish_non_exhaustive()
    }
}

impl AgentRunnerBuilder {
    /// What `loaded` says, over `env` (assembled from it) and `provider` (built from
    /// `model`): the settings of the YAML route, without a run store (the route opens
    /// it; a subagent's child takes its parent's).
    pub(crate) fn from_yaml(
        loaded: &LoadedConfig,
        env: &ToolEnvironment,
        model: &ModelConfig,
        provider: ModelClient,
    ) -> Self {
        // Every YAML key is named here with where it goes, so a new key that reaches
        // no setter fails to compile instead of being silently ignored.
        let AgentConfig {
            // Assembled into `env` (registry, executor, hooks, MCP, command service,
            // skills, subagents, decision, web tools, heartbeats, permissions).
            workspace: _,
            tools: _,
            mcp: _,
            command: _,
            skills: _,
            hooks: _,
            middleware: _,
            decision: _,
            provider_api_keys: _,
            web: _,
            heartbeat_seconds: _,
            // Read below.
            permissions,
            context_policy,
            instructions,
            max_turns,
            limits,
            goal,
            background_calls,
            // `model` became `model` and `provider` (checked_model); the store was opened
            // by the caller (open_store).
            model: _,
            run_store: _,
        } = &loaded.config;
        let ModelConfig {
            provider: kind,
            max_output_tokens,
            temperature,
            // The client's settings, read by ModelConfig::provider; the model name and
            // strict mode through model_name() and strict_mode() below.
            model: _,
            base_url: _,
            api_key_env: _,
            strict: _,
            script: _,
            timeout_seconds: _,
        } = model;
        let mut builder = Self::from_source(provider, env.executor.clone())
            .provider_name(kind.as_str())
            .model(model.model_name())
            .workspace(env.workspace.clone())
            .max_turns(*max_turns)
            .limits(limits.clone())
            .strict(model.strict_mode())
            .background_calls(*background_calls);
        if let Some(text) = instructions {
            builder = builder.instructions(text.clone());
        }
        if let Some(goal) = goal {
            builder = builder.goal(goal.clone());
        }
        if let Some(retention) = context_policy.retention {
            builder = builder.retention(retention);
        }
        if let Some(max) = max_output_tokens {
            builder = builder.max_output_tokens(*max);
        }
        if let Some(t) = temperature {
            builder = builder.temperature(*t);
        }
        if let Some(hooks) = &env.hooks {
            builder = builder.hooks(hooks.clone());
        }
        for target in &env.secret_targets {
            builder = builder.secret_target(Arc::clone(target));
        }
        if let Some(stem) = loaded.file.file_stem().and_then(|s| s.to_str()) {
            builder = builder.agent_id(stem);
        }
        if let Some(catalog) = &env.subagents {
            builder.parts.subagents = Some(Arc::new(Subagents {
                catalog: catalog.clone(),
                workspace: env.workspace.clone(),
                permissions: *permissions,
                command: env.command.as_ref().map(CommandBinding::borrowed),
                host: env.host.clone(),
            }));
        }
        builder.parts.mcp.clone_from(&env.mcp);
        builder.parts.model_config = Some(model.clone());
        builder
    }

    fn from_source(provider: ModelClient, executor: ToolExecutor) -> Self {
        Self {
            config: RunnerConfig::default(),
            parts: RunnerParts::default(),
            provider,
            provider_name: String::new(),
            executor,
            secret_targets: Vec::new(),
            ancestor_secret_targets: Vec::new(),
            secret_store: None,
            retry: RetryPolicy::default(),
        }
    }

    pub(crate) fn provider_name(mut self, name: impl Into<String>) -> Self {
        self.provider_name = name.into();
        self
    }

    /// The model name sent with every request (default `default`).
    #[must_use]
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.config.model = model.into();
        self
    }

    /// The system prompt.
    #[must_use]
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.config.instructions = Some(text.into());
        self
    }

    /// The model requests one run may make (default 50; at least 1).
    #[must_use]
    pub fn max_turns(mut self, turns: u32) -> Self {
        self.config.max_turns = turns.max(1);
        self
    }

    /// The run's budget ([`Limits`]: tokens, tool calls, time, cost), checked before
    /// each model request and each tool call; default none.
    #[must_use]
    pub fn limits(mut self, limits: Limits) -> Self {
        self.config.limits = limits;
        self
    }

    /// The output token cap of each request.
    #[must_use]
    pub fn max_output_tokens(mut self, max: u32) -> Self {
        self.config.max_output_tokens = Some(max);
        self
    }

    /// The sampling temperature.
    #[must_use]
    pub fn temperature(mut self, temperature: f64) -> Self {
        self.config.temperature = Some(temperature);
        self
    }

    /// Sends strict-mode tool schemas; calls then run with [`StrictModeCall`](iris_providers::StrictModeCall) and
    /// the executor gets a [`StrictNullsLayer`].
    #[must_use]
    pub fn strict(mut self, strict: Strict) -> Self {
        self.config.strict = strict;
        self
    }

    /// The workspace every call runs in (default `.`).
    #[must_use]
    pub fn workspace(mut self, workspace: impl Into<PathBuf>) -> Self {
        self.config.workspace = workspace.into();
        self
    }

    /// The agent id (hooks, traces); default `agent`, or the YAML file's stem.
    #[must_use]
    pub fn agent_id(mut self, id: impl Into<String>) -> Self {
        self.config.agent_id = id.into();
        self
    }

    /// The hooks whose `run.started` / `run.finished` registrations the loop fires.
    /// (Tool hooks are the executor's: give it the same dispatcher.)
    #[must_use]
    pub fn hooks(mut self, hooks: HookDispatcher) -> Self {
        self.parts.hooks = Some(hooks);
        self
    }

    /// The MCP manager whose catalog the loop refreshes between model requests
    /// when a server said its tools changed (set for runners built from a YAML).
    /// Its tools must be in the executor's registry.
    #[must_use]
    pub fn mcp_manager(mut self, manager: Arc<MCPManager>) -> Self {
        self.parts.mcp = Some(manager);
        self
    }

    /// Answers the run's interactions in process — approvals, questions, secrets and
    /// MCP servers' requests for input ([`InteractionHandler`]). Without one, or when
    /// it returns `None`, the run waits for [`AgentRunner::resume`] (an MCP server of
    /// a session older than 2026-07-28, which cannot wait, is declined with
    /// [`ELICITATION_NO_HOST`] or [`ELICITATION_NOT_ANSWERED`]).
    #[must_use]
    pub fn interaction_handler(mut self, handler: impl InteractionHandler + 'static) -> Self {
        self.parts.interactions = Some(Arc::new(handler));
        self
    }

    /// Which tools of the registry the model sees (default: every non-system tool).
    #[must_use]
    pub fn view_filter(mut self, filter: ViewFilter) -> Self {
        self.config.view_filter = filter;
        self
    }

    /// The budget for revealed deferred tools' specs per request (default
    /// [`DEFAULT_REVEALED_SCHEMA_CHARS`]).
    #[must_use]
    pub fn schema_budget(mut self, budget: SchemaBudget) -> Self {
        self.config.schema_budget = budget;
        self
    }

    /// The goal of every run (`get_goal` answers it; without one a run's goal is its
    /// prompt). Register [`RunLoopTool::get_goal`] and [`RunLoopTool::report_goal`]
    /// in the executor's registry for the model to use.
    #[must_use]
    pub fn goal(mut self, goal: impl Into<String>) -> Self {
        self.config.goal = Some(goal.into());
        self
    }

    /// Shortens old observation results to previews in each request (register
    /// [`RunLoopTool::context_read`] and [`RunLoopTool::context_search`] in the
    /// executor's registry so the model can read them back).
    #[must_use]
    pub fn retention(mut self, retention: RetentionConfig) -> Self {
        self.config.retention = Some(retention);
        self
    }

    /// How the model client retries rate limits, timeouts and unavailability
    /// (default [`RetryPolicy::default`]: 4 attempts, at most 60 s of waiting;
    /// [`RetryPolicy::never`] turns retries off). Runners from a YAML and from
    /// [`AgentRunner::builder`] alike wrap their provider in one
    /// [`RetryingProvider`]; a scripted model replays its script and is not retried.
    #[must_use]
    pub fn retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// What a final answer does while background calls are outstanding (default
    /// [`BackgroundCalls::Wait`]).
    #[must_use]
    pub fn background_calls(mut self, policy: BackgroundCalls) -> Self {
        self.config.background_calls = policy;
        self
    }

    /// Where runs are persisted, so a waiting run can be resumed (and a crashed one
    /// recovered) by this or another process. Without a store nothing is persisted
    /// and [`AgentRunner::resume`] has nothing to resume; [`MemoryRunStore`] keeps
    /// runs for this process.
    #[must_use]
    pub fn run_store(mut self, store: Arc<dyn RunStore>) -> Self {
        self.parts.store = Some(store);
        self
    }

    /// How long a run's lease lasts unless renewed (default 30 s; renewed every
    /// third of it while the run is driven). A process that dies holds a run at most
    /// this long.
    #[must_use]
    pub fn lease_ttl(mut self, ttl: Duration) -> Self {
        self.config.lease_ttl = ttl.max(Duration::from_millis(30));
        self
    }

    /// Adds something that uses a secret and takes new values at run time (credential
    /// auto-heal, [`crate::secret`]): when a tool's auth failure names one of its
    /// secrets, the loop offers `store_secret`. [`AgentRunner::builder_from_loaded`] adds the
    /// assembled environment's targets (the Tavily client of the web tools).
    #[must_use]
    pub fn secret_target(mut self, target: Arc<dyn SecretTarget>) -> Self {
        self.secret_targets.push(target);
        self
    }

    /// The host's secret store (default: a [`MemorySecretStore`] of this process).
    /// Values it already holds go to the targets when the runner is built.
    #[must_use]
    pub fn secret_store(mut self, store: Arc<dyn SecretStore>) -> Self {
        self.secret_store = Some(store);
        self
    }

    /// Builds the provider of each `subagent` child run (the Python reference's
    /// `ChildProviderFactory`), called with the child's loaded config and its YAML
    /// path every time a child is selected (and when a waiting child is resumed).
    /// Without one, a child's provider is built from its YAML's `model`.
    #[must_use]
    pub fn child_provider_factory(mut self, factory: impl ChildProviderFactory + 'static) -> Self {
        self.parts.child_providers = Some(Arc::new(factory));
        self
    }

    /// Makes this the runner of a `subagent` child of `parent`: the parent's run
    /// store, interaction handler, secret store and lease time, no subagents of its own, and `env` (the
    /// child's tool layer, closed with the child).
    pub(crate) fn for_child(mut self, parent: &Inner, env: ToolEnvironment) -> Self {
        self.parts.store.clone_from(&parent.parts.store);
        self.parts
            .interactions
            .clone_from(&parent.parts.interactions);
        // One secret store: the child reads what a human gave the parent; a value given
        // inside the child reaches the store, the child's own targets and the parent's
        // (and theirs above), so the parent's clients use it without asking again.
        self.secret_store = Some(parent.secrets.store());
        self.ancestor_secret_targets = parent.secrets.lineage();
        self.config.lease_ttl = parent.config.lease_ttl;
        self.parts.subagents = None;
        self.parts.child_providers = None;
        self.parts.is_child = true;
        self.parts.env = Some(env);
        self
    }

    /// The runner.
    ///
    /// With secret targets, `store_secret` is registered in the executor's registry
    /// when it is not there yet.
    pub fn build(self) -> AgentRunner {
        let store = self
            .secret_store
            .unwrap_or_else(|| Arc::new(MemorySecretStore::new()));
        let secrets =
            Secrets::new(self.secret_targets, store).with_ancestors(self.ancestor_secret_targets);
        if !secrets.is_empty() && self.executor.registry().get(STORE_SECRET).is_err() {
            // A name already taken is the only failure: the check above rules it out.
            let _ = self
                .executor
                .registry()
                .register(RunLoopTool::store_secret());
        }
        let executor = if self.config.strict == Strict::Yes {
            self.executor.with_layer(StrictNullsLayer)
        } else {
            self.executor
        };
        // One place adds retries, whichever route built the provider.
        let provider = match self.provider {
            ModelClient::Shared(client) => {
                ModelClient::Shared(Arc::new(RetryingProvider::new(client, self.retry)))
            }
            script @ ModelClient::Script(_) => script,
        };
        let provider_name = if self.provider_name.is_empty() {
            "unknown".to_owned()
        } else {
            self.provider_name
        };
        AgentRunner {
            inner: Arc::new(Inner {
                config: self.config,
                parts: self.parts,
                provider,
                provider_name,
                executor,
                secrets,
            }),
        }
    }
}

/// The run store the YAML's `run_store` names (default: SQLite at
/// `<workspace>/.iris/runs.db`), opened without assembling anything else: what
/// `iris runs` reads.
///
/// # Errors
/// [`Error::Store`] (`RUN_STORE_FAILED`) when it cannot be opened.
pub async fn open_store(loaded: &LoadedConfig) -> Result<Arc<dyn RunStore>> {
    let failed = |code: &'static str, message: String| Error::Store {
        file: loaded.file.clone(),
        code,
        message,
    };
    Ok(match &loaded.config.run_store {
        RunStoreConfig::Memory => Arc::new(MemoryRunStore::new()),
        RunStoreConfig::Sqlite { path } => {
            let path = match path {
                Some(p) => loaded.workspace.join(p),
                None => loaded.workspace.join(".iris/runs.db"),
            };
            Arc::new(
                SqliteRunStore::open(&path)
                    .await
                    .map_err(|e| failed(e.code(), e.to_string()))?,
            )
        }
        RunStoreConfig::Postgres { url_env } => {
            let url = std::env::var(url_env).map_err(|_| {
                failed(
                    crate::store::codes::RUN_STORE_FAILED,
                    format!("the environment variable {url_env} (run_store.url_env) is not set"),
                )
            })?;
            Arc::new(
                PostgresRunStore::connect(&url)
                    .await
                    .map_err(|e| failed(e.code(), e.to_string()))?,
            )
        }
    })
}

/// The model a runner from YAML uses (`model` when given, else the YAML's), checked,
/// and its provider.
pub(crate) fn checked_model(
    loaded: &LoadedConfig,
    model: Option<ModelConfig>,
) -> Result<(ModelConfig, ModelClient)> {
    let model_error = |code: &'static str, message: String| Error::Model {
        file: loaded.file.clone(),
        code,
        message,
    };
    let model = model
        .or_else(|| loaded.config.model.clone())
        .ok_or_else(|| {
            model_error(
                codes::CONFIG_INVALID,
                "the agent YAML has no `model` section; add one, e.g. \
             `model: {provider: openai, model: gpt-4.1-mini}`"
                    .into(),
            )
        })?;
    model.check().map_err(|(key, message)| {
        model_error(codes::CONFIG_INVALID, format!("{key}: {message}"))
    })?;
    loaded.policy.check_model(&model)?;
    let provider = model
        .connect()
        .map_err(|e| model_error(e.code(), e.to_string()))?;
    Ok((model, provider))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A runner from `yaml` (in a file named `file` under a fresh directory).
    async fn from_yaml(dir: &Path, file: &str, yaml: &str) -> AgentRunner {
        std::fs::write(dir.join(file), yaml).unwrap();
        let loaded = AgentConfig::load_with_env(dir.join(file), false).unwrap();
        AgentRunner::builder_from_loaded(&loaded, &HostRegistry::new(), None)
            .await
            .unwrap()
            .build()
    }

    /// Every field of `RunnerConfig` is either set by a YAML key (the row names it)
    /// or by a builder setter only (no request is sent: the OpenAI client's key is
    /// read from `PATH`, an environment variable every process has): a YAML that sets every key gives a config that
    /// differs from a minimal YAML's in each YAML-set field, so a key that reaches no
    /// setter fails here. The destructuring is exhaustive: a new field must be
    /// classified before this compiles.
    #[test]
    fn every_yaml_key_reaches_its_runner_setting() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let dir = tempfile::tempdir().unwrap();
            std::fs::create_dir(dir.path().join("sub")).unwrap();
            let minimal = from_yaml(
                dir.path(),
                "iris.yaml",
                "run_store: {kind: memory}\nmodel: {provider: scripted, script: [{text: hi}]}\n",
            )
            .await;
            let full = from_yaml(
                dir.path(),
                "other.yaml",
                "workspace: sub\ninstructions: Be brief.\nmax_turns: 7\ngoal: Ship it.\n\
                 background_calls: drop\nrun_store: {kind: memory}\n\
                 limits: {max_tool_calls: 3}\n\
                 context_policy: {retention: {recent_turns: 1, preview_chars: 40}}\n\
                 model: {provider: openai, model: m-1, max_output_tokens: 99, \
                 temperature: 0.5, strict: true, base_url: 'http://127.0.0.1:9/v1', \
                 api_key_env: PATH}\n",
            )
            .await;
            let RunnerConfig {
                model,
                instructions,
                max_turns,
                max_output_tokens,
                temperature,
                strict,
                workspace,
                agent_id,
                // Builder-only: no YAML key sets these.
                view_filter: _,
                schema_budget: _,
                lease_ttl: _,
                goal,
                retention,
                background_calls,
                limits,
            } = &full.inner.config;
            let base = &minimal.inner.config;
            let rows: Vec<(&str, String, String)> = vec![
                (
                    "model.model",
                    format!("{model:?}"),
                    format!("{:?}", base.model),
                ),
                (
                    "instructions",
                    format!("{instructions:?}"),
                    format!("{:?}", base.instructions),
                ),
                (
                    "max_turns",
                    format!("{max_turns:?}"),
                    format!("{:?}", base.max_turns),
                ),
                (
                    "model.max_output_tokens",
                    format!("{max_output_tokens:?}"),
                    format!("{:?}", base.max_output_tokens),
                ),
                (
                    "model.temperature",
                    format!("{temperature:?}"),
                    format!("{:?}", base.temperature),
                ),
                (
                    "model.strict",
                    format!("{strict:?}"),
                    format!("{:?}", base.strict),
                ),
                (
                    "workspace",
                    format!("{workspace:?}"),
                    format!("{:?}", base.workspace),
                ),
                (
                    "(file stem)",
                    format!("{agent_id:?}"),
                    format!("{:?}", base.agent_id),
                ),
                ("goal", format!("{goal:?}"), format!("{:?}", base.goal)),
                (
                    "context_policy.retention",
                    format!("{retention:?}"),
                    format!("{:?}", base.retention),
                ),
                (
                    "background_calls",
                    format!("{background_calls:?}"),
                    format!("{:?}", base.background_calls),
                ),
                (
                    "limits",
                    format!("{limits:?}"),
                    format!("{:?}", base.limits),
                ),
            ];
            for (key, set, default) in rows {
                assert_ne!(
                    set, default,
                    "the YAML key `{key}` did not reach the runner"
                );
            }
            assert_eq!(full.inner.config.max_turns, 7);
            assert_eq!(full.inner.config.agent_id, "other");
            assert!(full.inner.config.workspace.ends_with("sub"));
        });
    }
}
