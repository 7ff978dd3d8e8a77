//! [`DecisionResponse`] and its answers, and how they are checked against the request.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::request::{DecisionQuestion, DecisionRequest};

/// How far a probability distribution's sum (and a score's consistency with its
/// distribution) may stray from the exact value: rounding on the wire, not disagreement.
pub const PROBABILITY_TOLERANCE: f64 = 0.01;

/// The evaluator's answers to one [`DecisionRequest`].
///
/// `answers` has exactly the request's question ids; each answer has the kind of its
/// question. [`DecisionResponse::validate_against`] checks all of it.
///
/// ```
/// use iris_decision::{BooleanAnswer, BooleanQuestion, DecisionAnswer, DecisionRequest,
///     DecisionResponse, DecisionUsage};
/// use serde_json::json;
///
/// let request = DecisionRequest::new(json!({"text": "ship it"}))
///     .with_question("ready", BooleanQuestion::new("The change is ready to ship."));
/// let mut response = DecisionResponse {
///     provider: "typesafe".into(),
///     model: "jev-1.13.0".into(),
///     answers: [("ready".to_owned(), DecisionAnswer::Boolean(BooleanAnswer { probability: 0.8 }))].into(),
///     usage: DecisionUsage { input_tokens: 40, output_tokens: 1 },
/// };
/// assert!(response.validate_against(&request).is_ok());
/// assert_eq!(response.boolean("ready").map(|a| a.probability), Some(0.8));
///
/// response.answers.insert("extra".into(), DecisionAnswer::Boolean(BooleanAnswer { probability: 0.1 }));
/// let err = response.validate_against(&request).unwrap_err();
/// assert_eq!(err.code(), "DECISION_INVALID_RESPONSE");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionResponse {
    /// Who answered, e.g. `typesafe`.
    pub provider: String,
    /// Which model answered, e.g. `jev-1.13.0`.
    pub model: String,
    /// Answers by question id.
    pub answers: BTreeMap<String, DecisionAnswer>,
    /// Tokens the decision model used (independent of the main model's usage).
    pub usage: DecisionUsage,
}

/// One answer; its kind matches its question's kind. On the wire the kind is a `"type"`
/// tag: `choice`, `boolean` or `score`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum DecisionAnswer {
    /// The answer to a [`crate::ChoiceQuestion`].
    Choice(ChoiceAnswer),
    /// The answer to a [`crate::BooleanQuestion`].
    Boolean(BooleanAnswer),
    /// The answer to a [`crate::ScoreQuestion`].
    Score(ScoreAnswer),
}

/// The chosen option, the distribution over options, and the model's confidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChoiceAnswer {
    /// The chosen option: one of the question's option names.
    pub choice: String,
    /// Option → probability, each in `[0, 1]`, summing to 1 (±[`PROBABILITY_TOLERANCE`]).
    /// Options left out have probability 0.
    pub probabilities: BTreeMap<String, f64>,
    /// Confidence in the choice, in `[0, 1]`.
    pub confidence: f64,
}

/// The probability that the proposition holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BooleanAnswer {
    /// In `[0, 1]`.
    pub probability: f64,
}

/// Where the state sits on the question's scale.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoreAnswer {
    /// The expected level on a normalized scale: 0 is the lowest level, 1 the highest.
    /// It equals `Σ probabilities[i] · i / (levels − 1)` (±[`PROBABILITY_TOLERANCE`]).
    pub score: f64,
    /// Probability of each level, aligned with `levels`; each in `[0, 1]`, summing to 1.
    pub probabilities: Vec<f64>,
    /// The question's levels, lowest first (echoed so the answer reads on its own).
    pub levels: Vec<String>,
    /// Confidence in the score, in `[0, 1]`.
    pub confidence: f64,
}

/// Tokens the decision model used for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct DecisionUsage {
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
}

impl DecisionResponse {
    /// Checks the response against the request it answers: non-empty provider and
    /// model, exactly the asked ids, and each answer against its question (choice
    /// among the options, probabilities in `[0, 1]` summing to 1, score consistent with
    /// its distribution, levels echoed, confidence in `[0, 1]`).
    ///
    /// # Errors
    /// [`Error::InvalidResponse`] naming the field, e.g. `answers.team.choice`.
    pub fn validate_against(&self, request: &DecisionRequest) -> Result<()> {
        if self.provider.trim().is_empty() {
            return Err(Error::response("provider", "must not be empty"));
        }
        if self.model.trim().is_empty() {
            return Err(Error::response("model", "must not be empty"));
        }
        if let Some(id) = request
            .questions
            .keys()
            .find(|id| !self.answers.contains_key(*id))
        {
            return Err(Error::response(
                format!("answers.{id}"),
                "is missing; every question needs an answer",
            ));
        }
        for (id, answer) in &self.answers {
            let field = format!("answers.{id}");
            let Some(question) = request.questions.get(id) else {
                return Err(Error::response(field, "answers no question that was asked"));
            };
            answer.validate_against(question, &field)?;
        }
        Ok(())
    }

    /// The choice answer with this id, when there is one.
    pub fn choice(&self, id: &str) -> Option<&ChoiceAnswer> {
        match self.answers.get(id) {
            Some(DecisionAnswer::Choice(a)) => Some(a),
            _ => None,
        }
    }

    /// The boolean answer with this id, when there is one.
    pub fn boolean(&self, id: &str) -> Option<&BooleanAnswer> {
        match self.answers.get(id) {
            Some(DecisionAnswer::Boolean(a)) => Some(a),
            _ => None,
        }
    }

    /// The score answer with this id, when there is one.
    pub fn score(&self, id: &str) -> Option<&ScoreAnswer> {
        match self.answers.get(id) {
            Some(DecisionAnswer::Score(a)) => Some(a),
            _ => None,
        }
    }
}

impl DecisionAnswer {
    /// The wire name of the kind: `choice`, `boolean` or `score`.
    pub fn kind(&self) -> &'static str {
        match self {
            DecisionAnswer::Choice(_) => "choice",
            DecisionAnswer::Boolean(_) => "boolean",
            DecisionAnswer::Score(_) => "score",
        }
    }

    /// Checks this answer against its question; `field` prefixes error paths.
    ///
    /// # Errors
    /// [`Error::InvalidResponse`] naming the offending field.
    pub fn validate_against(&self, question: &DecisionQuestion, field: &str) -> Result<()> {
        match (self, question) {
            (DecisionAnswer::Choice(a), DecisionQuestion::Choice(q)) => {
                if !q.options.contains_key(&a.choice) {
                    return Err(Error::response(
                        format!("{field}.choice"),
                        format!("`{}` is not an option of the question", a.choice),
                    ));
                }
                if let Some(option) = a.probabilities.keys().find(|o| !q.options.contains_key(*o)) {
                    return Err(Error::response(
                        format!("{field}.probabilities.{option}"),
                        "is not an option of the question",
                    ));
                }
                check_distribution(
                    a.probabilities.iter().map(|(k, p)| (k.clone(), *p)),
                    &format!("{field}.probabilities"),
                )?;
                check_unit(a.confidence, &format!("{field}.confidence"))
            }
            (DecisionAnswer::Boolean(a), DecisionQuestion::Boolean(_)) => {
                check_unit(a.probability, &format!("{field}.probability"))
            }
            (DecisionAnswer::Score(a), DecisionQuestion::Score(q)) => {
                if a.levels != q.levels {
                    return Err(Error::response(
                        format!("{field}.levels"),
                        "must repeat the question's levels in order",
                    ));
                }
                if a.probabilities.len() != q.levels.len() {
                    return Err(Error::response(
                        format!("{field}.probabilities"),
                        format!(
                            "has {} entries; one per level ({}) required",
                            a.probabilities.len(),
                            q.levels.len()
                        ),
                    ));
                }
                let total = check_distribution(
                    a.probabilities
                        .iter()
                        .enumerate()
                        .map(|(i, p)| (format!("[{i}]"), *p)),
                    &format!("{field}.probabilities"),
                )?;
                check_unit(a.score, &format!("{field}.score"))?;
                let top = (q.levels.len() - 1) as f64;
                let expected = a
                    .probabilities
                    .iter()
                    .enumerate()
                    .map(|(i, p)| p * i as f64 / top)
                    .sum::<f64>()
                    / total;
                if (a.score - expected).abs() > PROBABILITY_TOLERANCE {
                    return Err(Error::response(
                        format!("{field}.score"),
                        format!("is {} but its probabilities give {expected:.3}", a.score),
                    ));
                }
                check_unit(a.confidence, &format!("{field}.confidence"))
            }
            (answer, question) => Err(Error::response(
                field,
                format!(
                    "is a {} answer to a {} question",
                    answer.kind(),
                    question.kind()
                ),
            )),
        }
    }
}

/// Checks a value is a probability in `[0, 1]` (NaN is not).
fn check_unit(value: f64, field: &str) -> Result<()> {
    if (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err(Error::response(
            field,
            format!("is {value:?}; must be within [0, 1]"),
        ))
    }
}

/// Checks each entry is a probability and the sum is 1 within tolerance; returns the sum.
fn check_distribution(entries: impl Iterator<Item = (String, f64)>, field: &str) -> Result<f64> {
    let mut total = 0.0;
    for (key, p) in entries {
        let entry = if key.starts_with('[') {
            format!("{field}{key}")
        } else {
            format!("{field}.{key}")
        };
        check_unit(p, &entry)?;
        total += p;
    }
    if (total - 1.0).abs() > PROBABILITY_TOLERANCE {
        return Err(Error::response(
            field,
            format!("sum to {total:.3}; must sum to 1 (±{PROBABILITY_TOLERANCE})"),
        ));
    }
    Ok(total)
}
