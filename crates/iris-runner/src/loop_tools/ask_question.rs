//! `ask_question` (`tools.builtin: [human.ask]`): the model asks the user, the run
//! waits for the answer.
//!
//! The question becomes an [`Interaction::Question`] answered in process by the run's
//! [`InteractionHandler`](crate::InteractionHandler), or the run waits and
//! [`AgentRunner::resume`](crate::AgentRunner::resume) carries the answer. The answer
//! is the call's result.

use iris_tools_core::{BoxFuture, ToolDefinition};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::loop_tool::{LoopCall, LoopStep, LoopTool, RunLoopTool};
use crate::outcome::{Interaction, QuestionRequest};
use crate::run_loop::Stop;

use super::not_blank;

/// The tool's model-facing name.
pub(crate) const ASK_QUESTION: &str = "ask_question";

/// `ask_question`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    /// The question, complete enough to answer without context.
    #[schemars(length(min = 1))]
    question: String,
    /// The allowed answers, when the user should pick one.
    #[serde(default)]
    #[schemars(length(min = 1), extend("uniqueItems" = true))]
    options: Option<Vec<String>>,
}

/// The loop's side of `ask_question`.
#[derive(Debug)]
pub(crate) struct AskQuestion;

impl LoopTool for AskQuestion {
    type Input = Input;

    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new(
            ASK_QUESTION,
            "Ask the user a question and wait for the answer.\n\nUse it when you cannot \
             go on without a decision or a fact only the user has; give `options` when \
             the answer is one of a few choices. Do not use it for confirmation of \
             actions: those are asked for by the runtime.",
            serde_json::Value::Null,
        )
    }

    fn check(&self, input: &Input) -> Result<(), String> {
        not_blank("question", &input.question)?;
        if let Some(options) = &input.options {
            if options.is_empty() {
                return Err("`options`, when given, must not be empty".into());
            }
            for (i, option) in options.iter().enumerate() {
                not_blank("options[]", option)?;
                if options[..i].contains(option) {
                    return Err(format!("`options` lists `{option}` twice"));
                }
            }
        }
        Ok(())
    }

    fn call<'a>(&'a self, cx: LoopCall<'a>, input: Input) -> BoxFuture<'a, Result<LoopStep, Stop>> {
        Box::pin(async move {
            let request = QuestionRequest {
                id: cx.interaction_id(),
                run_id: cx.state.record.run_id.clone(),
                call_id: cx.call.id.clone(),
                question: input.question,
                options: input.options.unwrap_or_default(),
            };
            // The run's handler is asked (or the run waits for resume); its answer
            // must be one of the options, as on resume.
            Ok(LoopStep::Wait(Interaction::Question(request)))
        })
    }
}

impl RunLoopTool {
    /// `ask_question`: the model asks the user and the run waits for the answer
    /// (`tools.builtin: [human.ask]`).
    pub fn ask_question() -> Self {
        Self::new(AskQuestion)
    }
}
