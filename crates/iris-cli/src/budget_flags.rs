//! A run's budget from the command line: `iris run --max-…` sets limits over the
//! YAML's `limits:`, `iris resume --raise-limit KEY=VALUE` raises one for a run that
//! stopped at it (`RUN_BUDGET_EXCEEDED`). The admin policy caps both.

use iris_runner::LoadedConfig;
use iris_runner::model::ModelConfig;

use crate::Failure;

/// `iris run`'s budget flags, each over the YAML's `limits:` key of the same name.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct LimitFlags {
    /// The most input tokens the run (and its subagents) may use.
    #[arg(long, value_name = "N")]
    max_input_tokens: Option<u64>,
    /// The most output tokens the run (and its subagents) may use.
    #[arg(long, value_name = "N")]
    max_output_tokens: Option<u64>,
    /// The most tool calls the run may make.
    #[arg(long, value_name = "N")]
    max_tool_calls: Option<u32>,
    /// The most calls of one tool, as TOOL=N (repeatable).
    #[arg(long, value_name = "TOOL=N")]
    max_tool_calls_per_tool: Vec<String>,
    /// The most seconds the run may be driven.
    #[arg(long, value_name = "SECONDS")]
    max_wall_seconds: Option<f64>,
    /// The most US dollars the run's tokens may cost at `limits.prices`.
    #[arg(long, value_name = "USD")]
    max_cost_usd: Option<f64>,
}

impl LimitFlags {
    /// The flags as `KEY=VALUE` assignments ([`iris_runner::budget::Limits::set`]).
    pub(crate) fn assignments(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut push = |key: &str, value: Option<String>| {
            if let Some(value) = value {
                out.push(format!("{key}={value}"));
            }
        };
        push(
            "max_input_tokens",
            self.max_input_tokens.map(|v| v.to_string()),
        );
        push(
            "max_output_tokens",
            self.max_output_tokens.map(|v| v.to_string()),
        );
        push("max_tool_calls", self.max_tool_calls.map(|v| v.to_string()));
        push(
            "max_wall_seconds",
            self.max_wall_seconds.map(|v| v.to_string()),
        );
        push("max_cost_usd", self.max_cost_usd.map(|v| v.to_string()));
        for tool in &self.max_tool_calls_per_tool {
            out.push(format!("max_tool_calls_per_tool.{tool}"));
        }
        out
    }
}

/// Sets `assignments` over the YAML's limits, caps them by the admin policy and
/// checks them against the run's model (a cost limit needs its price).
///
/// # Errors
/// `CONFIG_INVALID` (exit 2) for an assignment that is not a limit or a value that is
/// not a positive number, or a cost limit without the model's price.
pub(crate) fn apply(
    loaded: &mut LoadedConfig,
    assignments: &[String],
    model: &ModelConfig,
) -> Result<(), Failure> {
    let invalid = |message: String| Failure::new(2, iris_runner::codes::CONFIG_INVALID, message);
    let limits = &mut loaded.config.limits;
    for assignment in assignments {
        limits.set(assignment).map_err(invalid)?;
    }
    for t in loaded.policy.cap_limits(limits) {
        crate::output::err_line(&format!("iris: policy: {t}"));
    }
    limits
        .check(Some(model.model_name()))
        .map_err(|(key, message)| invalid(format!("{key}: {message}")))
}
