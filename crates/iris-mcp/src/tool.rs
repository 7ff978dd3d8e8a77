//! [`McpTool`]: one server tool as an Iris [`Tool`].

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use iris_executor::ToolArtifactStore;
use iris_tools_core::{
    BoxFuture, ContentBlock, Tool, ToolDefinition, ToolErrorInfo, ToolExecutionContext, ToolInput,
    ToolOutput, codes as core_codes,
};
use rmcp::ServiceError;
use rmcp::model::CallToolRequestParams;
use serde_json::{Map, Value, json};

use crate::connection::{Connection, dropped_answer};
use crate::error::codes;

/// Image types projected to model content; others become a short text note.
pub const SUPPORTED_IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// Characters of the model text kept in the raw-result artifact's preview.
const ARTIFACT_PREVIEW_CHARS: usize = 200;

/// A tool of an MCP server, published under its Iris name and called by its raw wire
/// name.
///
/// Capabilities are `{mcp}`; [`Tool::is_read_only`] is true only when the server's
/// overrides set `trust_annotations` *and* the tool says `readOnlyHint: true`.
pub struct McpTool {
    definition: ToolDefinition,
    wire_name: String,
    read_only: bool,
    timeout: Duration,
    connection: Arc<Connection>,
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool")
            .field("name", &self.definition.name)
            .field("server", &self.connection.server)
            .field("wire_name", &self.wire_name)
            .field("read_only", &self.read_only)
            .finish_non_exhaustive()
    }
}

impl McpTool {
    pub(crate) fn new(
        definition: ToolDefinition,
        wire_name: String,
        read_only: bool,
        timeout: Duration,
        connection: Arc<Connection>,
    ) -> Self {
        Self {
            definition,
            wire_name,
            read_only,
            timeout,
            connection,
        }
    }

    /// The raw server name.
    pub fn server(&self) -> &str {
        &self.connection.server
    }

    /// The raw tool name the server knows.
    pub fn wire_name(&self) -> &str {
        &self.wire_name
    }

    /// The per-call deadline from `tool_timeout_sec`.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    async fn call(&self, input: ToolInput, ctx: &ToolExecutionContext) -> ToolOutput {
        // The arguments go to the server as they are: `validate_input` checked their
        // shape, and taking the value here moves it instead of copying it. The check
        // repeats only for a direct `Tool::run` (a cheap match, no parse).
        let arguments = match arguments(input.into_value()) {
            Ok(arguments) => arguments,
            Err(info) => return ToolOutput::error(info),
        };
        if self.connection.peer.is_transport_closed() {
            return self.closed_error();
        }
        let mut params = CallToolRequestParams::new(self.wire_name.clone());
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        // Inside the executor `ctx.tool_timeout` is the call's effective deadline; a
        // zero one never reaches a body there, so it is ignored here like an unset one.
        let deadline = match ctx.tool_timeout {
            Some(t) if !t.is_zero() => self.timeout.min(t),
            _ => self.timeout,
        };
        let peer = self.connection.peer.clone();
        // Dropping the call future (deadline, cancellation, or the executor's own
        // deadline dropping this body) makes rmcp send `notifications/cancelled`, so
        // the server stops working on an answer nobody will read.
        let call = tokio::time::timeout(deadline, peer.call_tool(params));
        let outcome = match &ctx.cancellation {
            Some(signal) => tokio::select! {
                r = call => r,
                () = signal.cancelled() => {
                    return ToolOutput::err(core_codes::CANCELLED, "the call was cancelled; the MCP server was told to stop");
                }
            },
            None => call.await,
        };
        match outcome {
            Err(_elapsed) => ToolOutput::error(
                ToolErrorInfo::new(
                    core_codes::TOOL_TIMEOUT,
                    format!(
                        "MCP tool `{}` on server `{}` did not answer within {:.3}s; the server was told to cancel the call",
                        self.wire_name,
                        self.connection.server,
                        deadline.as_secs_f64()
                    ),
                )
                .retryable(true)
                .with_detail("timeout_seconds", deadline.as_secs_f64()),
            ),
            Ok(Err(e)) => self.service_error(&e).await,
            Ok(Ok(result)) => match serde_json::to_value(&result) {
                Ok(raw) => self.project(raw, ctx),
                Err(e) => ToolOutput::err(
                    codes::MCP_REQUEST_FAILED,
                    format!("the MCP result could not be read: {e}"),
                ),
            },
        }
    }

    /// A failed call: `message` redacted (no secret of the server's config reaches
    /// the model or the user).
    fn failed(&self, code: &str, message: &str) -> ToolErrorInfo {
        ToolErrorInfo::new(code, self.connection.redactor().redact(message))
    }

    fn closed_error(&self) -> ToolOutput {
        let stderr = self
            .connection
            .redactor()
            .redact(&self.connection.stderr_tail());
        ToolOutput::error(
            self.failed(
                codes::MCP_CONNECTION_CLOSED,
                &format!(
                    "MCP server `{}` is not connected: {}",
                    self.connection.server,
                    self.connection.describe_closed()
                ),
            )
            .with_detail("server", self.connection.server.clone())
            .with_detail("stderr", stderr),
        )
    }

    async fn service_error(&self, e: &ServiceError) -> ToolOutput {
        if let Some((code, message)) = dropped_answer(e) {
            return ToolOutput::error(self.failed(
                code,
                &format!(
                    "MCP tool `{}` on server `{}`: {message}",
                    self.wire_name, self.connection.server
                ),
            ));
        }
        match e {
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                if let Some(process) = &self.connection.process {
                    // The stream usually closes a moment before the process is
                    // reaped; wait for that moment so the error can say how it ended.
                    process.wait_exit(Duration::from_secs(2)).await;
                }
                self.closed_error()
            }
            ServiceError::McpError(data) => ToolOutput::error(
                self.failed(
                    codes::MCP_REQUEST_FAILED,
                    &format!(
                        "MCP server `{}` rejected the call to `{}` (JSON-RPC {}): {}",
                        self.connection.server,
                        self.wire_name,
                        data.code.0,
                        one_line(&data.message)
                    ),
                )
                .with_detail("jsonrpc_code", data.code.0),
            ),
            other => ToolOutput::error(self.failed(
                codes::MCP_REQUEST_FAILED,
                &format!(
                    "the call to `{}` on MCP server `{}` failed: {}",
                    self.wire_name,
                    self.connection.server,
                    one_line(&other.to_string())
                ),
            )),
        }
    }

    /// Turns the raw `CallToolResult` JSON into a [`ToolOutput`]: content projected,
    /// `structuredContent` in `data`, the raw result saved as an artifact, the MCP
    /// identity (server, wire name, protocol) in `metadata.mcp`.
    fn project(&self, raw: Value, ctx: &ToolExecutionContext) -> ToolOutput {
        let mut content = raw
            .get("content")
            .and_then(Value::as_array)
            .map(|items| items.iter().map(project_block).collect::<Vec<_>>())
            .unwrap_or_default();
        let structured = raw.get("structuredContent").cloned();
        if content.is_empty()
            && let Some(s) = &structured
        {
            // The spec asks servers to mirror structured output as text; when one does
            // not, the model still needs to see it.
            content.push(ContentBlock::text(s.to_string()));
        }
        let is_error = raw.get("isError").and_then(Value::as_bool) == Some(true);
        let mut result = if is_error {
            let mut r = ToolOutput::error(ToolErrorInfo::new(
                codes::MCP_TOOL_ERROR,
                format!(
                    "MCP tool `{}` on server `{}` reported an error",
                    self.wire_name, self.connection.server
                ),
            ));
            r.content = content;
            r
        } else {
            ToolOutput::new(content)
        };
        if let Some(s) = structured {
            result.data.insert("structured_content".into(), s);
        }
        let mut mcp = Map::new();
        mcp.insert("server".into(), json!(self.connection.server));
        mcp.insert("tool".into(), json!(self.wire_name));
        mcp.insert("protocol".into(), json!(self.connection.protocol));
        let preview: String = result
            .model_content()
            .chars()
            .take(ARTIFACT_PREVIEW_CHARS)
            .collect();
        let store = ToolArtifactStore::for_session(ctx.workspace(), &ctx.session_id);
        match store.persist_json(&artifact_id(&ctx.call_id), &raw, &preview) {
            Ok(artifact) => {
                // Also under metadata: the executor's `persist_if_large` may replace
                // `artifact` with the saved text body of a long result.
                mcp.insert(
                    "raw_result_path".into(),
                    json!(artifact.path.to_string_lossy()),
                );
                result.artifact = Some(Box::new(artifact));
            }
            Err(e) => {
                tracing::warn!(server = %self.connection.server, tool = %self.wire_name, error = %e, "saving the raw MCP result failed");
                mcp.insert("raw_result_error".into(), json!(e.to_info().message));
            }
        }
        result.metadata.insert("mcp".into(), Value::Object(mcp));
        result
    }
}

impl Tool for McpTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// Checks the arguments' shape (an object, or nothing); the server's own schema
    /// was already checked by the executor.
    fn validate_input(&self, raw: Value) -> Result<ToolInput, ToolErrorInfo> {
        match &raw {
            Value::Object(_) | Value::Null => Ok(ToolInput::new(raw)),
            other => Err(not_an_object(other)),
        }
    }

    fn run<'a>(
        &'a self,
        input: ToolInput,
        ctx: &'a ToolExecutionContext,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(self.call(input, ctx))
    }

    fn is_read_only(&self) -> bool {
        self.read_only
    }
}

/// The `arguments` of a `tools/call` request: a JSON object, or none for `null`.
fn arguments(raw: Value) -> Result<Option<Map<String, Value>>, ToolErrorInfo> {
    match raw {
        Value::Object(map) => Ok(Some(map)),
        Value::Null => Ok(None),
        other => Err(not_an_object(&other)),
    }
}

fn not_an_object(value: &Value) -> ToolErrorInfo {
    ToolErrorInfo::new(
        core_codes::INVALID_INPUT,
        format!("MCP tool arguments must be a JSON object, got {value}"),
    )
}

/// One MCP content item as a model content block.
fn project_block(item: &Value) -> ContentBlock {
    let kind = item.get("type").and_then(Value::as_str).unwrap_or("");
    let str_of = |key: &str| item.get(key).and_then(Value::as_str).unwrap_or("");
    match kind {
        "text" => ContentBlock::text(str_of("text")),
        "image" => {
            let mime = str_of("mimeType");
            if SUPPORTED_IMAGE_TYPES.contains(&mime) {
                ContentBlock::image(mime, str_of("data"))
            } else {
                ContentBlock::text(format!(
                    "[image omitted: type {mime} is not supported; the raw result keeps it]"
                ))
            }
        }
        "audio" => ContentBlock::text(format!(
            "[audio omitted: {}; the raw result keeps it]",
            str_of("mimeType")
        )),
        "resource" => {
            let resource = item.get("resource").cloned().unwrap_or(Value::Null);
            let uri = resource.get("uri").and_then(Value::as_str).unwrap_or("");
            match resource.get("text").and_then(Value::as_str) {
                Some(text) => ContentBlock::text(text),
                None => ContentBlock::text(format!(
                    "[binary resource {uri} omitted; the raw result keeps it]"
                )),
            }
        }
        "resource_link" => {
            let name = str_of("name");
            let uri = str_of("uri");
            ContentBlock::text(format!("[resource link: {name} {uri}]").replace("  ", " "))
        }
        other => ContentBlock::text(format!(
            "[content of type `{other}` omitted; the raw result keeps it]"
        )),
    }
}

/// A file-name-safe artifact id: the call id, or a process-unique one when the call
/// has none (a direct `Tool::run` outside the executor).
fn artifact_id(call_id: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let id = if call_id.is_empty() {
        format!(
            "mcp-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        )
    } else {
        call_id.to_owned()
    };
    let safe: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{safe}.mcp")
}

fn one_line(s: &str) -> String {
    let line = s.lines().next().unwrap_or("").trim();
    if line.chars().count() > 300 {
        let mut cut: String = line.chars().take(300).collect();
        cut.push('…');
        cut
    } else {
        line.to_owned()
    }
}
