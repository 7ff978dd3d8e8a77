#![doc = include_str!("../README.md")]

pub mod error;
mod helper;
mod locate;
#[cfg(target_os = "linux")]
mod mounts;
pub mod plan;
pub mod policy;
pub mod proxy;
#[cfg(target_os = "linux")]
mod ruleset;
pub mod support;
#[cfg(target_os = "linux")]
mod syscalls;

pub use error::SandboxError;
pub use helper::run_helper_if_invoked;
pub use locate::{HELPER_ENV, HELPER_NAME, check_plan, helper_error, locate_helper};
pub use plan::{
    ChannelPlan, GATE_CLOSED_EXIT, Gate, HELPER_ERROR_PREFIX, HELPER_FAILED_EXIT, HELPER_MARKER,
    HelperPlan, PlanInputs, PlanNetwork,
};
pub use policy::{
    DEFAULT_DENY_READ, DEFAULT_PROTECTED, Escalation, FilesystemAccess, FilesystemOff,
    NetworkAccess, NetworkOn, SandboxPolicy, SandboxWidening,
};
pub use proxy::{EgressProxy, LoopbackOverrides};
pub use support::{
    KernelSupport, Mechanism, PROBE_MARKER, REQUIRED_LANDLOCK_ABI, RuleSupport, probe_kernel,
};
