// Entry point of the code-mode example.
fn main() {
    println!("example");
}
