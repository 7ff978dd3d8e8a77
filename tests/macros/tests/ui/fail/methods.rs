use iris_tools_core::tools;

struct Counter;

// A tool method shares its state: `&mut self` (or `self`) is refused.
#[tools]
impl Counter {
    /// Count up.
    #[tool]
    async fn bump(&mut self) -> u32 {
        1
    }
}

struct Generic<T>(T);

// The input types must be concrete.
#[tools]
impl<T> Generic<T> {
    /// Read.
    #[tool]
    async fn read(&self) -> String {
        String::new()
    }
}

trait Named {
    fn name(&self) -> String;
}

// Only inherent impl blocks hold tools.
#[tools]
impl Named for Counter {
    fn name(&self) -> String {
        String::new()
    }
}

// A block without a single `#[tool]` method is a mistake.
#[tools]
impl Counter {
    fn helper(&self) {}
}

fn main() {}
