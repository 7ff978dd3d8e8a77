//! Tests for `context_policy.discovery`: parsing, checking and building the backend.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use iris_discovery::{BackendKind, BuiltBackend, DiscoveryConfig, MODEL_FILES, check_model_dir};

fn parse(json: &str) -> DiscoveryConfig {
    serde_json::from_str(json).unwrap()
}

/// A temporary directory holding the given model files (empty files).
fn model_dir_with(files: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for f in files {
        std::fs::write(dir.path().join(f), b"").unwrap();
    }
    dir
}

#[test]
fn section_parses_with_defaults_and_rejects_unknowns() {
    assert_eq!(parse("{}"), DiscoveryConfig::default());
    assert_eq!(parse("{}").backend, BackendKind::Local);
    assert_eq!(
        parse(r#"{"backend": "decision"}"#).backend,
        BackendKind::Decision
    );
    let hybrid = parse(r#"{"backend": "hybrid", "model_path": "models/minilm"}"#);
    assert_eq!(hybrid.backend, BackendKind::Hybrid);
    assert_eq!(
        hybrid.model_dir(Path::new("/agents")).unwrap(),
        Path::new("/agents/models/minilm")
    );
    // An absolute path is kept as it is.
    let absolute = parse(r#"{"backend": "hybrid", "model_path": "/opt/minilm"}"#);
    assert_eq!(
        absolute.model_dir(Path::new("/agents")).unwrap(),
        Path::new("/opt/minilm")
    );
    for bad in [
        r#"{"backend": "bm25"}"#,
        r#"{"backend": "Local"}"#,
        r#"{"model": "x"}"#,
        r#"{"backend": 1}"#,
    ] {
        assert!(
            serde_json::from_str::<DiscoveryConfig>(bad).is_err(),
            "{bad}"
        );
    }
}

#[test]
fn check_names_the_field_or_the_missing_file() {
    let base = Path::new("/");
    assert!(parse("{}").check(base).is_ok());
    assert!(parse(r#"{"backend": "decision"}"#).check(base).is_ok());

    // `model_path` is read by `hybrid` only.
    let err = parse(r#"{"backend": "local", "model_path": "m"}"#)
        .check(base)
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_CONFIG");
    assert!(
        err.to_string()
            .contains("context_policy.discovery.model_path"),
        "{err}"
    );
    // Without `model_path`, `hybrid` reads the user's model cache: the check passes
    // exactly when the cache holds the model, and otherwise names its missing file.
    let cached = iris_discovery::default_model_dir().expect("HOME is set");
    let result = parse(r#"{"backend": "hybrid"}"#).check(base);
    match iris_discovery::check_model_dir(&cached) {
        _ if !cfg!(feature = "embed") => {
            assert_eq!(result.unwrap_err().code(), "INVALID_CONFIG");
        }
        Ok(_) => assert!(result.is_ok(), "{result:?}"),
        Err(missing) => {
            let err = result.unwrap_err();
            assert_eq!(err.code(), "MODEL_MISSING");
            assert_eq!(err.to_string(), missing.to_string());
        }
    }
    assert_eq!(
        parse(r#"{"backend": "hybrid"}"#).model_dir(base),
        Some(cached)
    );

    // The model files, each in turn: the first missing one is named.
    let partial = model_dir_with(&MODEL_FILES[..1]);
    let config = DiscoveryConfig {
        backend: BackendKind::Hybrid,
        model_path: Some(partial.path().to_owned()),
    };
    let err = config.check(base).unwrap_err();
    if cfg!(feature = "embed") {
        assert_eq!(err.code(), "MODEL_MISSING");
        assert!(err.to_string().contains("tokenizer.json"), "{err}");
    } else {
        assert_eq!(err.code(), "INVALID_CONFIG");
        assert!(err.to_string().contains("`embed` feature"), "{err}");
    }
    let complete = model_dir_with(&MODEL_FILES);
    assert_eq!(
        check_model_dir(complete.path()).unwrap()[2],
        complete.path().join("model.safetensors")
    );
    // A directory where a file should be is not a model file.
    let odd = model_dir_with(&MODEL_FILES[..2]);
    std::fs::create_dir(odd.path().join("model.safetensors")).unwrap();
    assert_eq!(
        check_model_dir(odd.path()).unwrap_err().code(),
        "MODEL_MISSING"
    );
}

#[test]
fn build_makes_the_local_backend_and_leaves_decision_to_the_runner() {
    match parse("{}").build(Path::new("/")).unwrap() {
        BuiltBackend::Ready(backend) => assert_eq!(backend.name(), "local"),
        BuiltBackend::Decision => panic!("local built as decision"),
    }
    assert!(matches!(
        parse(r#"{"backend": "decision"}"#)
            .build(Path::new("/"))
            .unwrap(),
        BuiltBackend::Decision
    ));
}

#[cfg(feature = "embed")]
#[test]
fn build_loads_the_hybrid_model_or_says_why_not() {
    // Files that exist but are not a model: a typed load error naming the file.
    let fake = model_dir_with(&MODEL_FILES);
    let config = DiscoveryConfig {
        backend: BackendKind::Hybrid,
        model_path: Some(fake.path().to_owned()),
    };
    let err = config.build(Path::new("/")).unwrap_err();
    assert_eq!(err.code(), "MODEL_LOAD_FAILED");
    assert!(err.to_string().contains("config.json"), "{err}");

    // The real model (fetched by .ci/setup), through a path relative to the base.
    let model = crate::eval::model_dir();
    let base = model.parent().unwrap();
    let config = DiscoveryConfig {
        backend: BackendKind::Hybrid,
        model_path: Some(model.file_name().unwrap().into()),
    };
    match config.build(base).unwrap() {
        BuiltBackend::Ready(backend) => assert_eq!(backend.name(), "hybrid"),
        BuiltBackend::Decision => panic!("hybrid built as decision"),
    }
}
