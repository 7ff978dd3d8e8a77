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

/// The human-readable message of a panic payload (`panic!("…")` carries a `&str` or a
/// `String`; anything else is reported generically).
pub fn panic_message(payload: &PanicPayload) -> String {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a non-string panic payload".to_owned()
    }
}
