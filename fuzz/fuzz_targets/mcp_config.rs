//! MCP config files (JSON, JSONC, TOML) as `iris_mcp::load_mcp_config` reads them,
//! from the text on: parse, server entries, overrides, `${VAR}` expansion when a
//! server is resolved, tool naming, and the dotenv parser `envFile` uses.
//!
//! Invariants: errors carry a stable `MCP_*` code and a message; overrides for the
//! declared servers keep the same servers; every server resolves or fails with a code;
//! every name the allocator hands out is a valid, unique tool name.
#![no_main]

use std::collections::BTreeSet;
use std::path::Path;

use iris_fuzz::{check_error, strict};
use iris_mcp::naming::NameAllocator;
use iris_mcp::{ConfigFormat, HostEnv, MCPConfig, McpOverrides, ServerOverride, ServerTransport};
use libfuzzer_sys::fuzz_target;

fn host() -> HostEnv {
    let mut host = HostEnv::default();
    host.set("HOME", "/home/fuzz");
    host.set("PATH", "/usr/bin:/bin");
    host.set("TOKEN", "secret-token");
    host.set("EMPTY", "");
    host
}

/// Overrides for the servers `config` declares (an override of an undeclared server is
/// an error of its own), so the merge path runs too.
fn overrides_for(config: &MCPConfig) -> McpOverrides {
    config
        .servers
        .keys()
        .enumerate()
        .map(|(i, name)| {
            let over = match i % 3 {
                0 => ServerOverride {
                    required: Some(false),
                    trust_annotations: Some(true),
                    sandbox: Some(true),
                    startup_timeout_sec: Some(5.0),
                    tool_timeout_sec: Some(1.5),
                    tool_max_sec: Some(3.0),
                },
                1 => ServerOverride {
                    tool_timeout_sec: Some(1e9),
                    tool_max_sec: Some(0.5),
                    ..Default::default()
                },
                _ => ServerOverride::default(),
            };
            (name.clone(), over)
        })
        .collect()
}

fn check_config(config: &MCPConfig, host: &HostEnv) {
    let workspace = Path::new("/fuzz/workspace");
    let mut allocator = NameAllocator::new(["read_file".to_owned()]);
    let mut names = BTreeSet::new();
    for (key, server) in &config.servers {
        assert_eq!(key, &server.name, "servers are keyed by their raw name");
        if strict() {
            // "Positive" seconds that round to a zero deadline time every call out.
            assert!(
                !server.tool_timeout.is_zero() && !server.startup_timeout.is_zero(),
                "server `{key}`: a positive timeout became zero: {:?} / {:?}",
                server.startup_timeout,
                server.tool_timeout
            );
        }
        // `envFile` reads a file: leave it out so an input cannot name a device.
        let reads_file =
            matches!(&server.transport, ServerTransport::Stdio(s) if s.env_file.is_some());
        if !reads_file && let Err(e) = server.resolve(workspace, host) {
            check_error(e.code(), &e.to_string());
        }
        let tools = server
            .enabled_tools
            .iter()
            .flatten()
            .chain(&server.disabled_tools)
            .map(String::as_str)
            .chain(["get_current_time"]);
        for tool in tools {
            let name = allocator.allocate(&server.name, tool);
            if let Err(reason) = iris_tools_core::definition::check_tool_name(&name) {
                panic!(
                    "allocated name {name:?} for ({:?}, {tool:?}) is invalid: {reason}",
                    server.name
                );
            }
            assert!(names.insert(name.clone()), "name {name:?} allocated twice");
            assert_ne!(name, "read_file", "a taken name was handed out");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    // The loader reads the file as UTF-8 text; anything else never reaches the parser.
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let host = host();
    for (format, path) in [
        (ConfigFormat::Json, "/fuzz/workspace/.mcp.json"),
        (ConfigFormat::Toml, "/fuzz/workspace/.codex/config.toml"),
    ] {
        let config = match MCPConfig::from_str(text, format, path, &McpOverrides::new()) {
            Ok(config) => config,
            Err(e) => {
                assert_eq!(e.code(), iris_mcp::codes::MCP_INVALID_CONFIG);
                check_error(e.code(), &e.to_string());
                continue;
            }
        };
        check_config(&config, &host);
        // Again with overrides for its servers: they merge, or fail with a code.
        match MCPConfig::from_str(text, format, path, &overrides_for(&config)) {
            Ok(merged) => {
                assert_eq!(
                    merged.servers.keys().collect::<Vec<_>>(),
                    config.servers.keys().collect::<Vec<_>>()
                );
                check_config(&merged, &host);
            }
            Err(e) => {
                assert_eq!(e.code(), iris_mcp::codes::MCP_INVALID_CONFIG);
                check_error(e.code(), &e.to_string());
            }
        }
    }
    // The same text as a `${VAR}` expression and as an `envFile`.
    if let Err(message) = iris_mcp::env::expand(text, &host) {
        check_error("MCP_INVALID_CONFIG", &message);
    }
    match iris_mcp::env::parse_dotenv(text) {
        Ok(vars) => {
            for name in vars.keys() {
                assert!(
                    iris_mcp::env::is_var_name(name),
                    "dotenv kept the bad name {name:?}"
                );
            }
        }
        Err(message) => check_error("MCP_INVALID_CONFIG", &message),
    }
});
