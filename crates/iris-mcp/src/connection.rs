//! One live connection to one server: connect, negotiate, list tools, close.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, ClientConfig, ClientJsonRpcMessage, ClientRequest, DiscoverRequest,
    DiscoverRequestParams, Implementation, JsonRpcMessage, NumberOrString, PaginatedRequestParams,
    ProtocolVersion, RequestMetaObject, ServerJsonRpcMessage, ServerResult,
};
use rmcp::service::{ClientInitializeError, ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::Transport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{Peer, RoleClient, ServiceError};
use serde_json::Value;

use crate::config::{ResolvedTransport, TransportKind};
use crate::error::codes;
use crate::redact::Redactor;
use crate::transport::stdio::{StdioProcess, StdioSpawn};
use crate::transport::{Diagnostics, sse, stand_in_code, stdio};

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

type Service = RunningService<RoleClient, ClientConfig>;

/// A connected, negotiated server.
#[derive(Debug)]
pub(crate) struct Connection {
    pub(crate) server: String,
    pub(crate) kind: TransportKind,
    pub(crate) peer: Peer<RoleClient>,
    /// The protocol revision actually in use.
    pub(crate) protocol: String,
    /// `serverInfo` name and version, when the server sent them.
    pub(crate) server_info: Option<(String, String)>,
    pub(crate) process: Option<Arc<StdioProcess>>,
    pub(crate) diagnostics: Diagnostics,
    service: tokio::sync::Mutex<Option<Service>>,
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
        Self {
            process: Arc::default(),
            diagnostics: Diagnostics::new(redactor),
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

fn client_info() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("iris", env!("CARGO_PKG_VERSION")),
    )
}

/// The id of Iris's own `server/discover` probe; rmcp numbers its requests, so a
/// string id never clashes with them.
const PROBE_ID: &str = "iris-discover-probe";

/// How long the probe waits before assuming a legacy server that ignores unknown
/// methods: half the startup budget, at least 10 s (rmcp's own probe timeout).
fn probe_timeout(startup: Duration) -> Duration {
    (startup / 2).max(Duration::from_secs(10))
}

/// A transport that hides the answer to an abandoned probe. rmcp's handshake treats
/// any response it did not ask for as fatal, so a discover answer that arrives after
/// the probe gave up must never reach it.
#[derive(Debug)]
struct ProbeFilter<T> {
    inner: T,
    drop_probe_answer: bool,
}

fn is_probe_answer(msg: &ServerJsonRpcMessage) -> bool {
    let probe = NumberOrString::String(PROBE_ID.into());
    match msg {
        JsonRpcMessage::Response(r) => r.id == probe,
        JsonRpcMessage::Error(e) => e.id.as_ref() == Some(&probe),
        _ => false,
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for ProbeFilter<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        loop {
            let msg = self.inner.receive().await?;
            if self.drop_probe_answer && is_probe_answer(&msg) {
                self.drop_probe_answer = false;
                continue;
            }
            return Some(msg);
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// Asks the server which protocol it speaks and picks rmcp's lifecycle mode: the
/// newest revision through `server/discover` when the server lists it, else the
/// `initialize` handshake (a legacy server answers the probe with an error).
///
/// rmcp's own `Auto` mode does this too, but gives up after a fixed 10 s and then
/// fails on the late answer; a Python server starting on a loaded machine easily
/// takes that long.
async fn negotiate<T: Transport<RoleClient>>(
    transport: &mut ProbeFilter<T>,
    startup: Duration,
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
    let answer = async {
        loop {
            let msg = transport.inner.receive().await?;
            if is_probe_answer(&msg) {
                return Some(msg);
            }
            // Log notifications and the like before the handshake are dropped, as
            // rmcp's handshake does.
        }
    };
    let modern = |versions: &[ProtocolVersion]| versions.contains(&ProtocolVersion::V_2026_07_28);
    let mut legacy_client = client.clone();
    legacy_client.protocol_version = ProtocolVersion::LATEST_WITH_INITIALIZE;
    match tokio::time::timeout(probe_timeout(startup), answer).await {
        Ok(Some(JsonRpcMessage::Response(r))) => match r.result {
            ServerResult::DiscoverResult(d) if modern(&d.supported_versions) => Ok((
                ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                },
                client,
            )),
            _ => Ok((ClientLifecycleMode::Initialize, legacy_client)),
        },
        Ok(Some(_)) => Ok((ClientLifecycleMode::Initialize, legacy_client)),
        Ok(None) => Err(StartupError::failed(
            "the connection closed before the server answered",
        )),
        Err(_) => {
            transport.drop_probe_answer = true;
            Ok((ClientLifecycleMode::Initialize, legacy_client))
        }
    }
}

/// Negotiates, then hands the transport to rmcp's client service.
async fn serve<T: Transport<RoleClient> + 'static>(
    transport: T,
    startup: Duration,
) -> Result<Service, StartupError> {
    let mut transport = ProbeFilter {
        inner: transport,
        drop_probe_answer: false,
    };
    let (mode, client) = negotiate(&mut transport, startup).await?;
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

/// Connects and negotiates. `attempt` receives the process as soon as it exists.
pub(crate) async fn connect(
    server: &str,
    transport: ResolvedTransport,
    max_message_bytes: usize,
    startup: Duration,
    attempt: &Attempt,
) -> Result<Connection, StartupError> {
    let diagnostics = attempt.diagnostics.clone();
    let (service, kind, process) = match transport {
        ResolvedTransport::Stdio {
            command,
            args,
            cwd,
            env,
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
            };
            let (transport, process) = stdio::spawn(&spec, diagnostics.clone())
                .await
                .map_err(|e| StartupError::failed(format!("cannot start `{command}`: {e}")))?;
            *attempt
                .process
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(Arc::clone(&process));
            let service = serve(transport, startup).await?;
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
            let service = serve(transport, startup).await?;
            (service, TransportKind::Sse, None)
        }
        ResolvedTransport::Http { url, headers, .. } => {
            let transport = streamable_http(&url, &headers, max_message_bytes)?;
            let service = serve(transport, startup).await?;
            (service, TransportKind::StreamableHttp, None)
        }
    };
    let peer = service.peer().clone();
    let info = peer.peer_info();
    let protocol = info
        .as_ref()
        .map(|i| i.protocol_version.to_string())
        .unwrap_or_default();
    let server_info = info
        .as_ref()
        .and_then(|i| i.server_info.as_ref())
        .map(|s| (s.name.clone(), s.version.clone()));
    Ok(Connection {
        server: server.to_owned(),
        kind,
        peer,
        protocol,
        server_info,
        process,
        diagnostics,
        service: tokio::sync::Mutex::new(Some(service)),
    })
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

impl Connection {
    /// The server's redactor: every message about it passes through this.
    pub(crate) fn redactor(&self) -> &Redactor {
        self.diagnostics.redactor()
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
