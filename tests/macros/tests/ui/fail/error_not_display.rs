use iris_tools_core::tool;

#[derive(Debug)]
struct Opaque;

/// The error type must be `Display`.
#[tool]
fn check(path: String) -> Result<String, Opaque> {
    Ok(path)
}

fn main() {}
