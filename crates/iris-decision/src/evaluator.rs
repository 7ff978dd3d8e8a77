//! [`DecisionEvaluator`]: anything that answers a [`DecisionRequest`], and
//! [`EvaluatorHandle`]: who may close it.

use std::sync::Arc;

use iris_tools_core::BoxFuture;

use crate::error::Result;
use crate::jev::JevClient;
use crate::request::DecisionRequest;
use crate::response::DecisionResponse;

/// Answers structured decisions. Object-safe: hosts inject `Arc<dyn DecisionEvaluator>`.
///
/// [`JevClient`] is the built-in implementation; a host may supply its own (a
/// different service, a cache, a scripted evaluator in tests). Implementations return
/// this crate's [`crate::Error`] so callers see the same stable codes whatever answers.
///
/// ```
/// use iris_decision::{BoxFuture, DecisionAnswer, DecisionEvaluator, DecisionRequest,
///     DecisionResponse, DecisionUsage, BooleanAnswer, Result};
///
/// /// Says "maybe" to every boolean question.
/// struct Undecided;
///
/// impl DecisionEvaluator for Undecided {
///     fn evaluate<'a>(&'a self, request: &'a DecisionRequest) -> BoxFuture<'a, Result<DecisionResponse>> {
///         Box::pin(async move {
///             let answers = request.questions.keys()
///                 .map(|id| (id.clone(), DecisionAnswer::Boolean(BooleanAnswer { probability: 0.5 })))
///                 .collect();
///             Ok(DecisionResponse {
///                 provider: "local".into(),
///                 model: "coin".into(),
///                 answers,
///                 usage: DecisionUsage::default(),
///             })
///         })
///     }
/// }
/// ```
pub trait DecisionEvaluator: Send + Sync {
    /// Answers one request with one response.
    fn evaluate<'a>(
        &'a self,
        request: &'a DecisionRequest,
    ) -> BoxFuture<'a, Result<DecisionResponse>>;
}

impl std::fmt::Debug for dyn DecisionEvaluator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecisionEvaluator").finish_non_exhaustive()
    }
}

impl<T: DecisionEvaluator + ?Sized> DecisionEvaluator for Arc<T> {
    fn evaluate<'a>(
        &'a self,
        request: &'a DecisionRequest,
    ) -> BoxFuture<'a, Result<DecisionResponse>> {
        (**self).evaluate(request)
    }
}

/// The evaluator an environment uses, and whether the environment may close it.
///
/// An evaluator Iris created ([`EvaluatorHandle::Owned`], built from the config and
/// `IRIS_PROVIDER_API_KEYS__TYPESAFE`) is closed with the environment. An evaluator the
/// host injected ([`EvaluatorHandle::Borrowed`]) stays the host's: [`EvaluatorHandle::close`]
/// leaves it alone, so the host can share it between runs and close it itself.
///
/// ```
/// use std::sync::Arc;
/// use iris_decision::{EvaluatorHandle, JevClient, JevClientState};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let host_client = Arc::new(JevClient::new("host-key")?);
/// let borrowed = EvaluatorHandle::Borrowed(host_client.clone());
/// borrowed.close().await;
/// assert_eq!(host_client.state(), JevClientState::Idle); // still the host's to use
///
/// let owned = EvaluatorHandle::Owned(Arc::new(JevClient::new("iris-key")?));
/// owned.close().await;
/// assert!(owned.is_owned());
/// # Ok::<(), iris_decision::Error>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub enum EvaluatorHandle {
    /// Created by Iris; closed with the environment.
    Owned(Arc<JevClient>),
    /// Injected by the host; Iris never closes it.
    Borrowed(Arc<dyn DecisionEvaluator>),
}

impl EvaluatorHandle {
    /// Whether Iris owns (and so closes) the evaluator.
    pub fn is_owned(&self) -> bool {
        matches!(self, EvaluatorHandle::Owned(_))
    }

    /// The evaluator, for calls.
    pub fn evaluator(&self) -> &dyn DecisionEvaluator {
        match self {
            EvaluatorHandle::Owned(client) => client.as_ref(),
            EvaluatorHandle::Borrowed(evaluator) => evaluator.as_ref(),
        }
    }

    /// Closes an owned client; does nothing to a borrowed evaluator.
    pub async fn close(&self) {
        if let EvaluatorHandle::Owned(client) = self {
            client.close().await;
        }
    }
}

impl DecisionEvaluator for EvaluatorHandle {
    fn evaluate<'a>(
        &'a self,
        request: &'a DecisionRequest,
    ) -> BoxFuture<'a, Result<DecisionResponse>> {
        self.evaluator().evaluate(request)
    }
}
