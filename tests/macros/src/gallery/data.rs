//! Data tools: nested inputs, enums, tagged unions, `Option` and `ToolOutput` returns.

use std::fmt;

use iris_tools_core::{ToolOutput, tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The state of an issue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum IssueState {
    /// Still to do.
    Open,
    /// Done or rejected.
    Closed,
}

/// Which issues to keep.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IssueFilter {
    /// Only issues in this state; any state when absent.
    pub state: Option<IssueState>,
    /// Only issues carrying every one of these labels.
    #[serde(default)]
    pub labels: Vec<String>,
    /// Only issues assigned to this login.
    #[serde(rename = "assignee")]
    pub assigned_to: Option<String>,
}

/// One issue of the tracker.
#[derive(Debug, Clone, Serialize)]
pub struct Issue {
    /// Issue number.
    pub number: u32,
    /// Title.
    pub title: String,
    /// State.
    pub state: IssueState,
    /// Labels.
    pub labels: Vec<&'static str>,
    /// Assignee login.
    pub assignee: Option<&'static str>,
}

fn tracker() -> Vec<Issue> {
    let issue = |number, title: &str, state, labels: &[&'static str], assignee| Issue {
        number,
        title: title.to_owned(),
        state,
        labels: labels.to_vec(),
        assignee,
    };
    vec![
        issue(
            1,
            "Crash when config is empty",
            IssueState::Open,
            &["bug"],
            Some("ada"),
        ),
        issue(
            2,
            "Add dark mode",
            IssueState::Open,
            &["feature", "ui"],
            None,
        ),
        issue(
            3,
            "Config reload leaks memory",
            IssueState::Closed,
            &["bug", "config"],
            Some("lin"),
        ),
        issue(
            4,
            "Document config keys",
            IssueState::Open,
            &["docs", "config"],
            Some("ada"),
        ),
    ]
}

/// Search the issue tracker by words in the title.
///
/// Use to find existing reports before filing a new one.
///
/// # Arguments
/// * `query` - words that must all appear in the title (case-insensitive)
/// * `filter` - optional state, label and assignee constraints
/// * `limit` - most issues returned
#[tool(capabilities(read), group = "issues", tags("tracker", "search"))]
pub async fn search_issues(
    query: String,
    #[default] filter: IssueFilter,
    #[default = 20] limit: u32,
) -> Vec<Issue> {
    let words: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
    tracker()
        .into_iter()
        .filter(|i| words.iter().all(|w| i.title.to_lowercase().contains(w)))
        .filter(|i| filter.state.is_none_or(|s| s == i.state))
        .filter(|i| filter.labels.iter().all(|l| i.labels.contains(&l.as_str())))
        .filter(|i| {
            filter
                .assigned_to
                .as_deref()
                .is_none_or(|a| i.assignee == Some(a))
        })
        .take(limit as usize)
        .collect()
}

/// One page of a list.
#[derive(Debug, Serialize)]
pub struct Page {
    /// The items on this page.
    pub items: Vec<String>,
    /// Where the next page starts; absent on the last page.
    pub next_offset: Option<usize>,
}

/// Return one page of a list of items.
#[tool(group = "data")]
pub fn paginate(
    /// The whole list.
    items: Vec<String>,
    #[tool(default = 0, description = "Index of the first item, from 0.")] offset: usize,
    #[tool(default = 50, description = "Most items on the page, 1 to 1000.")]
    #[schemars(range(min = 1, max = 1000))]
    limit: usize,
) -> Page {
    let end = offset.saturating_add(limit).min(items.len());
    let page = items.get(offset..end).unwrap_or_default().to_vec();
    Page {
        items: page,
        next_offset: (end < items.len()).then_some(end),
    }
}

/// Sort direction.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SortOrder {
    /// Smallest first.
    #[default]
    Asc,
    /// Largest first.
    Desc,
}

/// Sort a list of integers.
///
/// # Arguments
/// * `numbers` - the integers to sort
/// * `order` - the direction
#[tool(group = "data")]
pub fn sort_numbers(mut numbers: Vec<i64>, #[default] order: SortOrder) -> Vec<i64> {
    numbers.sort_unstable();
    if matches!(order, SortOrder::Desc) {
        numbers.reverse();
    }
    numbers
}

/// An arithmetic operation.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    /// `a + b`
    Add,
    /// `a - b`
    Subtract,
    /// `a * b`
    Multiply,
    /// `a / b`
    Divide,
}

/// Why a calculation failed.
#[derive(Debug)]
pub enum CalcError {
    /// Division by zero.
    DivisionByZero,
}

impl fmt::Display for CalcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("division by zero")
    }
}

/// Apply one arithmetic operation to two numbers.
///
/// Use for exact arithmetic instead of doing it in your head.
///
/// Args:
///     op: the operation to apply
///     a: the left operand
///     b: the right operand; must not be 0 for `divide`
///
/// Returns:
///     the result as a JSON number
#[tool(group = "math", tags("calculator"), concurrency_safe)]
pub fn calculate(op: Operation, a: f64, b: f64) -> Result<f64, CalcError> {
    match op {
        Operation::Add => Ok(a + b),
        Operation::Subtract => Ok(a - b),
        Operation::Multiply => Ok(a * b),
        Operation::Divide if b == 0.0 => Err(CalcError::DivisionByZero),
        Operation::Divide => Ok(a / b),
    }
}

/// A temperature unit.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
pub enum TemperatureUnit {
    /// Degrees Celsius.
    #[serde(rename = "C")]
    Celsius,
    /// Degrees Fahrenheit.
    #[serde(rename = "F")]
    Fahrenheit,
    /// Kelvin.
    #[serde(rename = "K")]
    Kelvin,
}

/// Convert a temperature between Celsius, Fahrenheit and Kelvin.
///
/// # Arguments
/// * `value` - the temperature to convert
/// * `from` - its unit
/// * `to` - the wanted unit
#[tool(group = "math", name = "convert_temperature", aliases("convert_units"))]
pub fn convert_units(value: f64, from: TemperatureUnit, to: TemperatureUnit) -> f64 {
    let celsius = match from {
        TemperatureUnit::Celsius => value,
        TemperatureUnit::Fahrenheit => (value - 32.0) * 5.0 / 9.0,
        TemperatureUnit::Kelvin => value - 273.15,
    };
    let out = match to {
        TemperatureUnit::Celsius => celsius,
        TemperatureUnit::Fahrenheit => celsius * 9.0 / 5.0 + 32.0,
        TemperatureUnit::Kelvin => celsius + 273.15,
    };
    (out * 100.0).round() / 100.0
}

/// Run a read-only SQL query against the reporting database.
///
/// Use for aggregate questions; the result rows are in `data.rows` for the host.
///
/// # Arguments
/// * `query` - one `SELECT` statement with `?` placeholders
/// * `params` - values for the placeholders, in order
#[tool(capabilities(read), group = "database", deferred, timeout = 45)]
pub async fn run_sql_query(
    #[schemars(length(min = 1))] query: String,
    #[default] params: Vec<Value>,
) -> ToolOutput {
    if !query
        .trim_start()
        .to_ascii_lowercase()
        .starts_with("select")
    {
        return ToolOutput::err(
            iris_tools_core::codes::PERMISSION_DENIED,
            "only SELECT statements may run",
        );
    }
    let rows = json!([{"region": "eu", "total": 42}, {"region": "us", "total": 58}]);
    ToolOutput::text(format!("2 rows ({} parameters bound)", params.len())).with_data("rows", rows)
}

/// A support ticket, tagged by its kind.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Ticket {
    /// Something is broken.
    Bug {
        /// 1 (cosmetic) to 4 (data loss).
        severity: u8,
    },
    /// Something is missing.
    Feature {
        /// How many users asked for it.
        votes: u32,
    },
}

/// Route a support ticket to a queue.
///
/// # Arguments
/// * `ticket` - the ticket, with its `kind`
#[tool(group = "support")]
pub fn classify_ticket(ticket: Ticket) -> &'static str {
    match ticket {
        Ticket::Bug { severity } if severity >= 3 => "urgent",
        Ticket::Bug { .. } => "bugs",
        Ticket::Feature { votes } if votes >= 100 => "roadmap",
        Ticket::Feature { .. } => "backlog",
    }
}

/// A point on Earth.
#[derive(Debug, Serialize)]
pub struct Coordinates {
    /// Degrees north.
    pub lat: f64,
    /// Degrees east.
    pub lon: f64,
}

/// Look up the coordinates of a well-known city; an empty result means unknown.
#[tool(group = "geo", capabilities(read))]
pub async fn geocode(
    /// The city name in English.
    city: String,
) -> Option<iris_tools_core::typed::Json<Coordinates>> {
    let found = match city.to_lowercase().as_str() {
        "paris" => Some((48.8566, 2.3522)),
        "tokyo" => Some((35.6762, 139.6503)),
        _ => None,
    };
    found.map(|(lat, lon)| iris_tools_core::typed::Json(Coordinates { lat, lon }))
}
