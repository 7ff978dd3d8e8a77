//! Loop tools: tools whose calls the run loop answers itself, because what they answer
//! with lives in the run — `ask_question`, `get_goal`, `report_goal`, `context_read`,
//! `context_search`, `store_secret`, `subagent` (one file each under
//! `loop_tools/`).
//!
//! Each is a `LoopTool`: a typed input (its schema derived with schemars, like a
//! `#[tool]`'s) and a body over the run (`LoopCall`) that returns a `LoopStep`:
//! the call's result, an interaction the run waits on, or the run's end. The registry
//! holds a [`RunLoopTool`] so the model sees the schema and the request may carry it;
//! the loop recognises a call's registry entry by type, never by name (its
//! `validate_input` yields a marker only this crate can make): a host's own tool
//! called `ask_question` is an ordinary tool whose body runs. The loop answers a loop tool's
//! call before the executor, outside the hook and middleware chain (`ask_question` and
//! the subagent tool never enter that chain), after validating its input against the same
//! JSON Schema the model was sent.
//!
//! Called any other way (`iris call`, a host's own executor) a loop tool answers a
//! `TOOL_FAILED` error saying that only a run can answer it; `iris mcp serve` does not
//! list them, and code mode (`run_tool_script`) never offers them
//! ([`ToolDefinition::script_callable`] is `false`).

use std::any::TypeId;
use std::fmt;
use std::sync::Arc;

use iris_providers::chat::ModelToolCall;
use iris_tools_core::{
    BoxFuture, Tool, ToolDefinition, ToolErrorInfo, ToolExecutionContext, ToolInput, ToolOutput,
    ToolRegistry, codes, typed::schema_for_input,
};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::outcome::Interaction;
use crate::run_loop::{RunState, Sink, Stop};
use crate::runner::AgentRunner;

/// What a loop tool's call comes to.
#[derive(Debug)]
pub(crate) enum LoopStep {
    /// The call's result.
    Result(ToolOutput),
    /// The run waits on this interaction; its answer becomes the call's result.
    Wait(Interaction),
    /// The call's result, and the run ends with `answer` as its final answer once the
    /// turn's other calls ran.
    End {
        /// The call's result.
        result: ToolOutput,
        /// The run's final answer.
        answer: String,
    },
}

/// The run a loop tool's call belongs to: the runner, the run's state and event sink,
/// and where the call sits in the pending turn.
pub(crate) struct LoopCall<'a> {
    pub(crate) runner: &'a AgentRunner,
    pub(crate) state: &'a mut RunState,
    pub(crate) sink: &'a mut Sink,
    /// The call's index in the pending turn.
    pub(crate) slot: usize,
    pub(crate) call: &'a ModelToolCall,
}

impl LoopCall<'_> {
    /// The id of an interaction this call raises: `<run id>:<call id>`.
    pub(crate) fn interaction_id(&self) -> String {
        crate::run_loop::interaction_id(&self.state.record.run_id, &self.call.id)
    }
}

/// A tool the run loop answers; see the [module docs](self).
pub(crate) trait LoopTool: Send + Sync + 'static {
    /// The model's arguments; the schema the model is sent is derived from it.
    type Input: DeserializeOwned + JsonSchema + Send + 'static;

    /// The definition, without its schema (filled from [`LoopTool::Input`]).
    fn definition(&self) -> ToolDefinition;

    /// Rules the schema cannot say (a string that is not blank); the message is the
    /// model's `INVALID_INPUT`.
    fn check(&self, input: &Self::Input) -> Result<(), String> {
        let _ = input;
        Ok(())
    }

    /// Answers one valid call. `Err` stops the run (a store failure).
    fn call<'a>(
        &'a self,
        cx: LoopCall<'a>,
        input: Self::Input,
    ) -> BoxFuture<'a, Result<LoopStep, Stop>>;
}

/// `LoopTool` with its input type erased, for the table.
trait ErasedLoopTool: Send + Sync {
    fn call_raw<'a>(
        &'a self,
        cx: LoopCall<'a>,
        raw: Value,
    ) -> BoxFuture<'a, Result<LoopStep, Stop>>;

    /// The typed parse and the tool's own rules, without a call.
    #[cfg(test)]
    fn check_raw(&self, raw: Value) -> Result<(), String>;
}

/// `raw` parsed into the tool's input and checked by its own rules; the message is
/// the model's `INVALID_INPUT`.
fn parse<T: LoopTool>(tool: &T, raw: Value) -> Result<T::Input, String> {
    let input = serde_json::from_value::<T::Input>(raw).map_err(|e| e.to_string())?;
    tool.check(&input)?;
    Ok(input)
}

impl<T: LoopTool> ErasedLoopTool for T {
    #[cfg(test)]
    fn check_raw(&self, raw: Value) -> Result<(), String> {
        parse(self, raw).map(drop)
    }

    fn call_raw<'a>(
        &'a self,
        cx: LoopCall<'a>,
        raw: Value,
    ) -> BoxFuture<'a, Result<LoopStep, Stop>> {
        match parse(self, raw) {
            Ok(input) => self.call(cx, input),
            Err(message) => Box::pin(async move {
                Ok(LoopStep::Result(ToolOutput::err(
                    codes::INVALID_INPUT,
                    message,
                )))
            }),
        }
    }
}

/// A loop tool as the registry holds it ([`Tool`]): the definition the model sees, and
/// the body the run loop calls. Constructors: [`RunLoopTool::ask_question`],
/// [`RunLoopTool::get_goal`], [`RunLoopTool::report_goal`],
/// [`RunLoopTool::context_read`], [`RunLoopTool::context_search`],
/// [`RunLoopTool::store_secret`], [`RunLoopTool::subagent`]; register one in the
/// registry of a hand-built runner's executor.
#[derive(Clone)]
pub struct RunLoopTool {
    entry: Arc<LoopEntry>,
}

/// What a [`RunLoopTool`] is made of, shared with the loop that answers its calls.
pub(crate) struct LoopEntry {
    /// Which `LoopTool` it is (its type), so the loop finds one of its own by type.
    kind: TypeId,
    definition: ToolDefinition,
    /// The schema that input is checked against (the model's, or a looser one when
    /// the tool answers a value outside an `enum` itself, with a better error).
    validator: Result<jsonschema::Validator, String>,
    body: Box<dyn ErasedLoopTool>,
}

impl fmt::Debug for RunLoopTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunLoopTool")
            .field("name", &self.entry.definition.name)
            .finish_non_exhaustive()
    }
}

/// The typed marker a [`RunLoopTool`]'s `validate_input` hands back: only this crate
/// can make one, so a tool that yields it is one of the loop's, whatever its name.
struct LoopMarker(Arc<LoopEntry>);

/// The loop tool a registry entry is, recognised by type: a [`RunLoopTool`] answers
/// `validate_input` with its `LoopMarker`, any other tool with something else.
pub(crate) fn loop_tool_of(tool: &dyn Tool) -> Option<Arc<LoopEntry>> {
    let mut input = tool.validate_input(Value::Null).ok()?;
    input.take_parsed::<LoopMarker>().map(|marker| marker.0)
}

/// The registry's entry named `name` when it is the loop tool `T` (a host's own tool
/// of that name is not).
pub(crate) fn registered<T: LoopTool>(
    registry: &ToolRegistry,
    name: &str,
) -> Option<Arc<dyn Tool>> {
    let tool = registry.get(name).ok()?;
    loop_tool_of(tool.as_ref())
        .is_some_and(|entry| entry.kind == TypeId::of::<T>())
        .then_some(tool)
}

impl RunLoopTool {
    /// The registry entry of `tool`, its schema derived from its input type.
    pub(crate) fn new<T: LoopTool>(tool: T) -> Self {
        let mut definition = tool.definition();
        definition.input_schema = schema_for_input::<T::Input>();
        let checked = definition.input_schema.clone();
        Self::with_definition(definition, &checked, tool)
    }

    /// The entry of `tool` with a schema adjusted after derivation (the subagent
    /// tool's `agent` enum comes from its catalog), input checked against `checked`.
    pub(crate) fn with_definition<T: LoopTool>(
        definition: ToolDefinition,
        checked: &Value,
        tool: T,
    ) -> Self {
        let definition = definition
            .with_group("core")
            // A program cannot answer a question or wait: code mode never offers these.
            .with_script_callable(false);
        let validator = jsonschema::draft202012::new(checked).map_err(|e| e.to_string());
        Self {
            entry: Arc::new(LoopEntry {
                kind: TypeId::of::<T>(),
                definition,
                validator,
                body: Box::new(tool),
            }),
        }
    }
}

impl LoopEntry {
    /// The tool's canonical name.
    pub(crate) fn name(&self) -> &str {
        &self.definition.name
    }

    /// Answers one call of the pending turn: its arguments checked against the schema
    /// and parsed into the tool's input type, then the body.
    pub(crate) fn answer<'a>(
        &'a self,
        cx: LoopCall<'a>,
        raw: Value,
    ) -> BoxFuture<'a, Result<LoopStep, Stop>> {
        let raw = normalized(raw);
        match self.violations(&raw) {
            Some(message) => Box::pin(async move {
                Ok(LoopStep::Result(ToolOutput::err(
                    codes::INVALID_INPUT,
                    message,
                )))
            }),
            None => self.body.call_raw(cx, raw),
        }
    }

    /// What the schema check finds wrong with `raw`, the first three violations.
    fn violations(&self, raw: &Value) -> Option<String> {
        match &self.validator {
            Err(e) => Some(format!("the tool's schema does not compile: {e}")),
            Ok(validator) => {
                let found: Vec<String> = validator
                    .iter_errors(raw)
                    .take(3)
                    .map(|e| {
                        let at = e.instance_path().as_str().to_owned();
                        if at.is_empty() {
                            e.to_string()
                        } else {
                            format!("{at}: {e}")
                        }
                    })
                    .collect();
                (!found.is_empty()).then(|| found.join("; "))
            }
        }
    }
}

/// Some providers send `null` for a call without arguments: it means `{}`.
fn normalized(raw: Value) -> Value {
    if raw.is_null() {
        Value::Object(serde_json::Map::new())
    } else {
        raw
    }
}

impl Tool for RunLoopTool {
    fn definition(&self) -> &ToolDefinition {
        &self.entry.definition
    }

    /// Keeps the arguments and adds the `LoopMarker` the run loop recognises.
    fn validate_input(&self, raw: Value) -> Result<ToolInput, ToolErrorInfo> {
        Ok(ToolInput::with_parsed(
            raw,
            LoopMarker(Arc::clone(&self.entry)),
        ))
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
        let name = self.entry.definition.name.clone();
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Input as the loop checks it: the schema, the typed parse, the tool's rules.
    fn check(tool: &RunLoopTool, raw: Value) -> Result<(), String> {
        let entry = loop_tool_of(tool).unwrap();
        let raw = normalized(raw);
        match entry.violations(&raw) {
            Some(message) => Err(message),
            None => entry.body.check_raw(raw),
        }
    }

    #[test]
    fn inputs_are_checked_like_the_seed_says() {
        let catalog = iris_skill::SubagentCatalog::parse(
            "default: coder\nagents:\n  coder: {path: c.yaml, description: Codes.}\n",
            "/srv/agents.yaml",
        )
        .unwrap();
        let cases: Vec<(RunLoopTool, Vec<Value>, Vec<Value>)> = vec![
            (
                RunLoopTool::ask_question(),
                vec![
                    json!({"question": "Which env?", "options": ["dev", "prod"]}),
                    json!({"question": "Free?"}),
                ],
                vec![
                    json!({"question": ""}),
                    json!({"question": "  "}),
                    json!({"question": "x", "options": []}),
                    json!({"question": "x", "options": ["a", "a"]}),
                    json!({"question": "x", "options": [""]}),
                    json!({"question": "x", "extra": 1}),
                    json!({"options": ["a"]}),
                    json!("question"),
                ],
            ),
            (
                RunLoopTool::get_goal(),
                vec![json!({}), Value::Null],
                vec![json!({"goal": "x"})],
            ),
            (
                RunLoopTool::report_goal(),
                vec![json!({"status": "done", "summary": "Shipped."})],
                vec![
                    json!({"status": "finished", "summary": "x"}),
                    json!({"status": "done", "summary": " "}),
                    json!({"status": "done"}),
                    json!({"status": "done", "summary": "x", "extra": 1}),
                    json!(["done"]),
                ],
            ),
            (
                RunLoopTool::store_secret(),
                vec![json!({"key": " K "})],
                vec![
                    json!({"key": ""}),
                    json!({}),
                    json!({"key": "K", "value": "v"}),
                    json!("K"),
                    json!({"key": 3}),
                ],
            ),
            (
                RunLoopTool::context_read(),
                vec![json!({"ref": "result:call_1", "representation": "raw", "offset": 3})],
                vec![
                    json!({"ref": ""}),
                    json!({"ref": "x", "representation": "yaml"}),
                    json!({"ref": "x", "limit": 0}),
                    json!({"ref": "x", "limit": 20_001}),
                    json!({"ref": "x", "offset": -1}),
                ],
            ),
            (
                RunLoopTool::context_search(),
                vec![json!({"query": "alpha", "cursor": 2, "limit": 50})],
                vec![json!({"query": " "}), json!({"query": "a", "limit": 51})],
            ),
            (
                RunLoopTool::subagent(&catalog),
                vec![
                    json!({"prompt": "Do it", "agent": "coder"}),
                    json!({"prompt": "Do it", "agent": null}),
                    // An unknown selector is the tool's own answer (SUBAGENT_NOT_FOUND).
                    json!({"prompt": "Do it", "agent": "nobody"}),
                ],
                vec![
                    json!({"prompt": ""}),
                    json!({"prompt": "  "}),
                    json!({"agent": "coder"}),
                    json!({"prompt": "x", "agent": 3}),
                    json!({"prompt": "x", "extra": 1}),
                    json!("prompt"),
                ],
            ),
        ];
        for (tool, good, bad) in cases {
            let name = &tool.definition().name;
            for raw in good {
                assert_eq!(check(&tool, raw.clone()), Ok(()), "{name} {raw}");
            }
            for raw in bad {
                assert!(check(&tool, raw.clone()).is_err(), "{name} {raw}");
            }
        }
    }

    #[test]
    fn loop_tools_are_recognised_by_type_and_never_offered_to_scripts() {
        let tool = RunLoopTool::get_goal();
        assert!(loop_tool_of(&tool).is_some());
        assert_eq!(tool.definition().script_callable, Some(false));
        let impostor = iris_tools_core::FnTool::new(tool.definition().clone(), |_, _| async {
            ToolOutput::text("the host's own")
        });
        assert!(loop_tool_of(&impostor).is_none());
    }
}
