//! Hook events and their stable JSON wire format.

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Version of the JSON wire format produced by [`HookEvent::to_json`]. Bumped only on
/// an incompatible change; fields may be added without a bump.
pub const WIRE_FORMAT_VERSION: u32 = 1;

/// The four hook points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum HookEventKind {
    /// A run started.
    #[serde(rename = "run.started")]
    RunStarted,
    /// A run finished.
    #[serde(rename = "run.finished")]
    RunFinished,
    /// A tool call is about to run.
    #[serde(rename = "tool.before")]
    ToolBefore,
    /// A tool call's body ran.
    #[serde(rename = "tool.after")]
    ToolAfter,
}

impl HookEventKind {
    /// The wire name: `run.started`, `run.finished`, `tool.before`, `tool.after`.
    pub fn as_str(self) -> &'static str {
        match self {
            HookEventKind::RunStarted => "run.started",
            HookEventKind::RunFinished => "run.finished",
            HookEventKind::ToolBefore => "tool.before",
            HookEventKind::ToolAfter => "tool.after",
        }
    }

    /// Whether this is a tool event (`tool.before` / `tool.after`).
    pub fn is_tool_event(self) -> bool {
        matches!(self, HookEventKind::ToolBefore | HookEventKind::ToolAfter)
    }

    /// Parses a wire name.
    pub fn parse(name: &str) -> Option<Self> {
        [
            Self::RunStarted,
            Self::RunFinished,
            Self::ToolBefore,
            Self::ToolAfter,
        ]
        .into_iter()
        .find(|k| k.as_str() == name)
    }
}

impl std::fmt::Display for HookEventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Fields every event carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventCommon {
    /// Agent id.
    pub agent_id: String,
    /// Session id.
    pub session_id: String,
    /// Workspace root.
    pub workspace: PathBuf,
    /// Run id.
    pub run_id: String,
    /// Activation (model step) id.
    pub activation_id: String,
    /// The call a tool event's call runs inside (a `run_tool_script` program's inner
    /// call); absent on the wire for every other event and call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_call_id: Option<String>,
    /// When the event happened, RFC 3339 UTC with milliseconds.
    pub occurred_at: String,
}

impl EventCommon {
    /// Common fields taken from a tool execution context, stamped now.
    pub fn from_context(ctx: &iris_tools_core::ToolExecutionContext) -> Self {
        Self {
            agent_id: ctx.agent_id.clone(),
            session_id: ctx.session_id.clone(),
            workspace: ctx.workspace_root.clone(),
            run_id: ctx.run_id.clone(),
            activation_id: ctx.activation_id.clone(),
            parent_call_id: ctx.parent_call_id.clone(),
            occurred_at: rfc3339_now(),
        }
    }
}

/// Whether a run completed; command hooks skip a `run.finished` that did not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// The run completed.
    Completed,
    /// The run failed.
    Failed,
    /// The run was cancelled.
    Cancelled,
    /// The run is waiting for a human.
    Waiting,
}

/// Event-specific fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event")]
pub enum EventPayload {
    /// `run.started`.
    #[serde(rename = "run.started")]
    RunStarted {
        /// The run record (host-defined JSON).
        run: Value,
        /// The run input.
        input: Value,
    },
    /// `run.finished`.
    #[serde(rename = "run.finished")]
    RunFinished {
        /// The run result (host-defined JSON).
        result: Value,
        /// How the run ended.
        status: RunStatus,
    },
    /// `tool.before`.
    #[serde(rename = "tool.before")]
    ToolBefore {
        /// Call id.
        call_id: String,
        /// Canonical tool name.
        tool_name: String,
        /// Validated arguments (a snapshot).
        arguments: Value,
    },
    /// `tool.after`.
    #[serde(rename = "tool.after")]
    ToolAfter {
        /// Call id.
        call_id: String,
        /// Canonical tool name.
        tool_name: String,
        /// Validated arguments (a snapshot).
        arguments: Value,
        /// The body's output as JSON (a serialized `ToolOutput`: `is_error`, `error`,
        /// `content`, `data`, …). It carries no call identity: that is `call_id` and
        /// `tool_name` above.
        result: Value,
        /// `success` or `error`.
        body_status: String,
    },
}

/// One hook event: common fields plus the event's own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookEvent {
    /// Common fields.
    #[serde(flatten)]
    pub common: EventCommon,
    /// Event-specific fields; `event` names the kind on the wire.
    #[serde(flatten)]
    pub payload: EventPayload,
}

impl HookEvent {
    /// The event kind.
    pub fn kind(&self) -> HookEventKind {
        match self.payload {
            EventPayload::RunStarted { .. } => HookEventKind::RunStarted,
            EventPayload::RunFinished { .. } => HookEventKind::RunFinished,
            EventPayload::ToolBefore { .. } => HookEventKind::ToolBefore,
            EventPayload::ToolAfter { .. } => HookEventKind::ToolAfter,
        }
    }

    /// The tool name of a tool event.
    pub fn tool_name(&self) -> Option<&str> {
        match &self.payload {
            EventPayload::ToolBefore { tool_name, .. }
            | EventPayload::ToolAfter { tool_name, .. } => Some(tool_name),
            _ => None,
        }
    }

    /// The stable JSON wire format (the Python reference's `event_to_dict`): a flat object with
    /// `version`, `event`, the common fields and the event's fields. See
    /// the "Wire format (version 1)" section of `docs/hooks.md`.
    pub fn to_json(&self) -> Value {
        let mut map = match serde_json::to_value(self) {
            Ok(Value::Object(map)) => map,
            // Serializing plain data with string keys cannot fail; keep a valid object anyway.
            _ => Map::new(),
        };
        map.insert("version".into(), Value::from(WIRE_FORMAT_VERSION));
        Value::Object(map)
    }
}

/// Now, as RFC 3339 UTC with milliseconds (`2026-11-30T03:26:40.123Z`).
pub fn rfc3339_now() -> String {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    rfc3339(since.as_secs(), since.subsec_millis())
}

/// Formats seconds since the Unix epoch as RFC 3339 UTC.
pub fn rfc3339(secs: u64, millis: u32) -> String {
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Howard Hinnant's days-to-civil algorithm (proleptic Gregorian calendar).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}
