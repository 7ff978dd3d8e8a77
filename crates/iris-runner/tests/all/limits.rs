//! Hostile repository content (issue 15): files that are FIFOs or devices, oversized or
//! deeply nested YAML, absurd hook timeouts, and secrets in error messages. Every case
//! goes through the public loading API with real files, and every slow-if-broken case
//! runs under a deadline that bounds the test (the broken code hung or took minutes).

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use iris_runner::{AgentConfig, Error, HostRegistry, LoadedConfig, check_config};

use crate::support::Fixture;

/// Generous bound on work that must finish at once; the broken code hung on a FIFO,
/// read `/dev/zero` until memory ran out, or parsed nested YAML for minutes.
const DEADLINE: Duration = Duration::from_secs(10);

/// Runs `work` on its own thread and returns its result, or `None` when it did not
/// finish within [`DEADLINE`] (the thread is left behind; the test fails anyway).
fn within_deadline<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(work());
    });
    rx.recv_timeout(DEADLINE).ok()
}

fn mkfifo(path: &Path) {
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        path,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .unwrap();
}

/// `code: message` of a load error, within the deadline.
fn load_error(file: PathBuf) -> String {
    let err = within_deadline(move || AgentConfig::load_with_env(file, false).map(|_| ()))
        .expect("loading finished within the deadline")
        .unwrap_err();
    format!("{}: {err}", err.code())
}

/// `code: message` of every problem `check_config` reports, within the deadline.
fn check_problems(loaded: LoadedConfig) -> Vec<String> {
    within_deadline(move || {
        check_config(&loaded, &HostRegistry::new())
            .iter()
            .map(|e| format!("{}: {e}", e.code()))
            .collect::<Vec<_>>()
    })
    .expect("check_config finished within the deadline")
}

/// `--config` naming a FIFO used to block in `open` forever, and `/dev/zero` was read
/// until memory ran out; both are refused at once with a typed error.
#[test]
fn agent_config_that_is_not_a_regular_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("iris.yaml");
    mkfifo(&fifo);
    let cases = [
        (fifo, "is a FIFO, not a regular file"),
        (PathBuf::from("/dev/zero"), "is a character device"),
        (dir.path().to_path_buf(), "is a directory"),
    ];
    for (file, reason) in cases {
        let got = load_error(file.clone());
        assert!(
            got.starts_with(&format!("CONFIG_NOT_A_FILE: {}: ", file.display())),
            "{got}"
        );
        assert!(got.contains(reason), "{got}");
    }
}

/// A sparse 64 MiB agent YAML is refused from its size, without reading it.
#[test]
fn oversized_agent_config_is_refused() {
    let fx = Fixture::new("tools: {}\n", &[]);
    std::fs::File::options()
        .write(true)
        .open(fx.file())
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    let got = load_error(fx.file());
    assert_eq!(
        fx.redact(&got),
        "CONFIG_TOO_LARGE: <dir>/iris.yaml: is larger than the 1 MiB limit for an agent config"
    );
}

/// 200 KB of nested `[` took 42 s (release) before serde_yaml's recursion error; the
/// nesting pre-scan refuses it at once, naming where the nesting got too deep.
#[test]
fn deeply_nested_agent_config_is_refused_quickly() {
    let fx = Fixture::new(&format!("tools: {}\n", "[".repeat(200_000)), &[]);
    let got = fx.redact(&load_error(fx.file()));
    assert_eq!(
        got,
        "CONFIG_TOO_LARGE: <dir>/iris.yaml: flow collections (`[`, `{`) nest deeper than 64 \
         levels at line 1 column 72"
    );
}

/// `mcp.path`, `tools.subagent` and `decision.path` naming a FIFO or `/dev/zero`: each is
/// a CONFIG_REFERENCE naming the key and the reason, promptly.
#[test]
fn referenced_files_that_are_not_regular_files_are_refused() {
    let fx = Fixture::new("{}\n", &[]);
    let fifo = fx.root().join("pipe.yaml");
    mkfifo(&fifo);
    for target in [fifo.clone(), PathBuf::from("/dev/zero")] {
        let t = target.display();
        let yaml = format!("mcp:\n  path: {t}\ntools:\n  subagent: {t}\ndecision:\n  path: {t}\n");
        std::fs::write(fx.file(), yaml).unwrap();
        let loaded = AgentConfig::load_with_env(fx.file(), false).unwrap();
        let problems = check_problems(loaded);
        let kind = if target == fifo {
            "is a FIFO, not a regular file"
        } else {
            "is a character device, not a regular file"
        };
        let file = fx.file();
        let f = file.display();
        assert_eq!(
            problems,
            [
                format!("CONFIG_REFERENCE: {f}: `mcp.path` -> {t}: CONFIG_NOT_A_FILE: {kind}"),
                format!(
                    "CONFIG_REFERENCE: {f}: `tools.subagent` -> {t}: SUBAGENT_CATALOG_UNREADABLE: \
                     subagent catalog `{t}` {kind}"
                ),
                format!("CONFIG_REFERENCE: {f}: `decision.path` -> {t}: CONFIG_NOT_A_FILE: {kind}"),
            ]
        );
    }
}

/// Oversized and deeply nested referenced files are refused by size and by nesting.
#[test]
fn oversized_or_nested_referenced_files_are_refused() {
    let nested = format!("tools: {}\n", "[".repeat(200_000));
    let fx = Fixture::new(
        "mcp:\n  path: big.json\ntools:\n  subagent: nested.yaml\ndecision:\n  path: nested-decision.yaml\n",
        &[
            ("big.json", "{}"),
            ("nested.yaml", &nested),
            ("nested-decision.yaml", &nested),
        ],
    );
    std::fs::File::options()
        .write(true)
        .open(fx.root().join("big.json"))
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    let loaded = AgentConfig::load_with_env(fx.file(), false).unwrap();
    let problems: Vec<String> = check_problems(loaded)
        .iter()
        .map(|p| fx.redact(p))
        .collect();
    assert_eq!(
        problems,
        [
            "CONFIG_REFERENCE: <dir>/iris.yaml: `mcp.path` -> <dir>/big.json: CONFIG_TOO_LARGE: \
             is larger than the 1 MiB limit for an MCP config",
            "CONFIG_REFERENCE: <dir>/iris.yaml: `tools.subagent` -> <dir>/nested.yaml: \
             SUBAGENT_CATALOG_INVALID: subagent catalog `<dir>/nested.yaml`: `<file>` flow \
             collections (`[`, `{`) nest deeper than 64 levels at line 1 column 72",
            "CONFIG_REFERENCE: <dir>/iris.yaml: `decision.path` -> <dir>/nested-decision.yaml: \
             CONFIG_TOO_LARGE: flow collections (`[`, `{`) nest deeper than 64 levels at line 1 \
             column 72",
        ]
    );
}

/// `hooks[].timeout_seconds: 1e20` panicked in `Duration::from_secs_f64` on every
/// command that built hooks; now it is a typed hook configuration error naming the field.
#[test]
fn absurd_hook_timeout_is_a_config_error() {
    let fx = Fixture::new(
        "hooks:\n  - name: slow\n    event: tool.before\n    timeout_seconds: 1e20\n    handler: {type: command, command: 'true'}\n",
        &[],
    );
    let loaded = AgentConfig::load_with_env(fx.file(), false).unwrap();
    let problems = check_problems(loaded);
    assert_eq!(
        problems,
        [
            "ASSEMBLY_FAILED: `hooks`: HOOK_INVALID_CONFIG: hooks[0] (`slow`): `timeout_seconds` \
          must be a positive number of seconds no larger than 1e9, got 1e20"
        ]
    );
}

/// figment parses `[`/`{` in an `IRIS_*` value recursively, so 100 000 of them overflowed
/// the stack and aborted the process; now such a value is refused, naming the variable.
/// The environment half runs in a child process (see below).
#[test]
fn deeply_nested_environment_value_is_refused() {
    if let Some(file) = std::env::var_os("IRIS_RUNNER_TEST_CHILD_NESTED") {
        let err = AgentConfig::load(file).unwrap_err();
        println!("CHILD {}: {err}", err.code());
        return;
    }
    let fx = Fixture::new("{}\n", &[]);
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "limits::deeply_nested_environment_value_is_refused",
            "--nocapture",
        ])
        .env("IRIS_RUNNER_TEST_CHILD_NESTED", fx.file())
        .env("IRIS_TOOLS__BUILTIN", "[".repeat(100_000))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{:?}\n{stdout}", out.status);
    let want = format!(
        "CHILD CONFIG_TOO_LARGE: {}: environment variable IRIS_TOOLS__BUILTIN holds more than \
         64 `[`/`{{`; its value is not parsed",
        fx.file().display()
    );
    assert!(stdout.contains(&want), "{stdout}");
}

const SECRET: &str = "sk-live-Q7XJ2ZK9SECRET";

/// Asserts that neither the message nor the `Debug` form of `err` holds [`SECRET`].
fn assert_no_secret(err: &Error) {
    let shown = format!("{}: {err}", err.code());
    let debug = format!("{err:?}");
    assert!(!shown.contains(SECRET), "{shown}");
    assert!(!debug.contains(SECRET), "{debug}");
    // A URL scheme comes back lower-cased.
    assert!(!shown.to_lowercase().contains("secret"), "{shown}");
}

/// A malformed `IRIS_PROVIDER_API_KEYS…` value (or a secret under `provider_api_keys`
/// or any `*key*`/`*token*`/`*secret*`/`*password*` key in the file) is never quoted in
/// CONFIG_INVALID. The environment half runs in a child process (this test binary, one
/// test), because edition 2024 makes `set_var` unsafe and the workspace forbids unsafe.
#[test]
fn config_errors_never_quote_secret_values() {
    if let Some(file) = std::env::var_os("IRIS_RUNNER_TEST_CHILD_SECRET") {
        let err = AgentConfig::load(file).unwrap_err();
        assert_eq!(err.code(), "CONFIG_INVALID");
        assert_no_secret(&err);
        println!("CHILD {}: {err}", err.code());
        return;
    }
    let fx = Fixture::new("{}\n", &[]);
    let envs: [(&str, String); 3] = [
        // A string where the map of providers belongs.
        ("IRIS_PROVIDER_API_KEYS", SECRET.to_owned()),
        // A number where a key string belongs (figment reads it as an integer).
        (
            "IRIS_PROVIDER_API_KEYS__TAVILY",
            "73918265501234".to_owned(),
        ),
        // A list where a key string belongs.
        ("IRIS_PROVIDER_API_KEYS__TAVILY", format!("[{SECRET}]")),
    ];
    for (name, value) in envs {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "limits::config_errors_never_quote_secret_values",
                "--nocapture",
            ])
            .env("IRIS_RUNNER_TEST_CHILD_SECRET", fx.file())
            .env(name, &value)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{name}={value}\n{stdout}\n{stderr}");
        assert!(stdout.contains("CHILD CONFIG_INVALID: "), "{stdout}");
        assert!(
            stdout.contains(&format!("(from environment variable {name})")),
            "{stdout}"
        );
        assert!(!stdout.contains(&value), "{stdout}");
        assert!(!stdout.contains("73918265501234"), "{stdout}");
    }

    let files = [
        format!("provider_api_keys: {SECRET}\n"),
        format!("provider_api_keys:\n  tavily: [{SECRET}]\n"),
        format!("provider_api_keys:\n  tavily: {{nested: {SECRET}}}\n"),
    ];
    for yaml in files {
        std::fs::write(fx.file(), &yaml).unwrap();
        let err = AgentConfig::load_with_env(fx.file(), false).unwrap_err();
        assert_eq!(err.code(), "CONFIG_INVALID", "{yaml}");
        assert_no_secret(&err);
        assert!(err.to_string().contains("`provider_api_keys"), "{err}");
    }
}

/// An error about a referenced file (`decision.path`, `tools.subagent`) names the file,
/// the key and the expected shape, and never quotes the file's content.
#[test]
fn referenced_file_errors_never_quote_content() {
    let decisions = [
        // A secret-looking line where a mapping belongs.
        format!("api_key = {SECRET}\n"),
        // A secret where a number belongs.
        format!("timeout_seconds: {SECRET}\n"),
        // A secret as an unknown key.
        format!("{SECRET}: true\n"),
        // A secret as the provider.
        format!("provider: {SECRET}\n"),
        // A secret as a URL scheme.
        format!("base_url: '{SECRET}:x'\n"),
        // A secret in a line that does not parse.
        format!("tools:\n  discovery: true\ntoken: \"{SECRET}\n"),
        format!("model: [{SECRET}\n"),
    ];
    let catalogs = [
        format!("api_key = {SECRET}\n"),
        format!(
            "default: {SECRET}\nagents:\n  helper:\n    path: helper.yaml\n    description: Helps.\n"
        ),
        format!(
            "default: helper\nagents:\n  helper:\n    path: helper.yaml\n    description: \"{SECRET}\n"
        ),
        format!("default: helper\nagents: {SECRET}\n"),
    ];
    let fx = Fixture::new(
        "tools:\n  subagent: catalog.yaml\ndecision:\n  path: decision.yaml\n",
        &[],
    );
    for (decision, catalog) in decisions.iter().zip(catalogs.iter().cycle()) {
        std::fs::write(fx.root().join("decision.yaml"), decision).unwrap();
        std::fs::write(fx.root().join("catalog.yaml"), catalog).unwrap();
        let loaded = AgentConfig::load_with_env(fx.file(), false).unwrap();
        let problems = check_config(&loaded, &HostRegistry::new());
        assert_eq!(problems.len(), 2, "{decision}\n{catalog}\n{problems:?}");
        for problem in &problems {
            assert_eq!(problem.code(), "CONFIG_REFERENCE", "{problem}");
            assert_no_secret(problem);
        }
        assert!(problems[0].to_string().contains("`tools.subagent` -> "));
        assert!(problems[1].to_string().contains("`decision.path` -> "));
    }
}
