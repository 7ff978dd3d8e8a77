//! `iris run` and `iris resume`: one run of the agent loop from a terminal or a script,
//! and the continuation of a run that waited.
//!
//! The model's answer streams to stdout as it arrives (each turn's text ends its line);
//! each tool call and its status go to stderr — one updating status line on a terminal,
//! a plain `tool NAME (ID) ... ok` / `... error[CODE]` line per finished call otherwise —
//! all escaped like the rest of the output ([`crate::output`]). A call that needs a human
//! and an `ask_question` are asked on the terminal (`--yes` approves every call);
//! without a terminal the run waits, persisted in the YAML's `run_store`: exit 4,
//! `RUN_WAITING`, the run id, what it waits for and the exact `iris resume` commands
//! that answer it. `--json` prints the [`RunEvent`] stream as JSON lines and nothing
//! else on stdout (a waiting run adds one `{"type": "waiting", …}` line).
//!
//! The model is the YAML's `model` section, or `--model provider:model` and
//! `--base-url` over it ([`resolve_model`]); it is resolved, and its key looked up,
//! before the tool environment is assembled, so a bad flag or a missing key starts
//! nothing. The runner is [`AgentRunner::builder_from_loaded`] the environment `iris`
//! assembled (and closes, also on a signal).

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use iris_mcp::{ElicitationKind, ElicitationRequest};
use iris_runner::store::codes as store_codes;
use iris_runner::{
    AgentRunner, Answer, AnswerRefused, ApprovalRequest, Interaction, InteractionHandler,
    LoadedConfig, Misfit, ModelConfig, ProviderKind, QuestionRequest, ResumeStream, RunError,
    RunEvent, RunInput, RunOutcome, RunStatus, RunStream, SecretRequest, SecretValue,
    ToolEnvironment,
};
use iris_tools_core::{BoxFuture, CancellationSignal, ToolRegistry, ToolResult, codes};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::output::{self, err_line};
use crate::{Failure, cli_codes, read_blocking};

/// How often the status line's spinner turns on a terminal.
const SPINNER_TICK: Duration = Duration::from_millis(120);
/// The spinner's frames (ASCII: every terminal draws them one column wide).
const SPINNER: [char; 4] = ['|', '/', '-', '\\'];
/// The longest status line, in characters: a longer one would wrap, and erasing the
/// line would then leave its first rows behind.
const STATUS_WIDTH: usize = 72;

/// What `iris run` was asked to do.
#[derive(Debug)]
pub(crate) struct RunOptions<'a> {
    /// The prompt, or `-` for stdin.
    pub(crate) prompt: &'a str,
    /// Approve every call that needs a human.
    pub(crate) yes: bool,
    /// `--json`: the event stream as JSON lines.
    pub(crate) json: bool,
    /// `iris` with the global flags that name this agent (`--config`, `--workspace`,
    /// `--trust`), to print the exact `iris resume` commands of a wait.
    pub(crate) iris: &'a str,
}

/// What `iris resume` was asked to do.
#[derive(Debug)]
pub(crate) struct ResumeOptions<'a> {
    /// The run.
    pub(crate) run_id: &'a str,
    /// The answer to its pending interaction; `None` takes over a `running` run whose
    /// process died.
    pub(crate) answer: Option<Answer>,
    /// `--json`.
    pub(crate) json: bool,
    /// As [`RunOptions::iris`].
    pub(crate) iris: &'a str,
}

/// `--model` and `--base-url`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ModelFlags<'a> {
    /// `provider:model`, e.g. `openai:gpt-4.1-mini`.
    pub(crate) model: Option<&'a str>,
    /// Another server for the model's wire format.
    pub(crate) base_url: Option<&'a str>,
}

/// The run's model: the YAML's `model` section with the flags applied, its key looked
/// up (the client itself is built by [`AgentRunner::builder_from_loaded`]).
///
/// `--model provider:model` replaces the provider and the model name (everything after
/// the first `:`, so `openai:llama3.1:8b` names `llama3.1:8b`). With the YAML's own
/// provider every other `model` key is kept; with another provider only the
/// provider-neutral ones are (`max_output_tokens`, `temperature`, `timeout_seconds`),
/// since a `base_url`, an `api_key_env`, `strict` or a `script` belong to their wire
/// format. `--model scripted` needs the YAML's script. `--base-url` replaces
/// `model.base_url`.
///
/// # Errors
/// Exit 2 (`MODEL_FLAG_INVALID`) for a flag that names no provider, no model, a
/// scripted model without a script, or a base URL for the scripted model; exit 3 for no
/// `model` at all (`CONFIG_INVALID`) or a missing key (`PROVIDER_AUTH`); a client that
/// refuses the settings (`PROVIDER_CONFIG_INVALID`, `PROVIDER_SCRIPT_INVALID`) is
/// exit 3 too, from the runner's builder.
pub(crate) fn resolve_model(
    loaded: &LoadedConfig,
    flags: ModelFlags<'_>,
) -> Result<ModelConfig, Failure> {
    resolve_model_over(loaded, loaded.config.model.clone(), flags)
}

/// The model `iris resume RUN_ID` continues the run with: the one the run store
/// recorded when the run started (so the printed resume commands need no flags), with
/// `--model` / `--base-url` applied over it. A result that differs from the recorded
/// model is refused (`MODEL_SWITCH_REFUSED`, exit 2) unless `switch` (`--switch-model`):
/// the run's whole conversation would go to another model or server. A run with no
/// recorded model (built in Rust over a provider) takes the YAML's, as `iris run` does.
///
/// # Errors
/// As [`resolve_model`]; `MODEL_SWITCH_REFUSED`; the run store's errors (exit 3).
pub(crate) async fn resume_model(
    loaded: &LoadedConfig,
    run_id: &str,
    flags: ModelFlags<'_>,
    switch: bool,
) -> Result<ModelConfig, Failure> {
    let store = iris_runner::open_store(loaded).await?;
    // A run that is not there is reported by the resume itself, with its own code.
    let recorded = store
        .load(run_id)
        .await
        .map_err(|e| refusal(e.into()))?
        .and_then(|r| r.model);
    let Some(recorded) = recorded else {
        return resolve_model(loaded, flags);
    };
    let asked = resolve_model_over(loaded, Some(recorded.clone()), flags)?;
    if asked != recorded && !switch {
        return Err(Failure::new(
            2,
            cli_codes::MODEL_SWITCH_REFUSED,
            format!(
                "run `{run_id}` was started with {}; resuming it with {} would send its \
                 conversation to another model: pass --switch-model to do that, or resume \
                 without --model / --base-url",
                describe_model(&recorded),
                describe_model(&asked)
            ),
        ));
    }
    Ok(asked)
}

/// `provider:model` and the base URL when there is one, for messages.
fn describe_model(model: &ModelConfig) -> String {
    let mut text = format!("{}:{}", model.provider.as_str(), model.model_name());
    if let Some(url) = &model.base_url {
        text.push_str(&format!(" at {url}"));
    }
    text
}

/// [`resolve_model`] over `base` instead of the YAML's model.
fn resolve_model_over(
    loaded: &LoadedConfig,
    base: Option<ModelConfig>,
    flags: ModelFlags<'_>,
) -> Result<ModelConfig, Failure> {
    let yaml = base;
    let mut config = match flags.model {
        Some(text) => {
            let (provider, name) = parse_model_flag(text)?;
            override_model(yaml, provider, name)?
        }
        None => yaml.ok_or_else(|| {
            model_error(
                &loaded.file,
                iris_runner::codes::CONFIG_INVALID,
                "the agent YAML has no `model` section; add one, e.g. `model: {provider: \
                 openai, model: gpt-4.1-mini}`, or pass --model provider:model"
                    .into(),
            )
        })?,
    };
    if let Some(url) = flags.base_url {
        if config.provider == ProviderKind::Scripted {
            return Err(flag_error(
                "--base-url: the scripted model replays its script and talks to no server",
            ));
        }
        config.base_url = Some(url.to_owned());
    }
    // The whole model check (section, key, base URL, script) before anything starts.
    AgentRunner::check_model(loaded, Some(config.clone())).map_err(Failure::from)?;
    Ok(config)
}

fn flag_error(message: impl Into<String>) -> Failure {
    Failure::new(2, cli_codes::MODEL_FLAG_INVALID, message)
}

fn model_error(file: &Path, code: &'static str, message: String) -> Failure {
    Failure::from(iris_runner::Error::Model {
        file: file.to_path_buf(),
        code,
        message,
    })
}

/// `provider:model` → the provider and the model name (`None`: `scripted` alone).
fn parse_model_flag(text: &str) -> Result<(ProviderKind, Option<String>), Failure> {
    let (name, model) = match text.split_once(':') {
        Some((name, model)) => (name, Some(model.trim())),
        None => (text, None),
    };
    let Some(provider) = ProviderKind::parse(name.trim()) else {
        let kinds: Vec<&str> = ProviderKind::ALL.iter().map(|k| k.as_str()).collect();
        return Err(flag_error(format!(
            "--model `{text}`: unknown provider `{name}`; expected one of {} as \
             provider:model, e.g. openai:gpt-4.1-mini",
            kinds.join(", ")
        )));
    };
    match model.filter(|m| !m.is_empty()) {
        Some(model) => Ok((provider, Some(model.to_owned()))),
        None if provider == ProviderKind::Scripted => Ok((provider, None)),
        None => Err(flag_error(format!(
            "--model `{text}`: provider `{provider}` needs the model's name, e.g. \
             {provider}:{}",
            provider.example_model()
        ))),
    }
}

/// The YAML's section (if any) with `--model` applied; see [`resolve_model`].
fn override_model(
    yaml: Option<ModelConfig>,
    provider: ProviderKind,
    name: Option<String>,
) -> Result<ModelConfig, Failure> {
    let mut config = match yaml {
        Some(yaml) if yaml.provider == provider => yaml,
        other => {
            let mut config = ModelConfig::new(provider, "");
            if let Some(yaml) = other {
                config.max_output_tokens = yaml.max_output_tokens;
                config.temperature = yaml.temperature;
                config.timeout_seconds = yaml.timeout_seconds;
            }
            config.model = None;
            config
        }
    };
    if let Some(name) = name {
        config.model = Some(name);
    }
    if provider == ProviderKind::Scripted && config.script.is_none() {
        return Err(flag_error(
            "--model scripted: the scripted model replays `model.script`, and the agent YAML \
             has no scripted model with a script",
        ));
    }
    Ok(config)
}

/// `iris run`: reads the prompt, runs it, shows the events, and returns the exit code
/// (0 completed, 4 waiting, 1 failed).
pub(crate) async fn run(
    options: RunOptions<'_>,
    loaded: &LoadedConfig,
    env: &ToolEnvironment,
    model: ModelConfig,
    cancel: &CancellationSignal,
) -> Result<u8, Failure> {
    let RunOptions {
        prompt,
        yes,
        json,
        iris,
    } = options;
    let from_stdin = prompt == "-";
    let prompt = if from_stdin {
        read_blocking(cancel, || std::io::read_to_string(std::io::stdin()))
            .await?
            .map_err(|e| Failure::new(2, codes::INVALID_INPUT, format!("stdin: {e}")))?
    } else {
        prompt.to_owned()
    };
    if prompt.trim().is_empty() {
        return Err(Failure::new(
            2,
            iris_runner::codes::RUN_INPUT_INVALID,
            "the prompt is empty: pass the user's message, or `-` to read it from stdin",
        ));
    }
    let interactive = !from_stdin && std::io::stdin().is_terminal();
    let (handler, questions) = Handler::new(yes, interactive);
    let runner = runner(loaded, env, model, handler).await?;
    let events = runner.run_streamed(RunInput::new(prompt).cancellation(cancel.clone()));
    let mut view = View::new(json, iris);
    view.diffs = Some(Diffs::of(&runner, env));
    let outcome = view.stream(Events::Run(events), questions, cancel).await?;
    view.finish(outcome)
}

/// `iris resume RUN_ID [ANSWER]`: loads the run from the YAML's run store, answers its
/// pending interaction (whose id the stored record names) and continues it, shown like
/// `iris run`; without an answer, takes over a `running` run whose process died
/// ([`AgentRunner::recover`]).
///
/// # Errors
/// `RUN_NOT_FOUND`, `RUN_NOT_WAITING`, `RUN_INTERACTION_STALE` (exit 1),
/// `RUN_ANSWER_INVALID` (exit 2: no answer for a waiting run, the wrong kind of answer,
/// not one of a question's options), `RUN_STORE_FAILED` (exit 3), `RUN_BUSY` (exit 5:
/// another live process drives the run).
pub(crate) async fn resume(
    options: ResumeOptions<'_>,
    loaded: &LoadedConfig,
    env: &ToolEnvironment,
    model: ModelConfig,
    cancel: &CancellationSignal,
) -> Result<u8, Failure> {
    let ResumeOptions {
        run_id,
        answer,
        json,
        iris,
    } = options;
    let (handler, questions) = Handler::new(false, std::io::stdin().is_terminal());
    let runner = runner(loaded, env, model, handler).await?;
    let store = runner.run_store().ok_or_else(|| {
        refusal(RunError::new(
            store_codes::RUN_NOT_FOUND,
            format!("run `{run_id}`: the runner has no run store"),
        ))
    })?;
    let record = store
        .load(run_id)
        .await
        .map_err(|e| refusal(e.into()))?
        .ok_or_else(|| not_found(run_id, &store.describe()))?;
    let mut view = View::new(json, iris);
    view.diffs = Some(Diffs::of(&runner, env));
    let events = match (record.status, answer) {
        (RunStatus::Waiting, answer) => {
            let Some(pending) = &record.interaction else {
                return Err(refusal(RunError::new(
                    store_codes::RUN_STORE_FAILED,
                    format!("run `{run_id}` is waiting but its record holds no interaction"),
                )));
            };
            let interaction = &pending.interaction;
            // The runner's own check: no answer, or one of another kind, gets the
            // commands that answer this interaction; a value it cannot take, why.
            let answer = match answer.map(|a| interaction.check(&a).map(|()| a)) {
                Some(Ok(answer)) => answer,
                Some(Err(AnswerRefused {
                    misfit: Misfit::Value,
                    error,
                })) => return Err(refusal(error)),
                _ => {
                    // A subagent's child run is answered through its parent run.
                    let target = record.parent.as_ref().map_or(run_id, |r| r.run_id.as_str());
                    return Err(Failure::new(
                        2,
                        iris_runner::codes::RUN_ANSWER_INVALID,
                        format!(
                            "run `{run_id}` waits for a human ({}: {}); answer it with {}",
                            interaction.kind(),
                            interaction.summary(),
                            answer_commands(iris, target, interaction).join(" | ")
                        ),
                    ));
                }
            };
            Events::Resume(runner.resume_streamed(run_id, &pending.id, answer))
        }
        // A run that stopped at a budget limit goes on under the raised limits.
        (RunStatus::Failed, None)
            if record
                .error
                .as_ref()
                .is_some_and(|e| e.code == iris_runner::codes::RUN_BUDGET_EXCEEDED) =>
        {
            Events::Resume(runner.resume_exceeded_streamed(run_id))
        }
        (RunStatus::Running, None) => {
            let outcome = tokio::select! {
                outcome = runner.recover(run_id) => outcome.map_err(refusal)?,
                () = cancel.cancelled() => return Err(Failure::cancelled()),
            };
            view.recovered(&outcome);
            return view.finish(Some(outcome));
        }
        (status, _) => {
            let hint = if status == RunStatus::Running {
                format!(
                    "; no interaction to answer — if its process died, `{iris} resume {}` \
                     without an answer takes it over once its lease expires",
                    shell_word(run_id)
                )
            } else {
                String::new()
            };
            return Err(Failure::new(
                1,
                iris_runner::codes::RUN_NOT_WAITING,
                format!("run `{run_id}` is {status}, not waiting{hint}"),
            ));
        }
    };
    let outcome = view.stream(events, questions, cancel).await?;
    view.finish(outcome)
}

/// The failure of a run that cannot be resumed, with its documented exit code.
pub(crate) fn refusal(error: RunError) -> Failure {
    let exit = match error.code.as_str() {
        iris_runner::codes::RUN_ANSWER_INVALID => 2,
        store_codes::RUN_STORE_FAILED => 3,
        store_codes::RUN_BUSY => 5,
        _ => 1,
    };
    Failure::new(exit, error.code, error.message)
}

/// `RUN_NOT_FOUND` (exit 1).
pub(crate) fn not_found(run_id: &str, store: &str) -> Failure {
    Failure::new(
        1,
        store_codes::RUN_NOT_FOUND,
        format!("no run `{run_id}` in the run store ({store}); `iris runs` lists its runs"),
    )
}

/// The exact commands that answer `interaction` (one per option of a question).
pub(crate) fn answer_commands(iris: &str, run_id: &str, interaction: &Interaction) -> Vec<String> {
    let base = format!("{iris} resume {}", shell_word(run_id));
    match interaction.innermost() {
        Interaction::Approval(_) => {
            vec![format!("{base} --approve"), format!("{base} --deny REASON")]
        }
        Interaction::Question(q) if q.options.is_empty() => vec![format!("{base} --answer TEXT")],
        Interaction::Question(q) => q
            .options
            .iter()
            .map(|o| format!("{base} --answer {}", shell_word(o)))
            .collect(),
        // The value comes on stdin: a command line is visible to other users and kept
        // in shell history.
        Interaction::Secret(_) => vec![
            format!("{base} --secret-stdin"),
            format!("{base} --deny REASON"),
        ],
        Interaction::Elicitation(e) => {
            let accept = match &e.request.kind {
                ElicitationKind::Url { .. } => "accept".to_owned(),
                _ => shell_word(&form_template(&e.request)),
            };
            vec![
                format!("{base} --answer {accept}"),
                format!("{base} --deny REASON"),
            ]
        }
        _ => vec![
            format!("{base} --rerun"),
            format!("{base} --skip"),
            format!("{base} --record TEXT"),
        ],
    }
}

/// A form's answer to fill in: `{"field": "<type>", …}`, the fields in schema order.
fn form_template(request: &ElicitationRequest) -> String {
    let fields: serde_json::Map<String, Value> = request
        .form_fields()
        .into_iter()
        .map(|(name, kind)| (name, Value::String(format!("<{kind}>"))))
        .collect();
    Value::Object(fields).to_string()
}

/// `word` as one POSIX shell word: as is when it holds only safe characters, else in
/// single quotes.
pub(crate) fn shell_word(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_-./:=@%+,".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The runner over the assembled environment: the YAML's model (or `--model`), limits,
/// hooks and run store, with this process's answers.
async fn runner(
    loaded: &LoadedConfig,
    env: &ToolEnvironment,
    model: ModelConfig,
    handler: Option<Handler>,
) -> Result<AgentRunner, Failure> {
    let mut builder = AgentRunner::builder_from_loaded(loaded, env, Some(model)).await?;
    if let Some(handler) = handler {
        builder = builder.interaction_handler(handler);
    }
    Ok(builder.build())
}

/// A run's events, new or resumed.
enum Events {
    Run(RunStream),
    Resume(ResumeStream),
}

impl Events {
    async fn next(&mut self) -> Option<RunEvent> {
        match self {
            Events::Run(s) => s.next().await,
            Events::Resume(s) => s.next().await,
        }
    }

    fn cancellation(&self) -> &CancellationSignal {
        match self {
            Events::Run(s) => s.cancellation(),
            Events::Resume(s) => s.cancellation(),
        }
    }

    /// Why a resume was refused, once its stream ended without `finished`.
    async fn error(&mut self) -> Option<RunError> {
        match self {
            Events::Run(_) => None,
            Events::Resume(s) => s.error().await,
        }
    }
}

/// How one run is shown.
struct View<'a> {
    json: bool,
    iris: &'a str,
    screen: Screen,
    printed: Printed,
    /// The run's id, from its `run_started` event (for the resume command of a run
    /// stopped at a budget limit).
    run_id: Option<String>,
    /// Where an approval prompt's diff comes from.
    diffs: Option<Diffs>,
}

impl<'a> View<'a> {
    fn new(json: bool, iris: &'a str) -> Self {
        Self {
            json,
            iris,
            screen: Screen::new(!json && std::io::stderr().is_terminal()),
            printed: Printed::default(),
            run_id: None,
            diffs: None,
        }
    }

    /// Shows the events until `finished` and asks the terminal what the run asks.
    /// `None`: the run's task ended without `finished`. A refused resume is its
    /// [`refusal`].
    async fn stream(
        &mut self,
        mut events: Events,
        mut questions: mpsc::UnboundedReceiver<Ask>,
        cancel: &CancellationSignal,
    ) -> Result<Option<RunOutcome>, Failure> {
        let mut ticker = tokio::time::interval(SPINNER_TICK);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut forwarded = false;
        let outcome = loop {
            tokio::select! {
                // Events first: everything the run emitted before it asked (the earlier
                // calls' lines, the turn's text) is shown before the question.
                biased;
                event = events.next() => {
                    let Some(event) = event else { break None };
                    if let RunEvent::RunStarted { run_id, .. } = &event {
                        self.run_id = Some(run_id.clone());
                    }
                    if self.json {
                        output::json_line(&serde_json::to_value(&event).unwrap_or_default());
                    } else {
                        show(&event, &mut self.printed, &mut self.screen);
                    }
                    if let RunEvent::Finished { outcome } = event {
                        break Some(outcome);
                    }
                }
                Some(ask) = questions.recv() => {
                    self.printed.end_turn();
                    // The run waits for this answer; if it is gone, nobody needs it.
                    let reply =
                        ask_terminal(&ask.interaction, self.diffs.as_ref(), &mut self.screen, cancel)
                            .await;
                    let _ = ask.answer.send(reply);
                }
                // A signal: the run is cancelled through its own signal (a resumed
                // run's is not `cancel`) and still ends with `finished`.
                () = cancel.cancelled(), if !forwarded => {
                    forwarded = true;
                    events.cancellation().cancel();
                }
                _ = ticker.tick(), if self.screen.tty => self.screen.tick(),
            }
        };
        if outcome.is_none()
            && let Some(error) = events.error().await
        {
            self.screen.clear();
            return Err(refusal(error));
        }
        Ok(outcome)
    }

    /// A recovered run's outcome (it streams no events): its answer on stdout, or the
    /// `finished` line in `--json`.
    fn recovered(&mut self, outcome: &RunOutcome) {
        if self.json {
            let event = RunEvent::Finished {
                outcome: outcome.clone(),
            };
            output::json_line(&serde_json::to_value(&event).unwrap_or_default());
        } else if let Some(text) = outcome.output() {
            self.printed.delta(text);
            self.printed.end_turn();
        }
    }

    /// How the run ended, on stderr in text mode (the `finished` event says it in
    /// `--json`), and the exit code.
    fn finish(&mut self, outcome: Option<RunOutcome>) -> Result<u8, Failure> {
        let Some(outcome) = outcome else {
            return Err(Failure::new(
                1,
                cli_codes::RUN_ABORTED,
                "the run ended without reporting how",
            ));
        };
        let code = u8::try_from(outcome.exit_code()).unwrap_or(1);
        match &outcome {
            RunOutcome::Completed { .. } => Ok(0),
            RunOutcome::Cancelled => {
                self.screen.abandon("cancelled");
                Err(Failure::cancelled())
            }
            RunOutcome::Waiting {
                run_id,
                interaction,
            } => {
                self.screen.abandon("waiting for a human");
                self.waiting(run_id, interaction);
                Ok(code)
            }
            RunOutcome::Failed { error } => {
                self.screen.clear();
                if !self.json {
                    err_line(&format!("error[{}]: {}", error.code, error.message));
                    if let (iris_runner::codes::RUN_BUDGET_EXCEEDED, Some(run_id)) =
                        (error.code.as_str(), &self.run_id)
                    {
                        err_line(&format!(
                            "iris: the run is saved; raise the limit and go on with\n  {} \
                             resume {} --raise-limit KEY=VALUE",
                            self.iris,
                            shell_word(run_id)
                        ));
                    }
                }
                Ok(code)
            }
            _ => Ok(code),
        }
    }

    /// What a waiting run waits for and the commands that answer it: stderr lines, or
    /// one `{"type": "waiting", …}` JSON line.
    fn waiting(&self, run_id: &str, interaction: &Interaction) {
        let commands = answer_commands(self.iris, run_id, interaction);
        if self.json {
            output::json_line(&json!({
                "type": "waiting",
                "code": cli_codes::RUN_WAITING,
                "run_id": run_id,
                "interaction_id": interaction.id(),
                "kind": interaction.kind(),
                "summary": interaction.summary(),
                "answer_with": commands,
            }));
            return;
        }
        err_line(&format!(
            "error[{}]: run {run_id} waits for a human ({}): {}",
            cli_codes::RUN_WAITING,
            interaction.kind(),
            interaction.summary()
        ));
        let why = match interaction.innermost() {
            Interaction::Approval(_) => {
                "no terminal can answer here (`run --yes` approves every call); the run \
                 is saved"
            }
            Interaction::Question(_) => "no terminal can answer here; the run is saved",
            Interaction::Secret(_) => {
                "no terminal can answer here; the run is saved (the value is read from \
                 stdin, never stored or printed)"
            }
            Interaction::Elicitation(_) => {
                "no terminal can answer here (an MCP server asks for input); the run is saved"
            }
            // Only a human who checked what the call did can say.
            _ => "the run is saved",
        };
        err_line(&format!("iris: {why}: answer it with"));
        for command in &commands {
            err_line(&format!("  {command}"));
        }
    }
}

/// Who answers what a run asks: `--yes` approves every call; a terminal is asked
/// approvals (unless `--yes`) and questions; what nobody answers makes the run wait.
struct Handler {
    approve_all: bool,
    terminal: Option<mpsc::UnboundedSender<Ask>>,
}

impl Handler {
    /// The handler (`None` when nobody can answer anything) and the terminal's queue.
    fn new(approve_all: bool, interactive: bool) -> (Option<Self>, mpsc::UnboundedReceiver<Ask>) {
        let (asks, questions) = mpsc::unbounded_channel();
        let handler = (approve_all || interactive).then(|| Handler {
            approve_all,
            terminal: interactive.then_some(asks),
        });
        (handler, questions)
    }
}

/// One interaction for the terminal and where its answer goes (`None`: the run waits).
struct Ask {
    interaction: Interaction,
    answer: oneshot::Sender<Option<Answer>>,
}

/// Hands each interaction to the loop that shows the run's events, which asks the
/// terminal once it has shown everything before it.
impl InteractionHandler for Handler {
    fn answer<'a>(&'a self, interaction: &'a Interaction) -> BoxFuture<'a, Option<Answer>> {
        Box::pin(async move {
            if self.approve_all && matches!(interaction, Interaction::Approval(_)) {
                return Some(Answer::Approve);
            }
            // No terminal: the run waits for `iris resume` (an MCP server before
            // 2026-07-28 cannot wait: that one is declined, saying so).
            let terminal = self.terminal.as_ref()?;
            let (answer, reply) = oneshot::channel();
            let ask = Ask {
                interaction: interaction.clone(),
                answer,
            };
            let gone = || match interaction {
                Interaction::Approval(_) | Interaction::Elicitation(_) => Some(Answer::Deny {
                    reason: "nobody is at the terminal any more".into(),
                }),
                _ => None,
            };
            if terminal.send(ask).is_err() {
                return gone();
            }
            reply.await.unwrap_or_else(|_| gone())
        })
    }
}

/// Asks the terminal about one interaction; `None` leaves it unanswered (the run
/// waits, or is being cancelled). An in-doubt call is never asked here: `iris runs
/// recover` reports it and `iris resume` answers it.
async fn ask_terminal(
    interaction: &Interaction,
    diffs: Option<&Diffs>,
    screen: &mut Screen,
    cancel: &CancellationSignal,
) -> Option<Answer> {
    match interaction {
        Interaction::Approval(request) => {
            let diff = match diffs {
                Some(diffs) => diffs.of_call(request, cancel).await,
                None => None,
            };
            Some(ask_approval(request, diff.as_deref(), screen, cancel).await)
        }
        Interaction::Question(request) => ask_question(request, screen, cancel)
            .await
            .map(|text| Answer::Text { text }),
        Interaction::Secret(request) => ask_secret(request, screen, cancel)
            .await
            .map(|value| Answer::Secret { value }),
        Interaction::Elicitation(e) => {
            screen.pause();
            let reply = crate::elicit::ask(&e.request, cancel).await;
            screen.resume(&e.call_id);
            Some(Answer::Elicitation { reply })
        }
        _ => None,
    }
}

/// Reads one line from stdin off the async thread; `None` at end of input, on a read
/// error or when the run is cancelled.
async fn read_line(cancel: &CancellationSignal) -> Option<String> {
    let read = read_blocking(cancel, || {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).map(|n| (n, line))
    })
    .await;
    match read {
        Ok(Ok((n, line))) if n > 0 => Some(line),
        _ => None,
    }
}

/// The unified diffs of approvals: the runner's tools (an entry is recognised by type,
/// [`iris_files::change_diff`]) and its workspace.
struct Diffs {
    registry: ToolRegistry,
    workspace: PathBuf,
}

impl Diffs {
    fn of(runner: &AgentRunner, env: &ToolEnvironment) -> Self {
        Self {
            registry: runner.executor().registry().clone(),
            workspace: env.workspace.clone(),
        }
    }

    /// The diff an approved `edit_file` / `write_file` call would make, read off the
    /// async threads; `None` for other tools and when there is nothing to show.
    async fn of_call(
        &self,
        request: &ApprovalRequest,
        cancel: &CancellationSignal,
    ) -> Option<String> {
        let tool = self.registry.get(&request.tool_name).ok()?;
        let workspace = self.workspace.clone();
        let arguments = request.arguments.clone();
        read_blocking(cancel, move || {
            iris_files::change_diff(&workspace, tool.as_ref(), &arguments)
        })
        .await
        .ok()
        .flatten()
    }
}

/// Asks on the terminal: the tool, the call id, why, and what the call does — the
/// unified diff of an `edit_file` / `write_file` against the file as it is now, the
/// exact arguments of any other call (every line escaped); `y` or `yes` approves,
/// anything else denies (the model gets `APPROVAL_DENIED`). A signal while waiting
/// denies (the run is being cancelled).
async fn ask_approval(
    request: &ApprovalRequest,
    diff: Option<&str>,
    screen: &mut Screen,
    cancel: &CancellationSignal,
) -> Answer {
    screen.pause();
    err_line(&format!(
        "iris: {} ({}) needs approval: {}",
        request.tool_name, request.call_id, request.reason
    ));
    match diff {
        Some(diff) => {
            for line in diff.lines() {
                err_line(&format!("  {line}"));
            }
        }
        None => err_line(&format!("  arguments: {}", request.arguments)),
    }
    output::prompt("Run it? [y/N] ");
    let answer = read_line(cancel).await;
    // The call runs from now: its time starts again.
    screen.resume(&request.call_id);
    match answer {
        Some(a) if matches!(a.trim().to_ascii_lowercase().as_str(), "y" | "yes") => Answer::Approve,
        _ if cancel.requested() => Answer::Deny {
            reason: "the run was cancelled".into(),
        },
        _ => Answer::Deny {
            reason: "the user declined at the terminal".into(),
        },
    }
}

/// Asks an `ask_question` on the terminal: the question and its numbered options; the
/// answer is a line of text, or one option (by its text or number) when there are
/// options — anything else is refused and asked again. The end of input or a signal
/// leaves it unanswered: the run waits (and can be resumed) or is cancelled.
async fn ask_question(
    request: &QuestionRequest,
    screen: &mut Screen,
    cancel: &CancellationSignal,
) -> Option<String> {
    screen.pause();
    err_line(&format!(
        "iris: the agent asks ({}): {}",
        request.call_id, request.question
    ));
    for (i, option) in request.options.iter().enumerate() {
        err_line(&format!("  {}) {option}", i + 1));
    }
    let answer = loop {
        output::prompt(if request.options.is_empty() {
            "Answer: "
        } else {
            "Answer (an option or its number): "
        });
        let Some(line) = read_line(cancel).await else {
            break None;
        };
        let text = line.trim();
        if request.options.is_empty() {
            if text.is_empty() {
                err_line("iris: the answer is empty; type the answer and press Enter");
                continue;
            }
            break Some(text.to_owned());
        }
        let by_number = text
            .parse::<usize>()
            .ok()
            .and_then(|n| n.checked_sub(1))
            .and_then(|i| request.options.get(i));
        match request.options.iter().find(|o| *o == text).or(by_number) {
            Some(option) => break Some(option.clone()),
            None => err_line(&format!(
                "iris: `{text}` is not one of the options ({}); type one of them or its number",
                request.options.join(" | ")
            )),
        }
    };
    screen.resume(&request.call_id);
    answer
}

/// Asks for a secret on the terminal without echo: its name and the tools that need
/// it. An empty line, the end of input or a signal leaves it unanswered (the run
/// waits and `iris resume RUN --secret-stdin` can answer it later).
async fn ask_secret(
    request: &SecretRequest,
    screen: &mut Screen,
    cancel: &CancellationSignal,
) -> Option<SecretValue> {
    screen.pause();
    let tools = if request.tools.is_empty() {
        String::new()
    } else {
        format!(" for {}", request.tools.join(", "))
    };
    err_line(&format!(
        "iris: the agent needs the secret {}{tools} ({}); it goes to those tools only, never \
         to the model or any output",
        request.key, request.call_id
    ));
    // Echo goes off before the prompt shows: what is typed once it shows is hidden.
    let echo = EchoOff::new(&std::io::stdin());
    output::prompt("Value (typing is hidden; empty leaves the run waiting): ");
    let read = read_blocking(cancel, read_line_without_end).await;
    drop(echo);
    // The hidden line's Enter was not echoed either.
    err_line("");
    screen.resume(&request.call_id);
    match read {
        Ok(Ok(value)) if !value.trim().is_empty() => Some(SecretValue::new(value)),
        _ => None,
    }
}

/// The secret of `iris resume --secret-stdin`: one line from stdin without its line
/// end; on a terminal with echo off (restored afterwards, also on an error) and a
/// prompt shown once it is off, else with a note on stderr saying what `iris` waits for.
/// The line is read on the blocking pool, so a signal ends the wait at once: dropping
/// this future restores the echo, and the abandoned read does not hold `iris` at exit.
/// An unreadable line counts as empty.
pub(crate) async fn read_secret_line() -> Result<String, Failure> {
    let echo = EchoOff::new(&std::io::stdin());
    if echo.active() {
        output::prompt("Secret (typing is hidden): ");
    } else {
        err_line("iris: reading the secret from stdin (one line)");
    }
    let line = tokio::task::spawn_blocking(read_line_without_end)
        .await
        .map_err(|e| Failure::new(3, codes::IO_ERROR, format!("the stdin reader failed: {e}")))?;
    if echo.active() {
        err_line("");
    }
    Ok(line.unwrap_or_default())
}

/// One line from stdin without its line end.
fn read_line_without_end() -> std::io::Result<String> {
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    while line.ends_with('\n') || line.ends_with('\r') {
        line.pop();
    }
    Ok(line)
}

/// Turns the terminal's echo off for as long as it lives; nothing when stdin is no
/// terminal.
struct EchoOff {
    saved: Option<rustix::termios::Termios>,
}

impl EchoOff {
    fn new(stdin: &std::io::Stdin) -> Self {
        let saved = stdin
            .is_terminal()
            .then(|| rustix::termios::tcgetattr(stdin).ok())
            .flatten();
        if let Some(saved) = &saved {
            let mut quiet = saved.clone();
            quiet.local_modes.remove(rustix::termios::LocalModes::ECHO);
            let _ =
                rustix::termios::tcsetattr(stdin, rustix::termios::OptionalActions::Now, &quiet);
        }
        Self { saved }
    }

    /// Whether echo was turned off (stdin is a terminal).
    fn active(&self) -> bool {
        self.saved.is_some()
    }
}

impl Drop for EchoOff {
    fn drop(&mut self) {
        if let Some(saved) = &self.saved {
            let _ = rustix::termios::tcsetattr(
                std::io::stdin(),
                rustix::termios::OptionalActions::Now,
                saved,
            );
        }
    }
}

/// The model's answer on stdout: each turn's text ends its line; a `\r` at the end of
/// a delta waits for the next one, so a `\r\n` split across deltas stays a line end.
#[derive(Debug, Default)]
struct Printed {
    mid_line: bool,
    held_cr: bool,
}

impl Printed {
    fn delta(&mut self, text: &str) {
        let mut text = if self.held_cr {
            self.held_cr = false;
            format!("\r{text}")
        } else {
            text.to_owned()
        };
        if text.ends_with('\r') {
            text.pop();
            self.held_cr = true;
        }
        if !text.is_empty() {
            output::text(&text);
            self.mid_line = !text.ends_with('\n');
        }
    }

    fn end_turn(&mut self) {
        if self.held_cr {
            self.held_cr = false;
            output::text("\r");
            self.mid_line = true;
        }
        if self.mid_line {
            output::text("\n");
            self.mid_line = false;
        }
    }
}

/// One event in text mode.
fn show(event: &RunEvent, answer: &mut Printed, screen: &mut Screen) {
    match event {
        RunEvent::RunStarted {
            run_id,
            provider,
            model,
        } => screen.note(&format!("iris: run {run_id} ({provider}:{model})")),
        RunEvent::TextDelta { text } => answer.delta(text),
        RunEvent::Usage { .. } => answer.end_turn(),
        RunEvent::ToolCallStarted {
            call_id, tool_name, ..
        } => {
            answer.end_turn();
            screen.start(call_id, tool_name);
        }
        RunEvent::ToolCallFinished { result, .. } => screen.finish(result),
        RunEvent::Heartbeat {
            call_id,
            elapsed_seconds,
            deadline_seconds,
            ..
        } => screen.heartbeat(call_id, *elapsed_seconds, *deadline_seconds),
        RunEvent::BackgroundFinished { result, .. } => screen.background(result),
        RunEvent::Progress {
            call_id,
            progress,
            total,
            message,
            ..
        } => screen.progress(call_id, *progress, *total, message.as_deref()),
        RunEvent::Finished { .. } => answer.end_turn(),
        // A subagent's calls show like the parent's, their ids prefixed with the
        // agent's selector; its text is not the answer and stays off stdout.
        RunEvent::Subagent {
            agent_selector,
            event,
            ..
        } => match &**event {
            RunEvent::ToolCallStarted {
                call_id, tool_name, ..
            } => screen.start(&format!("{agent_selector}:{call_id}"), tool_name),
            RunEvent::ToolCallFinished { result, .. } => {
                let mut result = result.clone();
                result.tool_use_id = format!("{agent_selector}:{}", result.tool_use_id);
                screen.finish(&result);
            }
            // The child's text, usage, turns and end are not the parent's answer; its
            // heartbeats, progress, questions and nested children are asked or shown
            // through the parent's handler and its own call lines.
            RunEvent::RunStarted { .. }
            | RunEvent::TurnStarted { .. }
            | RunEvent::TextDelta { .. }
            | RunEvent::Usage { .. }
            | RunEvent::Heartbeat { .. }
            | RunEvent::Progress { .. }
            | RunEvent::ElicitationRequested { .. }
            | RunEvent::ElicitationAnswered { .. }
            | RunEvent::BackgroundFinished { .. }
            | RunEvent::Subagent { .. }
            | RunEvent::ApprovalRequested { .. }
            | RunEvent::Finished { .. } => {}
        },
        // A turn start shows through its calls; an approval, a question and an MCP
        // server's request for input through the terminal prompt that asks them.
        RunEvent::TurnStarted { .. }
        | RunEvent::ApprovalRequested { .. }
        | RunEvent::ElicitationRequested { .. }
        | RunEvent::ElicitationAnswered { .. } => {}
    }
}

/// A call in flight.
#[derive(Debug)]
struct Call {
    id: String,
    name: String,
    started: Instant,
    /// The call's deadline in seconds, once a heartbeat said it.
    deadline: Option<f64>,
    /// The latest MCP progress report (`3/8 step 3 of 8`), shown on the status line.
    progress: Option<String>,
}

/// A call running in the background (an MCP task), whose progress shows as plain
/// lines: it is no longer on the status line.
#[derive(Debug)]
struct BackgroundCall {
    id: String,
    name: String,
    /// The message of the last progress line, and when it was written.
    shown: Option<(Option<String>, Instant)>,
}

/// How often a background call's progress gets a line when only its value moved
/// (a new message always gets one).
const BACKGROUND_PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// Whether a background call's progress report gets a line: the first one, one
/// with a new message, or one [`BACKGROUND_PROGRESS_EVERY`] after the last line.
fn background_line_due(shown: Option<&(Option<String>, Instant)>, message: Option<&str>) -> bool {
    match shown {
        None => true,
        Some((shown, at)) => {
            shown.as_deref() != message || at.elapsed() >= BACKGROUND_PROGRESS_EVERY
        }
    }
}

/// `3/8 step 3 of 8`: an MCP progress report as shown.
fn progress_text(progress: f64, total: Option<f64>, message: Option<&str>) -> String {
    let mut text = match total {
        Some(total) => format!("{progress}/{total}"),
        None => format!("{progress}"),
    };
    if let Some(message) = message {
        text.push(' ');
        text.push_str(message);
    }
    text
}

/// The tool calls on stderr. On a terminal the calls in flight share one status line
/// (a spinner, the calls, the time), replaced by a plain line per call as it finishes;
/// otherwise only the plain lines. A background call's progress is a plain line
/// whenever its message changes (at most every few seconds when only the value
/// moves). An approval prompt pauses the status line.
#[derive(Debug)]
struct Screen {
    tty: bool,
    paused: bool,
    drawn: bool,
    frame: usize,
    calls: Vec<Call>,
    background: Vec<BackgroundCall>,
}

impl Screen {
    fn new(tty: bool) -> Self {
        Self {
            tty,
            paused: false,
            drawn: false,
            frame: 0,
            calls: Vec::new(),
            background: Vec::new(),
        }
    }

    /// A line for a terminal only.
    fn note(&mut self, text: &str) {
        if self.tty {
            self.clear();
            err_line(text);
            self.draw();
        }
    }

    fn start(&mut self, id: &str, name: &str) {
        self.calls.push(Call {
            id: id.to_owned(),
            name: name.to_owned(),
            started: Instant::now(),
            deadline: None,
            progress: None,
        });
        self.draw();
    }

    /// An MCP progress report: a call in flight shows it on the status line, a
    /// background call on a line of its own (a new message, or a while since the
    /// last line).
    fn progress(&mut self, id: &str, progress: f64, total: Option<f64>, message: Option<&str>) {
        let text = progress_text(progress, total, message);
        if let Some(call) = self.calls.iter_mut().find(|c| c.id == id) {
            call.progress = Some(text);
            self.draw();
            return;
        }
        let Some(call) = self.background.iter_mut().find(|c| c.id == id) else {
            return;
        };
        if !background_line_due(call.shown.as_ref(), message) {
            return;
        }
        call.shown = Some((message.map(str::to_owned), Instant::now()));
        let (name, id) = (call.name.clone(), call.id.clone());
        self.line(&name, &id, &format!("background: {text}"), None);
    }

    fn finish(&mut self, result: &ToolResult) {
        let position = self.calls.iter().position(|c| c.id == result.tool_use_id);
        let call = position.map(|i| self.calls.remove(i));
        let name = call.as_ref().map_or(result.tool_name.as_str(), |c| &c.name);
        let mut status = match result.error_code() {
            None if result.output.data.contains_key("background") => {
                self.background.push(BackgroundCall {
                    id: result.tool_use_id.clone(),
                    name: name.to_owned(),
                    shown: None,
                });
                "running in the background".to_owned()
            }
            None if result.approved => "ok (approved)".to_owned(),
            None => "ok".to_owned(),
            Some(code) => format!("error[{code}]"),
        };
        // A `tool.before` hook's rewrite: the call ran (or was refused) with other
        // arguments than the model's; `--json` has both under `input_rewrite`.
        if let Some(rewrite) = &result.output.input_rewrite {
            status.push_str(&format!(
                " (input rewritten by {})",
                rewrite.hooks.join(", ")
            ));
        }
        let elapsed = call.as_ref().map(|c| c.started.elapsed());
        self.line(name, &result.tool_use_id, &status, elapsed);
    }

    /// A call's body is still running (the executor's heartbeat): the status line shows
    /// its deadline from now on; without a terminal, one line says so.
    fn heartbeat(&mut self, id: &str, elapsed: f64, deadline: f64) {
        let name = match self.calls.iter_mut().find(|c| c.id == id) {
            Some(call) => {
                call.deadline = Some(deadline);
                call.name.clone()
            }
            None => return,
        };
        if self.tty {
            self.draw();
        } else {
            err_line(&format!(
                "tool {name} ({id}) ... still running ({elapsed:.1} s of {deadline:.0} s)"
            ));
        }
    }

    /// A background call finished (its receipt's line came when it started).
    fn background(&mut self, result: &ToolResult) {
        self.background.retain(|c| c.id != result.tool_use_id);
        let status = match result.error_code() {
            None => "background call finished ok".to_owned(),
            Some(code) => format!("background call finished error[{code}]"),
        };
        self.line(&result.tool_name, &result.tool_use_id, &status, None);
    }

    /// Every call still in flight when the run ended, with why it did not finish.
    fn abandon(&mut self, why: &str) {
        for call in std::mem::take(&mut self.calls) {
            self.line(&call.name, &call.id, why, Some(call.started.elapsed()));
        }
        self.clear();
    }

    fn line(&mut self, name: &str, id: &str, status: &str, elapsed: Option<Duration>) {
        self.clear();
        let mut text = format!("tool {name} ({id}) ... {status}");
        if self.tty
            && let Some(elapsed) = elapsed
        {
            text.push_str(&format!(" ({:.1} s)", elapsed.as_secs_f64()));
        }
        err_line(&text);
        self.draw();
    }

    fn tick(&mut self) {
        self.frame = self.frame.wrapping_add(1);
        self.draw();
    }

    fn pause(&mut self) {
        self.clear();
        self.paused = true;
    }

    fn resume(&mut self, call_id: &str) {
        self.paused = false;
        if let Some(call) = self.calls.iter_mut().find(|c| c.id == call_id) {
            call.started = Instant::now();
        }
        self.draw();
    }

    fn clear(&mut self) {
        if self.drawn {
            output::clear_status();
            self.drawn = false;
        }
    }

    fn draw(&mut self) {
        if !self.tty || self.paused {
            return;
        }
        let Some(first) = self.calls.first() else {
            self.clear();
            return;
        };
        let spinner = SPINNER[self.frame % SPINNER.len()];
        let names: Vec<String> = self
            .calls
            .iter()
            .map(|c| format!("{} ({})", c.name, c.id))
            .collect();
        let what = if self.calls.len() == 1 {
            match &first.progress {
                Some(progress) => format!("tool {} {progress}", names[0]),
                None => format!("tool {}", names[0]),
            }
        } else {
            format!("{} tools: {}", self.calls.len(), names.join(", "))
        };
        let secs = first.started.elapsed().as_secs_f64();
        let mut text = format!("{spinner} {what}");
        let tail = match first.deadline {
            Some(deadline) => format!(" ... {secs:.1} s of {deadline:.0} s"),
            None => format!(" ... {secs:.1} s"),
        };
        let room = STATUS_WIDTH.saturating_sub(tail.chars().count());
        if text.chars().count() > room {
            text = text.chars().take(room.saturating_sub(1)).collect();
            text.push('…');
        }
        text.push_str(&tail);
        output::status(&text);
        self.drawn = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_background_call_gets_a_progress_line_per_new_message_or_a_while() {
        assert!(background_line_due(None, None));
        let now = Instant::now();
        let recent = (Some("step 1".to_owned()), now);
        assert!(!background_line_due(Some(&recent), Some("step 1")));
        assert!(background_line_due(Some(&recent), Some("step 2")));
        assert!(background_line_due(Some(&recent), None));
        let old = now - BACKGROUND_PROGRESS_EVERY;
        assert!(background_line_due(
            Some(&(Some("step 1".to_owned()), old)),
            Some("step 1")
        ));
        assert_eq!(progress_text(2.0, Some(3.0), Some("x")), "2/3 x");
        assert_eq!(progress_text(0.0, None, None), "0");
    }

    #[test]
    fn shell_words_survive_a_shell() {
        assert_eq!(shell_word("run_1a_2b_0"), "run_1a_2b_0");
        assert_eq!(shell_word("dir/iris.yaml"), "dir/iris.yaml");
        assert_eq!(shell_word("two words"), "'two words'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word("$(rm -rf x)"), "'$(rm -rf x)'");
        assert_eq!(shell_word(""), "''");
    }

    #[test]
    fn every_interaction_names_its_answers() {
        let question = |options: &[&str]| {
            Interaction::Question(QuestionRequest {
                id: "r:c".into(),
                run_id: "r".into(),
                call_id: "c".into(),
                question: "Which?".into(),
                options: options.iter().map(|o| (*o).to_owned()).collect(),
            })
        };
        assert_eq!(
            answer_commands("iris", "r", &question(&[])),
            ["iris resume r --answer TEXT"]
        );
        assert_eq!(
            answer_commands("iris --trust", "r", &question(&["a b", "c"])),
            [
                "iris --trust resume r --answer 'a b'",
                "iris --trust resume r --answer c"
            ]
        );
        let text = Answer::Text { text: "x".into() };
        // What `iris resume` checks an answer with: the runner's one check.
        let misfit = |answer: &Answer, interaction: &Interaction| {
            interaction.check(answer).err().map(|e| e.misfit)
        };
        assert_eq!(misfit(&text, &question(&[])), None);
        assert_eq!(misfit(&Answer::Approve, &question(&[])), Some(Misfit::Kind));
        assert_eq!(misfit(&Answer::Skip, &question(&[])), Some(Misfit::Kind));
        assert_eq!(misfit(&text, &question(&["a"])), Some(Misfit::Value));
        // A subagent's proxy is answered like its child's interaction, on the parent.
        let proxy = Interaction::Subagent(iris_runner::SubagentRequest {
            id: "p:c7".into(),
            run_id: "p".into(),
            call_id: "c7".into(),
            agent_selector: "writer".into(),
            child_run_id: "r".into(),
            inner: Box::new(question(&["a"])),
        });
        assert_eq!(
            answer_commands("iris", "p", &proxy),
            ["iris resume p --answer a"]
        );
        assert_eq!(misfit(&Answer::Text { text: "a".into() }, &proxy), None);
        assert_eq!(misfit(&Answer::Approve, &proxy), Some(Misfit::Kind));
    }
}
