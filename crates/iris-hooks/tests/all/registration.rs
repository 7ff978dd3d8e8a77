//! Registration validation.

use iris_hooks::{HookError, HookEventKind, HookRegistration, HookResult};

async fn noop(_e: iris_hooks::HookEvent) -> Result<HookResult, HookError> {
    Ok(HookResult::None)
}

/// Builds a registration and compares the outcome with `expect` (`Ok` or the error code).
fn check(
    event: HookEventKind,
    name: &str,
    tools: Option<Vec<&str>>,
    timeout: f64,
    expect: Result<(), &str>,
) {
    let mut b = HookRegistration::builder(event, name, noop).timeout_seconds(timeout);
    if let Some(t) = tools {
        b = b.tools(t);
    }
    let got = b.build().map(|_| ()).map_err(|e| e.code());
    assert_eq!(got, expect, "{event} {name:?} timeout={timeout}");
}

#[test]
fn registration_rules() {
    use HookEventKind::*;
    let bad = Err("HOOK_INVALID_REGISTRATION");
    check(ToolBefore, "guard", None, 10.0, Ok(()));
    check(ToolBefore, "", None, 10.0, bad);
    check(ToolBefore, "   ", None, 10.0, bad);
    check(ToolBefore, "guard", None, 0.0, bad);
    check(ToolBefore, "guard", None, -1.0, bad);
    check(ToolBefore, "guard", None, f64::NAN, bad);
    check(ToolBefore, "guard", None, f64::INFINITY, bad);
    // Past `Duration`'s range: used to panic in `Duration::from_secs_f64`.
    check(ToolBefore, "guard", None, 1e20, bad);
    check(ToolBefore, "guard", None, 1e9, Ok(()));
    check(ToolBefore, "guard", None, 1.5e9, bad);
    check(ToolBefore, "guard", None, 0.001, Ok(()));
    check(ToolAfter, "audit", Some(vec!["write_file"]), 10.0, Ok(()));
    check(RunStarted, "audit", Some(vec!["write_file"]), 10.0, bad);
    check(RunFinished, "audit", Some(vec!["write_file"]), 10.0, bad);
    // An empty tools list means every tool, on any event.
    check(RunStarted, "audit", Some(vec![]), 10.0, Ok(()));
}

#[test]
fn default_timeout_is_ten_seconds() {
    let reg = HookRegistration::builder(HookEventKind::ToolBefore, "g", noop)
        .build()
        .unwrap();
    assert_eq!(reg.timeout.as_secs_f64(), 10.0);
    assert!(reg.tool_names.is_none());
}

#[test]
fn tool_filter_applies_only_to_named_tools() {
    let reg = HookRegistration::builder(HookEventKind::ToolAfter, "g", noop)
        .tools(["read_file"])
        .build()
        .unwrap();
    assert!(reg.applies_to(HookEventKind::ToolAfter, Some("read_file")));
    assert!(!reg.applies_to(HookEventKind::ToolAfter, Some("write_file")));
    assert!(!reg.applies_to(HookEventKind::ToolBefore, Some("read_file")));
}
