//! [`DecisionRequest`] and its questions: what a host asks a decision model.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};

/// The most options one [`ChoiceQuestion`] may offer (Jev's limit).
pub const MAX_CHOICE_OPTIONS: usize = 255;
/// The fewest levels a [`ScoreQuestion`] may have.
pub const MIN_SCORE_LEVELS: usize = 2;
/// The most levels a [`ScoreQuestion`] may have (Jev's limit).
pub const MAX_SCORE_LEVELS: usize = 10;

/// One structured decision: a JSON `state` the model judges, and named questions.
///
/// Question ids are the keys of `questions`; the answers of a [`crate::DecisionResponse`]
/// use the same ids. Build one with [`DecisionRequest::new`] and
/// [`DecisionRequest::with_question`], then check it with [`DecisionRequest::validate`]
/// (clients validate before sending anything).
///
/// ```
/// use iris_decision::{BooleanQuestion, ChoiceQuestion, DecisionRequest, ScoreQuestion};
/// use serde_json::json;
///
/// let request = DecisionRequest::new(json!({"ticket": "Refund not received after 14 days"}))
///     .with_question("team", ChoiceQuestion::new("Which team should handle the ticket?")
///         .with_option("billing", Some("Payments, refunds and invoices"))
///         .with_option("shipping", None::<String>))
///     .with_question("urgent", BooleanQuestion::new("The customer needs an answer today."))
///     .with_question("tone", ScoreQuestion::new("How upset is the customer?", ["calm", "annoyed", "angry"]));
/// assert!(request.validate().is_ok());
///
/// let empty = DecisionRequest::new(json!({}));
/// assert_eq!(empty.validate().unwrap_err().code(), "DECISION_INVALID_REQUEST");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionRequest {
    /// What the model judges: any JSON value.
    #[serde(default)]
    pub state: Value,
    /// The questions, by id. Must not be empty.
    pub questions: BTreeMap<String, DecisionQuestion>,
}

/// One question of a [`DecisionRequest`].
///
/// On the wire the kind is a `"type"` tag: `choice`, `boolean` or `score`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum DecisionQuestion {
    /// Pick one option.
    Choice(ChoiceQuestion),
    /// Judge the probability that a proposition holds.
    Boolean(BooleanQuestion),
    /// Place the state on an ordered scale.
    Score(ScoreQuestion),
}

/// Pick exactly one of the named options.
///
/// `options` maps each option name to an optional description that helps the model.
/// Non-empty, at most [`MAX_CHOICE_OPTIONS`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChoiceQuestion {
    /// What to decide. Non-empty.
    pub instructions: String,
    /// Option name → description (`None` when the name says enough).
    pub options: BTreeMap<String, Option<String>>,
}

/// Judge how likely a proposition (the instructions) is to hold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BooleanQuestion {
    /// The proposition to judge. Non-empty.
    pub instructions: String,
}

/// Place the state on an ordered scale of named levels, lowest first.
///
/// Between [`MIN_SCORE_LEVELS`] and [`MAX_SCORE_LEVELS`] levels, each non-empty and
/// distinct.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoreQuestion {
    /// What to score. Non-empty.
    pub instructions: String,
    /// The level names, from low to high.
    pub levels: Vec<String>,
}

impl DecisionRequest {
    /// A request with a state and no questions yet.
    pub fn new(state: Value) -> Self {
        Self {
            state,
            questions: BTreeMap::new(),
        }
    }

    /// Adds (or replaces) the question with this id.
    #[must_use]
    pub fn with_question(
        mut self,
        id: impl Into<String>,
        question: impl Into<DecisionQuestion>,
    ) -> Self {
        self.questions.insert(id.into(), question.into());
        self
    }

    /// Checks every rule: at least one question, non-blank ids, and each question's
    /// own rules ([`DecisionQuestion::validate`]).
    ///
    /// # Errors
    /// [`Error::InvalidRequest`] naming the field, e.g. `questions.team.options`.
    pub fn validate(&self) -> Result<()> {
        if self.questions.is_empty() {
            return Err(Error::request(
                "questions",
                "must contain at least one question",
            ));
        }
        for (id, question) in &self.questions {
            if id.trim().is_empty() {
                return Err(Error::request(
                    format!("questions.{id}"),
                    "has a blank question id",
                ));
            }
            question.validate(&format!("questions.{id}"))?;
        }
        Ok(())
    }
}

impl DecisionQuestion {
    /// The wire name of the kind: `choice`, `boolean` or `score`.
    pub fn kind(&self) -> &'static str {
        match self {
            DecisionQuestion::Choice(_) => "choice",
            DecisionQuestion::Boolean(_) => "boolean",
            DecisionQuestion::Score(_) => "score",
        }
    }

    /// The question's instructions.
    pub fn instructions(&self) -> &str {
        match self {
            DecisionQuestion::Choice(q) => &q.instructions,
            DecisionQuestion::Boolean(q) => &q.instructions,
            DecisionQuestion::Score(q) => &q.instructions,
        }
    }

    /// Checks the rules of the question's kind; `field` prefixes error paths.
    ///
    /// # Errors
    /// [`Error::InvalidRequest`] naming the offending field.
    pub fn validate(&self, field: &str) -> Result<()> {
        if self.instructions().trim().is_empty() {
            return Err(Error::request(
                format!("{field}.instructions"),
                "must not be empty",
            ));
        }
        match self {
            DecisionQuestion::Choice(q) => q.validate_options(field),
            DecisionQuestion::Boolean(_) => Ok(()),
            DecisionQuestion::Score(q) => q.validate_levels(field),
        }
    }
}

impl ChoiceQuestion {
    /// A choice question with no options yet.
    pub fn new(instructions: impl Into<String>) -> Self {
        Self {
            instructions: instructions.into(),
            options: BTreeMap::new(),
        }
    }

    /// Adds (or replaces) one option and its optional description.
    #[must_use]
    pub fn with_option(
        mut self,
        name: impl Into<String>,
        description: Option<impl Into<String>>,
    ) -> Self {
        self.options
            .insert(name.into(), description.map(Into::into));
        self
    }

    fn validate_options(&self, field: &str) -> Result<()> {
        let field = format!("{field}.options");
        if self.options.is_empty() {
            return Err(Error::request(field, "must contain at least one option"));
        }
        if self.options.len() > MAX_CHOICE_OPTIONS {
            return Err(Error::request(
                field,
                format!(
                    "has {} options; at most {MAX_CHOICE_OPTIONS} allowed",
                    self.options.len()
                ),
            ));
        }
        for (name, description) in &self.options {
            if name.trim().is_empty() {
                return Err(Error::request(
                    format!("{field}.{name}"),
                    "is a blank option name",
                ));
            }
            // An empty description says nothing; `None` is the way to leave it out.
            if description.as_deref().is_some_and(|d| d.trim().is_empty()) {
                return Err(Error::request(
                    format!("{field}.{name}"),
                    "has a blank description; use null to omit it",
                ));
            }
        }
        Ok(())
    }
}

impl BooleanQuestion {
    /// A boolean question: the proposition whose probability the model judges.
    pub fn new(instructions: impl Into<String>) -> Self {
        Self {
            instructions: instructions.into(),
        }
    }
}

impl ScoreQuestion {
    /// A score question with its levels, lowest first.
    pub fn new<S: Into<String>>(
        instructions: impl Into<String>,
        levels: impl IntoIterator<Item = S>,
    ) -> Self {
        Self {
            instructions: instructions.into(),
            levels: levels.into_iter().map(Into::into).collect(),
        }
    }

    fn validate_levels(&self, field: &str) -> Result<()> {
        let field = format!("{field}.levels");
        let n = self.levels.len();
        if !(MIN_SCORE_LEVELS..=MAX_SCORE_LEVELS).contains(&n) {
            return Err(Error::request(
                field,
                format!(
                    "has {n} levels; between {MIN_SCORE_LEVELS} and {MAX_SCORE_LEVELS} required"
                ),
            ));
        }
        let mut seen = BTreeSet::new();
        for (i, level) in self.levels.iter().enumerate() {
            if level.trim().is_empty() {
                return Err(Error::request(format!("{field}[{i}]"), "must not be empty"));
            }
            if !seen.insert(level.as_str()) {
                return Err(Error::request(
                    format!("{field}[{i}]"),
                    format!("repeats the level `{level}`"),
                ));
            }
        }
        Ok(())
    }
}

impl From<ChoiceQuestion> for DecisionQuestion {
    fn from(q: ChoiceQuestion) -> Self {
        DecisionQuestion::Choice(q)
    }
}

impl From<BooleanQuestion> for DecisionQuestion {
    fn from(q: BooleanQuestion) -> Self {
        DecisionQuestion::Boolean(q)
    }
}

impl From<ScoreQuestion> for DecisionQuestion {
    fn from(q: ScoreQuestion) -> Self {
        DecisionQuestion::Score(q)
    }
}
