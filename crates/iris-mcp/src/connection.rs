//! One live connection to one server: connect, negotiate, list tools, close.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, ClientConfig, ClientJsonRpcMessage, ClientRequest, DiscoverRequest,
    DiscoverRequestParams, ElicitationCapability, ErrorCode, FormElicitationCapability,
    Implementation, JsonRpcMessage, NumberOrString, PaginatedRequestParams, ProtocolVersion,
    RequestMetaObject, ServerJsonRpcMessage, ServerResult, SubscriptionFilter, TASKS_EXTENSION_ID,
    UrlElicitationCapability,
};
use rmcp::service::{ClientInitializeError, ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::Transport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{Peer, RoleClient, ServiceError};
use serde_json::Value;

use crate::client::{IrisClient, ServerEvents};
use crate::config::{ResolvedTransport, TransportKind};
use crate::error::codes;
use crate::redact::Redactor;
use crate::transport::stdio::{StdioProcess, StdioSpawn};
use crate::transport::{Diagnostics, sse, stand_in_code, stdio};

/// How long the 2026-07-28 `subscriptions/listen` stream may take to be acknowledged.
const LISTEN_ACK_TIMEOUT: Duration = Duration::from_secs(10);

/// Pages of `tools/list` followed before giving up on a server that never ends.
pub(crate) const MAX_TOOL_PAGES: usize = 1000;

/// Why a server did not start: a stable code and a one-line message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StartupError {
    pub(crate) code: &'static str,
    pub(crate) message: String,
    /// The message says all there is: the server was reached and answered badly, so
    /// the process state and stderr add nothing.
    pub(crate) complete: bool,
}

impl StartupError {
    pub(crate) fn failed(message: impl Into<String>) -> Self {
        Self {
            code: codes::MCP_STARTUP_FAILED,
            message: message.into(),
            complete: false,
        }
    }

    pub(crate) fn complete(mut self) -> Self {
        self.complete = true;
        self
    }
}

type Service = RunningService<RoleClient, IrisClient>;

/// How a call that is given up on is withdrawn from the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CancelMode {
    /// A stateful session: `notifications/cancelled` names the request.
    Notification,
    /// A stateless (2026-07-28) streamable-HTTP exchange: the request's response
    /// stream is closed, which is how that revision cancels.
    StreamClosed,
}

impl CancelMode {
    /// The value of a result's `cancellation` detail.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            CancelMode::Notification => "notifications/cancelled",
            CancelMode::StreamClosed => "request_stream_closed",
        }
    }
}

/// A connected, negotiated server.
#[derive(Debug)]
pub(crate) struct Connection {
    pub(crate) server: String,
    pub(crate) kind: TransportKind,
    pub(crate) peer: Peer<RoleClient>,
    /// The protocol revision actually in use.
    pub(crate) protocol: String,
    /// Whether the session began with `server/discover` (2026-07-28), not `initialize`.
    pub(crate) modern: bool,
    /// `serverInfo` name and version, when the server sent them.
    pub(crate) server_info: Option<(String, String)>,
    pub(crate) process: Option<Arc<StdioProcess>>,
    pub(crate) diagnostics: Diagnostics,
    service: tokio::sync::Mutex<Option<Service>>,
    /// The `subscriptions/listen` stream that carries list changes on a 2026-07-28
    /// session, read by a task that ends with the session.
    listener: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// Where a connection attempt keeps what outlives a startup timeout: the process (so
/// its stderr explains the failure and it can be ended) and the diagnostics.
#[derive(Debug, Clone, Default)]
pub(crate) struct Attempt {
    pub(crate) process: Arc<Mutex<Option<Arc<StdioProcess>>>>,
    pub(crate) diagnostics: Diagnostics,
}

impl Attempt {
    /// An attempt whose messages pass through `redactor`.
    pub(crate) fn new(redactor: Redactor) -> Self {
        Self::with_diagnostics(Diagnostics::new(redactor))
    }

    /// An attempt that reports into existing diagnostics (a restart).
    pub(crate) fn with_diagnostics(diagnostics: Diagnostics) -> Self {
        Self {
            process: Arc::default(),
            diagnostics,
        }
    }

    /// The server's redactor.
    pub(crate) fn redactor(&self) -> &Redactor {
        self.diagnostics.redactor()
    }

    pub(crate) fn process(&self) -> Option<Arc<StdioProcess>> {
        self.process
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// `message` plus what the process and transport said, for a startup failure.
    pub(crate) async fn explain(&self, message: &str) -> String {
        let mut out = message.to_owned();
        if let Some(process) = self.process() {
            // A server that died during startup usually did so a moment before the
            // handshake noticed; give the reaper that moment so the status is known.
            process.wait_exit(Duration::from_secs(2)).await;
            out.push_str("; ");
            out.push_str(&process.describe());
        }
        if let Some(first) = self.diagnostics.snapshot().first() {
            out.push_str("; ");
            out.push_str(first);
        }
        out
    }
}

/// What Iris declares: form and URL elicitation (answered by the host of the call,
/// or declined with a reason when there is none) and the tasks extension (a task
/// is polled to completion within the call's deadline).
fn client_info() -> ClientConfig {
    let mut capabilities = ClientCapabilities::default();
    capabilities.elicitation = Some(
        ElicitationCapability::new()
            .with_form(FormElicitationCapability::default())
            .with_url(UrlElicitationCapability::default()),
    );
    capabilities
        .extensions
        .get_or_insert_with(Default::default)
        .insert(TASKS_EXTENSION_ID.to_owned(), Default::default());
    ClientConfig::new(
        capabilities,
        Implementation::new("iris", env!("CARGO_PKG_VERSION")),
    )
}

/// The id of Iris's own `server/discover` probe; rmcp numbers its requests, so a
/// string id never clashes with them.
const PROBE_ID: &str = "iris-discover-probe";

fn is_probe_answer(msg: &ServerJsonRpcMessage) -> bool {
    let probe = NumberOrString::String(PROBE_ID.into());
    match msg {
        JsonRpcMessage::Response(r) => r.id == probe,
        JsonRpcMessage::Error(e) => e.id.as_ref() == Some(&probe),
        _ => false,
    }
}

/// Asks the server which protocol it speaks and picks rmcp's lifecycle mode: the
/// newest revision through `server/discover` when the server lists it, else the
/// `initialize` handshake (a legacy server answers the probe with an error).
///
/// The probe waits for its answer as long as startup may take (the caller bounds
/// it with `startup_timeout_sec`): a slow answer is not a legacy server. A server
/// that already accepted the discover has switched to 2026-07-28 and refuses a
/// later `initialize` (`-32022`), so `initialize` is sent only after the server
/// answered the probe with an error. rmcp's own `Auto` mode gives up after a fixed
/// 10 s and then sends `initialize` on the same connection, which is exactly the
/// failure a Python server starting on a loaded machine produced.
async fn negotiate<T: Transport<RoleClient>>(
    transport: &mut T,
) -> Result<(ClientLifecycleMode, ClientConfig), StartupError> {
    let client = client_info();
    let meta = RequestMetaObject::with_client_context(
        ProtocolVersion::V_2026_07_28,
        client.client_info.clone(),
        client.capabilities.clone(),
    );
    let mut discover = DiscoverRequest::new(DiscoverRequestParams {});
    discover.extensions.insert(meta);
    let probe = NumberOrString::String(PROBE_ID.into());
    transport
        .send(ClientJsonRpcMessage::request(
            ClientRequest::DiscoverRequest(discover),
            probe,
        ))
        .await
        .map_err(|e| StartupError::failed(format!("sending server/discover failed: {e}")))?;
    let answer = loop {
        let Some(msg) = transport.receive().await else {
            return Err(StartupError::failed(
                "the connection closed before the server answered",
            ));
        };
        if is_probe_answer(&msg) {
            break msg;
        }
        // Log notifications and the like before the handshake are dropped, as
        // rmcp's handshake does.
    };
    let modern = |versions: &[ProtocolVersion]| versions.contains(&ProtocolVersion::V_2026_07_28);
    let mut legacy_client = client.clone();
    legacy_client.protocol_version = ProtocolVersion::LATEST_WITH_INITIALIZE;
    let discover_mode = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    match answer {
        JsonRpcMessage::Response(r) => match r.result {
            ServerResult::DiscoverResult(d) if modern(&d.supported_versions) => {
                Ok((discover_mode, client))
            }
            ServerResult::DiscoverResult(d)
                if !d
                    .supported_versions
                    .iter()
                    .any(ProtocolVersion::has_initialize) =>
            {
                Err(StartupError::failed(format!(
                    "the server speaks none of the protocol revisions iris does (it listed {})",
                    d.supported_versions
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
                .complete())
            }
            _ => Ok((ClientLifecycleMode::Initialize, legacy_client)),
        },
        JsonRpcMessage::Error(e) => {
            let error = e.error;
            if let Some(code) = stand_in_code(&error) {
                return Err(StartupError {
                    code,
                    message: format!("server/discover: {}", error.message),
                    complete: true,
                });
            }
            // A 2026-07-28 server that refuses this client (a header mismatch, a
            // missing capability) is not a legacy server: `initialize` would only
            // be refused too.
            if error.code == ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
                || error.code == ErrorCode::HEADER_MISMATCH
            {
                return Err(StartupError::failed(format!(
                    "the server refused server/discover (JSON-RPC {}): {}",
                    error.code.0, error.message
                ))
                .complete());
            }
            Ok((ClientLifecycleMode::Initialize, legacy_client))
        }
        _ => Ok((ClientLifecycleMode::Initialize, legacy_client)),
    }
}

/// Negotiates, then hands the transport to rmcp's client service.
async fn serve<T: Transport<RoleClient> + 'static>(
    server: &str,
    mut transport: T,
    events: &ServerEvents,
    diagnostics: &Diagnostics,
) -> Result<Service, StartupError> {
    let (mode, info) = negotiate(&mut transport).await?;
    let client = IrisClient {
        server: server.to_owned(),
        info,
        events: events.clone(),
        diagnostics: diagnostics.clone(),
    };
    client
        .serve_with_lifecycle(transport, mode)
        .await
        .map_err(|e| match &e {
            ClientInitializeError::JsonRpcError(data) => match stand_in_code(data) {
                Some(code) => StartupError {
                    code,
                    message: format!("the handshake: {}", data.message),
                    complete: true,
                },
                None => StartupError::failed(format!("handshake failed: {e}")),
            },
            _ => StartupError::failed(format!("handshake failed: {e}")),
        })
}

/// Connects and negotiates. `attempt` receives the process as soon as it exists;
/// `events` receives the session's progress and catalog notifications.
pub(crate) async fn connect(
    server: &str,
    transport: ResolvedTransport,
    max_message_bytes: usize,
    attempt: &Attempt,
    events: &ServerEvents,
) -> Result<Connection, StartupError> {
    let diagnostics = attempt.diagnostics.clone();
    let (service, kind, process) = match transport {
        ResolvedTransport::Stdio {
            command,
            args,
            cwd,
            env,
            sandbox,
        } => {
            if !cwd.is_dir() {
                return Err(StartupError::failed(format!(
                    "the working directory {} does not exist",
                    cwd.display()
                )));
            }
            let spec = StdioSpawn {
                server: server.to_owned(),
                command: command.clone(),
                args,
                cwd,
                env,
                max_message_bytes,
                sandbox,
            };
            let (transport, process) = stdio::spawn(&spec, diagnostics.clone())
                .await
                .map_err(|e| StartupError::failed(format!("cannot start `{command}`: {e}")))?;
            *attempt
                .process
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(Arc::clone(&process));
            let service = serve(server, transport, events, &diagnostics).await?;
            (service, TransportKind::Stdio, Some(process))
        }
        ResolvedTransport::Http {
            kind: TransportKind::Sse,
            url,
            headers,
        } => {
            let transport = sse::connect(
                server,
                &url,
                &headers,
                max_message_bytes,
                diagnostics.clone(),
            )
            .await
            .map_err(StartupError::failed)?;
            let service = serve(server, transport, events, &diagnostics).await?;
            (service, TransportKind::Sse, None)
        }
        ResolvedTransport::Http { url, headers, .. } => {
            let transport = streamable_http(&url, &headers, max_message_bytes)?;
            let service = serve(server, transport, events, &diagnostics).await?;
            (service, TransportKind::StreamableHttp, None)
        }
    };
    let peer = service.peer().clone();
    let info = peer.peer_info();
    let protocol = info
        .as_ref()
        .map(|i| i.protocol_version.to_string())
        .unwrap_or_default();
    let modern = info
        .as_ref()
        .is_some_and(|i| !i.protocol_version.has_initialize());
    let server_info = info
        .as_ref()
        .and_then(|i| i.server_info.as_ref())
        .map(|s| (s.name.clone(), s.version.clone()));
    let lists_changes = info.as_ref().is_some_and(|i| {
        i.capabilities
            .tools
            .as_ref()
            .is_some_and(|t| t.list_changed == Some(true))
    });
    let connection = Connection {
        server: server.to_owned(),
        kind,
        peer,
        protocol,
        modern,
        server_info,
        process,
        diagnostics,
        service: tokio::sync::Mutex::new(Some(service)),
        listener: Mutex::new(None),
    };
    if modern && lists_changes {
        connection.listen_for_changes(events).await;
    }
    Ok(connection)
}

fn streamable_http(
    url: &str,
    headers: &BTreeMap<String, String>,
    max_message_bytes: usize,
) -> Result<StreamableHttpClientTransport<reqwest::Client>, StartupError> {
    let custom = sse::header_map(headers)
        .map_err(StartupError::failed)?
        .into_iter()
        .filter_map(|(name, value)| name.map(|n| (n, value)))
        .collect();
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned())
        .custom_headers(custom)
        .max_sse_event_size(max_message_bytes)
        .max_json_response_size(max_message_bytes)
        // A server that forgets a session (a restart) gets a fresh handshake and the
        // failed request is retried once.
        .reinit_on_expired_session(true);
    Ok(StreamableHttpClientTransport::from_config(config))
}

/// The code and message of a request whose answer was dropped before it reached rmcp:
/// a stand-in error from this crate's transports, or rmcp's streamable HTTP client
/// refusing a response over the cap or one it could not parse. `None` for any other
/// failure.
pub(crate) fn dropped_answer(e: &ServiceError) -> Option<(&'static str, String)> {
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    match e {
        ServiceError::McpError(data) => stand_in_code(data).map(|c| (c, data.message.to_string())),
        ServiceError::TransportSend(t) => {
            let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(t.error.as_ref());
            while let Some(current) = cause {
                match current.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
                    Some(StreamableHttpError::ResponseBodyTooLarge { max_size }) => {
                        return Some((
                            codes::MCP_RESPONSE_TOO_LARGE,
                            format!(
                                "the server's answer is larger than {max_size} bytes (the message cap); it was dropped"
                            ),
                        ));
                    }
                    Some(StreamableHttpError::Deserialize(e)) => {
                        return Some((
                            codes::MCP_RESPONSE_INVALID,
                            format!(
                                "the server's answer is not valid JSON-RPC ({e}); it was dropped"
                            ),
                        ));
                    }
                    Some(StreamableHttpError::UnexpectedServerResponse(m))
                        if m.starts_with("could not parse JSON response") =>
                    {
                        let reason = m.split(": ").nth(1).unwrap_or("unreadable");
                        return Some((
                            codes::MCP_RESPONSE_INVALID,
                            format!(
                                "the server's answer is not valid JSON-RPC ({reason}); it was dropped"
                            ),
                        ));
                    }
                    _ => {}
                }
                cause = current.source();
            }
            None
        }
        _ => None,
    }
}

/// The HTTP status of a request the server refused for its credentials (401 or
/// 403, with or without a `WWW-Authenticate` challenge), or `None`.
pub(crate) fn auth_rejected(e: &ServiceError) -> Option<u16> {
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    let ServiceError::TransportSend(t) = e else {
        return None;
    };
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(t.error.as_ref());
    while let Some(current) = cause {
        match current.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            Some(StreamableHttpError::AuthRequired(_)) => return Some(401),
            Some(StreamableHttpError::InsufficientScope(_)) => return Some(403),
            Some(StreamableHttpError::UnexpectedServerResponse(m)) => {
                for status in [401, 403] {
                    if m.starts_with(&format!("HTTP {status}")) {
                        return Some(status);
                    }
                }
            }
            _ => {}
        }
        cause = current.source();
    }
    None
}

/// Why a request failed without reaching the server (streamable HTTP could not
/// connect), or `None` when it may have been delivered.
pub(crate) fn undelivered(e: &ServiceError) -> Option<String> {
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    let ServiceError::TransportSend(t) = e else {
        return None;
    };
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(t.error.as_ref());
    while let Some(current) = cause {
        if let Some(StreamableHttpError::Client(client)) =
            current.downcast_ref::<StreamableHttpError<reqwest::Error>>()
            && client.is_connect()
        {
            return Some(format!("cannot connect to the server ({client})"));
        }
        if let Some(client) = current.downcast_ref::<reqwest::Error>()
            && client.is_connect()
        {
            return Some(format!("cannot connect to the server ({client})"));
        }
        cause = current.source();
    }
    None
}

/// A one-line description of a transport failure, for an error message.
pub(crate) fn transport_failure(e: &ServiceError) -> String {
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    let mut text = match e {
        ServiceError::TransportSend(t) => {
            match t
                .error
                .downcast_ref::<StreamableHttpError<reqwest::Error>>()
            {
                // The HTTP client's own words, with their causes ("connection closed
                // before message completed"), not rmcp's wrapper type names.
                Some(StreamableHttpError::Client(client)) => {
                    let mut out = client.to_string();
                    let mut cause = std::error::Error::source(client);
                    while let Some(c) = cause {
                        out.push_str(": ");
                        out.push_str(&c.to_string());
                        cause = c.source();
                    }
                    out
                }
                Some(other) => other.to_string(),
                None => t.error.to_string(),
            }
        }
        other => other.to_string(),
    };
    text = text.lines().next().unwrap_or_default().trim().to_owned();
    text
}

impl Connection {
    /// The server's redactor: every message about it passes through this.
    pub(crate) fn redactor(&self) -> &Redactor {
        self.diagnostics.redactor()
    }

    /// Whether the session can still carry a request: the transport is open and,
    /// for stdio, the process has not exited (the stream may not have noticed yet).
    pub(crate) fn is_alive(&self) -> bool {
        !self.peer.is_transport_closed()
            && self
                .process
                .as_ref()
                .is_none_or(|p| p.exit_status().is_none())
    }

    /// How a call on this session is withdrawn.
    pub(crate) fn cancel_mode(&self) -> CancelMode {
        if self.kind == TransportKind::StreamableHttp && self.modern {
            CancelMode::StreamClosed
        } else {
            CancelMode::Notification
        }
    }

    /// Opens the 2026-07-28 `subscriptions/listen` stream for tool-list changes and
    /// reads it in a task until the session ends. On earlier revisions the change
    /// arrives as a plain notification instead (see [`IrisClient`]).
    async fn listen_for_changes(&self, events: &ServerEvents) {
        let filter = SubscriptionFilter::builder().tools_list_changed().build();
        // A server that advertises list changes but never acknowledges the stream
        // must not hold startup up to its timeout.
        let listen = tokio::time::timeout(LISTEN_ACK_TIMEOUT, self.peer.listen(filter));
        let outcome = match listen.await {
            Ok(outcome) => outcome.map_err(|e| e.to_string()),
            Err(_) => Err(format!(
                "no acknowledgment within {}s",
                LISTEN_ACK_TIMEOUT.as_secs()
            )),
        };
        match outcome {
            Ok(mut subscription) => {
                let events = events.clone();
                let server = self.server.clone();
                let task = tokio::spawn(async move {
                    loop {
                        match subscription.next().await {
                            Ok(Some(
                                rmcp::model::ServerNotification::ToolListChangedNotification(_),
                            )) => events.tools_changed(),
                            Ok(Some(_)) => {}
                            Ok(None) => break,
                            Err(e) => {
                                tracing::debug!(server = %server, error = %e, "the list-changes subscription ended");
                                break;
                            }
                        }
                    }
                });
                *self.listener.lock().unwrap_or_else(PoisonError::into_inner) = Some(task);
            }
            Err(e) => {
                self.diagnostics.push(&format!(
                    "subscriptions/listen for tool-list changes failed ({e}); the catalog will not follow the server's changes"
                ));
            }
        }
    }

    /// Every tool of the server as raw JSON, following `nextCursor` to the end.
    pub(crate) async fn list_tools(&self) -> Result<Vec<Value>, StartupError> {
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen = BTreeSet::new();
        for _ in 0..MAX_TOOL_PAGES {
            let params = cursor
                .clone()
                .map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
            let page =
                self.peer
                    .list_tools(params)
                    .await
                    .map_err(|e| match dropped_answer(&e) {
                        Some((code, message)) => StartupError {
                            code,
                            message: format!("tools/list: {message}"),
                            complete: true,
                        },
                        None => StartupError::failed(format!("tools/list failed: {e}")).complete(),
                    })?;
            for tool in &page.tools {
                tools.push(serde_json::to_value(tool).map_err(|e| {
                    StartupError::failed(format!("tools/list returned a bad tool: {e}"))
                })?);
            }
            match page.next_cursor {
                None => return Ok(tools),
                Some(next) => {
                    if !seen.insert(next.clone()) {
                        return Err(StartupError::failed(format!(
                            "tools/list pagination does not end: cursor `{next}` came back twice"
                        ))
                        .complete());
                    }
                    cursor = Some(next);
                }
            }
        }
        Err(StartupError::failed(format!(
            "tools/list pagination did not end within {MAX_TOOL_PAGES} pages"
        ))
        .complete())
    }

    /// Why calls fail once the connection is gone: the process's end and stderr.
    pub(crate) fn describe_closed(&self) -> String {
        match &self.process {
            Some(p) => p.describe(),
            None => "the connection to the server is closed".to_owned(),
        }
    }

    /// The captured stderr of a stdio server (empty for HTTP).
    pub(crate) fn stderr_tail(&self) -> String {
        self.process
            .as_ref()
            .map(|p| p.stderr_tail())
            .unwrap_or_default()
    }

    /// Ends the session and, for stdio, the process group.
    pub(crate) async fn close(&self) {
        if let Some(task) = self
            .listener
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            task.abort();
        }
        let service = self.service.lock().await.take();
        if let Some(service) = service {
            // Cancelling closes the transport (stdin EOF for stdio, stream aborted
            // for SSE, session DELETE for streamable HTTP).
            let _ = tokio::time::timeout(Duration::from_secs(5), service.cancel()).await;
        }
        if let Some(process) = &self.process {
            process.shutdown().await;
        }
    }
}
