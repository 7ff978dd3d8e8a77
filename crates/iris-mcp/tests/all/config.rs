//! The config matrix: every row of the MCP server table in JSON, JSONC and TOML, every
//! error (naming file, server and field), overrides, and prepare-time resolution.

use std::collections::BTreeMap;
use std::path::Path;

use iris_mcp::{
    ConfigFormat, HostEnv, MCPConfig, McpOverrides, ResolvedTransport, ServerOverride,
    ServerTransport, load_mcp_config,
};
use serde_json::{Value, json};

const JSON_PATH: &str = "/cfg/dir/mcp.json";
const TOML_PATH: &str = "/cfg/dir/config.toml";

/// A compact JSON view of a config, addressed by JSON pointers in the tables.
fn summary(c: &MCPConfig) -> Value {
    let servers: serde_json::Map<String, Value> = c
        .servers
        .values()
        .map(|s| {
            let mut v = json!({
                "type": s.transport.kind().as_str(),
                "enabled": s.enabled,
                "required": s.required,
                "trust": s.trust_annotations,
                "startup": s.startup_timeout.as_secs_f64(),
                "tool": s.tool_timeout.as_secs_f64(),
                "tool_max": s.tool_max.as_secs_f64(),
                "enabled_tools": s.enabled_tools,
                "disabled_tools": s.disabled_tools,
            });
            let extra = match &s.transport {
                ServerTransport::Stdio(x) => json!({
                    "command": x.command, "args": x.args, "cwd": x.cwd, "env": x.env,
                    "env_vars": x.env_vars, "env_file": x.env_file,
                }),
                ServerTransport::StreamableHttp(h) | ServerTransport::Sse(h) => json!({
                    "url": h.url, "headers": h.headers, "env_http_headers": h.env_http_headers,
                    "bearer": h.bearer_token_env_var,
                }),
            };
            for (k, x) in extra.as_object().unwrap() {
                v[k] = x.clone();
            }
            (s.name.clone(), v)
        })
        .collect();
    json!({"root": c.root_key, "servers": servers, "warnings": c.warnings.len()})
}

type Expect<'a> = Result<&'a [(&'a str, Value)], &'a str>;

fn parse(path: &str, text: &str, overrides: &McpOverrides) -> Result<MCPConfig, String> {
    MCPConfig::from_str(
        text,
        ConfigFormat::from_path(Path::new(path)),
        path,
        overrides,
    )
    .map_err(|e| format!("{}: {e}", e.code()))
}

/// Parses `text` as the file `path`; `Ok` lists (JSON pointer, value) pairs the
/// summary must hold, `Err` a fragment of `CODE: message`.
fn check(path: &str, text: &str, overrides: &McpOverrides, expect: Expect<'_>) {
    let got = parse(path, text, overrides);
    match (got, expect) {
        (Ok(config), Ok(pairs)) => {
            let s = summary(&config);
            for (pointer, want) in pairs {
                assert_eq!(
                    s.pointer(pointer),
                    Some(want),
                    "{pointer} in\n{text}\nsummary: {s:#}"
                );
            }
        }
        (Err(e), Err(fragment)) => {
            assert!(
                e.contains(fragment),
                "{text}\n  got: {e}\n want: {fragment}"
            );
        }
        (Ok(config), Err(fragment)) => {
            panic!(
                "{text}\n  expected error `{fragment}`, got {:#}",
                summary(&config)
            )
        }
        (Err(e), Ok(_)) => panic!("{text}\n  unexpected error: {e}"),
    }
}

fn none() -> McpOverrides {
    McpOverrides::new()
}

fn j(servers: &str) -> String {
    format!(r#"{{"mcpServers": {{{servers}}}}}"#)
}

#[test]
fn type_inference_and_transport_fields() {
    let rows: &[(&str, Expect<'_>)] = &[
        (
            r#""a": {"command": "uvx"}"#,
            Ok(&[
                ("/servers/a/type", json!("stdio")),
                ("/servers/a/args", json!([])),
                ("/servers/a/cwd", Value::Null),
                ("/servers/a/env", json!({})),
            ]),
        ),
        (
            r#""a": {"url": "https://x/mcp"}"#,
            Ok(&[("/servers/a/type", json!("streamable-http"))]),
        ),
        (
            r#""a": {"type": "http", "url": "https://x/mcp"}"#,
            Ok(&[("/servers/a/type", json!("streamable-http"))]),
        ),
        (
            r#""a": {"type": "streamable_http", "url": "https://x/mcp"}"#,
            Ok(&[("/servers/a/type", json!("streamable-http"))]),
        ),
        (
            r#""a": {"type": "streamable-http", "url": "https://x/mcp"}"#,
            Ok(&[("/servers/a/type", json!("streamable-http"))]),
        ),
        (
            r#""a": {"type": "sse", "url": "http://x/sse"}"#,
            Ok(&[("/servers/a/type", json!("sse"))]),
        ),
        (
            r#""a": {"type": "stdio", "command": "node", "args": ["s.js", "--port", "1"]}"#,
            Ok(&[
                ("/servers/a/type", json!("stdio")),
                ("/servers/a/args", json!(["s.js", "--port", "1"])),
            ]),
        ),
        (
            r#""a": {"serverUrl": "https://x/mcp"}"#,
            Ok(&[("/servers/a/url", json!("https://x/mcp"))]),
        ),
        (
            r#""a": {"command": "x", "cwd": "sub", "env": {"A": "1", "PORT": 8080, "ON": true}, "env_vars": ["HOME_DIR"], "envFile": ".env"}"#,
            Ok(&[
                ("/servers/a/cwd", json!("sub")),
                (
                    "/servers/a/env",
                    json!({"A": "1", "PORT": "8080", "ON": "true"}),
                ),
                ("/servers/a/env_vars", json!(["HOME_DIR"])),
                ("/servers/a/env_file", json!(".env")),
            ]),
        ),
        // Errors: each names file, server and field.
        (
            r#""a": {"type": "websocket", "url": "ws://x"}"#,
            Err(
                "MCP_INVALID_CONFIG: /cfg/dir/mcp.json: server `a`: field `type`: unknown transport `websocket`",
            ),
        ),
        (
            r#""a": {"type": "stdio"}"#,
            Err("server `a`: field `command`: a stdio server needs a command"),
        ),
        (
            r#""a": {"command": "  "}"#,
            Err("server `a`: field `command`: must not be empty"),
        ),
        (
            r#""a": {"command": ["uvx"]}"#,
            Err("server `a`: field `command`: must be a string, found a list"),
        ),
        (
            r#""a": {"command": "x", "args": ["ok", 1]}"#,
            Err("server `a`: field `args[1]`: must be a string, found a number"),
        ),
        (
            r#""a": {"command": "x", "env": {"A": null}}"#,
            Err("server `a`: field `env.A`: must be a string, found null"),
        ),
        (
            r#""a": {"command": "x", "env_vars": ["NOT-A-NAME"]}"#,
            Err(
                "server `a`: field `env_vars[0]`: `NOT-A-NAME` is not an environment variable name",
            ),
        ),
        (
            r#""a": {"type": "sse"}"#,
            Err("server `a`: field `url`: a sse server needs a url"),
        ),
        (
            r#""a": {}"#,
            Err("server `a`: field `url`: a streamable-http server needs a url"),
        ),
        (
            r#""a": {"url": "https://x", "serverUrl": "https://y"}"#,
            Err("server `a`: field `serverUrl`: give either `url` or `serverUrl`, not both"),
        ),
        (
            r#""a": {"url": "ftp://x"}"#,
            Err("server `a`: field `url`: `ftp://x` is not an http(s) URL"),
        ),
        // Stdio and HTTP fields never mix.
        (
            r#""a": {"command": "x", "url": "https://x"}"#,
            Err(
                "server `a`: field `url`: `url` does not apply to a stdio server (stdio and HTTP fields cannot be mixed)",
            ),
        ),
        (
            r#""a": {"command": "x", "headers": {"a": "b"}}"#,
            Err("field `headers`: `headers` does not apply to a stdio server"),
        ),
        (
            r#""a": {"command": "x", "bearer_token_env_var": "T"}"#,
            Err(
                "field `bearer_token_env_var`: `bearer_token_env_var` does not apply to a stdio server",
            ),
        ),
        (
            r#""a": {"type": "http", "command": "x", "url": "https://x"}"#,
            Err("field `command`: `command` does not apply to a streamable-http server"),
        ),
        (
            r#""a": {"url": "https://x", "env": {"A": "1"}}"#,
            Err("field `env`: `env` does not apply to a streamable-http server"),
        ),
        (
            r#""a": {"type": "sse", "url": "https://x", "cwd": "."}"#,
            Err("field `cwd`: `cwd` does not apply to a sse server"),
        ),
        (
            r#""a": {"url": "https://x", "envFile": ".env"}"#,
            Err("field `envFile`: `envFile` does not apply"),
        ),
        (
            r#""a": 3"#,
            Err("server `a`: server settings must be a mapping, found a number"),
        ),
    ];
    for (servers, expect) in rows {
        check(JSON_PATH, &j(servers), &none(), *expect);
    }
}

#[test]
fn headers_bearer_and_env_headers() {
    let rows: &[(&str, Expect<'_>)] = &[
        (
            r#""a": {"url": "https://x", "headers": {"X-Team": "iris", "Accept-Language": "en"}}"#,
            Ok(&[(
                "/servers/a/headers",
                json!({"x-team": "iris", "accept-language": "en"}),
            )]),
        ),
        (
            r#""a": {"url": "https://x", "http_headers": {"X-A": "1"}, "headers": {"x-b": "2"}}"#,
            Ok(&[("/servers/a/headers", json!({"x-a": "1", "x-b": "2"}))]),
        ),
        // The same effective key with the same value is fine; a different value is not.
        (
            r#""a": {"url": "https://x", "headers": {"X-A": "1", "x-a": "1"}}"#,
            Ok(&[("/servers/a/headers", json!({"x-a": "1"}))]),
        ),
        (
            r#""a": {"url": "https://x", "headers": {"X-A": "1", "x-a": "2"}}"#,
            Err("server `a`: field `headers.x-a`: header `x-a` is set twice with different values"),
        ),
        (
            r#""a": {"url": "https://x", "headers": {"X-A": "1"}, "http_headers": {"x-A": "2"}}"#,
            Err("field `http_headers.x-A`: header `x-a` is set twice with different values"),
        ),
        (
            r#""a": {"url": "https://x", "headers": {"bad header": "1"}}"#,
            Err("field `headers.bad header`: `bad header` is not a valid HTTP header name"),
        ),
        (
            r#""a": {"url": "https://x", "headers": {"Mcp-Session-Id": "1"}}"#,
            Err(
                "field `headers.Mcp-Session-Id`: header `mcp-session-id` is managed by the MCP transport and cannot be set",
            ),
        ),
        (
            r#""a": {"url": "https://x", "env_http_headers": {"Accept": "A"}}"#,
            Err("field `env_http_headers.Accept`: header `accept` is managed by the MCP transport"),
        ),
        (
            r#""a": {"url": "https://x", "env_http_headers": {"X-Key": "API_KEY"}}"#,
            Ok(&[("/servers/a/env_http_headers", json!({"x-key": "API_KEY"}))]),
        ),
        (
            r#""a": {"url": "https://x", "headers": {"x-key": "1"}, "env_http_headers": {"X-Key": "API_KEY"}}"#,
            Err(
                "field `env_http_headers.X-Key`: header `x-key` is already set; a header has one source",
            ),
        ),
        (
            r#""a": {"url": "https://x", "env_http_headers": {"X-Key": "not a var"}}"#,
            Err("field `env_http_headers.X-Key`: `not a var` is not an environment variable name"),
        ),
        (
            r#""a": {"url": "https://x", "bearer_token_env_var": "TOKEN"}"#,
            Ok(&[("/servers/a/bearer", json!("TOKEN"))]),
        ),
        (
            r#""a": {"url": "https://x", "bearer_token_env_var": "TOKEN", "headers": {"Authorization": "Basic x"}}"#,
            Err("field `bearer_token_env_var`: header `authorization` is already set"),
        ),
        (
            r#""a": {"url": "https://x", "bearer_token_env_var": "BAD-NAME"}"#,
            Err("field `bearer_token_env_var`: `BAD-NAME` is not an environment variable name"),
        ),
    ];
    for (servers, expect) in rows {
        check(JSON_PATH, &j(servers), &none(), *expect);
    }
}

#[test]
fn enabled_required_timeouts_and_tool_filters() {
    let rows: &[(&str, Expect<'_>)] = &[
        // Defaults: enabled, required, 30 s startup, 30 s per call, every tool.
        (
            r#""a": {"command": "x"}"#,
            Ok(&[
                ("/servers/a/enabled", json!(true)),
                ("/servers/a/required", json!(true)),
                ("/servers/a/trust", json!(false)),
                ("/servers/a/startup", json!(30.0)),
                ("/servers/a/tool", json!(30.0)),
                ("/servers/a/tool_max", json!(600.0)),
                ("/servers/a/enabled_tools", Value::Null),
                ("/servers/a/disabled_tools", json!([])),
            ]),
        ),
        // The cap: its own key, raised to a longer idle timeout when unset, never
        // shorter than the idle timeout when set.
        (
            r#""a": {"command": "x", "tool_timeout_sec": 5, "tool_max_sec": 3600}"#,
            Ok(&[
                ("/servers/a/tool", json!(5.0)),
                ("/servers/a/tool_max", json!(3600.0)),
            ]),
        ),
        (
            r#""a": {"command": "x", "tool_timeout_sec": 900}"#,
            Ok(&[("/servers/a/tool_max", json!(900.0))]),
        ),
        (
            r#""a": {"command": "x", "tool_timeout_sec": 60, "tool_max_sec": 10}"#,
            Err(
                "server `a`: field `tool_max_sec`: the cap (10s) is shorter than tool_timeout_sec (60s)",
            ),
        ),
        (
            r#""a": {"command": "x", "tool_max_sec": 0}"#,
            Err("field `tool_max_sec`: must be a positive finite number, found 0"),
        ),
        (
            r#""a": {"command": "x", "disabled": true}"#,
            Ok(&[("/servers/a/enabled", json!(false))]),
        ),
        (
            r#""a": {"command": "x", "enabled": false}"#,
            Ok(&[("/servers/a/enabled", json!(false))]),
        ),
        (
            r#""a": {"command": "x", "enabled": true, "disabled": false}"#,
            Ok(&[("/servers/a/enabled", json!(true))]),
        ),
        (
            r#""a": {"command": "x", "enabled": true, "disabled": true}"#,
            Err(
                "server `a`: field `disabled`: `enabled: true` and `disabled: true` contradict each other",
            ),
        ),
        (
            r#""a": {"command": "x", "enabled": "yes"}"#,
            Err("field `enabled`: must be true or false, found a string"),
        ),
        (
            r#""a": {"command": "x", "required": false}"#,
            Ok(&[("/servers/a/required", json!(false))]),
        ),
        (
            r#""a": {"command": "x", "startup_timeout_sec": 2.5, "tool_timeout_sec": 120}"#,
            Ok(&[
                ("/servers/a/startup", json!(2.5)),
                ("/servers/a/tool", json!(120.0)),
            ]),
        ),
        (
            r#""a": {"command": "x", "startup_timeout_ms": 1500}"#,
            Ok(&[("/servers/a/startup", json!(1.5))]),
        ),
        (
            r#""a": {"command": "x", "startup_timeout_ms": 1500, "startup_timeout_sec": 2}"#,
            Err(
                "field `startup_timeout_ms`: give either `startup_timeout_sec` or `startup_timeout_ms`, not both",
            ),
        ),
        (
            r#""a": {"command": "x", "startup_timeout_sec": 0}"#,
            Err("field `startup_timeout_sec`: must be a positive finite number, found 0"),
        ),
        (
            r#""a": {"command": "x", "startup_timeout_ms": -5}"#,
            Err("field `startup_timeout_ms`: must be a positive finite number, found -5"),
        ),
        (
            r#""a": {"command": "x", "tool_timeout_sec": "30"}"#,
            Err("field `tool_timeout_sec`: must be a positive number, found a string"),
        ),
        (
            r#""a": {"command": "x", "tool_timeout_sec": -1}"#,
            Err("field `tool_timeout_sec`: must be a positive finite number, found -1"),
        ),
        (
            r#""a": {"command": "x", "tool_timeout_sec": 1e-10}"#,
            Err("field `tool_timeout_sec`: must be at least one nanosecond, found 0.0000000001"),
        ),
        (
            r#""a": {"command": "x", "enabled_tools": ["read", "list"], "disabled_tools": ["list"]}"#,
            Ok(&[
                ("/servers/a/enabled_tools", json!(["read", "list"])),
                ("/servers/a/disabled_tools", json!(["list"])),
            ]),
        ),
        (
            r#""a": {"command": "x", "enabled_tools": "read"}"#,
            Err("field `enabled_tools`: must be a list of strings, found a string"),
        ),
        (
            r#""a": {"command": "x", "trust_annotations": true}"#,
            Err(
                "field `trust_annotations`: trust_annotations is an Iris policy: set it in the agent's mcp.overrides",
            ),
        ),
        // Other clients' fields load with a warning.
        (
            r#""a": {"command": "x", "autoApprove": ["read"], "description": "mine"}"#,
            Ok(&[("/warnings", json!(2))]),
        ),
    ];
    for (servers, expect) in rows {
        check(JSON_PATH, &j(servers), &none(), *expect);
    }
}

#[test]
fn tool_filters_use_wire_names_and_disabled_wins() {
    let c = parse(
        JSON_PATH,
        &j(r#""a": {"command": "x", "enabled_tools": ["read", "list-dir"], "disabled_tools": ["list-dir", "write"]}, "b": {"command": "x", "disabled_tools": ["write"]}"#),
        &none(),
    )
    .unwrap();
    let table = [
        ("a", "read", true),
        ("a", "list-dir", false), // in both lists: disabled wins
        ("a", "write", false),
        ("a", "other", false), // not in enabled_tools
        ("b", "read", true),   // no enabled_tools: every tool
        ("b", "write", false),
    ];
    for (server, tool, want) in table {
        assert_eq!(
            c.servers[server].tool_enabled(tool),
            want,
            "{server}/{tool}"
        );
    }
}

#[test]
fn root_mapping_rules() {
    let rows: &[(&str, Expect<'_>)] = &[
        (
            r#"{"servers": {"a": {"command": "x"}}, "inputs": []}"#,
            Ok(&[("/root", json!("servers")), ("/warnings", json!(1))]),
        ),
        (
            r#"{"mcp_servers": {"a": {"command": "x"}}}"#,
            Ok(&[("/root", json!("mcp_servers"))]),
        ),
        (r#"{"mcpServers": {}}"#, Ok(&[("/servers", json!({}))])),
        (
            r#"{"tools": {}}"#,
            Err(
                "MCP_INVALID_CONFIG: /cfg/dir/mcp.json: no server mapping: expected exactly one of `mcpServers`, `servers`, `mcp_servers`",
            ),
        ),
        (
            r#"{"mcpServers": {}, "servers": {}}"#,
            Err(
                "/cfg/dir/mcp.json: expected exactly one server mapping, found `mcpServers` and `servers`",
            ),
        ),
        (
            r#"{"mcpServers": []}"#,
            Err(
                "/cfg/dir/mcp.json: field `mcpServers`: must be a mapping of server name to server settings",
            ),
        ),
        (
            r#"[1, 2]"#,
            Err("/cfg/dir/mcp.json: the root must be an object"),
        ),
        ("", Err("/cfg/dir/mcp.json: the file is empty")),
        (
            r#"{"mcpServers": {"a": {"command": "x"}"#,
            Err("/cfg/dir/mcp.json: invalid JSON:"),
        ),
        // JSONC: comments and trailing commas.
        (
            "// user servers\n{\n  /* block */ \"mcpServers\": {\n    \"a\": {\"command\": \"x\", \"args\": [\"1\",],},\n  },\n}\n",
            Ok(&[("/servers/a/args", json!(["1"]))]),
        ),
    ];
    for (text, expect) in rows {
        check(JSON_PATH, text, &none(), *expect);
    }
}

#[test]
fn toml_files_load_like_codex_writes_them() {
    let codex = r#"
model = "o3"

[mcp_servers.time]
command = "uvx"
args = ["mcp-server-time", "--local-timezone", "UTC"]
env = { TZ = "UTC" }
env_vars = ["LANG"]
startup_timeout_ms = 20_000
tool_timeout_sec = 60.5
enabled_tools = ["get_current_time"]

[mcp_servers.docs]
url = "https://docs.example.com/mcp"
bearer_token_env_var = "DOCS_TOKEN"
http_headers = { "X-Client" = "iris" }
env_http_headers = { "X-Org" = "DOCS_ORG" }
required = false
enabled = false
"#;
    check(
        TOML_PATH,
        codex,
        &none(),
        Ok(&[
            ("/root", json!("mcp_servers")),
            ("/warnings", json!(1)),
            ("/servers/time/type", json!("stdio")),
            (
                "/servers/time/args",
                json!(["mcp-server-time", "--local-timezone", "UTC"]),
            ),
            ("/servers/time/env", json!({"TZ": "UTC"})),
            ("/servers/time/startup", json!(20.0)),
            ("/servers/time/tool", json!(60.5)),
            ("/servers/time/enabled_tools", json!(["get_current_time"])),
            ("/servers/docs/type", json!("streamable-http")),
            ("/servers/docs/headers", json!({"x-client": "iris"})),
            (
                "/servers/docs/env_http_headers",
                json!({"x-org": "DOCS_ORG"}),
            ),
            ("/servers/docs/bearer", json!("DOCS_TOKEN")),
            ("/servers/docs/required", json!(false)),
            ("/servers/docs/enabled", json!(false)),
        ]),
    );
    let rows: &[(&str, Expect<'_>)] = &[
        (
            "[mcp_servers.a]\ncommand = \"x\"\nstartup_timeout_sec = inf\n",
            Err(
                "/cfg/dir/config.toml: server `a`: field `startup_timeout_sec`: must be a finite number, found inf",
            ),
        ),
        (
            "[mcp_servers.a]\ncommand = \"x\"\ntool_timeout_sec = nan\n",
            Err("server `a`: field `tool_timeout_sec`: must be a finite number, found NaN"),
        ),
        (
            "[mcp_servers.a]\ncommand = \"x\"\ntype = \"sse\"\n",
            Err("server `a`: field `command`: `command` does not apply to a sse server"),
        ),
        (
            "[mcp_servers.a\ncommand = 1\n",
            Err("/cfg/dir/config.toml: invalid TOML on line 1:"),
        ),
        (
            "[servers.a]\ncommand = \"x\"\n[mcpServers.b]\ncommand = \"y\"\n",
            Err("expected exactly one server mapping, found `mcpServers` and `servers`"),
        ),
    ];
    for (text, expect) in rows {
        check(TOML_PATH, text, &none(), *expect);
    }
}

#[test]
fn overrides_merge_by_raw_server_name() {
    let text = j(
        r#""my.server": {"command": "x", "required": true, "startup_timeout_sec": 5}, "b": {"url": "https://x", "tool_timeout_sec": 7}"#,
    );
    let o = |pairs: &[(&str, ServerOverride)]| -> McpOverrides {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect()
    };
    let full = ServerOverride {
        required: Some(false),
        trust_annotations: Some(true),
        startup_timeout_sec: Some(1.25),
        tool_timeout_sec: Some(90.0),
        tool_max_sec: Some(7200.0),
        sandbox: None,
    };
    check(
        JSON_PATH,
        &text,
        &o(&[("my.server", full)]),
        Ok(&[
            ("/servers/my.server/required", json!(false)),
            ("/servers/my.server/trust", json!(true)),
            ("/servers/my.server/startup", json!(1.25)),
            ("/servers/my.server/tool", json!(90.0)),
            ("/servers/my.server/tool_max", json!(7200.0)),
            // Unset override fields keep the file's values and the defaults.
            ("/servers/b/required", json!(true)),
            ("/servers/b/trust", json!(false)),
            ("/servers/b/tool", json!(7.0)),
        ]),
    );
    check(
        JSON_PATH,
        &text,
        &o(&[(
            "b",
            ServerOverride {
                trust_annotations: Some(true),
                ..Default::default()
            },
        )]),
        Ok(&[
            ("/servers/b/trust", json!(true)),
            ("/servers/b/tool", json!(7.0)),
            ("/servers/b/required", json!(true)),
        ]),
    );
    check(
        JSON_PATH,
        &text,
        &o(&[("my_server", ServerOverride::default())]),
        Err(
            "/cfg/dir/mcp.json: server `my_server`: field `mcp.overrides`: override names a server the file does not declare (servers: b, my.server)",
        ),
    );
    check(
        JSON_PATH,
        &text,
        &o(&[(
            "b",
            ServerOverride {
                tool_timeout_sec: Some(0.0),
                ..Default::default()
            },
        )]),
        Err(
            "server `b`: field `mcp.overrides.tool_timeout_sec`: must be a positive finite number, found 0",
        ),
    );
    check(
        JSON_PATH,
        &text,
        &o(&[(
            "b",
            ServerOverride {
                startup_timeout_sec: Some(f64::INFINITY),
                ..Default::default()
            },
        )]),
        Err(
            "server `b`: field `mcp.overrides.startup_timeout_sec`: must be a positive finite number, found inf",
        ),
    ); // The cap override beats the file's cap and is checked against the idle timeout
    // (the file's, 7 s here).
    check(
        JSON_PATH,
        &text,
        &o(&[(
            "b",
            ServerOverride {
                tool_max_sec: Some(3.0),
                ..Default::default()
            },
        )]),
        Err(
            "server `b`: field `mcp.overrides.tool_max_sec`: the cap (3s) is shorter than tool_timeout_sec (7s)",
        ),
    );
    check(
        JSON_PATH,
        &text,
        &o(&[(
            "b",
            ServerOverride {
                tool_max_sec: Some(120.0),
                ..Default::default()
            },
        )]),
        Ok(&[("/servers/b/tool_max", json!(120.0))]),
    );
}

#[test]
fn agent_yaml_mcp_section_and_files_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("agents")).unwrap();
    std::fs::write(
        dir.path().join("agents/.mcp.json"),
        r#"{"mcpServers": {"t": {"command": "x"}}}"#,
    )
    .unwrap();
    std::fs::write(
        dir.path().join("agents/codex.toml"),
        "[mcp_servers.t]\ncommand = \"x\"\n",
    )
    .unwrap();
    // What the runner's `mcp: {path: .mcp.json, overrides: {t: …}}` in
    // `agents/iris.yaml` loads.
    let overrides: McpOverrides = [(
        "t".to_owned(),
        iris_mcp::ServerOverride {
            required: Some(false),
            tool_timeout_sec: Some(3.0),
            ..Default::default()
        },
    )]
    .into();
    let config = load_mcp_config(dir.path().join("agents").join(".mcp.json"), &overrides).unwrap();
    assert!(!config.servers["t"].required);
    assert_eq!(config.servers["t"].tool_timeout.as_secs(), 3);
    assert_eq!(
        config.servers["t"].source,
        dir.path().join("agents/.mcp.json")
    );

    let toml = load_mcp_config(dir.path().join("agents/codex.toml"), &none()).unwrap();
    assert_eq!(toml.root_key, "mcp_servers");

    let missing = load_mcp_config(dir.path().join("nope.json"), &none()).unwrap_err();
    assert_eq!(missing.code(), "MCP_INVALID_CONFIG");
    assert!(
        missing
            .to_string()
            .contains("nope.json: the file cannot be read"),
        "{missing}"
    );
}

/// Resolves the single server `a` of a JSON config against `host` in workspace `/ws`;
/// `Ok` lists (JSON pointer, value) pairs of the resolved view.
fn check_resolve(entry: &str, host: &[(&str, &str)], expect: Expect<'_>) {
    let config = parse(JSON_PATH, &j(&format!(r#""a": {entry}"#)), &none()).unwrap();
    let host: HostEnv = host.iter().copied().collect();
    let got = config.servers["a"]
        .resolve(Path::new("/ws"), &host)
        .map_err(|e| format!("{}: {e}", e.code()));
    let view = |r: &ResolvedTransport| match r {
        ResolvedTransport::Stdio {
            command,
            args,
            cwd,
            env,
            sandbox,
        } => {
            // Only the manager puts a server in the sandbox.
            assert!(sandbox.is_none());
            json!({"command": command, "args": args, "cwd": cwd, "env": env})
        }
        ResolvedTransport::Http { kind, url, headers } => {
            json!({"kind": kind.as_str(), "url": url, "headers": headers})
        }
    };
    match (got, expect) {
        (Ok(r), Ok(pairs)) => {
            let v = view(&r);
            for (pointer, want) in pairs {
                assert_eq!(
                    v.pointer(pointer),
                    Some(want),
                    "{pointer} of {entry}: {v:#}"
                );
            }
        }
        (Err(e), Err(fragment)) => {
            assert!(e.contains(fragment), "{entry}\n got: {e}\nwant: {fragment}")
        }
        (Ok(r), Err(f)) => panic!("{entry}: expected `{f}`, got {:#}", view(&r)),
        (Err(e), Ok(_)) => panic!("{entry}: unexpected {e}"),
    }
}

#[test]
fn resolution_expands_expressions_once_at_prepare_time() {
    let host: &[(&str, &str)] = &[
        ("PATH", "/usr/bin"),
        ("HOME", "/home/me"),
        ("SECRET", "host-secret"),
        ("TOKEN", "tok"),
        ("EMPTY", ""),
        ("INDIRECT", "${SECRET}"),
        ("ONLY_LISTED", "listed"),
        ("NOT_LISTED", "hidden"),
    ];
    let rows: &[(&str, Expect<'_>)] = &[
        (
            r#"{"command": "${HOME}/bin/srv", "args": ["--key=${SECRET}", "${env:TOKEN}", "${MODE:-fast}", "${EMPTY:-dflt}", "${workspaceFolder}/x", "${input:apiKey}", "$SECRET", "${INDIRECT}"]}"#,
            Ok(&[
                ("/command", json!("/home/me/bin/srv")),
                (
                    "/args",
                    json!([
                        "--key=host-secret",
                        "tok",
                        "fast",
                        "dflt",
                        "${workspaceFolder}/x",
                        "${input:apiKey}",
                        "$SECRET",
                        "${SECRET}"
                    ]),
                ),
            ]),
        ),
        // cwd: the workspace when omitted, relative to the config file's directory
        // when given, absolute as is.
        (r#"{"command": "x"}"#, Ok(&[("/cwd", json!("/ws"))])),
        (
            r#"{"command": "x", "cwd": "tools"}"#,
            Ok(&[("/cwd", json!("/cfg/dir/tools"))]),
        ),
        (
            r#"{"command": "x", "cwd": "/opt/srv"}"#,
            Ok(&[("/cwd", json!("/opt/srv"))]),
        ),
        // The child gets the default variables, the listed ones and `env` — not the
        // whole host environment.
        (
            r#"{"command": "x", "env_vars": ["ONLY_LISTED", "UNSET_VAR"], "env": {"K": "${TOKEN}-v"}}"#,
            Ok(&[(
                "/env",
                json!({"PATH": "/usr/bin", "HOME": "/home/me", "ONLY_LISTED": "listed", "K": "tok-v"}),
            )]),
        ),
        (
            r#"{"command": "x", "args": ["${MISSING}"]}"#,
            Err(
                "MCP_INVALID_CONFIG: /cfg/dir/mcp.json: server `a`: field `args[0]`: environment variable `MISSING` is not set",
            ),
        ),
        (
            r#"{"command": "x", "env": {"K": "${env:MISSING}"}}"#,
            Err("server `a`: field `env.K`: environment variable `MISSING` is not set"),
        ),
        (
            r#"{"command": "x", "args": ["${not valid}"]}"#,
            Err("field `args[0]`: `${not valid}` is not a valid expression"),
        ),
        (
            r#"{"url": "https://${HOST:-localhost}/mcp", "headers": {"X-Secret": "${SECRET}"}, "bearer_token_env_var": "TOKEN", "env_http_headers": {"X-Listed": "ONLY_LISTED", "X-Unset": "UNSET_VAR"}}"#,
            Ok(&[
                ("/url", json!("https://localhost/mcp")),
                (
                    "/headers",
                    json!({"x-secret": "host-secret", "authorization": "Bearer tok", "x-listed": "listed"}),
                ),
            ]),
        ),
        // Headers may hold credentials: plain http only to a loopback host.
        (
            r#"{"url": "http://mcp.example/mcp", "bearer_token_env_var": "TOKEN"}"#,
            Err(
                "server `a`: field `url`: uses plain http to a non-loopback host, which would send the configured headers unencrypted; use https",
            ),
        ),
        (
            r#"{"url": "http://10.1.2.3:8080/mcp", "headers": {"X-Api-Key": "${SECRET}"}, "type": "sse"}"#,
            Err("field `url`: uses plain http to a non-loopback host"),
        ),
        (
            r#"{"url": "http://${HOST:-mcp.example}/mcp", "env_http_headers": {"X-Listed": "ONLY_LISTED"}}"#,
            Err("field `url`: uses plain http to a non-loopback host"),
        ),
        (
            r#"{"url": "http://127.0.0.1:8080/mcp", "bearer_token_env_var": "TOKEN"}"#,
            Ok(&[("/url", json!("http://127.0.0.1:8080/mcp"))]),
        ),
        (
            r#"{"url": "http://localhost/mcp", "headers": {"X-Secret": "${SECRET}"}}"#,
            Ok(&[("/url", json!("http://localhost/mcp"))]),
        ),
        (
            r#"{"url": "http://[::1]:9/mcp", "headers": {"X-Secret": "${SECRET}"}}"#,
            Ok(&[("/url", json!("http://[::1]:9/mcp"))]),
        ),
        // Without headers there is nothing to protect.
        (
            r#"{"url": "http://mcp.example/mcp"}"#,
            Ok(&[("/url", json!("http://mcp.example/mcp"))]),
        ),
        (
            r#"{"url": "https://x", "bearer_token_env_var": "MISSING"}"#,
            Err(
                "server `a`: field `bearer_token_env_var`: environment variable `MISSING` is not set",
            ),
        ),
        (
            r#"{"url": "https://x", "bearer_token_env_var": "EMPTY"}"#,
            Err("field `bearer_token_env_var`: environment variable `EMPTY` is not set"),
        ),
        (
            r#"{"command": "x", "envFile": "/definitely/missing.env"}"#,
            Err("server `a`: field `envFile`: /definitely/missing.env cannot be read"),
        ),
    ];
    for (entry, expect) in rows {
        check_resolve(entry, host, *expect);
    }
}

#[test]
fn env_precedence_is_env_vars_then_env_file_then_env() {
    let dir = tempfile::tempdir().unwrap();
    let env_file = dir.path().join("srv.env");
    std::fs::write(
        &env_file,
        "# from the file\nA=file\nB=file\nexport Q='quoted value'\n",
    )
    .unwrap();
    let text = j(
        r#""a": {"command": "x", "env_vars": ["A", "B", "C"], "envFile": "srv.env", "env": {"A": "explicit"}}"#,
    );
    let path = dir.path().join("mcp.json");
    let config = MCPConfig::from_str(&text, ConfigFormat::Json, &path, &none()).unwrap();
    let host: HostEnv = [("A", "host"), ("B", "host"), ("C", "host")]
        .into_iter()
        .collect();
    let ResolvedTransport::Stdio { env, .. } = config.servers["a"]
        .resolve(Path::new("/ws"), &host)
        .unwrap()
    else {
        panic!("stdio expected");
    };
    let want: BTreeMap<String, String> = [
        ("A", "explicit"),
        ("B", "file"),
        ("C", "host"),
        ("Q", "quoted value"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    assert_eq!(env, want);

    std::fs::write(&env_file, "A=1\nthis line is broken\n").unwrap();
    let err = config.servers["a"]
        .resolve(Path::new("/ws"), &host)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("server `a`: field `envFile`: ") && err.contains("line 2: expected KEY=value"),
        "{err}"
    );
}
