//! Integration tests of iris-command: one binary, one module per area. The behavioural
//! suite (`suite.rs`) is written once and instantiated for both backends by
//! `backend_suite!` in `native.rs` and `docker.rs`; the Docker half runs against the
//! real engine and fails (never skips) when it is missing.
// Test code: a failed unwrap is a failed test with its message, which is what we want.
#![allow(clippy::unwrap_used, clippy::expect_used)]

/// Instantiates every listed suite function as a test on one backend.
macro_rules! backend_suite {
    ($backend:expr; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                crate::suite::$name($backend).await;
            }
        )*
    };
}

/// Instantiates every listed suite function as a test that re-runs itself in a child
/// process (see `support::run_in_child`), for backends that change the whole process.
macro_rules! child_suite {
    ($backend:expr; $($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                if crate::support::in_child() {
                    crate::support::child_runtime().block_on(crate::suite::$name($backend));
                } else {
                    crate::support::run_in_child(
                        &format!("{}::{}", module_path!().trim_start_matches("all::"), stringify!($name)),
                        &[],
                    );
                }
            }
        )*
    };
}

/// Every function of the shared suite; every backend runs exactly this list
/// (`whole_suite!(child_suite; …)` runs each in a child process).
macro_rules! whole_suite {
    ($backend:expr) => {
        whole_suite!(backend_suite; $backend);
    };
    ($runner:ident; $backend:expr) => {
        $runner!($backend;
            output_and_exit_codes,
            runs_in_the_workspace_with_the_same_path,
            python_runs_in_the_backend_interpreter,
            deadline_is_the_minimum,
            timeout_kills_the_whole_tree,
            stop_kills_the_whole_tree,
            stop_while_draining_leaves_later_calls_alone,
            cancellation_kills_mid_run,
            dropping_the_call_kills_the_tree,
            background_jobs_do_not_outlive_a_call,
            output_is_capped_and_counted,
            streams_are_read_concurrently,
            stdin_is_null_unless_bytes_are_given,
            cwd_rules,
            invalid_requests_are_typed_errors,
            lifecycle_unprepared_and_closed,
            tools_report_the_seed_fields,
            detached_processes_do_not_outlive_a_call,
            concurrent_calls_keep_their_detached_processes,
        );
    };
}

mod config;
mod docker;
mod docker_egress;
mod env;
mod escalation;
mod native;
mod reaper;
mod sandbox;
mod suite;
mod support;
mod tools;
