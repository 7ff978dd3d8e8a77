//! The throw-away PostgreSQL cluster of the run-store tests, and a new empty database
//! on it for each test (feature `postgres`).
//!
//! `.ci/postgres.sh` starts the cluster (once; it is idempotent and fast when the
//! cluster runs) and prints its URL; `.ci/setup` installs Debian's `postgresql` and
//! runs it, and the tests run it again so `cargo test` works wherever setup ran. The
//! cluster listens on 127.0.0.1 only and holds nothing but test data.

use std::path::Path;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The port `.ci/postgres.sh` uses when none is asked for.
pub const DEFAULT_PORT: u16 = 55439;

/// The URL of the cluster on [`DEFAULT_PORT`], started on first use.
pub fn cluster_url() -> &'static str {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| start_cluster(DEFAULT_PORT))
}

/// Starts (or finds running) a cluster on `port` and returns its URL. A benchmark that
/// must not share its cluster's load with the tests takes a port of its own.
pub fn start_cluster(port: u16) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.ci/postgres.sh");
    let out = std::process::Command::new("bash")
        .arg(script)
        .env("IRIS_TEST_PG_PORT", port.to_string())
        .stderr(std::process::Stdio::inherit())
        .output()
        .expect("run .ci/postgres.sh");
    assert!(
        out.status.success(),
        "the PostgreSQL test cluster did not start (.ci/setup installs postgresql)"
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// A new, empty database on the default cluster, named `<prefix>_<pid>_<n>_<ms>`, so a
/// test sees only its own rows; its URL.
pub async fn fresh_database(prefix: &str) -> String {
    fresh_database_on(cluster_url(), prefix).await
}

/// [`fresh_database`] for code outside a runtime (it runs on a thread of its own, so
/// it also works inside one).
pub fn fresh_database_blocking(prefix: &str) -> String {
    let prefix = prefix.to_owned();
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(fresh_database(&prefix))
    })
    .join()
    .unwrap()
}

/// A new, empty database on the cluster at `base` (see [`fresh_database`]).
pub async fn fresh_database_on(base: &str, prefix: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    let name = format!(
        "{prefix}_{}_{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis()
    );
    let (client, conn) = tokio_postgres::connect(base, tokio_postgres::NoTls)
        .await
        .unwrap();
    let conn = tokio::spawn(conn);
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .unwrap();
    drop(client);
    let _ = conn.await;
    let root = base.rsplit_once('/').unwrap().0;
    format!("{root}/{name}")
}
