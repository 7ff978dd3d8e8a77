//! Memory stays bounded while a command streams 1 GiB of output, on both backends.
//!
//! This binary has `harness = false`: it runs alone in its own process, so the peak
//! resident set size the kernel reports (`VmHWM` in `/proc/self/status`) is this
//! streaming and nothing else. Keeping every byte would need more than 1 GiB; the
//! service keeps at most the per-stream limit (1 MiB) and reads in 64 KiB chunks.
// Test code: a failed unwrap is a failed test with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::ExitCode;

use iris_command::{
    CommandConfig, CommandRequest, CommandScope, CommandService, CommandStatus, DockerConfig,
};

const GIB: u64 = 1024 * 1024 * 1024;
/// Allowed growth of the peak RSS over the baseline while streaming.
const BUDGET_BYTES: u64 = 64 * 1024 * 1024;

/// `VmHWM` (peak resident set size) of this process, in bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

/// Streams 1 GiB through a service of the given config; returns a failure message.
async fn stream_one_gib(name: &str, config: CommandConfig, baseline: u64) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let service = CommandService::new(config, dir.path()).unwrap();
    service.prepare().await.map_err(|e| {
        format!(
            "{name}: prepare failed: {e}\nstart the engine with `dockerd > /tmp/dockerd.log 2>&1 &` \
             and build the image with `bash crates/iris-command/docker/build-image.sh --offline`"
        )
    })?;
    let started = std::time::Instant::now();
    let outcome = service
        .execute(
            &CommandScope::default(),
            CommandRequest::shell("gib", format!("head -c {GIB} /dev/zero"), ".")
                .timeout_seconds(600.0),
        )
        .await
        .map_err(|e| format!("{name}: {e}"))?;
    let elapsed = started.elapsed();
    service.close().await.unwrap();
    let peak = peak_rss();
    println!(
        "{name}: streamed {} bytes in {:.2}s, kept {}, peak RSS {:.1} MiB (baseline {:.1} MiB)",
        outcome.output_stats.stdout.bytes_seen,
        elapsed.as_secs_f64(),
        outcome.output_stats.stdout.bytes_kept,
        peak as f64 / 1048576.0,
        baseline as f64 / 1048576.0,
    );
    let stats = outcome.output_stats.stdout;
    if (outcome.status, outcome.exit_code) != (CommandStatus::Exited, Some(0)) {
        return Err(format!(
            "{name}: the stream did not complete: {:?}",
            outcome.status
        ));
    }
    if stats.bytes_seen != GIB || stats.bytes_kept != 1024 * 1024 || !outcome.output_truncated {
        return Err(format!("{name}: wrong byte counts {stats:?}"));
    }
    if peak > baseline + BUDGET_BYTES {
        return Err(format!(
            "{name}: peak RSS grew by {} bytes, over the {BUDGET_BYTES} budget",
            peak - baseline
        ));
    }
    Ok(())
}

fn main() -> ExitCode {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let results = runtime.block_on(async {
        let baseline = peak_rss();
        vec![
            stream_one_gib("native", CommandConfig::native(), baseline).await,
            stream_one_gib(
                "docker",
                CommandConfig::docker(DockerConfig::default()),
                baseline,
            )
            .await,
        ]
    });
    let failed: Vec<&String> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    for failure in &failed {
        eprintln!("FAILED {failure}");
    }
    println!(
        "memory: {} passed, {} failed",
        results.len() - failed.len(),
        failed.len()
    );
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
