//! Everything generated for a public tool is documented.
#![deny(missing_docs)]

/// Public tools.
pub mod tools {
    use iris_tools_core::tool;

    /// Echo the text back.
    #[tool]
    pub async fn echo(text: String) -> String {
        text
    }

    /// Echo, crate-visible.
    #[tool]
    pub(crate) fn echo_crate(text: String) -> String {
        text
    }
}

fn main() {
    let _ = tools::echo::tool();
    let _ = tools::echo_crate::definition();
}
