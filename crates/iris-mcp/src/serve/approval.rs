//! Approvals asked of the MCP client: the elicitation form (approve / deny), reading
//! its answer, and the calls that wait for a 2026-07-28 client's retry.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use iris_tools_core::{ToolErrorInfo, ToolOutput, codes as core_codes};
use rmcp::model::{
    ClientCapabilities, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema,
    ErrorData,
};
use serde_json::{Value, json};

use crate::error::codes;

/// The key of the approval in an `input_required` result's `inputRequests`.
pub(crate) const INPUT_KEY: &str = "iris_approval";
/// How long a 2026-07-28 client may take to answer before its approval expires.
pub(crate) const PENDING_TTL: Duration = Duration::from_secs(15 * 60);
/// At most this many approvals wait at once; the oldest is dropped past it.
const MAX_PENDING: usize = 256;

/// Whether the client declared form elicitation (a bare `elicitation: {}` means
/// form, as the 2025-06-18 revision defined it).
pub(crate) fn can_elicit_form(caps: Option<&ClientCapabilities>) -> bool {
    caps.and_then(|c| c.elicitation.as_ref())
        .is_some_and(|e| e.form.is_some() || e.url.is_none())
}

/// The form asking the human about one call: `decision` (`approve` or `deny`) and an
/// optional `reason`.
pub(crate) fn form(tool: &str, reason: &str, arguments: &Value) -> ElicitRequestParams {
    let mut args = arguments.to_string();
    if args.chars().count() > 2000 {
        args = args.chars().take(2000).collect::<String>() + "…";
    }
    let message = format!("Iris: `{tool}` needs approval: {reason}. Arguments: {args}");
    let schema = json!({
        "type": "object",
        "properties": {
            "decision": {
                "type": "string",
                "title": "Decision",
                "description": "approve runs the call once; deny refuses it",
                "enum": ["approve", "deny"],
            },
            "reason": {
                "type": "string",
                "title": "Reason",
                "description": "Why (optional); a denial passes it on to the caller",
            },
        },
        "required": ["decision"],
    });
    // The schema above is a fixed, valid form schema: it always parses.
    let requested_schema: ElicitationSchema = serde_json::from_value(schema)
        .unwrap_or_else(|_| ElicitationSchema::new(std::collections::BTreeMap::new()));
    ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema,
    }
}

/// What the human answered.
// One verdict per held call, moved straight into the call's result: boxing the output
// would allocate for nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Verdict {
    /// Run the call.
    Approved,
    /// Do not run it; the output says why.
    Denied(ToolOutput),
}

/// Reads an elicitation answer: only `accept` with `decision: "approve"` approves.
pub(crate) fn verdict(tool: &str, answer: &ElicitResult) -> Verdict {
    let content = answer.content.as_ref();
    let field = |name: &str| content.and_then(|c| c.get(name)).and_then(Value::as_str);
    let denied = |why: String, action: &str| {
        Verdict::Denied(ToolOutput::error(
            ToolErrorInfo::new(core_codes::APPROVAL_DENIED, why).with_detail("action", action),
        ))
    };
    match answer.action {
        ElicitationAction::Accept => match field("decision") {
            Some("approve") => Verdict::Approved,
            Some("deny") => {
                let reason = field("reason").filter(|r| !r.trim().is_empty());
                let why = match reason {
                    Some(reason) => format!("`{tool}` was denied by the user: {reason}"),
                    None => format!("`{tool}` was denied by the user"),
                };
                denied(why, "deny")
            }
            _ => denied(
                format!(
                    "`{tool}` was not approved: the answer's `decision` was not `approve` or `deny`"
                ),
                "accept",
            ),
        },
        ElicitationAction::Decline => denied(
            format!("`{tool}` was not approved: the user declined"),
            "decline",
        ),
        _ => denied(
            format!("`{tool}` was not approved: the user cancelled the request"),
            "cancel",
        ),
    }
}

/// The call needs approval and this client cannot be asked.
pub(crate) fn unavailable(tool: &str, reason: &str, why: &str) -> ToolOutput {
    ToolOutput::error(
        ToolErrorInfo::new(
            codes::MCP_APPROVAL_UNAVAILABLE,
            format!("`{tool}` needs approval ({reason}) and was not run: {why}"),
        )
        .with_detail("approval_reason", reason),
    )
}

/// The JSON-RPC error of a retry whose `requestState` cannot be used: `invalid_params`
/// with `data.code` [`codes::MCP_APPROVAL_STATE_INVALID`] (a protocol error has no
/// result `_meta` to carry the code, so its `data` does).
pub(crate) fn state_invalid(why: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!(
            "{why}; the call did not run: send it again without requestState to be asked \
             for approval anew"
        ),
        Some(json!({ "code": codes::MCP_APPROVAL_STATE_INVALID })),
    )
}

/// A call waiting for a 2026-07-28 client to retry with the approval answer.
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    /// The tool name the client called.
    pub(crate) tool: String,
    /// The arguments it called it with; the retry must carry the same.
    pub(crate) arguments: Value,
    /// The call id the executor saw (approved on the retry).
    pub(crate) call_id: String,
    created: Instant,
}

/// The approvals in flight, by their `requestState` handle. The handle is 128 random
/// bits from the operating system (no other source: when it fails, no handle is made);
/// the state itself never leaves the server, so a client cannot forge one.
#[derive(Debug, Default)]
pub(crate) struct PendingApprovals {
    calls: Mutex<HashMap<String, Pending>>,
}

impl PendingApprovals {
    /// Keeps a call waiting and returns its handle.
    ///
    /// # Errors
    /// Why the operating system's random source gave no handle; nothing is kept.
    pub(crate) fn insert(
        &self,
        tool: &str,
        arguments: Value,
        call_id: String,
    ) -> Result<String, String> {
        let handle = random_handle()?;
        let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        calls.retain(|_, p| p.created.elapsed() < PENDING_TTL);
        if calls.len() >= MAX_PENDING
            && let Some(oldest) = calls
                .iter()
                .min_by_key(|(_, p)| p.created)
                .map(|(k, _)| k.clone())
        {
            calls.remove(&oldest);
        }
        calls.insert(
            handle.clone(),
            Pending {
                tool: tool.to_owned(),
                arguments,
                call_id,
                created: Instant::now(),
            },
        );
        Ok(handle)
    }

    /// Takes the call a handle names (once: an answer is used at most once), if it has
    /// not expired.
    pub(crate) fn take(&self, handle: &str) -> Option<Pending> {
        let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        calls
            .remove(handle)
            .filter(|p| p.created.elapsed() < PENDING_TTL)
    }
}

/// 128 bits from the operating system's random source, as hex.
fn random_handle() -> Result<String, String> {
    handle_from(|buf| rustix::rand::getrandom(buf, rustix::rand::GetRandomFlags::empty()))
}

/// A handle from 16 bytes `fill` writes (retrying an interrupted call). Its failure
/// is the error: a handle made from anything predictable (the time, a counter) could
/// be guessed by a client.
fn handle_from(
    mut fill: impl FnMut(&mut [u8]) -> rustix::io::Result<usize>,
) -> Result<String, String> {
    let mut bytes = [0u8; 16];
    let mut filled = 0;
    while filled < bytes.len() {
        match fill(&mut bytes[filled..]) {
            Ok(0) => return Err("the random source returned no bytes".into()),
            Ok(n) => filled += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(format!("the random source failed: {e}")),
        }
    }
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(action: ElicitationAction, content: Value) -> ElicitResult {
        let mut result = ElicitResult::new(action);
        result.content = Some(content);
        result
    }

    #[test]
    fn only_an_accepted_approve_approves() {
        let check = |a: ElicitResult, approved: bool, text: &str| {
            let v = verdict("write_file", &a);
            match v {
                Verdict::Approved => assert!(approved, "{a:?}"),
                Verdict::Denied(out) => {
                    assert!(!approved, "{a:?}");
                    assert_eq!(out.error_code(), Some(core_codes::APPROVAL_DENIED));
                    assert!(
                        out.model_content().contains(text),
                        "{}",
                        out.model_content()
                    );
                }
            }
        };
        check(
            answer(ElicitationAction::Accept, json!({"decision": "approve"})),
            true,
            "",
        );
        check(
            answer(
                ElicitationAction::Accept,
                json!({"decision": "deny", "reason": "not now"}),
            ),
            false,
            "denied by the user: not now",
        );
        check(
            answer(ElicitationAction::Accept, json!({"decision": "yes"})),
            false,
            "was not `approve`",
        );
        check(
            answer(ElicitationAction::Decline, json!({})),
            false,
            "declined",
        );
        check(
            answer(ElicitationAction::Cancel, json!({})),
            false,
            "cancelled",
        );
    }

    #[test]
    fn the_form_is_a_valid_elicitation_schema() {
        let params = form(
            "exec_command",
            "it executes programs",
            &json!({"command": "ls"}),
        );
        let value = serde_json::to_value(&params).unwrap_or_default();
        assert_eq!(value["mode"], "form");
        assert_eq!(
            value["requestedSchema"]["properties"]["decision"]["enum"],
            json!(["approve", "deny"])
        );
        assert_eq!(value["requestedSchema"]["required"], json!(["decision"]));
    }

    #[test]
    fn a_handle_is_used_once() {
        let pending = PendingApprovals::default();
        let h = pending
            .insert("t", json!({}), "c1".into())
            .unwrap_or_default();
        assert_eq!(h.len(), 32);
        assert!(h.bytes().all(|b| b.is_ascii_hexdigit()), "{h}");
        assert_ne!(Ok(h.clone()), pending.insert("t", json!({}), "c2".into()));
        assert_eq!(pending.take(&h).map(|p| p.call_id), Some("c1".into()));
        assert!(pending.take(&h).is_none());
    }

    #[test]
    fn a_failing_random_source_makes_no_handle() {
        // Interrupted calls and short reads are retried up to 16 bytes.
        let mut calls = 0;
        let handle = handle_from(|buf| {
            calls += 1;
            match calls {
                1 => Err(rustix::io::Errno::INTR),
                _ => {
                    buf[0] = 0xab;
                    Ok(1)
                }
            }
        });
        assert_eq!(handle, Ok("ab".repeat(16)));
        // Any other failure, or a source that returns nothing, is an error: never a
        // handle made from something a client could guess.
        let failed = handle_from(|_| Err(rustix::io::Errno::NOSYS));
        assert!(
            failed
                .as_ref()
                .is_err_and(|e| e.starts_with("the random source failed")),
            "{failed:?}"
        );
        assert!(handle_from(|_| Ok(0)).is_err());
    }
}
