//! Each check against small fixture workspaces (passing and failing), and every check
//! against the real workspace.
#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests fail loudly on purpose.

use super::*;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The forbidden test attributes (without their closing `]`), spelled elsewhere.
const IGNORE: &str = FORBIDDEN_TEST_ATTRS[0];
const SHOULD_PANIC: &str = FORBIDDEN_TEST_ATTRS[1];

const CORE_TOML: &str = "crates/iris-tools-core/Cargo.toml";
const MACROS_DEP: &str = "iris-tools-macros = { workspace = true, optional = true }\n";

/// A throwaway workspace under the temp dir, removed on drop.
struct Fixture {
    root: PathBuf,
}

impl Fixture {
    /// A minimal workspace that passes every check; core has 8 non-test lines.
    fn valid(name: &str) -> Fixture {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let root = std::env::temp_dir().join(format!(
            "xtask-tidy-{}-{name}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&root);
        let f = Fixture { root };
        f.write(
            "Cargo.toml",
            r#"[workspace]
resolver = "3"
members = ["crates/*"]

[workspace.dependencies]
iris-tools-macros = { path = "crates/iris-tools-macros", version = "=0.1.0" }
tokio = { version = "1", default-features = false }
serde = { version = "1", features = ["derive"] } # a comment with "quotes" = and # signs
"#,
        );
        f.write(
            CORE_TOML,
            r#"[package]
name = "iris-tools-core"
version = "0.1.0"

[features]
macros = ["dep:iris-tools-macros"]

[dependencies]
serde.workspace = true
serde_json = "1"
thiserror = "2"
tracing = "0.1"
schemars = "1"
jsonschema = { version = "0.61", default-features = false }
tokio = { workspace = true, features = ["sync"] }
iris-tools-macros = { workspace = true, optional = true }

[dev-dependencies]
tempfile = "3"
tokio = { version = "1", features = ["rt", "macros", "fs"] }
"#,
        );
        f.write(
            "crates/iris-tools-core/src/lib.rs",
            r#"#![doc = include_str!("../README.md")]

// A comment may say std::fs or File::open.
/// So may a doc comment: `std::process::Command`.
pub mod registry;

#[cfg(test)]
mod tests {
    #[test]
    fn works() {
        assert_eq!(1 + 1, 2);
    }
}
"#,
        );
        f.write(
            "crates/iris-tools-core/src/registry.rs",
            "//! The registry.\n\n/// A registry.\npub struct Registry;\n\nimpl Registry {\n    \
             /// A new one.\n    pub fn new() -> Self {\n        Registry\n    }\n}\n",
        );
        f.write("crates/iris-tools-core/README.md", "# iris-tools-core\n");
        f.write(
            "crates/iris-tools-macros/Cargo.toml",
            "[package]\nname = \"iris-tools-macros\"\nversion = \"0.1.0\"\n",
        );
        f.write(
            "crates/iris-tools-macros/src/lib.rs",
            "//! Macros.\n#![doc = include_str!(\"../README.md\")]\n",
        );
        f.write(
            "crates/iris-tools-macros/README.md",
            "# iris-tools-macros\n",
        );
        // A binary-only crate needs no README.
        f.write(
            "crates/iris-cli/Cargo.toml",
            "[package]\nname = \"iris-cli\" # the binary\n",
        );
        f.write("crates/iris-cli/src/main.rs", "fn main() {}\n");
        f.write(
            "docs/architecture.md",
            "# Architecture\n\n## Architecture invariants (one line per crate)\n\n\
             - **iris-tools-core** owns the core;\n  it wraps onto a second line.\n\
             - **iris-tools-macros** turns functions into tools.\n\
             - **iris-cli** is a thin shell.\n\n## Decisions\n\n- **xtask** is no crate.\n\n\
             ## Allowed dependencies\n\n| crate | iris crates | other crates |\n|---|---|---|\n\
             | `iris-tools-core` | `iris-tools-macros` | `serde`, `serde_json`, `thiserror`, \
             `tracing`, `schemars`, `jsonschema`, `tokio` (`sync` only) |\n\
             | `iris-tools-macros` | — | any |\n| `iris-cli` | `iris-tools-core` | any |\n",
        );
        f.write(
            "tests/macros/src/lib.rs",
            "#[test]\nfn gallery() {\n    assert!(true);\n}\n",
        );
        f.write("xtask/src/main.rs", "fn main() {}\n");
        for dir in ["iris-tools-core", "iris-tools-macros", "iris-cli"] {
            for file in LICENSE_FILES {
                f.write(&format!("crates/{dir}/{file}"), "licence text\n");
            }
        }
        f
    }

    fn write(&self, rel: &str, text: &str) {
        let path = self.root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    fn remove(&self, rel: &str) {
        fs::remove_file(self.root.join(rel)).unwrap();
    }

    /// Replaces `from` (which must occur) with `to` in `rel`.
    fn edit(&self, rel: &str, from: &str, to: &str) {
        let text = fs::read_to_string(self.root.join(rel)).unwrap();
        assert!(text.contains(from), "{rel} lacks {from:?}");
        self.write(rel, &text.replacen(from, to, 1));
    }

    fn check(&self) -> Report {
        check(&self.root)
    }

    /// The violations as printed (without the `tidy: ` prefix).
    fn violations(&self) -> Vec<String> {
        self.check()
            .violations
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    /// Asserts the violations are exactly `expected`, each given as `file:line` and a
    /// fragment of the message.
    fn assert_violations(&self, expected: &[(&str, &str)]) {
        let found = self.violations();
        let matches = found.len() == expected.len()
            && found.iter().zip(expected).all(|(v, (at, fragment))| {
                v.starts_with(&format!("{at}: ")) && v.contains(fragment)
            });
        assert!(
            matches,
            "expected {expected:#?}\nfound {found:#?}",
            found = found
        );
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.root);
    }
}

#[test]
fn a_valid_workspace_passes_every_check() {
    let f = Fixture::valid("valid");
    let report = f.check();
    assert_eq!(report.violations, Vec::new());
    assert_eq!(report.core_lines, 8);
}

// Check 1: core's dependency allow-list.

#[test]
fn core_may_only_depend_on_the_allow_list() {
    let f = Fixture::valid("deps");
    f.edit(
        CORE_TOML,
        MACROS_DEP,
        &format!(
            "{MACROS_DEP}reqwest = {{ version = \"0.13\" }}\n\
             json = {{ package = \"serde_json\", version = \"1\" }}\n\
             tracing-subscriber.version = \"0.3\"\n\n\
             [dependencies.bollard]\nversion = \"0.21\"\n\n\
             [target.'cfg(unix)'.dependencies]\nrustix = \"1\"\n"
        ),
    );
    f.assert_violations(&[
        (&format!("{CORE_TOML}:17"), "may not depend on `reqwest`"),
        (&format!("{CORE_TOML}:19"), "`tracing-subscriber`"),
        (&format!("{CORE_TOML}:21"), "`bollard`"),
        (&format!("{CORE_TOML}:25"), "`rustix`"),
    ]);
}

#[test]
fn every_crate_may_only_depend_on_its_row() {
    let f = Fixture::valid("deps-every-crate");
    // iris-cli's row allows core and any other crate; the macros' row allows no iris
    // crate. A target table counts, a dev-dependency does not.
    f.write(
        "crates/iris-cli/Cargo.toml",
        "[package]\nname = \"iris-cli\"\n\n[dependencies]\niris-tools-core.workspace = true\n\
         clap = \"4\"\n\n[target.'cfg(unix)'.dependencies]\n\
         macros = { package = \"iris-tools-macros\", path = \"../iris-tools-macros\" }\n\n\
         [dev-dependencies]\niris-tools-macros.workspace = true\n",
    );
    f.write(
        "crates/iris-tools-macros/Cargo.toml",
        "[package]\nname = \"iris-tools-macros\"\nversion = \"0.1.0\"\n\n[dependencies]\n\
         syn = \"3\"\niris-tools-core = { path = \"../iris-tools-core\" }\n",
    );
    f.assert_violations(&[
        (
            "crates/iris-cli/Cargo.toml:9",
            "iris-cli may not depend on `iris-tools-macros` (allowed iris crates: \
             iris-tools-core; docs/architecture.md:20)",
        ),
        (
            "crates/iris-tools-macros/Cargo.toml:7",
            "iris-tools-macros may not depend on `iris-tools-core` (allowed iris crates: none",
        ),
    ]);
}

#[test]
fn the_table_has_a_row_for_every_crate_and_only_for_crates() {
    let f = Fixture::valid("deps-rows");
    f.edit(
        "docs/architecture.md",
        "| `iris-cli` | `iris-tools-core` | any |\n",
        "| `iris-gone` | — | any |\n",
    );
    f.assert_violations(&[
        (
            "docs/architecture.md:20",
            "names `iris-gone`, which is no crate",
        ),
        ("docs/architecture.md:14", "no row for crate `iris-cli`"),
    ]);
}

#[test]
fn a_malformed_or_missing_table_is_a_violation() {
    let f = Fixture::valid("deps-malformed");
    f.edit(
        "docs/architecture.md",
        "| `iris-tools-macros` | — | any |",
        "| `iris-tools-macros` | any |",
    );
    f.assert_violations(&[("docs/architecture.md:19", "a row has 3 cells, this one 2")]);
    f.edit(
        "docs/architecture.md",
        "| `iris-tools-macros` | any |",
        "| iris-tools-macros | — | any |",
    );
    f.assert_violations(&[("docs/architecture.md:19", "names one crate in backticks")]);
    f.edit(
        "docs/architecture.md",
        "## Allowed dependencies",
        "## Dependencies",
    );
    f.assert_violations(&[(
        "docs/architecture.md:1",
        "no \"Allowed dependencies\" heading",
    )]);
}

#[test]
fn the_real_table_keeps_core_on_its_allow_list() {
    let text = fs::read_to_string(crate::root().join(ARCHITECTURE)).unwrap();
    let rules = deps::parse(&text).unwrap();
    let core = rules.iter().find(|r| r.name == "iris-tools-core").unwrap();
    assert_eq!(core.iris, ["iris-tools-macros"]);
    assert_eq!(
        core.other.as_deref(),
        Some(
            &[
                "serde",
                "serde_json",
                "thiserror",
                "tracing",
                "schemars",
                "jsonschema",
                "tokio"
            ]
            .map(String::from)[..]
        )
    );
    let web = rules.iter().find(|r| r.name == "iris-web").unwrap();
    assert_eq!(
        (web.iris.as_slice(), web.other.is_none()),
        (&["iris-tools-core".to_string()][..], true)
    );
}

#[test]
fn a_renamed_package_is_checked_by_its_real_name() {
    let f = Fixture::valid("rename");
    f.edit(
        CORE_TOML,
        "serde.workspace = true",
        "serde = { package = \"serde-evil\", version = \"1\" }",
    );
    f.assert_violations(&[(&format!("{CORE_TOML}:9"), "`serde-evil`")]);
}

#[test]
fn tokio_in_core_enables_only_sync() {
    let f = Fixture::valid("tokio");
    f.edit(
        CORE_TOML,
        "tokio = { workspace = true, features = [\"sync\"] }",
        "tokio = { workspace = true, features = [\n    \"sync\",\n    \"rt\", # a runtime\n    \
         \"time\",\n] }",
    );
    f.assert_violations(&[
        (&format!("{CORE_TOML}:17"), "tokio feature `rt`"),
        (&format!("{CORE_TOML}:18"), "tokio feature `time`"),
    ]);
}

#[test]
fn tokio_features_count_in_every_spelling() {
    let f = Fixture::valid("tokio-spellings");
    // The `[dependencies.tokio]` table form, a `[features]` entry and the workspace entry
    // core inherits from.
    f.edit(
        CORE_TOML,
        "tokio = { workspace = true, features = [\"sync\"] }\n",
        "",
    );
    f.edit(
        CORE_TOML,
        "[dev-dependencies]",
        "[dependencies.tokio]\nworkspace = true\nfeatures = [\"sync\", \"macros\"]\n\n\
         [dev-dependencies]",
    );
    f.edit(
        CORE_TOML,
        "macros = [\"dep:iris-tools-macros\"]",
        "macros = [\"dep:iris-tools-macros\", \"tokio?/process\", \"tokio/sync\"]",
    );
    f.edit(
        "Cargo.toml",
        "tokio = { version = \"1\", default-features = false }",
        "tokio = { version = \"1\", default-features = false, features = [\"net\"] }",
    );
    f.assert_violations(&[
        (&format!("{CORE_TOML}:19"), "enables tokio feature `macros`"),
        (
            "Cargo.toml:7",
            "inherits from the workspace tokio feature `net`",
        ),
        (
            &format!("{CORE_TOML}:6"),
            "feature `macros` enables tokio feature `process`",
        ),
    ]);
}

// Check 2: no file system, processes or network in core.

#[test]
fn core_sources_never_touch_files_processes_or_the_network() {
    let f = Fixture::valid("fs");
    f.write(
        "crates/iris-tools-core/src/store.rs",
        "use std::fs;\n\
         use std::{io, process};\n\
         use std::{\n    collections::HashMap,\n    net,\n};\n\
         pub fn a() { let _ = fs::read(\"x\"); }\n\
         pub fn b() { let _ = File::open(\"x\"); }\n\
         pub fn c() { let _ = tokio::fs::read(\"x\"); }\n\
         // std::fs in a comment is fine, /// and //! too.\n\
         pub fn d() { my_fs::read(); self.fsync(); let processes = 1; }\n\
         pub fn e() { let _ = std::process::id(); }\n\
         pub fn f() { tokio::process::Command::new(\"x\"); }\n\
         pub fn g() { File::create_new(\"x\"); }\n\
         pub fn h() { let _: std::net::TcpStream; }\n\
         use tokio::{sync::Mutex, fs as tfs};\n",
    );
    let file = "crates/iris-tools-core/src/store.rs";
    let at = |line: usize| format!("{file}:{line}");
    f.assert_violations(&[
        (&at(1), "`std::fs`"),
        (&at(2), "`std::process`"),
        (&at(5), "`std::net`"),
        (&at(7), "`fs::`"),
        (&at(8), "`File::open`"),
        (&at(9), "`tokio::fs`"),
        (&at(12), "`std::process`"),
        (&at(13), "`tokio::process`"),
        (&at(14), "`File::create`"),
        (&at(15), "`std::net`"),
        (&at(16), "`tokio::fs`"),
    ]);
}

// Check 3: core's size budget.

#[test]
fn core_fits_its_budget_and_fails_one_line_over() {
    let f = Fixture::valid("size");
    let body = |n: usize| "const X: u8 = 0;\n\n// padding\n".repeat(n);
    f.write("crates/iris-tools-core/src/big.rs", &body(CORE_BUDGET - 8));
    let report = f.check();
    assert_eq!(report.violations, Vec::new());
    assert_eq!(report.core_lines, CORE_BUDGET);

    f.write("crates/iris-tools-core/src/big.rs", &body(CORE_BUDGET - 7));
    f.assert_violations(&[(
        "crates/iris-tools-core/src:1",
        "4001 non-test lines, 1 over its budget of 4000 (largest: big.rs 3993, registry.rs 6, \
         lib.rs 2)",
    )]);
}

#[test]
fn test_code_comments_and_blank_lines_do_not_count() {
    let text = "//! Doc.\n\n/// Item doc.\nfn a() {\n    // note\n    \n    #[cfg(test)]\n    \
                let x = 1;\n}\n#[cfg(test)]\nmod tests {\n    fn b() {}\n}\nfn after() {}\n";
    // `fn a() {`, the indented attribute (not a test module), `let`, `}`.
    assert_eq!(non_test_lines(text), 4);
    // An out-of-line test module drops only its declaration.
    let text = "#[cfg(test)]\n#[path = \"t.rs\"]\nmod tests;\nfn a() {}\n";
    assert_eq!(non_test_lines(text), 1);
}

#[test]
fn out_of_line_test_modules_do_not_count() {
    let f = Fixture::valid("size-out-of-line");
    let big = "const X: u8 = 0;\n".repeat(CORE_BUDGET);
    f.edit(
        "crates/iris-tools-core/src/lib.rs",
        "pub mod registry;",
        "#[cfg(test)]\nmod more_tests;\npub mod registry;",
    );
    f.write("crates/iris-tools-core/src/more_tests.rs", &big);
    f.write(
        "crates/iris-tools-core/src/registry.rs",
        "pub struct Registry;\n#[cfg(test)]\npub(crate) mod tests;\nfn f() {}\n",
    );
    f.write("crates/iris-tools-core/src/registry/tests.rs", &big);
    f.write("crates/iris-tools-core/src/registry/tests/deep.rs", &big);
    let report = f.check();
    assert_eq!(report.violations, Vec::new());
    // lib.rs: the doc line and `pub mod registry;`; registry.rs: two items.
    assert_eq!(report.core_lines, 4);
}

// Check 4: one architecture invariant per crate.

#[test]
fn every_crate_needs_an_invariant_bullet() {
    let f = Fixture::valid("architecture");
    f.edit(
        "docs/architecture.md",
        "- **iris-cli** is a thin shell.\n",
        "",
    );
    f.write(
        "crates/iris-new/Cargo.toml",
        "[package]\nversion = \"0.1.0\"\nname = \"iris-new\"\n",
    );
    f.write("crates/iris-new/src/main.rs", "fn main() {}\n");
    for file in LICENSE_FILES {
        f.write(&format!("crates/iris-new/{file}"), "licence text\n");
    }
    // A directory without a manifest is no crate.
    f.write("crates/notes/todo.md", "nothing\n");
    f.assert_violations(&[
        ("docs/architecture.md:13", "no row for crate `iris-new`"),
        ("docs/architecture.md:3", "`iris-cli` (crates/iris-cli)"),
        ("docs/architecture.md:3", "`iris-new` (crates/iris-new)"),
    ]);
}

#[test]
fn a_bullet_counts_only_inside_the_section_and_for_the_exact_name() {
    let f = Fixture::valid("architecture-section");
    f.edit(
        "docs/architecture.md",
        "- **iris-cli** is a thin shell.\n",
        "",
    );
    f.edit(
        "docs/architecture.md",
        "- **xtask** is no crate.",
        "- **iris-cli** is outside the section.",
    );
    f.edit(
        "docs/architecture.md",
        "- **iris-tools-core** owns",
        "- **iris-tools-core-extra** owns",
    );
    f.assert_violations(&[
        ("docs/architecture.md:3", "`iris-cli`"),
        ("docs/architecture.md:3", "`iris-tools-core`"),
    ]);
}

#[test]
fn the_invariants_section_must_exist() {
    let f = Fixture::valid("architecture-missing");
    f.edit(
        "docs/architecture.md",
        "## Architecture invariants (one line per crate)",
        "## Crates",
    );
    f.assert_violations(&[(
        "docs/architecture.md:1",
        "no \"Architecture invariants\" section",
    )]);
}

// Check 5: the exact iris-tools-macros pin.

#[test]
fn an_unpinned_workspace_macros_entry_fails() {
    let f = Fixture::valid("pin-workspace");
    f.edit("Cargo.toml", "version = \"=0.1.0\"", "version = \"0.1.0\"");
    f.assert_violations(&[(
        &format!("{CORE_TOML}:16"),
        "must be pinned exactly (version = \"=0.1.0\", as serde pins serde_derive), not \
         \"0.1.0\" (inherited from Cargo.toml:6)",
    )]);
}

#[test]
fn a_direct_macros_dependency_needs_an_exact_version() {
    let f = Fixture::valid("pin-direct");
    let direct = |version: &str| {
        format!(
            "iris-tools-macros = {{ {version}path = \"../iris-tools-macros\", optional = true }}\n"
        )
    };
    f.edit(CORE_TOML, MACROS_DEP, &direct("version = \"=0.1.0\", "));
    assert_eq!(f.violations(), Vec::<String>::new());

    f.edit(
        CORE_TOML,
        &direct("version = \"=0.1.0\", "),
        &direct("version = \"0.1\", "),
    );
    f.assert_violations(&[(&format!("{CORE_TOML}:16"), "not \"0.1\"")]);

    f.edit(CORE_TOML, &direct("version = \"0.1\", "), &direct(""));
    f.assert_violations(&[(&format!("{CORE_TOML}:16"), "has no version")]);
}

#[test]
fn core_must_depend_on_the_macros() {
    let f = Fixture::valid("pin-missing");
    f.edit(CORE_TOML, MACROS_DEP, "");
    f.assert_violations(&[(
        &format!("{CORE_TOML}:8"),
        "must depend on iris-tools-macros with an exact `=` version",
    )]);
}

// Check 6: every library crate's README is its doctest.

#[test]
fn a_library_crate_includes_its_readme() {
    let f = Fixture::valid("readme");
    f.write("crates/iris-tools-macros/src/lib.rs", "//! Macros.\n");
    f.remove("crates/iris-tools-core/README.md");
    f.assert_violations(&[
        (
            "crates/iris-tools-core/src/lib.rs:1",
            "crates/iris-tools-core/README.md does not exist",
        ),
        (
            "crates/iris-tools-macros/src/lib.rs:1",
            "lacks `#![doc = include_str!(\"../README.md\")]`",
        ),
    ]);
}

// Check 7: no skipped or panic-expecting tests.

#[test]
fn no_test_is_ignored_or_expects_a_panic() {
    let f = Fixture::valid("attrs");
    f.write(
        "crates/iris-tools-core/tests/slow.rs",
        &format!(
            "#[test]\n{IGNORE}]\nfn a() {{}}\n#[test]\n{IGNORE} = \"slow\"]\nfn b() {{}}\n\
             // {IGNORE}] in a comment is fine\n{IGNORE}_me]\nfn c() {{}}\n"
        ),
    );
    f.write(
        "tests/macros/src/lib.rs",
        &format!("#[test]\n{SHOULD_PANIC}(expected = \"boom\")]\nfn d() {{}}\n"),
    );
    f.write(
        "xtask/src/main.rs",
        &format!("#[test] {SHOULD_PANIC}]\nfn e() {{}}\n"),
    );
    // Build output is not source.
    f.write(
        "crates/iris-cli/target/debug/build/out.rs",
        &format!("{IGNORE}]\n"),
    );
    f.assert_violations(&[
        (
            "crates/iris-tools-core/tests/slow.rs:2",
            "a test must run and pass",
        ),
        (
            "crates/iris-tools-core/tests/slow.rs:5",
            "a test must run and pass",
        ),
        ("tests/macros/src/lib.rs:2", "should_panic"),
        ("xtask/src/main.rs:1", "should_panic"),
    ]);
}

// The manifest reader.

#[test]
fn manifests_are_read_in_every_spelling() {
    let m = manifest::Manifest::parse(
        "[dependencies]\n\
         a = \"1\" # a comment\n\
         b = { version = \"2\", features = [\"x\", \"y#z\"] }\n\
         c.workspace = true\n\
         c.features = [\n  \"p\", # first\n  \"q\",\n]\n\
         [dependencies.'d']\nversion = \"4\"\n",
    );
    let deps = m.dependencies(|t| t == "dependencies");
    let summary: Vec<String> = deps
        .iter()
        .map(|d| {
            let attrs: Vec<String> = d
                .attrs
                .iter()
                .map(|a| format!("{}={}@{}-{}", a.key, a.value, a.line, a.end_line))
                .collect();
            format!("{}@{}: {}", d.key, d.line, attrs.join("; "))
        })
        .collect();
    assert_eq!(
        summary,
        [
            "a@2: version=\"1\"@2-2",
            "b@3: version=\"2\"@3-3; features=[\"x\", \"y#z\"]@3-3",
            "c@4: workspace=true@4-4; features=[ \"p\", \"q\", ]@5-8",
            "d@9: version=\"4\"@10-10",
        ]
    );
    assert_eq!(manifest::strings("[ \"p\", 'q', ]"), ["p", "q"]);
}

// The real workspace.

#[test]
fn the_workspace_is_tidy() {
    let root = crate::root();
    let report = check(&root);
    let listed: Vec<String> = report
        .violations
        .iter()
        .map(|v| format!("  tidy: {v}"))
        .collect();
    assert!(
        report.violations.is_empty(),
        "`cargo xtask tidy` finds {} violation(s) in {} (core: {} non-test lines, budget \
         {CORE_BUDGET}):\n{}\n",
        report.violations.len(),
        root.display(),
        report.core_lines,
        listed.join("\n")
    );
}

#[test]
fn a_published_crate_carries_its_licence_texts() {
    let f = Fixture::valid("licence");
    f.remove("crates/iris-tools-macros/LICENSE-APACHE");
    f.assert_violations(&[(
        "crates/iris-tools-macros/Cargo.toml:1",
        "crates/iris-tools-macros/LICENSE-APACHE does not exist",
    )]);
    // An unpublished crate needs none.
    f.edit(
        "crates/iris-tools-macros/Cargo.toml",
        "version = \"0.1.0\"\n",
        "version = \"0.1.0\"\npublish = false # never released\n",
    );
    f.remove("crates/iris-tools-macros/LICENSE-MIT");
    f.assert_violations(&[]);
}
