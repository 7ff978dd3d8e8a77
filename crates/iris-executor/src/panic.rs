//! Panic isolation: a tool body (or a middleware) that panics becomes a result.
//!
//! The executor polls bodies through [`CatchUnwind`] instead of spawning them on a
//! runtime task, so isolation works for borrowed futures and on every tokio runtime
//! flavour (current-thread included) without a `'static` bound.

use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};

/// A panic payload, as `catch_unwind` hands it back.
pub type PanicPayload = Box<dyn Any + Send + 'static>;

/// Polls an inner future and turns a panic during any poll into `Err(payload)`.
///
/// After a panic the inner future is never polled again: the wrapper reports the panic
/// once and the caller drops it. `AssertUnwindSafe` is sound here because the
/// panicked future is discarded, so no broken invariant inside it is observed later.
pub struct CatchUnwind<F> {
    inner: F,
}

impl<F> std::fmt::Debug for CatchUnwind<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CatchUnwind")
    }
}

impl<F> CatchUnwind<F> {
    /// Wraps a future.
    pub fn new(inner: F) -> Self {
        Self { inner }
    }
}

impl<F: Future + Unpin> Future for CatchUnwind<F> {
    type Output = Result<F::Output, PanicPayload>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        match catch_unwind(AssertUnwindSafe(|| Pin::new(&mut this.inner).poll(cx))) {
            Ok(Poll::Ready(value)) => Poll::Ready(Ok(value)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => Poll::Ready(Err(payload)),
        }
    }
}

/// Runs a synchronous closure, turning a panic into `Err(payload)`.
pub fn catch_sync<T>(f: impl FnOnce() -> T) -> Result<T, PanicPayload> {
    catch_unwind(AssertUnwindSafe(f))
}

/// Longest panic message kept, in characters: a panic can quote arbitrary input (a
/// 2 MB pattern, say), and the message travels to the model and the host's logs.
pub const MAX_PANIC_MESSAGE_CHARS: usize = 500;

/// The human-readable message of a panic payload (`panic!("…")` carries a `&str` or a
/// `String`; anything else is reported generically), cut to
/// [`MAX_PANIC_MESSAGE_CHARS`] characters with a `…` when longer.
///
/// ```
/// use iris_executor::panic_message;
/// let payload: Box<dyn std::any::Any + Send> = Box::new("x".repeat(10_000));
/// assert_eq!(panic_message(&payload).chars().count(), 501);
/// ```
pub fn panic_message(payload: &PanicPayload) -> String {
    let message = if let Some(s) = payload.downcast_ref::<&'static str>() {
        *s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.as_str()
    } else {
        "a non-string panic payload"
    };
    match message.char_indices().nth(MAX_PANIC_MESSAGE_CHARS) {
        None => message.to_owned(),
        Some((cut, _)) => format!("{}…", &message[..cut]),
    }
}
