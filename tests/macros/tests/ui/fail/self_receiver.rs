use iris_tools_core::tool;

struct Config;

impl Config {
    /// Read a key.
    #[tool]
    async fn read(&self, key: String) -> String {
        key
    }
}

fn main() {}
