//! Generates the benchmark tree for the file-tool benchmarks.
//!
//! ```text
//! cargo run --release -p iris-files --example gen_tree -- /tmp/iris-bench-tree [FILES] [BYTES_PER_FILE]
//! ```
//!
//! Defaults: 50,000 files of about 10,600 bytes (≈ 530 MB), deterministic content.
//! Then run `IRIS_BENCH_TREE=/tmp/iris-bench-tree cargo bench -p iris-files --bench tree`.

#[path = "../benches/support/tree.rs"]
mod tree;

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(root) = args.next().map(PathBuf::from) else {
        eprintln!("usage: gen_tree DIR [FILES] [BYTES_PER_FILE]");
        return ExitCode::from(2);
    };
    let files = args.next().and_then(|a| a.parse().ok()).unwrap_or(50_000);
    let bytes = args.next().and_then(|a| a.parse().ok()).unwrap_or(10_600);
    if root.exists() && std::fs::read_dir(&root).is_ok_and(|mut d| d.next().is_some()) {
        eprintln!(
            "{} exists and is not empty; pick a new directory",
            root.display()
        );
        return ExitCode::from(2);
    }
    match tree::generate(&root, files, bytes) {
        Ok(stats) => {
            println!(
                "{}: {} visible files, {} bytes ({:.0} MB), {} with the needle `{}`, {} ignored files",
                root.display(),
                stats.files,
                stats.bytes,
                stats.bytes as f64 / 1e6,
                stats.needle_files,
                tree::NEEDLE,
                stats.ignored_files
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("cannot generate the tree: {e}");
            ExitCode::FAILURE
        }
    }
}
