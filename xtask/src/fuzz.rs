//! `cargo xtask fuzz [--smoke] [--time SECS] [--jobs N] [TARGET...]`: builds the
//! libFuzzer targets in `fuzz/` and runs each for a bounded time.
//!
//! The build needs no cargo-fuzz and no nightly toolchain: the pinned stable toolchain
//! (`rust-toolchain.toml`) compiles with the SanitizerCoverage passes that libFuzzer
//! reads (`-Cpasses=sancov-module` plus `-Cllvm-args`, both stable options), and
//! `libfuzzer-sys` compiles libFuzzer itself with the C++ compiler. No sanitizer runs
//! (Rust without `unsafe` needs none); a panic, a timeout or memory over the RSS limit
//! is a crash.
//!
//! Each target reads its committed seeds (`fuzz/corpus/<target>/`) and writes what it
//! learns to `target/fuzz/corpus/<target>/`, which later runs start from. A crash
//! leaves its input in `target/fuzz/artifacts/<target>/` and fails the command.
//! `--smoke` builds the `smoke` profile (unoptimized: a short cold build for CI), the
//! longer runs the optimized `release` profile. `IRIS_FUZZ_STRICT=1` reaches the targets
//! and turns the style rules for errors (one-line messages) into assertions as well.

use std::collections::VecDeque;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::{cargo, root, run};

/// The fuzz targets, one `fuzz/fuzz_targets/<name>.rs` each.
pub(crate) const TARGETS: [&str; 5] = [
    "mcp_config",
    "agent_yaml",
    "skill_md",
    "hook_stdout",
    "tool_input",
];

/// Seconds per target of `--smoke` (CI).
const SMOKE_SECONDS: u64 = 20;
/// Seconds per target without `--smoke`.
const LONG_SECONDS: u64 = 600;
/// libFuzzer's memory cap per target process.
const RSS_LIMIT_MB: u32 = 2048;
/// One input running longer than this is a hang (a crash).
const INPUT_TIMEOUT_SECONDS: u32 = 10;
/// What the fuzzer may wait past `-max_total_time` (its last input, its final merge)
/// before the run counts as stuck.
const GRACE: Duration = Duration::from_secs(60);

/// The coverage instrumentation cargo-fuzz uses, minus the address sanitizer (the one
/// part that needs nightly).
const RUSTFLAGS: &str = "-Cpasses=sancov-module \
    -Cllvm-args=-sanitizer-coverage-level=4 \
    -Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
    -Cllvm-args=-sanitizer-coverage-pc-table \
    -Cllvm-args=-sanitizer-coverage-trace-compares \
    --cfg fuzzing";

/// Parsed `fuzz` arguments.
#[derive(Debug)]
struct Options {
    /// The cargo profile of `fuzz/Cargo.toml`: `smoke` (unoptimized, quick to build)
    /// or `release`.
    profile: &'static str,
    seconds: u64,
    jobs: usize,
    targets: Vec<String>,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut smoke = false;
    let mut seconds = None;
    let mut jobs = None;
    let mut targets = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--smoke" => smoke = true,
            "--time" | "--jobs" => {
                let value = args
                    .next()
                    .and_then(|v| v.parse::<u64>().ok())
                    .filter(|v| *v > 0)
                    .ok_or_else(|| format!("{arg} needs a positive number"))?;
                if arg == "--time" {
                    seconds = Some(value);
                } else {
                    jobs = Some(usize::try_from(value).unwrap_or(usize::MAX));
                }
            }
            name if TARGETS.contains(&name) => targets.push(name.to_owned()),
            other => {
                return Err(format!(
                    "fuzz: unknown argument `{other}`; targets are {}",
                    TARGETS.join(", ")
                ));
            }
        }
    }
    if targets.is_empty() {
        targets = TARGETS.iter().map(|t| (*t).to_owned()).collect();
    }
    let default = if smoke { SMOKE_SECONDS } else { LONG_SECONDS };
    // Two fuzzers at a time by default: the project's machines have two cores.
    let cores = thread::available_parallelism().map_or(1, usize::from);
    Ok(Options {
        profile: if smoke { "smoke" } else { "release" },
        seconds: seconds.unwrap_or(default),
        jobs: jobs.unwrap_or(cores.clamp(1, 2)),
        targets,
    })
}

/// Builds the targets, then runs them `jobs` at a time.
pub(crate) fn fuzz(args: &[String]) -> Result<(), String> {
    let options = parse(args)?;
    let started = Instant::now();
    let bin_dir = build(options.profile)?;
    let built = started.elapsed();
    eprintln!("xtask: fuzz build took {:.0} s", built.as_secs_f64());

    let work = root().join("target/fuzz");
    let tmp = work.join("tmp");
    let mut queue: VecDeque<&str> = options.targets.iter().map(String::as_str).collect();
    let mut running: Vec<Running> = Vec::new();
    let mut failures = Vec::new();
    while !queue.is_empty() || !running.is_empty() {
        while running.len() < options.jobs
            && let Some(target) = queue.pop_front()
        {
            running.push(start(&bin_dir, &work, target, options.seconds)?);
        }
        thread::sleep(Duration::from_millis(200));
        let mut still = Vec::new();
        for mut job in running {
            match job.poll(options.seconds) {
                None => still.push(job),
                Some(Ok(summary)) => eprintln!("xtask: fuzz {}: ok, {summary}", job.target),
                Some(Err(message)) => {
                    eprintln!("xtask: fuzz {}: FAILED: {message}", job.target);
                    failures.push(job.target.to_owned());
                }
            }
        }
        running = still;
    }
    // Scratch files the targets wrote (their loaders read from paths).
    let _ = fs::remove_dir_all(&tmp);
    eprintln!(
        "xtask: fuzz finished in {:.0} s ({:.0} s build, {} targets × {} s)",
        started.elapsed().as_secs_f64(),
        built.as_secs_f64(),
        options.targets.len(),
        options.seconds
    );
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!("fuzz targets crashed: {}", failures.join(", ")))
    }
}

/// The host triple, from the pinned toolchain's `rustc -vV`; also checks that the fuzz
/// build uses the toolchain `rust-toolchain.toml` pins.
fn host_and_check_toolchain() -> Result<String, String> {
    let out = Command::new("rustc")
        .arg("-vV")
        .current_dir(root())
        .output()
        .map_err(|e| format!("cannot run rustc -vV: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_owned())
    };
    let host = field("host:").ok_or("rustc -vV printed no host")?;
    let release = field("release:").unwrap_or_default();
    let pinned = fs::read_to_string(root().join("rust-toolchain.toml"))
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.trim().strip_prefix("channel"))
                .map(|v| {
                    v.trim_start_matches([' ', '='])
                        .trim()
                        .trim_matches('"')
                        .to_owned()
                })
        })
        .unwrap_or_default();
    if !pinned.is_empty() && pinned != release {
        return Err(format!(
            "the fuzz build would use rustc {release}, but rust-toolchain.toml pins {pinned}"
        ));
    }
    eprintln!("xtask: fuzz toolchain: rustc {release} ({host})");
    Ok(host)
}

/// `cargo build --profile <profile>` of the fuzz crate with the coverage flags, into
/// `target/fuzz`; returns the directory of the binaries.
fn build(profile: &str) -> Result<PathBuf, String> {
    let host = host_and_check_toolchain()?;
    let mut cmd = cargo();
    cmd.args(["build", "--profile", profile, "--bins", "--manifest-path"])
        .arg(root().join("fuzz/Cargo.toml"))
        .args(["--target", &host, "--target-dir"])
        .arg(root().join("target/fuzz"))
        // `--target` keeps the flags off build scripts and proc macros.
        .env("RUSTFLAGS", RUSTFLAGS)
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        // No nightly feature is used; make sure none sneaks in through the environment.
        .env_remove("RUSTC_BOOTSTRAP");
    run(cmd)?;
    Ok(root().join("target/fuzz").join(host).join(profile))
}

/// One fuzzer process.
struct Running {
    target: &'static str,
    child: Child,
    started: Instant,
    log: PathBuf,
    artifacts: PathBuf,
    binary: PathBuf,
}

fn start(bin_dir: &Path, work: &Path, target: &str, seconds: u64) -> Result<Running, String> {
    let target = TARGETS
        .iter()
        .copied()
        .find(|t| *t == target)
        .ok_or_else(|| format!("unknown fuzz target {target}"))?;
    let binary = bin_dir.join(target);
    let corpus = work.join("corpus").join(target);
    let seeds = root().join("fuzz/corpus").join(target);
    let artifacts = work.join("artifacts").join(target);
    let tmp = work.join("tmp").join(target);
    let logs = work.join("logs");
    for dir in [&corpus, &artifacts, &tmp, &logs] {
        fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let log = logs.join(format!("{target}.log"));
    let file =
        fs::File::create(&log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
    let err = file
        .try_clone()
        .map_err(|e| format!("cannot share {}: {e}", log.display()))?;
    let mut cmd = Command::new(&binary);
    // New inputs go to the first corpus directory; the committed seeds stay untouched.
    cmd.arg(&corpus)
        .arg(&seeds)
        .arg(format!("-max_total_time={seconds}"))
        .arg(format!("-rss_limit_mb={RSS_LIMIT_MB}"))
        .arg(format!("-timeout={INPUT_TIMEOUT_SECONDS}"))
        .arg(format!("-artifact_prefix={}/", artifacts.display()))
        .args(["-print_final_stats=1", "-print_funcs=0", "-close_fd_mask=1"])
        .env("TMPDIR", &tmp)
        .env("RUST_BACKTRACE", "1")
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(err);
    eprintln!("xtask: fuzz {target}: {seconds} s, log {}", log.display());
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
    Ok(Running {
        target,
        child,
        started: Instant::now(),
        log,
        artifacts,
        binary,
    })
}

impl Running {
    /// `None` while running; the summary or why it failed once it ended.
    fn poll(&mut self, seconds: u64) -> Option<Result<String, String>> {
        let status = match self.child.try_wait() {
            Ok(Some(status)) => status,
            Ok(None) if self.started.elapsed() > Duration::from_secs(seconds) + GRACE => {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return Some(Err(format!(
                    "still running {} s past its time; killed\n{}",
                    GRACE.as_secs(),
                    self.tail()
                )));
            }
            Ok(None) => return None,
            Err(e) => return Some(Err(format!("cannot wait for the fuzzer: {e}"))),
        };
        let log = fs::read_to_string(&self.log).unwrap_or_default();
        if status.success() {
            return Some(Ok(summary(&log)));
        }
        // libFuzzer names the input it saved: "Test unit written to <path>".
        let input = log
            .lines()
            .find_map(|l| l.split_once("Test unit written to ").map(|(_, p)| p.trim()))
            .map_or_else(
                || format!("none saved (see {})", self.artifacts.display()),
                str::to_owned,
            );
        Some(Err(format!(
            "the fuzzer exited with {status}\n{}\ninput: {input}\nreproduce: {} {input}\nlog: {}",
            report(&log),
            self.binary.display(),
            self.log.display()
        )))
    }

    /// The last lines of the log.
    fn tail(&self) -> String {
        let log = fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        let from = lines.len().saturating_sub(20);
        lines[from..].join("\n")
    }
}

/// What a failed run's log says about the crash: the panic message (without the
/// backtrace) and libFuzzer's verdict.
fn report(log: &str) -> String {
    let mut out = Vec::new();
    let mut lines = log.lines();
    while let Some(line) = lines.next() {
        if line.contains("panicked at") {
            out.push(line);
            // The message runs until the backtrace starts.
            for next in lines.by_ref() {
                if next.starts_with("stack backtrace:") || next.starts_with("note: ") {
                    break;
                }
                out.push(next);
            }
        } else if line.contains("ERROR: libFuzzer")
            || line.starts_with("SUMMARY:")
            || line.starts_with("==") && line.contains("out-of-memory")
        {
            out.push(line);
        }
    }
    if out.is_empty() {
        let lines: Vec<&str> = log.lines().collect();
        let from = lines.len().saturating_sub(20);
        return lines[from..].join("\n");
    }
    out.join("\n")
}

/// `N runs, N exec/s, cov N, corpus N` from libFuzzer's final lines.
fn summary(log: &str) -> String {
    let stat = |name: &str| {
        log.lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim_start_matches(':').trim().to_owned())
            .unwrap_or_else(|| "?".into())
    };
    let done = log
        .lines()
        .rev()
        .find(|l| l.contains("DONE") || l.contains("INITED"))
        .unwrap_or_default();
    let field = |key: &str| {
        done.split_whitespace()
            .skip_while(|w| *w != key)
            .nth(1)
            .unwrap_or("?")
            .to_owned()
    };
    format!(
        "{} runs, {} exec/s, cov {}, corpus {}",
        stat("stat::number_of_executed_units"),
        stat("stat::average_exec_per_sec"),
        field("cov:"),
        field("corp:")
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // Tests fail loudly on purpose.

    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn smoke_runs_every_target_briefly() {
        let o = parse(&args(&["--smoke"])).unwrap();
        assert_eq!((o.seconds, o.profile), (SMOKE_SECONDS, "smoke"));
        assert_eq!(o.targets.len(), TARGETS.len());
        let o = parse(&args(&["--time", "5", "--jobs", "1", "hook_stdout"])).unwrap();
        assert_eq!((o.seconds, o.jobs, o.profile), (5, 1, "release"));
        assert_eq!(o.targets, ["hook_stdout"]);
        assert!(parse(&args(&["nope"])).is_err());
        assert!(parse(&args(&["--time", "0"])).is_err());
    }

    #[test]
    fn every_target_has_a_source_and_seeds() {
        for target in TARGETS {
            assert!(
                root()
                    .join(format!("fuzz/fuzz_targets/{target}.rs"))
                    .is_file()
            );
            let seeds = fs::read_dir(root().join("fuzz/corpus").join(target)).unwrap();
            assert!(seeds.count() > 0, "{target} has no seeds");
        }
    }

    #[test]
    fn report_keeps_the_panic_and_the_verdict() {
        let log = "INFO: Seed: 1\nthread '<unnamed>' panicked at src/lib.rs:40:9:\nbad code \"x\"\n\
                   stack backtrace:\n   0: frame\n==1== ERROR: libFuzzer: deadly signal\n\
                   SUMMARY: libFuzzer: deadly signal\n";
        assert_eq!(
            report(log),
            "thread '<unnamed>' panicked at src/lib.rs:40:9:\nbad code \"x\"\n\
             ==1== ERROR: libFuzzer: deadly signal\nSUMMARY: libFuzzer: deadly signal"
        );
    }

    #[test]
    fn summary_reads_the_final_stats() {
        let log = "#100\tDONE   cov: 320 ft: 371 corp: 55/729b lim: 544 exec/s: 4639 rss: 29Mb\n\
                   stat::number_of_executed_units: 74234\nstat::average_exec_per_sec:     4639\n";
        assert_eq!(
            summary(log),
            "74234 runs, 4639 exec/s, cov 320, corpus 55/729b"
        );
    }
}
