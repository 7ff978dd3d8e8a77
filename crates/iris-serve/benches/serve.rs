//! Benchmarks of `iris serve` on PostgreSQL (issue 31), one host against two hosts on
//! the same database. "Two hosts" are two servers in this process, each with its own
//! `PostgresRunStore` (its own connections and `LISTEN` connection), so events reach
//! the second host through PostgreSQL `NOTIFY` exactly as between machines.
//!
//! **Runs started per second.** `STARTS` (300) `POST /v1/runs` of a scripted agent
//! that answers at once, 32 in flight, spread round-robin over the hosts; the time from
//! the first request to the last `201`.
//!
//! **Event fan-out.** A run waits for an approval; 100 SSE subscribers (spread over the
//! hosts) have read its log up to the wait. The run is approved on the first host,
//! which drives it on; for each subscriber, the time from sending the answer to
//! receiving the first event of the resumed run, and to receiving its final `finished`
//! event. `ROUNDS` (5) runs; percentiles over every subscriber of every round.
//!
//! Run with `cargo bench -p iris-serve --bench serve` (the PostgreSQL cluster
//! `.ci/postgres.sh` starts on 127.0.0.1).
#![allow(clippy::unwrap_used, clippy::expect_used)] // A broken fixture should stop the run loudly.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use iris_runner::{AgentConfig, HostRegistry, PostgresRunStore};
use iris_serve::{Agents, ServeOptions, Server};
use iris_tools_core::CancellationSignal;
use serde_json::{Value, json};

const STARTS: usize = 300;
const IN_FLIGHT: usize = 32;
const SUBSCRIBERS: usize = 100;
const ROUNDS: usize = 5;

/// A scripted agent that answers at once, and one whose write waits for approval.
const AGENTS: &str = "tools:\n  builtin: [file.write]\nmodel:\n  provider: scripted\n  script:\n";
const HELLO: &str = "    - text: Hello.\n";
const WRITE: &str = "    - text: Writing.\n      tool_calls: [{name: write_file, arguments: \
    {file_path: hello.txt, content: \"hi\\n\"}}]\n    - {expect_tool_results: 1, text: Wrote.}\n";

/// `hosts` servers on the database at `url`, sharing one folder; their base URLs.
async fn serve(
    url: &str,
    hosts: usize,
    dir: &Path,
    stop: &CancellationSignal,
) -> (
    Vec<String>,
    Vec<tokio::task::JoinHandle<iris_serve::Stopped>>,
) {
    let mut bases = Vec::new();
    let mut tasks = Vec::new();
    for _ in 0..hosts {
        let mut specs = Vec::new();
        for (name, script) in [("hello", HELLO), ("writer", WRITE)] {
            let file = dir.join(format!("{name}.yaml"));
            std::fs::write(&file, format!("{AGENTS}{script}")).unwrap();
            specs.push((
                name.to_owned(),
                AgentConfig::load_with_env(&file, false).unwrap(),
            ));
        }
        let store = PostgresRunStore::connect(url).await.unwrap();
        let agents = Agents::with_store(specs, &HostRegistry::new(), Arc::new(store))
            .await
            .unwrap();
        let options = ServeOptions::new("127.0.0.1:0".parse().unwrap()).max_per_client(1000);
        let server = Server::new(agents, options.bind().await.unwrap());
        bases.push(format!("http://{}", server.local_addr().unwrap()));
        let signal = stop.clone();
        tasks.push(tokio::spawn(async move { server.run(&signal).await }));
    }
    (bases, tasks)
}

async fn start_run(client: &reqwest::Client, base: &str, agent: &str) -> String {
    let response = client
        .post(format!("{base}/v1/runs"))
        .json(&json!({"agent": agent, "input": "go"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 201);
    let body: Value = response.json().await.unwrap();
    body["run_id"].as_str().unwrap().to_owned()
}

/// Runs started per second over `bases`.
async fn starts_per_second(bases: &[String]) -> f64 {
    let client = reqwest::Client::new();
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let begun = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..IN_FLIGHT {
        let (client, next, bases) = (client.clone(), Arc::clone(&next), bases.to_vec());
        workers.spawn(async move {
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= STARTS {
                    return;
                }
                start_run(&client, &bases[i % bases.len()], "hello").await;
            }
        });
    }
    while let Some(done) = workers.join_next().await {
        done.unwrap();
    }
    STARTS as f64 / begun.elapsed().as_secs_f64()
}

/// An SSE stream's next event's `data`, or `None` at its end.
async fn next_event(response: &mut reqwest::Response, buffer: &mut String) -> Option<Value> {
    loop {
        if let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let data: String = block
                .lines()
                .filter_map(|l| l.strip_prefix("data: "))
                .collect();
            if block.lines().any(|l| l.starts_with("id: ")) {
                return Some(serde_json::from_str(&data).unwrap());
            }
            continue;
        }
        match response.chunk().await.unwrap() {
            Some(bytes) => buffer.push_str(std::str::from_utf8(&bytes).unwrap()),
            None => return None,
        }
    }
}

/// One fan-out round: per subscriber, (first event, final event) after the answer.
async fn fan_out(bases: &[String]) -> Vec<(Duration, Duration)> {
    let client = reqwest::Client::new();
    let run_id = start_run(&client, &bases[0], "writer").await;
    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::channel::<()>(SUBSCRIBERS);
    let (go_tx, go_rx) = tokio::sync::watch::channel::<Option<Instant>>(None);
    let mut subscribers = tokio::task::JoinSet::new();
    for i in 0..SUBSCRIBERS {
        let url = format!("{}/v1/runs/{run_id}/events", bases[i % bases.len()]);
        let (client, ready, mut go) = (client.clone(), ready_tx.clone(), go_rx.clone());
        subscribers.spawn(async move {
            let mut response = client.get(url).send().await.unwrap();
            let mut buffer = String::new();
            // Up to the wait.
            loop {
                let event = next_event(&mut response, &mut buffer).await.unwrap();
                if event["type"] == "finished" {
                    assert_eq!(event["outcome"]["status"], "waiting");
                    break;
                }
            }
            ready.send(()).await.unwrap();
            let event = next_event(&mut response, &mut buffer).await.unwrap();
            let first = Instant::now();
            let mut last = event;
            while !(last["type"] == "finished" && last["outcome"]["status"] != "waiting") {
                last = next_event(&mut response, &mut buffer).await.unwrap();
            }
            let end = Instant::now();
            let sent = go.wait_for(Option::is_some).await.unwrap().unwrap();
            (first - sent, end - sent)
        });
    }
    for _ in 0..SUBSCRIBERS {
        ready_rx.recv().await.unwrap();
    }
    let run: Value = client
        .get(format!("{}/v1/runs/{run_id}", bases[0]))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let interaction = run["interaction"]["id"].as_str().unwrap().to_owned();
    go_tx.send(Some(Instant::now())).unwrap();
    let response = client
        .post(format!("{}/v1/runs/{run_id}/answer", bases[0]))
        .json(&json!({"interaction_id": interaction, "answer": "approve"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 202);
    let mut out = Vec::new();
    while let Some(done) = subscribers.join_next().await {
        out.push(done.unwrap());
    }
    out
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        println!(
            "| hosts | runs started/s | first event p50 / p99 / max | final event p50 / p99 / max |"
        );
        println!("|---|---|---|---|");
        for hosts in [1usize, 2] {
            let url = iris_test_support::postgres::fresh_database("iris_serve_bench").await;
            let dir = tempfile::tempdir().unwrap();
            let stop = CancellationSignal::new();
            let (bases, tasks) = serve(&url, hosts, dir.path(), &stop).await;
            let started = starts_per_second(&bases).await;
            let mut firsts = Vec::new();
            let mut finals = Vec::new();
            for _ in 0..ROUNDS {
                for (first, last) in fan_out(&bases).await {
                    firsts.push(first);
                    finals.push(last);
                }
            }
            firsts.sort();
            finals.sort();
            println!(
                "| {hosts} | {started:.0} | {} / {} / {} | {} / {} / {} |",
                ms(percentile(&firsts, 0.5)),
                ms(percentile(&firsts, 0.99)),
                ms(*firsts.last().unwrap()),
                ms(percentile(&finals, 0.5)),
                ms(percentile(&finals, 0.99)),
                ms(*finals.last().unwrap()),
            );
            stop.cancel();
            for task in tasks {
                task.await.unwrap();
            }
        }
    });
}
