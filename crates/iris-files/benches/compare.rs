//! Paired comparison of the file tools with `rg` and `fdfind`: each round runs the
//! tool and the command back to back (alternating which goes first), so background
//! load hits both alike; prints a markdown table of medians and ratios.
//!
//! ```text
//! IRIS_BENCH_TREE=/tmp/iris-bench-tree cargo bench -p iris-files --bench compare
//! ```
//!
//! `IRIS_BENCH_ROUNDS` sets the rounds (default 15). The divan benchmark `tree`
//! measures the same operations one after another instead.
// Setup failures should stop the comparison loudly; unwrapping them is clearest.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::fixture::{FD_ARGS, FIXTURE, REGEX, RG_ARGS, run_quiet};
use support::tree::NEEDLE;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    // `cargo bench` passes `--bench`; any other argument is a filter we ignore.
    let rounds: usize = std::env::var("IRIS_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(15);
    let f = &*FIXTURE;
    let rg_args = |pattern: &'static str| {
        let mut a = RG_ARGS.to_vec();
        a.extend([pattern, "."]);
        a
    };
    let mut fd_args = FD_ARGS.to_vec();
    fd_args.extend([".", "."]);
    type Run<'a> = Box<dyn Fn() + 'a>;
    let cases: Vec<(String, Run<'_>, String, Run<'_>)> = vec![
        (
            format!("grep_search `{NEEDLE}`"),
            Box::new(|| drop(f.run(&f.grep, json!({"pattern": NEEDLE})))),
            format!("rg {}", rg_args(NEEDLE).join(" ")),
            Box::new(move || run_quiet("rg", &rg_args(NEEDLE))),
        ),
        (
            format!("grep_search `{REGEX}`"),
            Box::new(|| drop(f.run(&f.grep, json!({"pattern": REGEX})))),
            format!("rg {}", rg_args(REGEX).join(" ")),
            Box::new(move || run_quiet("rg", &rg_args(REGEX))),
        ),
        (
            "list_files (max_results 1000)".into(),
            Box::new(|| drop(f.run(&f.list, json!({"max_results": 1000})))),
            format!("fdfind {}", fd_args.join(" ")),
            Box::new(|| run_quiet("fdfind", &fd_args)),
        ),
    ];
    println!("| operation | iris median | reference | reference median | ratio |");
    println!("|---|---|---|---|---|");
    for (ours_name, ours, theirs_name, theirs) in &cases {
        // One warm-up run each.
        ours();
        theirs();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for round in 0..rounds {
            let time = |run: &Run<'_>, into: &mut Vec<Duration>| {
                let start = Instant::now();
                run();
                into.push(start.elapsed());
            };
            if round % 2 == 0 {
                time(ours, &mut a);
                time(theirs, &mut b);
            } else {
                time(theirs, &mut b);
                time(ours, &mut a);
            }
        }
        let (ma, mb) = (median(a), median(b));
        // A `|` inside a cell would end it in markdown.
        let (ours_name, theirs_name) = (
            ours_name.replace('|', "\\|"),
            theirs_name.replace('|', "\\|"),
        );
        println!(
            "| {ours_name} | {} | `{theirs_name}` | {} | {:.2}× |",
            ms(ma),
            ms(mb),
            ma.as_secs_f64() / mb.as_secs_f64()
        );
    }
}
