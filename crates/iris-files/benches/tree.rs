//! File-tool benchmarks against the command-line tools users would otherwise run:
//! `grep_search` vs `rg` (ripgrep) and `list_files` vs `fdfind` (fd), measured in the
//! same run on the same tree with equivalent settings (hidden files included,
//! `.gitignore` honoured, no global excludes).
//!
//! ```text
//! apt-get install -y ripgrep fd-find
//! cargo run --release -p iris-files --example gen_tree -- /tmp/iris-bench-tree
//! IRIS_BENCH_TREE=/tmp/iris-bench-tree cargo bench -p iris-files --bench tree
//! ```
//!
//! Without `IRIS_BENCH_TREE` a small tree (2,000 files) is generated in a temporary
//! directory, so the benchmark always runs.
// Setup failures (a missing `rg`, an unreadable tree) should stop the benchmark
// loudly; unwrapping them is the clearest way to do that.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::LazyLock;

use divan::Bencher;
use serde_json::json;
use support::fixture::{FD_ARGS, FIXTURE, REGEX, RG_ARGS, run_quiet};
use support::tree::NEEDLE;

#[divan::bench(sample_count = 10, sample_size = 1, args = [NEEDLE, REGEX])]
fn grep_search(bencher: Bencher, pattern: &str) {
    let f = &*FIXTURE;
    bencher.bench(|| f.run(&f.grep, json!({"pattern": pattern})));
}

#[divan::bench(sample_count = 10, sample_size = 1, args = [NEEDLE, REGEX])]
fn rg(bencher: Bencher, pattern: &str) {
    LazyLock::force(&FIXTURE);
    let mut args = RG_ARGS.to_vec();
    args.extend([pattern, "."]);
    bencher.bench(|| run_quiet("rg", &args));
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn list_files(bencher: Bencher) {
    let f = &*FIXTURE;
    bencher.bench(|| f.run(&f.list, json!({"max_results": 1000})));
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn fdfind(bencher: Bencher) {
    LazyLock::force(&FIXTURE);
    let mut args = FD_ARGS.to_vec();
    args.extend([".", "."]);
    bencher.bench(|| run_quiet("fdfind", &args));
}

fn main() {
    divan::main();
}
