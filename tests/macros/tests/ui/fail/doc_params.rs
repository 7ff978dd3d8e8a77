use iris_tools_core::tool;

/// Read a key.
///
/// # Arguments
/// * `keyy` - the key (a typo: the parameter is `key`)
#[tool]
fn read_config(key: String) -> String {
    key
}

fn main() {}
