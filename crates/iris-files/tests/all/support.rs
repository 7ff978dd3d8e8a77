//! Helpers shared by the test modules: a sandbox holding a workspace and an outside
//! directory, and a harness that calls tools the way the executor does.
#![allow(dead_code)] // Each module uses a different subset of the helpers.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use iris_files::{FileService, FileToolsConfig, ReadState, builtin_tools_with};
use iris_tools_core::{Tool, ToolErrorInfo, ToolExecutionContext, ToolInput, ToolOutput};
use serde_json::Value;

/// A temporary sandbox: `<sandbox>/ws` is the workspace, `<sandbox>/outside` is not.
pub(crate) struct Harness {
    pub(crate) sandbox: tempfile::TempDir,
    pub(crate) ws: PathBuf,
    pub(crate) outside: PathBuf,
    pub(crate) service: Arc<FileService>,
    pub(crate) tools: Vec<Arc<dyn Tool>>,
    pub(crate) ctx: ToolExecutionContext,
}

impl Harness {
    pub(crate) fn new() -> Self {
        Self::with_config(FileToolsConfig::default())
    }

    pub(crate) fn with_config(config: FileToolsConfig) -> Self {
        let sandbox = tempfile::tempdir().unwrap();
        let ws = sandbox.path().join("ws");
        let outside = sandbox.path().join("outside");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        let service = Arc::new(FileService::new(config).unwrap());
        let tools = builtin_tools_with(&service);
        let ctx = ToolExecutionContext::new(&ws).session_id("s-1");
        Self {
            sandbox,
            ws,
            outside,
            service,
            tools,
            ctx,
        }
    }

    /// A context for another session of the same workspace.
    pub(crate) fn session(&self, id: &str) -> ToolExecutionContext {
        ToolExecutionContext::new(&self.ws).session_id(id)
    }

    /// A context carrying a host-owned read state.
    pub(crate) fn with_state(&self, state: Arc<ReadState>) -> ToolExecutionContext {
        let mut ctx = ToolExecutionContext::new(&self.ws).session_id("host");
        ctx.extensions.insert_arc(state);
        ctx
    }

    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.ws.join(rel)
    }

    /// Writes a workspace file (creating directories) behind the tools' back.
    pub(crate) fn put(&self, rel: &str, content: impl AsRef<[u8]>) {
        put(&self.ws.join(rel), content);
    }

    pub(crate) fn get(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.ws.join(rel)).unwrap()
    }

    pub(crate) fn text(&self, rel: &str) -> String {
        String::from_utf8(self.get(rel)).unwrap()
    }

    pub(crate) fn tool(&self, name: &str) -> Arc<dyn Tool> {
        self.tools
            .iter()
            .find(|t| t.definition().name == name)
            .cloned()
            .unwrap_or_else(|| panic!("no tool {name}"))
    }

    /// Calls a tool in the default session.
    pub(crate) async fn call(&self, name: &str, input: Value) -> ToolOutput {
        self.call_in(&self.ctx, name, input).await
    }

    /// Calls a tool the way the executor does: schema check, `validate_input`, `run`.
    pub(crate) async fn call_in(
        &self,
        ctx: &ToolExecutionContext,
        name: &str,
        input: Value,
    ) -> ToolOutput {
        let tool = self.tool(name);
        match validate(tool.as_ref(), input) {
            Ok(valid) => tool.run(valid, ctx).await,
            Err(info) => ToolOutput::error(info),
        }
    }
}

pub(crate) fn put(path: &Path, content: impl AsRef<[u8]>) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(path, content).unwrap();
}

/// The executor's validation: JSON Schema 2020-12 first, then the tool's typed
/// parsing. Both verdicts must agree; a disagreement fails the test.
pub(crate) fn validate(tool: &dyn Tool, input: Value) -> Result<ToolInput, ToolErrorInfo> {
    // Compiling a validator is costly; the six schemas never change, so compile each
    // once per test binary.
    static VALIDATORS: OnceLock<Mutex<HashMap<String, Arc<jsonschema::Validator>>>> =
        OnceLock::new();
    let validator = {
        let mut map = VALIDATORS.get_or_init(Default::default).lock().unwrap();
        let def = tool.definition();
        Arc::clone(
            map.entry(def.name.clone())
                .or_insert_with(|| Arc::new(jsonschema::validator_for(&def.input_schema).unwrap())),
        )
    };
    let by_schema = validator.is_valid(&input);
    let typed = tool.validate_input(input.clone());
    assert_eq!(
        by_schema,
        typed.is_ok(),
        "{}: schema says {by_schema}, validate_input says {:?} for {input}",
        tool.definition().name,
        typed.as_ref().map(ToolInput::value)
    );
    typed
}

/// The error code of a result, or "OK".
pub(crate) fn code(result: &ToolOutput) -> &str {
    result.error_code().unwrap_or("OK")
}

/// The text of the first content block ("" when there is none).
pub(crate) fn first_text(result: &ToolOutput) -> &str {
    result
        .content
        .first()
        .and_then(|b| b.as_text())
        .unwrap_or("")
}

/// A small deterministic generator (SplitMix64), so property-style tests replay.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// A tree exercising every ignore rule (also used by the grep tests).
pub(crate) fn ignore_tree(h: &Harness) {
    for (rel, content) in [
        (".gitignore", "*.log\nbuild/\n!keep.log\n"),
        (".ignore", "secret.txt\n"),
        (".git/config", "hello git\n"),
        (".git/info/exclude", "excluded.md\n"),
        (".iris/tool-results/s/x.txt", "hello from results\n"),
        (".env", "TOKEN=abc\n"),
        ("a.log", "hello log\n"),
        ("keep.log", "kept hello\n"),
        ("build/out.o", "hello build\n"),
        ("excluded.md", "hello excluded\n"),
        ("secret.txt", "hello secret\n"),
        ("src/main.rs", "fn main() {\n    println!(\"hello\");\n}\n"),
        (
            "src/lib.rs",
            "pub fn add(a: i32) -> i32 {\n    a + 1\n}\n// hello again\n",
        ),
        ("src/nested/.gitignore", "gen.rs\n"),
        ("src/nested/deep.rs", "fn deep() {}\n"),
        ("src/nested/gen.rs", "fn generated() { hello }\n"),
        ("README.md", "# Hello\n"),
        ("docs/guide.md", "guide\n"),
    ] {
        h.put(rel, content);
    }
}

/// The files `list_files` shows for [`ignore_tree`] by default, in order.
pub(crate) const VISIBLE: [&str; 10] = [
    ".env",
    ".gitignore",
    ".ignore",
    "README.md",
    "docs/guide.md",
    "keep.log",
    "src/lib.rs",
    "src/main.rs",
    "src/nested/.gitignore",
    "src/nested/deep.rs",
];
