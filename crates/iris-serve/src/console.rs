//! The web console at `/`: three static files compiled into the binary (no build
//! step), served with a strict Content-Security-Policy (scripts and styles from this
//! origin only, no inline script, no frames). The unified diff a pending
//! `edit_file` / `write_file` approval carries in `GET /v1/runs/{id}` is [`crate::diff`]'s.
//!
//! The console is a client of the API like any other: it lists runs, follows a run's
//! events over `GET /v1/runs/{id}/events` (read with `fetch`, so a bearer token can be
//! sent), and answers or cancels. The pages themselves carry no data, so they are
//! served without the token the API may need; the console asks for the token when the
//! API answers `SERVE_UNAUTHORIZED`.

use axum::Router;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

const INDEX_HTML: &str = include_str!("../console/index.html");
const APP_JS: &str = include_str!("../console/app.js");
const APP_CSS: &str = include_str!("../console/app.css");

/// The console's policy: nothing but this origin's script, style and API.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; \
     frame-ancestors 'none'";

/// The console's routes: `/`, `/console/app.js`, `/console/app.css`.
pub(crate) fn router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route(
            "/",
            get(|| async { asset("text/html; charset=utf-8", INDEX_HTML) }),
        )
        .route(
            "/console/app.js",
            get(|| async { asset("text/javascript; charset=utf-8", APP_JS) }),
        )
        .route(
            "/console/app.css",
            get(|| async { asset("text/css; charset=utf-8", APP_CSS) }),
        )
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::REFERRER_POLICY, "no-referrer"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}
