use iris_tools_core::tool;

/// Bad name and alias.
#[tool(name = "read-config", aliases("ok_alias", "1bad"))]
fn read_config(key: String) -> String {
    key
}

/// A name from a non-ASCII function.
#[tool]
fn résumé(key: String) -> String {
    key
}

fn main() {}
