//! A deterministic benchmark tree: many text files in nested directories, a rare
//! needle in every 500th file, plus gitignored files (which also hold the needle, so
//! a tool that does not honour `.gitignore` reports more matches).
//!
//! Shared by `examples/gen_tree.rs` (the command that makes the big tree) and the
//! `tree` benchmark (which makes a small one when no big tree is given).

use std::fs;
use std::io::{self, Write};
use std::path::Path;

/// The rare literal the grep benchmark searches for.
pub(crate) const NEEDLE: &str = "IRIS_NEEDLE_7f3a";

const WORDS: [&str; 32] = [
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
    "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango",
    "uniform", "victor", "whiskey", "xray", "yankee", "zulu", "fn", "let", "match", "impl",
    "struct", "return",
];

const EXTENSIONS: [&str; 4] = ["txt", "rs", "md", "json"];

/// What was generated.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct TreeStats {
    /// Visible (not ignored) files.
    pub(crate) files: u64,
    /// Bytes in visible files.
    pub(crate) bytes: u64,
    /// Visible files containing the needle (one needle line each).
    pub(crate) needle_files: u64,
    /// Ignored files (matched by `.gitignore`).
    pub(crate) ignored_files: u64,
}

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn file_text(rng: &mut XorShift, target: usize, needle: bool) -> String {
    let mut text = String::with_capacity(target + 128);
    let needle_line = if needle { rng.below(100) } else { u64::MAX };
    let mut line_no = 0;
    while text.len() < target {
        let len = 40 + rng.below(60) as usize;
        let start = text.len();
        if line_no == needle_line {
            text.push_str("let marker = \"");
            text.push_str(NEEDLE);
            text.push_str("\";");
        }
        while text.len() - start < len {
            text.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
            text.push(' ');
        }
        text.push('\n');
        line_no += 1;
    }
    text
}

fn write(path: &Path, text: &str) -> io::Result<()> {
    let mut f = fs::File::create(path)?;
    f.write_all(text.as_bytes())
}

/// Generates `files` visible files of about `bytes_per_file` bytes under `root`
/// (which must not exist or be empty), 100 directories wide, plus `.gitignore`d
/// files and an empty `.git` directory so every tool treats the tree as a
/// repository.
pub(crate) fn generate(root: &Path, files: u64, bytes_per_file: usize) -> io::Result<TreeStats> {
    let mut rng = XorShift(0x1234_5678_9abc_def1);
    let mut stats = TreeStats::default();
    fs::create_dir_all(root.join(".git"))?;
    write(&root.join(".gitignore"), "*.tmp\nignored/\n")?;
    stats.files += 1;
    stats.bytes += "*.tmp\nignored/\n".len() as u64;
    let per_dir = files.div_ceil(100).max(1);
    for i in 0..files {
        let dir = root.join(format!(
            "d{:02}/s{:02}",
            i / per_dir / 10,
            (i / per_dir) % 10
        ));
        if i % per_dir == 0 {
            fs::create_dir_all(&dir)?;
        }
        let needle = i % 500 == 0;
        let ext = EXTENSIONS[(i % 4) as usize];
        let text = file_text(&mut rng, bytes_per_file, needle);
        write(&dir.join(format!("f{i:06}.{ext}")), &text)?;
        stats.files += 1;
        stats.bytes += text.len() as u64;
        stats.needle_files += u64::from(needle);
    }
    // Ignored files hold the needle too: honouring .gitignore changes the answer.
    let ignored = root.join("ignored");
    fs::create_dir_all(&ignored)?;
    for i in 0..(files / 100).max(1) {
        let text = file_text(&mut rng, 1024, true);
        write(&ignored.join(format!("g{i:05}.txt")), &text)?;
        write(&root.join(format!("d00/s00/t{i:05}.tmp")), &text)?;
        stats.ignored_files += 2;
    }
    Ok(stats)
}
