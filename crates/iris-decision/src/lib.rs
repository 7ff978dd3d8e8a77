#![doc = include_str!("../README.md")]

mod config;
mod discovery;
mod error;
mod evaluator;
mod jev;
mod request;
mod response;
mod tool_search;

pub use config::{
    DEFAULT_MODEL, DEFAULT_TIMEOUT_SECONDS, DecisionConfig, DecisionMemoryConfig,
    DecisionToolsConfig, PROVIDER_TYPESAFE,
};
pub use discovery::{
    DISCOVERY_DESCRIPTION_CHARS, DISCOVERY_FEATURE, DecisionMetadata, DiscoveryOutcome,
    DiscoverySelection, MAX_DISCOVERY_TOOLS, NONE_OPTION, decide_tools, discovery_description,
    discovery_request,
};
pub use error::{Error, Result, TimeoutPhase, codes};
pub use evaluator::{DecisionEvaluator, EvaluatorHandle};
/// The boxed future [`DecisionEvaluator::evaluate`] returns (from `iris-tools-core`).
pub use iris_tools_core::BoxFuture;
pub use jev::{
    API_KEY_ENV, DEFAULT_BASE_URL, ENDPOINT_PATH, JevClient, JevClientState, MAX_RESPONSE_BYTES,
};
pub use request::{
    BooleanQuestion, ChoiceQuestion, DecisionQuestion, DecisionRequest, MAX_CHOICE_OPTIONS,
    MAX_SCORE_LEVELS, MIN_SCORE_LEVELS, ScoreQuestion,
};
pub use response::{
    BooleanAnswer, ChoiceAnswer, DecisionAnswer, DecisionResponse, DecisionUsage,
    PROBABILITY_TOLERANCE, ScoreAnswer,
};
pub use tool_search::{DecisionDiscoveryBackend, decision_tool_search};
