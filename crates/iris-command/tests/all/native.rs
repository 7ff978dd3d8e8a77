//! The shared suite on the native backend, plus what only the host can show.

use iris_command::{CommandConfig, CommandRequest, CommandScope, CommandService, CommandStatus};

use crate::support::Backend;

whole_suite!(Backend::Native);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_interpreter_is_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let service = CommandService::new(CommandConfig::native(), dir.path())
        .unwrap()
        .with_native_python("/nonexistent/python3");
    service.prepare().await.unwrap();
    let err = service
        .execute(
            &CommandScope::default(),
            CommandRequest::python("p", "print(1)", "."),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), "COMMAND_UNAVAILABLE");
    assert!(
        err.to_string()
            .contains("`/nonexistent/python3` was not found"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_death_has_no_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let service = CommandService::new(CommandConfig::native(), dir.path()).unwrap();
    service.prepare().await.unwrap();
    let outcome = service
        .execute(
            &CommandScope::default(),
            CommandRequest::shell("k", "kill -9 $$", "."),
        )
        .await
        .unwrap();
    assert_eq!(
        (outcome.status, outcome.exit_code),
        (CommandStatus::Exited, None)
    );
    assert_eq!(outcome.error_info().unwrap().code, "COMMAND_FAILED");
}
