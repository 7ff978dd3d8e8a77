//! `subagent` (`tools.subagent: <catalog file>`; the "Skill 与子 Agent" rows of
//! `docs/seed-coverage.md`): the
//! model delegates a task to a child agent of the catalog
//! ([`iris_skill::SubagentCatalog`]) and gets back only the child's final text.
//!
//! The tool is registered so the model sees its schema (the catalog's agents are in
//! its description); the run loop answers its calls itself, outside the hook and
//! middleware chain (waiting for permission, `ask_question` and the outer `subagent`
//! tool never enter that ordinary chain). A call:
//!
//! 1. checks its input: a non-empty `prompt`, an optional `agent` selector (default:
//!    the catalog's `default`; an unknown one is `SUBAGENT_NOT_FOUND`);
//! 2. loads only the chosen child's YAML and narrows it under the parent: the smaller
//!    of the two workspaces (disjoint ones are `SUBAGENT_WORKSPACE_DISJOINT`), the
//!    stricter of each permission mode, no `command` section of its own
//!    (`SUBAGENT_COMMAND_DECLARED`);
//! 3. assembles the child's tool layer with a *borrowed* handle on the root's command
//!    service (the child never closes it) and without `subagent` (a child that calls
//!    it gets `SUBAGENT_RECURSION`); the parent's hooks and middleware are not
//!    inherited;
//! 4. runs the child as its own run and session (no parent history) in the parent's
//!    run store, with the parent's interaction handler and cancellation signal; its
//!    usage stays in its own record, which names its parent ([`ParentRun`]);
//! 5. answers the call with the child's final text, `metadata.agent_selector` and
//!    `metadata.child_run_id` (a failed child is `SUBAGENT_FAILED` with
//!    `details.child_code`).
//!
//! A child that waits (an approval, a question) makes the parent wait on an
//! [`Interaction::Subagent`] proxy holding the child's interaction; resuming the
//! parent with the answer the inner interaction takes resumes the child, and its
//! final text becomes the call's result (or the parent waits again on the child's
//! next interaction). A child run is never resumed on its own (`RUN_IS_SUBAGENT`).
//! In a streamed run the child's events arrive wrapped in [`RunEvent::Subagent`].

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use iris_command::CommandBinding;
use iris_executor::ApprovalMode;
use iris_providers::CompletionProvider;
use iris_providers::chat::{ModelToolCall, Usage};
use iris_skill::SubagentCatalog;
use iris_tools_core::{BoxFuture, ToolErrorInfo, ToolOutput, ToolResult, codes as core_codes};
use serde_json::json;
use tokio::sync::mpsc;

use crate::assemble::{build_child_environment, check_config_as};
use crate::config::{AgentConfig, LoadedConfig, PermissionsConfig, read_yaml_document};
use crate::error::{Error, Result, codes};
use crate::host::HostRegistry;
use crate::loop_tool::LoopStep;
use crate::model::{ModelClient, ModelConfig};
use crate::outcome::{Answer, Interaction, RunError, RunEvent, RunOutcome, SubagentRequest};
use crate::run_loop::{RunState, Sink, Stop, interaction_id, new_run_id};
use crate::runner::{AgentRunner, AgentRunnerBuilder, RunInput, TRACING_TARGET, checked_model};
use crate::store::{CallState, ParentRun, RunStatus};

pub use crate::loop_tools::subagent::SUBAGENT;

/// Builds the provider of a `subagent` child run (the Python reference's
/// `ChildProviderFactory`, `factory(config, *, config_path) -> CompletionProvider`),
/// for hosts and tests
/// ([`AgentRunnerBuilder::child_provider_factory`](crate::AgentRunnerBuilder::child_provider_factory)).
/// It is called each time a child is selected, and when a waiting child is resumed,
/// with the child's config as narrowed under its parent.
///
/// A closure `Fn(&AgentConfig, &Path) -> Result<Arc<dyn CompletionProvider>, RunError>`
/// is one:
///
/// ```
/// use std::path::Path;
/// use std::sync::Arc;
/// use iris_providers::{CompletionProvider, ScriptedProvider};
/// use iris_runner::{AgentConfig, RunError};
/// use iris_runner::subagent::ChildProviderFactory;
///
/// let factory = |_config: &AgentConfig, path: &Path| -> Result<Arc<dyn CompletionProvider>, RunError> {
///     let _ = path; // e.g. pick a script by the child's file name
///     Ok(Arc::new(ScriptedProvider::from_yaml("- text: done").map_err(|e| RunError::new(e.code(), e.to_string()))?))
/// };
/// let provider = factory.provider(&AgentConfig::default(), Path::new("child.yaml")).unwrap();
/// assert_eq!(provider.name(), "scripted");
/// ```
pub trait ChildProviderFactory: Send + Sync {
    /// The provider of one child run. An error is the `subagent` call's result.
    ///
    /// # Errors
    /// Whatever keeps the provider from being built, with a stable code.
    fn provider(
        &self,
        config: &AgentConfig,
        config_path: &Path,
    ) -> std::result::Result<Arc<dyn CompletionProvider>, RunError>;
}

impl<F> ChildProviderFactory for F
where
    F: Fn(&AgentConfig, &Path) -> std::result::Result<Arc<dyn CompletionProvider>, RunError>
        + Send
        + Sync,
{
    fn provider(
        &self,
        config: &AgentConfig,
        config_path: &Path,
    ) -> std::result::Result<Arc<dyn CompletionProvider>, RunError> {
        self(config, config_path)
    }
}

/// What a root runner keeps to start its children.
#[derive(Debug)]
pub(crate) struct Subagents {
    /// The catalog (`tools.subagent`).
    pub(crate) catalog: SubagentCatalog,
    /// The parent's workspace.
    pub(crate) workspace: PathBuf,
    /// The parent's permission modes.
    pub(crate) permissions: PermissionsConfig,
    /// A borrowed handle on the root's command service.
    pub(crate) command: Option<CommandBinding>,
    /// The host keys a child's YAML may name.
    pub(crate) host: HostRegistry,
}

/// How a child run starts: its id (known before it runs, for the events and the
/// metadata) and its parent.
#[derive(Debug, Clone)]
pub(crate) struct ChildStart {
    pub(crate) run_id: String,
    pub(crate) parent: ParentRun,
}

/// How strict a mode is: allow < confirm < deny.
fn rank(mode: ApprovalMode) -> u8 {
    match mode {
        ApprovalMode::Allow => 0,
        ApprovalMode::Confirm => 1,
        ApprovalMode::Deny => 2,
    }
}

fn stricter(a: ApprovalMode, b: ApprovalMode) -> ApprovalMode {
    if rank(a) >= rank(b) { a } else { b }
}

/// A path made comparable: canonical when it exists, else absolute as written.
fn comparable(path: &Path) -> PathBuf {
    std::fs::canonicalize(path)
        .or_else(|_| std::path::absolute(path))
        .unwrap_or_else(|_| path.to_path_buf())
}

/// The child's config under its parent: the smaller workspace, the stricter
/// permissions, and no `command` of its own. `declares_command`: the child's file
/// has a `command` section (an `IRIS_COMMAND__*` variable is meant for the root and
/// does not count; the child's merged `command` is dropped either way).
///
/// # Errors
/// [`Error::Subagent`] with `SUBAGENT_COMMAND_DECLARED` or
/// `SUBAGENT_WORKSPACE_DISJOINT`.
pub(crate) fn narrow(
    parent_workspace: &Path,
    parent_permissions: PermissionsConfig,
    selector: &str,
    mut child: LoadedConfig,
    declares_command: bool,
) -> Result<LoadedConfig> {
    let fail = |code: &'static str, message: String| Error::Subagent {
        file: child.file.clone(),
        selector: selector.to_owned(),
        code,
        message,
    };
    child.config.command = None;
    if declares_command {
        return Err(fail(
            codes::SUBAGENT_COMMAND_DECLARED,
            "`command`: a child borrows its root's command service and may not declare \
             its own; remove the section"
                .into(),
        ));
    }
    let parent = comparable(parent_workspace);
    let own = comparable(&child.workspace);
    let workspace = if own.starts_with(&parent) {
        own
    } else if parent.starts_with(&own) {
        parent
    } else {
        return Err(fail(
            codes::SUBAGENT_WORKSPACE_DISJOINT,
            format!(
                "its workspace {} and its parent's {} do not intersect; one must hold the \
                 other (the smaller one is used)",
                own.display(),
                parent.display()
            ),
        ));
    };
    child.workspace.clone_from(&workspace);
    child.config.workspace = Some(workspace);
    let own = child.config.permissions;
    child.config.permissions = PermissionsConfig {
        write_mode: stricter(parent_permissions.write_mode, own.write_mode),
        execute_mode: stricter(parent_permissions.execute_mode, own.execute_mode),
    };
    Ok(child)
}

/// Loads one child's YAML (with `IRIS_` overrides, like its parent's) and narrows it.
fn load_child(
    parent_workspace: &Path,
    parent_permissions: PermissionsConfig,
    selector: &str,
    path: &Path,
) -> Result<LoadedConfig> {
    let child = AgentConfig::load(path).map_err(|e| Error::Subagent {
        file: path.to_path_buf(),
        selector: selector.to_owned(),
        code: e.code(),
        message: e.to_string(),
    })?;
    let declares_command = declares_command(path).map_err(|e| Error::Subagent {
        file: path.to_path_buf(),
        selector: selector.to_owned(),
        code: e.code(),
        message: e.to_string(),
    })?;
    narrow(
        parent_workspace,
        parent_permissions,
        selector,
        child,
        declares_command,
    )
}

/// Whether the YAML file itself has a top-level `command` key. The file is read
/// again, the same bounded, nesting-checked way the load read it: it may have
/// changed since.
///
/// # Errors
/// As [`AgentConfig::load`]: a file that no longer reads as an agent YAML.
fn declares_command(path: &Path) -> Result<bool> {
    let absolute = std::path::absolute(path).map_err(|e| Error::NotFound {
        file: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    let (_, document) = read_yaml_document(path, &absolute)?;
    Ok(document.get("command").is_some())
}

/// `iris check` on a catalog: every child's YAML loads, intersects its parent's
/// workspace, declares no `command`, and passes its own checks (as a child).
pub(crate) fn check_children(
    loaded: &LoadedConfig,
    catalog: &SubagentCatalog,
    host: &HostRegistry,
) -> Vec<Error> {
    let mut problems = Vec::new();
    for entry in catalog.entries() {
        let child = match load_child(
            &loaded.workspace,
            loaded.config.permissions,
            &entry.selector,
            &entry.path,
        ) {
            Ok(child) => child,
            Err(e) => {
                problems.push(e);
                continue;
            }
        };
        problems.extend(
            check_config_as(&child, host, true)
                .into_iter()
                .map(|e| Error::Subagent {
                    file: child.file.clone(),
                    selector: entry.selector.clone(),
                    code: e.code(),
                    message: e.to_string(),
                }),
        );
    }
    problems
}

/// The refusal of resuming or answering a child run on its own (`RUN_IS_SUBAGENT`):
/// its parent run relays what it waits for and is answered instead.
pub fn child_run_refused(run_id: &str, parent: &ParentRun) -> RunError {
    RunError::new(
        codes::RUN_IS_SUBAGENT,
        format!(
            "run `{run_id}` is the child run of subagent `{}`, called by run `{}` ({}); \
             resume the parent run instead",
            parent.agent_selector, parent.run_id, parent.call_id
        ),
    )
}

/// A child run's end, as the parent's call sees it.
enum Settled {
    /// The call's result.
    Result(ToolResult),
    /// The child waits on this interaction.
    Wait(Interaction),
}

fn settle(outcome: RunOutcome, call_id: &str, selector: &str, child_run_id: &str) -> Settled {
    let mut output = match outcome {
        RunOutcome::Completed { output, .. } => ToolOutput::text(output),
        RunOutcome::Waiting { interaction, .. } => return Settled::Wait(interaction),
        RunOutcome::Failed { error } => ToolOutput::error(
            ToolErrorInfo::new(
                codes::SUBAGENT_FAILED,
                format!("subagent `{selector}` failed: {error}"),
            )
            .with_detail("child_code", error.code.as_str())
            .with_detail("child_run_id", child_run_id),
        ),
        RunOutcome::Cancelled => {
            ToolOutput::err(core_codes::CANCELLED, "the subagent's run was cancelled")
        }
    };
    output
        .metadata
        .insert("agent_selector".into(), json!(selector));
    output
        .metadata
        .insert("child_run_id".into(), json!(child_run_id));
    Settled::Result(output.into_result(call_id, SUBAGENT))
}

fn failure(call_id: &str, info: ToolErrorInfo) -> ToolResult {
    ToolOutput::error(info).into_result(call_id, SUBAGENT)
}

/// Runs a child's future while its events, when the parent streams, reach the
/// parent's sink wrapped in [`RunEvent::Subagent`].
async fn forwarded<F, Fut, T>(
    sink: &mut Sink,
    call_id: &str,
    selector: &str,
    child_run_id: &str,
    run: F,
) -> T
where
    F: FnOnce(Sink) -> Fut,
    Fut: Future<Output = T>,
{
    let (tx, mut rx) = mpsc::unbounded_channel();
    let child_sink = if sink.is_streaming() {
        Sink::Channel(tx)
    } else {
        drop(tx);
        Sink::None
    };
    let child = run(child_sink);
    let forward = async {
        while let Some(event) = rx.recv().await {
            sink.emit(wrap(call_id, selector, child_run_id, event));
        }
    };
    let (out, ()) = tokio::join!(child, forward);
    out
}

fn wrap(call_id: &str, selector: &str, child_run_id: &str, event: RunEvent) -> RunEvent {
    RunEvent::Subagent {
        call_id: call_id.to_owned(),
        agent_selector: selector.to_owned(),
        child_run_id: child_run_id.to_owned(),
        event: Box::new(event),
    }
}

impl AgentRunner {
    /// A child's call to `subagent`, refused: children get no subagents.
    pub(crate) fn refuse_recursion(&self, call: &ModelToolCall) -> Option<ToolResult> {
        // A child has no `subagent` tool; a call to one gets this answer rather than
        // TOOL_NOT_FOUND (a host tool of that name in the child is an ordinary tool).
        let missing = self.inner.executor.registry().get(&call.name).is_err();
        (self.inner.parts.is_child && missing && call.name == SUBAGENT).then(|| {
            ToolOutput::err(
                codes::SUBAGENT_RECURSION,
                "a subagent's child run cannot call `subagent`: children get no subagents; \
                 do the task with your own tools",
            )
            .into_result(&call.id, SUBAGENT)
        })
    }

    /// The runner of the child `selector`: its YAML loaded and narrowed, its provider,
    /// its tool layer on the root's borrowed command service.
    async fn child_runner(
        &self,
        selector: &str,
    ) -> std::result::Result<AgentRunner, ToolErrorInfo> {
        let Some(setup) = &self.inner.parts.subagents else {
            return Err(ToolErrorInfo::new(
                core_codes::TOOL_FAILED,
                "this runner has no subagent catalog",
            ));
        };
        let fail = |e: Error| {
            ToolErrorInfo::new(e.code(), e.to_string()).with_detail("agent_selector", selector)
        };
        let entry = setup
            .catalog
            .select(Some(selector))
            .map_err(|e| ToolErrorInfo::new(e.code(), e.to_string()))?;
        let loaded =
            load_child(&setup.workspace, setup.permissions, selector, &entry.path).map_err(fail)?;
        // The provider first: a child without a usable model starts nothing.
        let (model, provider, name) = match &self.inner.parts.child_providers {
            Some(factory) => {
                let provider = factory
                    .provider(&loaded.config, &loaded.file)
                    .map_err(|e| {
                        ToolErrorInfo::new(e.code, e.message)
                            .with_detail("agent_selector", selector)
                    })?;
                let name = provider.name().to_owned();
                let model = loaded.config.model.clone().unwrap_or_else(|| {
                    ModelConfig::new(crate::model::ProviderKind::Scripted, "default")
                });
                (model, ModelClient::Shared(provider), Some(name))
            }
            None => {
                let (model, provider) = checked_model(&loaded, None).map_err(fail)?;
                (model, provider, None)
            }
        };
        let env = build_child_environment(&loaded, &setup.host, setup.command.as_ref())
            .await
            .map_err(fail)?;
        let mut builder = AgentRunnerBuilder::from_yaml(&loaded, &env, &model, provider);
        if let Some(name) = name {
            builder = builder.provider_name(name);
        }
        Ok(builder.for_child(&self.inner, env).build())
    }

    /// The runner of `selector`, a child agent of this runner's subagent catalog,
    /// assembled as a `subagent` call assembles it: its YAML narrowed under this
    /// runner (the smaller workspace), its own tools. For a host that shows what a
    /// waiting child asks against the child's own tools and workspace (`iris serve`'s
    /// diff of a child's `edit_file` approval). Close it ([`AgentRunner::close`]) when
    /// done; that never closes this runner's command service.
    ///
    /// # Errors
    /// Why the child cannot be assembled: no catalog here, `SUBAGENT_NOT_FOUND`, or
    /// its YAML's own error code.
    pub async fn subagent_runner(
        &self,
        selector: &str,
    ) -> std::result::Result<AgentRunner, RunError> {
        self.child_runner(selector)
            .await
            .map_err(|e| RunError::new(e.code, e.message))
    }

    /// Closes what a child assembled (its MCP servers; never the borrowed command
    /// service).
    async fn close_child(child: &AgentRunner) {
        if let Err(e) = child.close().await {
            tracing::warn!(target: TRACING_TARGET, error = %e, "cannot close a subagent's tools");
        }
    }

    /// A `subagent` call of the pending turn: runs the child to its end. The step
    /// is the call's result, or the proxy interaction the parent waits on while the
    /// child waits; `Err` stops the parent (the journal failed).
    ///
    /// Boxed: a child's loop is this same code, and only a boxed `Send` future lets
    /// the compiler see the recursion is `Send`.
    pub(crate) fn call_subagent<'a>(
        &'a self,
        state: &'a mut RunState,
        slot: usize,
        call: &'a ModelToolCall,
        sink: &'a mut Sink,
        input: crate::loop_tools::subagent::Input,
    ) -> BoxFuture<'a, std::result::Result<LoopStep, Stop>> {
        Box::pin(self.call_subagent_inner(state, slot, call, sink, input))
    }

    async fn call_subagent_inner(
        &self,
        state: &mut RunState,
        slot: usize,
        call: &ModelToolCall,
        sink: &mut Sink,
        input: crate::loop_tools::subagent::Input,
    ) -> std::result::Result<LoopStep, Stop> {
        let fail = |info: ToolErrorInfo| LoopStep::Result(failure(&call.id, info).output);
        let (prompt, selector) = (input.prompt, input.agent);
        let selector = match &self.inner.parts.subagents {
            Some(setup) => match setup.catalog.select(selector.as_deref()) {
                Ok(entry) => entry.selector.clone(),
                Err(e) => {
                    let info = ToolErrorInfo::new(e.code(), e.to_string())
                        .with_detail("available", setup.catalog.selectors().collect::<Vec<_>>());
                    return Ok(fail(info));
                }
            },
            None => String::new(),
        };
        let child = match self.child_runner(&selector).await {
            Ok(child) => child,
            Err(info) => return Ok(fail(info)),
        };
        // From here the child may act: a crash leaves the call in doubt.
        self.journal(state, slot, call, CallState::Started, None)
            .await?;
        let child_run_id = new_run_id();
        let mut input = RunInput::new(prompt).cancellation(state.cancel.clone());
        input.child = Some(ChildStart {
            run_id: child_run_id.clone(),
            parent: ParentRun {
                run_id: state.record.run_id.clone(),
                call_id: call.id.clone(),
                agent_selector: selector.clone(),
            },
        });
        let runner = child.clone();
        let outcome = forwarded(
            sink,
            &call.id,
            &selector,
            &child_run_id,
            |mut s| async move { runner.drive_new(input, &mut s).await },
        )
        .await;
        Self::close_child(&child).await;
        self.count_child_usage(state, &child_run_id, &outcome).await;
        sink.emit(wrap(
            &call.id,
            &selector,
            &child_run_id,
            RunEvent::Finished {
                outcome: outcome.clone(),
            },
        ));
        Ok(match settle(outcome, &call.id, &selector, &child_run_id) {
            Settled::Result(result) => LoopStep::Result(result.output),
            Settled::Wait(inner) => {
                LoopStep::Wait(self.proxy(state, call, &selector, &child_run_id, inner))
            }
        })
    }

    fn proxy(
        &self,
        state: &RunState,
        call: &ModelToolCall,
        selector: &str,
        child_run_id: &str,
        inner: Interaction,
    ) -> Interaction {
        Interaction::Subagent(SubagentRequest {
            id: interaction_id(&state.record.run_id, &call.id),
            run_id: state.record.run_id.clone(),
            call_id: call.id.clone(),
            agent_selector: selector.to_owned(),
            child_run_id: child_run_id.to_owned(),
            inner: Box::new(inner),
        })
    }

    /// Adds an ended child run's tokens (its own children's included) to the parent's
    /// budget; a child that waits adds nothing yet.
    async fn count_child_usage(
        &self,
        state: &mut RunState,
        child_run_id: &str,
        outcome: &RunOutcome,
    ) {
        if matches!(outcome, RunOutcome::Waiting { .. }) {
            return;
        }
        let stored = match &self.inner.parts.store {
            Some(store) => store.load(child_run_id).await.ok().flatten(),
            None => None,
        };
        let usage = match (stored, outcome) {
            (Some(record), _) => {
                let mut usage = record.usage;
                usage += record.spent.child_usage;
                usage
            }
            (None, RunOutcome::Completed { usage, .. }) => *usage,
            (None, _) => Usage::default(),
        };
        state.record.spent.child_usage += usage;
    }

    /// The recorded end of a child run that completed, failed or was cancelled;
    /// `None` while it waits (or runs).
    async fn ended_child(
        &self,
        child_run_id: &str,
    ) -> std::result::Result<Option<RunOutcome>, RunError> {
        let Some(store) = &self.inner.parts.store else {
            return Ok(None);
        };
        let Some(record) = store.load(child_run_id).await? else {
            return Ok(None);
        };
        Ok(match record.status {
            RunStatus::Completed => Some(RunOutcome::Completed {
                output: record.output.unwrap_or_default(),
                usage: record.usage,
                turns: record.turns,
                history: record.history.to_vec(),
            }),
            RunStatus::Failed => Some(RunOutcome::Failed {
                error: record.error.unwrap_or_else(|| {
                    RunError::new(codes::SUBAGENT_FAILED, "the child run failed")
                }),
            }),
            RunStatus::Cancelled => Some(RunOutcome::Cancelled),
            RunStatus::Waiting | RunStatus::Running => None,
        })
    }

    /// Resumes the waiting child of a `subagent` call with `answer` (which fits the
    /// child's interaction). `Ok(Ok)`: the call's result; `Ok(Err)`: the child waits
    /// again, and so does the parent; `Err`: the child could not be resumed (busy,
    /// gone) and the parent still waits.
    /// Boxed like [`AgentRunner::call_subagent`].
    #[allow(clippy::too_many_arguments)] // The pieces of one resumed call, all used.
    pub(crate) fn resume_subagent<'a>(
        &'a self,
        state: &'a mut RunState,
        turn: u32,
        slot: usize,
        call: &'a ModelToolCall,
        request: &'a SubagentRequest,
        answer: Answer,
        sink: &'a mut Sink,
    ) -> BoxFuture<'a, std::result::Result<std::result::Result<ToolResult, Stop>, RunError>> {
        Box::pin(self.resume_subagent_inner(state, turn, slot, call, request, answer, sink))
    }

    #[allow(clippy::too_many_arguments)] // As `resume_subagent`.
    async fn resume_subagent_inner(
        &self,
        state: &mut RunState,
        turn: u32,
        slot: usize,
        call: &ModelToolCall,
        request: &SubagentRequest,
        answer: Answer,
        sink: &mut Sink,
    ) -> std::result::Result<std::result::Result<ToolResult, Stop>, RunError> {
        let selector = request.agent_selector.as_str();
        let child_run_id = request.child_run_id.as_str();
        sink.emit(crate::run_loop::started(turn, call));
        // A child that already ended (its parent's process died after the child's
        // end was saved, before its own): its recorded end is the call's result.
        if let Some(outcome) = self.ended_child(child_run_id).await? {
            self.count_child_usage(state, child_run_id, &outcome).await;
            return Ok(match settle(outcome, &call.id, selector, child_run_id) {
                Settled::Result(result) => Ok(result),
                // `ended_child` returns no waiting outcome.
                Settled::Wait(inner) => {
                    let proxy = self.proxy(state, call, selector, child_run_id, inner);
                    Err(self.wait(state, slot, proxy).await)
                }
            });
        }
        let child = match self.child_runner(selector).await {
            Ok(child) => child,
            Err(info) => {
                let info = info.with_detail("child_run_id", child_run_id);
                return Ok(Ok(failure(&call.id, info)));
            }
        };
        let runner = child.clone();
        let (cancel, inner_id) = (state.cancel.clone(), request.inner.id().to_owned());
        let id = child_run_id.to_owned();
        let resumed = forwarded(sink, &call.id, selector, child_run_id, |mut s| async move {
            runner
                .drive_resume(&id, &inner_id, answer, cancel, &mut s)
                .await
        })
        .await;
        Self::close_child(&child).await;
        let outcome = resumed?;
        self.count_child_usage(state, child_run_id, &outcome).await;
        sink.emit(wrap(
            &call.id,
            selector,
            child_run_id,
            RunEvent::Finished {
                outcome: outcome.clone(),
            },
        ));
        Ok(match settle(outcome, &call.id, selector, child_run_id) {
            Settled::Result(result) => Ok(result),
            Settled::Wait(inner) => {
                let proxy = self.proxy(state, call, selector, child_run_id, inner);
                Err(self.wait(state, slot, proxy).await)
            }
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_stricter_mode_wins() {
        use ApprovalMode::{Allow, Confirm, Deny};
        for (a, b, want) in [
            (Allow, Allow, Allow),
            (Allow, Confirm, Confirm),
            (Confirm, Allow, Confirm),
            (Deny, Allow, Deny),
            (Confirm, Deny, Deny),
        ] {
            assert_eq!(stricter(a, b), want, "{a:?} {b:?}");
        }
    }

    /// The child's file is read again for its own `command` key the way the load
    /// read it: bounded and nesting-checked, so a file swapped after the load for
    /// one nested past the limit is refused before a parser sees it.
    #[test]
    fn declares_command_reads_the_file_bounded_and_nesting_checked() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("child.yaml");
        std::fs::write(&file, "command: {}\n").unwrap();
        assert!(declares_command(&file).unwrap());
        std::fs::write(&file, "tools: {}\n").unwrap();
        assert!(!declares_command(&file).unwrap());
        let deep = format!("command: {}{}\n", "[".repeat(100), "]".repeat(100));
        std::fs::write(&file, deep).unwrap();
        assert_eq!(
            declares_command(&file).unwrap_err().code(),
            codes::CONFIG_TOO_LARGE
        );
        std::fs::write(&file, "command: [unclosed\n").unwrap();
        assert_eq!(
            declares_command(&file).unwrap_err().code(),
            codes::CONFIG_INVALID
        );
    }
}
