//! `store_secret`: the user gives a tool's missing or rejected secret (credential
//! auto-heal, see [`crate::secret`]).

use iris_tools_core::{BoxFuture, ToolDefinition};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::loop_tool::{LoopCall, LoopStep, LoopTool, RunLoopTool};
use crate::outcome::Interaction;
use crate::run_loop::Stop;

use super::not_blank;

/// `store_secret`'s name.
pub const STORE_SECRET: &str = "store_secret";

/// `store_secret`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    /// The secret's name exactly as the failed tool's error gave it, e.g.
    /// IRIS_PROVIDER_API_KEYS__TAVILY.
    #[schemars(length(min = 1))]
    key: String,
}

/// The loop's side of `store_secret`.
#[derive(Debug)]
pub(crate) struct StoreSecret;

impl LoopTool for StoreSecret {
    type Input = Input;

    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new(
            STORE_SECRET,
            "Ask the user for a tool's missing or rejected secret.\n\nUse it when a \
             tool failed because its key is missing, invalid or expired and its error \
             names the key; then call that tool again.",
            serde_json::Value::Null,
        )
        .with_system_use(true)
    }

    fn check(&self, input: &Input) -> Result<(), String> {
        not_blank("key", &input.key)
    }

    fn call<'a>(&'a self, cx: LoopCall<'a>, input: Input) -> BoxFuture<'a, Result<LoopStep, Stop>> {
        Box::pin(async move {
            let key = input.key.trim().to_owned();
            // The run's handler is asked for the value (or the run waits for resume).
            Ok(match cx.runner.secret_call(cx.state, &cx.call.id, key) {
                Ok(output) => LoopStep::Result(output),
                Err(request) => LoopStep::Wait(Interaction::Secret(request)),
            })
        })
    }
}

impl RunLoopTool {
    /// `store_secret`; see [`crate::secret`]. A `system_use` tool: hidden from the
    /// catalog, offered by the loop after an auth failure.
    pub fn store_secret() -> Self {
        Self::new(StoreSecret)
    }
}
