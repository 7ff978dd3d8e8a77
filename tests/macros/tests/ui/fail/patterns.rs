use iris_tools_core::tool;

/// Add a pair.
#[tool]
fn add((a, b): (i32, i32), ref c: i32) -> i32 {
    a + b + c
}

fn main() {}
