//! Every validation rule of `DecisionRequest` and its questions.

use iris_decision::{
    BooleanQuestion, ChoiceQuestion, DecisionQuestion, DecisionRequest, MAX_CHOICE_OPTIONS,
    ScoreQuestion,
};
use serde_json::json;

/// Validates `request`; `expect` is `None` for valid, else the exact error message.
fn check(case: &str, request: DecisionRequest, expect: Option<&str>) {
    let got = request.validate();
    match (got, expect) {
        (Ok(()), None) => {}
        (Err(e), Some(message)) => {
            assert_eq!(e.code(), "DECISION_INVALID_REQUEST", "{case}");
            assert_eq!(e.to_string(), message, "{case}");
        }
        (got, expect) => panic!("{case}: got {got:?}, expected {expect:?}"),
    }
}

fn one(question: impl Into<DecisionQuestion>) -> DecisionRequest {
    DecisionRequest::new(json!({"text": "hello"})).with_question("q", question)
}

fn choice(n: usize) -> ChoiceQuestion {
    (0..n).fold(ChoiceQuestion::new("Pick one."), |q, i| {
        q.with_option(format!("option_{i}"), None::<String>)
    })
}

#[test]
fn request_rules() {
    let p = "invalid decision request: ";
    let cases: Vec<(&str, DecisionRequest, Option<String>)> = vec![
        (
            "no questions",
            DecisionRequest::new(json!({})),
            Some(format!("{p}`questions` must contain at least one question")),
        ),
        (
            "any JSON state, even null",
            DecisionRequest::new(json!(null)).with_question("q", BooleanQuestion::new("It rains.")),
            None,
        ),
        (
            "blank question id",
            DecisionRequest::new(json!({})).with_question(" ", BooleanQuestion::new("It rains.")),
            Some(format!("{p}`questions. ` has a blank question id")),
        ),
        (
            "several kinds together",
            DecisionRequest::new(json!({}))
                .with_question("a", choice(2))
                .with_question("b", BooleanQuestion::new("It rains."))
                .with_question("c", ScoreQuestion::new("How hot?", ["cold", "hot"])),
            None,
        ),
        // Choice
        ("choice: one option is enough", one(choice(1)), None),
        (
            "choice: no options",
            one(choice(0)),
            Some(format!(
                "{p}`questions.q.options` must contain at least one option"
            )),
        ),
        ("choice: 255 options", one(choice(MAX_CHOICE_OPTIONS)), None),
        (
            "choice: 256 options",
            one(choice(MAX_CHOICE_OPTIONS + 1)),
            Some(format!(
                "{p}`questions.q.options` has 256 options; at most 255 allowed"
            )),
        ),
        (
            "choice: blank instructions",
            one(ChoiceQuestion::new("  ").with_option("a", None::<String>)),
            Some(format!("{p}`questions.q.instructions` must not be empty")),
        ),
        (
            "choice: blank option name",
            one(ChoiceQuestion::new("Pick.").with_option("", None::<String>)),
            Some(format!("{p}`questions.q.options.` is a blank option name")),
        ),
        (
            "choice: described option",
            one(ChoiceQuestion::new("Pick.").with_option("a", Some("The first letter."))),
            None,
        ),
        (
            "choice: blank description",
            one(ChoiceQuestion::new("Pick.").with_option("a", Some(" "))),
            Some(format!(
                "{p}`questions.q.options.a` has a blank description; use null to omit it"
            )),
        ),
        // Boolean
        (
            "boolean",
            one(BooleanQuestion::new("The ticket is a refund request.")),
            None,
        ),
        (
            "boolean: blank instructions",
            one(BooleanQuestion::new("")),
            Some(format!("{p}`questions.q.instructions` must not be empty")),
        ),
        // Score
        (
            "score: two levels",
            one(ScoreQuestion::new("Severity?", ["low", "high"])),
            None,
        ),
        (
            "score: one level",
            one(ScoreQuestion::new("Severity?", ["only"])),
            Some(format!(
                "{p}`questions.q.levels` has 1 levels; between 2 and 10 required"
            )),
        ),
        (
            "score: no levels",
            one(ScoreQuestion::new("Severity?", Vec::<String>::new())),
            Some(format!(
                "{p}`questions.q.levels` has 0 levels; between 2 and 10 required"
            )),
        ),
        (
            "score: ten levels",
            one(ScoreQuestion::new(
                "Severity?",
                (1..=10).map(|i| i.to_string()),
            )),
            None,
        ),
        (
            "score: eleven levels",
            one(ScoreQuestion::new(
                "Severity?",
                (1..=11).map(|i| i.to_string()),
            )),
            Some(format!(
                "{p}`questions.q.levels` has 11 levels; between 2 and 10 required"
            )),
        ),
        (
            "score: blank level",
            one(ScoreQuestion::new("Severity?", ["low", " "])),
            Some(format!("{p}`questions.q.levels[1]` must not be empty")),
        ),
        (
            "score: repeated level",
            one(ScoreQuestion::new("Severity?", ["low", "high", "low"])),
            Some(format!(
                "{p}`questions.q.levels[2]` repeats the level `low`"
            )),
        ),
        (
            "score: blank instructions",
            one(ScoreQuestion::new("\n", ["low", "high"])),
            Some(format!("{p}`questions.q.instructions` must not be empty")),
        ),
    ];
    for (case, request, expect) in cases {
        check(case, request, expect.as_deref());
    }
}

#[test]
fn questions_use_a_type_tag_on_the_wire() {
    let request = DecisionRequest::new(json!({"ticket": 42}))
        .with_question(
            "team",
            ChoiceQuestion::new("Which team?")
                .with_option("billing", Some("Payments"))
                .with_option("shipping", None::<String>),
        )
        .with_question("urgent", BooleanQuestion::new("It is urgent."))
        .with_question("tone", ScoreQuestion::new("How upset?", ["calm", "angry"]));
    let wire = serde_json::to_value(&request).unwrap();
    insta::assert_json_snapshot!(wire);
    let back: DecisionRequest = serde_json::from_value(wire).unwrap();
    assert_eq!(back, request);
}

#[test]
fn kinds_and_instructions_are_exposed() {
    let cases: [(DecisionQuestion, &str, &str); 3] = [
        (choice(1).into(), "choice", "Pick one."),
        (BooleanQuestion::new("Yes?").into(), "boolean", "Yes?"),
        (
            ScoreQuestion::new("How?", ["a", "b"]).into(),
            "score",
            "How?",
        ),
    ];
    for (question, kind, instructions) in cases {
        assert_eq!(question.kind(), kind);
        assert_eq!(question.instructions(), instructions);
    }
}
