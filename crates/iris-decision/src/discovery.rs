//! The decision backend of tool discovery: [`decide_tools`].
//!
//! `tool_search` (in the executor's layer) owns the input, the static view and the
//! output shape; this module turns its queries and its allowed deferred candidates
//! into ONE decision request, and the answers back into per-query selections.

use std::collections::{BTreeMap, BTreeSet};

use iris_tools_core::ToolDefinition;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::error::{Error, Result};
use crate::evaluator::DecisionEvaluator;
use crate::request::{ChoiceQuestion, DecisionRequest, MAX_CHOICE_OPTIONS};
use crate::response::DecisionUsage;

/// The option every discovery question adds for "no listed tool fits".
pub const NONE_OPTION: &str = "none";
/// The most candidates one discovery decision holds: every choice has
/// [`MAX_CHOICE_OPTIONS`] options at most, and one of them is [`NONE_OPTION`].
pub const MAX_DISCOVERY_TOOLS: usize = MAX_CHOICE_OPTIONS - 1;
/// The longest tool description sent as an option description, in characters.
pub const DISCOVERY_DESCRIPTION_CHARS: usize = 240;
/// The `feature` recorded in `metadata.decision`.
pub const DISCOVERY_FEATURE: &str = "tool_discovery";

/// What one query selected: a candidate's name, or `None` when the model chose
/// [`NONE_OPTION`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiscoverySelection {
    /// The query, without surrounding whitespace.
    pub query: String,
    /// The selected tool, or `None` for no match.
    pub tool: Option<String>,
}

/// What `metadata.decision` records about the decision behind a discovery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionMetadata {
    /// Always [`DISCOVERY_FEATURE`] here.
    pub feature: String,
    /// Who answered.
    pub provider: String,
    /// Which model answered.
    pub model: String,
    /// How many questions the request asked (one per query).
    pub question_count: usize,
    /// The decision model's token usage.
    pub usage: DecisionUsage,
}

/// The result of [`decide_tools`].
#[derive(Debug, Clone, PartialEq)]
pub struct DiscoveryOutcome {
    /// One selection per query, in input order.
    pub selections: Vec<DiscoverySelection>,
    /// The decision made, or `None` when there were no candidates and nothing was asked.
    pub decision: Option<DecisionMetadata>,
}

impl DiscoveryOutcome {
    /// The selected tool names, deduplicated by first hit, in query order.
    pub fn selected_tools(&self) -> Vec<&str> {
        let mut seen = BTreeSet::new();
        self.selections
            .iter()
            .filter_map(|s| s.tool.as_deref())
            .filter(|name| seen.insert(*name))
            .collect()
    }

    /// The result metadata to merge into the `tool_search` result:
    /// `{"decision": {feature, provider, model, question_count, usage}}`, or an empty
    /// map when no decision was made.
    pub fn metadata(&self) -> Map<String, Value> {
        let mut metadata = Map::new();
        if let Some(decision) = &self.decision {
            metadata.insert(
                "decision".to_owned(),
                json!({
                    "feature": decision.feature,
                    "provider": decision.provider,
                    "model": decision.model,
                    "question_count": decision.question_count,
                    "usage": {
                        "input_tokens": decision.usage.input_tokens,
                        "output_tokens": decision.usage.output_tokens,
                    },
                }),
            );
        }
        metadata
    }
}

/// The description a candidate carries into the decision: at most
/// [`DISCOVERY_DESCRIPTION_CHARS`] characters, ending in `…` when shortened.
///
/// ```
/// use iris_decision::discovery_description;
/// assert_eq!(discovery_description("Read a file."), "Read a file.");
/// let long = "x".repeat(300);
/// let short = discovery_description(&long);
/// assert_eq!(short.chars().count(), 240);
/// assert!(short.ends_with('…'));
/// ```
pub fn discovery_description(description: &str) -> String {
    let description = description.trim();
    if description.chars().count() <= DISCOVERY_DESCRIPTION_CHARS {
        return description.to_owned();
    }
    let mut short: String = description
        .chars()
        .take(DISCOVERY_DESCRIPTION_CHARS - 1)
        .collect();
    short.push('…');
    short
}

/// The question id of the query at `index` among `count`: `q1`, `q2`, … zero-padded
/// to the width of `count`, so the ids sort in query order.
fn question_id(index: usize, count: usize) -> String {
    let width = count.to_string().len();
    format!("q{:0width$}", index + 1)
}

/// Builds the one discovery request: a Choice question per query whose options are
/// every candidate (name → description, at most 240 characters) plus [`NONE_OPTION`].
///
/// The candidates are the allowed deferred tools of the static view, already filtered
/// by the caller; they are all offered, never trimmed.
///
/// # Errors
/// - [`Error::InvalidRequest`]: no query, a blank query, a candidate named `none`, a
///   name offered twice.
/// - [`Error::TooManyTools`]: more than [`MAX_DISCOVERY_TOOLS`] candidates.
pub fn discovery_request(
    queries: &[String],
    candidates: &[ToolDefinition],
) -> Result<DecisionRequest> {
    let queries = checked_queries(queries)?;
    if candidates.len() > MAX_DISCOVERY_TOOLS {
        return Err(Error::TooManyTools {
            count: candidates.len(),
            max: MAX_DISCOVERY_TOOLS,
        });
    }
    let mut options: BTreeMap<String, Option<String>> = BTreeMap::new();
    for (i, tool) in candidates.iter().enumerate() {
        if tool.name == NONE_OPTION {
            return Err(Error::request(
                format!("candidates[{i}]"),
                format!("is named `{NONE_OPTION}`, which is the no-match option"),
            ));
        }
        let description = discovery_description(&tool.description);
        let description = (!description.is_empty()).then_some(description);
        if options.insert(tool.name.clone(), description).is_some() {
            return Err(Error::request(
                format!("candidates[{i}]"),
                format!("offers `{}` a second time", tool.name),
            ));
        }
    }
    options.insert(
        NONE_OPTION.to_owned(),
        Some("No listed tool fits this intent.".to_owned()),
    );

    let state = json!({ "feature": DISCOVERY_FEATURE, "queries": queries });
    let mut request = DecisionRequest::new(state);
    for (i, query) in queries.iter().enumerate() {
        let question = ChoiceQuestion {
            instructions: format!(
                "An agent needs one tool for this intent: \"{query}\". Choose the tool that \
                 best carries it out, or `{NONE_OPTION}` when no listed tool fits."
            ),
            options: options.clone(),
        };
        request = request.with_question(question_id(i, queries.len()), question);
    }
    Ok(request)
}

/// Asks the evaluator which deferred tool serves each query: ONE request with one
/// Choice question per query over every candidate plus `none`.
///
/// Returns a selection per query in input order (`None` when the model chose `none`)
/// and the decision's metadata. With no candidates nothing is asked and every
/// selection is `None`. The response is validated against the request whoever the
/// evaluator is. Errors are returned as they are: the caller must not fall back to
/// local search.
///
/// ```
/// use iris_decision::{decide_tools, BoxFuture, ChoiceAnswer, DecisionAnswer, DecisionEvaluator,
///     DecisionRequest, DecisionResponse, DecisionUsage, DecisionQuestion, Result};
/// use iris_tools_core::ToolDefinition;
/// use serde_json::json;
///
/// /// Picks an option whose name appears in the question, else `none`.
/// struct ByName;
/// impl DecisionEvaluator for ByName {
///     fn evaluate<'a>(&'a self, request: &'a DecisionRequest) -> BoxFuture<'a, Result<DecisionResponse>> {
///         Box::pin(async move {
///             let answers = request.questions.iter().map(|(id, q)| {
///                 let DecisionQuestion::Choice(q) = q else { unreachable!() };
///                 let choice = q.options.keys()
///                     .find(|o| q.instructions.contains(o.as_str()) && *o != "none")
///                     .cloned().unwrap_or_else(|| "none".into());
///                 let answer = ChoiceAnswer {
///                     probabilities: [(choice.clone(), 1.0)].into(), choice, confidence: 0.9,
///                 };
///                 (id.clone(), DecisionAnswer::Choice(answer))
///             }).collect();
///             Ok(DecisionResponse { provider: "test".into(), model: "by-name".into(), answers,
///                 usage: DecisionUsage { input_tokens: 10, output_tokens: 2 } })
///         })
///     }
/// }
///
/// let tools = [ToolDefinition::new("create_issue", "Open an issue.", json!({"type": "object"}))
///     .with_deferred(true)];
/// let queries = ["create_issue for the crash".to_owned(), "book a flight".to_owned()];
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let outcome = decide_tools(&ByName, &queries, &tools).await?;
/// assert_eq!(outcome.selections[0].tool.as_deref(), Some("create_issue"));
/// assert_eq!(outcome.selections[1].tool, None);
/// assert_eq!(outcome.metadata()["decision"]["question_count"], 2);
/// # Ok::<(), iris_decision::Error>(())
/// # }).unwrap();
/// ```
///
/// # Errors
/// Everything [`discovery_request`] reports (nothing is sent then), the evaluator's
/// own errors, and [`Error::InvalidResponse`] when the answers do not fit the questions.
pub async fn decide_tools(
    evaluator: &dyn DecisionEvaluator,
    queries: &[String],
    candidates: &[ToolDefinition],
) -> Result<DiscoveryOutcome> {
    let request = discovery_request(queries, candidates)?;
    let queries = checked_queries(queries)?;
    if candidates.is_empty() {
        return Ok(DiscoveryOutcome {
            selections: queries
                .iter()
                .map(|query| DiscoverySelection {
                    query: (*query).to_owned(),
                    tool: None,
                })
                .collect(),
            decision: None,
        });
    }
    let response = evaluator.evaluate(&request).await?;
    response.validate_against(&request)?;
    let mut selections = Vec::with_capacity(queries.len());
    for (i, query) in queries.iter().enumerate() {
        let id = question_id(i, queries.len());
        let Some(answer) = response.choice(&id) else {
            // validate_against guarantees a choice answer per question; report rather
            // than panic should that ever change.
            return Err(Error::response(
                format!("answers.{id}"),
                "is not a choice answer",
            ));
        };
        selections.push(DiscoverySelection {
            query: (*query).to_owned(),
            tool: (answer.choice != NONE_OPTION).then(|| answer.choice.clone()),
        });
    }
    Ok(DiscoveryOutcome {
        selections,
        decision: Some(DecisionMetadata {
            feature: DISCOVERY_FEATURE.to_owned(),
            provider: response.provider,
            model: response.model,
            question_count: request.questions.len(),
            usage: response.usage,
        }),
    })
}

/// The queries without surrounding whitespace; at least one, none blank.
fn checked_queries(queries: &[String]) -> Result<Vec<&str>> {
    if queries.is_empty() {
        return Err(Error::request("queries", "must contain at least one query"));
    }
    queries
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let q = q.trim();
            if q.is_empty() {
                Err(Error::request(format!("queries[{i}]"), "must not be blank"))
            } else {
                Ok(q)
            }
        })
        .collect()
}
