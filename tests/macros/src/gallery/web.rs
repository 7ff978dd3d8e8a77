//! Network-flavoured tools: presets for endpoints and secrets, renamed nested fields,
//! timeouts, deferred disclosure and `ToolOutput` returns.

use std::fmt;

use iris_tools_core::{ToolOutput, tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Units of a forecast.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Units {
    /// Celsius, km/h.
    #[default]
    Metric,
    /// Fahrenheit, mph.
    Imperial,
}

/// A daily forecast.
#[derive(Debug, Serialize)]
pub struct Forecast {
    /// The city asked for.
    pub city: String,
    /// Highest temperature of the day.
    pub high: f64,
    /// Units of `high`.
    pub units: Units,
}

/// Get tomorrow's forecast for a city.
///
/// Use for weather questions about one city; use `web_search` for history.
///
/// # Arguments
/// * `city` - city name, e.g. "Lisbon"
/// * `units` - unit system of the answer
#[tool(
    name = "get_weather",
    capabilities(network),
    group = "web",
    tags("weather", "forecast"),
    version = "2.1.0",
    timeout = "10s"
)]
pub async fn fetch_forecast(city: String, #[default] units: Units) -> Forecast {
    let high = match units {
        Units::Metric => 21.5,
        Units::Imperial => 70.7,
    };
    Forecast { city, high, units }
}

/// Build the GitHub REST URL for a repository endpoint.
///
/// Args:
///     repo: owner and name, e.g. "rust-lang/rust"
///     endpoint: path under the repository, e.g. "issues"
#[tool(capabilities(network), group = "web")]
pub fn github_api_url(
    #[preset] api_base: String,
    #[preset] api_token: String,
    repo: String,
    endpoint: String,
) -> Result<String, String> {
    if api_token.is_empty() {
        return Err("no API token configured".into());
    }
    if repo.split('/').count() != 2 {
        return Err(format!("`{repo}` is not owner/name"));
    }
    Ok(format!(
        "{}/repos/{repo}/{}",
        api_base.trim_end_matches('/'),
        endpoint.trim_start_matches('/')
    ))
}

/// Someone invited to a meeting.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Attendee {
    /// Their email address.
    #[serde(rename = "email")]
    pub address: String,
    /// Whether they may skip it.
    #[serde(default)]
    pub optional: bool,
}

/// When a meeting happens.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TimeSlot {
    /// Start, RFC 3339, e.g. "2025-03-01T10:00:00Z".
    pub start: String,
    /// Length in minutes.
    pub duration_minutes: u32,
}

/// Schedule a meeting and invite attendees.
///
/// Use once the time is agreed; use `find_free_slots` to agree on one first.
///
/// # Arguments
/// * `title` - what the meeting is about
/// * `slot` - when it happens
/// * `attendees` - who is invited; at least one
#[tool(
    capabilities(write, network),
    group = "calendar",
    deferred,
    examples(r#"{"title": "Planning", "slot": {"start": "2025-03-01T10:00:00Z", "durationMinutes": 30}, "attendees": [{"email": "ada@example.com"}]}"#)
)]
pub async fn schedule_meeting(
    title: String,
    slot: TimeSlot,
    attendees: Vec<Attendee>,
) -> ToolOutput {
    if attendees.is_empty() {
        return ToolOutput::err(
            iris_tools_core::codes::INVALID_INPUT,
            "invite at least one attendee",
        );
    }
    let required = attendees.iter().filter(|a| !a.optional).count();
    ToolOutput::text(format!(
        "Scheduled \"{title}\" at {} for {} min with {} attendee(s), {required} required",
        slot.start,
        slot.duration_minutes,
        attendees.len()
    ))
    .with_data("meeting_id", json!("mtg-1"))
}

/// A status code outside the HTTP registry.
#[derive(Debug)]
pub struct UnknownStatus(u16);

impl fmt::Display for UnknownStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} is not a registered HTTP status code", self.0)
    }
}

/// Explain an HTTP status code in a few words.
///
/// # Arguments
/// * `code` - the status code, 100 to 599
#[tool(group = "web", tags("http"))]
pub fn http_status_text(code: u16) -> Result<&'static str, UnknownStatus> {
    match code {
        200 => Ok("OK"),
        201 => Ok("Created"),
        301 => Ok("Moved Permanently"),
        404 => Ok("Not Found"),
        429 => Ok("Too Many Requests"),
        500 => Ok("Internal Server Error"),
        other => Err(UnknownStatus(other)),
    }
}

/// Hand a self-contained task to a helper agent and return its final answer.
///
/// Use for research that needs many steps; give all context in `task`.
#[tool(
    capabilities(agent),
    group = "agents",
    timeout = 120,
    concurrency_safe = false
)]
pub async fn delegate_task(
    /// Everything the helper needs to know; it sees no history.
    task: String,
    /// The helper profile, e.g. "researcher".
    agent: Option<String>,
) -> String {
    format!(
        "[{}] accepted: {task}",
        agent.as_deref().unwrap_or("default")
    )
}
