//! Support for code that `#[tool]` generates. Not public API: no stability promise.

use std::fmt::Display;
use std::marker::PhantomData;

use serde::Serialize;

use super::{IntoToolResult, Json};
use crate::error::codes;
use crate::result::ToolResult;

/// The error result for a body's `Err` (see [`IntoToolResult`] for the rules).
pub fn error_result<E: Display + 'static>(error: E) -> ToolResult {
    super::error_into_result(error)
}

/// Chooses how a body's return value becomes a result, by autoref
/// specialization: `(&&Kind::of(&v)).iris_result_kind().convert(v)` prefers
/// [`IntoToolResult`] and falls back to `Serialize` (as [`Json`]).
#[derive(Debug)]
pub struct Kind<T>(PhantomData<T>);

impl<T> Kind<T> {
    /// The kind of `value`'s type.
    pub fn of(_value: &T) -> Self {
        Kind(PhantomData)
    }
}

/// The value converts itself.
#[derive(Debug)]
pub struct IntoResultTag;

/// The value is serialized as JSON.
#[derive(Debug)]
pub struct SerializeTag;

/// First choice: the type implements [`IntoToolResult`].
pub trait ViaIntoToolResult {
    /// The tag for this kind.
    fn iris_result_kind(&self) -> IntoResultTag {
        IntoResultTag
    }
}
impl<T: IntoToolResult> ViaIntoToolResult for &Kind<T> {}

/// Second choice: the type implements `Serialize`.
pub trait ViaSerialize {
    /// The tag for this kind.
    fn iris_result_kind(&self) -> SerializeTag {
        SerializeTag
    }
}
impl<T: Serialize> ViaSerialize for Kind<T> {}

impl IntoResultTag {
    /// Converts with [`IntoToolResult`].
    pub fn convert<T: IntoToolResult>(self, value: T) -> ToolResult {
        value.into_tool_result()
    }
}

impl SerializeTag {
    /// Converts as [`Json`].
    pub fn convert<T: Serialize>(self, value: T) -> ToolResult {
        Json(value).into_tool_result()
    }
}

/// Runs a sync body on tokio's blocking pool (`execution_mode = "thread"`).
///
/// A panic in the body is resumed on the caller, exactly as if the body had run
/// inline, so the executor isolates it the same way.
pub async fn run_blocking<R, F>(body: F) -> Result<R, ToolResult>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    match tokio::task::spawn_blocking(body).await {
        Ok(value) => Ok(value),
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(_) => Err(ToolResult::err(
            codes::CANCELLED,
            "the blocking task was cancelled before it finished",
        )),
    }
}
