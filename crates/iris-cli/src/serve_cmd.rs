//! `iris serve`: the agent YAML (as the agent `default`) and any `--agent NAME=PATH`
//! served over HTTP by [`iris_serve`] until SIGINT, SIGTERM or SIGHUP; see
//! docs/serve.md.

use std::net::SocketAddr;
use std::path::PathBuf;

use iris_runner::{AgentConfig, HostRegistry, LoadedConfig};
use iris_serve::{Agents, DEFAULT_AGENT, ServeError, ServeOptions, Server};
use iris_tools_core::{CancellationSignal, codes};

use crate::output::err_line;
use crate::signals::Signals;
use crate::{Failure, cli_codes, interruptible};

/// `iris serve`'s flags.
#[derive(Debug, clap::Args)]
pub(crate) struct ServeArgs {
    /// The address to listen on; port 0 picks a free port (the address is printed on
    /// stderr). Another address than a loopback one needs --allow-remote and
    /// --token-env.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8800")]
    listen: SocketAddr,
    /// Another agent to serve, as NAME=PATH (repeatable); the --config YAML is `default`.
    #[arg(long = "agent", value_name = "NAME=PATH", value_parser = parse_agent)]
    agents: Vec<(String, PathBuf)>,
    /// Requests must carry `Authorization: Bearer <token>` with the token from this
    /// variable (compared in constant time, never printed).
    #[arg(long, value_name = "VAR")]
    token_env: Option<String>,
    /// Allow a non-loopback --listen address (it also needs --token-env).
    #[arg(long)]
    allow_remote: bool,
    /// The most requests one client address may have in progress (an open event
    /// stream counts until it closes); more get 429. Behind a reverse proxy the proxy
    /// is one client.
    #[arg(long, value_name = "N",
          default_value_t = u16::try_from(iris_serve::DEFAULT_MAX_PER_CLIENT).unwrap_or(u16::MAX),
          value_parser = clap::value_parser!(u16).range(1..))]
    max_per_client: u16,
}

/// `NAME=PATH`.
fn parse_agent(text: &str) -> Result<(String, PathBuf), String> {
    match text.split_once('=') {
        Some((name, path)) if !name.is_empty() && !path.is_empty() => {
            Ok((name.to_owned(), PathBuf::from(path)))
        }
        _ => Err(format!("`{text}` is not NAME=PATH")),
    }
}

fn failure(e: &ServeError) -> Failure {
    let exit = if e.code() == iris_serve::codes::SERVE_ADDRESS_REFUSED {
        2
    } else {
        3
    };
    Failure::new(exit, e.code(), e.to_string())
}

/// Serves until a signal; exits like every `iris` command ended by one (130, 143,
/// 129). The runs being driven get a few seconds to stop on their own; those still
/// going are left, their leases released, for another host to take over.
pub(crate) async fn serve(
    loaded: LoadedConfig,
    args: &ServeArgs,
    signals: &mut Signals,
) -> Result<u8, Failure> {
    let mut options = ServeOptions::new(args.listen)
        .allow_remote(args.allow_remote)
        .max_per_client(usize::from(args.max_per_client));
    if let Some(var) = &args.token_env {
        match std::env::var(var) {
            Ok(token) if !token.trim().is_empty() => {
                options = options.bearer_token(token).secret_vars([var.clone()]);
            }
            _ => {
                return Err(Failure::new(
                    3,
                    cli_codes::SERVE_TOKEN_MISSING,
                    format!("--token-env {var}: the variable is not set or empty"),
                ));
            }
        }
    }
    // The address is checked and bound before any agent starts anything.
    let bound = options.bind().await.map_err(|e| failure(&e))?;
    let addr = bound.local_addr().map_err(|e| failure(&e))?;
    let mut specs = vec![(DEFAULT_AGENT.to_owned(), loaded)];
    for (name, path) in &args.agents {
        // A file named on the command line is trusted, as --config is.
        let path = path.clone();
        let read = async {
            tokio::task::spawn_blocking(move || AgentConfig::load(path))
                .await
                .map_err(|e| {
                    Failure::new(3, codes::IO_ERROR, format!("the config reader failed: {e}"))
                })?
                .map_err(Failure::from)
        };
        specs.push((name.clone(), interruptible(signals, read).await?));
    }
    let build = async {
        Agents::build(specs, &HostRegistry::new())
            .await
            .map_err(|e| failure(&e))
    };
    let agents = interruptible(signals, build).await?;
    let names: Vec<String> = agents.names().map(str::to_owned).collect();
    let store = agents.store_description();
    let auth = match &args.token_env {
        Some(var) => format!("bearer token from ${var}"),
        None => "no token: any local process may call".to_owned(),
    };
    err_line(&format!(
        "iris: serving {} on http://{addr}/v1 (run store: {store}; {auth})",
        names.join(", ")
    ));
    let server = Server::new(agents, bound);
    let stop = CancellationSignal::new();
    let run = server.run(&stop);
    tokio::pin!(run);
    let (stopped, caught) = tokio::select! {
        stopped = &mut run => (stopped, None),
        caught = signals.recv() => {
            stop.cancel();
            (run.await, Some(caught))
        }
    };
    if !stopped.given_up.is_empty() {
        err_line(&format!(
            "iris: left {} running run(s) for another host, leases released: {}",
            stopped.given_up.len(),
            stopped.given_up.join(", ")
        ));
    }
    let closed = stopped.closed.map_err(|e| failure(&e));
    match caught {
        Some(caught) => {
            closed?;
            Err(Failure::interrupted(caught))
        }
        None => closed.map(|()| 0),
    }
}
