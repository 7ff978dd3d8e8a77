//! The per-client concurrency limit: each client address may have at most
//! [`ServeOptions::max_per_client`](crate::ServeOptions::max_per_client) requests in
//! progress at once — an open event stream counts until it closes — and the next one is
//! refused with `429 SERVE_TOO_MANY_REQUESTS`. Behind a reverse proxy every request
//! comes from the proxy's address: the limit is then the proxy's, and the proxy should
//! limit its own clients.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};

use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::{ApiError, codes};

/// The requests in progress per client address.
#[derive(Debug, Clone)]
pub(crate) struct ClientLimit {
    max: usize,
    in_progress: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

/// One request's place in its client's count, given back when the last clone drops
/// (the route that keeps a stream open holds a clone until the stream ends).
#[derive(Debug)]
pub(crate) struct Permit {
    client: IpAddr,
    in_progress: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut counts = self
            .in_progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = counts.get_mut(&self.client) {
            *n -= 1;
            if *n == 0 {
                counts.remove(&self.client);
            }
        }
    }
}

impl ClientLimit {
    pub(crate) fn new(max: usize) -> Self {
        Self {
            max: max.max(1),
            in_progress: Arc::default(),
        }
    }

    /// A permit for `client`, or `None` when it has `max` requests in progress.
    fn try_acquire(&self, client: IpAddr) -> Option<Permit> {
        let mut counts = self
            .in_progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let n = counts.entry(client).or_insert(0);
        if *n >= self.max {
            return None;
        }
        *n += 1;
        Some(Permit {
            client,
            in_progress: Arc::clone(&self.in_progress),
        })
    }
}

/// The middleware: counts the request against its client, or refuses it. The permit
/// rides in the request's extensions (`Arc<Permit>`), so a route can keep it.
pub(crate) async fn check(
    State(limit): State<ClientLimit>,
    mut request: Request,
    next: Next,
) -> Response {
    let client = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::from([0, 0, 0, 0]), |c| c.0.ip());
    let Some(permit) = limit.try_acquire(client) else {
        return ApiError::new(
            codes::SERVE_TOO_MANY_REQUESTS,
            format!(
                "this client has {} requests in progress (open event streams count); close \
                 one and try again",
                limit.max
            ),
        )
        .into_response();
    };
    request.extensions_mut().insert(Arc::new(permit));
    next.run(request).await
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn permits_are_counted_per_client_and_given_back() {
        let limit = ClientLimit::new(2);
        let (a, b) = (IpAddr::from([127, 0, 0, 1]), IpAddr::from([127, 0, 0, 2]));
        let first = limit.try_acquire(a).unwrap();
        let second = Arc::new(limit.try_acquire(a).unwrap());
        assert!(limit.try_acquire(a).is_none());
        assert!(
            limit.try_acquire(b).is_some(),
            "another client has its own count"
        );
        let kept = Arc::clone(&second);
        drop(second);
        assert!(limit.try_acquire(a).is_none(), "a clone still holds it");
        drop(kept);
        let third = limit.try_acquire(a).unwrap();
        drop((first, third));
        assert!(limit.in_progress.lock().unwrap().is_empty());
    }
}
