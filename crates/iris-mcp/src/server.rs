//! [`Server`]: one configured server across its sessions. A session that broke (a
//! stdio server that died, a stream that closed) is replaced on the next call, with
//! backoff after failed attempts; `close` ends whichever session is current.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use crate::client::ServerEvents;
use crate::config::{ResolvedTransport, TransportKind};
use crate::connection::{self, Attempt, Connection, StartupError};
use crate::transport::Diagnostics;

/// The wait after the first failed restart; it doubles with each further failure.
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// The longest wait between restart attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// How long to wait before the next attempt after `failures` failed restarts in a
/// row (none after a session simply broke: the next call restarts at once).
pub(crate) fn backoff(failures: u32) -> Duration {
    if failures == 0 {
        return Duration::ZERO;
    }
    let doublings = failures.saturating_sub(1).min(16);
    FIRST_BACKOFF
        .saturating_mul(1 << doublings)
        .min(MAX_BACKOFF)
}

#[derive(Debug, Default)]
struct RestartState {
    failures: u32,
    retry_at: Option<Instant>,
    last_error: Option<String>,
}

/// One server of the manager and its current session.
#[derive(Debug)]
pub(crate) struct Server {
    pub(crate) name: String,
    pub(crate) kind: TransportKind,
    /// The host variables its credentials come from.
    pub(crate) credential_vars: Vec<String>,
    /// How a session is started; a host's new credentials replace it
    /// ([`Server::replace_transport`]).
    transport: RwLock<ResolvedTransport>,
    /// Set when the transport was replaced: the current session (on the old
    /// credentials) is ended and a new one started on the next call.
    stale: AtomicBool,
    max_message_bytes: usize,
    startup_timeout: Duration,
    pub(crate) events: ServerEvents,
    pub(crate) diagnostics: Diagnostics,
    current: RwLock<Arc<Connection>>,
    /// The raw tools of the last `tools/list`, to notice a restarted server that
    /// lists different tools.
    listed: RwLock<Vec<Value>>,
    restart: tokio::sync::Mutex<RestartState>,
    restarts: AtomicU64,
    closed: AtomicBool,
}

/// Everything [`Server::new`] needs to start the server again.
#[derive(Debug)]
pub(crate) struct ServerSpec {
    pub(crate) name: String,
    pub(crate) credential_vars: Vec<String>,
    pub(crate) transport: ResolvedTransport,
    pub(crate) max_message_bytes: usize,
    pub(crate) startup_timeout: Duration,
    pub(crate) events: ServerEvents,
    pub(crate) diagnostics: Diagnostics,
}

impl Server {
    /// A server whose first session is `connection`, which listed `listed`.
    pub(crate) fn new(spec: ServerSpec, connection: Arc<Connection>, listed: Vec<Value>) -> Self {
        Self {
            name: spec.name,
            credential_vars: spec.credential_vars,
            kind: connection.kind,
            transport: RwLock::new(spec.transport),
            stale: AtomicBool::new(false),
            max_message_bytes: spec.max_message_bytes,
            startup_timeout: spec.startup_timeout,
            events: spec.events,
            diagnostics: spec.diagnostics,
            current: RwLock::new(connection),
            listed: RwLock::new(listed),
            restart: tokio::sync::Mutex::new(RestartState::default()),
            restarts: AtomicU64::new(0),
            closed: AtomicBool::new(false),
        }
    }

    /// The current session (which may have broken).
    pub(crate) fn current(&self) -> Arc<Connection> {
        Arc::clone(&self.current.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// How many times the session was replaced.
    pub(crate) fn restarts(&self) -> u64 {
        self.restarts.load(Ordering::Acquire)
    }

    /// The raw tools the server listed last.
    pub(crate) fn listed(&self) -> Vec<Value> {
        self.listed
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(crate) fn set_listed(&self, tools: Vec<Value>) {
        *self.listed.write().unwrap_or_else(PoisonError::into_inner) = tools;
    }

    /// Whether the manager closed this server.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// A live session: the current one, or a new one when it broke. `Err` says why
    /// there is none (closed, a restart failed, waiting out the backoff).
    pub(crate) async fn connection(&self) -> Result<Arc<Connection>, String> {
        if self.is_closed() {
            return Err("the MCP manager was closed".into());
        }
        let current = self.current();
        if current.is_alive() && !self.stale.load(Ordering::Acquire) {
            return Ok(current);
        }
        let mut state = self.restart.lock().await;
        if self.is_closed() {
            return Err("the MCP manager was closed".into());
        }
        let current = self.current();
        // New credentials: the session on the old ones ends, and the backoff of
        // failed restarts (a rejected token) does not hold the new one back.
        if self.stale.swap(false, Ordering::AcqRel) {
            *state = RestartState::default();
            current.close().await;
        } else if current.is_alive() {
            return Ok(current); // another call restarted it meanwhile
        }
        if let Some(at) = state.retry_at {
            let now = Instant::now();
            if now < at {
                return Err(format!(
                    "{}; the last restart failed ({}); the next attempt is in {:.1}s",
                    current.describe_closed(),
                    state.last_error.as_deref().unwrap_or("unknown"),
                    (at - now).as_secs_f64()
                ));
            }
        }
        // The broken session's process is reaped (and its group ended) first.
        current.close().await;
        let ended = current.describe_closed();
        match self.start_again().await {
            Ok((connection, tools)) => {
                let connection = Arc::new(connection);
                *self.current.write().unwrap_or_else(PoisonError::into_inner) =
                    Arc::clone(&connection);
                *state = RestartState::default();
                self.restarts.fetch_add(1, Ordering::AcqRel);
                let note = self.diagnostics.push_coded(
                    crate::codes::MCP_SERVER_RESTARTED,
                    &format!("the server was restarted after its session broke: {ended}"),
                );
                tracing::info!(server = %self.name, "{note}");
                if tools != self.listed() {
                    // The catalog follows on its next refresh; the tools are kept.
                    self.set_listed(tools);
                    self.events.tools_changed();
                }
                Ok(connection)
            }
            Err(e) => {
                state.failures = state.failures.saturating_add(1);
                state.retry_at = Some(Instant::now() + backoff(state.failures));
                let message = self.diagnostics.redactor().redact(&e.message);
                self.diagnostics.push_coded(
                    crate::codes::MCP_STARTUP_FAILED,
                    &format!("restarting the server failed: {message}"),
                );
                state.last_error = Some(message.clone());
                tracing::warn!(server = %self.name, error = %message, "restarting the MCP server failed");
                Err(format!("restarting the server failed: {message}"))
            }
        }
    }

    /// One startup like `prepare`'s: connect, negotiate, list tools, within the
    /// startup timeout; a process left by a failed attempt is ended.
    async fn start_again(&self) -> Result<(Connection, Vec<Value>), StartupError> {
        let attempt = Attempt::with_diagnostics(self.diagnostics.clone());
        let run = async {
            let transport = self
                .transport
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            let conn = connection::connect(
                &self.name,
                transport,
                self.max_message_bytes,
                &attempt,
                &self.events,
            )
            .await?;
            match conn.list_tools().await {
                Ok(tools) => Ok((conn, tools)),
                Err(e) => {
                    conn.close().await;
                    Err(e)
                }
            }
        };
        let outcome = match tokio::time::timeout(self.startup_timeout, run).await {
            Ok(Ok(ok)) => Ok(ok),
            Ok(Err(e)) if e.complete => Err(e),
            Ok(Err(e)) => Err(StartupError {
                code: e.code,
                message: attempt.explain(&e.message).await,
                complete: true,
            }),
            Err(_) => Err(StartupError {
                code: crate::codes::MCP_STARTUP_TIMEOUT,
                message: attempt
                    .explain(&format!(
                        "did not finish startup within {:.3}s",
                        self.startup_timeout.as_secs_f64()
                    ))
                    .await,
                complete: true,
            }),
        };
        if outcome.is_err()
            && let Some(process) = attempt.process()
        {
            process.shutdown().await;
        }
        outcome
    }

    /// Starts sessions with `transport` from now on (new credentials a host
    /// supplied); `secrets` are what it carries that must never be printed. The
    /// current session ends at the next call, which starts a new one at once.
    pub(crate) fn replace_transport(&self, transport: ResolvedTransport, secrets: Vec<String>) {
        self.diagnostics.redactor().add(secrets);
        *self
            .transport
            .write()
            .unwrap_or_else(PoisonError::into_inner) = transport;
        self.stale.store(true, Ordering::Release);
    }

    /// Ends the current session (and its process group); no restart follows.
    /// Waits for a restart in progress, so its process is ended too.
    pub(crate) async fn close(&self) {
        self.closed.store(true, Ordering::Release);
        let _state = self.restart.lock().await;
        self.current().close().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let secs: Vec<u64> = (0..9).map(|f| backoff(f).as_secs()).collect();
        assert_eq!(secs, [0, 1, 2, 4, 8, 16, 30, 30, 30]);
        assert_eq!(backoff(u32::MAX), MAX_BACKOFF);
    }
}
