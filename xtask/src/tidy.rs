//! `cargo xtask tidy`: fast, text-only checks of the workspace's structural rules, in the
//! spirit of rust-analyzer's `xtask tidy`. Each check reads files line by line (no TOML or
//! Rust parser, so xtask keeps depending on the standard library only):
//!
//! 1. Every crate's `[dependencies]` stay within its row of the "Allowed dependencies"
//!    table in `docs/architecture.md` (read from the document, see [`deps`]), and tokio
//!    only enables `sync` in `iris-tools-core` (directly, through the workspace table, or
//!    through `[features]`).
//! 2. Core's sources never touch the file system, processes or the network.
//! 3. Core's non-test code stays within a line budget.
//! 4. Every crate under `crates/` has its invariant in `docs/architecture.md`.
//! 5. Core pins `iris-tools-macros` with an exact `=` version.
//! 6. Every library crate's README is its crate documentation, hence a doctest.
//! 7. No test is switched off with an `ignore` or `should_panic` attribute.
//! 8. Every publishable crate under `crates/` holds the licence texts its `license`
//!    names (`LICENSE-MIT`, `LICENSE-APACHE`, links to the root's), so its package does.
//!
//! The attribute strings checked by 7 are built with `concat!` so this file does not
//! contain them and the check does not flag itself.

mod deps;
mod manifest;
#[cfg(test)]
mod tests;

use std::fmt;
use std::fs;
use std::io;
use std::path::Path;

use manifest::{Dep, Manifest, strings, unquote};

/// The crate whose size, dependencies and sources are policed.
const CORE: &str = "crates/iris-tools-core";
/// The most non-test lines core's `src` may have.
pub(crate) const CORE_BUDGET: usize = 4000;
/// The only tokio features core may enable.
const CORE_TOKIO_FEATURES: [&str; 1] = ["sync"];
/// The attribute macro crate core must pin exactly.
const MACROS: &str = "iris-tools-macros";
/// The document holding one invariant per crate.
const ARCHITECTURE: &str = "docs/architecture.md";
/// The heading of its invariants section.
const INVARIANTS: &str = "Architecture invariants";
/// The licence texts of `license = "MIT OR Apache-2.0"`, at the root and in every
/// published crate.
const LICENSE_FILES: [&str; 2] = ["LICENSE-MIT", "LICENSE-APACHE"];

/// The line that makes a crate's README its crate documentation.
const README_DOC: &str = "#![doc = include_str!(\"../README.md\")]";
/// Attributes that switch a test off or make it pass by panicking (built so this file
/// does not contain them).
const FORBIDDEN_TEST_ATTRS: [&str; 2] = [concat!("#[", "ignore"), concat!("#[", "should_panic")];
/// The directories whose Rust files check 7 reads.
const TEST_ATTR_DIRS: [&str; 3] = ["crates", "tests", "xtask"];

/// One broken rule, at a file (relative to the workspace root, `/`-separated) and line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Violation {
    /// The file, relative to the root.
    pub(crate) file: String,
    /// The 1-based line.
    pub(crate) line: usize,
    /// What is wrong and what the rule is.
    pub(crate) message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.message)
    }
}

/// The outcome of all checks.
#[derive(Debug)]
pub(crate) struct Report {
    /// Every violation, grouped by check.
    pub(crate) violations: Vec<Violation>,
    /// Core's non-test line count (check 3).
    pub(crate) core_lines: usize,
}

/// Runs every check on the workspace at `root`, printing each violation as
/// `tidy: <file>:<line>: <message>`, and fails when there is any.
pub(crate) fn run(root: &Path) -> Result<(), String> {
    let report = check(root);
    for v in &report.violations {
        println!("tidy: {v}");
    }
    if report.violations.is_empty() {
        println!("tidy: ok (core: {} non-test lines)", report.core_lines);
        Ok(())
    } else {
        Err(format!(
            "tidy found {} violation(s) (core: {} non-test lines, budget {CORE_BUDGET})",
            report.violations.len(),
            report.core_lines
        ))
    }
}

/// Runs every check on the workspace at `root`.
pub(crate) fn check(root: &Path) -> Report {
    let mut tidy = Tidy {
        root,
        violations: Vec::new(),
    };
    let workspace = tidy.read("Cargo.toml").map(|t| Manifest::parse(&t));
    let core_file = format!("{CORE}/Cargo.toml");
    let core = tidy.read(&core_file).map(|t| Manifest::parse(&t));
    let crates = tidy.crates();
    tidy.dependencies(&crates);
    if let Some(core) = &core {
        tidy.core_tokio(&core_file, core, workspace.as_ref());
    }
    tidy.core_sources();
    let core_lines = tidy.core_size();
    tidy.architecture(&crates);
    if let Some(core) = &core {
        tidy.macro_pin(&core_file, core, workspace.as_ref());
    }
    tidy.readme_doctests(&crates);
    tidy.test_attributes();
    tidy.license_files(&crates);
    Report {
        violations: tidy.violations,
        core_lines,
    }
}

/// Whether `table` declares normal (not dev or build) dependencies.
fn is_dependency_table(table: &str) -> bool {
    table == "dependencies" || (table.starts_with("target.") && table.ends_with(".dependencies"))
}

/// Whether the trimmed line is a comment (`//`, `///`, `//!`).
fn is_comment(line: &str) -> bool {
    line.trim_start().starts_with("//")
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Whether `line` contains `pattern` not preceded by an identifier character and, when
/// `whole`, not followed by one either.
fn contains_path(line: &str, pattern: &str, whole: bool) -> bool {
    line.match_indices(pattern).any(|(i, _)| {
        let before = line[..i].chars().next_back();
        let after = line[i + pattern.len()..].chars().next();
        !(before.is_some_and(is_ident) || (whole && after.is_some_and(is_ident)))
    })
}

/// The checks' state: the root and what they found so far.
struct Tidy<'a> {
    root: &'a Path,
    violations: Vec<Violation>,
}

impl Tidy<'_> {
    fn report(&mut self, file: &str, line: usize, message: impl Into<String>) {
        self.violations.push(Violation {
            file: file.to_string(),
            line,
            message: message.into(),
        });
    }

    /// The text of `rel`, or a violation saying why it cannot be read.
    fn read(&mut self, rel: &str) -> Option<String> {
        match fs::read_to_string(self.root.join(rel)) {
            Ok(text) => Some(text),
            Err(e) => {
                self.report(rel, 1, format!("cannot read: {e}"));
                None
            }
        }
    }

    /// The `.rs` files under `rel` (recursively, sorted, skipping `target` and hidden
    /// directories); none when it does not exist.
    fn rs_files(&mut self, rel: &str) -> Vec<String> {
        let mut files = Vec::new();
        self.walk(rel, &mut files);
        files
    }

    fn walk(&mut self, rel: &str, files: &mut Vec<String>) {
        let mut entries = match self.entries(rel) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return,
            Err(e) => {
                self.report(rel, 1, format!("cannot list: {e}"));
                return;
            }
        };
        entries.sort();
        for (name, is_dir) in entries {
            let path = format!("{rel}/{name}");
            if is_dir {
                if name != "target" && !name.starts_with('.') {
                    self.walk(&path, files);
                }
            } else if name.ends_with(".rs") {
                files.push(path);
            }
        }
    }

    /// The names of the entries of directory `rel`, each with whether it is a directory.
    fn entries(&self, rel: &str) -> io::Result<Vec<(String, bool)>> {
        let mut out = Vec::new();
        for entry in fs::read_dir(self.root.join(rel))? {
            let entry = entry?;
            let is_dir = entry.file_type()?.is_dir();
            out.push((entry.file_name().to_string_lossy().into_owned(), is_dir));
        }
        Ok(out)
    }

    /// The crates under `crates/`: directory and package name, sorted by directory.
    /// Directories without a `Cargo.toml` are not crates.
    fn crates(&mut self) -> Vec<(String, String)> {
        let mut dirs = match self.entries("crates") {
            Ok(entries) => entries,
            Err(e) => {
                self.report("crates", 1, format!("cannot list: {e}"));
                return Vec::new();
            }
        };
        dirs.sort();
        let mut crates = Vec::new();
        for (name, is_dir) in dirs {
            let dir = format!("crates/{name}");
            if !is_dir || !self.root.join(&dir).join("Cargo.toml").is_file() {
                continue;
            }
            let file = format!("{dir}/Cargo.toml");
            let Some(text) = self.read(&file) else {
                continue;
            };
            match Manifest::parse(&text).string("package", "name") {
                Some((package, _)) => crates.push((dir, package)),
                None => self.report(&file, 1, "no `name = \"…\"` in `[package]`"),
            }
        }
        crates
    }

    /// Check 1: each crate's normal dependencies are within its row of the "Allowed
    /// dependencies" table: an iris crate (one under `crates/`) must be in the row's
    /// second column, any other crate in its third unless that says `any`. A crate
    /// without a row, and a row naming no crate, are violations too.
    fn dependencies(&mut self, crates: &[(String, String)]) {
        let Some(text) = self.read(ARCHITECTURE) else {
            return;
        };
        let rules = match deps::parse(&text) {
            Ok(rules) => rules,
            Err((line, message)) => {
                self.report(ARCHITECTURE, line, message);
                return;
            }
        };
        for rule in &rules {
            if !crates.iter().any(|(_, name)| *name == rule.name) {
                self.report(
                    ARCHITECTURE,
                    rule.line,
                    format!(
                        "the dependency table names `{}`, which is no crate under crates/",
                        rule.name
                    ),
                );
            }
        }
        for (dir, name) in crates {
            let Some(rule) = rules.iter().find(|r| r.name == *name) else {
                let line = text
                    .lines()
                    .position(|l| l.starts_with('#') && l.contains(deps::HEADING))
                    .map_or(1, |i| i + 1);
                self.report(
                    ARCHITECTURE,
                    line,
                    format!(
                        "no row for crate `{name}` ({dir}) in the \"{}\" table",
                        deps::HEADING
                    ),
                );
                continue;
            };
            let file = format!("{dir}/Cargo.toml");
            let Some(manifest) = self.read(&file).map(|t| Manifest::parse(&t)) else {
                continue;
            };
            for dep in manifest.dependencies(is_dependency_table) {
                let package = dep.package();
                let (allowed, kind) = if crates.iter().any(|(_, n)| *n == package) {
                    (Some(&rule.iris), "iris crates")
                } else {
                    (rule.other.as_ref(), "other crates")
                };
                let Some(allowed) = allowed else { continue };
                if !allowed.contains(&package) {
                    let list = if allowed.is_empty() {
                        "none".to_string()
                    } else {
                        allowed.join(", ")
                    };
                    self.report(
                        &file,
                        dep.line,
                        format!(
                            "{name} may not depend on `{package}` (allowed {kind}: {list}; \
                             {ARCHITECTURE}:{})",
                            rule.line
                        ),
                    );
                }
            }
        }
    }

    /// Check 1, core's tokio: it enables only `sync` — in core's manifest, in the
    /// workspace entry it inherits, and in `[features]`.
    fn core_tokio(&mut self, file: &str, core: &Manifest, workspace: Option<&Manifest>) {
        let deps = core.dependencies(is_dependency_table);
        let mut tokio_keys = Vec::new();
        for dep in deps.iter().filter(|d| d.package() == "tokio") {
            tokio_keys.push(dep.key.clone());
            self.tokio_features(file, core, dep, "iris-tools-core enables");
            if dep.inherits_workspace()
                && let Some(ws) = workspace
                && let Some(ws_dep) = ws
                    .dependencies(|t| t == "workspace.dependencies")
                    .into_iter()
                    .find(|d| d.key == dep.key)
            {
                self.tokio_features(
                    "Cargo.toml",
                    ws,
                    &ws_dep,
                    "iris-tools-core inherits from the workspace",
                );
            }
        }
        for kv in core.table("features") {
            for feature in strings(&kv.value) {
                let Some((dep, enabled)) = feature.split_once('/') else {
                    continue;
                };
                let dep = dep.trim_end_matches('?');
                if tokio_keys.iter().any(|k| k == dep) && !CORE_TOKIO_FEATURES.contains(&enabled) {
                    let line = core.locate(kv.line, kv.end_line, &format!("\"{feature}\""));
                    self.report(
                        file,
                        line,
                        format!(
                            "feature `{}` enables tokio feature `{enabled}` in iris-tools-core \
                             (only `sync` is allowed)",
                            kv.key.join(".")
                        ),
                    );
                }
            }
        }
    }

    /// Reports each tokio feature of `dep` (declared in `manifest`) other than `sync`.
    fn tokio_features(&mut self, file: &str, manifest: &Manifest, dep: &Dep, how: &str) {
        let Some(features) = dep.attr("features") else {
            return;
        };
        for feature in strings(&features.value) {
            if CORE_TOKIO_FEATURES.contains(&feature.as_str()) {
                continue;
            }
            let line = manifest.locate(features.line, features.end_line, &format!("\"{feature}\""));
            self.report(
                file,
                line,
                format!("{how} tokio feature `{feature}` (only `sync` is allowed in core)"),
            );
        }
    }

    /// Check 2: no file system, process or network access in core's sources (comment lines
    /// aside). Besides paths like `std::fs` or `fs::read`, a `use std::{…}` group naming
    /// `fs`, `process` or `net` counts.
    fn core_sources(&mut self) {
        const PATHS: [(&str, bool); 8] = [
            ("std::fs", true),
            ("tokio::fs", true),
            ("std::process", true),
            ("tokio::process", true),
            ("std::net", true),
            ("File::open", false),
            ("File::create", false),
            ("fs::", false),
        ];
        for file in self.rs_files(&format!("{CORE}/src")) {
            let Some(text) = self.read(&file) else {
                continue;
            };
            // Inside a `use std::{…}` or `use tokio::{…}` group: its crate and brace depth.
            let mut group: Option<(&str, i32)> = None;
            for (i, line) in text.lines().enumerate() {
                if is_comment(line) {
                    continue;
                }
                let mut found = PATHS
                    .iter()
                    .find(|(p, whole)| contains_path(line, p, *whole))
                    .map(|(p, _)| (*p).to_string());
                let mut rest = line;
                if group.is_none() {
                    for krate in ["std", "tokio"] {
                        let open = format!("{krate}::{{");
                        if let Some(at) = line.find(&open)
                            && contains_path(line, &open, false)
                        {
                            group = Some((krate, 0));
                            rest = &line[at + open.len() - 1..];
                            break;
                        }
                    }
                }
                if let Some((krate, depth)) = &mut group {
                    let modules: &[&str] = if *krate == "std" {
                        &["fs", "process", "net"]
                    } else {
                        &["fs", "process"]
                    };
                    if found.is_none()
                        && let Some(m) = modules.iter().find(|m| group_names(rest, m))
                    {
                        found = Some(format!("{krate}::{m}"));
                    }
                    *depth += rest.matches('{').count() as i32 - rest.matches('}').count() as i32;
                    if *depth <= 0 {
                        group = None;
                    }
                }
                if let Some(what) = found {
                    self.report(
                        &file,
                        i + 1,
                        format!(
                            "`{what}` in iris-tools-core: core never touches the file system, \
                             processes or the network (that belongs to a layer crate)"
                        ),
                    );
                }
            }
        }
    }

    /// Check 3: core's non-test code stays within [`CORE_BUDGET`] lines; returns the count.
    ///
    /// Counts the lines of every `.rs` file under `src` except blank lines, comment lines
    /// and everything from an unindented `#[cfg(test)]` line to the end of its file (test
    /// modules sit at the end by convention). An out-of-line `#[cfg(test)] mod name;` only
    /// drops those two lines, and the module's own file (and directory) is test code.
    fn core_size(&mut self) -> usize {
        let src = format!("{CORE}/src");
        let mut texts = Vec::new();
        for file in self.rs_files(&src) {
            if let Some(text) = self.read(&file) {
                texts.push((file, text));
            }
        }
        let mut test_modules = Vec::new();
        for (file, text) in &texts {
            test_modules.extend(out_of_line_test_modules(file, text));
        }
        let mut counts: Vec<(String, usize)> = texts
            .iter()
            .filter(|(file, _)| {
                !test_modules
                    .iter()
                    .any(|m| file == &format!("{m}.rs") || file.starts_with(&format!("{m}/")))
            })
            .map(|(file, text)| (file.clone(), non_test_lines(text)))
            .collect();
        let total = counts.iter().map(|(_, n)| n).sum();
        if total > CORE_BUDGET {
            counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            let largest: Vec<String> = counts
                .iter()
                .take(5)
                .map(|(f, n)| format!("{} {n}", f.strip_prefix(&format!("{src}/")).unwrap_or(f)))
                .collect();
            self.report(
                &src,
                1,
                format!(
                    "iris-tools-core has {total} non-test lines, {} over its budget of \
                     {CORE_BUDGET} (largest: {})",
                    total - CORE_BUDGET,
                    largest.join(", ")
                ),
            );
        }
        total
    }

    /// Check 4: every crate under `crates/` has a `- **<name>**` bullet in the
    /// "Architecture invariants" section of `docs/architecture.md`.
    fn architecture(&mut self, crates: &[(String, String)]) {
        let Some(text) = self.read(ARCHITECTURE) else {
            return;
        };
        let lines: Vec<&str> = text.lines().collect();
        let heading = |l: &str| {
            let level = l.chars().take_while(|&c| c == '#').count();
            (level > 0 && l[level..].starts_with(' ')).then_some(level)
        };
        let Some((start, level)) = lines.iter().enumerate().find_map(|(i, l)| {
            heading(l)
                .filter(|_| l.contains(INVARIANTS))
                .map(|level| (i, level))
        }) else {
            self.report(
                ARCHITECTURE,
                1,
                format!("no \"{INVARIANTS}\" section (a heading containing it)"),
            );
            return;
        };
        let section: Vec<&str> = lines[start + 1..]
            .iter()
            .copied()
            .take_while(|l| heading(l).is_none_or(|l| l > level))
            .collect();
        for (dir, name) in crates {
            let bullet = format!("- **{name}**");
            if !section.iter().any(|l| l.starts_with(&bullet)) {
                self.report(
                    ARCHITECTURE,
                    start + 1,
                    format!(
                        "no invariant for crate `{name}` ({dir}): add a line starting with \
                         `{bullet}` to the \"{INVARIANTS}\" section"
                    ),
                );
            }
        }
    }

    /// Check 5: core depends on `iris-tools-macros` with an exact `=` version, directly or
    /// through the workspace's `[workspace.dependencies]` entry.
    fn macro_pin(&mut self, file: &str, core: &Manifest, workspace: Option<&Manifest>) {
        let deps = core.dependencies(|t| t == "dependencies");
        let Some(dep) = deps.iter().find(|d| d.package() == MACROS) else {
            let line = core.table_line("dependencies").unwrap_or(1);
            self.report(
                file,
                line,
                format!("iris-tools-core must depend on {MACROS} with an exact `=` version"),
            );
            return;
        };
        let (version, source) = if dep.inherits_workspace() {
            let ws_dep = workspace.and_then(|ws| {
                ws.dependencies(|t| t == "workspace.dependencies")
                    .into_iter()
                    .find(|d| d.key == dep.key)
            });
            let Some(ws_dep) = ws_dep else {
                self.report(
                    file,
                    dep.line,
                    format!(
                        "{MACROS} is inherited from the workspace, but Cargo.toml's \
                         `[workspace.dependencies]` has no `{}` entry",
                        dep.key
                    ),
                );
                return;
            };
            let source = format!(" (inherited from Cargo.toml:{})", ws_dep.line);
            (ws_dep.attr("version").map(|a| a.value.clone()), source)
        } else {
            (dep.attr("version").map(|a| a.value.clone()), String::new())
        };
        match version {
            Some(v) if unquote(&v).starts_with('=') => {}
            Some(v) => self.report(
                file,
                dep.line,
                format!(
                    "{MACROS} must be pinned exactly (version = \"={}\", as serde pins \
                     serde_derive), not {v}{source}",
                    unquote(&v)
                ),
            ),
            None => self.report(
                file,
                dep.line,
                format!("{MACROS} has no version{source}; pin it exactly (version = \"=…\")"),
            ),
        }
    }

    /// Check 6: every crate under `crates/` with a `src/lib.rs` has a README.md and
    /// includes it as its crate documentation, so the README is a doctest.
    fn readme_doctests(&mut self, crates: &[(String, String)]) {
        for (dir, _) in crates {
            let lib = format!("{dir}/src/lib.rs");
            if !self.root.join(&lib).is_file() {
                continue;
            }
            let Some(text) = self.read(&lib) else {
                continue;
            };
            let include = text
                .lines()
                .position(|l| l.trim() == README_DOC)
                .map(|i| i + 1);
            if include.is_none() {
                self.report(
                    &lib,
                    1,
                    format!("lacks `{README_DOC}`: the crate's README must be its doctest"),
                );
            }
            if !self.root.join(dir).join("README.md").is_file() {
                self.report(
                    &lib,
                    include.unwrap_or(1),
                    format!("{dir}/README.md does not exist: every crate documents itself there"),
                );
            }
        }
    }

    /// Check 8: every crate under `crates/` that is published (no `publish = false`)
    /// has [`LICENSE_FILES`] in its folder: `cargo package` takes only the crate's own
    /// folder, and a package must carry the licence texts its `license` names.
    fn license_files(&mut self, crates: &[(String, String)]) {
        for (dir, _) in crates {
            let manifest = format!("{dir}/Cargo.toml");
            let Some(text) = self.read(&manifest) else {
                continue;
            };
            let unpublished = text
                .lines()
                .any(|l| l.split('#').next().unwrap_or("").replace(' ', "") == "publish=false");
            if unpublished {
                continue;
            }
            for file in LICENSE_FILES {
                if !self.root.join(dir).join(file).is_file() {
                    self.report(
                        &manifest,
                        1,
                        format!(
                            "{dir}/{file} does not exist: a published crate carries its licence \
                             texts (link it to the root's: ln -s ../../{file} {dir}/)"
                        ),
                    );
                }
            }
        }
    }

    /// Check 7: no test under `crates/`, `tests/` or `xtask/` is switched off or made to
    /// expect a panic by an attribute (comment lines aside).
    fn test_attributes(&mut self) {
        for dir in TEST_ATTR_DIRS {
            for file in self.rs_files(dir) {
                let Some(text) = self.read(&file) else {
                    continue;
                };
                for (i, line) in text.lines().enumerate() {
                    if is_comment(line) {
                        continue;
                    }
                    for attr in FORBIDDEN_TEST_ATTRS {
                        let used = line.match_indices(attr).any(|(at, _)| {
                            line[at + attr.len()..]
                                .chars()
                                .next()
                                .is_some_and(|c| !is_ident(c))
                        });
                        if used {
                            self.report(
                                &file,
                                i + 1,
                                format!(
                                    "`{attr}]`: a test must run and pass, not be skipped or \
                                     expect a panic (return a Result or assert on the error)"
                                ),
                            );
                        }
                    }
                }
            }
        }
    }
}

/// Whether the text of a `use …::{…}` group names `module` directly (not as `a::module`).
fn group_names(text: &str, module: &str) -> bool {
    text.match_indices(module).any(|(i, _)| {
        let before = &text[..i];
        let after = text[i + module.len()..].chars().next();
        let prev = before.chars().next_back();
        !prev.is_some_and(is_ident) && !before.ends_with("::") && !after.is_some_and(is_ident)
    })
}

/// The module paths (file path without `.rs`) of the out-of-line test modules `file`
/// declares with `#[cfg(test)]` followed by `mod name;`.
fn out_of_line_test_modules(file: &str, text: &str) -> Vec<String> {
    let dir = match file.rsplit_once('/') {
        Some((parent, "lib.rs" | "main.rs" | "mod.rs")) => parent.to_string(),
        _ => file.trim_end_matches(".rs").to_string(),
    };
    let lines: Vec<&str> = text.lines().collect();
    let mut modules = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.trim_end() == "#[cfg(test)]"
            && let Some(name) = out_of_line_module(&lines[i + 1..])
        {
            modules.push(format!("{dir}/{name}"));
        }
    }
    modules
}

/// The name `x` when the first item in `lines` (after attributes, comments and blank
/// lines) is `mod x;`.
fn out_of_line_module(lines: &[&str]) -> Option<String> {
    let item = lines
        .iter()
        .map(|l| l.trim())
        .find(|l| !l.is_empty() && !l.starts_with("//") && !l.starts_with("#["))?;
    let item = item
        .strip_prefix("pub(crate) ")
        .or_else(|| item.strip_prefix("pub "))
        .unwrap_or(item);
    let name = item.strip_prefix("mod ")?.strip_suffix(';')?.trim();
    (!name.is_empty() && name.chars().all(is_ident)).then(|| name.to_string())
}

/// The lines of `text` that count towards the budget: not blank, not a comment, and before
/// an unindented `#[cfg(test)]` (unless that one only declares an out-of-line module).
pub(crate) fn non_test_lines(text: &str) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    let mut count = 0;
    let mut skip_to = 0;
    for (i, line) in lines.iter().enumerate() {
        if i < skip_to {
            continue;
        }
        if line.trim_end() == "#[cfg(test)]" {
            if out_of_line_module(&lines[i + 1..]).is_none() {
                break;
            }
            // Skip the attribute and the `mod name;` it applies to.
            skip_to = lines[i + 1..]
                .iter()
                .position(|l| l.trim().ends_with(';') && l.contains("mod "))
                .map_or(i + 1, |p| i + 2 + p);
            continue;
        }
        let trimmed = line.trim();
        if !trimmed.is_empty() && !trimmed.starts_with("//") {
            count += 1;
        }
    }
    count
}
