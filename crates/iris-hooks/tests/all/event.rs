//! The versioned JSON wire format.

use iris_hooks::event::rfc3339;
use iris_hooks::{EventCommon, EventPayload, HookEvent, HookEventKind, RunStatus};
use iris_tools_core::ToolOutput;
use serde_json::json;

fn common() -> EventCommon {
    EventCommon {
        agent_id: "main".into(),
        session_id: "s-1".into(),
        workspace: "/srv/ws".into(),
        run_id: "run-1".into(),
        activation_id: "act-1".into(),
        parent_call_id: None,
        occurred_at: rfc3339(1_764_473_200, 5),
    }
}

#[test]
fn wire_format_snapshots() {
    let events = vec![
        EventPayload::RunStarted {
            run: json!({"id": "run-1"}),
            input: json!("hello"),
        },
        EventPayload::RunFinished {
            result: json!({"text": "done"}),
            status: RunStatus::Completed,
        },
        EventPayload::ToolBefore {
            call_id: "c1".into(),
            tool_name: "exec_command".into(),
            arguments: json!({"command": "ls"}),
        },
        EventPayload::ToolAfter {
            call_id: "c1".into(),
            tool_name: "exec_command".into(),
            arguments: json!({"command": "ls"}),
            // What the dispatcher sends: the body's `ToolOutput`, serialized.
            result: serde_json::to_value(ToolOutput::text("a\nb")).unwrap(),
            body_status: "success".into(),
        },
    ];
    for payload in events {
        let event = HookEvent {
            common: common(),
            payload,
        };
        let wire = event.to_json();
        insta::assert_json_snapshot!(event.kind().as_str(), wire);
        // The wire format reads back into the same event.
        let mut back = wire.clone();
        back.as_object_mut().unwrap().remove("version");
        assert_eq!(serde_json::from_value::<HookEvent>(back).unwrap(), event);
    }
}

#[test]
fn kinds_round_trip_their_wire_names() {
    for kind in [
        HookEventKind::RunStarted,
        HookEventKind::RunFinished,
        HookEventKind::ToolBefore,
        HookEventKind::ToolAfter,
    ] {
        assert_eq!(HookEventKind::parse(kind.as_str()), Some(kind));
    }
    assert_eq!(HookEventKind::parse("tool.during"), None);
}

#[test]
fn rfc3339_formats_known_instants() {
    assert_eq!(rfc3339(0, 0), "1970-01-01T00:00:00.000Z");
    assert_eq!(rfc3339(951_782_400, 1), "2000-02-29T00:00:00.001Z");
    assert_eq!(rfc3339(1_764_473_200, 5), "2025-11-30T03:26:40.005Z");
    assert_eq!(rfc3339(4_102_444_799, 999), "2099-12-31T23:59:59.999Z");
}
