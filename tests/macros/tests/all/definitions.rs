//! Snapshots of every gallery definition: name, description, schema, capabilities,
//! metadata. A change to the macro's output shows up here as a reviewed diff.

use iris_macro_tests::gallery;

#[test]
fn gallery_has_at_least_25_tools_with_unique_names() {
    let definitions = gallery::definitions();
    assert!(definitions.len() >= 25, "only {} tools", definitions.len());
    let mut names: Vec<&str> = definitions.iter().map(|d| d.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), definitions.len(), "duplicate tool names");
}

#[test]
fn every_definition_validates() {
    for definition in gallery::definitions() {
        assert!(
            definition.validate().is_ok(),
            "{}: {:?}",
            definition.name,
            definition.validate()
        );
    }
}

#[test]
fn gallery_definitions_match_snapshots() {
    for definition in gallery::definitions() {
        insta::assert_json_snapshot!(definition.name.clone(), definition);
    }
}

#[test]
fn name_and_description_fall_back_in_the_seed_order() {
    use iris_tools_core::tool;

    #[tool]
    fn undocumented() {}

    /// Ignored: the attribute wins.
    #[tool(description = "From the attribute.")]
    fn described() {}

    /// # Arguments
    /// * `key` - only a parameter list, no prose
    #[tool]
    fn only_arguments(key: String) -> String {
        key
    }

    /// From the doc comment.
    #[tool(name = "renamed")]
    fn original_name() {}

    // (definition, name, description): attribute, then doc comment, then the name.
    let cases = [
        (undocumented::definition(), "undocumented", "undocumented"),
        (described::definition(), "described", "From the attribute."),
        (
            only_arguments::definition(),
            "only_arguments",
            "only_arguments",
        ),
        (
            original_name::definition(),
            "renamed",
            "From the doc comment.",
        ),
    ];
    for (definition, name, description) in cases {
        assert_eq!(
            (definition.name.as_str(), definition.description.as_str()),
            (name, description)
        );
    }
}

/// `idempotent` and `auto_allow` are flags set by code; serde never reads them back.
#[test]
fn idempotent_and_auto_allow_flags_reach_the_definition_but_not_its_json() {
    use iris_tools_core::tool;

    /// Charges a card once per idempotency key.
    #[tool(capabilities(network), idempotent, auto_allow, background)]
    fn charge(amount: u32) -> String {
        amount.to_string()
    }
    /// Sends an email.
    #[tool(capabilities(network))]
    fn send_email(to: String) -> String {
        to
    }
    let def = charge::definition();
    assert!(def.idempotent && def.auto_allow && def.background);
    let plain = send_email::definition();
    assert!(!plain.idempotent && !plain.auto_allow && !plain.background);
    let round_trip: iris_tools_core::ToolDefinition =
        serde_json::from_value(serde_json::to_value(&def).unwrap()).unwrap();
    assert!(!round_trip.idempotent && !round_trip.auto_allow && !round_trip.background);
}
