use std::rc::Rc;

use iris_tools_core::tool;

async fn tick() {}

/// Holds an `Rc` across an await, so its future is not `Send`.
#[tool]
async fn count(n: u32) -> u32 {
    let shared = Rc::new(n);
    tick().await;
    *shared
}

fn main() {}
