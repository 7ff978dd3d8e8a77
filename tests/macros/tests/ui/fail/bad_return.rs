use iris_tools_core::tool;

struct Handle;

/// Returns something that is neither a tool result nor `Serialize`.
#[tool]
fn open(path: String) -> Handle {
    let _ = path;
    Handle
}

fn main() {}
