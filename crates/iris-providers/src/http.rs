//! What the HTTP clients share: the key that never prints, base-URL rules, sending with
//! a timeout, status codes to [`ProviderError`]s, `Retry-After` parsing, and reading an
//! SSE body.

use std::fmt;
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};
use reqwest::{Response, StatusCode, Url};
use serde_json::Value;

use crate::provider_error::ProviderError;
use crate::sse::{SseDecoder, SseEvent};

/// The largest non-streamed answer read: a long model turn fits easily, a runaway body
/// does not exhaust memory.
const MAX_BODY_BYTES: usize = 32 * 1024 * 1024;
/// How much of a server's error text an error quotes.
const MAX_MESSAGE_CHARS: usize = 300;

/// An API key. `Debug` is redacted; there is no `Display` or `Serialize`.
#[derive(Clone, Default)]
pub(crate) struct Secret(String);

impl Secret {
    pub(crate) fn new(key: String) -> Self {
        Self(key.trim().to_owned())
    }

    pub(crate) fn is_blank(&self) -> bool {
        self.0.is_empty()
    }

    /// A header value holding `prefix` + the key, marked sensitive (so `Debug` of the
    /// request and HTTP/2 header compression leave it out).
    pub(crate) fn header(&self, prefix: &str) -> Result<HeaderValue, ProviderError> {
        let mut value = HeaderValue::from_str(&format!("{prefix}{}", self.0)).map_err(|_| {
            ProviderError::Config {
                field: "api_key",
                reason: "holds characters an HTTP header cannot carry".into(),
            }
        })?;
        value.set_sensitive(true);
        Ok(value)
    }

    /// `text` with every occurrence of the key replaced, for quoting server messages.
    pub(crate) fn redact(&self, text: &str) -> String {
        if self.0.len() < 4 {
            return text.to_owned();
        }
        text.replace(&self.0, "<redacted>")
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.is_blank() {
            "<none>"
        } else {
            "<redacted>"
        })
    }
}

/// The connection settings and the lazily built HTTP client of one provider client.
pub(crate) struct Transport {
    pub(crate) key: Secret,
    /// Validated, ending in `/`.
    base_url: String,
    timeout: Duration,
    http: OnceLock<reqwest::Client>,
}

impl Transport {
    /// A transport to `default_base_url`, an https constant with no trailing `/`.
    pub(crate) fn new(key: String, default_base_url: &str) -> Self {
        Self {
            key: Secret::new(key),
            base_url: format!("{default_base_url}/"),
            timeout: DEFAULT_TIMEOUT,
            http: OnceLock::new(),
        }
    }

    pub(crate) fn set_base_url(&mut self, text: &str) -> Result<(), ProviderError> {
        self.base_url = parse_base_url(text, &self.key)?.into();
        Ok(())
    }

    pub(crate) fn set_timeout(&mut self, timeout: Duration) -> Result<(), ProviderError> {
        if timeout.is_zero() {
            return Err(ProviderError::Config {
                field: "timeout",
                reason: "must be positive".into(),
            });
        }
        self.timeout = timeout;
        Ok(())
    }

    pub(crate) fn base_url(&self) -> &str {
        &self.base_url
    }

    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }

    /// A client's `Debug`: named `name`, with the base URL, the timeout and the
    /// redacted key first; the caller adds its own fields.
    pub(crate) fn debug_struct<'a, 'b>(
        &self,
        f: &'a mut fmt::Formatter<'b>,
        name: &str,
    ) -> fmt::DebugStruct<'a, 'b> {
        let mut debug = f.debug_struct(name);
        debug
            .field("base_url", &self.base_url())
            .field("timeout", &self.timeout)
            .field("api_key", &self.key);
        debug
    }

    fn http(&self) -> Result<&reqwest::Client, ProviderError> {
        if let Some(client) = self.http.get() {
            return Ok(client);
        }
        let built = reqwest::Client::builder()
            .user_agent(concat!("iris-providers/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(self.timeout.min(Duration::from_secs(30)))
            // A redirect could carry a key header (`x-api-key` is not one reqwest strips)
            // to another host; provider APIs do not redirect.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| ProviderError::Unavailable {
                status: None,
                reason: format!("the HTTP client could not start: {}", innermost(&e)),
            })?;
        // Two first requests may race and both build a client; one wins.
        Ok(self.http.get_or_init(|| built))
    }

    /// POSTs a JSON body to `path` under the base URL and returns the response once its
    /// status is a success; any other status becomes the error it means.
    pub(crate) async fn post(
        &self,
        path: &str,
        headers: HeaderMap,
        body: &Value,
    ) -> Result<Response, ProviderError> {
        let body = serde_json::to_vec(body).map_err(|e| ProviderError::InvalidRequest {
            status: None,
            message: format!("the request could not be encoded: {e}"),
        })?;
        // The base URL was validated and ends in `/`, so `path` lands under its path
        // (`http://host/v1/` + `chat/completions`).
        let url = format!("{}{path}", self.base_url);
        let request = self
            .http()?
            .post(url)
            .headers(headers)
            .header(CONTENT_TYPE, "application/json")
            .body(body);
        let response = tokio::time::timeout(self.timeout, request.send())
            .await
            .map_err(|_| self.timed_out())?
            .map_err(|e| self.send_error(&e))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let headers = response.headers().clone();
        // The error body is best effort: a status alone is still a good error.
        let bytes = self.read_all(response).await.unwrap_or_default();
        Err(status_error(
            status,
            &headers,
            &bytes,
            &self.key,
            SystemTime::now(),
        ))
    }

    /// The whole body, within the timeout per chunk and the size cap.
    pub(crate) async fn read_all(&self, mut response: Response) -> Result<Vec<u8>, ProviderError> {
        let mut bytes = Vec::new();
        while let Some(chunk) = self.next_chunk(&mut response).await? {
            if bytes.len() + chunk.len() > MAX_BODY_BYTES {
                return Err(ProviderError::BadResponse {
                    reason: format!("the answer is larger than {MAX_BODY_BYTES} bytes"),
                });
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(bytes)
    }

    /// The next body chunk, or `None` at the end.
    async fn next_chunk(
        &self,
        response: &mut Response,
    ) -> Result<Option<impl std::ops::Deref<Target = [u8]>>, ProviderError> {
        tokio::time::timeout(self.timeout, response.chunk())
            .await
            .map_err(|_| self.timed_out())?
            .map_err(|e| ProviderError::BadResponse {
                reason: format!("the answer was cut off: {}", innermost(&e)),
            })
    }

    /// The next SSE events of a streamed body: `Ok(None)` when the body ended cleanly.
    pub(crate) async fn next_events(
        &self,
        response: &mut Response,
        decoder: &mut SseDecoder,
    ) -> Result<Option<Vec<SseEvent>>, ProviderError> {
        loop {
            let Some(chunk) = self.next_chunk(response).await? else {
                return Ok(None);
            };
            let events = decoder
                .feed(&chunk)
                .map_err(|reason| ProviderError::BadResponse { reason })?;
            if !events.is_empty() {
                return Ok(Some(events));
            }
        }
    }

    fn timed_out(&self) -> ProviderError {
        ProviderError::Timeout {
            after: self.timeout,
        }
    }

    fn send_error(&self, e: &reqwest::Error) -> ProviderError {
        if e.is_timeout() {
            return self.timed_out();
        }
        let what = if e.is_connect() {
            "connecting failed"
        } else {
            "the request failed"
        };
        ProviderError::Unavailable {
            status: None,
            reason: self.key.redact(&format!("{what}: {}", innermost(e))),
        }
    }
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.debug_struct(f, "Transport").finish_non_exhaustive()
    }
}

/// The default wait for an answer's head or its next chunk. With the runner's four
/// attempts a provider that never answers fails in about nine minutes; a model whose
/// non-streamed turns take longer needs a larger `model.timeout_seconds`.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// Whether a response is an SSE stream (else a server ignored `stream: true`).
pub(crate) fn is_event_stream(response: &Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("text/event-stream"))
}

/// Checks a base URL and gives it a trailing `/`, so endpoints join under its path.
///
/// Plain `http` is fine for a loopback host, and for any host when there is no key (a
/// local OpenAI-compatible server on the LAN); a key never crosses a network
/// unencrypted. Messages never quote the URL: a malformed one may hold a credential.
pub(crate) fn parse_base_url(text: &str, key: &Secret) -> Result<Url, ProviderError> {
    let invalid = |reason: String| ProviderError::Config {
        field: "base_url",
        reason,
    };
    let mut url =
        Url::parse(text.trim()).map_err(|e| invalid(format!("is not an absolute URL ({e})")))?;
    let Some(host) = url.host_str().filter(|h| !h.is_empty()) else {
        return Err(invalid("has no host".into()));
    };
    match url.scheme() {
        "https" => {}
        "http" if is_loopback(host) || key.is_blank() => {}
        "http" => {
            return Err(invalid(
                "uses plain http to a non-loopback host; the API key needs https".into(),
            ));
        }
        other => return Err(invalid(format!("has scheme `{other}`; use https"))),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(invalid(
            "must not carry credentials; the key goes in a header".into(),
        ));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(invalid("must not have a query or fragment".into()));
    }
    if !url.path().ends_with('/') {
        let path = format!("{}/", url.path());
        url.set_path(&path);
    }
    Ok(url)
}

fn is_loopback(host: &str) -> bool {
    iris_tools_core::endpoint::is_loopback_host(host)
}

/// The error a non-success status means.
pub(crate) fn status_error(
    status: StatusCode,
    headers: &HeaderMap,
    body: &[u8],
    key: &Secret,
    now: SystemTime,
) -> ProviderError {
    let message = server_message(body).map(|m| key.redact(&m));
    let google = GoogleDetails::parse(body);
    match status.as_u16() {
        code @ (401 | 403) => ProviderError::Auth {
            status: code,
            message,
        },
        // Gemini answers a bad key with 400 `INVALID_ARGUMENT`, reason `API_KEY_INVALID`.
        400 if google.key_invalid => ProviderError::Auth {
            status: 400,
            message,
        },
        429 => ProviderError::RateLimited {
            retry_after: retry_after(headers, now).or(google.retry_delay),
            message,
        },
        code @ (408 | 500..=599) => ProviderError::Unavailable {
            status: Some(code),
            reason: message.unwrap_or_else(|| reason_phrase(status)),
        },
        code @ 300..=399 => ProviderError::BadResponse {
            reason: format!("unexpected redirect (HTTP {code})"),
        },
        code => ProviderError::InvalidRequest {
            status: Some(code),
            message: message.unwrap_or_else(|| reason_phrase(status)),
        },
    }
}

/// What Google's `google.rpc` error details (`error.details[]` of a Gemini error body)
/// say: a `RetryInfo` with `retryDelay` (a protobuf duration, `"37s"`), an `ErrorInfo`
/// with reason `API_KEY_INVALID`.
#[derive(Debug, Default, PartialEq)]
struct GoogleDetails {
    retry_delay: Option<Duration>,
    key_invalid: bool,
}

impl GoogleDetails {
    fn parse(body: &[u8]) -> Self {
        let Ok(json) = serde_json::from_slice::<Value>(body) else {
            return Self::default();
        };
        let Some(details) = json.pointer("/error/details").and_then(Value::as_array) else {
            return Self::default();
        };
        let of_type = |suffix: &'static str| {
            details.iter().filter(move |d| {
                d.get("@type")
                    .and_then(Value::as_str)
                    .is_some_and(|t| t.ends_with(suffix))
            })
        };
        Self {
            retry_delay: of_type("google.rpc.RetryInfo")
                .find_map(|d| d.get("retryDelay")?.as_str())
                .and_then(parse_go_duration),
            key_invalid: of_type("google.rpc.ErrorInfo")
                .any(|d| d.get("reason").and_then(Value::as_str) == Some("API_KEY_INVALID")),
        }
    }
}

fn reason_phrase(status: StatusCode) -> String {
    status.canonical_reason().unwrap_or("no message").to_owned()
}

/// The error text of a non-success answer or an in-stream error: `error.message`
/// (OpenAI and Anthropic), a plain `message`/`error`/`detail` string, or the body itself
/// when it is not JSON.
pub(crate) fn server_message(body: &[u8]) -> Option<String> {
    let message = match serde_json::from_slice::<Value>(body) {
        Ok(json) => [
            json.pointer("/error/message"),
            json.get("message"),
            json.get("error"),
            json.get("detail"),
        ]
        .into_iter()
        .flatten()
        .find_map(Value::as_str)
        .map(str::to_owned),
        Err(_) => Some(String::from_utf8_lossy(body).into_owned()),
    }?;
    let line = one_line(&message);
    (!line.is_empty()).then_some(line)
}

/// `text` on one line, at most [`MAX_MESSAGE_CHARS`] characters.
pub(crate) fn one_line(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.chars().count() <= MAX_MESSAGE_CHARS {
        return joined;
    }
    let mut cut: String = joined.chars().take(MAX_MESSAGE_CHARS).collect();
    cut.push('…');
    cut
}

/// How long a 429 asks to wait, from the first header that says: `retry-after-ms`
/// (OpenAI), `Retry-After` (seconds or an HTTP date), else OpenAI's
/// `x-ratelimit-reset-requests` / `-tokens` for whichever limit is exhausted.
pub(crate) fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let text = |name: &str| {
        headers
            .get(HeaderName::from_bytes(name.as_bytes()).ok()?)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && let Ok(d) = Duration::try_from_secs_f64(ms / 1000.0)
    {
        return Some(d);
    }
    if let Some(value) = headers.get(RETRY_AFTER).and_then(|v| v.to_str().ok()) {
        let value = value.trim();
        if let Ok(seconds) = value.parse::<u64>() {
            return Some(Duration::from_secs(seconds));
        }
        if let Some(at) = parse_http_date(value) {
            return Some(at.duration_since(now).unwrap_or(Duration::ZERO));
        }
    }
    ["requests", "tokens"]
        .into_iter()
        .filter(|limit| text(&format!("x-ratelimit-remaining-{limit}")) == Some("0"))
        .filter_map(|limit| text(&format!("x-ratelimit-reset-{limit}")).and_then(parse_go_duration))
        .max()
}

/// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`, the form HTTP senders must use).
pub(crate) fn parse_http_date(text: &str) -> Option<SystemTime> {
    let mut fields = text.split_whitespace();
    let _weekday = fields.next()?.strip_suffix(',')?;
    let day: u32 = fields.next()?.parse().ok()?;
    let month = match fields.next()? {
        "Jan" => 1,
        "Feb" => 2,
        "Mar" => 3,
        "Apr" => 4,
        "May" => 5,
        "Jun" => 6,
        "Jul" => 7,
        "Aug" => 8,
        "Sep" => 9,
        "Oct" => 10,
        "Nov" => 11,
        "Dec" => 12,
        _ => return None,
    };
    let year: i64 = fields.next()?.parse().ok()?;
    let mut clock = fields.next()?.split(':').map(str::parse::<u64>);
    let (h, m, s) = (
        clock.next()?.ok()?,
        clock.next()?.ok()?,
        clock.next()?.ok()?,
    );
    if fields.next()? != "GMT" || fields.next().is_some() || clock.next().is_some() {
        return None;
    }
    // HTTP dates are four-digit years; outside them the date arithmetic below could
    // overflow on a hostile header.
    if !(1..=31).contains(&day) || !(1970..=9999).contains(&year) || h > 23 || m > 59 || s > 60 {
        return None;
    }
    let days = u64::try_from(days_from_civil(year, month, day)).ok()?;
    let seconds = days
        .checked_mul(86_400)?
        .checked_add(h * 3600 + m * 60 + s)?;
    UNIX_EPOCH.checked_add(Duration::from_secs(seconds))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = i64::from((month + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A Go-style duration as OpenAI's rate-limit headers write it: `1s`, `6m0s`, `20ms`,
/// `1h2m3.5s`.
pub(crate) fn parse_go_duration(text: &str) -> Option<Duration> {
    let mut rest = text.trim();
    if rest.is_empty() {
        return None;
    }
    let mut total = 0.0_f64;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..number_len].parse().ok()?;
        rest = &rest[number_len..];
        let (unit, len) = [
            ("ms", 0.001),
            ("us", 0.000_001),
            ("µs", 0.000_001),
            ("ns", 0.000_000_001),
            ("h", 3600.0),
            ("m", 60.0),
            ("s", 1.0),
        ]
        .into_iter()
        .find(|(name, _)| rest.starts_with(name))
        .map(|(name, scale)| (scale, name.len()))?;
        total += number * unit;
        rest = &rest[len..];
    }
    Duration::try_from_secs_f64(total).ok()
}

/// The deepest cause of an error ("Connection refused" rather than "error sending
/// request"), on one line.
pub(crate) fn innermost(e: &(dyn std::error::Error + 'static)) -> String {
    let mut current = e;
    while let Some(source) = current.source() {
        current = source;
    }
    one_line(&current.to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // Tests fail by panicking.

    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(
                HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        map
    }

    #[test]
    fn retry_after_reads_every_documented_form() {
        // 1994-11-06T08:49:37Z
        let now = UNIX_EPOCH + Duration::from_secs(784_111_777);
        type Case<'a> = (&'a [(&'a str, &'a str)], Option<Duration>);
        let cases: &[Case<'_>] = &[
            (&[("retry-after", "7")], Some(Duration::from_secs(7))),
            (
                &[("retry-after", "Sun, 06 Nov 1994 08:50:07 GMT")],
                Some(Duration::from_secs(30)),
            ),
            // A date in the past means "now".
            (
                &[("retry-after", "Sun, 06 Nov 1994 08:49:00 GMT")],
                Some(Duration::ZERO),
            ),
            (
                &[("retry-after-ms", "250"), ("retry-after", "9")],
                Some(Duration::from_millis(250)),
            ),
            (
                &[
                    ("x-ratelimit-remaining-requests", "0"),
                    ("x-ratelimit-reset-requests", "1m30s"),
                    ("x-ratelimit-remaining-tokens", "500"),
                    ("x-ratelimit-reset-tokens", "6m0s"),
                ],
                Some(Duration::from_secs(90)),
            ),
            (
                &[
                    ("x-ratelimit-remaining-tokens", "0"),
                    ("x-ratelimit-reset-tokens", "20ms"),
                ],
                Some(Duration::from_millis(20)),
            ),
            (&[("retry-after", "soon")], None),
            (&[], None),
        ];
        for (pairs, expected) in cases {
            assert_eq!(retry_after(&headers(pairs), now), *expected, "{pairs:?}");
        }
    }

    #[test]
    fn google_error_details_give_the_wait_and_the_bad_key() {
        let now = UNIX_EPOCH;
        let key = Secret::new("AIza-test-key".into());
        let limited = serde_json::json!({"error": {"code": 429, "status": "RESOURCE_EXHAUSTED",
        "message": "You exceeded your current quota.",
        "details": [
            {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"}
        ]}});
        let err = status_error(
            StatusCode::TOO_MANY_REQUESTS,
            &HeaderMap::new(),
            limited.to_string().as_bytes(),
            &key,
            now,
        );
        assert_eq!(err.retry_after(), Some(Duration::from_secs(37)));
        // A header still wins over the body.
        let err = status_error(
            StatusCode::TOO_MANY_REQUESTS,
            &headers(&[("retry-after", "2")]),
            limited.to_string().as_bytes(),
            &key,
            now,
        );
        assert_eq!(err.retry_after(), Some(Duration::from_secs(2)));

        let bad_key = serde_json::json!({"error": {"code": 400, "status": "INVALID_ARGUMENT",
            "message": "API key not valid. Please pass a valid API key.",
            "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "API_KEY_INVALID", "domain": "googleapis.com"}]}});
        let err = status_error(
            StatusCode::BAD_REQUEST,
            &HeaderMap::new(),
            bad_key.to_string().as_bytes(),
            &key,
            now,
        );
        assert_eq!(err.code(), "PROVIDER_AUTH");
        // Any other 400 stays an invalid request.
        let other = serde_json::json!({"error": {"code": 400, "message": "bad field"}});
        let err = status_error(
            StatusCode::BAD_REQUEST,
            &HeaderMap::new(),
            other.to_string().as_bytes(),
            &key,
            now,
        );
        assert_eq!(err.code(), "PROVIDER_INVALID_REQUEST");
    }

    #[test]
    fn http_dates_and_go_durations_parse() {
        assert_eq!(
            parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"),
            Some(UNIX_EPOCH)
        );
        assert_eq!(
            parse_http_date("Tue, 29 Feb 2000 12:00:00 GMT"),
            Some(UNIX_EPOCH + Duration::from_secs(951_825_600))
        );
        assert_eq!(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT"), None);
        // Years a hostile header may carry: refused, not overflowed.
        for year in [
            "-9223372036854775808",
            "9223372036854775807",
            "1969",
            "10000",
        ] {
            assert_eq!(
                parse_http_date(&format!("Thu, 01 Jan {year} 00:00:00 GMT")),
                None,
                "{year}"
            );
        }
        assert!(parse_http_date("Fri, 31 Dec 9999 23:59:59 GMT").is_some());
        assert_eq!(
            parse_go_duration("1h2m3.5s"),
            Some(Duration::from_millis(3_723_500))
        );
        assert_eq!(parse_go_duration("17ms"), Some(Duration::from_millis(17)));
        assert_eq!(parse_go_duration("5x"), None);
        assert_eq!(parse_go_duration(""), None);
    }

    #[test]
    fn base_urls_keep_keys_off_plain_http() {
        let key = Secret::new("sk-test".into());
        let none = Secret::default();
        assert_eq!(
            parse_base_url("http://127.0.0.1:8080/v1", &key)
                .unwrap()
                .as_str(),
            "http://127.0.0.1:8080/v1/"
        );
        assert!(parse_base_url("http://[::1]:8080", &key).is_ok());
        assert!(parse_base_url("http://gpu-box.lan:8000/v1", &none).is_ok());
        for bad in [
            "http://gpu-box.lan:8000/v1",
            "ftp://example.com",
            "https://user:pw@example.com",
            "https://example.com/?key=1",
            "not a url",
        ] {
            let err = parse_base_url(bad, &key).unwrap_err();
            assert_eq!(err.code(), "PROVIDER_CONFIG_INVALID", "{bad}");
            assert!(!err.to_string().contains("pw"), "{err}");
        }
    }

    #[test]
    fn secrets_never_print() {
        let key = Secret::new("sk-live-1234567890".into());
        assert_eq!(format!("{key:?}"), "<redacted>");
        assert_eq!(
            key.redact("bad key sk-live-1234567890 given"),
            "bad key <redacted> given"
        );
        assert!(key.header("Bearer ").unwrap().is_sensitive());
    }
}
