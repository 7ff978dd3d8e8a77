//! Hostile repository content (issue 15): oversized or deeply nested `SKILL.md`, a FIFO
//! or device swapped in for a skill file or named as a subagent catalog, and catalog
//! errors that must not quote the file. Slow-if-broken cases run under a deadline that
//! bounds the test (the broken code hung on a FIFO or parsed nested YAML for minutes).

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use iris_skill::{SkillDiscoveryResult, SubagentCatalog};
use serde_json::json;

use crate::support::{Workspace, discover, load, registry};

/// Generous bound on work that must finish at once.
const DEADLINE: Duration = Duration::from_secs(10);

/// Runs `work` on its own thread; `None` when it did not finish within [`DEADLINE`].
fn within_deadline<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(work());
    });
    rx.recv_timeout(DEADLINE).ok()
}

fn discover_within_deadline(workspace: &Path) -> SkillDiscoveryResult {
    let workspace = workspace.to_path_buf();
    within_deadline(move || discover(&workspace)).expect("discovery finished within the deadline")
}

fn mkfifo(path: &Path) {
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        path,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .unwrap();
}

/// Grows a file to 64 MiB without writing it (a sparse file keeps the test fast).
fn grow(path: &Path) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
}

/// `(code, skill, message)` of every diagnostic.
fn diagnostics(result: &SkillDiscoveryResult) -> Vec<(String, Option<String>, String)> {
    result
        .diagnostics
        .iter()
        .map(|d| (d.code.to_string(), d.skill.clone(), d.message.clone()))
        .collect()
}

/// A 64 MiB `SKILL.md` cost 280 MB RSS on every command: now discovery refuses it from
/// its size (a diagnostic, the skill is left out), and `load_skill` refuses a file that
/// grew past the cap after discovery.
#[tokio::test]
async fn oversized_skill_file_is_refused_by_discovery_and_load_skill() {
    let ws = Workspace::new();
    grow(&ws.skill("huge", "A huge skill.", "body"));
    let grows = ws.skill("grows", "Grows later.", "body");
    let result = discover_within_deadline(ws.path());
    assert_eq!(
        result
            .skills
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>(),
        ["grows"]
    );
    assert_eq!(
        diagnostics(&result),
        [(
            "SKILL_TOO_LARGE".to_owned(),
            Some("huge".to_owned()),
            "SKILL.md is larger than the 1 MiB limit; the skill is skipped".to_owned()
        )]
    );

    let tool = iris_skill::LoadSkillTool::new(registry(ws.path()));
    grow(&grows);
    let out = within_deadline(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let root = tool.registry().workspace_root().to_path_buf();
        rt.block_on(load(&tool, &root, json!({"name": "grows"})))
    })
    .expect("load_skill finished within the deadline");
    assert_eq!(out.error_code(), Some("SKILL_TOO_LARGE"));
    let message = &out.error_info().unwrap().message;
    assert!(
        message.starts_with("skill `grows`: `SKILL.md` at `")
            && message.ends_with("SKILL.md` is larger than the 1 MiB limit"),
        "{message}"
    );
}

/// A FIFO swapped in for `SKILL.md` after discovery blocked `load_skill` in `open`
/// forever; now it is refused at once.
#[tokio::test]
async fn skill_file_swapped_for_a_fifo_is_refused_at_once() {
    let ws = Workspace::new();
    let file = ws.skill("pipe", "Becomes a pipe.", "body");
    let tool = iris_skill::LoadSkillTool::new(registry(ws.path()));
    std::fs::remove_file(&file).unwrap();
    mkfifo(&file);
    let out = within_deadline(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let root = tool.registry().workspace_root().to_path_buf();
        rt.block_on(load(&tool, &root, json!({"name": "pipe"})))
    })
    .expect("load_skill finished within the deadline");
    assert_eq!(out.error_code(), Some("SKILL_UNAVAILABLE"));
    let message = &out.error_info().unwrap().message;
    assert!(
        message.ends_with("SKILL.md` is a FIFO, not a regular file"),
        "{message}"
    );
}

/// 200 KB of nested `[` in a frontmatter took 42 s (release) to fail; the nesting
/// pre-scan refuses it at once as an invalid frontmatter.
#[test]
fn deeply_nested_frontmatter_is_refused_quickly() {
    let ws = Workspace::new();
    ws.file(
        ".agents/skills/nested/SKILL.md",
        &format!(
            "---\ndescription: Nested.\nmetadata: {}\n---\nbody\n",
            "[".repeat(200_000)
        ),
    );
    let result = discover_within_deadline(ws.path());
    assert!(result.skills.is_empty());
    assert_eq!(
        diagnostics(&result),
        [(
            "SKILL_FRONTMATTER_INVALID".to_owned(),
            Some("nested".to_owned()),
            "the frontmatter is not valid YAML: flow collections (`[`, `{`) nest deeper than \
             64 levels at line 2 column 75"
                .to_owned()
        )]
    );
}

/// A subagent catalog that is a FIFO or `/dev/zero` hung or ate memory; oversized or
/// deeply nested ones are refused by size and nesting, all at once.
#[test]
fn subagent_catalogs_that_are_not_small_regular_files_are_refused() {
    let ws = Workspace::new();
    let fifo = ws.path().join("pipe.yaml");
    mkfifo(&fifo);
    let big = ws.file("big.yaml", "default: a\n");
    grow(&big);
    let nested = ws.file(
        "nested.yaml",
        &format!("default: {}\n", "{".repeat(200_000)),
    );
    let cases: [(PathBuf, &str); 4] = [
        (
            fifo,
            "SUBAGENT_CATALOG_UNREADABLE: subagent catalog `{}` is a FIFO, not a regular file",
        ),
        (
            PathBuf::from("/dev/zero"),
            "SUBAGENT_CATALOG_UNREADABLE: subagent catalog `{}` is a character device, not a \
             regular file",
        ),
        (
            big,
            "SUBAGENT_CATALOG_TOO_LARGE: subagent catalog `{}` is larger than the 1 MiB limit",
        ),
        (
            nested,
            "SUBAGENT_CATALOG_INVALID: subagent catalog `{}`: `<file>` flow collections (`[`, \
             `{`) nest deeper than 64 levels at line 1 column 74",
        ),
    ];
    for (path, want) in cases {
        let shown = path.display().to_string();
        let got = within_deadline(move || {
            let err = SubagentCatalog::load(&path).unwrap_err();
            format!("{}: {err}", err.code())
        })
        .expect("loading finished within the deadline");
        assert_eq!(got, want.replace("{}", &shown));
    }
}

/// Catalog errors name the file, the field and the expected shape, never the file's
/// text: a secret-looking line or value is left out.
#[test]
fn subagent_catalog_errors_never_quote_content() {
    const SECRET: &str = "sk-live-Q7XJ2ZK9SECRET";
    let agent = "agents:\n  helper:\n    path: helper.yaml\n    description: Helps.\n";
    let cases = [
        (
            format!("api_key = {SECRET}\n"),
            "<file>",
            "must be a mapping with `default` and `agents`, found a string",
        ),
        (
            format!("default: {SECRET}\n{agent}"),
            "default",
            "matches no agent; selectors are `helper`",
        ),
        (
            format!("default: helper\n{agent}token: \"{SECRET}\n"),
            "<file>",
            "is not valid YAML: found unexpected end of stream at line 7 column 1, while \
             scanning a quoted scalar at line 6 column 8",
        ),
        (
            format!("default: helper\n{agent}{SECRET}: 1\n{SECRET}: 2\n"),
            "<file>",
            "is not valid YAML: duplicate key at line 1 column 1",
        ),
    ];
    for (yaml, field, reason) in cases {
        let err = SubagentCatalog::parse(&yaml, "/cfg/subagents.yaml").unwrap_err();
        let shown = format!("{err} {err:?}");
        assert!(!shown.contains("SECRET"), "{shown}");
        assert_eq!(
            err.to_string(),
            format!("subagent catalog `/cfg/subagents.yaml`: `{field}` {reason}")
        );
    }
}
