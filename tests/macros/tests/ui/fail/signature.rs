use iris_tools_core::tool;

/// Generic.
#[tool]
fn parse<T: std::str::FromStr>(text: String) -> Option<T> {
    text.parse().ok()
}

/// Unsafe.
#[tool]
unsafe fn raw(addr: usize) -> usize {
    addr
}

fn main() {}
