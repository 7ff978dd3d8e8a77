//! A private tool that is never registered produces no warning from the generated
//! code, and every parameter attribute form is accepted.
#![deny(warnings)]

use iris_tools_core::tool;

/// Every parameter attribute at once.
#[tool(name = "attrs", examples(r#"{"a": 1, "type": "x"}"#))]
fn all_attributes(
    /// From a doc comment.
    a: u32,
    #[doc = " From a doc attribute."] b: Option<String>,
    #[default] c: Vec<String>,
    #[default = 7] d: u8,
    #[default = "text"] e: String,
    #[tool(default = 2, description = "From the tool attribute.")] f: i64,
    #[tool(preset)] g: String,
    #[preset] h: bool,
    #[serde(rename = "eye")] i: Option<u8>,
    #[schemars(range(min = 1, max = 9))] j: Option<u8>,
    #[allow(unused_mut)] mut k: Option<bool>,
    r#type: Option<String>,
) {
    let _ = (a, b, c, d, e, f, g, h, i, j, k.take(), r#type);
}

/// A tool compiled out by a `#[cfg]` written below `#[tool]`: the generated tool
/// type goes with it.
#[tool]
#[cfg(any())]
fn feature_gated() -> &'static str {
    "gated"
}

/// A deprecated Rust function behind a deprecated tool: calling it from the
/// generated code does not warn.
#[tool(deprecated, deprecation_message = "use `new_api`")]
#[deprecated = "use `new_api`"]
async fn old_api() -> &'static str {
    "old"
}

fn main() {}
