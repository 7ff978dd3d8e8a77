//! Property test: paging through any file with `next_offset`/`next_column`
//! reassembles it exactly, with and without line numbers, for many budgets.
//!
//! The files come from a seeded generator (multi-byte text, CRLF, empty lines, tabs,
//! very long lines, with and without a final newline), so every run checks the same
//! cases and a failure names its seed.

use iris_files::FileToolsConfig;
use serde_json::json;

use crate::support::{Harness, Rng, code, first_text};

const PIECES: [&str; 12] = [
    "a", "word ", "é", "中文", "😀", "\n", "\n", "\r\n", "\t", " ", "x1", "\u{feff}",
];

fn generate(rng: &mut Rng) -> String {
    let mut text = String::new();
    let pieces = rng.below(400);
    for _ in 0..pieces {
        if rng.below(40) == 0 {
            // A long line of one multi-byte or ASCII character.
            let c = *rng.pick(&["é", "z", "😀", "中"][..]);
            text.push_str(&c.repeat(50 + rng.below(1500)));
        } else {
            text.push_str(PIECES[rng.below(PIECES.len())]);
        }
    }
    if rng.below(2) == 0 {
        text.push('\n');
    }
    text
}

/// Removes the `cat -n` prefixes of one numbered page, checking their numbers.
fn strip_numbers(body: &str, first_line: u64) -> String {
    let mut out = String::with_capacity(body.len());
    for (expected, segment) in (first_line + 1..).zip(body.split_inclusive('\n')) {
        let (prefix, rest) = segment.split_once('\t').unwrap();
        assert_eq!(prefix.trim_start().parse::<u64>().unwrap(), expected);
        out.push_str(rest);
    }
    out
}

#[tokio::test]
async fn pages_reassemble_exactly() {
    for budget in [64usize, 97, 500, 4096] {
        let h = Harness::with_config(FileToolsConfig::default().with_read_char_budget(budget));
        for seed in 0..25u64 {
            let mut rng = Rng::new(seed * 1000 + budget as u64);
            let text = generate(&mut rng);
            h.put("f.txt", &text);
            let numbers = rng.below(2) == 0;
            let total_chars = text.chars().count();
            let mut out = String::with_capacity(text.len());
            let (mut offset, mut column) = (0u64, 0u64);
            let mut pages = 0usize;
            loop {
                let limit = 1 + rng.below(60);
                let r = h
                    .call(
                        "read_file",
                        json!({"file_path": "f.txt", "offset": offset, "column": column,
                               "limit": limit, "with_line_numbers": numbers}),
                    )
                    .await;
                assert_eq!(code(&r), "OK", "seed {seed} budget {budget}");
                let has_body = r.data["chars"].as_u64().unwrap() > 0;
                let body = if has_body { first_text(&r) } else { "" };
                assert!(
                    body.chars().count() <= budget,
                    "seed {seed}: page over budget"
                );
                out.push_str(&if numbers {
                    strip_numbers(body, offset)
                } else {
                    body.to_owned()
                });
                pages += 1;
                assert!(pages <= total_chars + 2, "seed {seed}: no progress");
                match (
                    r.data["next_offset"].as_u64(),
                    r.data["next_column"].as_u64(),
                ) {
                    (Some(o), Some(c)) => {
                        assert!((o, c) > (offset, column), "seed {seed}: went backwards");
                        (offset, column) = (o, c);
                    }
                    _ => break,
                }
            }
            assert!(
                out == text,
                "seed {seed} budget {budget}: reassembly differs"
            );
        }
    }
}
