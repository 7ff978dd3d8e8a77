//! The routes: each parses its request into the [`crate::api`] types (a body, query
//! or header that does not parse is `SERVE_REQUEST_INVALID`, a body over
//! [`MAX_BODY_BYTES`] `SERVE_REQUEST_TOO_LARGE`) and asks the [`Host`].

use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, Extension, Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::de::DeserializeOwned;

use crate::api::{AnswerRun, CreateRun, ListQuery, RunAccepted};
use crate::auth::{self, Gate};
use crate::error::{ApiError, codes};
use crate::host::Host;
use crate::limit::{self, ClientLimit, Permit};
use crate::{openapi, sse};

/// The largest request body accepted.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

type Shared = State<Arc<Host>>;

/// The API's router over `host`, behind `gate`.
pub(crate) fn router(host: Arc<Host>, gate: Gate, limit: ClientLimit) -> Router {
    Router::new()
        .route("/v1/runs", post(create).get(list))
        .route("/v1/runs/{id}", get(show))
        .route("/v1/events", get(feed))
        .route("/v1/runs/{id}/answer", post(answer))
        .route("/v1/runs/{id}/cancel", post(cancel))
        .route("/v1/runs/{id}/events", get(events))
        .route("/v1/runs/{id}/artifacts/{call_id}", get(artifact))
        .route("/v1/openapi.json", get(openapi_json))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::from_fn_with_state(limit, limit::check))
        .layer(middleware::from_fn_with_state(gate, auth::check))
        .merge(crate::console::router())
        .with_state(host)
}

/// A JSON body of type `T`.
fn body<T: DeserializeOwned>(
    host: &Host,
    body: Result<Bytes, BytesRejection>,
) -> Result<T, ApiError> {
    let bytes = body.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(
                codes::SERVE_REQUEST_TOO_LARGE,
                format!("the body is over {MAX_BODY_BYTES} bytes"),
            )
        } else {
            ApiError::invalid(format!("the body cannot be read: {e}"))
        }
    })?;
    // The parser may quote the body; a secret in it stays out of the message.
    serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::invalid(host.masker.text(&format!("the body is not valid: {e}"))))
}

async fn create(
    State(host): Shared,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let request: CreateRun = body(&host, raw)?;
    let run_id = host.start(request).await?;
    let location = format!("/v1/runs/{run_id}");
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(RunAccepted { run_id }),
    )
        .into_response())
}

async fn list(
    State(host): Shared,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(query) =
        query.map_err(|e| ApiError::invalid(format!("the query is not valid: {e}")))?;
    Ok(Json(host.list(query).await?).into_response())
}

async fn show(State(host): Shared, Path(id): Path<String>) -> Result<Response, ApiError> {
    Ok(Json(host.view(&id).await?).into_response())
}

async fn answer(
    State(host): Shared,
    Path(id): Path<String>,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let request: AnswerRun = body(&host, raw)?;
    host.answer(&id, &request.interaction_id, request.answer.into_answer())
        .await?;
    Ok((StatusCode::ACCEPTED, Json(RunAccepted { run_id: id })).into_response())
}

async fn cancel(State(host): Shared, Path(id): Path<String>) -> Result<Response, ApiError> {
    Ok(Json(host.cancel(&id).await?).into_response())
}

async fn events(
    State(host): Shared,
    Path(id): Path<String>,
    Extension(permit): Extension<Arc<Permit>>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let after = match headers.get("last-event-id") {
        None => 0,
        Some(value) => value
            .to_str()
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .ok_or_else(|| {
                ApiError::invalid("`Last-Event-ID` must be the id of an event this stream sent")
            })?,
    };
    // A run that does not exist is a 404, not an empty stream.
    host.view(&id).await?;
    Ok(sse::stream(host, id, after, permit).into_response())
}

async fn feed(State(host): Shared, Extension(permit): Extension<Arc<Permit>>) -> Response {
    crate::feed::stream(&host, permit).into_response()
}

async fn artifact(
    State(host): Shared,
    Path((id, call_id)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    crate::artifact::download(&host, &id, &call_id).await
}

async fn openapi_json() -> Response {
    Json(openapi::document()).into_response()
}

async fn not_found() -> ApiError {
    ApiError::new(
        codes::SERVE_NOT_FOUND,
        "no such route; the API is described at /v1/openapi.json",
    )
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        codes::SERVE_METHOD_NOT_ALLOWED,
        "this route does not take that method; see /v1/openapi.json",
    )
}
