//! [`TavilyClient`]: one HTTP request per call to Tavily's `/search` and `/extract`.

use std::fmt;
use std::sync::{OnceLock, PoisonError, RwLock};
use std::time::Duration;

use iris_tools_core::endpoint::sends_secrets_safely;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue, RETRY_AFTER};
use reqwest::{StatusCode, Url};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::credential::{ApiKey, KeySource, TAVILY_API_KEY_ENV};
use crate::error::{AuthFailure, Error, Result, one_line};
use crate::wire::{ExtractRequest, ExtractResponse, SearchRequest, SearchResponse};

/// The answer size past which the client stops reading: 20 extracted pages fit easily,
/// a runaway stream does not exhaust memory.
const MAX_RESPONSE_BYTES: usize = 32 * 1024 * 1024;
/// How much of a server's error text is quoted in an error message.
const MAX_SERVER_MESSAGE_CHARS: usize = 200;

/// A client for Tavily's search and extract API.
///
/// * The key is given explicitly ([`TavilyClient::new`]) or read from
///   `IRIS_PROVIDER_API_KEYS__TAVILY` at every request ([`TavilyClient::from_env`]), so
///   a host that stores the secret after start-up heals the tools without rebuilding
///   them; [`TavilyClient::set_api_key`] replaces the key at run time.
/// * The key is sent as `Authorization: Bearer <key>` (marked sensitive) and appears in
///   no `Debug` output, error or result.
/// * The base URL is configurable (default `https://api.tavily.com`); tests point it at a
///   local server. It must be `https`, or plain `http` only to a loopback host, so the
///   key never crosses a network unencrypted.
/// * Redirects are never followed: an answer `3xx` is a `WEB_HTTP_ERROR`, so the key
///   cannot travel on to a host the configuration did not name.
/// * Each request has one total deadline (connect, send, and reading the whole answer),
///   default 30 s.
/// * The HTTP client is built on first use and reused.
///
/// ```
/// use std::time::Duration;
/// use iris_web::TavilyClient;
///
/// # fn main() -> Result<(), iris_web::Error> {
/// let client = TavilyClient::new("tvly-example")
///     .with_base_url("http://127.0.0.1:8080")?
///     .with_timeout(Duration::from_secs(10))?;
/// assert_eq!(client.base_url(), "http://127.0.0.1:8080/");
/// assert!(!format!("{client:?}").contains("tvly-example"));
/// # Ok(()) }
/// ```
pub struct TavilyClient {
    key_source: KeySource,
    key_override: RwLock<Option<ApiKey>>,
    secret_name: String,
    /// Validated, ending in `/`.
    base_url: String,
    timeout: Duration,
    http: OnceLock<reqwest::Client>,
}

impl TavilyClient {
    /// Tavily's production API.
    pub const DEFAULT_BASE_URL: &'static str = "https://api.tavily.com";
    /// The default total deadline of one request.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

    /// A client with an explicit key. Errors name `IRIS_PROVIDER_API_KEYS__TAVILY` as the
    /// secret to supply when the key is missing or rejected.
    pub fn new(api_key: impl Into<ApiKey>) -> Self {
        Self::with_source(
            KeySource::Explicit(api_key.into()),
            TAVILY_API_KEY_ENV.to_owned(),
        )
    }

    /// A client that reads its key from `IRIS_PROVIDER_API_KEYS__TAVILY` at every
    /// request. A missing variable is not an error here: each call then fails with
    /// `WEB_AUTH_REQUIRED` naming the variable.
    pub fn from_env() -> Self {
        Self::from_env_var(TAVILY_API_KEY_ENV)
    }

    /// Like [`TavilyClient::from_env`] with another variable; errors name that variable.
    pub fn from_env_var(name: impl Into<String>) -> Self {
        let name = name.into();
        Self::with_source(KeySource::Env(name.clone()), name)
    }

    fn with_source(key_source: KeySource, secret_name: String) -> Self {
        Self {
            key_source,
            key_override: RwLock::new(None),
            secret_name,
            // The default is a constant that already has the validated shape.
            base_url: format!("{}/", Self::DEFAULT_BASE_URL),
            timeout: Self::DEFAULT_TIMEOUT,
            http: OnceLock::new(),
        }
    }

    /// Points the client at another server (a proxy, a test server). The URL must be
    /// `https` with a host, or plain `http` to a loopback host (`localhost`,
    /// `127.0.0.0/8`, `::1`), and carry no credentials, query or fragment.
    ///
    /// # Errors
    /// `WEB_CONFIG_INVALID` naming `base_url` when it breaks a rule.
    pub fn with_base_url(mut self, base_url: &str) -> Result<Self> {
        self.base_url = parse_base_url(base_url)?;
        Ok(self)
    }

    /// Sets the total deadline of one request.
    ///
    /// # Errors
    /// `WEB_CONFIG_INVALID` naming `timeout` when it is zero.
    pub fn with_timeout(mut self, timeout: Duration) -> Result<Self> {
        if timeout.is_zero() {
            return Err(Error::Config {
                field: "timeout",
                reason: "must be positive".into(),
            });
        }
        self.timeout = timeout;
        Ok(self)
    }

    /// Replaces the key for every later request (the host's answer to
    /// `WEB_AUTH_REQUIRED`). It takes precedence over the key source.
    pub fn set_api_key(&self, api_key: impl Into<ApiKey>) {
        *self
            .key_override
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Some(api_key.into());
    }

    /// Whether a non-blank key is available right now.
    pub fn has_api_key(&self) -> bool {
        self.api_key().is_some()
    }

    /// The secret errors ask the host for, e.g. `IRIS_PROVIDER_API_KEYS__TAVILY`.
    pub fn secret_name(&self) -> &str {
        &self.secret_name
    }

    /// The base URL, always ending in `/`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The total deadline of one request.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Runs one search within the client's deadline.
    ///
    /// # Errors
    /// `WEB_AUTH_REQUIRED` (no key, 401, 403), `WEB_RATE_LIMITED` (429),
    /// `WEB_HTTP_ERROR` (other statuses), `WEB_TIMEOUT`, `WEB_UNREACHABLE`,
    /// `WEB_INVALID_RESPONSE` (a 200 whose body is not the documented JSON).
    pub async fn search(&self, request: &SearchRequest) -> Result<SearchResponse> {
        self.search_within(request, self.timeout).await
    }

    /// Runs one extraction within the client's deadline. Per-URL failures are part of
    /// the response (`failed_results`), not an error.
    ///
    /// # Errors
    /// As [`TavilyClient::search`].
    pub async fn extract(&self, request: &ExtractRequest) -> Result<ExtractResponse> {
        self.extract_within(request, self.timeout).await
    }

    /// [`TavilyClient::search`] with a deadline the caller chose (the tools pass the
    /// shorter of the client's and the runtime's).
    pub(crate) async fn search_within(
        &self,
        request: &SearchRequest,
        deadline: Duration,
    ) -> Result<SearchResponse> {
        self.post("search", &request.body(), deadline).await
    }

    /// [`TavilyClient::extract`] with a deadline the caller chose.
    pub(crate) async fn extract_within(
        &self,
        request: &ExtractRequest,
        deadline: Duration,
    ) -> Result<ExtractResponse> {
        self.post("extract", &request.body(), deadline).await
    }

    fn api_key(&self) -> Option<ApiKey> {
        let override_key = self
            .key_override
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        override_key
            .filter(|k| !k.is_blank())
            .or_else(|| self.key_source.current())
    }

    fn auth_error(&self, failure: AuthFailure) -> Error {
        Error::AuthRequired {
            secret: self.secret_name.clone(),
            failure,
        }
    }

    fn http(&self) -> Result<&reqwest::Client> {
        if let Some(client) = self.http.get() {
            return Ok(client);
        }
        let built = reqwest::Client::builder()
            .user_agent(concat!("iris-web/", env!("CARGO_PKG_VERSION")))
            // A redirect would carry the Authorization header to a host the
            // configuration never named; a 3xx answer is reported instead.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| Error::Unreachable {
                base_url: self.base_url.clone(),
                reason: format!("the HTTP client could not start: {}", innermost(&e)),
            })?;
        // Two first calls may race and both build a client; one wins, the other is
        // dropped, and every later call reuses the winner.
        Ok(self.http.get_or_init(|| built))
    }

    /// One POST with a JSON body and a JSON answer, all within `deadline`.
    async fn post<B: Serialize, R: DeserializeOwned>(
        &self,
        endpoint: &'static str,
        body: &B,
        deadline: Duration,
    ) -> Result<R> {
        // The key is checked before anything touches the network, so a missing key
        // costs no request and says exactly which secret is needed.
        let key = self
            .api_key()
            .ok_or_else(|| self.auth_error(AuthFailure::Missing))?;
        let mut auth = HeaderValue::from_str(&format!("Bearer {}", key.expose()))
            .map_err(|_| self.auth_error(AuthFailure::Malformed))?;
        auth.set_sensitive(true);
        // Encoding plain strings, numbers and lists cannot fail; the error is mapped
        // rather than unwrapped because this crate never panics.
        let body = serde_json::to_vec(body).map_err(|e| Error::InvalidResponse {
            endpoint,
            reason: format!("the request could not be encoded: {e}"),
        })?;
        // The base URL was validated and ends in `/`, so the endpoint lands under its
        // path (`http://host/prefix/` + `search`).
        let url = format!("{}{endpoint}", self.base_url);
        let http = self.http()?;
        let request = http
            .post(url)
            .header(AUTHORIZATION, auth)
            .header(CONTENT_TYPE, "application/json")
            .body(body);
        let exchange = async {
            let mut response = request.send().await.map_err(|e| self.unreachable(&e))?;
            let status = response.status();
            let headers = response.headers().clone();
            let mut bytes = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(|e| self.unreachable(&e))? {
                if bytes.len() + chunk.len() > MAX_RESPONSE_BYTES {
                    return Err(Error::InvalidResponse {
                        endpoint,
                        reason: format!("the answer is larger than {MAX_RESPONSE_BYTES} bytes"),
                    });
                }
                bytes.extend_from_slice(&chunk);
            }
            Ok((status, headers, bytes))
        };
        let (status, headers, bytes) = tokio::time::timeout(deadline, exchange)
            .await
            .map_err(|_| Error::Timeout { timeout: deadline })??;
        self.interpret(endpoint, status, &headers, &bytes, &key)
    }

    /// Turns a complete answer into a typed response or the error its status means.
    fn interpret<R: DeserializeOwned>(
        &self,
        endpoint: &'static str,
        status: StatusCode,
        headers: &HeaderMap,
        bytes: &[u8],
        key: &ApiKey,
    ) -> Result<R> {
        match status.as_u16() {
            200..=299 => serde_json::from_slice(bytes).map_err(|e| Error::InvalidResponse {
                endpoint,
                reason: format!("not the documented JSON ({e})"),
            }),
            code @ (401 | 403) => Err(self.auth_error(AuthFailure::Rejected(code))),
            429 => Err(Error::RateLimited {
                retry_after: headers
                    .get(RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<u64>().ok())
                    .map(Duration::from_secs),
            }),
            code => Err(Error::Http {
                status: code,
                message: server_message(bytes).map(|m| redact(&m, key)),
            }),
        }
    }

    fn unreachable(&self, e: &reqwest::Error) -> Error {
        let what = if e.is_connect() {
            "connecting failed"
        } else if e.is_body() || e.is_decode() {
            "reading the answer failed"
        } else {
            "the request failed"
        };
        Error::Unreachable {
            base_url: self.base_url.clone(),
            reason: format!("{what}: {}", innermost(e)),
        }
    }
}

impl fmt::Debug for TavilyClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let source = match &self.key_source {
            KeySource::Explicit(_) => "explicit".to_owned(),
            KeySource::Env(var) => format!("env {var}"),
        };
        f.debug_struct("TavilyClient")
            .field("base_url", &self.base_url)
            .field("timeout", &self.timeout)
            .field("key_source", &source)
            .field("secret_name", &self.secret_name)
            .finish_non_exhaustive()
    }
}

/// Checks a base URL and gives it a trailing `/`, so endpoints join under its path.
///
/// Every request carries the key, so plain `http` is accepted only to a loopback host.
fn parse_base_url(text: &str) -> Result<String> {
    let invalid = |reason: String| Error::Config {
        field: "base_url",
        reason,
    };
    let mut url = Url::parse(text.trim()).map_err(|e| invalid(format!("is not a URL ({e})")))?;
    if url.host_str().is_none_or(str::is_empty) {
        return Err(invalid("has no host".into()));
    }
    match url.scheme() {
        "https" | "http" if sends_secrets_safely(url.as_str()) => {}
        "http" => {
            return Err(invalid(
                "uses plain http to a non-loopback host; the API key needs https".into(),
            ));
        }
        other => return Err(invalid(format!("must use https, not `{other}`"))),
    }
    if !url.username().is_empty() || url.password().is_some() {
        // Credentials in a URL end up in logs and error messages; the key belongs in
        // the Authorization header only.
        return Err(invalid("must not carry credentials".into()));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(invalid("must not have a query or fragment".into()));
    }
    if !url.path().ends_with('/') {
        let path = format!("{}/", url.path());
        url.set_path(&path);
    }
    Ok(url.into())
}

/// The deepest cause of an error, which names the real problem ("Connection refused")
/// rather than the wrapper's "error sending request".
fn innermost(e: &(dyn std::error::Error + 'static)) -> String {
    let mut current = e;
    while let Some(source) = current.source() {
        current = source;
    }
    one_line(&current.to_string(), MAX_SERVER_MESSAGE_CHARS)
}

/// The error text of a non-success answer: Tavily's `{"detail": {"error": …}}`, a
/// plain `detail`/`error`/`message` string, or the body itself when it is short text.
fn server_message(bytes: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(bytes);
    let message = match serde_json::from_slice::<Value>(bytes) {
        Ok(json) => [
            json.pointer("/detail/error"),
            json.get("detail"),
            json.get("error"),
            json.get("message"),
        ]
        .into_iter()
        .flatten()
        .find_map(Value::as_str)
        .map(str::to_owned),
        Err(_) => Some(text.into_owned()),
    }?;
    let line = one_line(&message, MAX_SERVER_MESSAGE_CHARS);
    (!line.is_empty()).then_some(line)
}

/// Replaces the key wherever a server echoed it, so it cannot reach the model.
fn redact(text: &str, key: &ApiKey) -> String {
    text.replace(key.expose(), "<redacted>")
}
