//! Every rule that checks a `DecisionResponse` against the request it answers.

use iris_decision::{
    BooleanAnswer, BooleanQuestion, ChoiceAnswer, ChoiceQuestion, DecisionAnswer, DecisionRequest,
    DecisionResponse, DecisionUsage, ScoreAnswer, ScoreQuestion,
};
use serde_json::json;

fn request() -> DecisionRequest {
    DecisionRequest::new(json!({"ticket": "Where is my refund?"}))
        .with_question(
            "team",
            ChoiceQuestion::new("Which team handles it?")
                .with_option("billing", Some("Payments and refunds"))
                .with_option("shipping", None::<String>)
                .with_option("none", None::<String>),
        )
        .with_question("urgent", BooleanQuestion::new("It must be answered today."))
        .with_question(
            "tone",
            ScoreQuestion::new("How upset is the customer?", ["calm", "annoyed", "angry"]),
        )
}

/// A response that passes every rule.
fn valid() -> DecisionResponse {
    DecisionResponse {
        provider: "typesafe".into(),
        model: "jev-1.13.0".into(),
        answers: [
            (
                "team".to_owned(),
                DecisionAnswer::Choice(ChoiceAnswer {
                    choice: "billing".into(),
                    probabilities: [("billing".to_owned(), 0.8), ("shipping".to_owned(), 0.2)]
                        .into(),
                    confidence: 0.7,
                }),
            ),
            (
                "urgent".to_owned(),
                DecisionAnswer::Boolean(BooleanAnswer { probability: 0.3 }),
            ),
            (
                "tone".to_owned(),
                DecisionAnswer::Score(ScoreAnswer {
                    // 0.2·0 + 0.5·0.5 + 0.3·1
                    score: 0.55,
                    probabilities: vec![0.2, 0.5, 0.3],
                    levels: vec!["calm".into(), "annoyed".into(), "angry".into()],
                    confidence: 0.6,
                }),
            ),
        ]
        .into(),
        usage: DecisionUsage {
            input_tokens: 90,
            output_tokens: 3,
        },
    }
}

fn choice(r: &mut DecisionResponse) -> &mut ChoiceAnswer {
    match r.answers.get_mut("team") {
        Some(DecisionAnswer::Choice(a)) => a,
        _ => unreachable!(),
    }
}

fn boolean(r: &mut DecisionResponse) -> &mut BooleanAnswer {
    match r.answers.get_mut("urgent") {
        Some(DecisionAnswer::Boolean(a)) => a,
        _ => unreachable!(),
    }
}

fn score(r: &mut DecisionResponse) -> &mut ScoreAnswer {
    match r.answers.get_mut("tone") {
        Some(DecisionAnswer::Score(a)) => a,
        _ => unreachable!(),
    }
}

type Mutation = Box<dyn Fn(&mut DecisionResponse)>;

/// Applies `mutate` to a valid response and validates; `expect` is `None` for valid,
/// else the exact message.
fn check(case: &str, mutate: &Mutation, expect: Option<&str>) {
    let mut response = valid();
    mutate(&mut response);
    match (response.validate_against(&request()), expect) {
        (Ok(()), None) => {}
        (Err(e), Some(message)) => {
            assert_eq!(e.code(), "DECISION_INVALID_RESPONSE", "{case}");
            assert_eq!(e.to_string(), message, "{case}");
        }
        (got, expect) => panic!("{case}: got {got:?}, expected {expect:?}"),
    }
}

#[test]
fn response_rules() {
    let p = "invalid decision response: ";
    let cases: Vec<(&str, Mutation, Option<String>)> = vec![
        ("valid as built", Box::new(|_| {}), None),
        (
            "blank provider",
            Box::new(|r| r.provider = " ".into()),
            Some(format!("{p}`provider` must not be empty")),
        ),
        (
            "blank model",
            Box::new(|r| r.model = String::new()),
            Some(format!("{p}`model` must not be empty")),
        ),
        (
            "an asked id is missing",
            Box::new(|r| {
                r.answers.remove("urgent");
            }),
            Some(format!(
                "{p}`answers.urgent` is missing; every question needs an answer"
            )),
        ),
        (
            "an id that was not asked",
            Box::new(|r| {
                r.answers.insert(
                    "extra".into(),
                    DecisionAnswer::Boolean(BooleanAnswer { probability: 0.5 }),
                );
            }),
            Some(format!(
                "{p}`answers.extra` answers no question that was asked"
            )),
        ),
        (
            "answer kind differs from the question kind",
            Box::new(|r| {
                r.answers.insert(
                    "team".into(),
                    DecisionAnswer::Boolean(BooleanAnswer { probability: 0.5 }),
                );
            }),
            Some(format!(
                "{p}`answers.team` is a boolean answer to a choice question"
            )),
        ),
        // Choice
        (
            "choice among the options (none is an option here)",
            Box::new(|r| {
                let a = choice(r);
                a.choice = "none".into();
                a.probabilities = [("none".to_owned(), 1.0)].into();
            }),
            None,
        ),
        (
            "choice not among the options",
            Box::new(|r| choice(r).choice = "legal".into()),
            Some(format!(
                "{p}`answers.team.choice` `legal` is not an option of the question"
            )),
        ),
        (
            "probability for an unknown option",
            Box::new(|r| {
                choice(r).probabilities =
                    [("billing".to_owned(), 0.5), ("legal".to_owned(), 0.5)].into();
            }),
            Some(format!(
                "{p}`answers.team.probabilities.legal` is not an option of the question"
            )),
        ),
        (
            "probability above 1",
            Box::new(|r| {
                choice(r).probabilities =
                    [("billing".to_owned(), 1.5), ("shipping".to_owned(), -0.5)].into();
            }),
            Some(format!(
                "{p}`answers.team.probabilities.billing` is 1.5; must be within [0, 1]"
            )),
        ),
        (
            "probability below 0",
            Box::new(|r| {
                choice(r).probabilities = [
                    ("billing".to_owned(), 1.0),
                    ("shipping".to_owned(), -0.0001),
                ]
                .into();
            }),
            Some(format!(
                "{p}`answers.team.probabilities.shipping` is -0.0001; must be within [0, 1]"
            )),
        ),
        (
            "probability NaN",
            Box::new(|r| {
                choice(r).probabilities = [("billing".to_owned(), f64::NAN)].into();
            }),
            Some(format!(
                "{p}`answers.team.probabilities.billing` is NaN; must be within [0, 1]"
            )),
        ),
        (
            "probabilities sum within the tolerance",
            Box::new(|r| {
                choice(r).probabilities =
                    [("billing".to_owned(), 0.805), ("shipping".to_owned(), 0.2)].into();
            }),
            None,
        ),
        (
            "probabilities sum too low",
            Box::new(|r| {
                choice(r).probabilities =
                    [("billing".to_owned(), 0.5), ("shipping".to_owned(), 0.2)].into();
            }),
            Some(format!(
                "{p}`answers.team.probabilities` sum to 0.700; must sum to 1 (±0.01)"
            )),
        ),
        (
            "no probabilities at all",
            Box::new(|r| choice(r).probabilities.clear()),
            Some(format!(
                "{p}`answers.team.probabilities` sum to 0.000; must sum to 1 (±0.01)"
            )),
        ),
        (
            "choice confidence out of range",
            Box::new(|r| choice(r).confidence = 1.2),
            Some(format!(
                "{p}`answers.team.confidence` is 1.2; must be within [0, 1]"
            )),
        ),
        // Boolean
        (
            "boolean probability 0",
            Box::new(|r| boolean(r).probability = 0.0),
            None,
        ),
        (
            "boolean probability 1",
            Box::new(|r| boolean(r).probability = 1.0),
            None,
        ),
        (
            "boolean probability out of range",
            Box::new(|r| boolean(r).probability = 2.0),
            Some(format!(
                "{p}`answers.urgent.probability` is 2.0; must be within [0, 1]"
            )),
        ),
        // Score
        (
            "score levels not echoed",
            Box::new(|r| score(r).levels = vec!["calm".into(), "angry".into(), "annoyed".into()]),
            Some(format!(
                "{p}`answers.tone.levels` must repeat the question's levels in order"
            )),
        ),
        (
            "score probabilities not one per level",
            Box::new(|r| score(r).probabilities = vec![0.5, 0.5]),
            Some(format!(
                "{p}`answers.tone.probabilities` has 2 entries; one per level (3) required"
            )),
        ),
        (
            "score probability out of range",
            Box::new(|r| score(r).probabilities = vec![-0.1, 0.6, 0.5]),
            Some(format!(
                "{p}`answers.tone.probabilities[0]` is -0.1; must be within [0, 1]"
            )),
        ),
        (
            "score probabilities do not sum to 1",
            Box::new(|r| score(r).probabilities = vec![0.2, 0.2, 0.2]),
            Some(format!(
                "{p}`answers.tone.probabilities` sum to 0.600; must sum to 1 (±0.01)"
            )),
        ),
        (
            "score out of range",
            Box::new(|r| score(r).score = 1.5),
            Some(format!(
                "{p}`answers.tone.score` is 1.5; must be within [0, 1]"
            )),
        ),
        (
            "score inconsistent with its probabilities",
            Box::new(|r| score(r).score = 0.9),
            Some(format!(
                "{p}`answers.tone.score` is 0.9 but its probabilities give 0.550"
            )),
        ),
        (
            "score on the lowest level",
            Box::new(|r| {
                let a = score(r);
                a.probabilities = vec![1.0, 0.0, 0.0];
                a.score = 0.0;
            }),
            None,
        ),
        (
            "score confidence out of range",
            Box::new(|r| score(r).confidence = -1.0),
            Some(format!(
                "{p}`answers.tone.confidence` is -1.0; must be within [0, 1]"
            )),
        ),
    ];
    for (case, mutate, expect) in &cases {
        check(case, mutate, expect.as_deref());
    }
}

#[test]
fn answers_use_a_type_tag_on_the_wire() {
    let wire = serde_json::to_value(valid()).unwrap();
    insta::assert_json_snapshot!(wire);
    let back: DecisionResponse = serde_json::from_value(wire).unwrap();
    assert_eq!(back, valid());
}

#[test]
fn typed_accessors_find_answers_of_their_kind_only() {
    let r = valid();
    assert_eq!(r.choice("team").map(|a| a.choice.as_str()), Some("billing"));
    assert_eq!(r.boolean("urgent").map(|a| a.probability), Some(0.3));
    assert_eq!(r.score("tone").map(|a| a.score), Some(0.55));
    assert!(r.choice("urgent").is_none());
    assert!(r.boolean("tone").is_none());
    assert!(r.score("missing").is_none());
    assert_eq!(
        r.answers
            .values()
            .map(DecisionAnswer::kind)
            .collect::<Vec<_>>(),
        ["choice", "score", "boolean"]
    );
}
