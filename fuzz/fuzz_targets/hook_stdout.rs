//! A command hook's stdout as `iris_hooks::command::parse_answer` reads it, for every
//! event kind (the command service hands the hook the stdout decoded lossily).
//!
//! Invariants: an answer belongs to the event it was parsed for; a deny reason or
//! feedback is never blank; a refusal becomes a `HOOK_PROTOCOL_ERROR` with a message.
#![no_main]

use iris_fuzz::check_error;
use iris_hooks::command::parse_answer;
use iris_hooks::{HookError, HookErrorKind, HookEventKind, HookResult};
use libfuzzer_sys::fuzz_target;

const KINDS: [HookEventKind; 4] = [
    HookEventKind::RunStarted,
    HookEventKind::RunFinished,
    HookEventKind::ToolBefore,
    HookEventKind::ToolAfter,
];

fuzz_target!(|data: &[u8]| {
    let stdout = String::from_utf8_lossy(data);
    for kind in KINDS {
        match parse_answer(kind, &stdout) {
            Ok(HookResult::None) => {}
            Ok(HookResult::ToolBefore(answer)) => {
                assert_eq!(kind, HookEventKind::ToolBefore);
                let reason = answer.deny_reason.unwrap_or_default();
                assert!(
                    !reason.trim().is_empty(),
                    "a blank deny reason was accepted"
                );
            }
            Ok(HookResult::ToolAfter(answer)) => {
                assert_eq!(kind, HookEventKind::ToolAfter);
                let feedback = answer.feedback.unwrap_or_default();
                assert!(!feedback.trim().is_empty(), "blank feedback was accepted");
            }
            Err(message) => {
                let error = HookError::new(HookErrorKind::Protocol, message);
                check_error(error.code(), &error.message);
            }
        }
    }
});
