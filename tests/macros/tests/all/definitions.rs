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
