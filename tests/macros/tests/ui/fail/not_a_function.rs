use iris_tools_core::tool;

/// Not a function.
#[tool]
struct Config {
    key: String,
}

fn main() {}
