//! A command hook's stdout as `iris_hooks::command::parse_answer` reads it, for every
//! event kind (the command service hands the hook the stdout decoded lossily).
//!
//! Invariants: an answer belongs to the event it was parsed for and says something; a
//! text it holds (deny reason, ask, feedback, additional context) is never blank; a
//! rewritten input is a JSON object; a refusal becomes a `HOOK_PROTOCOL_ERROR` with a
//! message.
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
                let texts = [&answer.deny_reason, &answer.ask];
                check_texts(&texts, answer.updated_input.is_some());
                if let Some(input) = &answer.updated_input {
                    assert!(input.is_object(), "a non-object rewrite was accepted");
                }
            }
            Ok(HookResult::ToolAfter(answer)) => {
                assert_eq!(kind, HookEventKind::ToolAfter);
                check_texts(&[&answer.feedback, &answer.additional_context], false);
            }
            Ok(HookResult::RunStarted(answer)) => {
                assert_eq!(kind, HookEventKind::RunStarted);
                check_texts(&[&answer.additional_context], false);
            }
            Err(message) => {
                let error = HookError::new(HookErrorKind::Protocol, message);
                check_error(error.code(), &error.message);
            }
        }
    }
});

/// Every text an answer holds is non-blank, and an answer holds something.
fn check_texts(texts: &[&Option<String>], more: bool) {
    for text in texts.iter().copied().flatten() {
        assert!(!text.trim().is_empty(), "a blank text was accepted");
    }
    assert!(
        more || texts.iter().any(|t| t.is_some()),
        "an empty answer was not HookResult::None"
    );
}
