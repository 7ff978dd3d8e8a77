//! HTTP hooks: `{type: http, url, headers, timeout_seconds}` POST the event's JSON wire
//! format ([`HookEvent::to_json`]) and read the same reply a command hook prints
//! ([`crate::reply`]) from the response body.
//!
//! Rules (documented in `docs/hooks.md`):
//! - the URL is `https`, or plain `http` only to this machine (`localhost`,
//!   `127.0.0.0/8`, `::1`; `iris_tools_core::endpoint::sends_secrets_safely`): an event
//!   holds the call's arguments, which must not cross a network in clear text;
//! - header values may name environment variables as `${NAME}`, read once when the hook
//!   is built (a missing one is a configuration error naming the variable, never the
//!   value); the values are marked sensitive and never printed;
//! - redirects are not followed: a 3xx, like any status other than 2xx, is
//!   `HOOK_HTTP_FAILED`, and so is a connection failure;
//! - the response body must be one JSON object of at most 1 MiB
//!   (`HOOK_PROTOCOL_ERROR` otherwise);
//! - the request's own timeout is the handler's `timeout_seconds` (when given); the
//!   hook's deadline (`timeout_seconds` of the hook, default 10 s) applies as for every
//!   hook, so the shorter one wins;
//! - failures follow the dispatcher's policy: a failing `tool.before` hook denies the
//!   call (fail closed).

use std::collections::BTreeMap;

use iris_tools_core::BoxFuture;
use iris_tools_core::endpoint::sends_secrets_safely;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};

use crate::error::{HookError, HookErrorKind};
use crate::event::HookEvent;
use crate::registration::{HookHandler, HookResult};
use crate::reply::parse_answer;

/// The largest response body an HTTP hook may answer with.
pub const MAX_HTTP_REPLY_BYTES: usize = 1024 * 1024;

/// A hook handler that POSTs the event to a URL.
///
/// ```
/// use std::collections::BTreeMap;
/// use iris_hooks::http::HttpHook;
///
/// let hook = HttpHook::new("http://127.0.0.1:8080/hooks", &BTreeMap::new(), None).unwrap();
/// assert_eq!(hook.url(), "http://127.0.0.1:8080/hooks");
/// let err = HttpHook::new("http://hooks.example.com/", &BTreeMap::new(), None).unwrap_err();
/// assert_eq!(err.code(), "HOOK_INVALID_CONFIG");
/// ```
#[derive(Clone)]
pub struct HttpHook {
    url: reqwest::Url,
    headers: HeaderMap,
    client: reqwest::Client,
}

impl std::fmt::Debug for HttpHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Header values may hold secrets: names only.
        let names: Vec<&str> = self.headers.keys().map(HeaderName::as_str).collect();
        f.debug_struct("HttpHook")
            .field("url", &self.url.as_str())
            .field("headers", &names)
            .finish_non_exhaustive()
    }
}

impl HttpHook {
    /// A hook posting to `url` with `headers` (values may name `${ENV_VAR}`s, read now
    /// from the process environment) and an optional request timeout in seconds.
    pub fn new(
        url: &str,
        headers: &BTreeMap<String, String>,
        timeout_seconds: Option<f64>,
    ) -> Result<Self, HookError> {
        Self::with_env(url, headers, timeout_seconds, |name| {
            std::env::var(name).ok()
        })
    }

    /// Like [`HttpHook::new`], reading `${NAME}`s through `env` (for hosts that keep
    /// their own environment).
    pub fn with_env(
        url: &str,
        headers: &BTreeMap<String, String>,
        timeout_seconds: Option<f64>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, HookError> {
        let invalid = |msg: String| HookError::new(HookErrorKind::InvalidConfig, msg);
        let parsed = reqwest::Url::parse(url)
            .map_err(|e| invalid(format!("handler.url `{url}` is not a URL: {e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") || !sends_secrets_safely(parsed.as_str()) {
            return Err(invalid(format!(
                "handler.url `{url}` must be https, or plain http to this machine only \
                 (localhost, 127.0.0.0/8, ::1)"
            )));
        }
        let mut map = HeaderMap::new();
        for (name, template) in headers {
            let header = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| invalid(format!("handler.headers: `{name}` is not a header name")))?;
            let text = expand_env(template, &env)
                .map_err(|msg| invalid(format!("handler.headers.{name}: {msg}")))?;
            let mut value = HeaderValue::from_str(&text).map_err(|_| {
                invalid(format!(
                    "handler.headers.{name}: the value is not a valid header value"
                ))
            })?;
            value.set_sensitive(true);
            map.insert(header, value);
        }
        let mut builder = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none());
        if let Some(seconds) = timeout_seconds {
            let timeout = crate::registration::timeout_from_seconds(seconds).ok_or_else(|| {
                invalid(format!(
                    "handler.timeout_seconds must be a positive number of seconds, got {seconds:?}"
                ))
            })?;
            builder = builder.timeout(timeout);
        }
        let client = builder
            .build()
            .map_err(|e| invalid(format!("cannot build the HTTP client: {e}")))?;
        Ok(Self {
            url: parsed,
            headers: map,
            client,
        })
    }

    /// The URL events are posted to.
    pub fn url(&self) -> &str {
        self.url.as_str()
    }

    async fn run(&self, event: HookEvent) -> Result<HookResult, HookError> {
        let kind = event.kind();
        let body = serde_json::to_vec(&event.to_json())
            .map_err(|e| HookError::failed(format!("cannot encode the event: {e}")))?;
        let failed = |msg: String| HookError::new(HookErrorKind::HttpFailed, msg);
        let mut response = self
            .client
            .post(self.url.clone())
            .headers(self.headers.clone())
            .header(CONTENT_TYPE, "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| {
                if e.is_timeout() {
                    HookError::new(
                        HookErrorKind::Timeout,
                        "the HTTP request timed out (the handler's `timeout_seconds`)",
                    )
                } else {
                    failed(format!("POST {} failed: {}", self.url, error_chain(&e)))
                }
            })?;
        let status = response.status();
        if !status.is_success() {
            let redirect = if status.is_redirection() {
                " (redirects are not followed)"
            } else {
                ""
            };
            return Err(failed(format!(
                "POST {} answered {status}{redirect}",
                self.url
            )));
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| {
            if e.is_timeout() {
                HookError::new(
                    HookErrorKind::Timeout,
                    "the HTTP response timed out (the handler's `timeout_seconds`)",
                )
            } else {
                failed(format!("reading the reply failed: {}", error_chain(&e)))
            }
        })? {
            if bytes.len() + chunk.len() > MAX_HTTP_REPLY_BYTES {
                return Err(HookError::new(
                    HookErrorKind::Protocol,
                    format!(
                        "the reply is longer than {MAX_HTTP_REPLY_BYTES} bytes; a hook must answer one small JSON object"
                    ),
                ));
            }
            bytes.extend_from_slice(&chunk);
        }
        let text = String::from_utf8(bytes)
            .map_err(|_| HookError::new(HookErrorKind::Protocol, "the reply is not UTF-8"))?;
        parse_answer(kind, &text)
            .map_err(|message| HookError::new(HookErrorKind::Protocol, message))
    }
}

impl HookHandler for HttpHook {
    fn handle(&self, event: HookEvent) -> BoxFuture<'_, Result<HookResult, HookError>> {
        Box::pin(self.run(event))
    }
}

/// Replaces each `${NAME}` in `template` with the variable's value.
fn expand_env(template: &str, env: &impl Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| "`${` without a closing `}`".to_owned())?;
        let name = &after[..end];
        let valid = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(format!(
                "`${{{name}}}` does not name an environment variable"
            ));
        }
        let value =
            env(name).ok_or_else(|| format!("the environment variable `{name}` is not set"))?;
        out.push_str(&value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// An error with its sources, which say why a connection failed.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
