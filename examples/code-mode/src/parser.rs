// A toy parser module for the code-mode example.
pub fn parse(line: &str) -> Vec<&str> {
    // TODO: handle quoted fields
    line.split(',').collect()
}
