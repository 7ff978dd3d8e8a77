//! A tool declared inside a function body sees that body's local types.

use iris_tools_core::tool;

fn main() {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    enum Mode {
        Fast,
        Careful,
    }

    /// Pick a mode.
    #[tool]
    fn pick(mode: Mode) -> &'static str {
        match mode {
            Mode::Fast => "fast",
            Mode::Careful => "careful",
        }
    }

    let schema = pick::input_schema();
    assert_eq!(schema["properties"]["mode"]["$ref"], "#/$defs/Mode");
    let _tool = pick::tool();
}
