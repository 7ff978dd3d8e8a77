//! The benchmark fixture: the tree, a runtime, the tools, and equivalence checks
//! against `rg` and `fdfind` (same answers, or the comparison is meaningless).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, LazyLock};

use iris_files::builtin_tools;
use iris_tools_core::{Tool, ToolExecutionContext, ToolOutput};
use serde_json::{Value, json};

use super::tree::{NEEDLE, generate};

/// A regex with a few hits per file on average, to compare regex (not literal) search.
pub(crate) const REGEX: &str = r"zulu (alpha|bravo) [a-c]\w+ return";

pub(crate) struct Fixture {
    pub(crate) root: PathBuf,
    _temp: Option<tempfile::TempDir>,
    rt: tokio::runtime::Runtime,
    ctx: ToolExecutionContext,
    pub(crate) grep: Arc<dyn Tool>,
    pub(crate) list: Arc<dyn Tool>,
}

impl Fixture {
    /// One call as the executor makes it (without the schema check): parse, then run.
    pub(crate) fn run(&self, tool: &Arc<dyn Tool>, input: Value) -> ToolOutput {
        let input = tool.validate_input(input).unwrap();
        let result = self.rt.block_on(tool.run(input, &self.ctx));
        assert!(!result.is_error(), "{}", result.model_content());
        result
    }
}

fn command_lines(program: &str, args: &[&str], root: &Path) -> u64 {
    let out = Command::new(program)
        .args(args)
        .current_dir(root)
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run `{program}` ({e}); apt-get install -y ripgrep fd-find")
        });
    String::from_utf8_lossy(&out.stdout).lines().count() as u64
}

pub(crate) const RG_ARGS: [&str; 4] = ["-n", "--hidden", "--no-ignore-global", "--no-config"];
pub(crate) const FD_ARGS: [&str; 4] = ["--type", "f", "--hidden", "--no-global-ignore-file"];

pub(crate) static FIXTURE: LazyLock<Fixture> = LazyLock::new(|| {
    let (root, temp) = match std::env::var_os("IRIS_BENCH_TREE") {
        Some(dir) => (PathBuf::from(dir), None),
        None => {
            let temp = tempfile::tempdir().unwrap();
            let root = temp.path().join("tree");
            generate(&root, 2_000, 4_096).unwrap();
            (root, Some(temp))
        }
    };
    let root = root.canonicalize().unwrap();
    let tools = builtin_tools();
    let pick = |name: &str| {
        tools
            .iter()
            .find(|t| t.definition().name == name)
            .cloned()
            .unwrap()
    };
    let fixture = Fixture {
        ctx: ToolExecutionContext::new(&root).session_id("bench"),
        rt: tokio::runtime::Builder::new_multi_thread().build().unwrap(),
        grep: pick("grep_search"),
        list: pick("list_files"),
        root,
        _temp: temp,
    };
    // Same answers, or the comparison is meaningless. This also warms the page cache.
    for pattern in [NEEDLE, REGEX] {
        let ours = fixture.run(&fixture.grep, json!({"pattern": pattern, "max_results": 0}));
        let mut args = RG_ARGS.to_vec();
        args.extend([pattern, "."]);
        let rg = command_lines("rg", &args, &fixture.root);
        assert_eq!(
            ours.data["total_matches"],
            json!(rg),
            "grep_search vs rg for {pattern}"
        );
    }
    let ours = fixture.run(&fixture.list, json!({"max_results": 0}));
    let mut args = FD_ARGS.to_vec();
    args.extend([".", "."]);
    let fd = command_lines("fdfind", &args, &fixture.root);
    assert_eq!(ours.data["total"], json!(fd), "list_files vs fdfind");
    eprintln!(
        "tree {}: {} files, {} needle lines",
        fixture.root.display(),
        fd,
        fixture
            .run(&fixture.grep, json!({"pattern": NEEDLE, "max_results": 0}))
            .data["total_matches"]
    );
    fixture
});

pub(crate) fn run_quiet(program: &str, args: &[&str]) {
    let status = Command::new(program)
        .args(args)
        .current_dir(&FIXTURE.root)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.code().is_some_and(|c| c <= 1), "{program} failed");
}
