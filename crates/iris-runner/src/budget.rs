//! Run budgets (`limits:` in the agent YAML): how much one run may spend before it
//! stops.
//!
//! `max_turns` bounds model requests; a looping model on a paid API can still spend
//! a great deal before it. A budget bounds the rest:
//!
//! | key | bounds | checked |
//! |---|---|---|
//! | `max_input_tokens`, `max_output_tokens` | the run's tokens (its subagents' included) | before each model request |
//! | `max_cost_usd` | the cost of those tokens at `prices` | before each model request |
//! | `max_wall_seconds` | the time the run was driven (time spent waiting for a human does not count) | before each model request |
//! | `max_tool_calls` | the calls the run's tools ran (all tools) | before each call |
//! | `max_tool_calls_per_tool` | `{tool: n}`: the calls of one tool | before each call |
//!
//! `prices` is `{model: {input_per_mtok, output_per_mtok}}` in US dollars per million
//! tokens, written in the YAML (Iris ships no prices, which would go stale); a
//! `max_cost_usd` without a price for the run's model is refused when the runner is
//! built.
//!
//! A run that reaches a limit ends `failed` with `RUN_BUDGET_EXCEEDED`, naming the
//! limit and the amount used; the calls of its turn that did not run stay planned in
//! the journal and the store. Resumed with a raised limit
//! ([`AgentRunner::resume_exceeded`](crate::AgentRunner::resume_exceeded), `iris resume
//! RUN --raise-limit max_tool_calls=20`), it goes on from there: the held calls run,
//! then the next model request. A subagent's tokens count against its parent's
//! budget once the child run ends.

use std::collections::BTreeMap;
use std::time::Duration;

use iris_providers::chat::Usage;
use serde::{Deserialize, Serialize};

use crate::error::codes;
use crate::outcome::RunError;

/// `limits:` — the run's budget (every limit optional).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// The most input (prompt) tokens.
    pub max_input_tokens: Option<u64>,
    /// The most output (generated) tokens.
    pub max_output_tokens: Option<u64>,
    /// The most tool calls, of all tools.
    pub max_tool_calls: Option<u32>,
    /// The most calls of each named tool.
    pub max_tool_calls_per_tool: BTreeMap<String, u32>,
    /// The most seconds the run is driven.
    pub max_wall_seconds: Option<f64>,
    /// The most US dollars the run's tokens cost at `prices`.
    pub max_cost_usd: Option<f64>,
    /// Prices per model name, for `max_cost_usd`.
    pub prices: BTreeMap<String, Price>,
}

/// One model's price, US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Per million input tokens.
    pub input_per_mtok: f64,
    /// Per million output tokens.
    pub output_per_mtok: f64,
}

impl Price {
    /// What `usage` costs, in US dollars.
    pub fn cost(&self, usage: Usage) -> f64 {
        // Token counts stay far below 2^52, where f64 is exact.
        #[allow(clippy::cast_precision_loss)]
        let (input, output) = (usage.input_tokens as f64, usage.output_tokens as f64);
        (input * self.input_per_mtok + output * self.output_per_mtok) / 1_000_000.0
    }
}

/// What a run has spent besides its own tokens, kept in its record across processes.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Spent {
    /// Calls run per tool, over the turns already in the history.
    pub tool_calls: BTreeMap<String, u32>,
    /// Milliseconds the run was driven, as of its last save.
    pub driven_ms: u64,
    /// Tokens of the subagent runs that ended.
    pub child_usage: Usage,
    /// The ids of the pending turn's calls already in `tool_calls` (so a call held
    /// by a wait is counted once); emptied when the turn ends.
    pub counted_calls: Vec<String>,
}

/// The names `--raise-limit` and the `iris run --max-…` flags take.
pub const LIMIT_KEYS: [&str; 6] = [
    "max_input_tokens",
    "max_output_tokens",
    "max_tool_calls",
    "max_tool_calls_per_tool.TOOL",
    "max_wall_seconds",
    "max_cost_usd",
];

impl Limits {
    /// Whether no limit is set.
    pub fn is_empty(&self) -> bool {
        self.max_input_tokens.is_none()
            && self.max_output_tokens.is_none()
            && self.max_tool_calls.is_none()
            && self.max_tool_calls_per_tool.is_empty()
            && self.max_wall_seconds.is_none()
            && self.max_cost_usd.is_none()
    }

    /// Checks the values, and that `max_cost_usd` has a price for `model`.
    ///
    /// # Errors
    /// The key and what is wrong with it.
    pub fn check(&self, model: Option<&str>) -> Result<(), (String, String)> {
        let bad = |key: &str, message: &str| Err((format!("limits.{key}"), message.to_owned()));
        for (key, value) in [
            ("max_wall_seconds", self.max_wall_seconds),
            ("max_cost_usd", self.max_cost_usd),
        ] {
            if value.is_some_and(|v| !v.is_finite() || v <= 0.0) {
                return bad(key, "must be a positive number");
            }
        }
        for (name, price) in &self.prices {
            if ![price.input_per_mtok, price.output_per_mtok]
                .iter()
                .all(|p| p.is_finite() && *p >= 0.0)
            {
                return bad(&format!("prices.{name}"), "prices must be numbers >= 0");
            }
        }
        if self.max_cost_usd.is_some()
            && let Some(model) = model
            && !self.prices.contains_key(model)
        {
            return bad(
                "max_cost_usd",
                &format!(
                    "needs the price of model `{model}` under limits.prices \
                     ({{{model}: {{input_per_mtok: …, output_per_mtok: …}}}}); Iris ships no prices"
                ),
            );
        }
        Ok(())
    }

    /// Sets one limit from `KEY=VALUE` (`iris resume --raise-limit`, `iris run
    /// --max-…`); `KEY` is one of [`LIMIT_KEYS`].
    ///
    /// ```
    /// use iris_runner::budget::Limits;
    ///
    /// let mut limits = Limits::default();
    /// limits.set("max_tool_calls=20")?;
    /// limits.set("max_tool_calls_per_tool.exec_command=3")?;
    /// assert_eq!(limits.max_tool_calls, Some(20));
    /// assert_eq!(limits.max_tool_calls_per_tool["exec_command"], 3);
    /// assert!(limits.set("max_turns=3").is_err());
    /// # Ok::<(), String>(())
    /// ```
    ///
    /// # Errors
    /// An unknown key or a value that is not a positive number.
    pub fn set(&mut self, assignment: &str) -> Result<(), String> {
        let (key, value) = assignment
            .split_once('=')
            .ok_or_else(|| format!("`{assignment}`: expected KEY=VALUE"))?;
        let whole = || {
            value
                .parse::<u64>()
                .ok()
                .filter(|v| *v > 0)
                .ok_or_else(|| format!("`{key}`: `{value}` is not a positive whole number"))
        };
        let real = || {
            value
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v > 0.0)
                .ok_or_else(|| format!("`{key}`: `{value}` is not a positive number"))
        };
        let count = || whole().map(|v| u32::try_from(v).unwrap_or(u32::MAX));
        match key {
            "max_input_tokens" => self.max_input_tokens = Some(whole()?),
            "max_output_tokens" => self.max_output_tokens = Some(whole()?),
            "max_tool_calls" => self.max_tool_calls = Some(count()?),
            "max_wall_seconds" => self.max_wall_seconds = Some(real()?),
            "max_cost_usd" => self.max_cost_usd = Some(real()?),
            _ => match key.strip_prefix("max_tool_calls_per_tool.") {
                Some(tool) if !tool.is_empty() => {
                    self.max_tool_calls_per_tool
                        .insert(tool.to_owned(), count()?);
                }
                _ => {
                    return Err(format!(
                        "`{key}` is not a limit; one of {}",
                        LIMIT_KEYS.join(", ")
                    ));
                }
            },
        }
        Ok(())
    }

    /// Checked before each model request: tokens (the run's and its ended
    /// subagents'), cost at the model's price, and the time the run was driven.
    pub(crate) fn before_request(
        &self,
        usage: Usage,
        spent: &Spent,
        model: &str,
        driven: Duration,
    ) -> Result<(), RunError> {
        let total = Usage::new(
            usage.input_tokens + spent.child_usage.input_tokens,
            usage.output_tokens + spent.child_usage.output_tokens,
        );
        for (key, max, used, what) in [
            (
                "max_input_tokens",
                self.max_input_tokens,
                total.input_tokens,
                "input tokens",
            ),
            (
                "max_output_tokens",
                self.max_output_tokens,
                total.output_tokens,
                "output tokens",
            ),
        ] {
            if let Some(max) = max
                && used >= max
            {
                return Err(exceeded(key, &max.to_string(), &format!("{used} {what}")));
            }
        }
        if let Some(max) = self.max_cost_usd {
            // Fail closed: a cost limit that cannot be computed stops the run.
            let Some(price) = self.prices.get(model) else {
                return Err(RunError::new(
                    codes::CONFIG_INVALID,
                    format!(
                        "limits.max_cost_usd: no price for model `{model}` under limits.prices, \
                         so the run's cost cannot be checked"
                    ),
                ));
            };
            let cost = price.cost(total);
            if cost >= max {
                return Err(exceeded(
                    "max_cost_usd",
                    &format!("{max}"),
                    &format!("${cost:.4} at the prices of `{model}`"),
                ));
            }
        }
        if let Some(max) = self.max_wall_seconds
            && driven.as_secs_f64() >= max
        {
            return Err(exceeded(
                "max_wall_seconds",
                &format!("{max}"),
                &format!("{:.1} s driven", driven.as_secs_f64()),
            ));
        }
        Ok(())
    }

    /// Checked before a call of `tool` runs, given the calls already run (`counts`,
    /// per tool, this call not included).
    pub(crate) fn before_call(
        &self,
        counts: &BTreeMap<String, u32>,
        tool: &str,
    ) -> Result<(), RunError> {
        let all: u32 = counts.values().sum();
        if let Some(max) = self.max_tool_calls
            && all >= max
        {
            return Err(exceeded(
                "max_tool_calls",
                &max.to_string(),
                &format!("{all} tool calls run; `{tool}` would be one more"),
            ));
        }
        if let Some(max) = self.max_tool_calls_per_tool.get(tool) {
            let used = counts.get(tool).copied().unwrap_or(0);
            if used >= *max {
                return Err(exceeded(
                    &format!("max_tool_calls_per_tool.{tool}"),
                    &max.to_string(),
                    &format!("{used} calls of `{tool}` run"),
                ));
            }
        }
        Ok(())
    }
}

/// `RUN_BUDGET_EXCEEDED` for `key`.
fn exceeded(key: &str, max: &str, used: &str) -> RunError {
    RunError::new(
        codes::RUN_BUDGET_EXCEEDED,
        format!(
            "the run reached its limit `{key}` ({max}): {used}; resumed with a raised \
             limit it goes on (`--raise-limit {key}=…`)"
        ),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn tokens_count_the_subagents_and_cost_uses_the_models_price() {
        let mut limits = Limits {
            max_input_tokens: Some(100),
            ..Limits::default()
        };
        let mut spent = Spent::default();
        let d = Duration::ZERO;
        assert!(
            limits
                .before_request(Usage::new(60, 0), &spent, "m", d)
                .is_ok()
        );
        spent.child_usage = Usage::new(40, 0);
        let e = limits
            .before_request(Usage::new(60, 0), &spent, "m", d)
            .unwrap_err();
        assert_eq!(e.code, codes::RUN_BUDGET_EXCEEDED);
        assert!(
            e.message
                .contains("`max_input_tokens` (100): 100 input tokens"),
            "{e}"
        );

        limits = Limits {
            max_cost_usd: Some(1.0),
            prices: [(
                "m".to_owned(),
                Price {
                    input_per_mtok: 2.0,
                    output_per_mtok: 10.0,
                },
            )]
            .into(),
            ..Limits::default()
        };
        let spent = Spent::default();
        // 250k in ($0.50) + 40k out ($0.40) = $0.90.
        assert!(
            limits
                .before_request(Usage::new(250_000, 40_000), &spent, "m", d)
                .is_ok()
        );
        // + 10k out = $1.00.
        let e = limits
            .before_request(Usage::new(250_000, 50_000), &spent, "m", d)
            .unwrap_err();
        assert!(e.message.contains("$1.0000 at the prices of `m`"), "{e}");
        assert_eq!(
            limits.check(Some("other")).unwrap_err().0,
            "limits.max_cost_usd"
        );
    }

    #[test]
    fn calls_are_counted_per_tool_and_in_all() {
        let limits = Limits {
            max_tool_calls: Some(3),
            max_tool_calls_per_tool: [("exec_command".to_owned(), 1)].into(),
            ..Limits::default()
        };
        let mut counts = BTreeMap::new();
        assert!(limits.before_call(&counts, "exec_command").is_ok());
        counts.insert("exec_command".to_owned(), 1);
        let e = limits.before_call(&counts, "exec_command").unwrap_err();
        assert!(
            e.message.contains("max_tool_calls_per_tool.exec_command"),
            "{e}"
        );
        assert!(limits.before_call(&counts, "read_file").is_ok());
        counts.insert("read_file".to_owned(), 2);
        let e = limits.before_call(&counts, "read_file").unwrap_err();
        assert!(
            e.message.contains("`max_tool_calls` (3): 3 tool calls run"),
            "{e}"
        );
    }
}
