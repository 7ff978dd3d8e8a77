//! [`ScriptedProvider`]: model turns replayed from a YAML or JSON script — no key, no
//! network, the same answer every time.
//!
//! # Script format
//!
//! A list of turns (or a mapping with a `turns` list); each request plays the next turn
//! (at least turn `k + 1` when its history holds `k` assistant messages, so a resumed
//! run continues its script where it stopped).
//!
//! | key | meaning |
//! |---|---|
//! | `text` | the answer text (optional) |
//! | `tool_calls` | calls to make: `name`, `arguments` (an object; default `{}`), optional `id` (default `call_<turn>_<n>`, both 1-based). `arguments` given as a *string* is raw argument text, parsed like a provider's — so a script can send malformed JSON on purpose |
//! | `expect_tool_results` | the number of tool results the request must end with (those after its last assistant message); otherwise the request fails with `PROVIDER_SCRIPT_INVALID` |
//! | `refusal` | a refusal message: the turn stops with [`StopReason::Refusal`] |
//! | `stop` | override the stop reason (`end_turn`, `tool_use`, `max_tokens`, `refusal`); default `tool_use` when there are calls, else `end_turn` |
//! | `usage` | `{input_tokens, output_tokens}` to report (default zeros) |
//!
//! Unknown keys are errors, so a typo does not silently change a script. When every turn
//! has been played, the next request fails with `PROVIDER_SCRIPT_EXHAUSTED`.
//!
//! ```
//! use iris_providers::{CompletionProvider, ScriptedProvider};
//! use iris_providers::chat::{CompletionRequest, Message, StopReason};
//! use iris_tools_core::ToolOutput;
//! use serde_json::json;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let provider = ScriptedProvider::from_yaml(r#"
//! - text: Reading both files.
//!   tool_calls:
//!     - name: read_file
//!       arguments: {file_path: a.txt}
//!     - name: read_file
//!       arguments: {file_path: b.txt}
//! - expect_tool_results: 2
//!   text: Both files say hello.
//! "#)?;
//!
//! let mut request = CompletionRequest::new("scripted").with_message(Message::user("Read a and b"));
//! let first = provider.complete(&request).await?;
//! assert_eq!(first.stop, StopReason::ToolUse);
//! assert_eq!(first.tool_calls[1].id, "call_1_2");
//! assert_eq!(first.tool_calls[1].arguments, json!({"file_path": "b.txt"}));
//!
//! let results: Vec<_> = first.tool_calls.iter()
//!     .map(|c| ToolOutput::text("hello").into_result(&c.id, &c.name))
//!     .collect();
//! request.messages.push(first.to_message());
//! request.messages.push(Message::tool_results(&results));
//! let second = provider.complete(&request).await?;
//! assert_eq!(second.text, "Both files say hello.");
//!
//! let err = provider.complete(&request).await.unwrap_err();
//! assert_eq!(err.code(), "PROVIDER_SCRIPT_EXHAUSTED");
//! # Ok::<(), iris_providers::ProviderError>(())
//! # }).unwrap();
//! ```

use std::path::Path;
use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::chat::{
    CompletionRequest, CompletionResponse, ModelToolCall, Part, Role, StopReason, Usage,
};
use crate::provider::{CompletionProvider, ProviderStream, iter};
use crate::provider_error::ProviderError;
use crate::streaming::replay_events;

/// The largest script file read: scripts are hand-written, a huge file is a mistake (or
/// a hostile workspace) and is refused before parsing.
pub const MAX_SCRIPT_BYTES: u64 = 1024 * 1024;

/// A parsed script: its turns, in order.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Script {
    /// The turns.
    pub turns: Vec<ScriptTurn>,
}

/// One scripted model turn; see the [module docs](self) for each key.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ScriptTurn {
    /// The answer text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The calls to make.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ScriptToolCall>,
    /// How many tool results the request must end with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_tool_results: Option<usize>,
    /// A refusal message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
    /// The stop reason, when not the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<StopReason>,
    /// The usage to report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

/// One scripted tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ScriptToolCall {
    /// The tool to call.
    pub name: String,
    /// The call id (default `call_<turn>_<n>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// An object, or a string of raw argument text.
    #[serde(default = "empty_object")]
    pub arguments: Value,
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

impl Script {
    /// Parses a script from YAML (which includes JSON).
    ///
    /// # Errors
    /// `PROVIDER_SCRIPT_INVALID` naming what is wrong and where.
    pub fn from_yaml(text: &str) -> Result<Self, ProviderError> {
        let invalid = |e: serde_yaml::Error| ProviderError::Script {
            reason: format!("not a valid script: {e}"),
        };
        // Deep flow nesting costs libyaml quadratic time: refused before parsing.
        use iris_fs::yaml::{MAX_YAML_FLOW_DEPTH, check_yaml_nesting};
        check_yaml_nesting(text, MAX_YAML_FLOW_DEPTH).map_err(|e| ProviderError::Script {
            reason: format!("not a valid script: {e}"),
        })?;
        let shape: serde_yaml::Value = serde_yaml::from_str(text).map_err(invalid)?;
        let turns = match shape {
            serde_yaml::Value::Sequence(_) => serde_yaml::from_str(text).map_err(invalid)?,
            serde_yaml::Value::Mapping(_) => {
                serde_yaml::from_str::<Script>(text).map_err(invalid)?.turns
            }
            _ => {
                return Err(ProviderError::Script {
                    reason: "a script is a list of turns, or a mapping with a `turns` list".into(),
                });
            }
        };
        let script = Script { turns };
        script.validate()?;
        Ok(script)
    }

    /// Parses a script from JSON.
    ///
    /// # Errors
    /// As [`Script::from_yaml`].
    pub fn from_json(text: &str) -> Result<Self, ProviderError> {
        Self::from_yaml(text)
    }

    /// A script from turns built in code.
    ///
    /// # Errors
    /// As [`Script::from_yaml`], for a turn that breaks a rule.
    pub fn new(turns: Vec<ScriptTurn>) -> Result<Self, ProviderError> {
        let script = Script { turns };
        script.validate()?;
        Ok(script)
    }

    fn validate(&self) -> Result<(), ProviderError> {
        let invalid = |turn: usize, reason: String| ProviderError::Script {
            reason: format!("turn {turn}: {reason}"),
        };
        for (n, turn) in self.turns.iter().enumerate() {
            let number = n + 1;
            if turn.text.is_none() && turn.tool_calls.is_empty() && turn.refusal.is_none() {
                return Err(invalid(
                    number,
                    "give `text`, `tool_calls` or `refusal`".into(),
                ));
            }
            let mut ids = std::collections::HashSet::new();
            for (c, call) in turn.tool_calls.iter().enumerate() {
                if call.name.trim().is_empty() {
                    return Err(invalid(
                        number,
                        format!("tool call {} has no `name`", c + 1),
                    ));
                }
                if !matches!(call.arguments, Value::Object(_) | Value::String(_)) {
                    return Err(invalid(
                        number,
                        format!(
                            "tool call {} (`{}`): `arguments` must be an object or a string of raw JSON",
                            c + 1,
                            call.name
                        ),
                    ));
                }
                if !ids.insert(call_id(number, c, call)) {
                    return Err(invalid(
                        number,
                        format!("tool call {} repeats an id", c + 1),
                    ));
                }
            }
        }
        Ok(())
    }
}

impl ScriptTurn {
    /// A turn answering with text.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: Some(text.into()),
            ..Self::default()
        }
    }

    /// Adds a tool call with object arguments.
    pub fn with_tool_call(mut self, name: impl Into<String>, arguments: Value) -> Self {
        self.tool_calls.push(ScriptToolCall {
            name: name.into(),
            id: None,
            arguments,
        });
        self
    }

    /// Sets the expected number of tool results.
    pub fn expecting_tool_results(mut self, n: usize) -> Self {
        self.expect_tool_results = Some(n);
        self
    }
}

fn call_id(turn: usize, index: usize, call: &ScriptToolCall) -> String {
    call.id
        .clone()
        .unwrap_or_else(|| format!("call_{turn}_{}", index + 1))
}

/// Replays a [`Script`]; see the [module docs](self).
///
/// The position in the script is shared by every request to this provider (one
/// provider per run); [`ScriptedProvider::reset`] starts over. A request whose
/// history already holds `k` assistant messages plays turn `k + 1` at least, so a
/// fresh provider continues a conversation (or a resumed run) where its script
/// stopped.
#[derive(Debug)]
pub struct ScriptedProvider {
    script: Script,
    next_turn: Mutex<usize>,
}

impl ScriptedProvider {
    /// A provider playing `script`.
    pub fn new(script: Script) -> Self {
        Self {
            script,
            next_turn: Mutex::new(0),
        }
    }

    /// A provider playing a YAML (or JSON) script.
    ///
    /// # Errors
    /// `PROVIDER_SCRIPT_INVALID` for a malformed script.
    pub fn from_yaml(text: &str) -> Result<Self, ProviderError> {
        Ok(Self::new(Script::from_yaml(text)?))
    }

    /// A provider playing a JSON script.
    ///
    /// # Errors
    /// As [`ScriptedProvider::from_yaml`].
    pub fn from_json(text: &str) -> Result<Self, ProviderError> {
        Ok(Self::new(Script::from_json(text)?))
    }

    /// A provider playing the script file at `path` (YAML or JSON), read once here,
    /// at most [`MAX_SCRIPT_BYTES`].
    ///
    /// # Errors
    /// `PROVIDER_SCRIPT_INVALID` when the file cannot be read, is too large, or is not
    /// a valid script.
    pub fn from_path(path: impl AsRef<Path>) -> Result<Self, ProviderError> {
        let path = path.as_ref();
        // The shared bounded reader: a FIFO or a device named as the script is refused
        // instead of blocking, and a file over the cap is refused before it is read.
        let text =
            iris_fs::bounded_read::read_regular_text(path, MAX_SCRIPT_BYTES).map_err(|e| {
                ProviderError::Script {
                    reason: format!("{} {e}", path.display()),
                }
            })?;
        let invalid = |reason: String| ProviderError::Script {
            reason: format!("{}: {reason}", path.display()),
        };
        Script::from_yaml(&text)
            .map(Self::new)
            .map_err(|e| invalid(e.to_string()))
    }

    /// The script.
    pub fn script(&self) -> &Script {
        &self.script
    }

    /// How many turns have been played.
    pub fn played(&self) -> usize {
        *self
            .next_turn
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// How many turns are left.
    pub fn remaining(&self) -> usize {
        self.script.turns.len().saturating_sub(self.played())
    }

    /// Starts the script over.
    pub fn reset(&self) {
        *self
            .next_turn
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = 0;
    }

    /// Plays the next turn for `request`.
    fn play(&self, request: &CompletionRequest) -> Result<CompletionResponse, ProviderError> {
        let mut next_turn = self
            .next_turn
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // A request whose history already holds k assistant turns plays turn k + 1 at
        // least: a run resumed by another process (a fresh provider) continues its
        // script where it stopped, while one provider still never replays a turn.
        let index = (*next_turn).max(assistant_turns(request));
        let turn = self
            .script
            .turns
            .get(index)
            .ok_or(ProviderError::ScriptExhausted {
                played: self.script.turns.len(),
            })?;
        let number = index + 1;
        if let Some(expected) = turn.expect_tool_results {
            let found = trailing_tool_results(request);
            if found != expected {
                return Err(ProviderError::Script {
                    reason: format!(
                        "turn {number} expects {expected} tool result(s) at the end of the \
                         request, found {found}"
                    ),
                });
            }
        }
        *next_turn = index + 1;
        drop(next_turn);

        let tool_calls: Vec<ModelToolCall> = turn
            .tool_calls
            .iter()
            .enumerate()
            .map(|(c, call)| {
                let id = call_id(number, c, call);
                match &call.arguments {
                    Value::String(raw) => ModelToolCall::parse(id, call.name.clone(), raw.clone()),
                    other => ModelToolCall::from_value(id, call.name.clone(), other.clone()),
                }
            })
            .collect();
        let stop = turn.stop.clone().unwrap_or(if turn.refusal.is_some() {
            StopReason::Refusal
        } else if tool_calls.is_empty() {
            StopReason::EndTurn
        } else {
            StopReason::ToolUse
        });
        let mut response = CompletionResponse::text(turn.text.clone().unwrap_or_default());
        response.tool_calls = tool_calls;
        response.stop = stop;
        response.usage = turn.usage.unwrap_or_default();
        response.refusal = turn.refusal.clone();
        response.id = Some(format!("scripted_{number}"));
        response.model = Some(request.model.clone());
        Ok(response)
    }
}

/// How many assistant turns the request's history holds.
fn assistant_turns(request: &CompletionRequest) -> usize {
    request
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .count()
}

/// The tool results after the request's last assistant message.
fn trailing_tool_results(request: &CompletionRequest) -> usize {
    request
        .messages
        .iter()
        .rev()
        .take_while(|m| m.role != Role::Assistant)
        .flat_map(|m| &m.content)
        .filter(|p| matches!(p, Part::ToolResult(_)))
        .count()
}

impl CompletionProvider for ScriptedProvider {
    fn name(&self) -> &str {
        "scripted"
    }

    fn stream<'a>(&'a self, request: &'a CompletionRequest) -> ProviderStream<'a> {
        match self.play(request) {
            Ok(turn) => iter(replay_events(turn).into_iter().map(Ok)),
            Err(error) => iter([Err(error)]),
        }
    }
}
