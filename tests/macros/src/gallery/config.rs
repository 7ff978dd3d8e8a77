//! Configuration tools: a host-bound preset and map parameters.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::PathBuf;

use iris_tools_core::tool;

/// Why a config key could not be read.
#[derive(Debug)]
pub enum ConfigError {
    /// The config file could not be read.
    Io(std::io::Error),
    /// The key is absent and no default was given.
    Missing(String),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Io(e) => write!(f, "cannot read the config file: {e}"),
            ConfigError::Missing(key) => write!(f, "no key `{key}` in the config"),
        }
    }
}

/// Read one key from the application config.
///
/// Use for a single setting; use `read_file` for whole files.
///
/// # Arguments
/// * `key` - dotted key path, e.g. `server.port`
/// * `default` - value returned when the key is missing
///
/// # Errors
/// Fails when the file cannot be read or the key is missing without a default.
#[tool(
    capabilities(read),
    group = "config",
    tags("config", "settings"),
    examples(
        r#"{"key": "server.port"}"#,
        r#"{"key": "log.level", "default": "info"}"#
    )
)]
pub async fn read_config(
    #[preset] config_path: PathBuf,
    key: String,
    default: Option<String>,
) -> Result<String, ConfigError> {
    let text = std::fs::read_to_string(&config_path).map_err(ConfigError::Io)?;
    let mut section = String::new();
    for line in text.lines().map(str::trim) {
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = format!("{name}.");
        } else if let Some((k, v)) = line.split_once('=')
            && format!("{section}{}", k.trim()) == key
        {
            return Ok(v.trim().trim_matches('"').to_owned());
        }
    }
    default.ok_or(ConfigError::Missing(key))
}

/// Merge environment variable maps into one sorted environment.
///
/// Use to preview the environment a command would see; overrides win over the base.
///
/// Args:
///     base: the inherited variables
///     overrides: variables that replace or extend the base
///     remove: names to drop after merging, e.g. ["AWS_SECRET_ACCESS_KEY"]
#[tool(group = "config", tags("env"))]
pub fn merge_env(
    base: HashMap<String, String>,
    overrides: HashMap<String, String>,
    #[default] remove: Vec<String>,
) -> BTreeMap<String, String> {
    let mut merged: BTreeMap<String, String> = base.into_iter().collect();
    merged.extend(overrides);
    for name in remove {
        merged.remove(&name);
    }
    merged
}
