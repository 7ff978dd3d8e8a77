//! YAML hooks list parsing and factory resolution.

use std::sync::Arc;

use iris_hooks::config::{HandlerSpec, HookFactoryRegistry, HookSpec};
use iris_hooks::{HookError, HookEvent, HookEventKind, HookHandler, HookResult};

fn factories() -> HookFactoryRegistry {
    let mut f = HookFactoryRegistry::new();
    f.register("audit:make", |options| {
        if options.get("fail").is_some() {
            return Err(HookError::failed("bad options"));
        }
        Ok(Arc::new(|_e: HookEvent| async { Ok(HookResult::None) }) as Arc<dyn HookHandler>)
    });
    f
}

fn echo_commands(command: &str) -> Result<Arc<dyn HookHandler>, HookError> {
    let _ = command;
    Ok(Arc::new(|_e: HookEvent| async { Ok(HookResult::None) }) as Arc<dyn HookHandler>)
}

/// Parses a YAML hooks list and builds it; compares `Ok(names)` or the error text.
fn check(yaml: &str, expect: Result<Vec<&str>, &str>) {
    let got = serde_yaml::from_str::<Vec<HookSpec>>(yaml)
        .map_err(|e| e.to_string())
        .and_then(|specs| {
            factories()
                .build(&specs, Some(&echo_commands))
                .map(|regs| regs.into_iter().map(|r| r.name).collect::<Vec<_>>())
                .map_err(|e| format!("{}: {}", e.code(), e.message))
        });
    match expect {
        Ok(names) => assert_eq!(
            got,
            Ok(names.iter().map(|s| s.to_string()).collect()),
            "{yaml}"
        ),
        Err(fragment) => {
            let err = got.expect_err(yaml);
            assert!(
                err.contains(fragment),
                "{yaml}\n  got: {err}\n  want fragment: {fragment}"
            );
        }
    }
}

#[test]
fn hooks_yaml_table() {
    check(
        "- {name: guard, event: tool.before, tools: [exec_command], timeout_seconds: 5, handler: {type: command, command: ./guard.sh}}\n\
         - {name: audit, event: tool.after, handler: {type: factory, factory: 'audit:make', options: {level: info}}}\n\
         - {name: legacy, event: run.started, handler: {type: python, factory: 'audit:make'}}",
        Ok(vec!["guard", "audit", "legacy"]),
    );
    check(
        "- {name: x, event: tool.during, handler: {type: command, command: a}}",
        Err("HOOK_INVALID_CONFIG: hooks[0] (`x`): unknown event `tool.during`"),
    );
    check(
        "- {name: x, event: tool.before, handler: {type: command, command: '  '}}",
        Err("handler.command must not be empty"),
    );
    check(
        "- {name: x, event: tool.before, handler: {type: command, command: a, options: {}}}",
        Err("unknown field `options`"),
    );
    check(
        "- {name: x, event: tool.before, handler: {type: lua, script: a}}",
        Err("unknown variant `lua`"),
    );
    check(
        "- {name: x, event: tool.before, handler: {type: factory, factory: 'nope:x'}}",
        Err(
            "HOOK_UNKNOWN_FACTORY: hooks[0] (`x`): no hook factory named `nope:x`; registered: [audit:make]",
        ),
    );
    check(
        "- {name: x, event: tool.before, handler: {type: factory, factory: 'audit:make', options: {fail: 1}}}",
        Err("factory `audit:make` failed: bad options"),
    );
    check(
        "- {name: '', event: tool.before, handler: {type: command, command: a}}",
        Err("hook name must not be empty"),
    );
    check(
        "- {name: x, event: tool.before, timeout_seconds: 0, handler: {type: command, command: a}}",
        Err("`timeout_seconds` must be a positive number of seconds no larger than 1e9, got 0.0"),
    );
    // A timeout no `Duration` can hold used to panic every command that built hooks.
    for huge in ["1e20", "1.9e19", "1e10", ".inf"] {
        check(
            &format!(
                "- {{name: x, event: tool.before, timeout_seconds: {huge}, handler: {{type: command, command: a}}}}"
            ),
            Err(
                "HOOK_INVALID_CONFIG: hooks[0] (`x`): `timeout_seconds` must be a positive number of seconds no larger than 1e9, got ",
            ),
        );
    }
    check(
        "- {name: x, event: run.started, tools: [a], handler: {type: command, command: a}}",
        Err("`tools` only applies to tool events"),
    );
    check(
        "- {name: x, event: tool.before, handler: {type: command, command: a}, extra: 1}",
        Err("unknown field `extra`"),
    );
    check(
        "- {event: tool.before, handler: {type: command, command: a}}",
        Err("missing field `name`"),
    );
}

#[test]
fn command_hooks_need_a_command_factory() {
    let specs: Vec<HookSpec> = serde_yaml::from_str(
        "- {name: x, event: tool.before, handler: {type: command, command: a}}",
    )
    .unwrap();
    assert_eq!(
        specs[0].handler,
        HandlerSpec::Command {
            command: "a".into()
        }
    );
    let err = factories().build(&specs, None).unwrap_err();
    assert_eq!(err.code(), "HOOK_INVALID_CONFIG");
    assert!(err.message.contains("command hooks are not available"));
}

#[test]
fn order_and_fields_are_kept() {
    let specs: Vec<HookSpec> = serde_yaml::from_str(
        "- {name: b, event: tool.after, tools: [read_file], handler: {type: factory, factory: 'audit:make'}}\n\
         - {name: a, event: tool.before, handler: {type: command, command: x}}",
    )
    .unwrap();
    let regs = factories().build(&specs, Some(&echo_commands)).unwrap();
    assert_eq!(regs[0].event, HookEventKind::ToolAfter);
    assert_eq!(
        regs[0]
            .tool_names
            .as_ref()
            .unwrap()
            .iter()
            .collect::<Vec<_>>(),
        ["read_file"]
    );
    assert_eq!(regs[1].event, HookEventKind::ToolBefore);
    assert_eq!(regs[1].timeout.as_secs(), 10);
}

/// `unknown_factory` names exactly the hook `build` fails on for a missing factory
/// (`type: python` is the same handler), and nothing when every factory is registered.
#[test]
fn unknown_factory_finds_the_hook_build_fails_on() {
    let yaml = "- {name: a, event: tool.after, handler: {type: factory, factory: 'audit:make'}}\n\
                - {name: b, event: tool.after, handler: {type: command, command: x}}\n\
                - {name: c, event: tool.after, handler: {type: python, factory: 'app:audit'}}\n\
                - {name: d, event: tool.after, handler: {type: factory, factory: 'app:other'}}\n";
    let specs: Vec<HookSpec> = serde_yaml::from_str(yaml).unwrap();
    assert_eq!(factories().unknown_factory(&specs), Some((2, "app:audit")));
    let err = factories().build(&specs, Some(&echo_commands)).unwrap_err();
    assert_eq!(err.code(), "HOOK_UNKNOWN_FACTORY");
    assert!(err.message.starts_with("hooks[2] (`c`)"), "{err:?}");
    assert_eq!(factories().unknown_factory(&specs[..2]), None);
}
