//! `iris mcp list` and `iris mcp serve`.

#[allow(clippy::wildcard_imports)] // The shell's shared types and imports.
use crate::*;

/// `iris mcp list`: every configured server (transport, status, required, protocol,
/// tool count), the published tools and the diagnostics, from the catalog snapshot.
pub(crate) fn mcp_list(cli: &Cli, env: &ToolEnvironment) -> Result<u8, Failure> {
    let Some(snapshot) = env.mcp_snapshot() else {
        if cli.json {
            print_json(
                &json!({"configured": false, "servers": [], "tools": [], "diagnostics": []}),
            );
        } else {
            line("no MCP servers are configured (set mcp.path)");
        }
        return Ok(0);
    };
    // The snapshot is Serialize; reading it back as JSON prints exactly what --json
    // shows.
    let mut value = serde_json::to_value(&*snapshot).unwrap_or_default();
    if cli.json {
        value["configured"] = json!(true);
        print_json(&value);
        return Ok(0);
    }
    // Every value may come from the MCP file or the server: escaped before padding.
    let text = |v: &Value| match v {
        Value::String(s) => cell(s),
        Value::Null => "-".to_owned(),
        other => cell(&other.to_string()),
    };
    let rows = |key: &str| value[key].as_array().cloned().unwrap_or_default();
    line(&format!(
        "{:<16} {:<10} {:<9} {:<9} {:<12} TOOLS",
        "SERVER", "TRANSPORT", "STATUS", "REQUIRED", "PROTOCOL"
    ));
    for s in rows("servers") {
        line(&format!(
            "{:<16} {:<10} {:<9} {:<9} {:<12} {}",
            text(&s["name"]),
            text(&s["transport"]),
            text(&s["status"]),
            if s["required"] == true { "yes" } else { "no" },
            text(&s["protocol_version"]),
            text(&s["tool_count"]),
        ));
    }
    let tools: Vec<(String, String, String)> = rows("tools")
        .iter()
        .map(|t| {
            let mut flags = Vec::new();
            if t["read_only"] == true {
                flags.push("read-only");
            }
            if t["deferred"] == true {
                flags.push("deferred");
            }
            let wire = format!("{}/{}", text(&t["server"]), text(&t["wire_name"]));
            (text(&t["name"]), wire, flags.join(","))
        })
        .collect();
    line("");
    line(&format!("tools ({}):", tools.len()));
    let width = tools
        .iter()
        .map(|(name, _, _)| name.chars().count())
        .max()
        .unwrap_or(0);
    for (name, wire, flags) in &tools {
        line(&format!("  {name:<width$}  {wire:<24}  {flags}"));
    }
    let diagnostics = rows("diagnostics");
    line("");
    line(&format!("diagnostics ({}):", diagnostics.len()));
    for d in &diagnostics {
        line(&format!(
            "  {} server `{}` {}: {}",
            text(&d["severity"]),
            text(&d["server"]),
            text(&d["code"]),
            text(&d["message"])
        ));
    }
    Ok(0)
}

/// How `iris mcp serve` serves, from its flags.
#[derive(Debug)]
pub(crate) enum ServePlan {
    Stdio,
    Http {
        options: HttpOptions,
        /// The variable the token came from, for the startup line.
        token_env: Option<String>,
    },
}

/// `None` for every other command; the token is read from its variable here.
pub(crate) fn serve_plan(command: &Command) -> Result<Option<ServePlan>, Failure> {
    let Command::Mcp {
        command:
            McpCommand::Serve {
                http,
                token_env,
                allow_remote,
            },
    } = command
    else {
        return Ok(None);
    };
    let Some(addr) = http else {
        return Ok(Some(ServePlan::Stdio));
    };
    let mut options = HttpOptions::new(*addr).allow_remote(*allow_remote);
    if let Some(var) = token_env {
        match std::env::var(var) {
            Ok(token) if !token.trim().is_empty() => options = options.bearer_token(token),
            _ => {
                return Err(Failure::new(
                    3,
                    cli_codes::SERVE_TOKEN_MISSING,
                    format!("--token-env {var}: the variable is not set or empty"),
                ));
            }
        }
    }
    options
        .check()
        .map_err(|e| Failure::new(2, e.code(), e.to_string()))?;
    Ok(Some(ServePlan::Http {
        options,
        token_env: token_env.clone(),
    }))
}

/// `iris mcp serve`: until stdin ends (stdio) or a signal cancels `cancel`.
pub(crate) async fn serve(
    plan: &ServePlan,
    env: &ToolEnvironment,
    cancel: &CancellationSignal,
) -> Result<u8, Failure> {
    let server = env.mcp_server();
    let failed = |e: iris_mcp::McpError| {
        let exit = if e.code() == iris_mcp::codes::MCP_SERVE_ADDRESS_REFUSED {
            2
        } else {
            3
        };
        Failure::new(exit, e.code(), e.to_string())
    };
    match plan {
        ServePlan::Stdio => {
            err_line("iris: serving MCP on stdio");
            server.serve_stdio(cancel).await.map_err(failed)?;
        }
        ServePlan::Http { options, token_env } => {
            let bound = server.bind_http(options.clone()).await.map_err(failed)?;
            let addr = bound.local_addr().map_err(failed)?;
            let auth = match token_env {
                Some(var) => format!(" (bearer token from ${var})"),
                None => " (no token: any local process may call)".to_owned(),
            };
            err_line(&format!(
                "iris: serving MCP on http://{addr}{}{auth}",
                iris_mcp::serve::MCP_PATH
            ));
            bound.run(cancel).await.map_err(failed)?;
        }
    }
    Ok(0)
}
