//! OTLP/HTTP export of the run loop's OpenTelemetry GenAI spans (the `otel` feature).
//!
//! The loop already describes itself through `tracing`: an `invoke_agent` span per run, a
//! `chat` span per model request and, from the executor, an `execute_tool` span per call,
//! with the `gen_ai.*` attributes of the OpenTelemetry GenAI semantic conventions. [`layer`]
//! turns those spans into OpenTelemetry spans and sends them to a collector over OTLP/HTTP
//! (`POST {endpoint}`, HTTP/protobuf by default or HTTP/JSON); the [`OtelGuard`] it returns
//! flushes what is still queued when it is shut down or dropped.
//!
//! ```no_run
//! use tracing_subscriber::layer::SubscriberExt;
//!
//! # fn main() -> Result<(), iris_runner::otel::OtelError> {
//! // OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_HEADERS, OTEL_SERVICE_NAME, ...
//! let config = iris_runner::otel::OtelConfig::from_env()?;
//! let (layer, guard) = iris_runner::otel::layer(&config)?;
//! let subscriber = tracing_subscriber::registry().with(layer);
//! tracing::subscriber::set_global_default(subscriber).ok();
//! // ... run agents ...
//! guard.shutdown()?; // exports what is still queued
//! # Ok(())
//! # }
//! ```
//!
//! # Why the official crates
//!
//! The export is the OpenTelemetry project's own pipeline: `tracing-opentelemetry` bridges
//! `tracing` spans into `opentelemetry_sdk` spans, the SDK's `BatchSpanProcessor` queues
//! them (bounded, 2048 spans by default or `OTEL_BSP_MAX_QUEUE_SIZE`; a full queue drops
//! spans instead of blocking the app) and exports batches from its own thread, and
//! `opentelemetry-otlp` encodes the OTLP request. Measured with `cargo tree`, these crates
//! reuse the workspace's reqwest 0.13 (its blocking client, with rustls) and pull in
//! neither a second reqwest nor tonic or any gRPC stack: the feature adds 21 crates to
//! iris-runner's tree (the five OpenTelemetry crates, prost, tracing-subscriber and small
//! helpers; rand 0.9 and cpufeatures 0.2 beside the workspace's newer majors). Writing an
//! exporter of our own would re-implement span ids, sampling, batching, retries and the
//! OTLP encoding that these crates maintain against the specification.
//!
//! Two small pieces of this module sit around that pipeline:
//!
//! - a span processor that brings what `tracing` can express in line with the GenAI
//!   conventions before a span is queued: the span kind (`chat` is `CLIENT`, the rest
//!   `INTERNAL`), the name (`execute_tool {gen_ai.tool.name}` when the span has no
//!   `otel.name`), the status (`ERROR` with the code as description when `error.type` is
//!   set), integer attributes (tracing-opentelemetry records `u64` fields as text) and
//!   `gen_ai.response.finish_reasons` as a string array;
//! - an exporter wrapper that counts exported and failed spans ([`OtelGuard::stats`]) and
//!   logs an export failure once per outage, at `warn` on the `iris_runner::otel` target,
//!   never with a header value.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use opentelemetry::trace::{SpanKind, Status, TracerProvider as _};
use opentelemetry::{Array, InstrumentationScope, KeyValue, Value};
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{
    BatchSpanProcessor, SdkTracerProvider, SpanData, SpanExporter, SpanProcessor,
};
use tracing_subscriber::registry::LookupSpan;

/// Stable `SCREAMING_SNAKE` codes of [`OtelError`].
pub mod codes {
    /// The endpoint is not an absolute `http://` or `https://` URL.
    pub const OTEL_INVALID_ENDPOINT: &str = "OTEL_INVALID_ENDPOINT";
    /// A header name or value cannot be sent, or `OTEL_EXPORTER_OTLP_HEADERS` is malformed.
    pub const OTEL_INVALID_HEADER: &str = "OTEL_INVALID_HEADER";
    /// A setting (a timeout, a protocol name) is not a value it can take.
    pub const OTEL_INVALID_SETTING: &str = "OTEL_INVALID_SETTING";
    /// The protocol is `grpc`, which this build does not speak (it exports over HTTP).
    pub const OTEL_UNSUPPORTED_PROTOCOL: &str = "OTEL_UNSUPPORTED_PROTOCOL";
    /// The OTLP exporter or its HTTP client could not be built from the configuration.
    pub const OTEL_EXPORTER_FAILED: &str = "OTEL_EXPORTER_FAILED";
    /// Spans could not be delivered: the collector refused them, could not be reached, or
    /// a flush or shutdown did not finish in time.
    pub const OTEL_EXPORT_FAILED: &str = "OTEL_EXPORT_FAILED";
}

/// The traces endpoint used when neither the config nor the environment names one.
pub const DEFAULT_ENDPOINT: &str = "http://localhost:4318/v1/traces";
/// The `service.name` resource attribute used when `OTEL_SERVICE_NAME` is unset.
pub const DEFAULT_SERVICE_NAME: &str = "iris";
/// How long one export request may take (the OTLP default, 10 s).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// The `tracing` target of this module's own diagnostics (export failures).
pub const TRACING_TARGET: &str = "iris_runner::otel";

/// What went wrong configuring or running the export.
///
/// No variant carries a header value: headers usually hold API keys.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OtelError {
    /// The endpoint is not an absolute `http://` or `https://` URL.
    #[error("`{endpoint}` is not an OTLP/HTTP endpoint: {reason}")]
    InvalidEndpoint {
        /// The endpoint, with any password in it replaced by `***`.
        endpoint: String,
        /// Why it was refused.
        reason: String,
    },
    /// A header cannot be sent. Names the header, never its value.
    #[error("OTLP header `{name}`: {reason}")]
    InvalidHeader {
        /// The header's name (or the environment variable when an entry has no name).
        name: String,
        /// Why it was refused.
        reason: String,
    },
    /// A setting is not a value it can take.
    #[error("{setting}: {reason}")]
    InvalidSetting {
        /// The setting: an environment variable's name, or the config method.
        setting: String,
        /// What was wrong and what was expected.
        reason: String,
    },
    /// The protocol is one this build does not speak.
    #[error(
        "{setting}: OTLP protocol `{protocol}` is not supported (use `http/protobuf` or `http/json`)"
    )]
    UnsupportedProtocol {
        /// Where it was asked for.
        setting: String,
        /// The protocol named.
        protocol: String,
    },
    /// The OTLP exporter or its HTTP client could not be built.
    #[error("the OTLP exporter could not be built: {reason}")]
    Exporter {
        /// Why.
        reason: String,
    },
    /// Spans were not delivered.
    #[error("{failed_spans} span(s) were not exported: {reason}")]
    ExportFailed {
        /// How many spans failed to export since the previous flush reported (0 when a
        /// flush or shutdown timed out before the spans' fate was known).
        failed_spans: u64,
        /// The last failure (an HTTP status, a network error, a timeout).
        reason: String,
    },
}

impl OtelError {
    /// The stable code of this error (see [`codes`]).
    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidEndpoint { .. } => codes::OTEL_INVALID_ENDPOINT,
            Self::InvalidHeader { .. } => codes::OTEL_INVALID_HEADER,
            Self::InvalidSetting { .. } => codes::OTEL_INVALID_SETTING,
            Self::UnsupportedProtocol { .. } => codes::OTEL_UNSUPPORTED_PROTOCOL,
            Self::Exporter { .. } => codes::OTEL_EXPORTER_FAILED,
            Self::ExportFailed { .. } => codes::OTEL_EXPORT_FAILED,
        }
    }
}

/// The OTLP/HTTP encoding of the export requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Protocol {
    /// `http/protobuf`: binary protobuf, `Content-Type: application/x-protobuf` (the
    /// OTLP default).
    #[default]
    HttpProtobuf,
    /// `http/json`: the protobuf JSON mapping, `Content-Type: application/json`.
    HttpJson,
}

impl Protocol {
    /// The name the OTLP environment variables use (`http/protobuf`, `http/json`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::HttpProtobuf => "http/protobuf",
            Self::HttpJson => "http/json",
        }
    }
}

/// Where and how to export: the traces endpoint, headers, `service.name`, protocol and
/// request timeout.
///
/// `Debug` shows header names only, never their values.
#[derive(Clone, PartialEq, Eq)]
pub struct OtelConfig {
    endpoint: String,
    headers: Vec<(String, String)>,
    service_name: String,
    protocol: Protocol,
    timeout: Duration,
}

impl fmt::Debug for OtelConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OtelConfig")
            .field("endpoint", &redact_endpoint(&self.endpoint))
            .field("headers", &self.header_names().collect::<Vec<_>>())
            .field("service_name", &self.service_name)
            .field("protocol", &self.protocol)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl Default for OtelConfig {
    /// [`DEFAULT_ENDPOINT`], no headers, [`DEFAULT_SERVICE_NAME`], HTTP/protobuf,
    /// [`DEFAULT_TIMEOUT`]; the environment is not read.
    fn default() -> Self {
        Self::new(DEFAULT_ENDPOINT)
    }
}

impl OtelConfig {
    /// A config sending to `endpoint`, the full traces URL (for a collector on this
    /// machine, `http://localhost:4318/v1/traces`); nothing is read from the environment.
    /// The endpoint is checked by [`layer`].
    pub fn new(endpoint: impl Into<String>) -> Self {
        Self {
            endpoint: endpoint.into(),
            headers: Vec::new(),
            service_name: DEFAULT_SERVICE_NAME.to_owned(),
            protocol: Protocol::default(),
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// The config the OpenTelemetry environment variables describe (see
    /// [`from_lookup`](Self::from_lookup)).
    pub fn from_env() -> Result<Self, OtelError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// The config described by the OpenTelemetry environment variables, read through
    /// `var` (which [`from_env`](Self::from_env) answers from the process environment).
    /// An empty value counts as unset, as the specification says.
    ///
    /// | variable | meaning |
    /// | --- | --- |
    /// | `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` | the traces URL, used as is |
    /// | `OTEL_EXPORTER_OTLP_ENDPOINT` | the collector's base URL; `/v1/traces` is appended |
    /// | `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TRACES_HEADERS` | `key=value` pairs separated by commas, values percent-decoded; the traces variable wins per key |
    /// | `OTEL_SERVICE_NAME` | `service.name` (default `iris`) |
    /// | `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`, `OTEL_EXPORTER_OTLP_PROTOCOL` | `http/protobuf` (default) or `http/json` |
    /// | `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`, `OTEL_EXPORTER_OTLP_TIMEOUT` | milliseconds per export request (default 10000) |
    ///
    /// Without an endpoint variable the endpoint is [`DEFAULT_ENDPOINT`].
    ///
    /// ```
    /// use iris_runner::otel::{OtelConfig, Protocol};
    ///
    /// let env = [
    ///     ("OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector.example:4318/"),
    ///     ("OTEL_EXPORTER_OTLP_HEADERS", "api-key=s3cr%3Dt,team=agents"),
    ///     ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
    /// ];
    /// let lookup = |name: &str| env.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string());
    /// let config = OtelConfig::from_lookup(lookup)?;
    /// assert_eq!(config.endpoint(), "https://collector.example:4318/v1/traces");
    /// assert_eq!(config.header_names().collect::<Vec<_>>(), ["api-key", "team"]);
    /// assert_eq!(config.protocol(), Protocol::HttpJson);
    /// assert_eq!(config.service_name(), "iris");
    /// assert!(!format!("{config:?}").contains("s3cr"));
    /// # Ok::<(), iris_runner::otel::OtelError>(())
    /// ```
    pub fn from_lookup(var: impl Fn(&str) -> Option<String>) -> Result<Self, OtelError> {
        let var = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        let endpoint = match var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            Some(endpoint) => endpoint.trim().to_owned(),
            None => match var("OTEL_EXPORTER_OTLP_ENDPOINT") {
                Some(base) => format!("{}/v1/traces", base.trim().trim_end_matches('/')),
                None => DEFAULT_ENDPOINT.to_owned(),
            },
        };
        let mut config = Self::new(endpoint);
        for name in [
            "OTEL_EXPORTER_OTLP_HEADERS",
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
        ] {
            if let Some(list) = var(name) {
                for (key, value) in parse_header_list(name, &list)? {
                    config = config.with_header(key, value);
                }
            }
        }
        if let Some(name) = var("OTEL_SERVICE_NAME") {
            config.service_name = name.trim().to_owned();
        }
        for name in [
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            "OTEL_EXPORTER_OTLP_PROTOCOL",
        ] {
            if let Some(value) = var(name) {
                config.protocol = parse_protocol(name, value.trim())?;
                break;
            }
        }
        for name in [
            "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
            "OTEL_EXPORTER_OTLP_TIMEOUT",
        ] {
            if let Some(value) = var(name) {
                let millis: u64 = value
                    .trim()
                    .parse()
                    .map_err(|_| OtelError::InvalidSetting {
                        setting: name.to_owned(),
                        reason: format!("`{}` is not a whole number of milliseconds", value.trim()),
                    })?;
                config = config.with_timeout(Duration::from_millis(millis));
                break;
            }
        }
        Ok(config)
    }

    /// Adds (or replaces, matching names case-insensitively) a header sent with every
    /// export request, such as an API key.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        let name = name.into();
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(&name));
        self.headers.push((name, value.into()));
        self
    }

    /// Sets the `service.name` resource attribute.
    pub fn with_service_name(mut self, name: impl Into<String>) -> Self {
        self.service_name = name.into();
        self
    }

    /// Sets the request encoding.
    pub fn with_protocol(mut self, protocol: Protocol) -> Self {
        self.protocol = protocol;
        self
    }

    /// Sets how long one export request may take; [`layer`] refuses zero.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The traces URL requests are posted to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The names of the headers sent (their values are never shown).
    pub fn header_names(&self) -> impl Iterator<Item = &str> {
        self.headers.iter().map(|(n, _)| n.as_str())
    }

    /// The `service.name` resource attribute.
    pub fn service_name(&self) -> &str {
        &self.service_name
    }

    /// The request encoding.
    pub fn protocol(&self) -> Protocol {
        self.protocol
    }

    /// How long one export request may take.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }
}

/// Counts of what the exporter has done so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ExportStats {
    /// Spans the collector accepted.
    pub exported_spans: u64,
    /// Spans whose export request failed (refused, unreachable, timed out).
    pub failed_spans: u64,
}

/// Keeps the export running; [`shutdown`](Self::shutdown) (or dropping it) exports what is
/// still queued and stops the export thread.
///
/// Shutting down blocks the calling thread until the last batch is sent or the timeout
/// (the config's request timeout plus one second) passes. Spans that end after the
/// shutdown are discarded.
#[must_use = "dropping the guard shuts the export down"]
pub struct OtelGuard {
    provider: SdkTracerProvider,
    health: Arc<Health>,
    /// How many failed spans a flush or the shutdown has already reported.
    reported: AtomicU64,
    shutdown_timeout: Duration,
    done: bool,
}

impl fmt::Debug for OtelGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OtelGuard")
            .field("stats", &self.stats())
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl OtelGuard {
    /// Exports every span that has ended so far, waiting for the collector's answer.
    ///
    /// # Errors
    ///
    /// [`OtelError::ExportFailed`] when spans failed to export since the previous flush
    /// (or since the guard was made), or when the flush did not finish in time.
    pub fn flush(&self) -> Result<(), OtelError> {
        let flushed = self.provider.force_flush();
        self.verdict(flushed)
    }

    /// What the exporter has done so far.
    pub fn stats(&self) -> ExportStats {
        ExportStats {
            exported_spans: self.health.exported.load(Ordering::Acquire),
            failed_spans: self.health.failed.load(Ordering::Acquire),
        }
    }

    /// Exports what is still queued, then stops the export.
    ///
    /// # Errors
    ///
    /// [`OtelError::ExportFailed`] when spans failed to export since the last flush, or
    /// when the shutdown did not finish in time.
    pub fn shutdown(mut self) -> Result<(), OtelError> {
        self.done = true;
        let stopped = self.provider.shutdown_with_timeout(self.shutdown_timeout);
        self.verdict(stopped)
    }

    fn verdict(&self, result: OTelSdkResult) -> Result<(), OtelError> {
        let failed = self.health.failed.load(Ordering::Acquire);
        let failed_spans = failed.saturating_sub(self.reported.swap(failed, Ordering::AcqRel));
        let reason = match result {
            _ if failed_spans > 0 => Some(
                self.health
                    .last_error()
                    .unwrap_or_else(|| "the export failed".to_owned()),
            ),
            Err(e) => Some(e.to_string()),
            Ok(()) => None,
        };
        match reason {
            None => Ok(()),
            Some(reason) => Err(OtelError::ExportFailed {
                failed_spans,
                reason,
            }),
        }
    }
}

impl Drop for OtelGuard {
    fn drop(&mut self) {
        if !self.done {
            // Failures were logged by the exporter as they happened.
            let _ = self.provider.shutdown_with_timeout(self.shutdown_timeout);
        }
    }
}

/// A `tracing_subscriber` layer exporting every span it sees (the loop's
/// `invoke_agent` and `chat`, the executor's `execute_tool`, and any other span of the
/// host) over OTLP/HTTP, and the guard that flushes it. To export only Iris' spans, wrap
/// the layer in a filter: `layer.with_filter(tracing_subscriber::filter::Targets::new()
/// .with_target("iris_runner", Level::INFO).with_target("iris::executor", Level::INFO))`.
///
/// Nothing is sent until a span ends; building the layer does not contact the collector.
///
/// # Errors
///
/// [`OtelError::InvalidEndpoint`] for an endpoint that is not an absolute `http(s)://`
/// URL, [`OtelError::InvalidHeader`] for a header that cannot be sent,
/// [`OtelError::InvalidSetting`] for a zero timeout or an empty service name,
/// [`OtelError::Exporter`] when the OTLP exporter refuses the configuration.
pub fn layer<S>(
    config: &OtelConfig,
) -> Result<(impl tracing_subscriber::Layer<S> + 'static, OtelGuard), OtelError>
where
    S: tracing::Subscriber + for<'span> LookupSpan<'span>,
{
    let endpoint = check_endpoint(&config.endpoint)?;
    let headers = check_headers(&config.headers)?;
    if config.timeout.is_zero() {
        return Err(OtelError::InvalidSetting {
            setting: "OtelConfig::with_timeout".to_owned(),
            reason: "the export timeout must be longer than zero".to_owned(),
        });
    }
    if config.service_name.trim().is_empty() {
        return Err(OtelError::InvalidSetting {
            setting: "OtelConfig::with_service_name".to_owned(),
            reason: "the service name must not be empty".to_owned(),
        });
    }
    let client = http_client(config.timeout)?;
    let protocol = match config.protocol {
        Protocol::HttpProtobuf => opentelemetry_otlp::Protocol::HttpBinary,
        Protocol::HttpJson => opentelemetry_otlp::Protocol::HttpJson,
    };
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(client)
        .with_endpoint(endpoint)
        .with_protocol(protocol)
        .with_timeout(config.timeout)
        .with_headers(headers)
        .build()
        .map_err(|e| OtelError::Exporter {
            reason: e.to_string(),
        })?;
    let health = Arc::new(Health::default());
    let exporter = CountingExporter {
        inner: exporter,
        health: Arc::clone(&health),
        endpoint: redact_endpoint(&config.endpoint),
    };
    let processor = GenAiConventions {
        inner: BatchSpanProcessor::builder(exporter).build(),
    };
    let resource = Resource::builder()
        .with_service_name(config.service_name.clone())
        .build();
    let provider = SdkTracerProvider::builder()
        .with_resource(resource)
        .with_span_processor(processor)
        .build();
    let scope = InstrumentationScope::builder("iris")
        .with_version(env!("CARGO_PKG_VERSION"))
        .build();
    let tracer = provider.tracer_with_scope(scope);
    // The code location stays (`code.*` attributes); thread names, the `tracing` target and
    // busy/idle times are not part of the conventions and only add noise.
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_threads(false)
        .with_target(false)
        .with_tracked_inactivity(false);
    let guard = OtelGuard {
        provider,
        health,
        reported: AtomicU64::new(0),
        shutdown_timeout: config.timeout.saturating_add(Duration::from_secs(1)),
        done: false,
    };
    Ok((layer, guard))
}

/// Checks the endpoint is an absolute `http(s)://` URL with a host; returns it normalized.
fn check_endpoint(endpoint: &str) -> Result<String, OtelError> {
    let refuse = |reason: String| OtelError::InvalidEndpoint {
        endpoint: redact_endpoint(endpoint),
        reason,
    };
    let url = reqwest::Url::parse(endpoint.trim())
        .map_err(|e| refuse(format!("not an absolute URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(refuse(format!(
            "the scheme is `{}`; OTLP/HTTP needs `http` or `https`",
            url.scheme()
        )));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(refuse("the URL has no host".to_owned()));
    }
    Ok(url.to_string())
}

/// The endpoint as it may be shown: a password in it becomes `***`.
fn redact_endpoint(endpoint: &str) -> String {
    match reqwest::Url::parse(endpoint.trim()) {
        Ok(mut url) if url.password().is_some() => {
            // Setting a password only fails on URLs without a host, which have none.
            let _ = url.set_password(Some("***"));
            url.to_string()
        }
        _ => endpoint.to_owned(),
    }
}

fn check_headers(headers: &[(String, String)]) -> Result<HashMap<String, String>, OtelError> {
    let mut checked = HashMap::with_capacity(headers.len());
    for (name, value) in headers {
        reqwest::header::HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
            OtelError::InvalidHeader {
                name: name.clone(),
                reason: "not a valid HTTP header name".to_owned(),
            }
        })?;
        reqwest::header::HeaderValue::from_str(value).map_err(|_| OtelError::InvalidHeader {
            name: name.clone(),
            reason: "the value holds a character an HTTP header cannot carry".to_owned(),
        })?;
        checked.insert(name.clone(), value.clone());
    }
    Ok(checked)
}

/// The blocking reqwest client the SDK's export thread sends with. It is built on a
/// thread of its own: building (and dropping) a blocking client inside a Tokio runtime
/// panics, and hosts call [`layer`] from anywhere. Redirects are not followed, so headers
/// never reach a host other than the configured one.
fn http_client(timeout: Duration) -> Result<reqwest::blocking::Client, OtelError> {
    let built = std::thread::Builder::new()
        .name("iris-otel-client".to_owned())
        .spawn(move || {
            reqwest::blocking::Client::builder()
                .timeout(timeout)
                .redirect(reqwest::redirect::Policy::none())
                .build()
        })
        .map_err(|e| OtelError::Exporter {
            reason: format!("cannot start a thread to build the HTTP client: {e}"),
        })?
        .join()
        .map_err(|_| OtelError::Exporter {
            reason: "building the HTTP client panicked".to_owned(),
        })?;
    built.map_err(|e| OtelError::Exporter {
        reason: format!("cannot build the HTTP client: {e}"),
    })
}

/// `key=value` pairs separated by commas (the W3C baggage format the OTLP variables use),
/// values percent-decoded. Errors name the variable and the key, never a value.
fn parse_header_list(variable: &str, list: &str) -> Result<Vec<(String, String)>, OtelError> {
    let mut headers = Vec::new();
    for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let Some((key, value)) = entry.split_once('=') else {
            return Err(OtelError::InvalidHeader {
                name: variable.to_owned(),
                reason: "an entry is not `key=value`".to_owned(),
            });
        };
        let key = key.trim();
        if key.is_empty() {
            return Err(OtelError::InvalidHeader {
                name: variable.to_owned(),
                reason: "an entry has no key before `=`".to_owned(),
            });
        }
        let value = percent_decode(value.trim()).ok_or_else(|| OtelError::InvalidHeader {
            name: key.to_owned(),
            reason: format!("{variable}: the value is not valid percent-encoded UTF-8"),
        })?;
        headers.push((key.to_owned(), value));
    }
    Ok(headers)
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn parse_protocol(variable: &str, value: &str) -> Result<Protocol, OtelError> {
    match value {
        "http/protobuf" => Ok(Protocol::HttpProtobuf),
        "http/json" => Ok(Protocol::HttpJson),
        "grpc" => Err(OtelError::UnsupportedProtocol {
            setting: variable.to_owned(),
            protocol: value.to_owned(),
        }),
        other => Err(OtelError::InvalidSetting {
            setting: variable.to_owned(),
            reason: format!("`{other}` is not an OTLP protocol (`http/protobuf` or `http/json`)"),
        }),
    }
}

/// What the exporter has done, shared with the guard.
#[derive(Debug, Default)]
struct Health {
    exported: AtomicU64,
    failed: AtomicU64,
    /// Whether the last export failed: the first failure of an outage is logged, the
    /// rest are counted until an export succeeds again.
    failing: AtomicBool,
    last_error: Mutex<Option<String>>,
}

impl Health {
    fn last_error(&self) -> Option<String> {
        self.last_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// The OTLP exporter, counting what it exports and logging a failure once per outage.
#[derive(Debug)]
struct CountingExporter<E> {
    inner: E,
    health: Arc<Health>,
    endpoint: String,
}

impl<E: SpanExporter> SpanExporter for CountingExporter<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let count = batch.len() as u64;
        let result = self.inner.export(batch).await;
        let health = &*self.health;
        match &result {
            Ok(()) => {
                health.exported.fetch_add(count, Ordering::AcqRel);
                if health.failing.swap(false, Ordering::AcqRel) {
                    tracing::info!(
                        target: TRACING_TARGET,
                        endpoint = %self.endpoint,
                        "OTLP span export works again"
                    );
                }
            }
            Err(e) => {
                let reason = e.to_string();
                if !health.failing.swap(true, Ordering::AcqRel) {
                    tracing::warn!(
                        target: TRACING_TARGET,
                        endpoint = %self.endpoint,
                        error = %reason,
                        "OTLP span export failed; further failures are counted, not logged, until an export succeeds"
                    );
                }
                // The reason is in place before the count a flush reads.
                *health
                    .last_error
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = Some(reason);
                health.failed.fetch_add(count, Ordering::AcqRel);
            }
        }
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// Attributes the GenAI conventions type as integers; `tracing` hands `u64` fields to
/// tracing-opentelemetry as text.
const INT_ATTRIBUTES: [&str; 9] = [
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.request.max_tokens",
    "gen_ai.request.seed",
    "gen_ai.request.choice.count",
    "gen_ai.usage.cache_read.input_tokens",
    "gen_ai.usage.cache_creation.input_tokens",
    "iris.run.turns",
    "iris.request.tools",
];

/// Attributes the GenAI conventions type as string arrays.
const STRING_ARRAY_ATTRIBUTES: [&str; 1] = ["gen_ai.response.finish_reasons"];

/// Operations whose span kind is `CLIENT` (a call to a model service).
const CLIENT_OPERATIONS: [&str; 4] = ["chat", "text_completion", "generate_content", "embeddings"];

/// Brings an ended span in line with the GenAI conventions, then queues it.
#[derive(Debug)]
struct GenAiConventions<P> {
    inner: P,
}

impl<P: SpanProcessor> SpanProcessor for GenAiConventions<P> {
    fn on_start(&self, span: &mut opentelemetry_sdk::trace::Span, cx: &opentelemetry::Context) {
        self.inner.on_start(span, cx);
    }

    fn on_end(&self, mut span: SpanData) {
        conform(&mut span);
        self.inner.on_end(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

fn conform(span: &mut SpanData) {
    // A field recorded twice keeps its last value (OTLP keys are unique).
    let mut seen = std::collections::HashSet::new();
    let mut attributes: Vec<KeyValue> = std::mem::take(&mut span.attributes)
        .into_iter()
        .rev()
        .filter(|kv| seen.insert(kv.key.clone()))
        .collect();
    attributes.reverse();
    for kv in &mut attributes {
        let key = kv.key.as_str();
        if let Value::String(text) = &kv.value {
            if INT_ATTRIBUTES.contains(&key) {
                if let Ok(n) = text.as_str().parse::<i64>() {
                    kv.value = Value::I64(n);
                }
            } else if STRING_ARRAY_ATTRIBUTES.contains(&key) {
                kv.value = Value::Array(Array::String(vec![text.clone()]));
            }
        }
    }
    let text = |key: &str| {
        attributes
            .iter()
            .find_map(|kv| match (&kv.value, kv.key.as_str() == key) {
                (Value::String(s), true) => Some(s.as_str().to_owned()),
                _ => None,
            })
    };
    let Some(operation) = text("gen_ai.operation.name") else {
        span.attributes = attributes;
        return;
    };
    if span.span_kind == SpanKind::Internal && CLIENT_OPERATIONS.contains(&operation.as_str()) {
        span.span_kind = SpanKind::Client;
    }
    if span.name == operation {
        let subject = match operation.as_str() {
            "execute_tool" => text("gen_ai.tool.name"),
            "invoke_agent" | "create_agent" => text("gen_ai.agent.name"),
            _ => text("gen_ai.request.model"),
        };
        if let Some(subject) = subject {
            span.name = Cow::Owned(format!("{operation} {subject}"));
        }
    }
    if span.status == Status::Unset
        && let Some(error) = text("error.type")
    {
        span.status = Status::error(error);
    }
    span.attributes = attributes;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("a%3Db%20c").as_deref(), Some("a=b c"));
        assert_eq!(percent_decode("plain").as_deref(), Some("plain"));
        assert_eq!(percent_decode("%zz"), None);
        assert_eq!(percent_decode("%4"), None);
        assert_eq!(percent_decode("%C3%A9").as_deref(), Some("é"));
        assert_eq!(percent_decode("%FF"), None);
    }
}
