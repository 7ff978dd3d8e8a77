#![doc = include_str!("../README.md")]

pub mod command;
pub mod config;
pub mod dispatcher;
pub mod error;
pub mod event;
pub mod http;
pub mod registration;
pub mod reply;

pub use dispatcher::{HookDispatcher, HookFailure, RunStartedOutcome};
pub use error::{HookError, HookErrorKind};
pub use event::{
    EventCommon, EventPayload, HookEvent, HookEventKind, RunStatus, WIRE_FORMAT_VERSION,
};
pub use registration::{
    DEFAULT_HOOK_TIMEOUT_SECONDS, HookHandler, HookRegistration, HookRegistrationBuilder,
    HookResult, MAX_ADDITIONAL_CONTEXT_CHARS, MAX_HOOK_TIMEOUT_SECONDS, RunStartedResult,
    ToolAfterResult, ToolBeforeResult,
};
