//! `ask_question` (`tools.builtin: [human.ask]`): the model asks the user, the run
//! waits for the answer.
//!
//! The tool is registered so the model sees its schema; the run loop answers its calls
//! itself, outside the hook and middleware chain (seed 000): the question becomes a
//! [`Interaction::Question`](crate::Interaction::Question) answered in process by an
//! [`ApprovalHandler::answer`](crate::ApprovalHandler::answer), or the run waits and
//! [`AgentRunner::resume`](crate::AgentRunner::resume) carries the answer. The answer
//! is the call's result.

use iris_tools_core::ToolDefinition;
use serde_json::{Value, json};

use crate::loop_tool::RunLoopTool;

/// The tool's model-facing name.
pub const ASK_QUESTION: &str = "ask_question";

impl RunLoopTool {
    /// `ask_question`; see the [module docs](self).
    pub fn ask_question() -> Self {
        let schema = json!({
            "type": "object",
            "properties": {
                "question": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The question, complete enough to answer without context."
                },
                "options": {
                    "type": "array",
                    "items": {"type": "string", "minLength": 1},
                    "minItems": 1,
                    "uniqueItems": true,
                    "description": "The allowed answers, when the user should pick one."
                }
            },
            "required": ["question"],
            "additionalProperties": false
        });
        let definition = ToolDefinition::new(
            ASK_QUESTION,
            "Ask the user a question and wait for the answer.\n\nUse it when you cannot \
             go on without a decision or a fact only the user has; give `options` when \
             the answer is one of a few choices. Do not use it for confirmation of \
             actions: those are asked for by the runtime.",
            schema,
        );
        Self::new(definition)
    }
}

/// The question and options of a call, or the `INVALID_INPUT` message the model
/// gets: a non-empty `question`; `options`, when given, non-empty, each non-empty,
/// unique.
pub(crate) fn parse_question(arguments: &Value) -> Result<(String, Vec<String>), String> {
    let bad = |message: &str| message.to_owned();
    let Some(object) = arguments.as_object() else {
        return Err(bad("ask_question takes an object with `question`"));
    };
    if let Some(key) = object.keys().find(|k| *k != "question" && *k != "options") {
        return Err(bad(&format!(
            "unknown argument `{key}`; ask_question takes `question` and `options`"
        )));
    }
    let question = match object.get("question") {
        Some(Value::String(q)) if !q.trim().is_empty() => q.clone(),
        _ => return Err(bad("`question` must be a non-empty string")),
    };
    let options = match object.get("options") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => {
            let mut options = Vec::with_capacity(items.len());
            for item in items {
                match item {
                    Value::String(o) if !o.trim().is_empty() => {
                        if options.contains(o) {
                            return Err(bad(&format!("`options` lists `{o}` twice")));
                        }
                        options.push(o.clone());
                    }
                    _ => return Err(bad("each of `options` must be a non-empty string")),
                }
            }
            if options.is_empty() {
                return Err(bad("`options`, when given, must not be empty"));
            }
            options
        }
        Some(_) => return Err(bad("`options` must be a list of strings")),
    };
    Ok((question, options))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn questions_are_checked_like_the_seed_says() {
        let ok = parse_question(&json!({"question": "Which env?", "options": ["dev", "prod"]}));
        assert_eq!(
            ok.unwrap(),
            ("Which env?".into(), vec!["dev".into(), "prod".into()])
        );
        assert_eq!(
            parse_question(&json!({"question": "Free?"})).unwrap().1,
            Vec::<String>::new()
        );
        for bad in [
            json!({"question": ""}),
            json!({"question": "x", "options": []}),
            json!({"question": "x", "options": ["a", "a"]}),
            json!({"question": "x", "options": [""]}),
            json!({"question": "x", "extra": 1}),
            json!({"options": ["a"]}),
            json!("question"),
        ] {
            assert!(parse_question(&bad).is_err(), "{bad}");
        }
    }
}
