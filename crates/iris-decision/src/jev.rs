//! [`JevClient`]: the built-in [`DecisionEvaluator`], Typesafe's Jev model over HTTPS.
//!
//! The wire format is documented in `docs/decision-wire-format.md` at the repository
//! root; the private `Wire*` types below are its single source of truth.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError, RwLock};
use std::time::Duration;

use iris_tools_core::BoxFuture;
use iris_tools_core::endpoint::sends_secrets_safely;
use reqwest::Url;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::Notify;

use crate::config::{DEFAULT_MODEL, DEFAULT_TIMEOUT_SECONDS, DecisionConfig, PROVIDER_TYPESAFE};
use crate::error::{Error, Result, TimeoutPhase};
use crate::evaluator::DecisionEvaluator;
use crate::request::{DecisionQuestion, DecisionRequest};
use crate::response::{DecisionAnswer, DecisionResponse, DecisionUsage};

/// The environment variable holding the Typesafe API key.
pub const API_KEY_ENV: &str = "IRIS_PROVIDER_API_KEYS__TYPESAFE";
/// The default base URL. A placeholder until Typesafe publishes the service address;
/// set the real one with [`JevClient::with_base_url`]. Tests never contact it.
pub const DEFAULT_BASE_URL: &str = "https://api.typesafe.ai/v1";
/// The path appended to the base URL: requests go to `POST {base_url}/decisions`.
pub const ENDPOINT_PATH: &str = "decisions";
/// The largest successful response body accepted, in bytes.
pub const MAX_RESPONSE_BYTES: usize = 8 * 1024 * 1024;
/// How much of an error response body is read for the error message, in bytes.
const MAX_ERROR_BYTES: usize = 16 * 1024;
/// The longest service message kept in an [`Error::Http`], in characters.
const MAX_MESSAGE_CHARS: usize = 200;

/// The request body (`POST {base_url}/decisions`).
#[derive(Serialize)]
struct WireRequest<'a> {
    model: &'a str,
    state: &'a Value,
    questions: &'a BTreeMap<String, DecisionQuestion>,
}

/// A successful response body. Unknown fields are ignored so the service can add some.
#[derive(Deserialize)]
struct WireResponse {
    /// The model that answered; the requested model when absent.
    #[serde(default)]
    model: Option<String>,
    answers: BTreeMap<String, DecisionAnswer>,
    usage: DecisionUsage,
}

/// What the client knows about its HTTP client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JevClientState {
    /// No request yet: the HTTP client is not built (construction is free of I/O).
    Idle,
    /// The HTTP client is built and may hold pooled connections.
    Ready,
    /// Closed: the HTTP client is dropped and every further call fails with
    /// [`Error::Closed`].
    Closed,
}

enum Slot {
    Idle,
    Ready(reqwest::Client),
    Closed,
}

/// The API key. Its `Debug` never shows the value.
struct ApiKey(String);

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[REDACTED]")
    }
}

/// Typesafe's Jev decision model as a [`DecisionEvaluator`].
///
/// Construction does no I/O: the HTTP client is built on the first
/// [`evaluate`](DecisionEvaluator::evaluate). Each evaluation validates the request,
/// sends exactly one `POST {base_url}/decisions` under ONE total deadline (connect,
/// send and reading the whole body), and validates the answers against the questions.
/// There are no retries and no redirects. [`JevClient::close`] drops the HTTP client
/// and makes every later (and every in-flight) call fail with `DECISION_CLOSED`.
///
/// Dropping the client releases the same resources as closing it; `close` is for a
/// client shared behind an `Arc` (it reaches every holder) and for ending calls in
/// flight — Rust's counterpart of the Python reference's async context manager.
///
/// The key is sent as `Authorization: Bearer …`; it never appears in `Debug`, in
/// `Display`, or in errors (service texts are redacted). Plain `http://` is accepted
/// only for loopback hosts, so a key never crosses a network unencrypted.
///
/// ```
/// use iris_decision::{JevClient, JevClientState};
///
/// let client = JevClient::new("sk-test-123")?
///     .with_model("jev-1.13.0")?
///     .with_timeout_seconds(2.5)?
///     .with_base_url("http://127.0.0.1:8080/v1")?;
/// assert_eq!(client.endpoint(), "http://127.0.0.1:8080/v1/decisions");
/// assert_eq!(client.state(), JevClientState::Idle);
/// assert!(!format!("{client:?}").contains("sk-test-123"));
///
/// // A key must not travel over plain HTTP to another machine.
/// let err = JevClient::new("k")?.with_base_url("http://decisions.example.com").unwrap_err();
/// assert_eq!(err.code(), "DECISION_INVALID_CONFIG");
/// # Ok::<(), iris_decision::Error>(())
/// ```
pub struct JevClient {
    api_key: RwLock<ApiKey>,
    model: String,
    timeout: Duration,
    timeout_seconds: f64,
    base_url: Url,
    endpoint: Url,
    slot: Mutex<Slot>,
    closing: Notify,
}

impl std::fmt::Debug for JevClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JevClient")
            .field(
                "api_key",
                &*self.api_key.read().unwrap_or_else(PoisonError::into_inner),
            )
            .field("model", &self.model)
            .field("timeout_seconds", &self.timeout_seconds)
            .field("base_url", &self.base_url.as_str())
            .field("state", &self.state())
            .finish()
    }
}

impl JevClient {
    /// A client with the default model (`jev-1.13.0`), timeout (5 s) and base URL.
    ///
    /// Surrounding whitespace of the key is ignored (a key read from a file often ends
    /// in a newline).
    ///
    /// # Errors
    /// [`Error::Auth`] when the key is blank or holds characters an HTTP header cannot
    /// carry (the message never shows the key).
    pub fn new(api_key: impl Into<String>) -> Result<Self> {
        let api_key = checked_key(api_key.into())?;
        let base_url = parse_base_url(DEFAULT_BASE_URL)?;
        Ok(Self {
            api_key: RwLock::new(api_key),
            model: DEFAULT_MODEL.to_owned(),
            timeout: timeout_from_seconds(DEFAULT_TIMEOUT_SECONDS)?,
            timeout_seconds: DEFAULT_TIMEOUT_SECONDS,
            endpoint: endpoint_of(&base_url),
            base_url,
            slot: Mutex::new(Slot::Idle),
            closing: Notify::new(),
        })
    }

    /// Replaces the key for every later evaluation (the host's answer to a
    /// `DECISION_AUTH` failure, whose `details.secret` names
    /// [`JevClient::secret_name`]).
    ///
    /// ```
    /// use iris_decision::JevClient;
    /// let client = JevClient::new("sk-old")?;
    /// client.set_api_key("sk-new")?;
    /// assert_eq!(client.set_api_key(" ").unwrap_err().code(), "DECISION_AUTH");
    /// assert_eq!(client.secret_name(), "IRIS_PROVIDER_API_KEYS__TYPESAFE");
    /// # Ok::<(), iris_decision::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Auth`] for a blank key or one an HTTP header cannot carry; the old key
    /// stays.
    pub fn set_api_key(&self, api_key: impl Into<String>) -> Result<()> {
        let key = checked_key(api_key.into())?;
        *self.api_key.write().unwrap_or_else(PoisonError::into_inner) = key;
        Ok(())
    }

    /// The secret its auth errors name: `IRIS_PROVIDER_API_KEYS__TYPESAFE`.
    pub fn secret_name(&self) -> &'static str {
        API_KEY_ENV
    }

    fn key(&self) -> String {
        self.api_key
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .0
            .clone()
    }

    /// A client whose key comes from `IRIS_PROVIDER_API_KEYS__TYPESAFE`.
    ///
    /// # Errors
    /// [`Error::Auth`] when the variable is missing, blank or malformed.
    pub fn from_env() -> Result<Self> {
        Self::from_env_with(|name| std::env::var(name).ok())
    }

    /// Like [`JevClient::from_env`], reading variables through `lookup` (for hosts with
    /// their own environment, and for tests).
    ///
    /// ```
    /// use iris_decision::JevClient;
    /// let err = JevClient::from_env_with(|_| None).unwrap_err();
    /// assert_eq!(err.code(), "DECISION_AUTH");
    /// assert!(err.to_string().contains("IRIS_PROVIDER_API_KEYS__TYPESAFE is not set"));
    /// assert!(JevClient::from_env_with(|_| Some("sk-1".into())).is_ok());
    /// ```
    ///
    /// # Errors
    /// [`Error::Auth`] when the variable is missing, blank or malformed.
    pub fn from_env_with(lookup: impl Fn(&str) -> Option<String>) -> Result<Self> {
        match lookup(API_KEY_ENV) {
            None => Err(auth(format!("{API_KEY_ENV} is not set"))),
            Some(key) if key.trim().is_empty() => Err(auth(format!("{API_KEY_ENV} is empty"))),
            Some(key) => Self::new(key),
        }
    }

    /// A client for a decision configuration: its model, timeout and base URL, this key.
    ///
    /// # Errors
    /// [`Error::Auth`] for a bad key; [`Error::InvalidConfig`] for a bad model, timeout
    /// or base URL.
    pub fn from_config(config: &DecisionConfig, api_key: impl Into<String>) -> Result<Self> {
        let client = Self::new(api_key)?
            .with_model(config.model.clone())?
            .with_timeout_seconds(config.timeout_seconds)?;
        match &config.base_url {
            Some(url) => client.with_base_url(url),
            None => Ok(client),
        }
    }

    /// Sets the model name.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] when the name is blank.
    pub fn with_model(mut self, model: impl Into<String>) -> Result<Self> {
        let model = model.into();
        if model.trim().is_empty() {
            return Err(Error::config("model", "must not be empty"));
        }
        self.model = model;
        Ok(self)
    }

    /// Sets the total deadline of one request, in seconds.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] unless it is a positive, finite, representable duration.
    pub fn with_timeout_seconds(mut self, seconds: f64) -> Result<Self> {
        self.timeout = timeout_from_seconds(seconds)?;
        self.timeout_seconds = seconds;
        Ok(self)
    }

    /// Sets the base URL; requests go to `{base_url}/decisions`.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] unless it is an absolute `https://` URL (or `http://` to a
    /// loopback host) without credentials, query or fragment.
    pub fn with_base_url(mut self, base_url: &str) -> Result<Self> {
        self.base_url = parse_base_url(base_url)?;
        self.endpoint = endpoint_of(&self.base_url);
        Ok(self)
    }

    /// The model name sent with each request.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The total deadline of one request.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The base URL.
    pub fn base_url(&self) -> &str {
        self.base_url.as_str()
    }

    /// The URL requests are posted to.
    pub fn endpoint(&self) -> &str {
        self.endpoint.as_str()
    }

    /// Whether the HTTP client is built yet, or the client is closed.
    pub fn state(&self) -> JevClientState {
        match &*self.slot.lock().unwrap_or_else(PoisonError::into_inner) {
            Slot::Idle => JevClientState::Idle,
            Slot::Ready(_) => JevClientState::Ready,
            Slot::Closed => JevClientState::Closed,
        }
    }

    /// Closes the client: drops the HTTP client and its pooled connections, fails
    /// in-flight calls with [`Error::Closed`], and refuses later calls. Idempotent.
    pub async fn close(&self) {
        *self.slot.lock().unwrap_or_else(PoisonError::into_inner) = Slot::Closed;
        self.closing.notify_waiters();
    }

    /// The HTTP client, built on first use.
    fn client(&self) -> Result<reqwest::Client> {
        let mut slot = self.slot.lock().unwrap_or_else(PoisonError::into_inner);
        match &*slot {
            Slot::Closed => Err(Error::Closed),
            Slot::Ready(client) => Ok(client.clone()),
            Slot::Idle => {
                let client = reqwest::Client::builder()
                    // A redirect would resend the key somewhere the host did not choose.
                    .redirect(reqwest::redirect::Policy::none())
                    .user_agent(concat!("iris-decision/", env!("CARGO_PKG_VERSION")))
                    .build()
                    .map_err(|e| unavailable("building the HTTP client failed", e))?;
                *slot = Slot::Ready(client.clone());
                Ok(client)
            }
        }
    }

    async fn evaluate_request(&self, request: &DecisionRequest) -> Result<DecisionResponse> {
        request.validate()?;
        // Register for the close notification before checking the state, so a close
        // that lands between the two cannot be missed.
        let closing = self.closing.notified();
        tokio::pin!(closing);
        closing.as_mut().enable();
        let client = self.client()?;
        let body = serde_json::to_vec(&WireRequest {
            model: &self.model,
            state: &request.state,
            questions: &request.questions,
        })
        .map_err(|e| Error::request("<request>", format!("cannot be encoded as JSON: {e}")))?;
        tracing::debug!(
            model = %self.model,
            questions = request.questions.len(),
            endpoint = %self.endpoint,
            "decision request"
        );

        let mut phase = TimeoutPhase::Request;
        let outcome = tokio::select! {
            biased;
            () = &mut closing => return Err(Error::Closed),
            outcome = tokio::time::timeout(self.timeout, self.exchange(&client, body, &mut phase)) => outcome,
        };
        let (status, bytes) = match outcome {
            Ok(exchanged) => exchanged?,
            Err(_elapsed) => {
                return Err(Error::Timeout {
                    seconds: self.timeout_seconds,
                    phase,
                });
            }
        };
        self.interpret(status, &bytes, request)
    }

    /// Sends the request and reads the body: everything the total deadline covers.
    async fn exchange(
        &self,
        client: &reqwest::Client,
        body: Vec<u8>,
        phase: &mut TimeoutPhase,
    ) -> Result<(reqwest::StatusCode, Vec<u8>)> {
        let mut response = client
            .post(self.endpoint.clone())
            .bearer_auth(self.key())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| unavailable("sending the request failed", e))?;
        *phase = TimeoutPhase::Body;
        let status = response.status();
        let limit = if status.is_success() {
            MAX_RESPONSE_BYTES
        } else {
            MAX_ERROR_BYTES
        };
        let mut bytes = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| unavailable("reading the response body failed", e))?
        {
            bytes.extend_from_slice(&chunk);
            if bytes.len() > limit {
                if status.is_success() {
                    return Err(Error::response(
                        "<body>",
                        format!("is larger than {MAX_RESPONSE_BYTES} bytes"),
                    ));
                }
                // An error body only feeds a short message: the start is enough.
                bytes.truncate(limit);
                break;
            }
        }
        Ok((status, bytes))
    }

    /// Turns status and body into a validated response or a typed error.
    fn interpret(
        &self,
        status: reqwest::StatusCode,
        bytes: &[u8],
        request: &DecisionRequest,
    ) -> Result<DecisionResponse> {
        let code = status.as_u16();
        if code == 401 || code == 403 {
            return Err(Error::Auth {
                reason: format!(
                    "the decision service rejected the API key (HTTP {code}{})",
                    self.service_message(bytes)
                        .map(|m| format!(": {m}"))
                        .unwrap_or_default()
                ),
                status: Some(code),
            });
        }
        if !status.is_success() {
            return Err(Error::Http {
                status: code,
                message: self.service_message(bytes),
            });
        }
        let wire: WireResponse = serde_json::from_slice(bytes).map_err(|e| {
            Error::response(
                "<body>",
                self.redact(&format!("is not a valid decision response: {e}")),
            )
        })?;
        let response = DecisionResponse {
            provider: PROVIDER_TYPESAFE.to_owned(),
            model: wire.model.unwrap_or_else(|| self.model.clone()),
            answers: wire.answers,
            usage: wire.usage,
        };
        response.validate_against(request).map_err(|e| match e {
            Error::InvalidResponse { field, reason } => Error::InvalidResponse {
                field: self.redact(&field),
                reason: self.redact(&reason),
            },
            other => other,
        })?;
        Ok(response)
    }

    /// A one-line, redacted excerpt of an error body: `error.message`, `error` or
    /// `message` of a JSON body, else the text itself.
    fn service_message(&self, bytes: &[u8]) -> Option<String> {
        let text = String::from_utf8_lossy(bytes);
        let message = match serde_json::from_str::<Value>(&text) {
            Ok(json) => [
                json.pointer("/error/message"),
                json.get("error"),
                json.get("message"),
            ]
            .into_iter()
            .flatten()
            .find_map(Value::as_str)
            .map(str::to_owned),
            Err(_) => Some(text.into_owned()),
        }?;
        let one_line = message.split_whitespace().collect::<Vec<_>>().join(" ");
        let redacted = self.redact(&one_line);
        if redacted.is_empty() {
            return None;
        }
        let mut chars = redacted.chars();
        let mut excerpt: String = chars.by_ref().take(MAX_MESSAGE_CHARS).collect();
        if chars.next().is_some() {
            excerpt.push('…');
        }
        Some(excerpt)
    }

    /// Replaces every occurrence of the key (a service may echo what it received).
    fn redact(&self, text: &str) -> String {
        text.replace(&self.key(), "[REDACTED]")
    }
}

/// A key the client accepts: trimmed (a key read from a file often ends in a newline),
/// not empty, only characters an HTTP header carries.
fn checked_key(api_key: String) -> Result<ApiKey> {
    let api_key = api_key.trim().to_owned();
    if api_key.is_empty() {
        return Err(auth(format!("the {PROVIDER_TYPESAFE} API key is empty")));
    }
    if !api_key.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(auth(format!(
            "the {PROVIDER_TYPESAFE} API key holds characters an HTTP header cannot carry"
        )));
    }
    Ok(ApiKey(api_key))
}

impl DecisionEvaluator for JevClient {
    fn evaluate<'a>(
        &'a self,
        request: &'a DecisionRequest,
    ) -> BoxFuture<'a, Result<DecisionResponse>> {
        Box::pin(self.evaluate_request(request))
    }
}

fn auth(reason: String) -> Error {
    Error::Auth {
        reason,
        status: None,
    }
}

fn unavailable(reason: &str, source: reqwest::Error) -> Error {
    Error::Unavailable {
        reason: reason.to_owned(),
        // reqwest names the URL in its text; the URL carries no credentials (checked
        // when it was set), so the text is safe to keep.
        source: Some(Box::new(source)),
    }
}

/// The checked timeout: positive, finite, and representable as a [`Duration`].
pub(crate) fn timeout_from_seconds(seconds: f64) -> Result<Duration> {
    if !(seconds.is_finite() && seconds > 0.0) {
        return Err(Error::config(
            "timeout_seconds",
            format!("is {seconds:?}; must be a positive number of seconds"),
        ));
    }
    Duration::try_from_secs_f64(seconds)
        .map_err(|_| Error::config("timeout_seconds", format!("is {seconds:?}; too large")))
}

/// Parses and checks a base URL. Messages never quote the URL: a malformed one may
/// still hold a credential in its user part or query.
pub(crate) fn parse_base_url(text: &str) -> Result<Url> {
    let invalid = |reason: String| Error::config("base_url", reason);
    let url = Url::parse(text).map_err(|e| invalid(format!("is not an absolute URL: {e}")))?;
    match url.scheme() {
        "https" | "http" if sends_secrets_safely(url.as_str()) => {}
        "http" => {
            return Err(invalid(
                "uses plain http to a non-loopback host; the API key needs https".into(),
            ));
        }
        _ => return Err(invalid("has an unsupported scheme; use https".into())),
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(invalid("has no host".into()));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(invalid(
            "must not carry credentials; the key goes in the Authorization header".into(),
        ));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(invalid("must not have a query or fragment".into()));
    }
    Ok(url)
}

fn endpoint_of(base: &Url) -> Url {
    let mut endpoint = base.clone();
    let path = format!("{}/{ENDPOINT_PATH}", base.path().trim_end_matches('/'));
    endpoint.set_path(&path);
    endpoint
}
