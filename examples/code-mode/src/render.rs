// Rendering for the code-mode example.
pub fn render(fields: &[&str]) -> String {
    fields.join(" | ")
}
