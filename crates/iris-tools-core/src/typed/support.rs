//! Support for code that `#[tool]` generates. Not public API: no stability promise.

use std::fmt::Display;
use std::marker::PhantomData;

use serde::Serialize;

use super::{IntoToolOutput, Json};
use crate::error::codes;
use crate::result::ToolOutput;

/// The error result for a body's `Err` (see [`IntoToolOutput`] for the rules).
pub fn error_result<E: Display + 'static>(error: E) -> ToolOutput {
    super::error_into_result(error)
}

/// Chooses how a body's return value becomes a result, by autoref
/// specialization: `(&&Kind::of(&v)).iris_result_kind().convert(v)` prefers
/// [`IntoToolOutput`] and falls back to `Serialize` (as [`Json`]).
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

/// First choice: the type implements [`IntoToolOutput`].
pub trait ViaIntoToolOutput {
    /// The tag for this kind.
    fn iris_result_kind(&self) -> IntoResultTag {
        IntoResultTag
    }
}
impl<T: IntoToolOutput> ViaIntoToolOutput for &Kind<T> {}

/// Second choice: the type implements `Serialize`.
pub trait ViaSerialize {
    /// The tag for this kind.
    fn iris_result_kind(&self) -> SerializeTag {
        SerializeTag
    }
}
impl<T: Serialize> ViaSerialize for Kind<T> {}

impl IntoResultTag {
    /// Converts with [`IntoToolOutput`].
    pub fn convert<T: IntoToolOutput>(self, value: T) -> ToolOutput {
        value.into_tool_output()
    }
}

impl SerializeTag {
    /// Converts as [`Json`].
    pub fn convert<T: Serialize>(self, value: T) -> ToolOutput {
        Json(value).into_tool_output()
    }
}

/// Runs a sync body on a thread of its own (`execution_mode = "thread"`), so a
/// blocking body never stalls the async runtime that awaits it.
///
/// Core depends on no async runtime, so this uses a plain `std` thread and a
/// `tokio::sync` channel instead of a runtime's blocking pool. A panic in the body is
/// resumed on the caller, exactly as if the body had run inline, so the executor
/// isolates it the same way.
pub async fn run_blocking<R, F>(body: F) -> Result<R, ToolOutput>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    let (send, receive) = tokio::sync::oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name("iris-tool".to_owned())
        .spawn(move || {
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body));
            // The caller may have stopped waiting (the call was cancelled); the value
            // is then dropped here.
            let _ = send.send(outcome);
        });
    if let Err(e) = spawned {
        return Err(ToolOutput::err(
            codes::IO_ERROR,
            format!("could not start a thread for the tool body: {e}"),
        ));
    }
    match receive.await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Err(_) => Err(ToolOutput::err(
            codes::CANCELLED,
            "the tool body's thread ended before it reported",
        )),
    }
}
