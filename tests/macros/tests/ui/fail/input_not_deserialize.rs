use iris_tools_core::tool;

/// A parameter type must be `Deserialize` and `JsonSchema`.
struct Connection;

/// Uses a connection.
#[tool]
fn ping(conn: Connection) -> String {
    let _ = conn;
    "pong".into()
}

fn main() {}
